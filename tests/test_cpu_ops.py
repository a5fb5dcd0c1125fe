"""Every op through the library on host (numpy) arrays, i.e. the CPU backend, against
the independent numpy reference (nvfp4.reference)."""

from __future__ import annotations

import numpy as np
import pytest

import nvfp4
from nvfp4 import reference as R
from _util import (EDGE_CASES, assert_matches, assert_same_floats, edge_input, interesting_input, poisoned, pow2_alpha,
                   raw, strided_copy)

LAYOUTS = ["linear", "blocked"]
OUT_DTYPES = ["float16", "float32"]


def operand(rows, k, L, layout, rng, **kw):
    return R.make_operand(rows, k, L, layout, rng, **kw)


# ---------------------------------------------------------------------------
# GEMV
# ---------------------------------------------------------------------------

# (M, K, L): gpu-mode test shapes (small ones) and odd shapes; L None = no batch dim
GEMV_SHAPES = [(128, 256, 1), (512, 512, 2), (128, 1536, 1), (1, 32, None), (7, 96, 3), (129, 160, None),
               (1000, 64, 1)]


@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,K,L", GEMV_SHAPES)
def test_gemv(M, K, L, layout, out_dtype, rng):
    qa, sfa = operand(M, K, L, layout, rng)
    qb, sfb = operand(1, K, L, layout, rng, vector=True)
    acc = R.gemv_ref(qa, sfa, qb, sfb, sf_layout=layout)
    alpha = pow2_alpha(acc)
    out = nvfp4.gemv(qa, sfa, qb, sfb, alpha=alpha, sf_layout=layout, out_dtype=out_dtype)
    assert out.shape == ((M,) if L is None else (L, M)) and out.dtype == np.dtype(out_dtype)
    assert_matches(out, alpha * acc)


# ---------------------------------------------------------------------------
# GEMM
# ---------------------------------------------------------------------------

# (M, N, K, L)
GEMM_SHAPES = [(128, 256, 256, None), (128, 256, 256, 1), (512, 512, 512, None), (256, 512, 512, 2), (1, 7, 32, None),
               (7, 1, 96, 3), (129, 129, 96, 1), (1000, 7, 64, None), (7, 1000, 32, 3), (1, 1, 32, None)]


@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", GEMM_SHAPES)
def test_gemm(M, N, K, L, layout, out_dtype, rng):
    qa, sfa = operand(M, K, L, layout, rng)
    qb, sfb = operand(N, K, L, layout, rng)
    acc = R.gemm_ref(qa, sfa, qb, sfb, sf_layout=layout)
    alpha = pow2_alpha(acc)
    out = nvfp4.gemm(qa, sfa, qb, sfb, alpha=alpha, sf_layout=layout, out_dtype=out_dtype)
    assert out.shape == ((M, N) if L is None else (L, M, N)) and out.dtype == np.dtype(out_dtype)
    assert_matches(out, alpha * acc)


def test_gemm_default_output_is_fp16_numpy(rng):
    qa, sfa = operand(8, 64, None, "linear", rng, lo=0.25, hi=1)
    qb, sfb = operand(4, 64, None, "linear", rng, lo=0.25, hi=1)
    out = nvfp4.gemm(qa, sfa, qb, sfb)
    assert isinstance(out, np.ndarray) and out.dtype == np.float16
    assert_matches(out, R.gemm_ref(qa, sfa, qb, sfb))


def test_gemm_alpha_as_array_and_out_in_place(rng):
    M, N, K, L = 33, 17, 96, 2
    qa, sfa = operand(M, K, L, "linear", rng)
    qb, sfb = operand(N, K, L, "linear", rng)
    acc = R.gemm_ref(qa, sfa, qb, sfb)
    alpha = np.array([pow2_alpha(acc) * 0.75], dtype=np.float32)   # not a power of two on purpose
    out = poisoned((L, M, N), np.float32)
    res = nvfp4.gemm(qa, sfa, qb, sfb, alpha=alpha, out=out)
    assert res is out
    assert_matches(out, float(alpha[0]) * acc)
    assert_matches(out, R.gemm_ref(qa, sfa, qb, sfb, alpha=alpha))


