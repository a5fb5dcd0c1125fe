"""GPU tests of the one-launch sm90a grouped GEMM (issue 21; cpp/src/sm90/kernel/grouped_gemm.cuh,
plan cpp/src/sm90/grouped_plan.hpp) and of the packed MoE API beside it: every result against the
float64 reference (nvfp4.reference's tables on the device, as tests/test_gpu_grouped_gemm.py;
tests/_util.py's device helpers), on "auto" and, on Hopper, on "sm90a" forced. Marker `gpu`:
skipped without a CUDA device; the sm90a-only tests skip on other GPUs.

Covered: the gpu-mode grouped benchmark cases (both layouts); random ragged groups with M_g = 0,
1 and 2 and differing N_g, K_g (both layouts, fp16 / bf16 / fp32 outputs); the split-K form (few
tiles); 64 groups in one call and 70 (two launch pairs); device alphas per group (C ABI) read at
kernel time and changed between CUDA-graph replays; graph replay with new data in the same
buffers (list API) and with new offsets (packed API); a malformed device offsets table (packed:
no fault, no hang, the rows it covers first come out finite, a good table afterwards is right);
that a list call launches the token pass and one GEMM kernel whatever G is (profiler); and the
gpu-mode adapter (nvfp4.gpumode.grouped_gemm) on group tuples, both layouts, on that kernel.

Run: python -m pytest -q tests/test_gpu_grouped_persistent.py"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import nvfp4
from nvfp4 import _nvfp4_ext
from _util import HAVE_GPU, Operand, assert_matches, graph_capture, pow2_alpha, ref_gemm

pytestmark = pytest.mark.gpu

IS_SM90 = HAVE_GPU and _nvfp4_ext.device_info(0)["backend"] == "sm90a"
BACKENDS = ["auto"] + (["sm90a"] if IS_SM90 else [])
LAYOUTS = ["linear", "blocked"]
needs_sm90 = pytest.mark.skipif(not IS_SM90, reason="the one-launch grouped kernel is sm90a's (a CC 9.0 device)")
# gpu-mode grouped cases (python/nvfp4/_bench_problems.py): ([M_g], N, K)
BENCH = [([80, 176, 128, 72, 64, 248, 96, 160], 4096, 7168), ([40, 76, 168, 72, 164, 148, 196, 160], 7168, 2048),
         ([192, 320], 3072, 4096), ([128, 384], 4096, 1536)]


def groups(dev, Ms, Ns, Ks, layout, rng):
    A = [Operand(dev, m, k, None, layout, rng) for m, k in zip(Ms, Ks)]
    B = [Operand(dev, n, k, None, layout, rng) for n, k in zip(Ns, Ks)]
    accs = [ref_gemm(dev, a, b) for a, b in zip(A, B)]
    return A, B, accs


def grouped(A, B, layout, backend, **kw):
    return nvfp4.grouped_gemm([a.q for a in A], [a.sf for a in A], [b.q for b in B], [b.sf for b in B],
                              sf_layout=layout, backend=backend, **kw)


def check(dev, outs, accs, alphas, dtype):
    assert len(outs) == len(accs)
    for o, acc, al in zip(outs, accs, alphas):
        assert_matches(dev.get(o), al * acc, dtype)


# ---------------------------------------------------------------------------
# Shapes, layouts, dtypes
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("Ms,N,K", BENCH)
def test_benchmark_cases(dev, Ms, N, K, layout, backend, rng):
    A, B, accs = groups(dev, Ms, [N] * len(Ms), [K] * len(Ms), layout, rng)
    alphas = [pow2_alpha(acc) for acc in accs]
    check(dev, grouped(A, B, layout, backend, alphas=alphas), accs, alphas, "float16")


@needs_sm90
@pytest.mark.parametrize("layout", LAYOUTS)
def test_staged_scales(dev, layout, rng):
    """Groups whose weight-scale rows no TMA box reads (K_g % 256 != 0 linear, % 128 blocked):
    every group's scales staged into the workspace by one staging launch in front of the token
    pass (cpp/src/sm90/kernel/scale_stage.cuh), then the one-launch kernel; against float64."""
    Ms, Ns, Ks = [200, 64, 0, 130], [520, 1000, 64, 256], [2080, 1056, 96, 7200]
    A, B, accs = groups(dev, Ms, Ns, Ks, layout, rng)
    alphas = [pow2_alpha(acc) for acc in accs]
    check(dev, grouped(A, B, layout, "sm90a", alphas=alphas, out_dtype="float32"), accs, alphas, "float32")
    if dev.name != "torch":
        return
    from _util import kernel_names
    names = kernel_names(dev, lambda: grouped(A, B, layout, "sm90a", alphas=alphas))
    assert any("nvfp4_sm90_scale_stage_kernel" in n for n in names), names
    assert any("nvfp4_sm90_grouped_gemm_kernel" in n for n in names), names


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("seed", range(3))
def test_random_ragged(dev, seed, layout, out_dtype, backend):
    """M_g in {0, 1, 2, up to 300}, N_g 1..600, K_g 32..1024 (multiples of 32): tails in every
    dimension, several K lengths in one launch (largest first), empty groups."""
    rng = np.random.default_rng(2100 + seed)
    G = int(rng.integers(3, 13))
    Ms = [int(rng.choice([0, 1, 2, int(rng.integers(3, 300))])) for _ in range(G)]
    Ms[0], Ms[1] = 1, 0
    Ns = [int(rng.integers(1, 600)) for _ in range(G)]
    Ks = [32 * int(rng.integers(1, 33)) for _ in range(G)]
    A, B, accs = groups(dev, Ms, Ns, Ks, layout, rng)
    alphas = [pow2_alpha(acc) * (1.5 if g % 2 else 1.0) for g, acc in enumerate(accs)]
    outs = grouped(A, B, layout, backend, alphas=alphas, out_dtype=out_dtype)
    for o, m, n in zip(outs, Ms, Ns):
        assert tuple(o.shape) == (m, n)
    check(dev, outs, accs, alphas, out_dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_split_k(dev, layout, backend, rng):
    """Two tiles, K 4096: the plan splits K over clusters of 8 (grouped_plan_test.cpp); also a
    group of 3 rows and 100 columns (tails in the reduced tile)."""
    A, B, accs = groups(dev, [100, 3], [128, 100], [4096, 4096], layout, rng)
    alphas = [pow2_alpha(acc) for acc in accs]
    check(dev, grouped(A, B, layout, backend, alphas=alphas, out_dtype="float32"), accs, alphas, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("G", [64, 70])
def test_many_groups(dev, G, backend, rng):
    """64 groups: one launch pair; 70: two (kGroupedMaxGroups = 64 per launch)."""
    Ms = [int(x) for x in rng.integers(0, 150, G)]
    Ns = [int(x) for x in rng.integers(8, 300, G)]
    Ks = [int(x) * 32 for x in rng.integers(1, 12, G)]
    A, B, accs = groups(dev, Ms, Ns, Ks, "blocked", rng)
    alphas = [pow2_alpha(acc) for acc in accs]
    check(dev, grouped(A, B, "blocked", backend, alphas=alphas), accs, alphas, "float16")


# ---------------------------------------------------------------------------
# Device alphas (C ABI: the Python list API takes floats), graphs
# ---------------------------------------------------------------------------

def _c_grouped(torch, A, B, outs, alpha_ptrs, layout, stream):
    """nvfp4_grouped_gemm through ctypes with device alphas, the cached workspace, forced sm90a."""
    from test_gpu_dual_fused import _Exec, _Scalar, _Tensor, _lib, _tensor
    lib = _lib()
    G = len(A)
    arrays = [(_Tensor * G)(*[_tensor(torch, x) for x in xs])
              for xs in ([a.q for a in A], [a.sf for a in A], [b.q for b in B], [b.sf for b in B], outs)]
    alphas = (_Scalar * G)(*[_Scalar(1.0, p) for p in alpha_ptrs])
    ex = _Exec(stream, None, 0, 3, 1)  # NVFP4_BACKEND_SM90A, NVFP4_WORKSPACE_CACHED
    st = lib.nvfp4_grouped_gemm(ctypes.c_int32(G), arrays[0], arrays[1], arrays[2], arrays[3], alphas,
                                1 if layout == "blocked" else 0, arrays[4], ctypes.byref(ex))
    assert st == 0, lib.nvfp4_last_error().decode()


@needs_sm90
@pytest.mark.parametrize("layout", LAYOUTS)
def test_device_alphas_and_graph_replay(dev, layout, rng):
    """Per-group device alphas read at kernel time; a captured call replays with new alphas and
    new operand data copied into the same buffers."""
    if dev.name != "torch":
        pytest.skip("needs PyTorch (C ABI through ctypes, graph capture)")
    torch = dev.torch
    Ms, Ns, Ks = [80, 1, 200], [256, 300, 136], [2048, 512, 1024]
    A, B, accs = groups(dev, Ms, Ns, Ks, layout, rng)
    al = [pow2_alpha(acc) for acc in accs]
    d_al = [dev.scalar(x) for x in al]
    outs = [dev.empty((m, n), "float32") for m, n in zip(Ms, Ns)]
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # eager, and the warm-up of the capture (per-device setup, workspace)
        _c_grouped(torch, A, B, outs, [x.data_ptr() for x in d_al], layout, s.cuda_stream)
    s.synchronize()
    check(dev, outs, accs, al, "float32")
    g = torch.cuda.CUDAGraph()
    with graph_capture(torch, g, s):
        _c_grouped(torch, A, B, outs, [x.data_ptr() for x in d_al], layout, s.cuda_stream)
    # new alphas and new tokens of group 0 in the same buffers
    for x, v in zip(d_al, al):
        x.fill_(2 * v)
    A2 = Operand(dev, Ms[0], Ks[0], None, layout, rng)
    A[0].q.copy_(A2.q)
    A[0].sf.copy_(A2.sf)
    accs[0] = ref_gemm(dev, A2, B[0])
    for o in outs:
        o.zero_()
    g.replay()
    torch.cuda.synchronize()
    check(dev, outs, accs, [2 * v for v in al], "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_replay_list_new_data(dev, backend, rng):
    """Python list API under torch.cuda.graph: the replay reads the operands' new contents, tokens
    and weights (the float alphas are captured with the call)."""
    if dev.name != "torch":
        pytest.skip("graph capture through torch.cuda.graph")
    torch = dev.torch
    Ms, N, K = [192, 320], 3072, 4096
    A, B, accs = groups(dev, Ms, [N, N], [K, K], "linear", rng)
    alphas = [0.25, 0.5]
    outs = [dev.empty((m, N), "float32") for m in Ms]
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        grouped(A, B, "linear", backend, alphas=alphas, out=outs, out_dtype="float32")
    s.synchronize()
    check(dev, outs, accs, alphas, "float32")
    g = torch.cuda.CUDAGraph()
    with graph_capture(torch, g, s):
        grouped(A, B, "linear", backend, alphas=alphas, out=outs, out_dtype="float32")
    for i in range(2):
        A2 = Operand(dev, Ms[i], K, None, "linear", rng)
        A[i].q.copy_(A2.q)
        A[i].sf.copy_(A2.sf)
        B2 = Operand(dev, N, K, None, "linear", rng)
        B[i].q.copy_(B2.q)
        B[i].sf.copy_(B2.sf)
        accs[i] = ref_gemm(dev, A2, B2)
    for o in outs:
        o.zero_()
    g.replay()
    torch.cuda.synchronize()
    check(dev, outs, accs, alphas, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_replay_packed_new_offsets(dev, backend, rng):
    """Packed API: a captured call replays with a new offsets table written into the same buffer."""
    if dev.name != "torch":
        pytest.skip("graph capture through torch.cuda.graph")
    torch = dev.torch
    G, N, K, total = 6, 512, 2048, 700
    a = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    b = Operand(dev, N, K, G, "linear", rng, lo=0.25, hi=1.0)
    av, bv = a.values(dev), b.values(dev)

    def ref(offs):
        r = np.zeros((total, N))
        for g in range(G):
            if offs[g + 1] > offs[g]:
                r[offs[g]:offs[g + 1]] = 0.25 * dev.get(dev.matmul_t(av[offs[g]:offs[g + 1]], bv[g]))
        return r

    o1 = np.array([0, 100, 100, 300, 301, 600, 700], np.int32)
    o2 = np.array([0, 0, 250, 251, 500, 700, 700], np.int32)
    offsets = dev.put(o1)
    alphas = dev.put(np.full(G, 0.25, np.float32))
    out = dev.empty((total, N), "float32")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, offsets, alphas=alphas, out=out, out_dtype="float32",
                                  backend=backend)
    s.synchronize()
    assert_matches(dev.get(out), ref(o1), "float32")
    g = torch.cuda.CUDAGraph()
    with graph_capture(torch, g, s):
        nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, offsets, alphas=alphas, out=out, out_dtype="float32",
                                  backend=backend)
    offsets.copy_(dev.put(o2))
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert_matches(dev.get(out), ref(o2), "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_packed_malformed_offsets(dev, backend, rng):
    """A device table that is not non-decreasing within [0, total_M]: clamped (grouped_packed.cu),
    no fault and no hang; the rows the first expert covers come out finite; the next call with a
    good table in the same buffer is exact (no sticky error)."""
    total, N, K, G = 300, 200, 256, 5
    a = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    b = Operand(dev, N, K, G, "linear", rng, lo=0.25, hi=1.0)
    out = dev.poisoned((total, N), "float32")
    dev.synchronize()
    for bad in ([0, 250, 120, -7, 2 ** 31 - 1, 40], [-100, -50, 10 ** 9, 0, 5, 300], [300, 0, 0, 0, 0, 0]):
        offsets = dev.put(np.array(bad, np.int32))
        nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, offsets, out=out, out_dtype="float32", backend=backend)
        dev.synchronize()
    offsets = dev.put(np.array([0, 250, 120, -7, 2 ** 31 - 1, 40], np.int32))
    out = dev.poisoned((total, N), "float32")
    nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, offsets, out=out, out_dtype="float32", backend=backend)
    dev.synchronize()
    assert np.isfinite(dev.get(out)[:250]).all()
    good = np.array([0, 60, 60, 61, 200, 300], np.int32)
    out = nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, dev.put(good), out_dtype="float32", backend=backend)
    av, bv = a.values(dev), b.values(dev)
    ref = np.zeros((total, N))
    for g in range(G):
        if good[g + 1] > good[g]:
            ref[good[g]:good[g + 1]] = dev.get(dev.matmul_t(av[good[g]:good[g + 1]], bv[g]))
    assert_matches(dev.get(out), ref, "float32")


# ---------------------------------------------------------------------------
# One launch pair whatever G is
# ---------------------------------------------------------------------------

@needs_sm90
@pytest.mark.parametrize("G", [1, 8, 64])
def test_one_launch_whatever_g(dev, G, rng):
    """Profiler: a list call of G groups runs exactly two kernels, the grouped token pass and the
    grouped GEMM (no per-group GEMM or pass)."""
    if dev.name != "torch":
        pytest.skip("needs PyTorch (profiler)")
    torch = dev.torch
    A, B, _ = groups(dev, [64] * G, [256] * G, [512] * G, "linear", rng)
    outs = [dev.empty((64, 256), "float16") for _ in range(G)]
    grouped(A, B, "linear", "sm90a", out=outs)  # warm-up (per-device setup, workspace)
    torch.cuda.synchronize()
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        grouped(A, B, "linear", "sm90a", out=outs)
        torch.cuda.synchronize()
    kernels = [e.name for e in prof.events() if e.device_type == DeviceType.CUDA]
    assert len(kernels) == 2, kernels
    assert sum("nvfp4_sm90_grouped_token_pass_kernel" in k for k in kernels) == 1, kernels
    assert sum("nvfp4_sm90_grouped_gemm_kernel" in k for k in kernels) == 1, kernels
    assert nvfp4.last_backend() == "sm90a"


# ---------------------------------------------------------------------------
# The gpu-mode adapter on group tuples
# ---------------------------------------------------------------------------

@needs_sm90
@pytest.mark.parametrize("sf_layout", LAYOUTS)
@pytest.mark.parametrize("Ms,N,K", [BENCH[2], BENCH[3]])
def test_gpumode_adapter_runs_grouped_kernel(dev, Ms, N, K, sf_layout):
    """nvfp4.gpumode.grouped_gemm on gpu-mode tuples ((rows, K/2, 1) tensors, 6-D blocked scale
    views) runs the one-launch kernel and matches the float64 reference."""
    if dev.name != "torch":
        pytest.skip("gpu-mode tuples are torch tensors")
    torch = dev.torch
    from test_gpu_frameworks import _gpumode_operand
    from nvfp4 import gpumode
    abc, sfs, sfs_p, sizes = [], [], [], []
    for m in Ms:
        ga, gsa, gsa_p = _gpumode_operand(torch, m, K, 1)
        gb, gsb, gsb_p = _gpumode_operand(torch, N, K, 1)
        abc.append((ga, gb, torch.empty((m, N, 1), dtype=torch.float16, device="cuda")))
        sfs.append((gsa, gsb))
        sfs_p.append((gsa_p, gsb_p))
        sizes.append((m, N, K, 1))
    gpumode.grouped_gemm((abc, sfs, sfs_p, sizes), sf_layout=sf_layout, backend="sm90a")  # warm-up
    torch.cuda.synchronize()
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        outs = gpumode.grouped_gemm((abc, sfs, sfs_p, sizes), sf_layout=sf_layout, backend="sm90a")
        torch.cuda.synchronize()
    kernels = [e.name for e in prof.events() if e.device_type == DeviceType.CUDA]
    assert len(kernels) == 2 and any("nvfp4_sm90_grouped_gemm_kernel" in k for k in kernels), kernels
    for (ga, gb, gc), (gsa, gsb), o in zip(abc, sfs, outs):
        assert o is gc
        ref = dev.matmul_t(dev.decode(ga[:, :, 0], gsa[:, :, 0]), dev.decode(gb[:, :, 0], gsb[:, :, 0]))
        assert_matches(dev.get(gc[:, :, 0]), dev.get(ref), "float16")
