"""GPU tests of the packed MoE decode route (issue 22): grouped_gemm_packed with few rows per
expert (packed_plan.hpp packed_decode_route: total_M <= 8 G, N * min(G, total_M) >= 4096, aligned
operands, linear scales with K % 256 == 0) runs the decode-regime kernel with the experts as the
batch (cpp/src/sm90/gemv/decode_kernel.cuh gemm_decode_moe_kernel, launched by grouped_packed.cu;
plan gemv/decode_moe_plan.hpp): each CTA group computes one chunk of <= 8 NT8 token
rows of one non-empty expert, found from the device offsets. Every result against the float64
reference (nvfp4.reference's tables on the device: tests/_util.py's device helpers).

Covered: top-8 routing of 1, 4, 16 and 64 tokens over 64 experts on both target (N, K) pairs at
full size (ragged, empty experts, device alphas); experts above a chunk (17, 40 rows: several
chunk slots; one and two token groups); fp16 / bf16 / fp32 outputs with and without alphas; a
K split over a cluster; 33 to 1000 experts (the chunk scan's rows and batches); N and K tails, and shapes off the route; CUDA-graph replay with new offsets (same total_M) and new alphas; a
malformed device table (decreasing, negative, past total_M: no fault, no hang, the first
expert's rows finite, the next good call exact); that the profiler shows the MoE decode kernel
(and no token pass) on the route and the tiled kernel off it.

Run: python -m pytest -q tests/test_gpu_packed_decode.py"""

from __future__ import annotations

import numpy as np
import pytest

import nvfp4
from nvfp4 import _nvfp4_ext
from _util import HAVE_GPU, Operand, assert_matches, graph_capture, kernel_names, run_backend

pytestmark = pytest.mark.gpu

IS_SM90 = HAVE_GPU and _nvfp4_ext.device_info(0)["backend"] == "sm90a"
BACKENDS = ["auto"] + (["sm90a"] if IS_SM90 else [])
needs_sm90 = pytest.mark.skipif(not IS_SM90, reason="the MoE decode route is sm90a's (a CC 9.0 device)")


def routing(tokens, experts, rng, topk=8):
    """Rows per expert of top-k routing with Dirichlet(1) popularities (bench/run.py moe_routing's
    kind: ragged, empty experts)."""
    p = rng.dirichlet(np.ones(experts))
    counts = np.zeros(experts, dtype=np.int64)
    for _ in range(tokens):
        counts[rng.choice(experts, size=min(topk, experts), replace=False, p=p)] += 1
    return counts


def offsets_of(counts):
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)


class Experts:
    """G experts' weights (G, N, K/2) and linear scales; the float64 values of one expert on demand."""

    def __init__(self, dev, G, N, K, rng):
        self.G, self.N, self.K = G, N, K
        self.op = Operand(dev, N, K, G, "linear", rng, lo=0.25, hi=1.0)
        self.dev = dev

    def values(self, g):
        return self.dev.decode(self.op.q[g], self.op.sf_linear[g])


def reference(dev, x, w, offs, alphas=None):
    """float64 (total_M, N): rows of expert g times its weights (clamped like the kernels for a
    valid table; the tests pass valid tables here)."""
    total = int(offs[-1])
    xv = x.values(dev)
    ref = np.zeros((total, w.N))
    for g in range(w.G):
        lo, hi = int(offs[g]), int(offs[g + 1])
        if hi > lo:
            a = 1.0 if alphas is None else float(alphas[g])
            ref[lo:hi] = a * dev.get(dev.matmul_t(xv[lo:hi], w.values(g)))
    return ref


def packed(dev, x, w, offs, backend, alphas=None, **kw):
    return run_backend(backend, lambda: nvfp4.grouped_gemm_packed(
        x.q, x.sf, w.op.q, w.op.sf, dev.put(offs) if isinstance(offs, np.ndarray) else offs,
        alphas=None if alphas is None else dev.put(alphas), backend=backend, **kw))


_WEIGHTS = {}


def target_weights(dev, N, K):
    """The full-size experts of one target pair, made once per module run (470 MB packed)."""
    if (N, K) not in _WEIGHTS:
        _WEIGHTS.clear()
        _WEIGHTS[(N, K)] = Experts(dev, 64, N, K, np.random.default_rng(N + K))
    return _WEIGHTS[(N, K)]


# ---------------------------------------------------------------------------
# The target rows of issue 22 at full size
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tokens", [1, 4, 16, 64, 128])
@pytest.mark.parametrize("N,K", [(2048, 7168), (7168, 2048)])
def test_target_rows(dev, N, K, tokens, backend, rng):
    w = target_weights(dev, N, K)
    counts = routing(tokens, 64, rng)
    offs = offsets_of(counts)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    alphas = rng.choice([0.125, 0.25, 0.5], 64).astype(np.float32)
    out = packed(dev, x, w, offs, backend, alphas=alphas)
    assert tuple(out.shape) == (int(offs[-1]), N)
    assert_matches(dev.get(out), reference(dev, x, w, offs, alphas), "float16")


