"""Bad inputs (docs/design.md, "How a call flows": validation): each raises ValueError/TypeError whose message names the
offending argument, and nothing is written to `out` when validation fails."""

from __future__ import annotations

import numpy as np
import pytest

import nvfp4
from nvfp4 import reference as R
from _util import expect_error, poisoned, raw

M, N, K = 8, 16, 64
KH, KB = K // 2, K // 16


@pytest.fixture
def ops(rng):
    """Valid gemm operands (linear scales) and a poisoned fp16 output."""
    qa, sfa = R.make_operand(M, K, None, "linear", rng)
    qb, sfb = R.make_operand(N, K, None, "linear", rng)
    return dict(a=qa, sfa=sfa, b=qb, sfb=sfb, out=poisoned((M, N), np.float16))


def call_gemm(o, **changes):
    args = {**o, **changes}
    return lambda: nvfp4.gemm(args["a"], args["sfa"], args["b"], args["sfb"], out=args["out"],
                              **{k: v for k, v in args.items() if k not in ("a", "sfa", "b", "sfb", "out")})


def transposed_view(rows, cols):
    """A (rows, cols) uint8 view with unit stride along rows, i.e. not K-major."""
    return np.zeros((cols, rows), np.uint8).T


# (case id, changes to the valid gemm call, exception, substrings the message must contain)
GEMM_CASES = [
    ("a_float32", dict(a=np.zeros((M, KH), np.float32)), TypeError, ["'a'", "dtype", "float32"]),
    ("a_int32", dict(a=np.zeros((M, KH), np.int32)), TypeError, ["'a'", "dtype"]),
    ("sfa_float32", dict(sfa=np.zeros((M, KB), np.float32)), TypeError, ["'sfa'", "dtype"]),
    ("b_float16", dict(b=np.zeros((N, KH), np.float16)), TypeError, ["'b'"]),
    ("a_rank1", dict(a=np.zeros((KH,), np.uint8)), ValueError, ["'a'", "shape"]),
    ("a_rank4", dict(a=np.zeros((1, 1, M, KH), np.uint8)), ValueError, ["'a'"]),
    ("b_rank1", dict(b=np.zeros((KH,), np.uint8)), ValueError, ["'b'"]),
    ("k_mismatch", dict(b=np.zeros((N, KH + 16), np.uint8), sfb=np.zeros((N, KB + 2), np.uint8)), ValueError,
     ["K mismatch", "'a'", "'b'"]),
    ("k_not_multiple_of_32", dict(a=np.zeros((M, 24), np.uint8), sfa=np.zeros((M, 3), np.uint8),
                                  b=np.zeros((N, 24), np.uint8), sfb=np.zeros((N, 3), np.uint8)), ValueError,
     ["'a'", "multiple of 32"]),
    ("a_not_k_major", dict(a=transposed_view(M, KH)), ValueError, ["'a'", "K-major"]),
    ("b_not_k_major", dict(b=transposed_view(N, KH)), ValueError, ["'b'", "K-major"]),
    ("a_negative_strides", dict(a=np.zeros((M, KH), np.uint8)[::-1]), ValueError, ["'a'"]),
    ("sfa_wrong_cols", dict(sfa=np.zeros((M, KB - 1), np.uint8)), ValueError, ["'sfa'", f"({M}, {KB})"]),
    ("sfa_wrong_rows", dict(sfa=np.zeros((M + 1, KB), np.uint8)), ValueError, ["'sfa'"]),
    ("sfb_wrong_rank", dict(sfb=np.zeros((1, N, KB), np.uint8)), ValueError, ["'sfb'"]),
    ("sfa_not_unit_stride", dict(sfa=transposed_view(M, KB)), ValueError, ["'sfa'"]),
    ("sfa_blocked_byte_count", dict(sfa=np.zeros(R.blocked_bytes(M, K) - 4, np.uint8),
                                    sfb=np.zeros(R.blocked_bytes(N, K), np.uint8), sf_layout="blocked"),
     ValueError, ["'sfa'", str(R.blocked_bytes(M, K))]),
    ("sfb_blocked_byte_count", dict(sfa=np.zeros(R.blocked_bytes(M, K), np.uint8),
                                    sfb=np.zeros(R.blocked_bytes(N, K) + 512, np.uint8), sf_layout="blocked"),
     ValueError, ["'sfb'"]),
    ("batch_mismatch", dict(a=np.zeros((2, M, KH), np.uint8), sfa=np.zeros((2, M, KB), np.uint8),
                            b=np.zeros((3, N, KH), np.uint8), sfb=np.zeros((3, N, KB), np.uint8),
                            out=poisoned((2, M, N), np.float16)), ValueError, ["batch", "'a'", "'b'"]),
    ("batched_vs_not", dict(a=np.zeros((2, M, KH), np.uint8), sfa=np.zeros((2, M, KB), np.uint8),
                            out=poisoned((2, M, N), np.float16)), ValueError, ["'a'", "'b'"]),
    ("out_wrong_shape", dict(out=poisoned((M, N - 1), np.float16)), ValueError, ["'out'", f"({M}, {N})"]),
    ("out_missing_batch", dict(out=poisoned((1, M, N), np.float16)), ValueError, ["'out'"]),
    ("out_float64", dict(out=poisoned((M, N), np.float64)), TypeError, ["'out'", "float64"]),
    ("out_int32", dict(out=poisoned((M, N), np.int32)), TypeError, ["'out'"]),
    ("out_uint8", dict(out=poisoned((M, N), np.uint8)), TypeError, ["'out'"]),
    ("bad_sf_layout", dict(sf_layout="swizzled"), ValueError, ["sf_layout", "swizzled"]),
    ("bad_out_dtype_with_out", dict(out_dtype="float8"), ValueError, ["out_dtype"]),
    ("alpha_float64_array", dict(alpha=np.array([1.0])), ValueError, ["alpha"]),
    ("alpha_two_elements", dict(alpha=np.array([1.0, 2.0], np.float32)), ValueError, ["alpha"]),
    ("alpha_string", dict(alpha="1.0"), TypeError, ["alpha"]),
    ("portable_backend_on_host", dict(backend="portable"), ValueError, ["backend", "portable"]),
    ("sm90a_backend_on_host", dict(backend="sm90a"), ValueError, ["backend", "sm90a"]),
    ("unknown_backend", dict(backend="tpu"), ValueError, ["backend", "tpu"]),
    ("a_not_an_array", dict(a=[[0] * KH] * M), TypeError, ["array"]),
]


