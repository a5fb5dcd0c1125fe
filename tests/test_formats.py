"""Bit-level format contracts (docs/design.md, "Formats and layouts"): e2m1 and e4m3 decoding through the
library, e2m1/e4m3 rounding through quantize, and the global-scale direction."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nvfp4
from nvfp4 import reference as R

ONE_E4M3 = 0x38  # 1.0

# Hand-written from the format definitions (docs/design.md, "Formats and layouts"), not from any
# table in the code base.
E2M1_HAND = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
E4M3_HAND = {
    0x00: 0.0, 0x01: 2.0 ** -9, 0x02: 2.0 ** -8, 0x03: 3 * 2.0 ** -9, 0x07: 7 * 2.0 ** -9,   # subnormals
    0x08: 2.0 ** -6, 0x09: 1.125 * 2.0 ** -6, 0x30: 0.5, 0x38: 1.0, 0x39: 1.125, 0x3F: 1.875,
    0x40: 2.0, 0x48: 4.0, 0x70: 128.0, 0x77: 240.0, 0x78: 256.0, 0x7D: 416.0, 0x7E: 448.0,
    0x80: -0.0, 0x81: -(2.0 ** -9), 0xB8: -1.0, 0xFE: -448.0,
}


def test_e2m1_reference_table_is_the_design_table():
    np.testing.assert_array_equal(R.E2M1_VALUES, E2M1_HAND)
    assert np.signbit(R.E2M1_VALUES[8]) and not np.signbit(R.E2M1_VALUES[0])


def test_e4m3_reference_table_hand_values():
    for byte, value in E4M3_HAND.items():
        assert R.E4M3_VALUES[byte] == value, hex(byte)
        assert np.signbit(R.E4M3_VALUES[byte]) == (byte >= 0x80), hex(byte)
    assert np.isnan(R.E4M3_VALUES[0x7F]) and np.isnan(R.E4M3_VALUES[0xFF])
    assert np.isnan(R.E4M3_VALUES).sum() == 2
    pos = R.E4M3_VALUES[:0x7F]
    assert np.all(np.diff(pos) > 0), "codes 0x00..0x7E must be increasing"
    np.testing.assert_array_equal(R.E4M3_VALUES[0x80:0xFF], -pos)


def _codes_row_bytes():
    """One 32-element row holding the 16 e2m1 codes twice (element k has code k % 16)."""
    return R.pack_fp4(np.arange(32) % 16)


@pytest.mark.parametrize("sf_layout", ["linear", "blocked"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_library_decodes_every_e2m1_code(sf_layout, dtype):
    q = _codes_row_bytes()[None, :]                          # (1, 16): K = 32
    sf = np.full((1, 2), ONE_E4M3, dtype=np.uint8)
    if sf_layout == "blocked":
        sf = R.to_blocked(sf)
    out = nvfp4.dequantize(q, sf, sf_layout=sf_layout, dtype=dtype)
    expected = np.array(E2M1_HAND * 2)
    np.testing.assert_array_equal(out[0].astype(np.float64), expected)
    np.testing.assert_array_equal(np.signbit(out[0]), np.signbit(expected))   # -0 stays -0


def test_packing_low_nibble_is_the_even_element():
    q = np.array([[0x72] * 16], dtype=np.uint8)              # low nibble 2 (1.0), high 7 (6.0)
    out = nvfp4.dequantize(q, np.full((1, 2), ONE_E4M3, np.uint8))
    np.testing.assert_array_equal(out[0, 0::2], 1.0)
    np.testing.assert_array_equal(out[0, 1::2], 6.0)
    np.testing.assert_array_equal(R.unpack_fp4(q)[0, :2], [2, 7])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("global_scale", [1.0, 0.5, "array"])
def test_library_decodes_every_e4m3_byte_times_every_code(dtype, global_scale):
    """Row r has scale byte r for both blocks and every e2m1 code: 256 x 32 products."""
    q = np.tile(_codes_row_bytes(), (256, 1))
    sf = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 2, axis=1)
    gs = np.array([0.5], np.float32) if global_scale == "array" else global_scale
    out = nvfp4.dequantize(q, sf, global_scale=gs, dtype=dtype)
    gsv = 0.5 if global_scale == "array" else global_scale
    expected = np.outer(R.E4M3_VALUES, R.E2M1_VALUES[np.arange(32) % 16]) * gsv   # exact in fp16 too
    got = out.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    ok = ~np.isnan(expected)
    np.testing.assert_array_equal(got[ok], expected[ok])
    # and the hand-written subset, independent of the reference tables
    for byte, value in E4M3_HAND.items():
        assert got[byte, 2] == value * 1.0 * gsv, hex(byte)     # code 2 = 1.0
        assert got[byte, 7] == value * 6.0 * gsv, hex(byte)     # code 7 = 6.0
    assert np.isnan(got[0x7F]).all() and np.isnan(got[0xFF]).all()   # NaN * 0 is NaN too


# ---------------------------------------------------------------------------
# Rounding through quantize
# ---------------------------------------------------------------------------

def _quantize_one_block(values, gs=1.0):
    """Quantize one 32-element row (two blocks: `values` padded with zeros, and a
    block of zeros) with a given global scale; returns (codes of block 0, scale byte)."""
    x = np.zeros((1, 32), np.float32)
    x[0, : len(values)] = values
    q, sf, _ = nvfp4.quantize(x, global_scale=gs)
    qr, sfr, _ = R.quantize_ref(x, global_scale=gs)
    np.testing.assert_array_equal(q, qr)
    np.testing.assert_array_equal(sf, sfr)
    return R.unpack_fp4(q)[0, :16], int(sf[0, 0]), int(sf[0, 1])


# (input, expected e2m1 code) with the block scale pinned to 1.0 by a 6.0 in the block.
E2M1_ROUNDING = [
    (0.25, 0), (0.2500001, 1), (0.75, 2), (0.7499999, 1), (1.25, 2), (1.2500001, 3),
    (1.75, 4), (1.7499999, 3), (2.5, 4), (2.5000002, 5), (3.5, 6), (3.4999998, 5),
    (5.0, 6), (5.0000005, 7), (0.0, 0), (0.1, 0), (-0.25, 8), (-0.75, 10), (-1.25, 10),
    (-1.75, 12), (-2.5, 12), (-3.5, 14), (-5.0, 14), (-0.1, 8), (6.0, 7), (-6.0, 15),
]


@pytest.mark.parametrize("value,code", E2M1_ROUNDING)
def test_e2m1_round_to_nearest_even(value, code):
    codes, s0, s1 = _quantize_one_block([6.0, value])
    assert s0 == ONE_E4M3 and s1 == 0
    assert codes[0] == 7 and codes[1] == code, (value, codes[1], code)
    assert R.encode_e2m1(np.float32(value)) == code


def test_e2m1_saturates_at_6():
    # block amax 6.375 -> scale e4m3(1.0625) = 1.0 (tie to even), so 6.375 * 1 > 6 saturates
    codes, s0, _ = _quantize_one_block([6.375, -6.375, 6.2])
    assert s0 == ONE_E4M3
    assert list(codes[:3]) == [7, 15, 7]
    assert R.encode_e2m1(np.float32(1e30)) == 7 and R.encode_e2m1(np.float32(np.inf)) == 7
    assert R.encode_e2m1(np.float32(np.nan)) == 0


# block amax -> expected e4m3 scale byte (gs = 1: scale = e4m3(amax / 6))
E4M3_ROUNDING = [
    (6.0 * 1.0625, 0x38),          # tie between 1.0 and 1.125 -> even mantissa (1.0)
    (6.0 * 1.1875, 0x3A),          # tie between 1.125 and 1.25 -> 1.25
    (6.0 * 1.0626, 0x39),
    (6.0 * 448.0, 0x7E),
    (6.0 * 460.0, 0x7E),           # between 448 and 480 (NaN code): saturates
    (6.0 * 1e6, 0x7E),
    (6.0 * 1.5 * 2.0 ** -9, 0x02),  # subnormal tie between 1 and 2 quanta -> 2
    (6.0 * 2.5 * 2.0 ** -9, 0x02),  # tie -> 2
    (6.0 * 2.0 ** -11, 0x00),      # below half the smallest subnormal -> 0, block stores zeros
    (6.0 * 7.5 * 2.0 ** -9, 0x08),  # tie between 7 quanta and the smallest normal -> 0x08
]


@pytest.mark.parametrize("amax,byte", E4M3_ROUNDING)
def test_e4m3_block_scale_rne_and_saturation(amax, byte):
    codes, s0, _ = _quantize_one_block([np.float32(amax), np.float32(amax) / 3])
    assert s0 == byte, (amax, hex(s0), hex(byte))
    if byte == 0:
        assert not codes.any()


def test_e4m3_encoder_of_the_reference():
    finite = np.arange(0x7F)
    np.testing.assert_array_equal(R.encode_e4m3(R.E4M3_VALUES[finite]), finite)
    np.testing.assert_array_equal(R.encode_e4m3(-R.E4M3_VALUES[1:0x7F]), finite[1:] | 0x80)
    assert R.encode_e4m3(np.nan) == 0x7F and R.encode_e4m3(np.inf) == 0x7E and R.encode_e4m3(-np.inf) == 0xFE


def test_quantize_nan_and_inf_blocks():
    x = np.zeros((2, 64), np.float32)
    x[0, :16] = 1.0
    x[0, 3] = np.nan                     # block 0: NaN scale, NaN element -> code 0
    x[1, 16:32] = -2.0
    x[1, 20] = np.inf                    # inf amax
    for gs in (1.0, None):
        q, sf, g = nvfp4.quantize(x, global_scale=gs)
        qr, sfr, gr = R.quantize_ref(x, global_scale=gs)
        np.testing.assert_array_equal(q, qr)
        np.testing.assert_array_equal(sf, sfr)
        assert g[0].tobytes() == np.float32(gr).tobytes()
    assert sf[0, 0] == 0x7F


# ---------------------------------------------------------------------------
# Global scale direction
# ---------------------------------------------------------------------------

def test_global_scale_helpers_direction():
    assert nvfp4.global_scale_from_amax(2688.0) == 1.0
    assert nvfp4.global_scale_from_amax(6.0 * 448.0 * 0.25) == 0.25
    assert nvfp4.global_scale_from_amax(0.0) == 1.0
    decode = nvfp4.global_scale_from_amax(100.0)
    encode = nvfp4.encode_scale_from_decode(decode)
    assert math.isclose(encode, 6.0 * 448.0 / 100.0, rel_tol=1e-12)   # FlashInfer / vLLM convention
    assert math.isclose(nvfp4.decode_scale_from_encode(encode), decode, rel_tol=1e-12)


def test_quantize_returns_a_decode_scale(rng):
    x = (rng.standard_normal((8, 128)) * 37.0).astype(np.float32)
    q, sf, gs = nvfp4.quantize(x)
    amax = float(np.abs(x).max())
    assert gs.dtype == np.float32 and gs.shape == (1,)
    assert gs[0] == np.float32(np.float32(amax) / np.float32(2688.0))
    assert math.isclose(float(gs[0]), nvfp4.global_scale_from_amax(amax), rel_tol=1e-6)
    # decode direction: values come back near x with the decode scale ...
    back = nvfp4.dequantize(q, sf, global_scale=gs)
    assert np.abs(back - x).max() <= 0.5 * amax
    rel = np.linalg.norm(back - x) / np.linalg.norm(x)
    assert rel < 0.15
    # ... and are wildly off with the encode scale (the classic mistake)
    wrong = nvfp4.dequantize(q, sf, global_scale=nvfp4.encode_scale_from_decode(float(gs[0])))
    assert np.linalg.norm(wrong - x) / np.linalg.norm(x) > 100
