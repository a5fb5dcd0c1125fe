"""GPU tests (marker `gpu`, skipped without a CUDA device) of nvfp4.grouped_gemm and
nvfp4.grouped_gemm_packed: device arrays, every backend of the device, against the float64
reference (tests/_util.py's device helpers).

Run: python -m pytest -q tests/test_gpu_grouped_gemm.py"""

from __future__ import annotations

import numpy as np
import pytest

import nvfp4
from _util import BACKENDS, LAYOUTS, Operand, assert_matches, pow2_alpha, ref_gemm, run_backend

pytestmark = pytest.mark.gpu


GROUPS = [([96, 128], [128, 256], [256, 512]),
          ([256, 72], [512, 384], [256, 256]),
          ([80, 128, 256], [384, 256, 128], [256, 512, 256]),
          ([64, 72, 96], [128, 384, 512], [512, 512, 256]),
          ([40, 56, 384, 512], [512, 384, 256, 128], [256] * 4),
          ([512, 384, 256, 128], [256] * 4, [512, 768, 512, 768]),
          ([1, 7, 129, 1000], [1000, 129, 7, 1], [32, 96, 32, 96])]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("Ms,Ns,Ks", GROUPS)
def test_grouped_gemm(dev, Ms, Ns, Ks, layout, backend, rng):
    A = [Operand(dev, m, k, None, layout, rng) for m, k in zip(Ms, Ks)]
    B = [Operand(dev, n, k, None, layout, rng) for n, k in zip(Ns, Ks)]
    accs = [ref_gemm(dev, a, b) for a, b in zip(A, B)]
    alphas = [pow2_alpha(acc) * 1.5 for acc in accs]
    outs = run_backend(backend, lambda: nvfp4.grouped_gemm([a.q for a in A], [a.sf for a in A], [b.q for b in B],
                                                           [b.sf for b in B], alphas=alphas, sf_layout=layout,
                                                           backend=backend))
    assert len(outs) == len(Ms)
    for o, acc, al in zip(outs, accs, alphas):
        assert_matches(dev.get(o), al * acc, "float16")


PACKED = [([80, 176, 128, 72, 64, 248, 96, 160], 512, 2048), ([0, 7, 0, 129, 1], 1000, 96),
          ([192, 320], 3072, 512), ([40, 76, 168, 72, 164, 148, 196, 160], 256, 7168)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("with_alphas", [False, True])
@pytest.mark.parametrize("Ms,N,K", PACKED)
def test_grouped_gemm_packed(dev, Ms, N, K, with_alphas, backend, rng):
    G, total = len(Ms), sum(Ms)
    a = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    b = Operand(dev, N, K, G, "linear", rng, lo=0.25, hi=1.0)
    offsets_host = np.concatenate([[0], np.cumsum(Ms)]).astype(np.int32)
    offsets = dev.put(offsets_host)
    av, bv = a.values(dev), b.values(dev)
    ref = np.zeros((total, N))
    al = rng.choice([0.125, 0.25, 0.375], G).astype(np.float32) if with_alphas else np.ones(G, np.float32)
    for g in range(G):
        lo, hi = offsets_host[g], offsets_host[g + 1]
        if hi > lo:
            ref[lo:hi] = al[g] * dev.get(dev.matmul_t(av[lo:hi], bv[g]))
    out = run_backend(backend, lambda: nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, offsets,
                                                                 alphas=dev.put(al) if with_alphas else None,
                                                                 out_dtype="float32", backend=backend))
    assert_matches(dev.get(out), ref, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_grouped_gemm_packed_many_experts_fp16(dev, backend, rng):
    """40 experts (the sm90a kernel scans the offsets 32 experts at a time), empty and
    one-row experts, a 128-row boundary inside an expert, fp16 output."""
    Ms = [int(x) for x in rng.integers(0, 70, 40)]
    Ms[3], Ms[7], Ms[11], Ms[30] = 0, 1, 130, 0
    N, K, G, total = 392, 256, len(Ms), sum(Ms)
    a = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    b = Operand(dev, N, K, G, "linear", rng, lo=0.25, hi=1.0)
    offsets_host = np.concatenate([[0], np.cumsum(Ms)]).astype(np.int32)
    av, bv = a.values(dev), b.values(dev)
    al = rng.choice([0.125, 0.25], G).astype(np.float32)
    ref = np.zeros((total, N))
    for g in range(G):
        lo, hi = offsets_host[g], offsets_host[g + 1]
        if hi > lo:
            ref[lo:hi] = al[g] * dev.get(dev.matmul_t(av[lo:hi], bv[g]))
    out = run_backend(backend, lambda: nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, dev.put(offsets_host),
                                                                 alphas=dev.put(al), backend=backend))
    assert_matches(dev.get(out), ref, "float16")


@pytest.mark.parametrize("backend", BACKENDS)
def test_grouped_gemm_packed_bad_table_is_safe(dev, backend, rng):
    """An offsets table that is not non-decreasing within [0, total_M] (it lives on the
    device, so it cannot be validated): every backend clamps it; no fault, no hang.
    Rows it covers for the first time come out finite (the others may be skipped)."""
    total, N, K = 200, 136, 64
    a = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    b = Operand(dev, N, K, 4, "linear", rng, lo=0.25, hi=1.0)
    offsets = dev.put(np.array([0, 300, 100, -5, 10 ** 6], np.int32))
    out = dev.poisoned((total, N), "float32")
    dev.synchronize()
    run_backend(backend, lambda: nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, offsets, out=out,
                                                           out_dtype="float32", backend=backend))
    dev.synchronize()
    assert np.isfinite(dev.get(out)[:100]).all()