@pytest.mark.parametrize("changes,exc,names", [c[1:] for c in GEMM_CASES], ids=[c[0] for c in GEMM_CASES])
def test_gemm_rejects(ops, changes, exc, names):
    args = {**ops, **changes}
    before = raw(args["out"])
    expect_error(exc, call_gemm(ops, **changes), *names)
    assert raw(args["out"]) == before, "out was written although validation failed"


def test_out_aliasing_an_input(rng):
    buf = np.zeros(M * KH, np.uint8)                      # a and out share these bytes
    a = buf.reshape(M, KH)
    out = buf.view(np.float16).reshape(M, N)               # M*N*2 == M*KH bytes
    assert out.nbytes == a.nbytes
    sfa = R.random_scales((M, KB), rng)
    qb, sfb = R.make_operand(N, K, None, "linear", rng)
    a[...] = R.random_fp4((M, KH), rng)
    before = raw(buf)
    expect_error(ValueError, lambda: nvfp4.gemm(a, sfa, qb, sfb, out=out), "'out'", "'a'", "overlap")
    assert raw(buf) == before
    # partial overlap with a scale tensor
    big = np.zeros(4096, np.uint8)
    sfa2 = big[:M * KB].reshape(M, KB)
    sfa2[...] = sfa
    out2 = big[M * KB - 8: M * KB - 8 + M * N * 4].view(np.float32).reshape(M, N)
    expect_error(ValueError, lambda: nvfp4.gemm(a.copy(), sfa2, qb, sfb, out=out2), "'out'", "'sfa'")


def test_grouped_outputs_aliasing_name_the_groups(rng):
    probs = [R.make_operand(16, K, None, "linear", rng) + R.make_operand(N, K, None, "linear", rng) for _ in range(3)]
    a, sa, b, sb = ([p[i] for p in probs] for i in range(4))
    buf = np.zeros(3 * 16 * N, np.float32)
    outs = [buf[:16 * N].reshape(16, N), buf[16 * N:32 * N].reshape(16, N), buf[8 * N:24 * N].reshape(16, N)]
    expect_error(ValueError, lambda: nvfp4.grouped_gemm(a, sa, b, sb, out=outs), "outputs", "group 2", "overlap")
    assert not buf.any(), "a refused call wrote its outputs"
    # group 1's output over group 0's tokens
    a0 = np.zeros(16 * N * 16, np.uint8)
    a[0] = a0[:16 * KH].reshape(16, KH)
    outs = [np.zeros((16, N), np.float32), a0.view(np.float32).reshape(16, 4 * N)[:, :N], np.zeros((16, N), np.float32)]
    expect_error(ValueError, lambda: nvfp4.grouped_gemm(a, sa, b, sb, out=outs), "'out' of group 1", "'a' of group 0")


