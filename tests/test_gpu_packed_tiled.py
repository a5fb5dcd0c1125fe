"""GPU tests of the packed MoE API's tiled route on the persistent grouped kernel (issue 21):
grouped_gemm_packed off the decode route (more than 8 rows per expert on average, or shapes the
decode kernel does not take) runs the token pass, then nvfp4_sm90_moe_kernel
(cpp/src/sm90/kernel/grouped_packed_gemm.cuh): min(SMs, bound) persistent CTAs walk every
expert's 128 x 128 tiles on the grouped GEMM's body (kernel/grouped_walk.cuh), each warp finding
its tiles from the device offsets with a forward cursor. Every result against the float64
reference (tests/test_gpu_packed_decode.py's helpers).

Covered: experts of 0, 1, 128, 129 and > 256 rows; K tails (96, 160, 1056: partial 128-blocks)
and N tails; fp16 / bf16 / fp32 outputs with and without device alphas; more experts than one
32-expert window (70, 300); many tiles per CTA (the ring carried across tiles and experts) and
fewer tiles than SMs; CUDA-graph replay with new offsets (same total_M: one expert holding every
row, a different tile count) and new alphas; malformed device tables (decreasing, negative, past
total_M, overlapping spans past the tile bound): no fault, no hang, the next good call exact; the
profiler's kernels (token pass + tiled kernel, no decode kernel).

Run: python -m pytest -q tests/test_gpu_packed_tiled.py"""

from __future__ import annotations

import numpy as np
import pytest

import nvfp4
from _util import Operand, assert_matches, graph_capture, kernel_names
from test_gpu_packed_decode import BACKENDS, Experts, needs_sm90, offsets_of, packed, reference, routing

pytestmark = pytest.mark.gpu


def counts_of(spec, G):
    c = np.zeros(G, np.int64)
    for g, m in spec.items():
        c[g] = m
    return c


# (rows per expert, N, K): mean rows per expert > 8 (off the decode route) or K % 256 != 0
RAGGED = [
    ({0: 300, 2: 129, 3: 1, 4: 70}, 512, 96),          # > 256 rows, 129, one row, an empty expert; K = 96
    ({1: 128, 2: 257, 5: 40}, 200, 160),                # exactly 128, 257; N tail; K = 160
    ({0: 64, 1: 0, 2: 513, 3: 5, 6: 130}, 1024, 1056),  # K = 1056: 8 blocks + a partial one
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(RAGGED)))
def test_ragged_tails(dev, case, backend, rng):
    spec, N, K = RAGGED[case]
    G = 8
    offs = offsets_of(counts_of(spec, G))
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    out = packed(dev, x, w, offs, backend, out_dtype="float32")
    assert_matches(dev.get(out), reference(dev, x, w, offs), "float32")


