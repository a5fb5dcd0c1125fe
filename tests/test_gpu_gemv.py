"""GPU tests (marker `gpu`, skipped without a CUDA device) of nvfp4.gemv: device arrays, every
backend of the device, against the float64 reference (tests/_util.py's device helpers).

Run: python -m pytest -q tests/test_gpu_gemv.py"""

from __future__ import annotations

import pytest

import nvfp4
from _util import BACKENDS, LAYOUTS, Operand, assert_matches, pow2_alpha, ref_gemm, run_backend

pytestmark = pytest.mark.gpu


GEMV_GPU_MODE = [(128, 256, 1), (128, 1536, 1), (128, 3072, 1), (256, 7168, 1), (2432, 4608, 2), (384, 7168, 2),
                 (512, 512, 2), (512, 4096, 2), (512, 1536, 2)]
GEMV_ODD = [(1, 32, None), (7, 96, 3), (129, 32, 1), (1000, 96, 2), (1000, 32, None)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,K,L", GEMV_GPU_MODE + GEMV_ODD)
def test_gemv(dev, M, K, L, layout, backend, rng):
    a = Operand(dev, M, K, L, layout, rng)
    b = Operand(dev, 1, K, L, layout, rng, vector=True)
    acc = ref_gemm(dev, a, b)[..., 0]
    alpha = pow2_alpha(acc)
    out = run_backend(backend, lambda: nvfp4.gemv(a.q, a.sf, b.q, b.sf, alpha=alpha, sf_layout=layout,
                                                  backend=backend))
    assert tuple(out.shape) == ((M,) if L is None else (L, M))
    assert_matches(dev.get(out), alpha * acc, "float16")