def test_misaligned_output_pointer(ops):
    buf = np.zeros(M * N * 2 + 1, np.uint8)
    out = np.frombuffer(buf.data, dtype=np.float16, count=M * N, offset=1).reshape(M, N)
    assert out.ctypes.data % 2 == 1
    expect_error(ValueError, call_gemm(ops, out=out), "'out'", "aligned")


# ---------------------------------------------------------------------------
# gemv, dual_gemm
# ---------------------------------------------------------------------------

def test_gemv_rejects(rng):
    qa, sfa = R.make_operand(M, K, None, "linear", rng)
    qb, sfb = R.make_operand(1, K, None, "linear", rng, vector=True)
    out = poisoned((M,), np.float32)
    before = raw(out)
    cases = [
        (dict(b=qb[None, :]), ValueError, ["'a'", "'b'"]),                       # batched vector vs plain a
        (dict(b=qb[:16], sfb=sfb[:2]), ValueError, ["K mismatch"]),
        (dict(sfb=sfb[None, :]), ValueError, ["'sfb'"]),
        (dict(out=poisoned((M, 1), np.float32)), ValueError, ["'out'"]),
        (dict(b=qb.astype(np.float16)), TypeError, ["'b'"]),
    ]
    for changes, exc, names in cases:
        args = dict(a=qa, sfa=sfa, b=qb, sfb=sfb, out=out, **{})
        args.update(changes)
        expect_error(exc, lambda: nvfp4.gemv(args["a"], args["sfa"], args["b"], args["sfb"], out=args["out"]), *names)
        assert raw(out) == before


def test_dual_gemm_rejects(rng):
    qa, sfa = R.make_operand(M, K, None, "linear", rng)
    qb1, sfb1 = R.make_operand(N, K, None, "linear", rng)
    qb2, sfb2 = R.make_operand(N, K, None, "linear", rng)
    out = poisoned((M, N), np.float16)
    before = raw(out)
    base = dict(a=qa, sfa=sfa, b1=qb1, sfb1=sfb1, b2=qb2, sfb2=sfb2)
    cases = [
        (dict(activation="relu"), ValueError, ["activation", "relu"]),
        (dict(b2=qb2[:N - 1], sfb2=sfb2[:N - 1]), ValueError, ["b1", "b2"]),
        (dict(b2=np.zeros((N, KH + 16), np.uint8), sfb2=np.zeros((N, KB + 2), np.uint8)), ValueError,
         ["K mismatch", "'b2'"]),
        (dict(sfb2=sfb2[:, :2]), ValueError, ["'sfb2'"]),
        (dict(sfb1=sfb1.astype(np.float32)), TypeError, ["'sfb1'"]),
        (dict(alpha2=np.array([1.0, 1.0], np.float32)), ValueError, ["alpha2"]),
        (dict(alpha1="x"), TypeError, ["alpha1"]),
        (dict(backend="portable"), ValueError, ["backend"]),
    ]
    for changes, exc, names in cases:
        args = {**base, **changes}
        kw = {k: v for k, v in args.items() if k not in base}
        expect_error(exc, lambda: nvfp4.dual_gemm(args["a"], args["sfa"], args["b1"], args["sfb1"], args["b2"],
                                                  args["sfb2"], out=out, **kw), *names)
        assert raw(out) == before


# ---------------------------------------------------------------------------
# grouped
# ---------------------------------------------------------------------------

def _groups(rng, sizes=((8, 16, 64), (5, 7, 32))):
    A = [R.make_operand(m, k, None, "linear", rng) for m, n, k in sizes]
    B = [R.make_operand(n, k, None, "linear", rng) for m, n, k in sizes]
    outs = [poisoned((m, n), np.float16) for m, n, k in sizes]
    return [a[0] for a in A], [a[1] for a in A], [b[0] for b in B], [b[1] for b in B], outs


