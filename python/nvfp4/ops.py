"""The NVFP4 operations (docs/design.md, "Operations"). Thin: one extension call per op.

Arrays whose type offers the DLPack C exchange API (torch >= 2.10) go straight to the
extension, which reads them without a Python call per tensor, allocates the outputs with
the framework's allocator and runs on the framework's current stream. Other arrays
(numpy, CuPy, older torch, any DLPack producer) take `_call`: the stream is resolved here
and outputs are allocated by the framework through a callback; JAX arrays run through
XLA (nvfp4.jax) when its extension is built. libnvfp4 validates everything.
"""

from __future__ import annotations

from . import _nvfp4_ext as _ext
from ._arrays import Context, as_bytes, dlpack_device, host_float, permute

__all__ = [
    "gemv", "gemm", "dual_gemm", "grouped_gemm", "grouped_gemm_packed",
    "quantize", "dequantize", "swizzle_scales", "unswizzle_scales",
]

# Types the extension reads through the DLPack C exchange API (filled on first sight).
_DIRECT: set = set()
_NOT_DIRECT: set = set()


def _direct(t) -> bool:
    """Is `t` an array type of the exchange-API fast path? (JAX arrays are not: their
    producers must be waited for, which XLA or the generic path does.)"""
    if t in _DIRECT:
        return True
    if t in _NOT_DIRECT:
        return False
    ok = getattr(t, "__dlpack_c_exchange_api__", None) is not None and not t.__module__.startswith("jax")
    (_DIRECT if ok else _NOT_DIRECT).add(t)
    return ok


def _torch_capsules(args):
    """torch tensors (without the exchange API) as DLPack capsules: torch._C._to_dlpack
    costs far less than the Python method __dlpack__."""
    import torch

    def conv(x):
        if isinstance(x, torch.Tensor):
            return torch._C._to_dlpack(as_bytes(x))
        if isinstance(x, (list, tuple)):
            return [conv(v) for v in x]
        return x
    return tuple(conv(x) for x in args)


_JAX = []  # [nvfp4.jax or None], resolved on the first JAX array


def _jax(x):
    """nvfp4.jax (XLA FFI custom calls: jit-able, on XLA's stream) when x is a JAX array or
    tracer and that module's extension was built; else None (the generic path below)."""
    if not type(x).__module__.startswith("jax"):
        return None
    if not _JAX:
        try:
            from . import jax as module
        except ImportError:
            module = None
        _JAX.append(module)
    return _JAX[0]


def _call(fn, op, first, args, stream, backend, inputs):
    """fn(*args, stream, backend, alloc) for arrays without the exchange API: the stream
    resolved here, outputs allocated by the framework (alloc), JAX producers waited for."""
    if _direct(type(first)):
        return fn(*args, stream, backend, None)
    ctx = Context(first, op)
    if ctx.fw == "torch":
        args = _torch_capsules(args)
    handle = ctx.stream(stream)
    ctx.before(*inputs)
    result = fn(*args, handle, backend, ctx.empty)
    ctx.after(handle)
    return result


def gemv(a, sfa, b, sfb, *, alpha=1.0, sf_layout="linear", out_dtype="float16", out=None, stream=None,
         backend="auto"):
    """c = alpha * A·b: a (M, K/2) or (L, M, K/2), b (K/2,) or (L, K/2) -> (M,) / (L, M)."""
    if type(a) in _DIRECT:
        return _ext.gemv(a, sfa, b, sfb, alpha, sf_layout, out_dtype, out, stream, backend, None)
    if jx := _jax(a):
        return jx.gemv(a, sfa, b, sfb, alpha=alpha, sf_layout=sf_layout, out_dtype=out_dtype, out=out, stream=stream,
                       backend=backend)
    return _call(_ext.gemv, "gemv", a, (a, sfa, b, sfb, alpha, sf_layout, out_dtype, out), stream, backend,
                 (a, sfa, b, sfb))