def test_gemm_numpy_scalar_alpha(rng):
    qa, sfa = operand(16, 64, None, "linear", rng)
    qb, sfb = operand(8, 64, None, "linear", rng)
    out = nvfp4.gemm(qa, sfa, qb, sfb, alpha=np.float32(0.125), out_dtype="float32")
    assert_matches(out, R.gemm_ref(qa, sfa, qb, sfb, alpha=0.125))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gemm_gpu_mode_strided_batches(layout, rng):
    """gpu-mode hands (M, K/2, L) views whose L stride is the largest; the user passes
    them permuted to (L, M, K/2). Also padded (non-contiguous) rows and batches."""
    M, N, K, L = 40, 24, 96, 3
    qa, sfa = operand(M, K, L, layout, rng)
    qb, sfb = operand(N, K, L, layout, rng)
    ref = R.gemm_ref(qa, sfa, qb, sfb, sf_layout=layout)
    a_gm = qa.transpose(1, 2, 0)                                   # (M, K/2, L) as gpu-mode has it
    b_gm = qb.transpose(1, 2, 0)
    assert a_gm.strides[2] == max(a_gm.strides)
    a, b = a_gm.transpose(2, 0, 1), b_gm.transpose(2, 0, 1)
    if layout == "linear":
        sa, sb = sfa.transpose(1, 2, 0).transpose(2, 0, 1), sfb.transpose(1, 2, 0).transpose(2, 0, 1)
    else:
        sa, sb = sfa, sfb
    out = nvfp4.gemm(a, sa, b, sb, sf_layout=layout, out_dtype="float32")
    assert_matches(out, ref, "float32")
    # padded strides everywhere (unit stride along K kept)
    pa, pb = strided_copy(qa), strided_copy(qb)
    ps = (strided_copy(sfa), strided_copy(sfb)) if layout == "linear" else \
        (strided_copy(sfa[:, None, :], pad_rows=0)[:, 0], strided_copy(sfb[:, None, :], pad_rows=0)[:, 0])
    assert not pa.flags.c_contiguous
    out2 = nvfp4.gemm(pa, ps[0], pb, ps[1], sf_layout=layout, out_dtype="float32")
    np.testing.assert_array_equal(out2, out)


