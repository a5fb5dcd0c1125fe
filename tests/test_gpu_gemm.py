"""GPU tests (marker `gpu`, skipped without a CUDA device) of nvfp4.gemm: device arrays, every
backend of the device, against the float64 reference (tests/_util.py's device helpers); sm90a's
136-token tile; NaN scales, streams, CUDA graphs, strided and gpu-mode views; device-array errors.

Run: python -m pytest -q tests/test_gpu_gemm.py"""

from __future__ import annotations

import numpy as np
import pytest

import nvfp4
from nvfp4 import _nvfp4_ext
from nvfp4 import reference as R
from _util import (BACKENDS, HAVE_GPU, LAYOUTS, Operand, POISON_BYTE, assert_matches, graph_capture, kernel_names,
                   pow2_alpha, ref_gemm, run_backend)

pytestmark = pytest.mark.gpu


GEMM_GPU_MODE = [(128, 256, 256), (128, 1536, 7168), (128, 3072, 1536), (256, 7168, 256), (256, 7168, 2048),
                 (2304, 4608, 7168), (384, 7168, 2304), (512, 512, 7168), (512, 4096, 512), (512, 1536, 7168)]
GEMM_ODD = [(1, 1000, 32, None), (7, 129, 96, 3), (129, 7, 32, None), (1000, 1, 96, 1), (1000, 129, 96, None),
            (129, 1000, 32, 3), (1, 1, 32, None), (1000, 300, 2080, 2),  # sm90a: pre-decoded tokens, M > 512
            (1030, 136, 2080, 2), (2050, 1000, 4096, None),  # sm90a: fused short chains + misaligned scales; M > 2048
            (100, 3000, 4096, None),  # sm90a: fused, 24 tiles x 4-CTA clusters
            (1030, 2000, 2080, 2),  # sm90a: persistent pre-decoded kernel, 136-token tiles (256), M/N/K tails
            (100, 7168, 8192, 2), (137, 2000, 8192, 3)]  # sm90a: stream-K (55 / 47 blocks per CTA), token tails in padded batches


def _gemm_case(dev, M, N, K, L, layout, rng, **kw):
    a = Operand(dev, M, K, L, layout, rng, **kw)
    b = Operand(dev, N, K, L, layout, rng, **kw)
    return a, b, ref_gemm(dev, a, b)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", [s + (1,) for s in GEMM_GPU_MODE] + GEMM_ODD)
def test_gemm(dev, M, N, K, L, layout, backend, rng):
    a, b, acc = _gemm_case(dev, M, N, K, L, layout, rng)
    alpha = pow2_alpha(acc)
    out = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha, sf_layout=layout,
                                                  backend=backend))
    assert tuple(out.shape) == ((M, N) if L is None else (L, M, N))
    assert_matches(dev.get(out), alpha * acc, "float16")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", [(2, 4100, 2048, 3), (2, 200, 96, None), (3, 200, 96, None), (4, 1000, 4096, 2),
                                     (130, 3, 96, 1)])
def test_gemm_few_tokens(dev, M, N, K, L, layout, backend, rng):
    """M <= 2 runs as one GEMV per token on sm90a (row m's scales as a one-row operand,
    rows of a 128-row band of the blocked layout); M = 3, 4 take the tiled GEMM; N < 4 for
    the mirror case. Device alpha, fp32 out."""
    a, b, acc = _gemm_case(dev, M, N, K, L, layout, rng)
    alpha = pow2_alpha(acc) * 0.75
    out = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=dev.scalar(alpha), sf_layout=layout,
                                                  out_dtype="float32", backend=backend))
    assert tuple(out.shape) == ((M, N) if L is None else (L, M, N))
    assert_matches(dev.get(out), alpha * acc, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("M,N,K,L", [(128, 1536, 7168, 1), (129, 1000, 96, 3), (512, 512, 512, None),
                                     (1100, 2100, 2048, 2)])
def test_gemm_out_dtypes(dev, M, N, K, L, out_dtype, backend, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    a, b, acc = _gemm_case(dev, M, N, K, L, "linear", rng)
    alpha = pow2_alpha(acc) * 0.75
    out = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha, out_dtype=out_dtype,
                                                  backend=backend))
    assert_matches(dev.get(out), alpha * acc, out_dtype)


