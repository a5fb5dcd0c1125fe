"""Global-scale conventions. nvfp4 stores *decode* scales (value = e2m1 · e4m3 · gs,
gs = amax / (6·448), as torchao and Transformer Engine do). FlashInfer, vLLM and
TensorRT-LLM pass the reciprocal *encode* scale (6·448 / amax): convert with these
helpers; mixing the two is the most common NVFP4 bug."""

from __future__ import annotations

from . import _nvfp4_ext as _ext

FP4_E2M1_MAX = 6.0
FP8_E4M3_MAX = 448.0


def global_scale_from_amax(amax: float) -> float:
    """Decode global scale for a tensor whose largest magnitude is `amax` (1.0 for 0)."""
    amax = float(amax)
    return amax / (FP4_E2M1_MAX * FP8_E4M3_MAX) if amax > 0 else 1.0


def encode_scale_from_decode(decode_scale: float) -> float:
    """FlashInfer/vLLM/TensorRT-LLM `global_scale` (encode) from an nvfp4 decode scale."""
    return 1.0 / float(decode_scale)


def decode_scale_from_encode(encode_scale: float) -> float:
    """nvfp4 decode scale from a FlashInfer/vLLM/TensorRT-LLM encode scale (448·6/amax)."""
    return 1.0 / float(encode_scale)


def blocked_scale_bytes(rows: int, k: int) -> int:
    """Bytes of one blocked scale tensor for `rows` x `k` elements:
    ceil(rows/128)·128 · ceil(k/64)·4."""
    return int(_ext.blocked_scale_bytes(int(rows), int(k)))
