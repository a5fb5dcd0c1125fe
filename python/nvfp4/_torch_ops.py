"""The torch.library operators behind nvfp4.torch (``torch.ops.nvfp4.*``): their schemas, their
implementations (the public eager functions of nvfp4.ops) and their fake (meta) implementations,
which give the eager op's output shapes and dtypes and never raise. nvfp4.torch imports this
module (which registers the operators) and adds the torch.compile routing; see its docstring for
the operator list. Private: import nvfp4.torch.
"""

from __future__ import annotations

import math

import torch

from . import ops as _ops

_NS = "nvfp4"
_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}

OPS: dict = {}  # op name -> its CustomOpDef (or OpOverloadPacket after a reload): torch.ops.nvfp4.<name>


# ----------------------------------------------------------------------------------------
# Operator registration (idempotent: an already registered op is reused).
# ----------------------------------------------------------------------------------------

_CREATED: set = set()  # ops that this copy of the module defined (and so gives fake impls)


def _op(name: str, schema: str, mutates=()):
    def register(impl):
        if name not in OPS:
            if hasattr(torch.ops.nvfp4, name):  # defined by an earlier copy of this module (importlib.reload)
                OPS[name] = getattr(torch.ops.nvfp4, name)
            else:
                OPS[name] = torch.library.custom_op(f"{_NS}::{name}", impl, mutates_args=tuple(mutates),
                                                    schema=schema)
                _CREATED.add(name)
        return impl
    return register


def _fake(name: str):
    def register(fn):
        if name in _CREATED:
            OPS[name].register_fake(fn)
        return fn
    return register


def _scalar_arg(value, tensor):
    """The eager `alpha=` from the (float, Tensor?) pair of a schema."""
    return tensor if tensor is not None else value


def _out_like(x, shape, dtype_name):
    return x.new_empty(tuple(shape) if shape is not None else (0,),
                       dtype=_DTYPES.get(dtype_name, torch.float16))


def _rows_shape(a, b):
    """(M, N) / (L, M, N) of gemm-like ops, None where eager would allocate a placeholder."""
    sa, sb = tuple(a.shape), tuple(b.shape)
    return sa[:-1] + sb[-2:-1] if len(sa) in (2, 3) and len(sb) >= 2 else None


