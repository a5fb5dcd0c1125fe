"""GPU tests of the fused sm90a dual GEMM (issue 20; cpp/src/sm90/kernel/dual_gemm.cuh): every
result against the float64 reference (nvfp4.reference's tables on the device, as
tests/test_gpu_dual_gemm.py; tests/_util.py's device helpers), on the backend the device picks ("auto") and, on Hopper, on "sm90a"
forced. Marker `gpu`: skipped without a CUDA device; the sm90a-only tests skip on other GPUs.

Covered: the four benchmark shapes, odd shapes (M 1, 7, 129; N 8, 200; K 32, 96), both
activations, fp16 / bf16 / fp32 outputs, both scale layouts, L = 1 and 3, alphas as floats and
as device scalars (also changed between CUDA-graph replays), every split-K cluster size the
plan picks on an H100 (2..8: cpp/src/sm90/dual_plan.hpp), every scale-load mode, output views
(TMA stores clipped to the view; plain stores where TMA cannot express the output), NaN scales,
that the fused kernel, not the composed path, runs the benchmark shapes (workspace size =
the token workspace only; the profiler's kernel names), and the kernel's 32- / 64- / 96- /
128-token instances (dual_plan.hpp dual_token_tile).

Run: python -m pytest -q tests/test_gpu_dual_fused.py"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import nvfp4
from nvfp4 import _nvfp4_ext
from nvfp4 import reference as R
from _util import HAVE_GPU, Operand, assert_matches, graph_capture, kernel_names, pow2_alpha, ref_gemm
from _util import c_library as _lib  # located once per session, never inside a capture

pytestmark = pytest.mark.gpu

IS_SM90 = HAVE_GPU and _nvfp4_ext.device_info(0)["backend"] == "sm90a"
BACKENDS = ["auto"] + (["sm90a"] if IS_SM90 else [])
LAYOUTS = ["linear", "blocked"]
BENCH = [(256, 4096, 7168), (512, 4096, 7168), (256, 3072, 4096), (512, 3072, 7168)]
needs_sm90 = pytest.mark.skipif(not IS_SM90, reason="the fused dual kernel is sm90a's (a CC 9.0 device)")


def case(dev, M, N, K, L, layout, activation, rng):
    """Operands, power-of-two alphas (no rounding added to the reference) and the float64 reference."""
    a = Operand(dev, M, K, L, layout, rng)
    b1, b2 = Operand(dev, N, K, L, layout, rng), Operand(dev, N, K, L, layout, rng)
    acc1, acc2 = ref_gemm(dev, a, b1), ref_gemm(dev, a, b2)
    a1, a2 = pow2_alpha(acc1, 3.0), pow2_alpha(acc2, 16.0)
    return a, b1, b2, a1, a2, acc1, acc2


def expected(acc1, acc2, a1, a2, activation):
    return R.activation_ref(a1 * acc1, activation) * (a2 * acc2)


def dual(a, b1, b2, a1, a2, layout, activation, backend, **kw):
    return nvfp4.dual_gemm(a.q, a.sf, b1.q, b1.sf, b2.q, b2.sf, alpha1=a1, alpha2=a2, activation=activation,
                           sf_layout=layout, backend=backend, **kw)


# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", BENCH)
def test_benchmark_shapes(dev, M, N, K, layout, backend, rng):
    activation = "silu" if layout == "linear" else "gelu_tanh"
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, None, layout, activation, rng)
    out = dual(a, b1, b2, a1, a2, layout, activation, backend)
    assert tuple(out.shape) == (M, N)
    assert_matches(dev.get(out), expected(acc1, acc2, a1, a2, activation), "float16")


ODD = [(M, N, K) for M in (1, 7, 129) for N in (8, 200) for K in (32, 96)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("M,N,K", ODD)
def test_odd_shapes(dev, M, N, K, out_dtype, backend, rng):
    """M = 1 runs composed (one or two tokens: GEMVs); 7 and 129 fused, with M and N tails,
    one K block (K = 32: a 16-scale-column tail), TMA stores for N = 8 and 200 (16- and 400-byte
    rows; fp32 32 and 800) on L = 1 and 3."""
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    i = ODD.index((M, N, K))
    layout, L = LAYOUTS[i % 2], (None, 3)[(i // 2) % 2]
    activation = ("silu", "gelu_tanh")[(i // 4 + len(out_dtype)) % 2]
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, L, layout, activation, rng)
    out = dual(a, b1, b2, a1, a2, layout, activation, backend, out_dtype=out_dtype)
    assert tuple(out.shape) == ((M, N) if L is None else (L, M, N))
    assert_matches(dev.get(out), expected(acc1, acc2, a1, a2, activation), out_dtype)


# Split-K cluster sizes the plan picks on an H100 (132 SMs; another GPU may pick others, the
# results must match all the same), the scale-load modes and the store box each implies.
SPLITS = [
    (200, 1000, 2048, 2, "blocked"),   # s = 2: bulk-copied blocked scales, 64-row store boxes
    (300, 520, 2048, 3, "linear"),     # s = 3: TMA-loaded scales, 8-row store boxes
    (129, 1000, 4096, 1, "blocked"),   # s = 4: 32-row boxes
    (7, 392, 3072, 3, "linear"),       # s = 5: the run-time reduction loop, 7 tokens
    (7, 8, 3072, 1, "blocked"),        # s = 6: one tile of 7 tokens x 8 columns
    (129, 200, 4096, 1, "linear"),     # s = 8
    (1000, 300, 2080, 2, "blocked"),   # s = 3, K tail: per-row cp.async scales (blocked)
    (1000, 300, 2080, 2, "linear"),    # 130-byte scale rows: plain producer loads
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("M,N,K,L,layout", SPLITS)
def test_split_k_and_scale_modes(dev, M, N, K, L, layout, backend, rng):
    activation = "gelu_tanh" if K % 256 else "silu"
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, L, layout, activation, rng)
    out = dual(a, b1, b2, a1, a2, layout, activation, backend, out_dtype="float32")
    assert_matches(dev.get(out), expected(acc1, acc2, a1, a2, activation), "float32")


# ---------------------------------------------------------------------------
# Activations, dtypes, device alphas, graphs
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("L", [None, 3])
def test_device_alphas_activations_dtypes(dev, activation, out_dtype, L, backend, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    M, N, K = 300, 520, 2048
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, L, "blocked" if L else "linear", activation, rng)
    a1, a2 = a1 * 1.5, a2 * 0.75  # one rounding more in fp32 than the reference: fine at these tolerances
    shape = (M, N) if L is None else (L, M, N)
    out = dev.poisoned(shape, out_dtype)
    dev.synchronize()
    s = dev.stream()
    layout = "blocked" if L else "linear"
    dual(a, b1, b2, dev.scalar(a1), dev.scalar(a2), layout, activation, backend, out=out, stream=s)
    s.synchronize()
    assert_matches(dev.get(out), expected(acc1, acc2, a1, a2, activation), out_dtype)


def check_graph_replay_reads_alphas(dev, M, N, K, activation, factors, rng):
    """A captured dual_gemm with device alphas, replayed after each (f1, f2) of `factors` scaled
    them: every replay must use the alphas of that moment."""
    if dev.name != "torch":
        pytest.skip("graph capture through torch.cuda.graph")
    torch = dev.torch
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, None, "blocked", activation, rng)
    d1, d2 = dev.scalar(a1), dev.scalar(a2)
    out = dev.empty((M, N), "float32")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # warm-up outside capture
        dual(a, b1, b2, d1, d2, "blocked", activation, "auto", out=out)
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    with graph_capture(torch, g):
        dual(a, b1, b2, d1, d2, "blocked", activation, "auto", out=out)
    for f1, f2 in factors:
        d1.fill_(f1 * a1)
        d2.fill_(f2 * a2)
        out.zero_()
        g.replay()
        torch.cuda.synchronize()
        assert_matches(dev.get(out), expected(acc1, acc2, f1 * a1, f2 * a2, activation), "float32")


def test_graph_replay_reads_alphas(dev, rng):
    check_graph_replay_reads_alphas(dev, 256, 3072, 4096, "silu", [(2.0, 0.5)], rng)


# ---------------------------------------------------------------------------
# Output views: TMA stores clipped to the view, plain stores where TMA cannot express it
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("col0,out_dtype", [(8, "float16"), (4, "float32"), (1, "float16"), (3, "float32")])
def test_output_views(dev, col0, out_dtype, backend, rng):
    """out = big[:, 1:M+1, col0:col0+N] of a poisoned buffer: col0 = 8 (fp16) / 4 (fp32) keeps
    16-byte aligned rows (TMA stores, tails clipped by the tensor map), 1 and 3 do not (plain
    stores); nothing outside the view may change."""
    M, N, K, L = 130, 200, 2048, 2
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, L, "linear", "silu", rng)
    big = dev.poisoned((L, M + 3, N + 24), out_dtype)
    out = big[:, 1: M + 1, col0: col0 + N]
    dual(a, b1, b2, a1, a2, "linear", "silu", backend, out=out)
    assert_matches(dev.get(out), expected(acc1, acc2, a1, a2, "silu"), out_dtype)
    outside = dev.get(big).view(np.uint16 if out_dtype == "float16" else np.uint32)
    keep = np.ones(outside.shape, bool)
    keep[:, 1: M + 1, col0: col0 + N] = False
    want = 0xA5A5 if out_dtype == "float16" else 0xA5A5A5A5
    assert (outside[keep] == want).all(), "wrote outside the output view"


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_scales_propagate(dev, backend, rng):
    M, N, K = 300, 200, 512
    a = Operand(dev, M, K, None, "linear", rng)
    b1, b2 = Operand(dev, N, K, None, "linear", rng), Operand(dev, N, K, None, "linear", rng)
    sf1, sf2 = b1.sf_host.copy(), b2.sf_host.copy()
    sf1[7, 3], sf2[130, 31] = 0x7F, 0xFF
    b1.sf = b1.sf_linear = dev.put(sf1)
    b2.sf = b2.sf_linear = dev.put(sf2)
    out = dual(a, b1, b2, 1.0, 1.0, "linear", "silu", backend, out_dtype="float32")
    got = np.isnan(dev.get(out))
    expect = np.zeros((M, N), bool)
    expect[:, [7, 130]] = True
    np.testing.assert_array_equal(got, expect)


# ---------------------------------------------------------------------------
# The fused kernel is what runs
# ---------------------------------------------------------------------------

class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("device_type", ctypes.c_int),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32), ("shape", ctypes.c_int64 * 6),
                ("strides", ctypes.c_int64 * 6)]


class _Exec(ctypes.Structure):
    _fields_ = [("stream", ctypes.c_void_p), ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t),
                ("backend", ctypes.c_int), ("workspace_mode", ctypes.c_int)]


class _Scalar(ctypes.Structure):
    _fields_ = [("value", ctypes.c_float), ("device_ptr", ctypes.c_void_p)]




def _tensor(torch, x):
    dtypes = {torch.uint8: 0, torch.float16: 4, torch.bfloat16: 5, torch.float32: 6}
    t = _Tensor(x.data_ptr(), dtypes[x.dtype], 1, x.device.index or 0, x.dim())
    for i, (n, s) in enumerate(zip(x.shape, x.stride())):
        t.shape[i], t.strides[i] = n, s
    return t


def _workspace_bytes(torch, a, b1, b2, out, layout):
    lib = _lib()
    ts = [_tensor(torch, x) for x in (a.q, a.sf, b1.q, b1.sf, b2.q, b2.sf, out)]
    one = _Scalar(1.0, None)
    n = ctypes.c_size_t(0)
    ex = _Exec(None, None, 0, 0, 0)
    st = lib.nvfp4_dual_gemm_workspace_size(*[ctypes.byref(t) for t in ts[:6]], one, one, 0,
                                            1 if layout == "blocked" else 0, ctypes.byref(ts[6]), ctypes.byref(ex),
                                            ctypes.byref(n))
    assert st == 0, lib.nvfp4_last_error().decode()
    return n.value


@needs_sm90
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", BENCH)
def test_benchmark_shapes_run_fused(dev, M, N, K, layout, rng):
    """Workspace: the fused path needs only the fp16 tokens (L * M * K * 2 bytes, K a multiple of
    128 here); the composed one two fp32 products more (2 * M * N * 4). Profiler: the dual
    kernel and the token pass run, no GEMM and no combine pass."""
    if dev.name != "torch":
        pytest.skip("needs PyTorch (C ABI through ctypes, profiler)")
    torch = dev.torch
    a = Operand(dev, M, K, None, layout, rng)
    b1, b2 = Operand(dev, N, K, None, layout, rng), Operand(dev, N, K, None, layout, rng)
    out = dev.empty((M, N), "float16")
    assert _workspace_bytes(torch, a, b1, b2, out, layout) == M * K * 2
    names = kernel_names(dev, lambda: dual(a, b1, b2, 1.0, 1.0, layout, "silu", "sm90a", out=out))
    assert any("nvfp4_sm90_dual_gemm_kernel" in n for n in names), names
    assert any("x_predecode" in n for n in names), names
    assert not any("dual_combine" in n or "nvfp4_sm90_gemm" in n for n in names), names
    assert nvfp4.last_backend() == "sm90a"


# Weight scales no TMA box reads (linear K % 256 != 0, blocked K % 128 != 0) are staged into the
# workspace after the tokens (cpp/src/sm90/kernel/scale_stage.cuh): (M, N, K, L).
STAGED = [(129, 520, 1056, 2), (256, 1000, 2080, 1), (200, 4096, 7200, 1), (7, 200, 96, 3)]


@needs_sm90
def test_staged_scales_b2_only(dev, rng):
    """B1's scale rows TMA-readable (K = 4096: 256 bytes), B2's in a view with 258-byte rows: one
    operand's rows decide for both (dual_plan.hpp dual_scale_mode), both are staged."""
    if dev.name != "torch":
        pytest.skip("strided scale views through PyTorch")
    torch = dev.torch
    M, N, K = 300, 520, 4096
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, None, "linear", "silu", rng)
    wide = torch.zeros((N, K // 16 + 2), device="cuda", dtype=torch.uint8)
    wide[:, : K // 16] = b2.sf
    sf2 = wide[:, : K // 16]
    out = nvfp4.dual_gemm(a.q, a.sf, b1.q, b1.sf, b2.q, sf2, alpha1=a1, alpha2=a2, activation="silu",
                          out_dtype="float32", backend="sm90a")
    assert_matches(dev.get(out), expected(acc1, acc2, a1, a2, "silu"), "float32")
    names = kernel_names(dev, lambda: nvfp4.dual_gemm(a.q, a.sf, b1.q, b1.sf, b2.q, sf2, backend="sm90a"))
    assert any("nvfp4_sm90_scale_stage_kernel" in n for n in names), names
    assert any("nvfp4_sm90_dual_gemm_kernel" in n for n in names), names


@needs_sm90
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", STAGED)
def test_staged_scales(dev, M, N, K, L, layout, rng):
    """Against float64; the staging kernel runs in front of the pass (the workspace arithmetic:
    tests/sm90_host/dual_plan_test.cpp)."""
    activation = "silu" if layout == "linear" else "gelu_tanh"
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, L, layout, activation, rng)
    out = dual(a, b1, b2, a1, a2, layout, activation, "sm90a", out_dtype="float32")
    assert_matches(dev.get(out), expected(acc1, acc2, a1, a2, activation), "float32")
    if dev.name != "torch":
        return
    names = kernel_names(dev, lambda: dual(a, b1, b2, a1, a2, layout, activation, "sm90a"))
    assert any("nvfp4_sm90_scale_stage_kernel" in n for n in names), names
    assert any("nvfp4_sm90_dual_gemm_kernel" in n for n in names), names


# Token tiles (cpp/src/sm90/dual_plan.hpp dual_token_tile): the smallest of 32 / 64 / 96 tokens that
# holds M, else 128; each instance against float64 in three dtypes and both layouts, and its
# kernel (nvfp4_sm90_dual_gemm_kernel<tile>) seen in the profiler's names. (M, N, K, L, tile);
# M <= 16 only where 2 N L < 4096 (else the decode kernel's dual instance runs).
DUAL_TILE = [
    (5, 200, 4096, 1, 32),      # a 8-row token box, N tail
    (17, 4096, 7168, 1, 32),    # 64 tiles, clusters of 2
    (32, 1000, 4096, 3, 32),    # batches
    (33, 4096, 7168, 1, 64),
    (64, 3000, 2080, 2, 64),    # staged scales, N and K tails, batches
    (65, 2048, 8192, 1, 96),
    (96, 520, 4096, 3, 96),     # batches, N tail
    (97, 4096, 7168, 1, 128),   # one token more: the 128-token tile
]


@needs_sm90
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L,tile", DUAL_TILE)
def test_token_tiles(dev, M, N, K, L, tile, layout, out_dtype, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    activation = "silu" if out_dtype != "float32" else "gelu_tanh"
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, L, layout, activation, rng)
    out = dual(a, b1, b2, a1, a2, layout, activation, "sm90a", out_dtype=out_dtype)
    assert_matches(dev.get(out), expected(acc1, acc2, a1, a2, activation), out_dtype)


@needs_sm90
@pytest.mark.parametrize("M,N,K,L,tile", DUAL_TILE)
def test_token_tile_kernel(dev, M, N, K, L, tile, rng):
    import re

    if dev.name != "torch":
        pytest.skip("needs PyTorch (profiler)")
    a, b1, b2, a1, a2, _, _ = case(dev, M, N, K, L, "linear", "silu", rng)
    names = kernel_names(dev, lambda: dual(a, b1, b2, a1, a2, "linear", "silu", "sm90a"))
    tiles = {int(m.group(1) or m.group(2)) for n in names
             for m in [re.search(r"nvfp4_sm90_dual_gemm_kernel(?:<(\d+)>|ILi(\d+)E)", n)] if m}
    assert tiles == {tile}, names
