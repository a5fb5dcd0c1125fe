"""GPU tests of the sm90a dual GEMM's decode route (issue 22; cpp/src/sm90/gemv/decode_kernel.cuh
dual_gemm_decode_kernel, routed by cpp/src/sm90/dual_plan.hpp dual_decode_route: M = 2..32 tokens on
2 N L >= 4096 weight rows (17..32 tokens: 16384) with the decode kernel's operands). Every result against the float64
reference (tests/test_gpu_dual_fused.py's helpers), on "auto" and, on Hopper, "sm90a" forced.
Marker `gpu`: skipped without a CUDA device; the route checks skip on other GPUs.

Covered: M 2, 3, 4, 7, 16, 17, 32 (one to four token groups) x N 8, 200, 4096 (small N with a batch large
enough for the route: L 256 / 11) and N tails (4100, 2050: a part-empty 128-row band, tasks past N),
both activations, both scale layouts (linear needs K % 256 == 0; blocked also K = 96, 4224), L 1 and
3, fp16 / bf16 / fp32 out, device alphas (also changed between CUDA-graph replays), a K split over a
cluster (K = 16384 and the target 4096 x 7168: the activation must see the reduced sums), output
views with a column offset and a transposed output, NaN scales in B1 and in B2, and that the route
runs (no workspace; the profiler's kernel names) where the plan says, and not elsewhere.

Run: python -m pytest -q tests/test_gpu_dual_decode.py"""

from __future__ import annotations

import numpy as np
import pytest

import nvfp4
from nvfp4 import reference as R
from _util import Operand, assert_matches, kernel_names
from test_gpu_dual_fused import (BACKENDS, _workspace_bytes, case, check_graph_replay_reads_alphas, dual, expected,
                                 needs_sm90)

pytestmark = pytest.mark.gpu

LAYOUTS = ["linear", "blocked"]


def route_L(N, L):
    """The batch that puts N columns on the route (2 N L >= 4096), at least L."""
    need = -(-2048 // N)
    return max(L or 1, need)


def check(dev, M, N, K, L, layout, activation, out_dtype, backend, rng, device_alphas=False):
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, L, layout, activation, rng)
    if device_alphas:
        a1, a2 = a1 * 1.5, a2 * 0.75  # one fp32 rounding more than the reference: fine at these tolerances
        out = dual(a, b1, b2, dev.scalar(a1), dev.scalar(a2), layout, activation, backend, out_dtype=out_dtype)
    else:
        out = dual(a, b1, b2, a1, a2, layout, activation, backend, out_dtype=out_dtype)
    assert tuple(out.shape) == ((M, N) if L is None else (L, M, N))
    assert_matches(dev.get(out), expected(acc1, acc2, a1, a2, activation), out_dtype)


# ---------------------------------------------------------------------------
# Shapes, layouts, activations, dtypes
# ---------------------------------------------------------------------------

