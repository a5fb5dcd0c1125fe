"""The NVFP4 operations (DESIGN.md §2). Thin: allocate outputs in the caller's
framework, resolve the stream, call libnvfp4 (which validates everything)."""

from __future__ import annotations

from . import _nvfp4_ext as _ext
from ._arrays import Context, as_bytes, dlpack_device, host_float, permute, scalar

__all__ = [
    "gemv", "gemm", "dual_gemm", "grouped_gemm", "grouped_gemm_packed",
    "quantize", "dequantize", "swizzle_scales", "unswizzle_scales",
]

_OUT_DTYPES = ("float16", "bfloat16", "float32")


def _shape(x):
    return tuple(int(s) for s in getattr(x, "shape", ()))


def _out_dtype(name: str, op: str, arg: str = "out_dtype") -> str:
    if name not in _OUT_DTYPES:
        raise ValueError(f"{op}: {arg} must be one of {', '.join(_OUT_DTYPES)}, got {name!r}")
    return name


def _alloc(ctx: Context, out, shape, dtype):
    """The caller's `out`, or a new array; a shape of None (inputs too malformed to infer
    one) gives an empty placeholder so that libnvfp4 reports what is wrong with the inputs."""
    if out is not None:
        return out
    return ctx.empty(shape if shape is not None else (0,), dtype)


def _launch(ctx: Context, stream, inputs, fn, *args, backend: str, scratch: bool = False):
    """Runs binding fn(*args, stream_handle, backend) on the op's stream, after the inputs'
    producers (JAX) and finished before returning where the framework needs it. With
    `scratch`, the op may need a workspace: on a device its size is asked first (the
    *_workspace_size query, fn(..., None, True)) and a buffer of that many bytes passed."""
    handle = ctx.stream(stream)
    ctx.before(*inputs)
    if scratch:
        workspace = None
        if ctx.gpu:
            nbytes = fn(*args, handle, backend, None, True)
            workspace = ctx.empty((nbytes,), "uint8") if nbytes else None
        fn(*args, handle, backend, workspace, False)
    else:
        fn(*args, handle, backend)
    ctx.after(handle)


def gemv(a, sfa, b, sfb, *, alpha=1.0, sf_layout="linear", out_dtype="float16", out=None, stream=None,
         backend="auto"):
    """c = alpha * A·b: a (M, K/2) or (L, M, K/2), b (K/2,) or (L, K/2) -> (M,) / (L, M)."""
    ctx = Context(a, "gemv")
    sa = _shape(a)
    shape = sa[:-1] if len(sa) in (2, 3) else None
    out = _alloc(ctx, out, shape, _out_dtype(out_dtype, "gemv"))
    av, aa = scalar(alpha, "alpha")
    _launch(ctx, stream, (a, sfa, b, sfb), _ext.gemv, as_bytes(a), as_bytes(sfa), as_bytes(b), as_bytes(sfb), av, aa,
            sf_layout, out, backend=backend)
    return out


def gemm(a, sfa, b, sfb, *, alpha=1.0, sf_layout="linear", out_dtype="float16", out=None, stream=None,
         backend="auto"):
    """C = alpha * A·Bᵀ: a (M, K/2), b (N, K/2) -> (M, N); batched (L, ...) -> (L, M, N)."""
    ctx = Context(a, "gemm")
    sa, sb = _shape(a), _shape(b)
    shape = sa[:-1] + sb[-2:-1] if len(sa) in (2, 3) and len(sb) >= 2 else None
    out = _alloc(ctx, out, shape, _out_dtype(out_dtype, "gemm"))
    av, aa = scalar(alpha, "alpha")
    _launch(ctx, stream, (a, sfa, b, sfb), _ext.gemm, as_bytes(a), as_bytes(sfa), as_bytes(b), as_bytes(sfb), av, aa,
            sf_layout, out, backend=backend, scratch=True)
    return out