def scale_bytes(rows, k):
    """Bytes of a blocked scale tensor for rows x k elements: ceil(rows/128)·128 · ceil(k/64)·4 (k a
    multiple of 16), the library's integer formula in Python arithmetic, which SymInts (dynamic
    shapes) go through: the fakes below use it, and nvfp4.torch.blocked_scale_bytes (what
    torch.compile traces for nvfp4.blocked_scale_bytes) returns it."""
    return ((rows + 127) // 128 * 128) * ((k // 16 + 3) // 4 * 4)


# --- gemv and gemm ------------------------------------------------------------------------

_GEMV = ("Tensor a, Tensor sfa, Tensor b, Tensor sfb, float alpha, Tensor? alpha_t, str sf_layout, str out_dtype, "
         "str backend")


def _register_gemv_like(name, fn, out_shape):
    """torch.ops.nvfp4.<name> and <name>_out for gemv and gemm (the same schema and arguments;
    `fn` the eager op, `out_shape(a, b)` its output shape or None)."""

    @_op(name, f"({_GEMV}) -> Tensor")
    def _impl(a, sfa, b, sfb, alpha, alpha_t, sf_layout, out_dtype, backend):
        return fn(a, sfa, b, sfb, alpha=_scalar_arg(alpha, alpha_t), sf_layout=sf_layout, out_dtype=out_dtype,
                  backend=backend)

    @_fake(name)
    def _impl_fake(a, sfa, b, sfb, alpha, alpha_t, sf_layout, out_dtype, backend):
        return _out_like(a, out_shape(a, b), out_dtype)

    @_op(f"{name}_out", f"({_GEMV}, Tensor(a!) out) -> ()", mutates=("out",))
    def _impl_out(a, sfa, b, sfb, alpha, alpha_t, sf_layout, out_dtype, backend, out):
        fn(a, sfa, b, sfb, alpha=_scalar_arg(alpha, alpha_t), sf_layout=sf_layout, out_dtype=out_dtype, out=out,
           backend=backend)

    @_fake(f"{name}_out")
    def _impl_out_fake(a, sfa, b, sfb, alpha, alpha_t, sf_layout, out_dtype, backend, out):
        return None


def _gemv_shape(a, b):
    sa = tuple(a.shape)
    return sa[:-1] if len(sa) in (2, 3) else None


_register_gemv_like("gemv", _ops.gemv, _gemv_shape)
_register_gemv_like("gemm", _ops.gemm, _rows_shape)


# --- dual_gemm ----------------------------------------------------------------------------

_DUAL = ("Tensor a, Tensor sfa, Tensor b1, Tensor sfb1, Tensor b2, Tensor sfb2, float alpha1, Tensor? alpha1_t, "
         "float alpha2, Tensor? alpha2_t, str activation, str sf_layout, str out_dtype, str backend")


@_op("dual_gemm", f"({_DUAL}) -> Tensor")
def _dual_gemm(a, sfa, b1, sfb1, b2, sfb2, alpha1, alpha1_t, alpha2, alpha2_t, activation, sf_layout, out_dtype,
               backend):
    return _ops.dual_gemm(a, sfa, b1, sfb1, b2, sfb2, alpha1=_scalar_arg(alpha1, alpha1_t),
                          alpha2=_scalar_arg(alpha2, alpha2_t), activation=activation, sf_layout=sf_layout,
                          out_dtype=out_dtype, backend=backend)


@_fake("dual_gemm")
def _dual_gemm_fake(a, sfa, b1, sfb1, b2, sfb2, alpha1, alpha1_t, alpha2, alpha2_t, activation, sf_layout, out_dtype,
                    backend):
    return _out_like(a, _rows_shape(a, b1), out_dtype)


@_op("dual_gemm_out", f"({_DUAL}, Tensor(a!) out) -> ()", mutates=("out",))
def _dual_gemm_out(a, sfa, b1, sfb1, b2, sfb2, alpha1, alpha1_t, alpha2, alpha2_t, activation, sf_layout, out_dtype,
                   backend, out):
    _ops.dual_gemm(a, sfa, b1, sfb1, b2, sfb2, alpha1=_scalar_arg(alpha1, alpha1_t),
                   alpha2=_scalar_arg(alpha2, alpha2_t), activation=activation, sf_layout=sf_layout,
                   out_dtype=out_dtype, out=out, backend=backend)


@_fake("dual_gemm_out")
def _dual_gemm_out_fake(a, sfa, b1, sfb1, b2, sfb2, alpha1, alpha1_t, alpha2, alpha2_t, activation, sf_layout,
                        out_dtype, backend, out):
    return None


# --- grouped_gemm -------------------------------------------------------------------------

_GROUPED = ("Tensor[] a_list, Tensor[] sfa_list, Tensor[] b_list, Tensor[] sfb_list, float[]? alphas, "
            "Tensor? alphas_t, str sf_layout, str out_dtype, str backend")


def _alphas_arg(alphas, alphas_t):
    return alphas_t if alphas_t is not None else alphas


@_op("grouped_gemm", f"({_GROUPED}) -> Tensor[]")
def _grouped_gemm(a_list, sfa_list, b_list, sfb_list, alphas, alphas_t, sf_layout, out_dtype, backend):
    return _ops.grouped_gemm(a_list, sfa_list, b_list, sfb_list, alphas=_alphas_arg(alphas, alphas_t),
                             sf_layout=sf_layout, out_dtype=out_dtype, backend=backend)


@_fake("grouped_gemm")
def _grouped_gemm_fake(a_list, sfa_list, b_list, sfb_list, alphas, alphas_t, sf_layout, out_dtype, backend):
    if not a_list:
        return []
    like = a_list[0]
    outs = []
    for a, b in zip(a_list, b_list):
        sa, sb = tuple(a.shape), tuple(b.shape)
        outs.append(_out_like(like, (sa[0], sb[0]) if len(sa) == 2 and len(sb) == 2 else None, out_dtype))
    return outs


@_op("grouped_gemm_out", f"({_GROUPED}, Tensor(a!)[] out) -> ()", mutates=("out",))
def _grouped_gemm_out(a_list, sfa_list, b_list, sfb_list, alphas, alphas_t, sf_layout, out_dtype, backend, out):
    _ops.grouped_gemm(a_list, sfa_list, b_list, sfb_list, alphas=_alphas_arg(alphas, alphas_t), sf_layout=sf_layout,
                      out_dtype=out_dtype, out=out, backend=backend)


@_fake("grouped_gemm_out")
def _grouped_gemm_out_fake(a_list, sfa_list, b_list, sfb_list, alphas, alphas_t, sf_layout, out_dtype, backend, out):
    return None


# --- grouped_gemm_packed ------------------------------------------------------------------

_PACKED = "Tensor a, Tensor sfa, Tensor b, Tensor sfb, Tensor offsets, Tensor? alphas, str out_dtype, str backend"


@_op("grouped_gemm_packed", f"({_PACKED}) -> Tensor")
def _grouped_gemm_packed(a, sfa, b, sfb, offsets, alphas, out_dtype, backend):
    return _ops.grouped_gemm_packed(a, sfa, b, sfb, offsets, alphas=alphas, out_dtype=out_dtype, backend=backend)


@_fake("grouped_gemm_packed")
def _grouped_gemm_packed_fake(a, sfa, b, sfb, offsets, alphas, out_dtype, backend):
    sa, sb = tuple(a.shape), tuple(b.shape)
    return _out_like(a, (sa[0], sb[1]) if len(sa) == 2 and len(sb) == 3 else None, out_dtype)


@_op("grouped_gemm_packed_out", f"({_PACKED}, Tensor(a!) out) -> ()", mutates=("out",))
def _grouped_gemm_packed_out(a, sfa, b, sfb, offsets, alphas, out_dtype, backend, out):
    _ops.grouped_gemm_packed(a, sfa, b, sfb, offsets, alphas=alphas, out_dtype=out_dtype, out=out, backend=backend)


@_fake("grouped_gemm_packed_out")
def _grouped_gemm_packed_out_fake(a, sfa, b, sfb, offsets, alphas, out_dtype, backend, out):
    return None


# --- quantize -----------------------------------------------------------------------------

def _quantize_shapes(x, sf_layout):
    """(q shape, sf shape) of the eager quantize (uint8 both)."""
    sx = tuple(x.shape)
    lead = None
    if len(sx) > 3:
        lead = sx[:-2]
        sx = (math.prod(lead),) + sx[-2:]
    k = sx[-1] if sx else 0
    q = sx[:-1] + (k // 2,) if sx else (0,)
    if sf_layout == "blocked" and len(sx) >= 1:
        rows = sx[-2] if len(sx) >= 2 else 1
        nbytes = scale_bytes(rows, k)
        sf = (sx[0], nbytes) if len(sx) == 3 else (nbytes,)
    else:
        sf = sx[:-1] + (k // 16,) if sx else (0,)
    if lead is not None:
        q = lead + q[-2:]
        if sf_layout != "blocked":
            sf = lead + sf[-2:]
    return q, sf


@_op("quantize", "(Tensor x, Tensor? global_scale, str sf_layout, str backend) -> (Tensor, Tensor, Tensor)")
def _quantize(x, global_scale, sf_layout, backend):
    q, sf, gs = _ops.quantize(x, global_scale=global_scale, sf_layout=sf_layout, backend=backend)
    if gs is global_scale:  # a custom op's outputs may not alias its inputs
        gs = gs.clone()
    return q, sf, gs


@_fake("quantize")
def _quantize_fake(x, global_scale, sf_layout, backend):
    q, sf = _quantize_shapes(x, sf_layout)
    return (x.new_empty(q, dtype=torch.uint8), x.new_empty(sf, dtype=torch.uint8),
            x.new_empty((1,), dtype=torch.float32))


@_op("quantize_scaled", "(Tensor x, Tensor global_scale, str sf_layout, str backend) -> (Tensor, Tensor)")
def _quantize_scaled(x, global_scale, sf_layout, backend):
    q, sf, _ = _ops.quantize(x, global_scale=global_scale, sf_layout=sf_layout, backend=backend)
    return q, sf


@_fake("quantize_scaled")
def _quantize_scaled_fake(x, global_scale, sf_layout, backend):
    q, sf = _quantize_shapes(x, sf_layout)
    return x.new_empty(q, dtype=torch.uint8), x.new_empty(sf, dtype=torch.uint8)


# --- dequantize ---------------------------------------------------------------------------

_DEQ = "Tensor q, Tensor sf, float global_scale, Tensor? global_scale_t, str sf_layout, str dtype, str backend"


@_op("dequantize", f"({_DEQ}) -> Tensor")
def _dequantize(q, sf, global_scale, global_scale_t, sf_layout, dtype, backend):
    return _ops.dequantize(q, sf, global_scale=_scalar_arg(global_scale, global_scale_t), sf_layout=sf_layout,
                           dtype=dtype, backend=backend)


@_fake("dequantize")
def _dequantize_fake(q, sf, global_scale, global_scale_t, sf_layout, dtype, backend):
    sq = tuple(q.shape)
    return _out_like(q, sq[:-1] + (2 * sq[-1],) if sq else None, dtype)


@_op("dequantize_out", f"({_DEQ}, Tensor(a!) out) -> ()", mutates=("out",))
def _dequantize_out(q, sf, global_scale, global_scale_t, sf_layout, dtype, backend, out):
    _ops.dequantize(q, sf, global_scale=_scalar_arg(global_scale, global_scale_t), sf_layout=sf_layout, dtype=dtype,
                    out=out, backend=backend)


@_fake("dequantize_out")
def _dequantize_out_fake(q, sf, global_scale, global_scale_t, sf_layout, dtype, backend, out):
    return None


# --- swizzle_scales / unswizzle_scales ----------------------------------------------------

@_op("swizzle_scales", "(Tensor sf, str backend) -> Tensor")
def _swizzle_scales(sf, backend):
    return _ops.swizzle_scales(sf, backend=backend)


@_fake("swizzle_scales")
def _swizzle_scales_fake(sf, backend):
    s = tuple(sf.shape)
    shape = (0,)
    if len(s) in (2, 3):
        n = scale_bytes(s[-2], 16 * s[-1])
        shape = (s[0], n) if len(s) == 3 else (n,)
    return sf.new_empty(shape, dtype=torch.uint8)


@_op("swizzle_scales_out", "(Tensor sf, str backend, Tensor(a!) out) -> ()", mutates=("out",))
def _swizzle_scales_out(sf, backend, out):
    _ops.swizzle_scales(sf, out=out, backend=backend)


@_fake("swizzle_scales_out")
def _swizzle_scales_out_fake(sf, backend, out):
    return None


_UNSW = "Tensor sf_blocked, SymInt rows, SymInt k, str backend"


@_op("unswizzle_scales", f"({_UNSW}) -> Tensor")
def _unswizzle_scales(sf_blocked, rows, k, backend):
    return _ops.unswizzle_scales(sf_blocked, rows, k, backend=backend)


@_fake("unswizzle_scales")
def _unswizzle_scales_fake(sf_blocked, rows, k, backend):
    s = tuple(sf_blocked.shape)
    if len(s) == 6:  # the gpu-mode view, read as its dense (L, n) order
        s = (s[5], math.prod(s[:5]))
    if isinstance(rows, int) and isinstance(k, int):  # eager raises on these: no negative sizes here
        rows, k = max(rows, 0), max(k, 0)
    shape = (s[0], rows, k // 16) if len(s) == 2 else (rows, k // 16)
    return sf_blocked.new_empty(shape, dtype=torch.uint8)


@_op("unswizzle_scales_out", f"({_UNSW}, Tensor(a!) out) -> ()", mutates=("out",))
def _unswizzle_scales_out(sf_blocked, rows, k, backend, out):
    _ops.unswizzle_scales(sf_blocked, rows, k, out=out, backend=backend)


@_fake("unswizzle_scales_out")
def _unswizzle_scales_out_fake(sf_blocked, rows, k, backend, out):
    return None
