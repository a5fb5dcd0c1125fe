"""An independent numpy reference for NVFP4 (docs/design.md, "Formats and layouts", "Numerics").

Nothing here calls libnvfp4: the formats are decoded from their definitions, the
scale layouts are built from the documented formula and, separately, the gpu-mode 6-D
construction, and the GEMMs are float64 matmuls of exactly decoded operands. The
tests compare the library (every backend) against this module.

Array conventions are the library's: packed fp4 is uint8 (..., K/2) with element 2i
in the low nibble; scales are e4m3 bytes (uint8), either linear (..., rows, K/16) or
blocked ((n,) / (L, n) bytes, n = ceil(rows/128)·128 · ceil(K/64)·4).

quantize_ref follows the recipe stated in cpp/src/common/formats.h, step by step in
float32, so the library's quantize can be compared bit-exactly against it:
    gs  = amax(|x|) / (6·448)            (1.0 when amax is not > 0; NaN amax -> 1.0)
    s   = e4m3_rne_satfinite(block_amax / (6·gs))
    inv = 1 / (float(s)·gs)              (0 when float(s)·gs is 0 or NaN)
    q   = e2m1_rne_sat(x · inv)          (sign kept, so -0.1 -> code 8; NaN -> code 0)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "E2M1_VALUES", "E4M3_VALUES", "FP4_MAX", "E4M3_MAX",
    "decode_e2m1", "decode_e4m3", "encode_e2m1", "encode_e4m3",
    "unpack_fp4", "pack_fp4",
    "blocked_rows", "blocked_cols", "blocked_bytes", "blocked_offset",
    "to_blocked", "from_blocked", "to_blocked_6d", "blocked_6d_view", "from_blocked_6d",
    "scales_linear", "dequantize_ref", "gemv_ref", "gemm_ref", "dual_gemm_ref", "activation_ref",
    "grouped_gemm_ref", "grouped_gemm_packed_ref", "quantize_ref", "global_scale_ref",
    "random_fp4", "random_scales", "make_operand",
]

FP4_MAX = 6.0
E4M3_MAX = 448.0
_SF_VEC = 16


# ---------------------------------------------------------------------------
# Decode tables, from the format definitions
# ---------------------------------------------------------------------------

def _e2m1_table() -> np.ndarray:
    """e2m1: sign bit 3, exponent bits 2..1 (bias 1), mantissa bit 0; exponent 0 is subnormal."""
    values = np.empty(16, dtype=np.float64)
    for code in range(16):
        sign = -1.0 if code & 8 else 1.0
        exp, man = (code >> 1) & 3, code & 1
        mag = (man / 2.0) * 2.0 ** 0 if exp == 0 else (1.0 + man / 2.0) * 2.0 ** (exp - 1)
        values[code] = sign * mag
    return values


def _e4m3_table() -> np.ndarray:
    """float8_e4m3fn: sign bit 7, exponent bits 6..3 (bias 7), mantissa bits 2..0;
    exponent 0 is subnormal (man/8 · 2^-6); S.1111.111 is NaN; no infinities."""
    values = np.empty(256, dtype=np.float64)
    for byte in range(256):
        sign = -1.0 if byte & 0x80 else 1.0
        exp, man = (byte >> 3) & 0xF, byte & 7
        if exp == 0xF and man == 7:
            values[byte] = np.nan
        elif exp == 0:
            values[byte] = sign * (man / 8.0) * 2.0 ** -6
        else:
            values[byte] = sign * (1.0 + man / 8.0) * 2.0 ** (exp - 7)
    return values


E2M1_VALUES = _e2m1_table()
E2M1_VALUES.flags.writeable = False
E4M3_VALUES = _e4m3_table()
E4M3_VALUES.flags.writeable = False


def decode_e2m1(codes) -> np.ndarray:
    return E2M1_VALUES[_u8(codes) & 0xF]


def decode_e4m3(sf_bytes) -> np.ndarray:
    return E4M3_VALUES[_u8(sf_bytes)]


def _u8(x) -> np.ndarray:
    x = np.asarray(x)
    return x.view(np.uint8) if x.dtype == np.int8 else x.astype(np.uint8, copy=False)


# ---------------------------------------------------------------------------
# Encoders: round to nearest, ties to the even code (table search, not bit tricks)
# ---------------------------------------------------------------------------

def _round_to_table(mag: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Index of the nearest grid value (grid ascending, index parity = mantissa parity);
    ties go to the even index. mag >= 0, finite, <= grid[-1]."""
    hi = np.clip(np.searchsorted(grid, mag, side="left"), 1, len(grid) - 1)
    lo = hi - 1
    d_lo = mag - grid[lo]
    d_hi = grid[hi] - mag
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    return np.where(pick_hi, hi, lo)