def dual_gemm(a, sfa, b1, sfb1, b2, sfb2, *, alpha1=1.0, alpha2=1.0, activation="silu", sf_layout="linear",
              out_dtype="float16", out=None, stream=None, backend="auto"):
    """C = act(alpha1·A·B1ᵀ) * (alpha2·A·B2ᵀ), act = "silu" or "gelu_tanh"."""
    ctx = Context(a, "dual_gemm")
    sa, sb = _shape(a), _shape(b1)
    shape = sa[:-1] + sb[-2:-1] if len(sa) in (2, 3) and len(sb) >= 2 else None
    out = _alloc(ctx, out, shape, _out_dtype(out_dtype, "dual_gemm"))
    a1v, a1a = scalar(alpha1, "alpha1")
    a2v, a2a = scalar(alpha2, "alpha2")
    _launch(ctx, stream, (a, sfa, b1, sfb1, b2, sfb2), _ext.dual_gemm, as_bytes(a), as_bytes(sfa), as_bytes(b1),
            as_bytes(sfb1), as_bytes(b2), as_bytes(sfb2), a1v, a1a, a2v, a2a, activation, sf_layout, out,
            backend=backend, scratch=True)
    return out


def grouped_gemm(a_list, sfa_list, b_list, sfb_list, *, alphas=None, sf_layout="linear", out_dtype="float16",
                 out=None, stream=None, backend="auto"):
    """G independent GEMMs C_g = alpha_g · A_g·B_gᵀ (2-D operands); returns a list."""
    a_list, sfa_list, b_list, sfb_list = list(a_list), list(sfa_list), list(b_list), list(sfb_list)
    if not a_list:
        return []
    ctx = Context(a_list[0], "grouped_gemm")
    dtype = _out_dtype(out_dtype, "grouped_gemm")
    if out is None:
        out = []
        for a, b in zip(a_list, b_list):
            sa, sb = _shape(a), _shape(b)
            shape = (sa[0], sb[0]) if len(sa) == 2 and len(sb) == 2 else None
            out.append(_alloc(ctx, None, shape, dtype))
    out = list(out)
    alpha_values = [] if alphas is None else [float(x) for x in alphas]
    _launch(ctx, stream, (*a_list, *sfa_list, *b_list, *sfb_list), _ext.grouped_gemm, [as_bytes(x) for x in a_list],
            [as_bytes(x) for x in sfa_list], [as_bytes(x) for x in b_list], [as_bytes(x) for x in sfb_list],
            alpha_values, sf_layout, out, backend=backend, scratch=True)
    return out


def grouped_gemm_packed(a, sfa, b, sfb, offsets, *, alphas=None, out_dtype="float16", out=None, stream=None,
                        backend="auto"):
    """MoE layout: a (ΣM_g, K/2), b (G, N, K/2), int32 offsets (G+1,) on the device;
    rows offsets[g]:offsets[g+1] use expert g. Returns (ΣM_g, N). Linear scales."""
    ctx = Context(a, "grouped_gemm_packed")
    sa, sb = _shape(a), _shape(b)
    shape = (sa[0], sb[1]) if len(sa) == 2 and len(sb) == 3 else None
    out = _alloc(ctx, out, shape, _out_dtype(out_dtype, "grouped_gemm_packed"))
    _launch(ctx, stream, (a, sfa, b, sfb, offsets), _ext.grouped_gemm_packed, as_bytes(a), as_bytes(sfa), as_bytes(b),
            as_bytes(sfb), offsets, alphas, out, backend=backend, scratch=True)
    return out


