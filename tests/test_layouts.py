"""Scale layouts (docs/design.md, "Formats and layouts"): the blocked formula vs the gpu-mode 6-D
construction, swizzle/unswizzle through the library, padding, the 6-D view as an
input, and byte-count errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import nvfp4
from nvfp4 import _nvfp4_ext
from nvfp4 import reference as R
from _util import assert_matches, expect_error, poisoned, raw, strided_copy

ROWS = [1, 7, 129, 300]
KS = [32, 96, 160]
LS = [None, 1, 3]


def padding_mask(rows, k):
    """True at the bytes of a blocked tensor that hold no real scale."""
    mask = np.ones(R.blocked_bytes(rows, k), dtype=bool)
    r, c = np.meshgrid(np.arange(rows), np.arange(k // 16), indexing="ij")
    mask[R.blocked_offset(r, c, k).ravel()] = False
    return mask


@pytest.mark.parametrize("rows,k", itertools.product(ROWS, KS))
def test_blocked_formula_equals_6d_construction(rows, k, rng):
    sf = R.random_scales((3, rows, k // 16), rng)
    formula = R.to_blocked(sf)
    six_d = R.to_blocked_6d(sf)
    np.testing.assert_array_equal(formula, six_d)
    assert formula.shape == (3, R.blocked_bytes(rows, k))
    # the 6-D view indexes the same bytes: (32, 4, rest_m, 4, rest_k, L)
    view = R.blocked_6d_view(formula, rows, k)
    assert view.shape == (32, 4, -(-rows // 128), 4, R.blocked_cols(k) // 4, 3)
    np.testing.assert_array_equal(R.from_blocked_6d(view, rows, k), sf)
    np.testing.assert_array_equal(R.from_blocked(formula, rows, k), sf)


@pytest.mark.parametrize("rows,k", [(1, 32), (129, 96), (300, 160), (256, 4096)])
def test_library_offsets_and_sizes(rows, k):
    assert nvfp4.blocked_scale_bytes(rows, k) == R.blocked_bytes(rows, k)
    for r, c in [(0, 0), (rows - 1, k // 16 - 1), (rows // 2, (k // 16) // 2), (min(rows - 1, 127), 3 % (k // 16))]:
        assert _nvfp4_ext.blocked_scale_offset(r, c, k) == R.blocked_offset(r, c, k)


@pytest.mark.parametrize("k", [32, 96, 2048, 7168])
def test_blocked_row_is_row0_layout_plus_constant(k):
    """What the sm90a GEMM's one-token GEMV route relies on (gemm.cu token_gemv): row m of a
    blocked scale operand, read as a one-row blocked operand starting at
    blocked_offset(m, 0), is exactly row m."""
    rows = 300
    r = np.arange(rows)[:, None]
    c = np.arange(k // 16)[None, :]
    np.testing.assert_array_equal(R.blocked_offset(r, c, k), R.blocked_offset(r, 0, k) + R.blocked_offset(0, c, k))
    assert _nvfp4_ext.blocked_scale_offset(rows - 1, k // 16 - 1, k) == (
        _nvfp4_ext.blocked_scale_offset(rows - 1, 0, k) + _nvfp4_ext.blocked_scale_offset(0, k // 16 - 1, k))


def test_blocked_offset_hand_values():
    # K = 256 (16 scale columns, 4 column tiles)
    assert R.blocked_offset(0, 0, 256) == 0
    assert R.blocked_offset(0, 3, 256) == 3
    assert R.blocked_offset(1, 0, 256) == 16
    assert R.blocked_offset(32, 0, 256) == 4
    assert R.blocked_offset(127, 3, 256) == 31 * 16 + 3 * 4 + 3
    assert R.blocked_offset(0, 4, 256) == 512            # next column tile
    assert R.blocked_offset(128, 0, 256) == 4 * 512      # next row tile, after 4 column tiles


@pytest.mark.parametrize("L", LS)
@pytest.mark.parametrize("rows,k", itertools.product(ROWS, KS))
def test_swizzle_unswizzle_round_trip(rows, k, L, rng):
    lead = () if L is None else (L,)
    sf = R.random_scales(lead + (rows, k // 16), rng)
    n = R.blocked_bytes(rows, k)
    out = poisoned(lead + (n,), np.uint8)                 # padding must be overwritten with zero
    res = nvfp4.swizzle_scales(sf, out=out)
    assert res is out
    np.testing.assert_array_equal(out, R.to_blocked(sf))
    assert not out[..., padding_mask(rows, k)].any(), "padding bytes must be zero"
    back = nvfp4.unswizzle_scales(out, rows, k)
    assert back.shape == sf.shape and back.dtype == np.uint8
    np.testing.assert_array_equal(back, sf)
    # allocating form
    np.testing.assert_array_equal(nvfp4.swizzle_scales(sf), out)


@pytest.mark.parametrize("rows,k", [(7, 96), (129, 160)])
def test_swizzle_strided_linear_input(rows, k, rng):
    sf = R.random_scales((3, rows, k // 16), rng)
    view = strided_copy(sf)
    assert not view.flags.c_contiguous
    np.testing.assert_array_equal(nvfp4.swizzle_scales(view), R.to_blocked(sf))
    out = strided_copy(np.zeros_like(sf))
    nvfp4.unswizzle_scales(R.to_blocked(sf), rows, k, out=out)
    np.testing.assert_array_equal(out, sf)


def test_unswizzle_ignores_padding(rng):
    rows, k = 7, 96
    sf = R.random_scales((rows, k // 16), rng)
    dense = R.to_blocked_6d(sf, pad_value=0x7F)          # NaN bytes in the padding
    np.testing.assert_array_equal(nvfp4.unswizzle_scales(dense, rows, k), sf)


@pytest.mark.parametrize("L", [None, 1, 3])
@pytest.mark.parametrize("rows,k", [(7, 96), (129, 160), (300, 32)])
def test_unswizzle_accepts_the_6d_view(rows, k, L, rng):
    lead = () if L is None else (L,)
    sf = R.random_scales(lead + (rows, k // 16), rng)
    dense = R.to_blocked_6d(sf, pad_value=lambda s: rng.integers(1, 3, size=s))   # gpu-mode pads with 1..2
    view = R.blocked_6d_view(dense, rows, k)
    assert view.ndim == 6 and not view.flags.c_contiguous
    got = nvfp4.unswizzle_scales(view, rows, k)
    np.testing.assert_array_equal(got, sf if L is not None else sf[None])


def _gemm_operands(M, N, K, L, rng):
    qa, sfa = R.make_operand(M, K, L, "linear", rng)
    qb, sfb = R.make_operand(N, K, L, "linear", rng)
    return qa, sfa, qb, sfb


@pytest.mark.parametrize("L", [None, 1, 3])
@pytest.mark.parametrize("M,N,K", [(7, 129, 96), (130, 5, 160)])
def test_gemm_accepts_6d_views_and_never_reads_padding(M, N, K, L, rng):
    qa, sfa, qb, sfb = _gemm_operands(M, N, K, L, rng)
    ref = R.gemm_ref(qa, sfa, qb, sfb)
    nan_pad = lambda s: np.full(s, 0x7F)                   # NaN scales in every padding byte
    va = R.blocked_6d_view(R.to_blocked_6d(sfa, pad_value=nan_pad), M, K)
    vb = R.blocked_6d_view(R.to_blocked_6d(sfb, pad_value=nan_pad), N, K)
    out = nvfp4.gemm(qa, va, qb, vb, sf_layout="blocked", out_dtype="float32")
    assert np.isfinite(out).all(), "padding bytes were read as scales"
    assert_matches(out, ref, "float32")
    # the dense (L, n) form with NaN padding too
    da = R.to_blocked_6d(sfa, pad_value=0x7F)
    db = R.to_blocked_6d(sfb, pad_value=0x7F)
    out2 = nvfp4.gemm(qa, da, qb, db, sf_layout="blocked", out_dtype="float32")
    np.testing.assert_array_equal(out2, out)


def test_gemv_and_dequantize_accept_6d_views(rng):
    M, K, L = 129, 96, 2
    qa, sfa = R.make_operand(M, K, L, "linear", rng)
    qb, sfb = R.make_operand(1, K, L, "linear", rng, vector=True)
    va = R.blocked_6d_view(R.to_blocked_6d(sfa, pad_value=0x7F), M, K)
    vb = R.blocked_6d_view(R.to_blocked_6d(sfb[:, None, :], pad_value=0x7F), 1, K)
    out = nvfp4.gemv(qa, va, qb, vb, sf_layout="blocked", out_dtype="float32")
    assert_matches(out, R.gemv_ref(qa, sfa, qb, sfb), "float32")
    deq = nvfp4.dequantize(qa, va, sf_layout="blocked")
    np.testing.assert_array_equal(deq, R.dequantize_ref(qa, sfa))


# ---------------------------------------------------------------------------
# Byte-count and shape errors
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("delta", [-1, 4, 512])
def test_gemm_rejects_wrong_blocked_byte_count(delta, rng):
    M, N, K = 7, 9, 96
    qa, sfa = R.make_operand(M, K, None, "blocked", rng)
    qb, sfb = R.make_operand(N, K, None, "blocked", rng)
    bad = np.zeros(sfa.size + delta, np.uint8)
    out = poisoned((M, N), np.float16)
    before = raw(out)
    expect_error(ValueError, lambda: nvfp4.gemm(qa, bad, qb, sfb, sf_layout="blocked", out=out),
                 "'sfa'", str(R.blocked_bytes(M, K)))
    expect_error(ValueError, lambda: nvfp4.gemm(qa, sfa, qb, bad[: sfb.size - 1], sf_layout="blocked", out=out),
                 "'sfb'")
    assert raw(out) == before


def test_gemm_rejects_linear_scales_passed_as_blocked(rng):
    qa, sfa = R.make_operand(128, 64, None, "linear", rng)
    qb, sfb = R.make_operand(128, 64, None, "blocked", rng)
    expect_error(ValueError, lambda: nvfp4.gemm(qa, sfa, qb, sfb, sf_layout="blocked"), "'sfa'", "blocked")


def test_swizzle_rejects_wrong_out_size(rng):
    sf = R.random_scales((7, 6), rng)
    out = poisoned((R.blocked_bytes(7, 96) - 1,), np.uint8)
    before = raw(out)
    expect_error(ValueError, lambda: nvfp4.swizzle_scales(sf, out=out), "'out'")
    assert raw(out) == before


def test_unswizzle_rejects_wrong_byte_count(rng):
    blk = np.zeros(R.blocked_bytes(7, 96) + 16, np.uint8)
    expect_error(ValueError, lambda: nvfp4.unswizzle_scales(blk, 7, 96), "'sf_blocked'")


def test_6d_view_with_wrong_shape_is_rejected(rng):
    M, N, K = 7, 9, 96
    qa, sfa = R.make_operand(M, K, None, "linear", rng)
    qb, sfb = R.make_operand(N, K, None, "blocked", rng)
    view = R.blocked_6d_view(R.to_blocked(sfa), M, K)
    wrong = np.ascontiguousarray(view)                     # right shape, wrong (contiguous) strides
    expect_error(ValueError, lambda: nvfp4.gemm(qa, wrong, qb, sfb, sf_layout="blocked"), "'sfa'", "6-D")
    expect_error(ValueError, lambda: nvfp4.gemm(qa, view[:, :, :, :, :1], qb, sfb, sf_layout="blocked"), "'sfa'")