def test_grouped_gemm_list_length_mismatch(rng):
    a, sa, b, sb, outs = _groups(rng)
    before = [raw(o) for o in outs]
    expect_error(ValueError, lambda: nvfp4.grouped_gemm(a, sa, b, sb[:1], out=outs), "sfb", "same length")
    expect_error(ValueError, lambda: nvfp4.grouped_gemm(a, sa, b, sb, out=outs[:1]), "out", "same length")
    expect_error(ValueError, lambda: nvfp4.grouped_gemm(a, sa, b, sb, alphas=[1.0], out=outs), "alphas")
    assert [raw(o) for o in outs] == before


def test_grouped_gemm_bad_group_names_it_and_writes_nothing(rng):
    a, sa, b, sb, outs = _groups(rng)
    before = [raw(o) for o in outs]
    sb_bad = [sb[0], sb[1][:, :1]]
    expect_error(ValueError, lambda: nvfp4.grouped_gemm(a, sa, b, sb_bad, out=outs), "group 1", "'sfb'")
    a_bad = [a[0], np.zeros((2, 5, 16), np.uint8)]
    expect_error(ValueError, lambda: nvfp4.grouped_gemm(a_bad, sa, b, sb, out=outs), "group 1")
    outs_bad = [outs[0], poisoned((5, 6), np.float16)]
    expect_error(ValueError, lambda: nvfp4.grouped_gemm(a, sa, b, sb, out=outs_bad), "group 1", "'out'")
    assert [raw(o) for o in outs] == before, "group 0 was computed although group 1 is invalid"


def _packed(rng, Ms=(3, 0, 5), n=16, k=64):
    G, total = len(Ms), sum(Ms)
    qa, sfa = R.make_operand(total, k, None, "linear", rng)
    qb, sfb = R.make_operand(n, k, G, "linear", rng)
    offsets = np.concatenate([[0], np.cumsum(Ms)]).astype(np.int32)
    return qa, sfa, qb, sfb, offsets, poisoned((total, n), np.float32)


@pytest.mark.parametrize("case", ["short", "long", "int64", "float32", "2d", "decreasing", "not_from_zero",
                                  "not_to_total", "alphas_len", "alphas_dtype", "blocked_b", "a_batched"])
def test_grouped_gemm_packed_rejects(case, rng):
    qa, sfa, qb, sfb, off, out = _packed(rng)
    alphas = None
    exc, names = ValueError, ["'offsets'"]
    if case == "short":
        off = off[:-1]
    elif case == "long":
        off = np.append(off, off[-1])
    elif case == "int64":
        off, exc = off.astype(np.int64), TypeError
    elif case == "float32":
        off, exc = off.astype(np.float32), TypeError
    elif case == "2d":
        off = off[None, :]
    elif case == "decreasing":
        off, names = np.array([0, 6, 3, 8], np.int32), ["offsets", "non-decreasing"]
    elif case == "not_from_zero":
        off, names = np.array([1, 3, 3, 8], np.int32), ["offsets", "start at 0"]
    elif case == "not_to_total":
        off, names = np.array([0, 3, 3, 7], np.int32), ["offsets", "8"]
    elif case == "alphas_len":
        alphas, names = np.ones(2, np.float32), ["'alphas'"]
    elif case == "alphas_dtype":
        alphas, exc, names = np.ones(3, np.float64), TypeError, ["'alphas'"]
    elif case == "blocked_b":
        sfb, names = np.zeros((3, R.blocked_bytes(16, 64)), np.uint8), ["'sfb'"]
    elif case == "a_batched":
        qa, sfa, names = qa[None], sfa[None], ["'a'"]
    before = raw(out)
    expect_error(exc, lambda: nvfp4.grouped_gemm_packed(qa, sfa, qb, sfb, off, alphas=alphas, out=out), *names)
    assert raw(out) == before


# ---------------------------------------------------------------------------
# quantize / dequantize / swizzle
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("x,exc,names", [
    (np.zeros((4, 64), np.float64), TypeError, ["'x'", "float64"]),
    (np.zeros((4, 64), np.int32), TypeError, ["'x'"]),
    (np.zeros((4, 48), np.float32), ValueError, ["'x'", "multiple of 32"]),
    (np.zeros((4, 0), np.float32), ValueError, ["'x'"]),
    (np.zeros((64, 4), np.float32).T, ValueError, ["'x'", "stride"]),
], ids=["float64", "int32", "k48", "k0", "transposed"])
def test_quantize_rejects(x, exc, names):
    expect_error(exc, lambda: nvfp4.quantize(x), *names)


