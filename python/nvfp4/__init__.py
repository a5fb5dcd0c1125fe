"""nvfp4: NVFP4 (4-bit e2m1 values, one e4m3 scale per 16 elements) matrix kernels.

Arrays of any DLPack framework (numpy, CuPy, PyTorch, JAX) are accepted; host arrays
run the float64 CPU implementations, device arrays the best GPU backend of their
device. See ``nvfp4.info()`` for what this build and machine provide."""

from __future__ import annotations

from . import _nvfp4_ext as _ext
from . import gpumode
from .ops import (dequantize, dual_gemm, gemm, gemv, grouped_gemm, grouped_gemm_packed, quantize,
                  swizzle_scales, unswizzle_scales)
from .scales import blocked_scale_bytes, decode_scale_from_encode, encode_scale_from_decode, global_scale_from_amax

__version__ = _ext.version()

__all__ = [
    "gemv", "gemm", "dual_gemm", "grouped_gemm", "grouped_gemm_packed", "quantize", "dequantize",
    "swizzle_scales", "unswizzle_scales", "blocked_scale_bytes", "global_scale_from_amax",
    "encode_scale_from_decode", "decode_scale_from_encode", "info", "last_backend", "gpumode", "__version__",
]


def last_backend() -> str:
    """The backend ("cpu", "portable", "sm90a", ...) that ran this thread's last op."""
    return _ext.last_backend()


def info() -> dict:
    """Version, compiled CUDA archs, and each visible device with the backend it uses."""
    devices = [_ext.device_info(i) for i in range(_ext.device_count())]
    return {
        "version": __version__,
        "build_archs": _ext.build_archs().split(";"),
        "devices": devices,
        "notes": {
            "sm100a": "compiled and SASS-inspected only; never run (no Blackwell GPU available to the project)",
        },
    }