def gemm(a, sfa, b, sfb, *, alpha=1.0, sf_layout="linear", out_dtype="float16", out=None, stream=None,
         backend="auto"):
    """C = alpha * A·Bᵀ: a (M, K/2), b (N, K/2) -> (M, N); batched (L, ...) -> (L, M, N)."""
    if type(a) in _DIRECT:
        return _ext.gemm(a, sfa, b, sfb, alpha, sf_layout, out_dtype, out, stream, backend, None)
    if jx := _jax(a):
        return jx.gemm(a, sfa, b, sfb, alpha=alpha, sf_layout=sf_layout, out_dtype=out_dtype, out=out, stream=stream,
                       backend=backend)
    return _call(_ext.gemm, "gemm", a, (a, sfa, b, sfb, alpha, sf_layout, out_dtype, out), stream, backend,
                 (a, sfa, b, sfb))


def dual_gemm(a, sfa, b1, sfb1, b2, sfb2, *, alpha1=1.0, alpha2=1.0, activation="silu", sf_layout="linear",
              out_dtype="float16", out=None, stream=None, backend="auto"):
    """C = act(alpha1·A·B1ᵀ) * (alpha2·A·B2ᵀ), act = "silu" or "gelu_tanh"."""
    args = (a, sfa, b1, sfb1, b2, sfb2, alpha1, alpha2, activation, sf_layout, out_dtype, out)
    if type(a) in _DIRECT:
        return _ext.dual_gemm(*args, stream, backend, None)
    if jx := _jax(a):
        return jx.dual_gemm(a, sfa, b1, sfb1, b2, sfb2, alpha1=alpha1, alpha2=alpha2, activation=activation,
                            sf_layout=sf_layout, out_dtype=out_dtype, out=out, stream=stream, backend=backend)
    return _call(_ext.dual_gemm, "dual_gemm", a, args, stream, backend, (a, sfa, b1, sfb1, b2, sfb2))


def grouped_gemm(a_list, sfa_list, b_list, sfb_list, *, alphas=None, sf_layout="linear", out_dtype="float16",
                 out=None, stream=None, backend="auto"):
    """G independent GEMMs C_g = alpha_g · A_g·B_gᵀ (2-D operands); returns a list.
    alphas: None, G floats, or a float32 array of shape (G,) (on the operands' device: read
    at kernel time, so it may change between CUDA-graph replays)."""
    a_list = a_list if isinstance(a_list, (list, tuple)) else list(a_list)
    if not a_list:
        return []
    args = (a_list, sfa_list, b_list, sfb_list, alphas, sf_layout, out_dtype, out)
    if type(a_list[0]) in _DIRECT:
        return _ext.grouped_gemm(*args, stream, backend, None)
    if jx := _jax(a_list[0]):
        return jx.grouped_gemm(a_list, sfa_list, b_list, sfb_list, alphas=alphas, sf_layout=sf_layout,
                               out_dtype=out_dtype, out=out, stream=stream, backend=backend)
    inputs = (*a_list, *sfa_list, *b_list, *sfb_list)
    return _call(_ext.grouped_gemm, "grouped_gemm", a_list[0], args, stream, backend, inputs)


def grouped_gemm_packed(a, sfa, b, sfb, offsets, *, alphas=None, out_dtype="float16", out=None, stream=None,
                        backend="auto"):
    """MoE layout: a (ΣM_g, K/2), b (G, N, K/2), int32 offsets (G+1,) on the device;
    rows offsets[g]:offsets[g+1] use expert g. Returns (ΣM_g, N). Linear scales."""
    args = (a, sfa, b, sfb, offsets, alphas, out_dtype, out)
    if type(a) in _DIRECT:
        return _ext.grouped_gemm_packed(*args, stream, backend, None)
    if jx := _jax(a):
        return jx.grouped_gemm_packed(a, sfa, b, sfb, offsets, alphas=alphas, out_dtype=out_dtype, out=out,
                                      stream=stream, backend=backend)
    return _call(_ext.grouped_gemm_packed, "grouped_gemm_packed", a, args, stream, backend,
                 (a, sfa, b, sfb, offsets))