_E2M1_GRID = E2M1_VALUES[:8].copy()            # 0, .5, 1, 1.5, 2, 3, 4, 6
_E4M3_GRID = E4M3_VALUES[:127].copy()          # 0 .. 448, codes 0x00..0x7E


def encode_e2m1(x) -> np.ndarray:
    """float -> e2m1 code (uint8): RNE onto the grid, saturating at 6, sign bit kept
    (-0.1 -> 8), NaN -> 0."""
    x = np.asarray(x, dtype=np.float64)
    nan = np.isnan(x)
    mag = np.minimum(np.abs(np.where(nan, 0.0, x)), FP4_MAX)
    code = _round_to_table(mag, _E2M1_GRID).astype(np.uint8)
    code = np.where(np.signbit(x), code | 8, code)
    return np.where(nan, 0, code).astype(np.uint8)


def encode_e4m3(x) -> np.ndarray:
    """float -> float8_e4m3fn byte: RNE, saturating to ±448 (inf too), NaN -> 0x7F."""
    x = np.asarray(x, dtype=np.float64)
    nan = np.isnan(x)
    mag = np.minimum(np.abs(np.where(nan, 0.0, x)), E4M3_MAX)
    code = _round_to_table(mag, _E4M3_GRID).astype(np.uint8)
    code = np.where(np.signbit(x), code | 0x80, code)
    return np.where(nan, 0x7F, code).astype(np.uint8)


# ---------------------------------------------------------------------------
# Packed fp4
# ---------------------------------------------------------------------------

def unpack_fp4(packed) -> np.ndarray:
    """uint8 (..., K/2) -> e2m1 codes uint8 (..., K); element 2i is the low nibble."""
    p = _u8(packed)
    codes = np.empty(p.shape[:-1] + (2 * p.shape[-1],), dtype=np.uint8)
    codes[..., 0::2] = p & 0xF
    codes[..., 1::2] = p >> 4
    return codes


def pack_fp4(codes) -> np.ndarray:
    """e2m1 codes (..., K) -> packed uint8 (..., K/2)."""
    c = np.asarray(codes, dtype=np.uint8) & 0xF
    return (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)


# ---------------------------------------------------------------------------
# Scale layouts
# ---------------------------------------------------------------------------

