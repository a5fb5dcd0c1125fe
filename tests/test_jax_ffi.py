"""nvfp4.jax: every op as an XLA FFI custom call, under jax.jit and eagerly.

CPU: the jitted ops run the library's CPU backend, so they must equal nvfp4's eager
result on numpy copies of the same inputs bit for bit (and the float64 reference where a
tolerance is needed, e.g. bfloat16 outputs). Shapes come from jax.eval_shape, bad inputs
raise the library's ValueError / TypeError at trace time. GPU tests (marker `gpu`) run
the CUDA handlers against the float64 reference and, with torch, the eager GPU result."""

from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import nvfp4  # noqa: E402
import nvfp4.jax as nj  # noqa: E402
from nvfp4 import reference as R  # noqa: E402
from _util import assert_matches, assert_same_floats, expect_error, interesting_input, pow2_alpha  # noqa: E402

LAYOUTS = ["linear", "blocked"]
CPU = jax.devices("cpu")[0]


def J(x):
    """A numpy array as a JAX array on the CPU."""
    return jax.device_put(np.asarray(x), CPU)


def same(out, ref):
    """Bitwise equality of a JAX result and an eager (numpy) result."""
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    if out.dtype.kind == "f":
        assert_same_floats(out, ref)
    else:
        assert out.dtype == ref.dtype and np.array_equal(out, ref)


def operand(rows, k, L, layout, rng, **kw):
    return R.make_operand(rows, k, L, layout, rng, **kw)


def jit(fn, **static):
    return jax.jit(functools.partial(fn, **static))


# ---------------------------------------------------------------------------
# GEMV / GEMM / dual
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,K,L", [(7, 96, 3), (129, 160, None), (1, 32, None)])
def test_gemv(M, K, L, layout, rng):
    qa, sfa = operand(M, K, L, layout, rng)
    qb, sfb = operand(1, K, L, layout, rng, vector=True)
    alpha = pow2_alpha(R.gemv_ref(qa, sfa, qb, sfb, sf_layout=layout))
    out = jit(nj.gemv, alpha=alpha, sf_layout=layout)(J(qa), J(sfa), J(qb), J(sfb))
    assert out.dtype == jnp.float16 and out.shape == ((M,) if L is None else (L, M))
    same(out, nvfp4.gemv(qa, sfa, qb, sfb, alpha=alpha, sf_layout=layout))