def quantize(x, *, global_scale=None, sf_layout="linear", stream=None, backend="auto"):
    """x (..., K) float32/float16/bfloat16 -> (q, sf, global_scale).

    q: packed e2m1 uint8 (..., K/2); sf: e4m3 scale bytes, linear (..., K/16) or blocked
    ((L,) bytes); global_scale: a 1-element float32 array (decode scale, amax/(6·448) when
    not given). A given global_scale may be a float or a 1-element float32 array; an array on
    x's device is used as is (no copy) and returned."""
    if type(x) in _DIRECT and x.ndim <= 3 and (global_scale is None or (type(global_scale) in _DIRECT
                                                                         and global_scale.device == x.device)):
        return _ext.quantize(x, None, None, global_scale, False, sf_layout, stream, backend, None)
    if type(x) not in _DIRECT and (jx := _jax(x)):
        return jx.quantize(x, global_scale=global_scale, sf_layout=sf_layout, stream=stream, backend=backend)
    shape = tuple(x.shape) if hasattr(x, "shape") else ()
    lead = None
    if len(shape) > 3:  # flatten leading dims into one batch dim (q and linear sf get them back)
        lead = shape[:-2]
        x = x.reshape((-1,) + shape[-2:])
    if global_scale is not None and not (hasattr(global_scale, "__dlpack_device__")
                                         and dlpack_device(global_scale) == dlpack_device(x)):
        global_scale = Context(x, "quantize").full1(host_float(global_scale, "global_scale"))
    args = (x, None, None, global_scale, False, sf_layout)  # q, sf (and global_scale if None) allocated
    if type(x) in _DIRECT:
        q, sf, gs = _ext.quantize(*args, stream, backend, None)
    else:
        q, sf, gs = _call(_ext.quantize, "quantize", x, args, stream, backend, (x,))
    if lead is not None:
        q = q.reshape(lead + tuple(q.shape)[-2:])
        if sf_layout != "blocked":
            sf = sf.reshape(lead + tuple(sf.shape)[-2:])
    return q, sf, gs


def dequantize(q, sf, *, global_scale=1.0, sf_layout="linear", dtype="float32", out=None, stream=None,
               backend="auto"):
    """Packed e2m1 (..., K/2) + scales -> values (..., K) = e2m1 · e4m3 · global_scale."""
    args = (q, sf, global_scale, sf_layout, dtype, out)
    if type(q) in _DIRECT:
        return _ext.dequantize(*args, stream, backend, None)
    if jx := _jax(q):
        return jx.dequantize(q, sf, global_scale=global_scale, sf_layout=sf_layout, dtype=dtype, out=out,
                             stream=stream, backend=backend)
    return _call(_ext.dequantize, "dequantize", q, args, stream, backend, (q, sf))


def swizzle_scales(sf, *, out=None, stream=None, backend="auto"):
    """Linear scales (rows, K/16) or (L, rows, K/16) -> blocked bytes (n,) or (L, n),
    n = ceil(rows/128)·128 · ceil(K/64)·4; padding is zero."""
    if type(sf) in _DIRECT:
        return _ext.swizzle_scales(sf, out, stream, backend, None)
    if jx := _jax(sf):
        return jx.swizzle_scales(sf, out=out, stream=stream, backend=backend)
    return _call(_ext.swizzle_scales, "swizzle_scales", sf, (sf, out), stream, backend, (sf,))


def unswizzle_scales(sf_blocked, rows, k, *, out=None, stream=None, backend="auto"):
    """Blocked bytes (n,) / (L, n) / the 6-D view (32, 4, rest_rows, 4, rest_k, L) ->
    linear (rows, k/16) / (L, rows, k/16); k is the number of K elements."""
    if type(sf_blocked) not in _DIRECT and (jx := _jax(sf_blocked)):
        return jx.unswizzle_scales(sf_blocked, rows, k, out=out, stream=stream, backend=backend)
    s = tuple(sf_blocked.shape) if hasattr(sf_blocked, "shape") else ()
    if len(s) == 6:  # gpu-mode view: back to the dense (L, n) order it is a view of
        sf_blocked = permute(as_bytes(sf_blocked), (5, 2, 4, 0, 1, 3)).reshape(s[5], -1)
    rows, k = int(rows), int(k)
    if k % 16 != 0 or k <= 0 or rows < 0:
        raise ValueError(f"unswizzle_scales: k must be a positive multiple of 16 (K elements), got {k}; rows >= 0")
    args = (sf_blocked, rows, k, out)
    if type(sf_blocked) in _DIRECT:
        return _ext.unswizzle_scales(*args, stream, backend, None)
    return _call(_ext.unswizzle_scales, "unswizzle_scales", sf_blocked, args, stream, backend, (sf_blocked,))