def blocked_rows(rows: int) -> int:
    return -(-rows // 128) * 128


def blocked_cols(k: int) -> int:
    """Scale columns of the blocked layout for K elements (K/16 padded to 4)."""
    return -(-(k // _SF_VEC) // 4) * 4


def blocked_bytes(rows: int, k: int) -> int:
    return blocked_rows(rows) * blocked_cols(k)


def blocked_offset(r, c, k: int):
    """Byte offset (docs/design.md, "Formats and layouts") of scale (row r, scale column c) in the blocked layout of
    a rows x k operand (vectorized over r, c)."""
    r = np.asarray(r, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    tiles_k = -(-(k // _SF_VEC) // 4)
    tile = (r // 128) * tiles_k + c // 4
    return tile * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + (c % 4)


def to_blocked(sf_linear) -> np.ndarray:
    """Linear (rows, K/16) / (L, rows, K/16) -> blocked bytes (n,) / (L, n), by
    scattering every byte to blocked_offset; padding zero."""
    s = _u8(sf_linear)
    batched = s.ndim == 3
    s3 = s if batched else s[None]
    L, rows, kb = s3.shape
    k = kb * _SF_VEC
    out = np.zeros((L, blocked_bytes(rows, k)), dtype=np.uint8)
    r, c = np.meshgrid(np.arange(rows), np.arange(kb), indexing="ij")
    off = blocked_offset(r, c, k)
    out[:, off] = s3
    return out if batched else out[0]


def from_blocked(sf_blocked, rows: int, k: int) -> np.ndarray:
    """Blocked bytes (n,) / (L, n) -> linear (rows, k/16) / (L, rows, k/16)."""
    b = _u8(sf_blocked)
    r, c = np.meshgrid(np.arange(rows), np.arange(k // _SF_VEC), indexing="ij")
    return b[..., blocked_offset(r, c, k)]


def to_blocked_6d(sf_linear, pad_value=0) -> np.ndarray:
    """The gpu-mode construction, independent of blocked_offset: pad the linear scales
    to (L, rest_m·128, rest_k·4), view as (L, rest_m, 4, 32, rest_k, 4) [row = m·128 +
    i·32 + j, col = kk·4 + c], reorder to the dense (L, rest_m, rest_k, 32, 4, 4)
    atoms. Returns the dense bytes (L, n) (or (n,) for 2-D input); `pad_value`
    (an int, or a callable shape -> array) fills the padding."""
    s = _u8(sf_linear)
    batched = s.ndim == 3
    s3 = s if batched else s[None]
    L, rows, kb = s3.shape
    rest_m, rest_k = -(-rows // 128), -(-kb // 4)
    shape = (L, rest_m * 128, rest_k * 4)
    padded = (pad_value(shape) if callable(pad_value) else np.full(shape, pad_value)).astype(np.uint8)
    padded[:, :rows, :kb] = s3
    atoms = padded.reshape(L, rest_m, 4, 32, rest_k, 4).transpose(0, 1, 4, 3, 2, 5)
    dense = np.ascontiguousarray(atoms).reshape(L, -1)
    return dense if batched else dense[0]


def blocked_6d_view(dense, rows: int, k: int) -> np.ndarray:
    """The gpu-mode (32, 4, rest_m, 4, rest_k, L) view of dense blocked bytes (L, n) /
    (n,): mma shape (L, rest_m, rest_k, 32, 4, 4) permuted (3, 4, 1, 5, 2, 0). A view,
    no copy (works on numpy, CuPy; torch needs .permute)."""
    rest_m, rest_k = -(-rows // 128), blocked_cols(k) // 4
    d = dense if dense.ndim == 2 else dense.reshape(1, -1)
    atoms = d.reshape(d.shape[0], rest_m, rest_k, 32, 4, 4)
    return atoms.transpose(3, 4, 1, 5, 2, 0)


def from_blocked_6d(view6, rows: int, k: int) -> np.ndarray:
    """The 6-D view -> linear (L, rows, k/16), read by its indices (independent of offsets)."""
    v = _u8(view6)                                  # (32, 4, rest_m, 4, rest_k, L)
    L = v.shape[5]
    # element (l, row = m·128 + i·32 + j, col = kk·4 + c) = v[j, i, m, c, kk, l]
    full = v.transpose(5, 2, 1, 0, 4, 3).reshape(L, v.shape[2] * 128, v.shape[4] * 4)
    return full[:, :rows, : k // _SF_VEC]


def scales_linear(sf, rows: int, k: int, sf_layout: str, batched: bool) -> np.ndarray:
    """Any accepted scale array -> linear uint8 (L, rows, k/16) (L = 1 when not batched)."""
    s = _u8(sf)
    if sf_layout == "linear":
        return s if batched else s[None]
    if sf_layout != "blocked":
        raise ValueError(f"sf_layout must be 'linear' or 'blocked', got {sf_layout!r}")
    if s.ndim == 6:
        return from_blocked_6d(s, rows, k)
    return from_blocked(s if s.ndim == 2 else s[None], rows, k)


# ---------------------------------------------------------------------------
# Reference ops (float64)
# ---------------------------------------------------------------------------

def _decode(q, sf, sf_layout: str, vector: bool = False) -> np.ndarray:
    """Exact values of a packed operand as float64 (L, rows, K) (vectors: rows = 1)."""
    qv = _u8(q)
    if vector:
        qv = qv[..., None, :]
    batched = qv.ndim == 3
    q3 = qv if batched else qv[None]
    L, rows, half_k = q3.shape
    k = 2 * half_k
    if sf_layout == "linear" and vector:
        sf = _u8(sf)[..., None, :]
    s3 = scales_linear(sf, rows, k, sf_layout, batched)
    scale = np.repeat(decode_e4m3(s3), _SF_VEC, axis=-1)
    return decode_e2m1(unpack_fp4(q3)) * scale


def _alpha(alpha) -> float:
    """A Python number or a 1-element array."""
    return float(np.asarray(alpha, dtype=np.float64).reshape(-1)[0])


def dequantize_ref(q, sf, *, global_scale=1.0, sf_layout="linear", dtype="float32") -> np.ndarray:
    """e2m1 · e4m3 · global_scale with the library's float32 arithmetic: the product
    e2m1·e4m3 is exact in float32, then one float32 rounding by the global scale,
    then (fp16) one RNE rounding of that float32."""
    vector = np.ndim(q) == 1
    vals = _decode(q, sf, sf_layout, vector=vector).astype(np.float32)  # exact
    with np.errstate(invalid="ignore", over="ignore"):
        out = vals * np.float32(_alpha(global_scale))
    out = out.reshape(np.shape(q)[:-1] + (2 * np.shape(q)[-1],))
    return out.astype(dtype)


def gemm_ref(qa, sfa, qb, sfb, *, alpha=1.0, sf_layout="linear") -> np.ndarray:
    """C = alpha · A·Bᵀ in float64: (M, N), or (L, M, N) for batched operands."""
    batched = np.ndim(qa) == 3
    a = _decode(qa, sfa, sf_layout)
    b = _decode(qb, sfb, sf_layout)
    with np.errstate(invalid="ignore", over="ignore"):
        c = _alpha(alpha) * np.matmul(a, np.swapaxes(b, -1, -2))
    return c if batched else c[0]


def gemv_ref(qa, sfa, qb, sfb, *, alpha=1.0, sf_layout="linear") -> np.ndarray:
    """c = alpha · A·b in float64: a (M, K/2) / (L, M, K/2), b (K/2,) / (L, K/2)."""
    batched = np.ndim(qa) == 3
    a = _decode(qa, sfa, sf_layout)
    b = _decode(qb, sfb, sf_layout, vector=True)              # (L, 1, K)
    with np.errstate(invalid="ignore", over="ignore"):
        c = _alpha(alpha) * np.matmul(a, np.swapaxes(b, -1, -2))[..., 0]
    return c if batched else c[0]


def activation_ref(x, activation: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        if activation == "silu":
            return x / (1.0 + np.exp(-x))
        if activation == "gelu_tanh":
            return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    raise ValueError(f"activation must be 'silu' or 'gelu_tanh', got {activation!r}")


def dual_gemm_ref(qa, sfa, qb1, sfb1, qb2, sfb2, *, alpha1=1.0, alpha2=1.0, activation="silu",
                  sf_layout="linear") -> np.ndarray:
    """act(alpha1·A·B1ᵀ) * (alpha2·A·B2ᵀ) in float64."""
    c1 = gemm_ref(qa, sfa, qb1, sfb1, alpha=alpha1, sf_layout=sf_layout)
    c2 = gemm_ref(qa, sfa, qb2, sfb2, alpha=alpha2, sf_layout=sf_layout)
    with np.errstate(invalid="ignore", over="ignore"):
        return activation_ref(c1, activation) * c2


def grouped_gemm_ref(a_list, sfa_list, b_list, sfb_list, *, alphas=None, sf_layout="linear") -> list:
    alphas = [1.0] * len(a_list) if alphas is None else list(alphas)
    return [gemm_ref(a, sa, b, sb, alpha=al, sf_layout=sf_layout)
            for a, sa, b, sb, al in zip(a_list, sfa_list, b_list, sfb_list, alphas)]


def grouped_gemm_packed_ref(a, sfa, b, sfb, offsets, *, alphas=None) -> np.ndarray:
    """MoE: rows offsets[g]:offsets[g+1] of a (ΣM_g, K/2) use expert b[g] (G, N, K/2)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    G, N = np.shape(b)[0], np.shape(b)[1]
    out = np.zeros((np.shape(a)[0], N), dtype=np.float64)
    al = np.ones(G) if alphas is None else np.asarray(alphas, dtype=np.float64).reshape(-1)
    a_vals = _decode(a, sfa, "linear")[0]
    b_vals = _decode(b, sfb, "linear")
    for g in range(G):
        lo, hi = offsets[g], offsets[g + 1]
        with np.errstate(invalid="ignore", over="ignore"):
            out[lo:hi] = al[g] * (a_vals[lo:hi] @ b_vals[g].T)
    return out


# ---------------------------------------------------------------------------
# Quantize (float32, the formats.h recipe)
# ---------------------------------------------------------------------------

def global_scale_ref(x) -> np.float32:
    """amax(|x|) / (6·448) in float32, NaN-propagating amax; 1.0 when amax is not > 0."""
    x = np.asarray(x).astype(np.float32)
    amax = np.float32(np.nan) if np.isnan(x).any() else (np.abs(x).max() if x.size else np.float32(0))
    amax = np.float32(amax)
    if not amax > 0:
        return np.float32(1.0)
    return np.float32(amax / np.float32(FP4_MAX * E4M3_MAX))


def quantize_ref(x, *, global_scale=None, sf_layout="linear"):
    """x (..., K) float32/float16 -> (q uint8 (..., K/2), sf uint8, gs float32).

    sf is linear (..., K/16), or blocked (n,) for 1-D/2-D x and (L, n) for 3-D x."""
    x = np.asarray(x)
    x32 = x.astype(np.float32)                       # exact for fp16 (and bf16) inputs
    k = x32.shape[-1]
    gs = global_scale_ref(x32) if global_scale is None else np.float32(global_scale)
    blocks = x32.reshape(x32.shape[:-1] + (k // _SF_VEC, _SF_VEC))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        # NaN anywhere in a block makes its amax NaN (np.max propagates NaN)
        block_amax = np.abs(blocks).max(axis=-1)
        sf = encode_e4m3(block_amax / (np.float32(FP4_MAX) * gs))      # float32 division
        s = decode_e4m3(sf).astype(np.float32) * gs                     # float32 multiply
        inv = np.where((s == 0) | np.isnan(s), np.float32(0), np.float32(1) / s).astype(np.float32)
        scaled = blocks * inv[..., None]                                # float32 multiply
    q = pack_fp4(encode_e2m1(scaled).reshape(x32.shape))
    if sf_layout == "blocked":
        if x.ndim == 1:
            sf = to_blocked(sf[None])
        else:
            sf = to_blocked(sf)
    elif sf_layout != "linear":
        raise ValueError(f"sf_layout must be 'linear' or 'blocked', got {sf_layout!r}")
    return q, sf, np.float32(gs)


# ---------------------------------------------------------------------------
# Random inputs
# ---------------------------------------------------------------------------

def random_fp4(shape, rng) -> np.ndarray:
    """Uniformly random packed bytes (every e2m1 code, ±0 included); shape counts bytes."""
    return rng.integers(0, 256, size=shape, dtype=np.uint8)


def _finite_scale_codes(lo: float, hi: float) -> np.ndarray:
    v = E4M3_VALUES[:127]
    return np.nonzero((v >= lo) & (v <= hi))[0].astype(np.uint8)


def random_scales(shape, rng, lo: float = 2.0 ** -4, hi: float = 2.0 ** 4) -> np.ndarray:
    """Random positive finite e4m3 bytes whose values lie in [lo, hi] (never zero)."""
    return rng.choice(_finite_scale_codes(lo, hi), size=shape).astype(np.uint8)


def make_operand(rows: int, k: int, L=None, layout: str = "linear", rng=None, *, vector: bool = False,
                 lo: float = 2.0 ** -4, hi: float = 2.0 ** 4):
    """A random quantized operand: (packed uint8, scales uint8 in `layout`).

    Shapes: packed (rows, k/2), or (L, rows, k/2) when L is not None; vector=True gives
    (k/2,) / (L, k/2) with linear scales (k/16,) / (L, k/16) (blocked: rows = 1)."""
    rng = np.random.default_rng() if rng is None else rng
    lead = () if L is None else (L,)
    if vector:
        q = random_fp4(lead + (k // 2,), rng)
        sf = random_scales(lead + (k // _SF_VEC,), rng, lo, hi)
        if layout == "blocked":
            sf = to_blocked(sf[..., None, :] if L is not None else sf[None])
        return q, sf
    q = random_fp4(lead + (rows, k // 2), rng)
    sf = random_scales(lead + (rows, k // _SF_VEC), rng, lo, hi)
    if layout == "blocked":
        sf = to_blocked(sf)
    elif layout != "linear":
        raise ValueError(f"layout must be 'linear' or 'blocked', got {layout!r}")
    return q, sf