GRID = [(M, N) for M in (2, 3, 4, 7, 16, 17, 32) for N in (8, 200, 4096)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N", GRID)
def test_shapes(dev, M, N, layout, backend, rng):
    i = GRID.index((M, N))
    activation = ("silu", "gelu_tanh")[(i + len(layout)) % 2]
    out_dtype = ("float16", "float32", "bfloat16")[i % 3]
    if out_dtype == "bfloat16" and dev.name != "torch":
        out_dtype = "float32"
    L = route_L(N, (None, 3)[i % 2]) if N < 4096 else (None, 3)[i % 2]
    K = 512 if N < 4096 else 2048
    check(dev, M, N, K, L, layout, activation, out_dtype, backend, rng)


TAILS = [(5, 4100, 1024, None, "linear"), (12, 2050, 1024, 1, "blocked"), (16, 2050, 96, 3, "blocked"),
         (2, 4100, 4224, None, "blocked"), (9, 1000, 256, 3, "linear")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("M,N,K,L,layout", TAILS)
def test_tails(dev, M, N, K, L, layout, backend, rng):
    """N tails inside a 128-row band (tasks with rows past N, bands partly empty), K tails of a
    stage (K = 96, 4224: partial ring stages), 2050 x 1 = 4100 rows: just on the route."""
    activation = "gelu_tanh" if M % 2 else "silu"
    check(dev, M, N, K, L, layout, activation, "float32", backend, rng)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("L", [None, 3])
def test_device_alphas_activations_dtypes(dev, activation, out_dtype, L, backend, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    layout = "blocked" if L else "linear"
    check(dev, 6, 2304, 1024, L, layout, activation, out_dtype, backend, rng, device_alphas=True)


# K split over a cluster (on an H100 the plan picks clusters of 2 to 6 for these; other GPUs may pick
# others: the results must match all the same)
SPLITS = [(4, 4096, 16384, None, "linear"), (16, 4096, 16384, None, "blocked"), (4, 4096, 7168, None, "blocked"),
          (11, 2048, 8192, 1, "linear"), (3, 1024, 16384, 3, "blocked")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("M,N,K,L,layout", SPLITS)
def test_cluster_split(dev, M, N, K, L, layout, backend, rng):
    for activation in ("silu", "gelu_tanh"):
        check(dev, M, N, K, L, layout, activation, "float32", backend, rng)


def test_graph_replay_reads_alphas(dev, rng):
    check_graph_replay_reads_alphas(dev, 4, 4096, 7168, "gelu_tanh", [(2.0, 0.5), (0.25, 4.0)], rng)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("col0,out_dtype", [(8, "float16"), (3, "float32")])
def test_output_views(dev, col0, out_dtype, backend, rng):
    """out = big[:, 1:M+1, col0:col0+N] of a poisoned buffer: nothing outside the view changes."""
    M, N, K, L = 5, 1100, 512, 2
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


def test_transposed_output(dev, rng):
    if dev.name != "torch":
        pytest.skip("output strides through torch views")
    M, N, K = 7, 4096, 1024
    a, b1, b2, a1, a2, acc1, acc2 = case(dev, M, N, K, None, "blocked", "silu", rng)
    out_t = dev.torch.empty((N, M), dtype=dev.torch.float32, device="cuda")
    dual(a, b1, b2, a1, a2, "blocked", "silu", "auto", out=out_t.t())
    assert_matches(dev.get(out_t.t()), expected(acc1, acc2, a1, a2, "silu"), "float32")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nan_scales_propagate(dev, layout, backend, rng):
    M, N, K = 4, 4096, 512
    a = Operand(dev, M, K, None, layout, rng)
    b1, b2 = Operand(dev, N, K, None, "linear", rng), Operand(dev, N, K, None, "linear", rng)
    sf1, sf2 = b1.sf_host.copy(), b2.sf_host.copy()
    sf1[7, 3], sf2[130, 31], sf2[4095, 0] = 0x7F, 0xFF, 0x7F
    for op, sf in ((b1, sf1), (b2, sf2)):
        op.sf_linear = dev.put(sf)
        op.sf = dev.put(R.to_blocked(sf)) if layout == "blocked" else op.sf_linear
    out = dual(a, b1, b2, 1.0, 1.0, layout, "silu", backend, out_dtype="float32")
    got = np.isnan(dev.get(out))
    expect = np.zeros((M, N), bool)
    expect[:, [7, 130, 4095]] = True
    np.testing.assert_array_equal(got, expect)


# ---------------------------------------------------------------------------
# The route is what runs (and only where the plan says)
# ---------------------------------------------------------------------------



ROUTE = [(2, 4096, 7168, None, True), (4, 4096, 7168, None, True), (16, 14336, 4096, None, True),
         (16, 4096, 7168, None, True), (3, 1024, 1024, 2, True),
         (17, 14336, 4096, None, True), (24, 4096, 7168, 2, True), (32, 14336, 4096, None, True),  # 3 / 4 groups
         (17, 4096, 7168, None, False), (33, 4096, 7168, None, False), (64, 4096, 7168, None, False),  # fused
         (32, 4096, 1024, 2, True), (32, 4095, 1024, 2, False),          # 17..32: 16384 rows
         (2, 1000, 1024, 2, False), (1, 4096, 1024, None, False),      # composed
         (4, 2047, 1024, None, False)]                                  # fused: below the rows bound


@needs_sm90
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L,on_route", ROUTE)
def test_routekernel_names(dev, M, N, K, L, on_route, layout, rng):
    if dev.name != "torch":
        pytest.skip("needs PyTorch (C ABI through ctypes, profiler)")
    torch = dev.torch
    a = Operand(dev, M, K, L, layout, rng)
    b1, b2 = Operand(dev, N, K, L, layout, rng), Operand(dev, N, K, L, layout, rng)
    out = dev.empty((M, N) if L is None else (L, M, N), "float16")
    names = kernel_names(dev, lambda: dual(a, b1, b2, 1.0, 1.0, layout, "silu", "sm90a", out=out))
    decode = any("dual_gemm_decode_kernel" in n for n in names)
    assert decode == on_route, names
    if on_route:
        assert len([n for n in names if "nvfp4" in n]) == 1, names  # one launch
        assert not any("predecode" in n or "dual_combine" in n or "nvfp4_sm90_dual_gemm_kernel" in n
                       for n in names), names
        if L is None:
            assert _workspace_bytes(torch, a, b1, b2, out, layout) == 0
    assert nvfp4.last_backend() == "sm90a"
