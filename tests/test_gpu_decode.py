"""GPU tests of the decode-regime GEMM (issue 22): gemm with 2..32 tokens on at least 4096
weight rows (N·L; 17..32 tokens, 3 or 4 token groups, need 7168 where K < 1536) runs the sm90a decode kernel (cpp/src/sm90/gemv/decode_kernel.cuh, routed by
gemm_plan.hpp's decode_route; gemv/decode_plan.hpp says why those bounds) wherever the operands
are aligned; the results must match the float64 reference
(docs/design.md "Numerics", tests/_util.py tolerances) on the benchmark shapes, odd shapes
(token-group tails, N tails, K = 32 / 96 tails, both layouts, L = 1 / 3, fp16 / bf16 / fp32),
every token count, every cluster split the plan picks on an H100, extreme and NaN scales,
device alphas (also changed between CUDA-graph replays); and the profiler must show the
decode kernel (not the tiled GEMM, not GEMVs) on that route. M = 1 (a GEMV), 33..65, 17..32 on
fewer rows at short K or on many weights / long K (decode_weights_fit) and fewer rows (the tiled GEMM) are checked beside them; shapes outside the route still have to
match the reference.

Run: python -m pytest -q tests/test_gpu_decode.py"""

from __future__ import annotations

import re

import numpy as np
import pytest

import nvfp4
from nvfp4 import _nvfp4_ext
from _util import HAVE_GPU, Operand, assert_matches, graph_capture, kernel_names, pow2_alpha, ref_gemm, run_backend

pytestmark = pytest.mark.gpu

IS_SM90 = HAVE_GPU and _nvfp4_ext.device_info(0)["backend"] == "sm90a"
BACKENDS = ["auto"] + (["sm90a"] if IS_SM90 else [])
LAYOUTS = ["linear", "blocked"]
needs_sm90 = pytest.mark.skipif(not IS_SM90, reason="the decode kernel is sm90a's (a CC 9.0 device)")


def case(dev, M, N, K, L, layout, rng, **kw):
    a = Operand(dev, M, K, L, layout, rng, **kw)
    b = Operand(dev, N, K, L, layout, rng, **kw)
    return a, b, ref_gemm(dev, a, b)


def gemm(a, b, layout, backend, **kw):
    return run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, sf_layout=layout, backend=backend, **kw))


# ---------------------------------------------------------------------------
# The benchmark shapes of issue 22
# ---------------------------------------------------------------------------