@pytest.mark.parametrize("gs,exc", [(np.ones(2, np.float32), ValueError), ("1.0", TypeError), (True, TypeError)])
def test_quantize_bad_global_scale(gs, exc):
    expect_error(exc, lambda: nvfp4.quantize(np.zeros((4, 64), np.float32), global_scale=gs), "global_scale")


def test_quantize_bad_layout():
    expect_error(ValueError, lambda: nvfp4.quantize(np.zeros((4, 64), np.float32), sf_layout="tiled"), "sf_layout")


def test_dequantize_rejects(rng):
    q = R.random_fp4((4, 32), rng)
    sf = R.random_scales((4, 4), rng)
    out = poisoned((4, 64), np.float32)
    before = raw(out)
    cases = [
        (lambda: nvfp4.dequantize(q, sf[:, :3], out=out), ValueError, ["'sf'"]),
        (lambda: nvfp4.dequantize(q, sf, out=poisoned((4, 32), np.float32)), ValueError, ["'out'"]),
        (lambda: nvfp4.dequantize(q, sf, out=out[:, ::-1]), ValueError, ["'out'"]),
        (lambda: nvfp4.dequantize(q, sf, out=out.T.copy().T), ValueError, ["'out'"]),
        (lambda: nvfp4.dequantize(q.astype(np.float32), sf, out=out), TypeError, ["'q'"]),
        (lambda: nvfp4.dequantize(q[:, :24], sf[:, :3], out=out[:, :48]), ValueError, ["'q'", "multiple of 32"]),
        (lambda: nvfp4.dequantize(q, sf, sf_layout="blocked", out=out), ValueError, ["'sf'", "blocked"]),
        (lambda: nvfp4.dequantize(q, sf, global_scale=np.ones(2, np.float32), out=out), ValueError,
         ["global_scale"]),
        (lambda: nvfp4.dequantize(q, sf, dtype="int8"), ValueError, ["dequantize: dtype", "int8"]),
        (lambda: nvfp4.dequantize(q, sf, backend="portable", out=out), ValueError, ["backend"]),
    ]
    for fn, exc, names in cases:
        expect_error(exc, fn, *names)
        assert raw(out) == before


def test_swizzle_rejects(rng):
    sf = R.random_scales((7, 6), rng)
    out = poisoned((R.blocked_bytes(7, 96),), np.uint8)
    before = raw(out)
    expect_error(ValueError, lambda: nvfp4.swizzle_scales(sf[0], out=out), "'sf'")
    expect_error(TypeError, lambda: nvfp4.swizzle_scales(sf.astype(np.float32), out=out), "'sf'")
    expect_error(ValueError, lambda: nvfp4.swizzle_scales(sf, out=out[:-1]), "'out'")
    expect_error(ValueError, lambda: nvfp4.swizzle_scales(sf, out=out, backend="portable"), "backend")
    assert raw(out) == before
    expect_error(ValueError, lambda: nvfp4.unswizzle_scales(out, 7, 100), "k")
    expect_error(ValueError, lambda: nvfp4.unswizzle_scales(out, 129, 96), "'sf_blocked'")


def test_describe_arrays_hook():
    """bench/overhead.py's floor probe: describes arrays as an op does (numpy through nanobind's
    DLPack import here) and rejects what an op would reject, naming the argument."""
    ext = nvfp4._nvfp4_ext
    assert ext._describe_arrays([np.zeros(4, np.uint8), np.zeros((2, 3), np.float32)]) == 2
    assert ext._describe_arrays(()) == 0
    with pytest.raises(TypeError, match="must be a sequence"):
        ext._describe_arrays(3)
    with pytest.raises(TypeError, match="'arrays'"):
        ext._describe_arrays([np.zeros(4, np.complex64)])


def test_read_arrays_hook():
    """bench/overhead.py's lower floor probe: only reads each array's DLPack view (returns the
    ranks' sum, so the reads cannot be skipped), and rejects what is not an array."""
    ext = nvfp4._nvfp4_ext
    assert ext._read_arrays([np.zeros(4, np.uint8), np.zeros((2, 3), np.float32)]) == 3
    assert ext._read_arrays(()) == 0
    with pytest.raises(TypeError, match="must be a sequence"):
        ext._read_arrays(3)
    with pytest.raises(TypeError, match="expected a DLPack array"):
        ext._read_arrays([object()])