@pytest.mark.parametrize("out_dtype", ["float16", "float32"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", [(3, 200, 96, None), (1, 7, 32, None), (5, 130, 64, 2), (130, 64, 256, None)])
def test_gemm(M, N, K, L, layout, out_dtype, rng):
    qa, sfa = operand(M, K, L, layout, rng)
    qb, sfb = operand(N, K, L, layout, rng)
    ref = R.gemm_ref(qa, sfa, qb, sfb, sf_layout=layout)
    alpha = pow2_alpha(ref)
    out = jit(nj.gemm, alpha=alpha, sf_layout=layout, out_dtype=out_dtype)(J(qa), J(sfa), J(qb), J(sfb))
    assert out.dtype == jnp.dtype(out_dtype) and out.shape == ((M, N) if L is None else (L, M, N))
    same(out, nvfp4.gemm(qa, sfa, qb, sfb, alpha=alpha, sf_layout=layout, out_dtype=out_dtype))
    assert_matches(np.asarray(out), alpha * ref)


def test_gemm_bfloat16_eager_and_alpha_operand(rng):
    M, N, K = 3, 200, 96
    qa, sfa = operand(M, K, None, "linear", rng)
    qb, sfb = operand(N, K, None, "linear", rng)
    ref = R.gemm_ref(qa, sfa, qb, sfb)
    alpha = pow2_alpha(ref)
    eager = nj.gemm(J(qa), J(sfa), J(qb), J(sfb), alpha=alpha, out_dtype="bfloat16")   # no jit
    assert eager.dtype == jnp.bfloat16
    assert_matches(np.asarray(eager).astype(np.float32), alpha * ref, "bfloat16")
    # alpha as a traced 1-element float32 operand: same bits as the baked float
    f = jax.jit(lambda a, sa, b, sb, al: nj.gemm(a, sa, b, sb, alpha=al, out_dtype="float32"))
    out = f(J(qa), J(sfa), J(qb), J(sfb), J(np.array([alpha], np.float32)))
    same(out, nvfp4.gemm(qa, sfa, qb, sfb, alpha=alpha, out_dtype="float32"))


def test_gemm_fp4_and_e4m3_dtypes(rng):
    """float4_e2m1fn operands (K values per row) and float8_e4m3fn scales."""
    if nj._FLOAT4 is None:
        pytest.skip("this jax has no float4_e2m1fn")
    M, N, K = 5, 40, 64
    qa, sfa = operand(M, K, None, "linear", rng)
    qb, sfb = operand(N, K, None, "linear", rng)
    alpha = pow2_alpha(R.gemm_ref(qa, sfa, qb, sfb))

    def as_f4(q):
        return jax.lax.bitcast_convert_type(J(q), nj._FLOAT4).reshape(q.shape[0], -1)

    a4, b4 = as_f4(qa), as_f4(qb)
    assert a4.shape == (M, K)
    s8a, s8b = J(sfa).view(jnp.float8_e4m3fn), J(sfb).view(jnp.float8_e4m3fn)
    out = jit(nj.gemm, alpha=alpha)(a4, s8a, b4, s8b)
    same(out, nvfp4.gemm(qa, sfa, qb, sfb, alpha=alpha))
    deq = jax.jit(nj.dequantize)(a4, s8a)
    same(deq, nvfp4.dequantize(qa, sfa))


def test_gemm_blocked_6d_scale_view(rng):
    M, N, K, L = 3, 200, 96, 2
    qa, sfa_lin = operand(M, K, L, "linear", rng)
    qb, sfb_lin = operand(N, K, L, "linear", rng)
    sfa6 = R.blocked_6d_view(R.to_blocked_6d(sfa_lin), M, K)
    sfb6 = R.blocked_6d_view(R.to_blocked_6d(sfb_lin), N, K)
    alpha = pow2_alpha(R.gemm_ref(qa, sfa_lin, qb, sfb_lin))
    out = jit(nj.gemm, alpha=alpha, sf_layout="blocked")(J(qa), J(np.ascontiguousarray(sfa6)), J(qb),
                                                        J(np.ascontiguousarray(sfb6)))
    same(out, nvfp4.gemm(qa, sfa_lin, qb, sfb_lin, alpha=alpha))


@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", [(3, 200, 96, None), (5, 17, 64, 2)])
def test_dual_gemm(M, N, K, L, layout, activation, rng):
    qa, sfa = operand(M, K, L, layout, rng)
    qb1, sfb1 = operand(N, K, L, layout, rng)
    qb2, sfb2 = operand(N, K, L, layout, rng)
    a1 = pow2_alpha(R.gemm_ref(qa, sfa, qb1, sfb1, sf_layout=layout), target=3.0)
    a2 = pow2_alpha(R.gemm_ref(qa, sfa, qb2, sfb2, sf_layout=layout), target=16.0)
    args = (J(qa), J(sfa), J(qb1), J(sfb1), J(qb2), J(sfb2))
    eager = nvfp4.dual_gemm(qa, sfa, qb1, sfb1, qb2, sfb2, alpha1=a1, alpha2=a2, activation=activation,
                            sf_layout=layout)
    out = jit(nj.dual_gemm, alpha1=a1, alpha2=a2, activation=activation, sf_layout=layout)(*args)
    same(out, eager)
    # alpha2 as an operand, alpha1 baked
    f = jax.jit(lambda al2, *a: nj.dual_gemm(*a, alpha1=a1, alpha2=al2, activation=activation, sf_layout=layout))
    same(f(J(np.array([a2], np.float32)), *args), eager)


# ---------------------------------------------------------------------------
# Grouped (list and packed)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("alphas", [None, "list", "array"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_grouped_gemm(layout, alphas, rng):
    Ms, Ns, Ks = [1, 7, 0, 129], [129, 1, 5, 7], [32, 96, 64, 64]
    A = [operand(m, k, None, layout, rng, lo=0.25, hi=1.0) for m, k in zip(Ms, Ks)]
    B = [operand(n, k, None, layout, rng, lo=0.25, hi=1.0) for n, k in zip(Ns, Ks)]
    args = ([a[0] for a in A], [a[1] for a in A], [b[0] for b in B], [b[1] for b in B])
    al = None if alphas is None else [0.5, 0.25, 2.0, 0.125]
    eager = nvfp4.grouped_gemm(*args, alphas=al, sf_layout=layout, out_dtype="float32")
    jargs = [[J(x) for x in lst] for lst in args]
    jal = J(np.array(al, np.float32)) if alphas == "array" else (None if al is None else tuple(al))
    outs = jax.jit(lambda al_, *lists: nj.grouped_gemm(*lists, alphas=al_, sf_layout=layout, out_dtype="float32"),
                   static_argnums=() if alphas == "array" else (0,))(jal, *jargs)
    assert isinstance(outs, list) and [o.shape for o in outs] == [(m, n) for m, n in zip(Ms, Ns)]
    for o, e in zip(outs, eager):
        same(o, e)
    assert nj.grouped_gemm([], [], [], []) == []


@pytest.mark.parametrize("alphas", [None, "array"])
@pytest.mark.parametrize("Ms,N,K", [([5, 0, 130, 1], 64, 96), ([0, 7, 0], 129, 32)])
def test_grouped_gemm_packed(Ms, N, K, alphas, rng):
    G, total = len(Ms), sum(Ms)
    qa, sfa = operand(total, K, None, "linear", rng, lo=0.25, hi=2)
    qb, sfb = operand(N, K, G, "linear", rng, lo=0.25, hi=2)
    offsets = np.concatenate([[0], np.cumsum(Ms)]).astype(np.int32)
    al = rng.choice([0.25, 0.5, 0.125], size=G).astype(np.float32) if alphas else None
    out = jax.jit(nj.grouped_gemm_packed)(J(qa), J(sfa), J(qb), J(sfb), J(offsets),
                                          alphas=None if al is None else J(al))
    assert out.shape == (total, N) and out.dtype == jnp.float16
    same(out, nvfp4.grouped_gemm_packed(qa, sfa, qb, sfb, offsets, alphas=al))


def test_grouped_gemm_packed_bad_offsets_fail_at_run_time(rng):
    """Offsets are data: a CPU handler rejects bad ones with the library's message."""
    qa, sfa = operand(6, 32, None, "linear", rng)
    qb, sfb = operand(8, 32, 2, "linear", rng)
    with pytest.raises(Exception, match="offsets"):
        jax.block_until_ready(jax.jit(nj.grouped_gemm_packed)(J(qa), J(sfa), J(qb), J(sfb),
                                                              J(np.array([0, 4, 5], np.int32))))


# ---------------------------------------------------------------------------
# Quantize / dequantize / scale layouts
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("gs", [None, 0.01, "array"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(32,), (7, 96), (3, 129, 160), (2, 2, 3, 32)])
def test_quantize(shape, dtype, layout, gs, rng):
    x32 = interesting_input(shape, np.float32, rng)
    x = J(x32).astype(dtype)
    x32 = np.asarray(x.astype(jnp.float32))             # the same values (exact upcast)
    given = None if gs is None else (gs if gs != "array" else J(np.array([0.02], np.float32)))
    q, sf, g = jax.jit(lambda x_, g_: nj.quantize(x_, global_scale=g_, sf_layout=layout))(x, given)
    eager_in = x32 if dtype != "float16" else x32.astype(np.float16)
    eager_gs = None if gs is None else (0.02 if gs == "array" else gs)
    qe, sfe, ge = nvfp4.quantize(eager_in, global_scale=eager_gs, sf_layout=layout)
    same(q, qe)
    same(sf, sfe)
    same(np.asarray(g).reshape(-1), np.asarray(ge, np.float32).reshape(-1))
    if gs == "array":
        assert g is given or g.shape == (1,)


def test_quantize_given_array_is_returned_as_is(rng):
    x = J(rng.standard_normal((4, 64)).astype(np.float32))
    gs = J(np.array([0.5], np.float32))
    assert nj.quantize(x, global_scale=gs)[2] is gs


@pytest.mark.parametrize("gs", [1.0, 0.3, "array"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("qshape", [(48,), (7, 48), (3, 5, 16)])
def test_dequantize(qshape, layout, dtype, gs, rng):
    rows = qshape[-2] if len(qshape) >= 2 else 1
    L = qshape[0] if len(qshape) == 3 else None
    k = 2 * qshape[-1]
    if len(qshape) == 1:
        q, sf = operand(1, k, None, layout, rng, vector=True)
    else:
        q, sf = operand(rows, k, L, layout, rng)
    g = 0.75 if gs == "array" else gs
    gj = J(np.array([g], np.float32)) if gs == "array" else gs
    out = jax.jit(lambda q_, s_, g_: nj.dequantize(q_, s_, global_scale=g_, sf_layout=layout, dtype=dtype))(
        J(q), J(sf), gj)
    assert out.shape == qshape[:-1] + (k,) and out.dtype == jnp.dtype(dtype)
    ref32 = nvfp4.dequantize(q, sf, global_scale=g, sf_layout=layout, dtype="float32")
    if dtype == "bfloat16":   # computed in fp32, rounded once to bf16
        same(out, np.asarray(J(ref32).astype(jnp.bfloat16)))
    else:
        same(out, nvfp4.dequantize(q, sf, global_scale=g, sf_layout=layout, dtype=dtype))


@pytest.mark.parametrize("shape", [(3, 6), (2, 129, 10), (130, 1)])
def test_swizzle_unswizzle(shape, rng):
    sf = R.random_scales(shape, rng)
    rows, k = shape[-2], 16 * shape[-1]
    blk = jax.jit(nj.swizzle_scales)(J(sf))
    same(blk, nvfp4.swizzle_scales(sf))
    back = jax.jit(nj.unswizzle_scales, static_argnums=(1, 2))(blk, rows, k)
    same(back, sf)
    # the gpu-mode 6-D view of the same bytes
    view6 = np.ascontiguousarray(R.blocked_6d_view(np.asarray(blk), rows, k))
    same(nj.unswizzle_scales(J(view6), rows, k), sf if sf.ndim == 3 else sf[None])


def test_quantize_gemm_pipeline_in_one_jit(rng):
    x = rng.standard_normal((3, 96)).astype(np.float32)
    w = rng.standard_normal((200, 96)).astype(np.float32)

    @jax.jit
    def f(x, w):
        qx, sx, gx = nj.quantize(x)
        qw, sw, gw = nj.quantize(w, sf_layout="blocked")
        sx = nj.swizzle_scales(sx)
        return nj.gemm(qx, sx, qw, sw, alpha=gx * gw, sf_layout="blocked", out_dtype="float32")

    qx, sx, gx = nvfp4.quantize(x, sf_layout="blocked")
    qw, sw, gw = nvfp4.quantize(w, sf_layout="blocked")
    same(f(J(x), J(w)), nvfp4.gemm(qx, sx, qw, sw, alpha=float(gx[0] * gw[0]), sf_layout="blocked",
                                   out_dtype="float32"))


def test_vmap_runs_sequentially(rng):
    qa, sfa = operand(4, 64, 3, "linear", rng)
    qb, sfb = operand(8, 64, 3, "linear", rng)
    out = jax.vmap(lambda *a: nj.gemm(*a, out_dtype="float32"))(J(qa), J(sfa), J(qb), J(sfb))
    same(out, nvfp4.gemm(qa, sfa, qb, sfb, out_dtype="float32"))


# ---------------------------------------------------------------------------
# Shapes under eval_shape, and errors
# ---------------------------------------------------------------------------

def S(shape, dtype="uint8"):
    return jax.ShapeDtypeStruct(shape, jnp.dtype(dtype))


def test_eval_shape():
    es = jax.eval_shape
    assert es(nj.gemm, S((3, 48)), S((3, 6)), S((200, 48)), S((200, 6))) == S((3, 200), "float16")
    assert es(functools.partial(nj.gemm, out_dtype="bfloat16"), S((2, 3, 48)), S((2, 3, 6)), S((2, 200, 48)),
              S((2, 200, 6))) == S((2, 3, 200), "bfloat16")
    assert es(nj.gemv, S((7, 48)), S((7, 6)), S((48,)), S((6,))) == S((7,), "float16")
    assert es(nj.dual_gemm, S((3, 48)), S((3, 6)), S((5, 48)), S((5, 6)), S((5, 48)),
              S((5, 6))) == S((3, 5), "float16")
    nb = nvfp4.blocked_scale_bytes(3, 96)
    assert es(functools.partial(nj.gemm, sf_layout="blocked"), S((3, 48)), S((nb,)), S((200, 48)),
              S((nvfp4.blocked_scale_bytes(200, 96),))) == S((3, 200), "float16")
    assert es(nj.grouped_gemm, [S((3, 16))], [S((3, 2))], [S((5, 16))], [S((5, 2))]) == [S((3, 5), "float16")]
    assert es(nj.grouped_gemm_packed, S((9, 48)), S((9, 6)), S((2, 5, 48)), S((2, 5, 6)),
              S((3,), "int32")) == S((9, 5), "float16")
    q, sf, g = es(nj.quantize, S((2, 2, 3, 96), "bfloat16"))
    assert (q, sf, g) == (S((2, 2, 3, 48)), S((2, 2, 3, 6)), S((1,), "float32"))
    q, sf, g = es(functools.partial(nj.quantize, sf_layout="blocked"), S((2, 3, 96), "float32"))
    assert sf == S((2, nb))
    assert es(nj.dequantize, S((7, 48)), S((7, 6))) == S((7, 96), "float32")
    assert es(nj.swizzle_scales, S((3, 6))) == S((nb,))
    assert es(lambda s: nj.unswizzle_scales(s, 3, 96), S((2, nb))) == S((2, 3, 6))


def test_errors_at_trace_time(rng):
    a, sa = S((3, 48)), S((3, 6))
    b, sb = S((200, 48)), S((200, 6))
    es = jax.eval_shape
    expect_error(ValueError, lambda: es(nj.gemm, a, sa, S((200, 32)), S((200, 4))), "K mismatch", "'a'", "'b'")
    expect_error(TypeError, lambda: es(nj.gemm, S((3, 48), "float32"), sa, b, sb), "'a'")
    expect_error(TypeError, lambda: es(nj.gemm, a, S((3, 6), "complex64"), b, sb), "'sfa'")
    expect_error(ValueError, lambda: es(nj.gemm, a, S((3, 7)), b, sb), "'sfa'")
    expect_error(ValueError, lambda: es(nj.gemm, S((3, 40)), sa, b, sb), "'a'", "multiple of 32")
    expect_error(ValueError, lambda: es(nj.gemv, a, sa, S((40,)), S((5,))), "'b'")
    expect_error(ValueError, lambda: es(functools.partial(nj.gemm, sf_layout="blocked"), a, sa, b, sb), "'sfa'")
    expect_error(ValueError, lambda: es(nj.dual_gemm, a, sa, b, sb, S((7, 48)), S((7, 6))), "b1", "b2")
    expect_error(ValueError, lambda: es(nj.grouped_gemm_packed, S((9, 48)), S((9, 6)), S((2, 5, 48)),
                                        S((2, 5, 6)), S((4,), "int32")), "'offsets'")
    expect_error(TypeError, lambda: es(nj.grouped_gemm_packed, S((9, 48)), S((9, 6)), S((2, 5, 48)),
                                       S((2, 5, 6)), S((3,), "int16")), "'offsets'")
    expect_error(ValueError, lambda: es(nj.grouped_gemm, [a, a], [sa], [b, b], [sb, sb]), "same length")
    expect_error(ValueError, lambda: es(nj.quantize, S((3, 40), "float32")), "'x'", "multiple of 32")
    expect_error(TypeError, lambda: es(nj.quantize, S((3, 64), "int32")), "'x'")
    expect_error(ValueError, lambda: es(nj.dequantize, S((7, 48)), S((7, 5))), "'sf'")
    expect_error(ValueError, lambda: es(nj.swizzle_scales, S((7,))), "'sf'")
    expect_error(ValueError, lambda: nj.unswizzle_scales(J(np.zeros(512, np.uint8)), 3, 40), "multiple of 16")
    expect_error(ValueError, lambda: es(lambda s: nj.unswizzle_scales(s, 3, 96), S((100,))), "'sf_blocked'")
    # options
    expect_error(ValueError, lambda: es(functools.partial(nj.gemm, sf_layout="tiled"), a, sa, b, sb), "sf_layout")
    expect_error(ValueError, lambda: es(functools.partial(nj.gemm, out_dtype="int8"), a, sa, b, sb), "out_dtype")
    expect_error(ValueError, lambda: es(functools.partial(nj.dual_gemm, activation="relu"), a, sa, b, sb, b, sb),
                 "activation")
    expect_error(ValueError, lambda: es(functools.partial(nj.gemm, backend="fast"), a, sa, b, sb), "backend")
    expect_error(ValueError, lambda: es(functools.partial(nj.gemm, alpha=J(np.ones(2, np.float32))), a, sa, b, sb),
                 "alpha")
    expect_error(TypeError, lambda: es(functools.partial(nj.gemm, alpha="2"), a, sa, b, sb), "alpha")
    # JAX specifics: no out=, no stream=
    expect_error(TypeError, lambda: nj.gemm(J(np.zeros((3, 48), np.uint8)), None, None, None,
                                            out=np.zeros((3, 3))), "out=")
    expect_error(TypeError, lambda: nj.quantize(J(np.zeros((3, 64), np.float32)), stream=1), "stream=")
    # and under jit too (same trace-time check)
    expect_error(ValueError, lambda: jax.jit(nj.gemm)(J(np.zeros((3, 48), np.uint8)), J(np.zeros((3, 6), np.uint8)),
                                                     J(np.zeros((5, 32), np.uint8)),
                                                     J(np.zeros((5, 4), np.uint8))), "K mismatch")


def test_lowered_cpu_module_has_one_custom_call(rng):
    args = [J(np.zeros(s, np.uint8)) for s in ((3, 48), (3, 6), (200, 48), (200, 6))]   # committed to the CPU
    lowered = jax.jit(nj.gemm).lower(*args)
    assert "nvfp4_gemm" in lowered.as_text()
    assert lowered.compile().as_text().count('custom_call_target="nvfp4_gemm"') == 1   # the platform switch is gone


# ---------------------------------------------------------------------------
# GPU (CUDA handlers): skipped without a CUDA device (and a CUDA jaxlib)
# ---------------------------------------------------------------------------

def _cuda():
    try:
        devices = jax.devices("cuda")
    except Exception:
        devices = []
    if not devices:
        pytest.skip("jax has no CUDA device (install jax[cuda13])")
    return devices[0]


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _eager_gpu(fn, *arrays, **kw):
    """The eager nvfp4 op on torch CUDA copies of numpy inputs (None without torch)."""
    torch = _torch_cuda()
    if torch is None:
        return None
    dev = lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda() if isinstance(a, np.ndarray) else a
    res = fn(*[dev(a) for a in arrays], **{k: dev(v) for k, v in kw.items()})  # device alphas too
    torch.cuda.synchronize()
    if isinstance(res, tuple):
        return tuple(r.cpu().numpy() for r in res)
    return res.float().cpu().numpy() if res.dtype == torch.bfloat16 else res.cpu().numpy()


def G(x, dev):
    return jax.device_put(np.asarray(x), dev)


@pytest.mark.gpu
def test_gpu_trace_time_workspace_size():
    """The CUDA branch's workspace result is sized while tracing: on an sm90a device a
    pre-decoded GEMM (M 256, K 7168) needs its tokens as fp16, M * K * 2 bytes. Sized 0,
    the handlers would fall back to the library's cached scratch, which command buffers
    cannot use."""
    dev = _cuda()
    if nvfp4.info()["devices"][0]["backend"] != "sm90a":
        pytest.skip("the expected size is the sm90a pre-decoded path's")
    M, N, K = 256, 4096, 7168
    descs = (("uint8", (M, K // 2)), ("uint8", (M, K // 16)), ("uint8", (N, K // 2)), ("uint8", (N, K // 16)),
             ("float16", (M, N)))
    ordinal = nj._cuda_ordinal()
    assert ordinal is not None and dev is not None
    assert nj._xla.check_gemm(*descs, "linear", device=ordinal) == M * K * 2


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", [(3, 200, 96), (1, 512, 256), (128, 256, 2048), (200, 384, 4096)])
def test_gpu_gemm(M, N, K, layout, rng):
    dev = _cuda()
    qa, sfa = operand(M, K, None, layout, rng)
    qb, sfb = operand(N, K, None, layout, rng)
    ref = R.gemm_ref(qa, sfa, qb, sfb, sf_layout=layout)
    alpha = pow2_alpha(ref)
    f = jit(nj.gemm, alpha=alpha, sf_layout=layout)
    out = f(G(qa, dev), G(sfa, dev), G(qb, dev), G(sfb, dev))
    assert list(out.devices())[0] == dev
    out = np.asarray(out)
    assert_matches(out, alpha * ref)
    eager = _eager_gpu(nvfp4.gemm, qa, sfa, qb, sfb, alpha=alpha, sf_layout=layout)
    if eager is not None:
        same(out, eager)
    # a traced alpha operand (read at kernel time)
    g = jax.jit(lambda al, *a: nj.gemm(*a, alpha=al, sf_layout=layout))
    same(g(G(np.array([alpha], np.float32), dev), G(qa, dev), G(sfa, dev), G(qb, dev), G(sfb, dev)), out)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(5, 200, 96), (256, 512, 1024)])
def test_gpu_dual_gemm(M, N, K, rng):
    dev = _cuda()
    qa, sfa = operand(M, K, None, "linear", rng)
    qb1, sfb1 = operand(N, K, None, "linear", rng)
    qb2, sfb2 = operand(N, K, None, "linear", rng)
    a1 = pow2_alpha(R.gemm_ref(qa, sfa, qb1, sfb1), target=3.0)
    a2 = pow2_alpha(R.gemm_ref(qa, sfa, qb2, sfb2), target=16.0)
    out = np.asarray(jit(nj.dual_gemm, alpha1=a1, alpha2=a2)(*[G(x, dev) for x in (qa, sfa, qb1, sfb1, qb2, sfb2)]))
    assert_matches(out, R.dual_gemm_ref(qa, sfa, qb1, sfb1, qb2, sfb2, alpha1=a1, alpha2=a2))
    eager = _eager_gpu(nvfp4.dual_gemm, qa, sfa, qb1, sfb1, qb2, sfb2, alpha1=a1, alpha2=a2)
    if eager is not None:
        same(out, eager)


@pytest.mark.gpu
@pytest.mark.parametrize("Ms,N,K", [([5, 0, 130, 1], 64, 96), ([40, 56, 384, 512], 256, 1024)])
def test_gpu_grouped_gemm_packed(Ms, N, K, rng):
    dev = _cuda()
    G_, total = len(Ms), sum(Ms)
    qa, sfa = operand(total, K, None, "linear", rng, lo=0.25, hi=2)
    qb, sfb = operand(N, K, G_, "linear", rng, lo=0.25, hi=2)
    offsets = np.concatenate([[0], np.cumsum(Ms)]).astype(np.int32)
    al = rng.choice([0.25, 0.5, 0.125], size=G_).astype(np.float32) / 64
    out = np.asarray(jax.jit(nj.grouped_gemm_packed)(*[G(x, dev) for x in (qa, sfa, qb, sfb, offsets)],
                                                     alphas=G(al, dev)))
    assert_matches(out, R.grouped_gemm_packed_ref(qa, sfa, qb, sfb, offsets, alphas=al))
    eager = _eager_gpu(nvfp4.grouped_gemm_packed, qa, sfa, qb, sfb, offsets, alphas=al)
    if eager is not None:
        same(out, eager)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gpu_quantize(dtype, layout, rng):
    """GPU quantize is bit-identical to the CPU backend (and so to the eager result)."""
    dev = _cuda()
    x = G(interesting_input((3, 129, 160), np.float32, rng), dev).astype(dtype)
    q, sf, g = jax.jit(functools.partial(nj.quantize, sf_layout=layout))(x)
    x32 = np.asarray(x.astype(jnp.float32))
    qe, sfe, ge = nvfp4.quantize(x32 if dtype != "float16" else x32.astype(np.float16), sf_layout=layout)
    same(q, qe)
    same(sf, sfe)
    same(np.asarray(g), np.asarray(ge, np.float32))


@pytest.mark.gpu
def test_gpu_pipeline_repeated(rng):
    """quantize -> swizzle -> gemm -> dequantize in one jit, run several times (XLA may
    put the custom calls into a command buffer): same results every time."""
    dev = _cuda()
    x = G(rng.standard_normal((64, 512)).astype(np.float32), dev)
    w = G(rng.standard_normal((256, 512)).astype(np.float32), dev)

    @jax.jit
    def f(x, w):
        qx, sx, gx = nj.quantize(x)
        qw, sw, gw = nj.quantize(w)
        y = nj.gemm(qx, nj.swizzle_scales(sx), qw, nj.swizzle_scales(sw), alpha=gx * gw, sf_layout="blocked",
                    out_dtype="float32")
        return y, nj.dequantize(qx, sx, global_scale=gx)

    first = [np.asarray(r) for r in f(x, w)]
    for _ in range(5):
        for r, r0 in zip(f(x, w), first):
            same(r, r0)
    qx, sx, gx = nvfp4.quantize(np.asarray(x))
    qw, sw, gw = nvfp4.quantize(np.asarray(w))
    assert_matches(first[0], R.gemm_ref(qx, sx, qw, sw, alpha=float(gx[0] * gw[0])))
    same(first[1], nvfp4.dequantize(qx, sx, global_scale=float(gx[0])))


_COMMAND_BUFFER_SCRIPT = r'''
import os, sys
os.environ["XLA_FLAGS"] = (f"--xla_dump_to={sys.argv[1]} --xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL "
                           "--xla_gpu_graph_min_graph_size=1")
os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
import jax, numpy as np
import nvfp4.jax as nj
dev = jax.devices("gpu")[0]
rng = np.random.default_rng(int(sys.argv[2]))
put = lambda x: jax.device_put(x, dev)

def mlp(x, w1, s1, w3, s3, w2, s2, g1, g3, g2):
    xq, xs, gx = nj.quantize(x)
    h = nj.dual_gemm(xq, xs, w1, s1, w3, s3, alpha1=gx * g1, alpha2=gx * g3, out_dtype="bfloat16")
    hq, hs, gh = nj.quantize(h)
    return nj.gemm(hq, hs, w2, s2, alpha=gh * g2, out_dtype="float32")

ws = [nj.quantize(put((rng.standard_normal(s) * 0.05).astype(np.float32)))
      for s in [(768, 1024), (768, 1024), (1024, 768)]]
weights = [a for w in ws for a in w[:2]] + [w[2] for w in ws]
jitted = jax.jit(mlp)
for trial in range(3):  # the command buffer is recorded once, then updated with new buffers
    x = put(rng.standard_normal((200, 1024)).astype(np.float32))
    got = np.asarray(jitted(x, *weights))
    want = np.asarray(mlp(x, *weights))  # eager: one executable per op
    assert np.array_equal(got, want), f"trial {trial}: jit differs from eager, max {np.abs(got - want).max()}"
print("jit == eager")
print("captured calls:", nj._xla.captured_calls())
'''


@pytest.mark.gpu
def test_gpu_custom_calls_run_inside_xla_command_buffers(tmp_path):
    """With CUSTOM_CALL command buffers enabled, XLA records the nvfp4 custom calls (declared
    command-buffer compatible, scratch as a trace-time-sized result) into a command buffer
    (a CUDA graph: the handlers run while XLA captures its stream), and the jitted gated MLP
    equals the eager ops on new inputs each run."""
    _cuda()
    import re
    import secrets
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", _COMMAND_BUFFER_SCRIPT, str(tmp_path), str(secrets.randbits(32))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "jit == eager" in proc.stdout
    captured = int(re.search(r"captured calls: (\d+)", proc.stdout).group(1))
    assert captured >= 4, f"only {captured} nvfp4 handler calls ran under XLA's command-buffer capture"