# ---------------------------------------------------------------------------
# GEMM: the pre-decoded kernels' 136-, 96-, 64- and 32-token tiles (sm90a)
# ---------------------------------------------------------------------------

IS_SM90 = HAVE_GPU and _nvfp4_ext.device_info(0)["backend"] == "sm90a"
needs_sm90 = pytest.mark.skipif(not IS_SM90, reason="the token tiles are sm90a's (a CC 9.0 device)")

# M just above a multiple of 128: where the 136-token instance needs fewer token tiles for
# less work, the plan runs it; at most 32 / 64 / 96 tokens: the 32- / 64- / 96-token instance (split-K only)
# (cpp/src/sm90/gemm_schedule.hpp choose_token_tile; the same shapes on an H100's 132 SMs in
# tests/sm90_host/gemm_schedule_test.cpp test_token_tile).
# (M, N, K, L, token tile, kernel) on 132 SMs.
TOKEN_TILE = [
    (129, 7168, 7168, 1, 136, "predecoded"),   # issue 22's shape: one tile, clusters of 2
    (129, 2048, 8192, 1, 136, "predecoded"),   # clusters of 8 (the run-time split reduction)
    (136, 2048, 8192, 3, 136, "predecoded"),   # clusters of 2, batches
    (272, 2000, 4096, 1, 136, "predecoded"),   # clusters of 4, N tail
    (257, 7168, 2048, 1, 136, "predecoded"),   # one CTA per tile; the last tile holds one token
    (257, 4000, 2048, 3, 136, "streamk"),      # 192 tiles, batches, N tail (stream-K: 24 blocks per CTA)
    (1025, 4096, 2048, 1, 136, "persistent"),  # 256 tiles (against 288 of 128 tokens)
    (200, 4096, 4096, 1, 128, "predecoded"),   # two tiles at either width: the 128-token kernel
    (137, 2048, 8192, 1, 128, "predecoded"),
    (64, 7168, 7168, 1, 64, "predecoded"),     # the 64-token tile: issue 22's M = 64, clusters of 2
    (33, 4096, 14336, 1, 64, "predecoded"),    # clusters of 4, a 40-row token box
    (64, 2048, 8192, 3, 64, "predecoded"),     # batches
    (48, 3000, 2080, 2, 64, "predecoded"),     # staged weight scales, N and K tails, batches
    (64, 256, 16384, 1, 64, "predecoded"),     # clusters of 8 (the run-time split reduction)
    (64, 14336, 4096, 1, 64, "predecoded"),    # 112 tiles, one CTA each
    (64, 28672, 4096, 1, 128, "streamk"),      # 224 tiles: no small persistent kernel, the 128-token plan
    (65, 7168, 7168, 1, 96, "predecoded"),     # one token more: the 96-token tile, clusters of 2
    (96, 4096, 14336, 1, 96, "predecoded"),    # clusters of 4
    (80, 2048, 8192, 3, 96, "predecoded"),     # batches, an 80-row token box
    (70, 3000, 2080, 2, 96, "predecoded"),     # staged weight scales, N and K tails, batches
    (96, 256, 16384, 1, 96, "predecoded"),     # clusters of 8 (the run-time split reduction)
    (97, 7168, 7168, 1, 128, "predecoded"),    # one token more: the 128-token tile
    (32, 2048, 16384, 1, 32, "predecoded"),    # the 32-token tile (M <= 32 below the decode route's rows)
    (17, 3900, 7168, 1, 32, "predecoded"),     # clusters of 4, a 24-row token box, N tail (60 rows)
    (25, 1000, 8192, 3, 32, "predecoded"),     # batches, clusters of 5 (the run-time split reduction)
    (31, 640, 16384, 2, 32, "predecoded"),     # clusters of 8, batches
]


