"""GPU tests (marker `gpu`, skipped without a CUDA device) of nvfp4.dual_gemm: device arrays, every
backend of the device, against the float64 reference (tests/_util.py's device helpers).

Run: python -m pytest -q tests/test_gpu_dual_gemm.py"""

from __future__ import annotations

import pytest

import nvfp4
from nvfp4 import reference as R
from _util import BACKENDS, LAYOUTS, Operand, assert_matches, pow2_alpha, ref_gemm, run_backend

pytestmark = pytest.mark.gpu


DUAL_GPU_MODE = [(1536, 512, 7168), (256, 512, 256), (3072, 1024, 1536), (7168, 1024, 256), (7168, 2304, 2048),
                 (4608, 384, 7168), (7168, 384, 2304), (512, 768, 7168), (4096, 768, 512)]
DUAL_ODD = [(1, 7, 32, None), (129, 1000, 96, 3), (1000, 1, 32, 1), (7, 129, 96, None)]


def dual_case(dev, M, N, K, L, layout, activation, rng):
    """Random operands of a dual GEMM, power-of-two alphas and the float64 reference."""
    a = Operand(dev, M, K, L, layout, rng)
    b1, b2 = Operand(dev, N, K, L, layout, rng), Operand(dev, N, K, L, layout, rng)
    av = a.values(dev)
    acc1 = dev.get(dev.matmul_t(av, b1.values(dev)))
    acc2 = dev.get(dev.matmul_t(av, b2.values(dev)))
    a1, a2 = pow2_alpha(acc1, 3.0), pow2_alpha(acc2, 16.0)
    ref = R.activation_ref(a1 * acc1, activation) * (a2 * acc2)
    return a, b1, b2, a1, a2, ref


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", [s + (1,) for s in DUAL_GPU_MODE] + DUAL_ODD)
def test_dual_gemm(dev, M, N, K, L, layout, backend, rng):
    activation = "silu" if (M + N + K) % 2 == 0 or layout == "linear" else "gelu_tanh"
    a, b1, b2, a1, a2, ref = dual_case(dev, M, N, K, L, layout, activation, rng)
    out = run_backend(backend, lambda: nvfp4.dual_gemm(a.q, a.sf, b1.q, b1.sf, b2.q, b2.sf, alpha1=a1, alpha2=a2,
                                                       activation=activation, sf_layout=layout, backend=backend))
    assert_matches(dev.get(out), ref, "float16")


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "portable"])
@pytest.mark.parametrize("M,N,L,layout", [(8300, 4098, None, "blocked"), (4200, 4100, 2, "linear")])
def test_dual_gemm_row_chunks(dev, M, N, L, layout, backend, rng):
    """Many token tiles and ragged N: on sm90a the fused kernel takes both (N = 4098 fp16 rows
    are not 16-byte aligned: its plain-store epilogue; N = 4100: TMA stores). The composed
    path's row chunks (fp32 products over 256 MiB) now run only where the fused kernel's
    token workspace would pass 1 GiB, a size not tested here."""
    a, b1, b2, a1, a2, ref = dual_case(dev, M, N, 64, L, layout, "silu", rng)
    out = run_backend(backend, lambda: nvfp4.dual_gemm(a.q, a.sf, b1.q, b1.sf, b2.q, b2.sf, alpha1=a1, alpha2=a2,
                                                       sf_layout=layout, backend=backend))
    assert_matches(dev.get(out), ref, "float16")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
def test_dual_gemm_activations_dtypes_device_alphas(dev, activation, out_dtype, backend, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    M, N, K = 256, 384, 2048
    a = Operand(dev, M, K, None, "linear", rng)
    b1, b2 = Operand(dev, N, K, None, "linear", rng), Operand(dev, N, K, None, "linear", rng)
    acc1, acc2 = ref_gemm(dev, a, b1), ref_gemm(dev, a, b2)
    a1, a2 = pow2_alpha(acc1, 3.0) * 1.5, pow2_alpha(acc2, 16.0) * 0.75
    ref = R.activation_ref(a1 * acc1, activation) * (a2 * acc2)
    out = dev.poisoned((M, N), out_dtype)
    dev.synchronize()
    s = dev.stream()
    run_backend(backend, lambda: nvfp4.dual_gemm(a.q, a.sf, b1.q, b1.sf, b2.q, b2.sf, alpha1=dev.scalar(a1),
                                                 alpha2=dev.scalar(a2), activation=activation, out=out, stream=s,
                                                 backend=backend))
    s.synchronize()
    assert_matches(dev.get(out), ref, out_dtype)