def test_gemm_strided_output(rng):
    M, N, K = 9, 13, 64
    qa, sfa = operand(M, K, None, "linear", rng)
    qb, sfb = operand(N, K, None, "linear", rng)
    ref = R.gemm_ref(qa, sfa, qb, sfb)
    buf = poisoned((N, M), np.float32)
    out = buf.T                                                    # column stride M
    nvfp4.gemm(qa, sfa, qb, sfb, out=out)
    assert_matches(out, ref, "float32")
    big = poisoned((M + 2, N + 5), np.float16)
    nvfp4.gemm(qa, sfa, qb, sfb, alpha=pow2_alpha(ref), out=big[1:M + 1, 2:N + 2])
    assert_matches(big[1:M + 1, 2:N + 2], pow2_alpha(ref) * ref, "float16")
    assert raw(big[0]) == bytes([0xA5]) * big[0].nbytes, "wrote outside the output view"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_nan_scale_gives_nan_output(layout, rng):
    M, N, K = 130, 9, 96
    qa = R.random_fp4((M, K // 2), rng)
    qb = R.random_fp4((N, K // 2), rng)
    sfa = R.random_scales((M, K // 16), rng)
    sfb = R.random_scales((N, K // 16), rng)
    sfa[3, 1] = 0x7F
    sfa[129, 5] = 0xFF
    sfb[4, 0] = 0x7F
    qa[3, 16:24] = 0                                                 # NaN * 0 is still NaN
    A = (lambda s: R.to_blocked(s)) if layout == "blocked" else (lambda s: s)
    out = nvfp4.gemm(qa, A(sfa), qb, A(sfb), sf_layout=layout, out_dtype="float32")
    expect = np.zeros((M, N), bool)
    expect[[3, 129], :] = True
    expect[:, 4] = True
    np.testing.assert_array_equal(np.isnan(out), expect)
    v = nvfp4.gemv(qa, A(sfa), qb[0], A(sfb[:1]) if layout == "blocked" else sfb[0], sf_layout=layout)
    np.testing.assert_array_equal(np.isnan(v), expect[:, 0])
    assert_matches(out, R.gemm_ref(qa, A(sfa), qb, A(sfb), sf_layout=layout), "float32")


@pytest.mark.parametrize("M,N,L", [(0, 5, None), (5, 0, None), (0, 0, 2), (3, 4, 0)])
def test_zero_size_gemm_is_a_no_op(M, N, L, rng):
    K = 64
    lead = () if L is None else (L,)
    qa = np.zeros(lead + (M, K // 2), np.uint8)
    qb = np.zeros(lead + (N, K // 2), np.uint8)
    sfa = np.zeros(lead + (M, K // 16), np.uint8)
    sfb = np.zeros(lead + (N, K // 16), np.uint8)
    out = nvfp4.gemm(qa, sfa, qb, sfb)
    assert out.shape == lead + (M, N)


# ---------------------------------------------------------------------------
# Dual GEMM
# ---------------------------------------------------------------------------

DUAL_SHAPES = [(256, 512, 256, None), (7, 129, 96, 3), (1, 1, 32, None), (129, 7, 160, 1)]


@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", DUAL_SHAPES)
def test_dual_gemm(M, N, K, L, layout, out_dtype, activation, rng):
    qa, sfa = operand(M, K, L, layout, rng)
    qb1, sfb1 = operand(N, K, L, layout, rng)
    qb2, sfb2 = operand(N, K, L, layout, rng)
    a1 = pow2_alpha(R.gemm_ref(qa, sfa, qb1, sfb1, sf_layout=layout), target=3.0)   # the activation's bend
    a2 = pow2_alpha(R.gemm_ref(qa, sfa, qb2, sfb2, sf_layout=layout), target=16.0)
    ref = R.dual_gemm_ref(qa, sfa, qb1, sfb1, qb2, sfb2, alpha1=a1, alpha2=a2, activation=activation,
                          sf_layout=layout)
    out = nvfp4.dual_gemm(qa, sfa, qb1, sfb1, qb2, sfb2, alpha1=a1, alpha2=a2, activation=activation,
                          sf_layout=layout, out_dtype=out_dtype)
    assert out.shape == ((M, N) if L is None else (L, M, N))
    assert_matches(out, ref)


def test_dual_gemm_array_alphas_and_out(rng):
    M, N, K = 20, 12, 64
    qa, sfa = operand(M, K, None, "linear", rng)
    qb1, sfb1 = operand(N, K, None, "linear", rng)
    qb2, sfb2 = operand(N, K, None, "linear", rng)
    a1, a2 = np.array([0.01], np.float32), np.array([0.003], np.float32)
    out = poisoned((M, N), np.float32)
    res = nvfp4.dual_gemm(qa, sfa, qb1, sfb1, qb2, sfb2, alpha1=a1, alpha2=a2, out=out)
    assert res is out
    assert_matches(out, R.dual_gemm_ref(qa, sfa, qb1, sfb1, qb2, sfb2, alpha1=a1, alpha2=a2))


# ---------------------------------------------------------------------------
# Grouped GEMM (list) and packed (MoE)
# ---------------------------------------------------------------------------

GROUPS = [([96, 128], [128, 256], [256, 512]),        # gpu-mode (M list; N list; K list)
          ([80, 128, 256], [384, 256, 128], [256, 512, 256]),
          ([1, 7, 129], [129, 1, 7], [32, 96, 64])]


@pytest.mark.parametrize("with_alphas", [False, True])
@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("Ms,Ns,Ks", GROUPS)
def test_grouped_gemm(Ms, Ns, Ks, layout, out_dtype, with_alphas, rng):
    # without alphas (all 1.0) keep the scales small so that fp16 outputs stay in range
    scale_range = {} if with_alphas else {"lo": 0.25, "hi": 1.0}
    A = [operand(m, k, None, layout, rng, **scale_range) for m, k in zip(Ms, Ks)]
    B = [operand(n, k, None, layout, rng, **scale_range) for n, k in zip(Ns, Ks)]
    args = ([a[0] for a in A], [a[1] for a in A], [b[0] for b in B], [b[1] for b in B])
    alphas = None
    if with_alphas:
        alphas = [pow2_alpha(acc) * 1.5 for acc in R.grouped_gemm_ref(*args, sf_layout=layout)]
    outs = nvfp4.grouped_gemm(*args, alphas=alphas, sf_layout=layout, out_dtype=out_dtype)
    assert isinstance(outs, list) and len(outs) == len(Ms)
    refs = R.grouped_gemm_ref(*args, alphas=alphas, sf_layout=layout)
    for g, (o, r) in enumerate(zip(outs, refs)):
        assert o.shape == (Ms[g], Ns[g])
        assert np.all(np.abs(r) < 6e4), "reference out of fp16 range: fix the test's scale range"
        assert_matches(o, r)


def test_grouped_gemm_out_in_place(rng):
    A = [operand(m, 64, None, "linear", rng, lo=0.25, hi=1) for m in (3, 5)]
    B = [operand(n, 64, None, "linear", rng, lo=0.25, hi=1) for n in (4, 6)]
    outs = [poisoned((3, 4), np.float32), poisoned((5, 6), np.float16)]
    res = nvfp4.grouped_gemm([a[0] for a in A], [a[1] for a in A], [b[0] for b in B], [b[1] for b in B], out=outs)
    assert all(r is o for r, o in zip(res, outs))
    assert_matches(outs[0], R.gemm_ref(*A[0], *B[0]))
    assert_matches(outs[1], R.gemm_ref(*A[1], *B[1]))
    assert nvfp4.grouped_gemm([], [], [], []) == []


def test_grouped_gemm_empty_groups_are_skipped(rng):
    A = [operand(m, 64, None, "linear", rng, lo=0.25, hi=1) for m in (3, 0, 5)]
    B = [operand(n, 64, None, "linear", rng, lo=0.25, hi=1) for n in (4, 6, 0)]
    outs = nvfp4.grouped_gemm([a[0] for a in A], [a[1] for a in A], [b[0] for b in B], [b[1] for b in B],
                              out_dtype="float32")
    assert [o.shape for o in outs] == [(3, 4), (0, 6), (5, 0)]
    assert_matches(outs[0], R.gemm_ref(*A[0], *B[0]))


PACKED = [([5, 0, 130, 1], 64, 96), ([0, 7, 0], 129, 32), ([40, 56, 384, 512], 32, 64), ([1], 1, 32)]


@pytest.mark.parametrize("alphas", [None, "array"])
@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
@pytest.mark.parametrize("Ms,N,K", PACKED)
def test_grouped_gemm_packed(Ms, N, K, out_dtype, alphas, rng):
    G, total = len(Ms), sum(Ms)
    qa, sfa = operand(total, K, None, "linear", rng, lo=0.25, hi=2)
    qb, sfb = operand(N, K, G, "linear", rng, lo=0.25, hi=2)
    offsets = np.concatenate([[0], np.cumsum(Ms)]).astype(np.int32)
    al = rng.choice([0.25, 0.5, 0.125], size=G).astype(np.float32) if alphas else None
    out = nvfp4.grouped_gemm_packed(qa, sfa, qb, sfb, offsets, alphas=al, out_dtype=out_dtype)
    assert out.shape == (total, N)
    ref = R.grouped_gemm_packed_ref(qa, sfa, qb, sfb, offsets, alphas=al)
    assert_matches(out, ref)
    # and it is the per-group gemm
    for g in range(G):
        lo, hi = offsets[g], offsets[g + 1]
        part = R.gemm_ref(qa[lo:hi], sfa[lo:hi], qb[g], sfb[g], alpha=1.0 if al is None else al[g])
        np.testing.assert_allclose(ref[lo:hi], part, rtol=1e-12, atol=0)


# ---------------------------------------------------------------------------
# Quantize (bit-exact) / dequantize
# ---------------------------------------------------------------------------

QUANT_SHAPES = [(32,), (1, 32), (7, 96), (3, 129, 160), (130, 64)]


@pytest.mark.parametrize("given_gs", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape", QUANT_SHAPES)
def test_quantize_bit_exact(shape, dtype, layout, given_gs, rng):
    x = interesting_input(shape, dtype, rng)
    gs = float(np.float32(rng.uniform(0.01, 2.0))) if given_gs else None
    q, sf, g = nvfp4.quantize(x, global_scale=gs, sf_layout=layout)
    qr, sfr, gr = R.quantize_ref(x, global_scale=gs, sf_layout=layout)
    assert q.dtype == np.uint8 and q.shape == shape[:-1] + (shape[-1] // 2,)
    assert sf.dtype == np.uint8 and sf.shape == sfr.shape
    np.testing.assert_array_equal(q, qr)
    np.testing.assert_array_equal(sf, sfr)
    assert g.dtype == np.float32 and g.shape == (1,)
    assert g.tobytes() == np.float32(gr).tobytes()


@pytest.mark.parametrize("case", EDGE_CASES)
def test_quantize_edge_inputs(case, rng):
    x = edge_input(case, (4, 64), rng)
    for gs in (None, 1.0, 1e-30):
        for layout in LAYOUTS:
            q, sf, g = nvfp4.quantize(x, global_scale=gs, sf_layout=layout)
            qr, sfr, gr = R.quantize_ref(x, global_scale=gs, sf_layout=layout)
            np.testing.assert_array_equal(q, qr, err_msg=f"{case} gs={gs} {layout}")
            np.testing.assert_array_equal(sf, sfr, err_msg=f"{case} gs={gs} {layout}")
            assert g.tobytes() == np.float32(gr).tobytes()
    if case in ("zeros", "negative_zero"):
        q, sf, g = nvfp4.quantize(x)
        assert g[0] == 1.0 and not sf.any() and not (q & 0x77).any()


def test_quantize_with_the_global_scale_a_previous_call_returned(rng):
    """Calibrate on one tensor, quantize another with that scale: the returned 1-element
    array is accepted back as global_scale (and so is a numpy scalar)."""
    calib = rng.standard_normal((4, 64)).astype(np.float32) * 3
    x = rng.standard_normal((4, 64)).astype(np.float32)
    _, _, gs = nvfp4.quantize(calib)
    for given in (gs, gs[0], float(gs[0])):
        q, sf, g = nvfp4.quantize(x, global_scale=given)
        qr, sfr, _ = R.quantize_ref(x, global_scale=gs[0])
        np.testing.assert_array_equal(q, qr)
        np.testing.assert_array_equal(sf, sfr)
        assert g.tobytes() == gs.tobytes()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_quantize_more_than_3_dims_keeps_leading_dims(layout, rng):
    x = rng.standard_normal((2, 3, 5, 64)).astype(np.float32)
    q, sf, g = nvfp4.quantize(x, sf_layout=layout)
    qr, sfr, gr = R.quantize_ref(x.reshape(6, 5, 64), sf_layout=layout)
    assert q.shape == (2, 3, 5, 32)
    np.testing.assert_array_equal(q.reshape(6, 5, 32), qr)
    if layout == "linear":
        assert sf.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(sf.reshape(sfr.shape), sfr)


def test_quantize_strided_input(rng):
    x = interesting_input((3, 20, 96), "float32", rng)
    view = strided_copy(x)
    assert not view.flags.c_contiguous
    for got, want in zip(nvfp4.quantize(view), R.quantize_ref(x)):
        np.testing.assert_array_equal(got, want)


def test_quantize_round_trip_and_gemm(rng):
    """quantize -> gemm with alpha = gs_a * gs_b approximates the float matmul."""
    a = rng.standard_normal((64, 256)).astype(np.float32)
    b = rng.standard_normal((32, 256)).astype(np.float32)
    qa, sfa, ga = nvfp4.quantize(a)
    qb, sfb, gb = nvfp4.quantize(b)
    alpha = float(ga[0]) * float(gb[0])
    c = nvfp4.gemm(qa, sfa, qb, sfb, alpha=alpha, out_dtype="float32")
    assert_matches(c, R.gemm_ref(qa, sfa, qb, sfb, alpha=alpha), "float32")
    assert np.linalg.norm(c - a @ b.T) / np.linalg.norm(a @ b.T) < 0.2


DEQ_SHAPES = [(16,), (1, 16), (7, 48), (3, 129, 80)]   # packed shapes (K/2 last)


@pytest.mark.parametrize("gs", [1.0, 0.3, "array"])
@pytest.mark.parametrize("dtype", OUT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("qshape", DEQ_SHAPES)
def test_dequantize_bit_exact(qshape, layout, dtype, gs, rng):
    k = 2 * qshape[-1]
    q = R.random_fp4(qshape, rng)
    sf = R.random_scales(qshape[:-1] + (k // 16,), rng, lo=2.0 ** -9, hi=448)
    sf.reshape(-1)[rng.integers(0, sf.size, 3)] = rng.choice([0x00, 0x7F, 0xFF, 0x80, 0x01, 0x7E], 3)
    if layout == "blocked":
        sf_in = R.to_blocked(sf[None] if sf.ndim == 1 else sf)
    else:
        sf_in = sf
    gsv = np.array([0.3], np.float32) if gs == "array" else gs
    out = nvfp4.dequantize(q, sf_in, global_scale=gsv, sf_layout=layout, dtype=dtype)
    ref = R.dequantize_ref(q, sf_in, global_scale=gsv, sf_layout=layout, dtype=dtype)
    assert out.shape == qshape[:-1] + (k,) and out.dtype == np.dtype(dtype)
    assert_same_floats(out, ref)


def test_dequantize_out_in_place_and_strided(rng):
    q = R.random_fp4((3, 9, 32), rng)
    sf = R.random_scales((3, 9, 4), rng)
    ref = R.dequantize_ref(q, sf, global_scale=2.0)
    out = strided_copy(poisoned((3, 9, 64), np.float32))
    res = nvfp4.dequantize(strided_copy(q), strided_copy(sf), global_scale=2.0, out=out)
    assert res is out
    assert_same_floats(out, ref)


def test_quantize_dequantize_inverse_on_grid(rng):
    """Values that are exactly representable come back bit-exactly."""
    codes = rng.integers(0, 16, (5, 64))
    scales = R.random_scales((5, 4), rng, lo=2.0 ** -6, hi=64)
    x = (R.decode_e2m1(codes) * np.repeat(R.decode_e4m3(scales), 16, axis=1)).astype(np.float32)
    x[:, ::16] = 6.0 * np.repeat(R.decode_e4m3(scales), 1, axis=1)   # pin each block's amax
    q, sf, gs = nvfp4.quantize(x, global_scale=1.0)
    np.testing.assert_array_equal(sf, scales)
    back = nvfp4.dequantize(q, sf, global_scale=gs)
    np.testing.assert_array_equal(back, x)


# ---------------------------------------------------------------------------
# bfloat16 (needs torch for the arrays)
# ---------------------------------------------------------------------------

def test_bfloat16_output_and_input_with_torch(rng):
    torch = pytest.importorskip("torch")
    M, N, K = 17, 9, 64
    qa, sfa = operand(M, K, None, "linear", rng)
    qb, sfb = operand(N, K, None, "linear", rng)
    ref = R.gemm_ref(qa, sfa, qb, sfb)
    alpha = pow2_alpha(ref)
    T = torch.from_numpy
    out = nvfp4.gemm(T(qa), T(sfa), T(qb), T(sfb), alpha=alpha, out_dtype="bfloat16")
    assert out.dtype == torch.bfloat16
    assert_matches(out.float().numpy(), alpha * ref, "bfloat16")
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    q, sf, g = nvfp4.quantize(x)
    qr, sfr, gr = R.quantize_ref(x.float().numpy())
    np.testing.assert_array_equal(q.numpy(), qr)
    np.testing.assert_array_equal(sf.numpy(), sfr)
    d = nvfp4.dequantize(q, sf, dtype="bfloat16")
    assert d.dtype == torch.bfloat16