@needs_sm90
def test_ragged_tails_staged_scales(dev, rng):
    """K % 256 != 0: the experts' scale rows (K/16 bytes) are not 16-byte multiples; sm90a stages
    them into the workspace (cpp/src/sm90/kernel/scale_stage.cuh) in front of the token pass."""
    if dev.name != "torch":
        pytest.skip("profiler through PyTorch")
    spec, N, K = RAGGED[2]
    offs = offsets_of(counts_of(spec, 8))
    w = Experts(dev, 8, N, K, rng)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    names = kernel_names(dev, lambda: packed(dev, x, w, offs, "sm90a", out_dtype="float32"))
    assert any("nvfp4_sm90_scale_stage_kernel" in n for n in names), names
    assert any("nvfp4_sm90_moe_kernel" in n for n in names), names


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("with_alphas", [False, True])
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
def test_out_dtypes(dev, out_dtype, with_alphas, backend, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bf16 arrays need PyTorch")
    G, N, K = 16, 640, 512
    counts = routing(64, G, rng)  # 512 rows over 16 experts: ~32 per expert
    counts[3], counts[9] = 0, 140
    offs = offsets_of(counts)
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    alphas = rng.choice([0.125, 0.25, 0.375], G).astype(np.float32) if with_alphas else None
    out = packed(dev, x, w, offs, backend, alphas=alphas, out_dtype=out_dtype)
    assert_matches(dev.get(out), reference(dev, x, w, offs, alphas), out_dtype)


# (G, tokens, N, K): tiles per CTA on 132 SMs: ~0.3 (few tiles), ~3 (top-8 of 256 over 64:
# 2048 rows), ~5 with 70 experts (3 windows of 32) and 300 experts (10 windows)
WALKS = [(8, 16, 256, 1024), (64, 256, 2048, 2048), (70, 200, 1024, 512), (300, 400, 512, 256)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("G,tokens,N,K", WALKS)
def test_walks(dev, G, tokens, N, K, backend, rng):
    offs = offsets_of(routing(tokens, G, rng))
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    alphas = rng.choice([0.125, 0.25, 0.5], G).astype(np.float32)
    out = packed(dev, x, w, offs, backend, alphas=alphas, out_dtype="float32")
    assert_matches(dev.get(out), reference(dev, x, w, offs, alphas), "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_graph_replay_new_offsets(dev, backend, rng):
    """A captured tiled call replays with new tables in the same buffer (same total_M = 640 over
    16 experts: ragged; one expert holding every row; a few large experts) and new alphas."""
    if dev.name != "torch":
        pytest.skip("graph capture through torch.cuda.graph")
    torch = dev.torch
    G, N, K = 16, 768, 512
    c1 = routing(80, G, rng)  # 640 rows
    total = int(c1.sum())
    c2 = np.zeros(G, np.int64)
    c2[11] = total
    c3 = np.zeros(G, np.int64)
    c3[[0, 5, 15]] = [129, total - 129 - 300, 300]
    tables = [offsets_of(c) for c in (c1, c2, c3)]
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    a1 = np.full(G, 0.25, np.float32)
    a2 = rng.choice([0.125, 0.5], G).astype(np.float32)
    offsets, alphas = dev.put(tables[0]), dev.put(a1)
    out = dev.empty((total, N), "float32")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        nvfp4.grouped_gemm_packed(x.q, x.sf, w.op.q, w.op.sf, offsets, alphas=alphas, out=out, out_dtype="float32",
                                  backend=backend)
    s.synchronize()
    assert_matches(dev.get(out), reference(dev, x, w, tables[0], a1), "float32")
    g = torch.cuda.CUDAGraph()
    with graph_capture(torch, g, s):
        nvfp4.grouped_gemm_packed(x.q, x.sf, w.op.q, w.op.sf, offsets, alphas=alphas, out=out, out_dtype="float32",
                                  backend=backend)
    for o, a in ((tables[1], a2), (tables[2], a1), (tables[0], a2), (tables[1], a1)):
        offsets.copy_(dev.put(o))
        alphas.copy_(dev.put(a))
        out.zero_()
        g.replay()
        torch.cuda.synchronize()
        assert_matches(dev.get(out), reference(dev, x, w, o, a), "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_malformed_offsets(dev, backend, rng):
    """Tables that are not non-decreasing within [0, total_M] on the tiled route (8 experts, 300
    rows): clamped per expert, no fault, no hang; the rows the first expert covers come out
    finite; the next call with a good table is exact."""
    G, N, K, total = 8, 384, 256, 300
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    bads = []
    b = np.zeros(G + 1, np.int32)
    b[1:] = 200
    b[2], b[3], b[4], b[5] = 50, -7, 2 ** 31 - 1, 5       # decreasing, negative, far past total_M
    bads.append(b)
    bads.append(np.full(G + 1, -100, np.int32))            # everything below 0
    bads.append(np.linspace(total, 0, G + 1).astype(np.int32))  # decreasing throughout
    c = np.zeros(G + 1, np.int32)
    c[1:] = total
    c[1::2] = 0                                            # every other expert covers every row:
    bads.append(c)                                         # more tiles than the bound (the rest skipped)
    for bad in bads:
        offsets = dev.put(bad)
        out = dev.poisoned((total, N), "float32")
        nvfp4.grouped_gemm_packed(x.q, x.sf, w.op.q, w.op.sf, offsets, out=out, out_dtype="float32", backend=backend)
        dev.synchronize()
        first = min(max(int(bad[1]), 0), total)
        lo = min(max(int(bad[0]), 0), total)
        assert np.isfinite(dev.get(out)[lo:first]).all()
    good = offsets_of(counts_of({0: 100, 3: 150, 7: 50}, G))
    out = nvfp4.grouped_gemm_packed(x.q, x.sf, w.op.q, w.op.sf, dev.put(good), out_dtype="float32", backend=backend)
    assert_matches(dev.get(out), reference(dev, x, w, good), "float32")


@needs_sm90
def test_tiled_kernels(dev, rng):
    """Off the decode route: the token pass and the persistent MoE kernel, no decode kernel."""
    if dev.name != "torch":
        pytest.skip("needs PyTorch (profiler)")
    G, N, K = 8, 512, 256
    offs = offsets_of(counts_of({0: 100, 2: 300, 5: 1}, G))
    w = Experts(dev, G, N, K, rng)
    x = Operand(dev, int(offs[-1]), K, None, "linear", rng, lo=0.25, hi=1.0)
    o = dev.put(offs)
    names = kernel_names(dev, lambda: nvfp4.grouped_gemm_packed(x.q, x.sf, w.op.q, w.op.sf, o, backend="sm90a"))
    joined = " ".join(names)
    assert "nvfp4_sm90_moe_kernel" in joined and "predecode" in joined, names
    assert "gemm_decode_moe_kernel" not in joined, names