def _check_sm90a_gemm(dev, M, N, K, L, layout, out_dtype, rng):
    """The sm90a GEMM against float64 (alpha a power of two, times 0.75 for bf16 / fp32 outputs)."""
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    a, b, acc = _gemm_case(dev, M, N, K, L, layout, rng)
    alpha = pow2_alpha(acc) * (1.0 if out_dtype == "float16" else 0.75)
    out = nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha, sf_layout=layout, out_dtype=out_dtype, backend="sm90a")
    assert tuple(out.shape) == (L, M, N)
    assert_matches(dev.get(out), alpha * acc, out_dtype)


def _sm90a_gemm_kernels(dev, M, N, K, L, rng, kinds, layout="linear"):
    """{(kind, token tile)} of the nvfp4_sm90_gemm_<kind>_kernel<tile> one sm90a call launches
    (kinds: a regex alternation), and the kernel names; on a 132-SM device only."""
    import re

    if dev.name != "torch":
        pytest.skip("needs PyTorch (profiler)")
    if dev.torch.cuda.get_device_properties(0).multi_processor_count != 132:
        pytest.skip("the expected tiles are those of a 132-SM device (H100 SXM, H200)")
    a, b = Operand(dev, M, K, L, layout, rng), Operand(dev, N, K, L, layout, rng)
    names = kernel_names(dev, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, sf_layout=layout, backend="sm90a"))
    # demangled "nvfp4_sm90_gemm_persistent_kernel<136>(...)" or mangled "...kernelILi136E..."
    found = {(m.group(1), int(m.group(2) or m.group(3))) for n in names
             for m in [re.search(rf"nvfp4_sm90_gemm_({kinds})_kernel(?:<(\d+)>|ILi(\d+)E)", n)] if m}
    return found, names


@needs_sm90
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L,tile,kernel", TOKEN_TILE)
def test_gemm_token_tile(dev, M, N, K, L, tile, kernel, layout, out_dtype, rng):
    _check_sm90a_gemm(dev, M, N, K, L, layout, out_dtype, rng)


# Scales no TMA box reads (linear rows of K/16 bytes with K % 256 != 0; blocked with K % 128
# != 0) are staged into the workspace first (cpp/src/sm90/kernel/scale_stage.cuh): the fused
# kernel (short K slices) stages both operands' scales, the pre-decoded paths the weights' only.
# (M, N, K, L, path's kernel)
STAGED = [
    (128, 7168, 1440, 1, "kernel"),       # fused, 90-byte rows (2-byte aligned: byte loads before)
    (70, 520, 1056, 2, "kernel"),         # fused, 66-byte rows, batches, N tail
    (100, 4000, 7200, 1, "predecoded"),   # 450-byte rows, split over clusters
    (300, 1000, 2080, 3, "streamk"),      # 130-byte rows, batches (72 tiles: stream-K, 10 blocks per CTA)
    (2048, 2048, 2336, 1, "persistent"),  # 146-byte rows, 256 tiles: persistent
]