def quantize(x, *, global_scale=None, sf_layout="linear", stream=None, backend="auto"):
    """x (..., K) float32/float16/bfloat16 -> (q, sf, global_scale).

    q: packed e2m1 uint8 (..., K/2); sf: e4m3 scale bytes, linear (..., K/16) or blocked
    ((L,) bytes); global_scale: a 1-element float32 array (decode scale, amax/(6·448) when
    not given). A given global_scale may be a float or a 1-element float32 array; an array on
    x's device is used as is (no copy) and returned."""
    ctx = Context(x, "quantize")
    sx = _shape(x)
    lead = None
    if len(sx) > 3:  # flatten leading dims into one batch dim (q and linear sf get them back)
        lead = sx[:-2]
        x = x.reshape((-1,) + sx[-2:])
        sx = _shape(x)
    k = sx[-1] if sx else 0
    q = ctx.empty(sx[:-1] + (k // 2,) if sx else (0,), "uint8")
    if sf_layout == "blocked" and len(sx) >= 1:
        rows = sx[-2] if len(sx) >= 2 else 1
        nbytes = _ext.blocked_scale_bytes(rows, k)
        sf = ctx.empty(((sx[0], nbytes) if len(sx) == 3 else (nbytes,)), "uint8")
    else:
        sf = ctx.empty(sx[:-1] + (k // 16,) if sx else (0,), "uint8")
    compute = global_scale is None
    if compute:
        gs = ctx.empty((1,), "float32")       # written by the op (amax / (6·448))
    elif hasattr(global_scale, "__dlpack_device__") and dlpack_device(global_scale) == dlpack_device(x):
        gs = global_scale                     # used in place: no host->device copy, graph-capturable
    else:
        gs = ctx.full1(host_float(global_scale, "global_scale"))
    _launch(ctx, stream, (x,), _ext.quantize, x, q, sf, sf_layout, gs, compute, backend=backend)
    if lead is not None:
        q = q.reshape(lead + _shape(q)[-2:])
        if sf_layout != "blocked":
            sf = sf.reshape(lead + _shape(sf)[-2:])
    return q, sf, gs


def dequantize(q, sf, *, global_scale=1.0, sf_layout="linear", dtype="float32", out=None, stream=None,
               backend="auto"):
    """Packed e2m1 (..., K/2) + scales -> values (..., K) = e2m1 · e4m3 · global_scale."""
    ctx = Context(q, "dequantize")
    sq = _shape(q)
    shape = sq[:-1] + (2 * sq[-1],) if sq else None
    out = _alloc(ctx, out, shape, _out_dtype(dtype, "dequantize", "dtype"))
    gv, ga = scalar(global_scale, "global_scale")
    _launch(ctx, stream, (q, sf), _ext.dequantize, as_bytes(q), as_bytes(sf), sf_layout, gv, ga, out, backend=backend)
    return out


def swizzle_scales(sf, *, out=None, stream=None, backend="auto"):
    """Linear scales (rows, K/16) or (L, rows, K/16) -> blocked bytes (n,) or (L, n),
    n = ceil(rows/128)·128 · ceil(K/64)·4; padding is zero."""
    ctx = Context(sf, "swizzle_scales")
    s = _shape(sf)
    shape = None
    if len(s) in (2, 3):
        n = _ext.blocked_scale_bytes(s[-2], 16 * s[-1])
        shape = (s[0], n) if len(s) == 3 else (n,)
    out = _alloc(ctx, out, shape, "uint8")
    _launch(ctx, stream, (sf,), _ext.swizzle_scales, as_bytes(sf), out, backend=backend)
    return out


def unswizzle_scales(sf_blocked, rows, k, *, out=None, stream=None, backend="auto"):
    """Blocked bytes (n,) / (L, n) / the 6-D view (32, 4, rest_rows, 4, rest_k, L) ->
    linear (rows, k/16) / (L, rows, k/16); k is the number of K elements."""
    ctx = Context(sf_blocked, "unswizzle_scales")
    sf_blocked = as_bytes(sf_blocked)
    s = _shape(sf_blocked)
    if len(s) == 6:  # gpu-mode view: back to the dense (L, n) order it is a view of
        sf_blocked = permute(sf_blocked, (5, 2, 4, 0, 1, 3)).reshape(s[5], -1)
        s = _shape(sf_blocked)
    rows, k = int(rows), int(k)
    if k % 16 != 0 or k <= 0 or rows < 0:
        raise ValueError(f"unswizzle_scales: k must be a positive multiple of 16 (K elements), got {k}; rows >= 0")
    shape = (s[0], rows, k // 16) if len(s) == 2 else (rows, k // 16)
    out = _alloc(ctx, out, shape, "uint8")
    _launch(ctx, stream, (sf_blocked,), _ext.unswizzle_scales, sf_blocked, out, backend=backend)
    return out