# ---------------------------------------------------------------------------
# Experts above one chunk, output dtypes, alphas, a cluster split, odd shapes
# ---------------------------------------------------------------------------

# (counts, N, K): total_M <= 2 G -> chunks of 8 rows (one token group); <= 8 G -> 16 (two); above
# -> 32 (four token groups)
BIG = [
    ({5: 40, 9: 17, 20: 16, 21: 8, 22: 9, 63: 1}, 512, 1024),            # 91 rows / 64 experts: chunks of 8
    ({0: 40, 7: 17, 8: 16, 30: 33, 31: 2, 50: 60, 63: 3}, 512, 1024),    # 171 rows: chunks of 16
    ({3: 40}, 4096, 512),                                                 # one expert only: 3 chunks of 16
    ({0: 100, 5: 77, 6: 33, 7: 32, 9: 300, 40: 31, 63: 40}, 512, 1024),  # 613 rows: chunks of 32
    ({g: 8 + (5 * g) % 13 for g in range(64)}, 1024, 2048),               # 894 rows, every expert: chunks of 32
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(BIG)))
def test_experts_above_a_chunk(dev, case, backend, rng):
    spec, N, K = BIG[case]
    G = 64
    counts = np.zeros(G, np.int64)
    for g, m in spec.items():
        counts[g] = m
    counts += (rng.random(G) < 0.3) * (counts == 0)  # scattered one-row experts
    offs = offsets_of(counts)
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    out = packed(dev, x, w, offs, backend, out_dtype="float32")
    assert_matches(dev.get(out), reference(dev, x, w, offs), "float32")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("with_alphas", [False, True])
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
def test_out_dtypes(dev, out_dtype, with_alphas, backend, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bf16 arrays need PyTorch")
    G, N, K = 64, 1024, 512
    offs = offsets_of(routing(16, G, rng))
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    alphas = rng.choice([0.125, 0.25, 0.375], G).astype(np.float32) if with_alphas else None
    out = packed(dev, x, w, offs, backend, alphas=alphas, out_dtype=out_dtype)
    assert_matches(dev.get(out), reference(dev, x, w, offs, alphas), out_dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("G,tokens,N,K", [(8, 1, 512, 8192), (16, 2, 1024, 16384), (64, 1, 2048, 7168),
                                          (4, 1, 2048, 14336)])
def test_cluster_split(dev, G, tokens, N, K, backend, rng):
    """Few chunks of long K: the plan splits K over a cluster (on an H100: 2 for top-8 of 1 token over
    64 experts on 2048 x 7168, decode_moe_plan_test; 7 for 4 one-row experts on 2048 x 14336)."""
    offs = offsets_of(routing(tokens, G, rng))
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    out = packed(dev, x, w, offs, backend, out_dtype="float32")
    assert_matches(dev.get(out), reference(dev, x, w, offs), "float32")


# (G, tokens, N, K): N tails on the route (200: a partial 16-row task; 4100: a partial 128-row
# block), K = 256 (one stage) and 1280 (a partial stage); off the route: K % 256 != 0 (linear
# scale pieces), too few weight rows (256 x 8), too many rows per expert (4 experts, 68 rows)
ODD = [(64, 4, 200, 256), (64, 2, 4100, 1280), (64, 4, 1024, 96), (64, 1, 256, 256), (4, None, 512, 256)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("G,tokens,N,K", ODD)
def test_odd_shapes(dev, G, tokens, N, K, backend, rng):
    counts = routing(tokens, G, rng) if tokens else np.array([5, 0, 60, 3])
    offs = offsets_of(counts)
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    out = packed(dev, x, w, offs, backend, out_dtype="float32")
    assert_matches(dev.get(out), reference(dev, x, w, offs), "float32")


# The chunk scan past one warp row and past one load batch (decode_moe.cuh moe_find_chunk: experts in
# rows of 32, four rows per batch): G = 33, 200, 1000 with routed rows, and rows only in the last
# experts of the table (the carry over every row before).
@pytest.mark.parametrize("G,last_only", [(33, False), (200, False), (1000, False), (200, True), (1000, True)])
def test_many_experts(dev, G, last_only, rng):
    if last_only:
        counts = np.zeros(G, dtype=np.int64)
        counts[-3:] = [2, 0, 9]
        counts[G // 2] = 1
    else:
        counts = routing(16, G, rng)
    offs = offsets_of(counts)
    w = Experts(dev, G, 512, 256, rng)
    x = Operand(dev, int(offs[-1]), 256, None, "linear", rng, lo=0.25, hi=1.0)
    out = packed(dev, x, w, offs, "auto", out_dtype="float32")
    assert_matches(dev.get(out), reference(dev, x, w, offs), "float32")


# ---------------------------------------------------------------------------
# Graph replay with new offsets; malformed offsets
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_replay_new_offsets(dev, backend, rng):
    """A captured call replays with a new table (same total_M: other experts empty, one expert
    above a chunk) and new alphas written into the same buffers."""
    if dev.name != "torch":
        pytest.skip("graph capture through torch.cuda.graph")
    torch = dev.torch
    G, N, K = 64, 1024, 1024
    c1 = routing(16, G, rng)                     # 128 rows
    c2 = np.zeros(G, np.int64)
    c2[[2, 3, 40, 63]] = [40, 1, 80, 7]          # the same 128 rows on 4 experts (chunks of 8: 5 + 1 + 10 + 1)
    o1, o2 = offsets_of(c1), offsets_of(c2)
    assert o1[-1] == o2[-1]
    total = int(o1[-1])
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    a1 = np.full(G, 0.25, np.float32)
    a2 = rng.choice([0.125, 0.5], G).astype(np.float32)
    offsets, alphas = dev.put(o1), dev.put(a1)
    out = dev.empty((total, N), "float32")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        nvfp4.grouped_gemm_packed(x.q, x.sf, w.op.q, w.op.sf, offsets, alphas=alphas, out=out, out_dtype="float32",
                                  backend=backend)
    s.synchronize()
    assert_matches(dev.get(out), reference(dev, x, w, o1, a1), "float32")
    g = torch.cuda.CUDAGraph()
    with graph_capture(torch, g, s):
        nvfp4.grouped_gemm_packed(x.q, x.sf, w.op.q, w.op.sf, offsets, alphas=alphas, out=out, out_dtype="float32",
                                  backend=backend)
    for o, a in ((o2, a2), (o1, a2), (o2, a1)):
        offsets.copy_(dev.put(o))
        alphas.copy_(dev.put(a))
        out.zero_()
        g.replay()
        torch.cuda.synchronize()
        assert_matches(dev.get(out), reference(dev, x, w, o, a), "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_malformed_offsets(dev, backend, rng):
    """Tables that are not non-decreasing within [0, total_M] on the decode route (64 experts,
    12..40 rows): clamped (decode_plan.hpp moe_clamp_span), no fault, no hang; rows the first
    expert covers come out finite; the next call with a good table in the same buffer is exact."""
    G, N, K, total = 64, 512, 1024, 40
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    bads = []
    b = np.zeros(G + 1, np.int32)
    b[1:] = 30
    b[2], b[3], b[4], b[5] = 10, -7, 2 ** 31 - 1, 5       # decreasing, negative, far past total_M
    bads.append(b)
    bads.append(np.full(G + 1, -100, np.int32))            # everything below 0
    bads.append(np.linspace(total, 0, G + 1).astype(np.int32))  # decreasing throughout
    c = np.zeros(G + 1, np.int32)
    c[1:] = total
    c[1::2] = 0                                            # every other expert covers every row: more
    #                                                        chunks than slots (the rest skipped)
    bads.append(c)
    for bad in bads:
        offsets = dev.put(bad)
        out = dev.poisoned((total, N), "float32")
        nvfp4.grouped_gemm_packed(x.q, x.sf, w.op.q, w.op.sf, offsets, out=out, out_dtype="float32", backend=backend)
        dev.synchronize()
        first = min(max(int(bad[1]), 0), total)
        lo = min(max(int(bad[0]), 0), total)
        assert np.isfinite(dev.get(out)[lo:first]).all()
    good = offsets_of(routing(5, G, rng))
    x2 = Operand(dev, int(good[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    out = nvfp4.grouped_gemm_packed(x2.q, x2.sf, w.op.q, w.op.sf, dev.put(good), out_dtype="float32", backend=backend)
    assert_matches(dev.get(out), reference(dev, x2, w, good), "float32")


# ---------------------------------------------------------------------------
# Which kernel runs
# ---------------------------------------------------------------------------



@needs_sm90
@pytest.mark.parametrize("tokens,route", [(1, True), (8, True), (64, True), (128, True), (192, False), (256, False)])
def test_route_kernel(dev, tokens, route, rng):
    """top-8 of `tokens` over 64 experts, N = 512, K = 256: the MoE decode kernel alone up to a
    mean of 16 rows per expert (128 tokens), the token pass + tiled kernel above."""
    if dev.name != "torch":
        pytest.skip("needs PyTorch (profiler)")
    G, N, K = 64, 512, 256
    offs = offsets_of(routing(tokens, G, rng))
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    o = dev.put(offs)
    names = kernel_names(dev, lambda: nvfp4.grouped_gemm_packed(x.q, x.sf, w.op.q, w.op.sf, o, backend="sm90a"))
    joined = " ".join(names)
    assert ("gemm_decode_moe_kernel" in joined) == route, names
    assert ("nvfp4_sm90_moe_kernel" in joined) == (not route), names
    assert ("predecode" in joined) == (not route), names