@needs_sm90
@pytest.mark.parametrize("out_dtype", ["float16", "float32"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L,kernel", STAGED)
def test_gemm_staged_scales(dev, M, N, K, L, kernel, layout, out_dtype, rng):
    _check_sm90a_gemm(dev, M, N, K, L, layout, out_dtype, rng)


@needs_sm90
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L,kernel", STAGED)
def test_gemm_staged_scales_kernels(dev, M, N, K, L, kernel, layout, rng):
    """The staging kernel runs in front of the planned GEMM kernel (both layouts: blocked
    scales with K % 128 != 0 are staged too)."""
    _, names = _sm90a_gemm_kernels(dev, M, N, K, L, rng, "predecoded|persistent", layout)
    assert any("nvfp4_sm90_scale_stage_kernel" in n for n in names), names
    assert any(f"nvfp4_sm90_gemm_{kernel}" in n for n in names), names


@needs_sm90
def test_gemm_staged_scales_graph(dev, rng):
    """Graph replay restages: new scales written into the captured inputs give the new product
    (the staged copy is not a cache)."""
    if dev.name != "torch":
        pytest.skip("graph capture through PyTorch")
    torch = dev.torch
    M, N, K = 100, 4000, 7200
    a, b = Operand(dev, M, K, 1, "linear", rng), Operand(dev, N, K, 1, "linear", rng)
    b2 = Operand(dev, N, K, 1, "linear", rng)
    out = torch.empty((M, N), device="cuda", dtype=torch.float32)
    run = lambda: nvfp4.gemm(a.q[0], a.sf[0], b.q[0], b.sf[0], out=out, out_dtype="float32", backend="sm90a")
    run()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with graph_capture(torch, g):
        run()
    for ob in (b, b2):
        b.q.copy_(ob.q)
        b.sf.copy_(ob.sf)
        g.replay()
        torch.cuda.synchronize()
        want = ref_gemm(dev, a, ob)[0]
        assert_matches(dev.get(out), want, "float32")


# Few weight rows, many tokens (N <= 1024, M >= 4 N, M·K·L·2 >= 24 MiB, N·K·L·2 <= 32 MiB): sm90a runs Cᵀ = B·Aᵀ, B's rows as the tokens
# (cpp/src/sm90/gemm_plan.hpp swap_roles). (M, N, K, L, kernel the swapped problem takes)
SWAPPED = [
    (4096, 128, 4096, 1, "predecoded"),               # one token tile, split 3 (30 clusters of 4 fit)
    (1000, 100, 7168, 2, "nvfp4_sm90_gemm_"),         # 100 tokens, batches (fused or pre-decoded)
    (4096, 16, 7168, 1, "gemm_decode_kernel"),        # 16 tokens on 4096 rows: the decode route
    (16384, 1, 1024, 1, "gemv"),                      # one token: a GEMV over A's rows
    (7777, 60, 2080, 1, "scale_stage"),               # misaligned scales staged, then the tiled GEMM
    (8500, 64, 4096, 2, "streamk"),                   # 134 tiles: stream-K, 33 blocks per CTA
    (20000, 100, 2080, 1, "streamk"),                 # 157 tiles, stream-K, staged scales
    (6000, 300, 4160, 1, "nvfp4_sm90_gemm_"),         # 129..1024 weight rows: 3 token tiles
    (4200, 1000, 2080, 2, "nvfp4_sm90_gemm_"),        # 1000 rows, batches, odd M
    (2400, 600, 4160, 4, "nvfp4_sm90_gemm_"),         # B's fp16 19 MiB: past 16 MiB, within the 32 MiB bound
]


@needs_sm90
@pytest.mark.parametrize("out_dtype", ["float16", "float32"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L,kernel", SWAPPED)
def test_gemm_swapped_roles(dev, M, N, K, L, kernel, layout, out_dtype, rng):
    _check_sm90a_gemm(dev, M, N, K, L, layout, out_dtype, rng)


@needs_sm90
@pytest.mark.parametrize("M,N,K,L,kernel", SWAPPED)
def test_gemm_swapped_roles_kernels(dev, M, N, K, L, kernel, rng):
    """The swapped problem's route, seen in the kernel names."""
    _, names = _sm90a_gemm_kernels(dev, M, N, K, L, rng, "predecoded|persistent")
    assert any(kernel in n for n in names), names


@needs_sm90
def test_gemm_swapped_roles_column_major_out(dev, rng):
    """A column-major output becomes the swapped problem's row-major one."""
    if dev.name != "torch":
        pytest.skip("strided outputs through PyTorch")
    torch = dev.torch
    M, N, K = 2048, 64, 4096
    a, b = Operand(dev, M, K, None, "linear", rng), Operand(dev, N, K, None, "linear", rng)
    out = torch.empty((N, M), device="cuda", dtype=torch.float32).t()  # (M, N), column-major
    nvfp4.gemm(a.q, a.sf, b.q, b.sf, out=out, out_dtype="float32", backend="sm90a")
    assert_matches(dev.get(out), ref_gemm(dev, a, b), "float32")


@needs_sm90
@pytest.mark.parametrize("M,N,K,L,tile,kernel", TOKEN_TILE)
def test_gemm_token_tile_kernel(dev, M, N, K, L, tile, kernel, rng):
    """The plan's tile and kernel, seen in the kernel names (templates on the token tile)."""
    found, names = _sm90a_gemm_kernels(dev, M, N, K, L, rng, "predecoded|persistent|streamk")
    assert found == {(kernel, tile)}, names


# Stream-K (gemm_schedule.hpp choose_streamk, kernel/gemm_streamk.cuh): the tiles x K blocks cut into
# one range per CTA, tiles cut between CTAs finished by the CTA holding their first K blocks, on
# 132 SMs: (M, N, K, L, token tile).
STREAMK = [
    (1100, 2100, 4096, 1, 128),  # 153 tiles x 32 blocks: 38 per CTA, tiles cut in two
    (136, 8900, 4096, 2, 136),   # 140 wide tiles, batches, N tail
    (600, 2100, 4160, 2, 128),   # 170 tiles, K tail (staged scales), M tail
    (640, 1792, 4096, 1, 128),   # 70 tiles: 17 per CTA, a tile over three CTAs
    (200, 7168, 7168, 1, 128),   # issue 22's 137..256 range: 112 tiles x 56 blocks, 48 per CTA
]


@needs_sm90
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L,tile", STREAMK)
def test_gemm_streamk(dev, M, N, K, L, tile, layout, out_dtype, rng):
    _check_sm90a_gemm(dev, M, N, K, L, layout, out_dtype, rng)


@needs_sm90
@pytest.mark.parametrize("M,N,K,L,tile", STREAMK)
def test_gemm_streamk_kernels(dev, M, N, K, L, tile, rng):
    """The stream-K kernel alone, at the plan's token tile, seen in the kernel names."""
    found, names = _sm90a_gemm_kernels(dev, M, N, K, L, rng, "predecoded|persistent|tail|streamk")
    assert found == {("streamk", tile)}, names


# The persistent kernel's partial last round as a split-K tail kernel (gemm_schedule.hpp choose_tail),
# where stream-K's model does not win (~800 tiles and more), on 132 SMs: (M, N, K, L, token tile).
# 720 tiles = 5 x 132 + 60 (clusters of 2), batches, M tail: stream-K's model does not take it whatever
# clusters the device fits (a tail needing clusters of 6 can go stream-K where they do not fit).
TAIL = [(1840, 3072, 7168, 2, 128)]


@needs_sm90
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L,tile", TAIL)
def test_gemm_persistent_tail(dev, M, N, K, L, tile, layout, rng):
    _check_sm90a_gemm(dev, M, N, K, L, layout, "float32", rng)


@needs_sm90
@pytest.mark.parametrize("M,N,K,L,tile", TAIL)
def test_gemm_persistent_tail_kernels(dev, M, N, K, L, tile, rng):
    """Both kernels of the call, at the plan's token tile, seen in the kernel names."""
    found, names = _sm90a_gemm_kernels(dev, M, N, K, L, rng, "predecoded|persistent|tail|streamk")
    assert found == {("persistent", tile), ("tail", tile)}, names


@needs_sm90
def test_gemm_streamk_graph_replay(dev, rng):
    """Graph replays with new inputs: the token pass re-zeroes the flags every replay, so each
    owner waits for this replay's partials, not the last one's."""
    if dev.name != "torch":
        pytest.skip("graph capture through PyTorch")
    torch = dev.torch
    M, N, K = 640, 1792, 4096
    a, b = Operand(dev, M, K, 1, "linear", rng), Operand(dev, N, K, 1, "linear", rng)
    out = torch.empty((M, N), device="cuda", dtype=torch.float32)
    run = lambda: nvfp4.gemm(a.q[0], a.sf[0], b.q[0], b.sf[0], out=out, out_dtype="float32", backend="sm90a")
    run()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with graph_capture(torch, g):
        run()
    for _ in range(3):
        a2, b2 = Operand(dev, M, K, 1, "linear", rng), Operand(dev, N, K, 1, "linear", rng)
        for dst, src in ((a, a2), (b, b2)):
            dst.q.copy_(src.q)
            dst.sf.copy_(src.sf)
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        assert_matches(dev.get(out), ref_gemm(dev, a2, b2)[0], "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_gemm_extreme_scales(dev, backend, rng):
    """Every e4m3 scale byte but NaN (subnormals, zero, negatives, 448): the products
    span 2^-10 .. 2688, which the fp16 emulation must still represent exactly."""
    M, N, K = 257, 130, 1024
    a, b = Operand(dev, M, K, None, "linear", rng), Operand(dev, N, K, None, "linear", rng)
    codes = np.array([c for c in range(256) if c not in (0x7F, 0xFF)], np.uint8)
    for op in (a, b):
        op.sf_host = rng.choice(codes, op.sf_host.shape).astype(np.uint8)
        op.sf = op.sf_linear = dev.put(op.sf_host)
    acc = ref_gemm(dev, a, b)
    out = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, out_dtype="float32", backend=backend))
    assert_matches(dev.get(out), acc, "float32")
    # the smallest scales alone (products 2^-10 .. 6·7·2^-9)
    for op in (a, b):
        op.sf = op.sf_linear = dev.put(rng.integers(1, 8, op.sf_host.shape).astype(np.uint8))
    acc = ref_gemm(dev, a, b)
    out = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=2.0 ** 16, out_dtype="float32",
                                                  backend=backend))
    assert_matches(dev.get(out), 2.0 ** 16 * acc, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nan_scales_propagate(dev, layout, backend, rng):
    M, N, K = 300, 200, 512
    qa, qb = R.random_fp4((M, K // 2), rng), R.random_fp4((N, K // 2), rng)
    sfa, sfb = R.random_scales((M, K // 16), rng), R.random_scales((N, K // 16), rng)
    sfa[5, 3], sfa[299, 31], sfb[130, 0] = 0x7F, 0xFF, 0x7F
    qa[5, :] = 0                                                    # NaN * 0 is NaN too
    lay = (lambda s: R.to_blocked(s)) if layout == "blocked" else (lambda s: s)
    out = run_backend(backend, lambda: nvfp4.gemm(dev.put(qa), dev.put(lay(sfa)), dev.put(qb), dev.put(lay(sfb)),
                                                  sf_layout=layout, out_dtype="float32", backend=backend))
    got = dev.get(out)
    expect = np.zeros((M, N), bool)
    expect[[5, 299]] = True
    expect[:, 130] = True
    np.testing.assert_array_equal(np.isnan(got), expect)
    v = run_backend(backend, lambda: nvfp4.gemv(dev.put(qa), dev.put(lay(sfa)), dev.put(qb[0]),
                                                dev.put(lay(sfb[:1]) if layout == "blocked" else sfb[0]),
                                                sf_layout=layout, out_dtype="float32", backend=backend))
    np.testing.assert_array_equal(np.isnan(dev.get(v)), expect[:, 0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_gemm_device_alpha_stream_and_out(dev, backend, rng):
    M, N, K, L = 256, 384, 1024, 2
    a, b, acc = _gemm_case(dev, M, N, K, L, "linear", rng)
    alpha = pow2_alpha(acc) * 1.25
    alpha_dev = dev.scalar(alpha)
    out = dev.poisoned((L, M, N), "float16")
    dev.synchronize()                                # inputs were written on the default stream
    s = dev.stream()
    res = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha_dev, out=out, stream=s,
                                                  backend=backend))
    assert res is out
    s.synchronize()
    assert_matches(dev.get(out), alpha * acc, "float16")
    # stream=None on a framework's current stream
    out2 = dev.poisoned((L, M, N), "float32")
    with dev.use_stream(s):
        nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha_dev, out=out2, backend=backend)
    s.synchronize()
    assert_matches(dev.get(out2), alpha * acc, "float32")
    # an int handle
    handle = s.cuda_stream if dev.name == "torch" else s.ptr
    out3 = nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha, stream=int(handle), backend=backend)
    s.synchronize()
    assert_matches(dev.get(out3), alpha * acc, "float16")


def test_gemm_cuda_graph_reads_alpha_at_replay(dev, rng):
    if dev.name != "torch":
        pytest.skip("graph capture through torch.cuda.graph")
    torch = dev.torch
    M, N, K = 128, 256, 512
    a, b, acc = _gemm_case(dev, M, N, K, None, "linear", rng)
    alpha = pow2_alpha(acc)
    alpha_dev = dev.scalar(alpha)
    out = dev.empty((M, N), "float32")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):                       # warm-up outside capture
        nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha_dev, out=out)
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    with graph_capture(torch, g):
        nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha_dev, out=out)
    alpha_dev.fill_(2 * alpha)
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert_matches(dev.get(out), 2 * alpha * acc, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_gemm_gpu_mode_permuted_views_and_6d_scales(dev, backend, rng):
    """gpu-mode inputs: (M, K/2, L) views with L outermost, and the (32, 4, rest_m, 4,
    rest_k, L) scale view whose padding gpu-mode fills with non-zero bytes."""
    M, N, K, L = 200, 136, 768, 2
    a, b, acc = _gemm_case(dev, M, N, K, L, "linear", rng)
    alpha = pow2_alpha(acc)
    a_gm = a.q.permute(1, 2, 0) if dev.name == "torch" else a.q.transpose(1, 2, 0)
    b_gm = b.q.permute(1, 2, 0) if dev.name == "torch" else b.q.transpose(1, 2, 0)
    back = (lambda x: x.permute(2, 0, 1)) if dev.name == "torch" else (lambda x: x.transpose(2, 0, 1))
    pad = lambda s: rng.integers(1, 3, size=s)
    va = dev.six_d(dev.put(R.to_blocked_6d(a.sf_host, pad_value=pad)), M, K)
    vb = dev.six_d(dev.put(R.to_blocked_6d(b.sf_host, pad_value=pad)), N, K)
    out = run_backend(backend, lambda: nvfp4.gemm(back(a_gm), va, back(b_gm), vb, alpha=alpha, sf_layout="blocked",
                                                  backend=backend))
    assert_matches(dev.get(out), alpha * acc, "float16")
    lin = nvfp4.unswizzle_scales(va, M, K)                         # the 6-D view into unswizzle too
    np.testing.assert_array_equal(dev.get(lin), a.sf_host)


@pytest.mark.parametrize("backend", BACKENDS)
def test_strided_operands(dev, backend, rng):
    M, N, K, L = 130, 70, 256, 3
    a, b, acc = _gemm_case(dev, M, N, K, L, "linear", rng)
    alpha = pow2_alpha(acc)

    def padded(x):
        big = dev.empty((x.shape[0], x.shape[1] + 3, x.shape[2] + 32), "uint8")
        big[:, : x.shape[1], : x.shape[2]] = x
        return big[:, : x.shape[1], : x.shape[2]]

    out_big = dev.poisoned((L, M + 1, N + 8), "float32")
    out = out_big[:, 1:, 4: N + 4]
    run_backend(backend, lambda: nvfp4.gemm(padded(a.q), padded(a.sf), padded(b.q), padded(b.sf), alpha=alpha,
                                            out=out, backend=backend))
    assert_matches(dev.get(out), alpha * acc, "float32")
    host = dev.get(out_big).view(np.uint8)
    assert (host[:, 0] == POISON_BYTE).all(), "wrote outside the output view"


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_size_is_a_no_op(dev, backend):
    q = dev.empty((0, 32), "uint8")
    sf = dev.empty((0, 4), "uint8")
    b = dev.put(np.zeros((8, 32), np.uint8))
    sfb = dev.put(np.zeros((8, 4), np.uint8))
    out = nvfp4.gemm(q, sf, b, sfb, backend=backend)
    assert tuple(out.shape) == (0, 8)
    out = nvfp4.gemm(b, sfb, q, sf, backend=backend)
    assert tuple(out.shape) == (8, 0)

# ---------------------------------------------------------------------------
# Errors specific to device arrays
# ---------------------------------------------------------------------------

def test_device_validation(dev, rng):
    a = Operand(dev, 64, 128, None, "linear", rng)
    b = Operand(dev, 32, 128, None, "linear", rng)
    out = dev.poisoned((64, 32), "float16")
    before = dev.get(out).view(np.uint8).copy()
    with pytest.raises(ValueError, match="'b'.*one device|one device.*'b'"):
        nvfp4.gemm(a.q, a.sf, b.q_host, b.sf, out=out)                     # host b with device a
    with pytest.raises(ValueError, match="'out'"):
        nvfp4.gemm(a.q, a.sf, b.q, b.sf, out=np.zeros((64, 32), np.float16))
    with pytest.raises(ValueError, match="backend"):
        nvfp4.gemm(a.q, a.sf, b.q, b.sf, out=out, backend="cpu")
    with pytest.raises(ValueError, match="'sfb'"):
        nvfp4.gemm(a.q, a.sf, b.q, b.sf[:, :4], out=out)
    with pytest.raises(ValueError, match="offsets"):
        nvfp4.grouped_gemm_packed(a.q, a.sf, b.q[None], b.sf[None], dev.put(np.array([0], np.int32)))
    dev.synchronize()
    np.testing.assert_array_equal(dev.get(out).view(np.uint8), before)


# Short K slices with more tiles than SMs: the persistent pre-decoded kernel, not the fused
# one (gemm_plan.hpp plan_gemm many_tiles). (M, N, K, L, kernel) on 132 SMs: 1..8 K blocks,
# staged scales (K % 256 != 0), blocked bulk scales, 136-token tiles with M tails and batches.
SHORT_MANY = [
    (2048, 2048, 32, 1, "persistent"),    # one K block (a partial one), staged scales
    (2048, 2048, 160, 2, "persistent"),   # two K blocks, batches, staged (blocked K % 128 != 0 too)
    (257, 9000, 256, 1, "persistent"),    # 213 tiles of 128 tokens, blocked scales bulk-copied
    (1030, 3000, 256, 2, "persistent"),   # M tail, batches (136-token tiles)
    (136, 20000, 512, 1, "persistent"),   # four K blocks, one 136-token tile
    (4096, 4096, 1024, 1, "persistent"),  # 1024 tiles of 8 blocks
]


@needs_sm90
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L,kernel", SHORT_MANY)
def test_gemm_short_many_tiles(dev, M, N, K, L, kernel, layout, rng):
    _check_sm90a_gemm(dev, M, N, K, L, layout, "float32", rng)


@needs_sm90
@pytest.mark.parametrize("M,N,K,L,kernel", SHORT_MANY)
def test_gemm_short_many_tiles_kernel(dev, M, N, K, L, kernel, rng):
    found, names = _sm90a_gemm_kernels(dev, M, N, K, L, rng, "predecoded|persistent|tail")
    assert kernel in {k for k, _ in found}, names
    assert not any("nvfp4_sm90_gemm_kernel" in n for n in names), names