TARGET_NK = [(7168, 7168), (4096, 14336), (14336, 4096)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M", [2, 4, 8, 16, 32, 64])
@pytest.mark.parametrize("N,K", TARGET_NK)
def test_target_shapes(dev, N, K, M, layout, backend, rng):
    a, b, acc = case(dev, M, N, K, None, layout, rng)
    alpha = pow2_alpha(acc)
    out = gemm(a, b, layout, backend, alpha=alpha)
    assert tuple(out.shape) == (M, N)
    assert_matches(dev.get(out), alpha * acc, "float16")


# ---------------------------------------------------------------------------
# Odd shapes: token-group tails (3, 15), the tiled GEMM above the range (17, 65), N tails
# (4100: a partial 16-row task and 128-row block on the decode route; 200: too few rows, the
# tiled GEMM), K tails (32, 96: partial stages and steps), K = 4096 (8 full stages), L = 1 / 3,
# every output dtype
# ---------------------------------------------------------------------------

ODD = [(M, N, K) for M in (3, 15, 17, 65) for N in (200, 4100) for K in (32, 96, 4096)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", ODD)
def test_odd_shapes(dev, M, N, K, layout, out_dtype, backend, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    L = (None, 3)[ODD.index((M, N, K)) % 2]
    a, b, acc = case(dev, M, N, K, L, layout, rng)
    alpha = pow2_alpha(acc)
    out = gemm(a, b, layout, backend, alpha=alpha, out_dtype=out_dtype)
    assert tuple(out.shape) == ((M, N) if L is None else (L, M, N))
    assert_matches(dev.get(out), alpha * acc, out_dtype)


# (N, token counts): M = 2..17 on 4100 rows, every tail of the 8-token groups (1 and 2 groups; 17:
# the tiled GEMM at this K); M = 17..33 on 7200 rows (>= 7168), every tail of the 3 and 4 token
# groups (33: the tiled GEMM). Both N with a partial 128-row block; K = 1024 (2 stages).
TOKEN_COUNTS = [(4100, range(2, 18)), (7200, range(17, 34))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("N,counts", TOKEN_COUNTS, ids=["groups_1_2", "groups_3_4"])
def test_every_token_count(dev, N, counts, layout, backend, rng):
    """Every token count of `counts` on one shape (TOKEN_COUNTS), fp32 out, a device alpha."""
    K = 1024
    for M in counts:
        a, b, acc = case(dev, M, N, K, None, layout, rng)
        alpha = pow2_alpha(acc) * 0.75
        out = gemm(a, b, layout, backend, alpha=dev.scalar(alpha), out_dtype="float32")
        assert_matches(dev.get(out), alpha * acc, "float32")


# Launch shapes on the decode route (ring stages of 512 or 256 K, cluster split kc 1..8 as the
# device's cluster table allows, 2..8 warps per CTA; another GPU may pick others, the results must
# match all the same), partial last ranks, batches. H100 picks (host plan test) in the comments.
SPLITS = [
    (8, 4096, 8192, 1),     # 1 token group, long K
    (16, 4224, 16384, 1),   # 2 token groups, a partial 128-row block
    (5, 8192, 32768, 1),    # long K per rank
    (12, 2048, 6144, 2),    # batched: 4096 rows in all
    (9, 7168, 7168, 1),     # a benchmark shape: fine stages, kc 4
    (16, 4096, 14336, 1),   # a benchmark shape: full stages, kc 7
    (4, 14336, 4096, 1),    # a benchmark shape: full stages, kc 2
    (2, 4100, 2080, 3),     # K tail: a partial last stage, N tail
    (32, 7168, 4096, 1),    # 4 token groups on 7168 rows (7168^2 takes the 32-token tile at 25..32)
    (17, 14336, 4096, 1),   # 3 token groups, a benchmark shape (kc 2), 7 empty token columns
    (24, 7300, 2080, 1),    # 3 token groups: K tail, N tail
    (20, 2400, 1024, 3),    # 3 token groups, batched: 7200 rows in all
    (24, 4096, 14336, 1),   # 3 token groups on 4096 rows (K >= 4096), H100: clusters of 7
    (28, 4100, 4096, 1),    # 4 token groups on 4100 rows, N tail
    (6, 4096, 7168, 1),     # H100: fine stages, clusters of 7
    (8, 5120, 5120, 1),     # H100: fine stages, clusters of 5
    (16, 4096, 2048, 1),    # short K: fine stages, kc 3 (full ones could not split)
    (3, 4100, 4000, 1),     # fine stages, a partial last fine stage (125 chunks), N tail
    (25, 7200, 1312, 1),    # 4 token groups, short K with a partial stage (41 chunks)
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", SPLITS)
def test_cluster_splits(dev, M, N, K, L, layout, backend, rng):
    if layout == "linear" and K % 256:
        layout = "blocked"  # linear weight scales with K % 256 != 0 take the old routes
    a, b, acc = case(dev, M, N, K, L, layout, rng)
    out = gemm(a, b, layout, backend, out_dtype="float32")
    assert_matches(dev.get(out), acc, "float32")


# ---------------------------------------------------------------------------
# Scales, alphas, graphs
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("M", [4, 16, 32, 64])
def test_extreme_scales(dev, M, backend, rng):
    """Every e4m3 byte but NaN (subnormals, zero, negatives, 448) in both operands: every
    decoded e2m1 * scale * 2^-14 must be an exact fp16 (down to 2^-24)."""
    N, K = 300, 1024
    a, b = Operand(dev, M, K, None, "linear", rng), Operand(dev, N, K, None, "linear", rng)
    codes = np.array([c for c in range(256) if c not in (0x7F, 0xFF)], np.uint8)
    for op in (a, b):
        op.sf_host = rng.choice(codes, op.sf_host.shape).astype(np.uint8)
        op.sf = op.sf_linear = dev.put(op.sf_host)
    acc = ref_gemm(dev, a, b)
    out = gemm(a, b, "linear", backend, out_dtype="float32")
    assert_matches(dev.get(out), acc, "float32")
    for op in (a, b):  # the smallest scales alone
        op.sf_host = rng.choice(np.arange(1, 8, dtype=np.uint8), op.sf_host.shape).astype(np.uint8)
        op.sf = op.sf_linear = dev.put(op.sf_host)
    acc = ref_gemm(dev, a, b)
    out = gemm(a, b, "linear", backend, out_dtype="float32")
    assert_matches(dev.get(out), acc, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_scales(dev, backend, rng):
    """A NaN weight scale makes its row NaN for every token, a NaN token scale its token NaN
    for every row; nothing else (a partial last stage included: K = 1056)."""
    M, N, K = 12, 260, 1056
    a, b = Operand(dev, M, K, None, "blocked", rng), Operand(dev, N, K, None, "blocked", rng)
    sb, sa = b.sf_host.copy(), a.sf_host.copy()
    sb[37, 5] = 0x7F
    sb[259, K // 16 - 1] = 0xFF
    sa[3, 0] = 0x7F
    from nvfp4 import reference as R
    for op, sf in ((a, sa), (b, sb)):
        op.sf_host = sf
        op.sf_linear = dev.put(sf)
        op.sf = dev.put(R.to_blocked(sf))
    acc = ref_gemm(dev, a, b)
    assert np.isnan(acc).sum() == 2 * M + N - 2  # rows 37, 259 x every token; token 3 x every row
    out = gemm(a, b, "blocked", backend, out_dtype="float32")
    assert_matches(dev.get(out), acc, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_replay_reads_alpha(dev, backend, rng):
    if dev.name != "torch":
        pytest.skip("graph capture through torch.cuda.graph")
    torch = dev.torch
    M, N, K = 8, 4096, 4096
    a, b, acc = case(dev, M, N, K, None, "blocked", rng)
    alpha = pow2_alpha(acc, 3.0)
    d = dev.scalar(alpha)
    out = dev.empty((M, N), "float32")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # warm-up outside capture
        gemm(a, b, "blocked", backend, alpha=d, out_dtype="float32", out=out)
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    with graph_capture(torch, g):
        gemm(a, b, "blocked", backend, alpha=d, out_dtype="float32", out=out)
    d.fill_(4 * alpha)
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert_matches(dev.get(out), 4 * alpha * acc, "float32")


# ---------------------------------------------------------------------------
# What runs
# ---------------------------------------------------------------------------



@needs_sm90
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", [(1, 4096, 7168), (2, 4096, 7168), (3, 4096, 7168), (8, 4096, 7168), (9, 4096, 7168),
                                   (16, 4096, 7168), (17, 4096, 7168), (24, 4096, 7168), (32, 4096, 7168),
                                   (65, 4096, 7168), (8, 2048, 7168), (17, 7168, 7168), (32, 7168, 7168),
                                   (33, 7168, 7168), (8, 4096, 2048), (24, 4096, 2048), (24, 4096, 1024),
                                   (24, 7168, 1024), (24, 4096, 14336), (32, 4096, 14336), (32, 14336, 7168),
                                   (17, 14336, 14336)])
def test_decode_kernel_runs(dev, M, N, K, layout, rng):
    if dev.name != "torch":
        pytest.skip("needs PyTorch (profiler)")
    a, b = Operand(dev, M, K, None, layout, rng), Operand(dev, N, K, None, layout, rng)
    names = kernel_names(dev, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, sf_layout=layout, backend="sm90a"))
    decode = [n for n in names if "gemm_decode_kernel" in n]
    others = [n for n in names if "nvfp4_sm90_gemm" in n or "gemv_mma_kernel" in n or "gemv_reg_kernel" in n]
    # decode_plan.hpp decode_min_rows: 4096 rows, but 7168 for 17..32 tokens at K < 1536;
    # decode_weights_fit: 17..24 tokens on at most 2^26 weight elements, 25..32 on 2^25 and K <= 4096
    fits = M <= 24 and N * K <= 1 << 26 or N * K <= 1 << 25 and K <= 4096
    if (2 <= M <= 16 and N >= 4096) or (17 <= M <= 32 and N >= (4096 if K >= 1536 else 7168) and fits):
        assert len(decode) == 1 and not others, names
    else:
        assert not decode and others, names
    assert nvfp4.last_backend() == "sm90a"


@needs_sm90
@pytest.mark.parametrize("M,N,K,sc", [(4, 7168, 7168, 8), (16, 4096, 2048, 8), (4, 14336, 4096, 16), (16, 4096, 14336, 16)])
def test_decode_stage_geometry(dev, M, N, K, sc, rng):
    """The plan's ring stage per shape on an H100 (decode_plan.hpp: fine 256-K stages where they
    balance a cluster split that 512-K ones cannot: 7168 K over 4 ranks, 2048 K over 3; full ones
    where those divide evenly). Another GPU's cluster table may pick others."""
    if dev.name != "torch":
        pytest.skip("needs PyTorch (profiler)")
    if "H100" not in _nvfp4_ext.device_info(0)["name"]:
        pytest.skip("the expected picks are an H100's")
    a, b = Operand(dev, M, K, None, "blocked", rng), Operand(dev, N, K, None, "blocked", rng)
    names = kernel_names(dev, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, sf_layout="blocked", backend="sm90a"))
    got = [int(m.group(1)) for n in names for m in [re.search(r"gemm_decode_kernel<\d+, \w+, (\d+)>", n)] if m]
    assert got == [sc], names
