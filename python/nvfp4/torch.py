"""torch.compile support: ``import nvfp4.torch`` registers every nvfp4 op as a PyTorch
custom operator (``torch.ops.nvfp4.*``) and makes ``torch.compile`` trace the public
functions (``nvfp4.gemm``, ``nvfp4.quantize``, ... and so ``nvfp4.gpumode.*``) as those
operators, without graph breaks (``fullgraph=True``) and CUDA-graph capturable
(``mode="reduce-overhead"``)::

    import torch, nvfp4, nvfp4.torch

    @torch.compile(fullgraph=True)
    def gated_mlp(x, w1, w3, w2):               # w = nvfp4.quantize(weight) = (q, sf, gs)
        qx, sx, gx = nvfp4.quantize(x)
        h = nvfp4.dual_gemm(qx, sx, w1[0], w1[1], w3[0], w3[1], alpha1=gx * w1[2], alpha2=gx * w3[2])
        qh, sh, gh = nvfp4.quantize(h)
        return nvfp4.gemm(qh, sh, w2[0], w2[1], alpha=gh * w2[2])

Eager calls are untouched: the public functions stay what they are (the routing is a
``torch.compiler.substitute_in_graph`` rule that only Dynamo looks at), so this module adds
nothing to their per-call cost. torch stays an optional dependency of nvfp4: only this
module imports it.

Operators (``Tensor(a!) out`` = written in place; scalars are a float plus an optional
1-element float32 tensor that replaces it, as the eager ``alpha=`` accepts both)::

    nvfp4::gemv / gemm       (a, sfa, b, sfb, alpha, alpha_t, sf_layout, out_dtype, backend) -> Tensor
    nvfp4::gemv_out / gemm_out (..., Tensor(a!) out) -> ()
    nvfp4::dual_gemm[_out]   (a, sfa, b1, sfb1, b2, sfb2, alpha1, alpha1_t, alpha2, alpha2_t,
                              activation, sf_layout, out_dtype, backend[, out])
    nvfp4::grouped_gemm[_out] (Tensor[] a, sfa, b, sfb, float[]? alphas, Tensor? alphas_t, ...)
    nvfp4::grouped_gemm_packed[_out] (a, sfa, b, sfb, offsets, Tensor? alphas, out_dtype, backend[, out])
    nvfp4::quantize          (x, Tensor? global_scale, sf_layout, backend) -> (q, sf, gs)
    nvfp4::quantize_scaled   (x, Tensor global_scale, sf_layout, backend) -> (q, sf)
    nvfp4::dequantize[_out]  (q, sf, global_scale, global_scale_t, sf_layout, dtype, backend[, out])
    nvfp4::swizzle_scales[_out] (sf, backend[, out])
    nvfp4::unswizzle_scales[_out] (sf_blocked, rows, k, backend[, out])

Each operator's implementation is the public eager function (fast path, same validation,
same errors); its fake (meta) implementation gives the output shapes and dtypes of the eager
op and never raises, so that a bad argument raises the eager op's ValueError/TypeError when
the compiled function runs, not a wrapped error at trace time.

Not traceable as operators (a graph break; an error under ``fullgraph=True``): ``stream=``
(the ops run on the current stream: use ``with torch.cuda.stream(s):`` instead), non-torch
arrays, and scalars that are neither numbers nor tensors.

The traceable substitutes are also this module's ``gemm``, ``quantize``, ...: called eagerly
they run through ``torch.ops.nvfp4.*`` (the dispatcher's overhead on top of ``nvfp4.gemm``).
"""

from __future__ import annotations

import torch

from . import ops as _ops
from . import scales as _scales

if not (hasattr(torch.library, "custom_op") and hasattr(torch.compiler, "substitute_in_graph")):
    raise ImportError(f"nvfp4.torch needs torch >= 2.5 (torch.library.custom_op, "
                      f"torch.compiler.substitute_in_graph); this is torch {torch.__version__}")

from . import _torch_ops  # noqa: E402  (registers torch.ops.nvfp4.*)
from ._torch_ops import OPS  # noqa: E402

__all__ = ["OPS", "blocked_scale_bytes", "gemv", "gemm", "dual_gemm", "grouped_gemm", "grouped_gemm_packed",
           "quantize", "dequantize", "swizzle_scales", "unswizzle_scales"]

# ----------------------------------------------------------------------------------------
# Routing: what torch.compile traces in place of the public functions.
# ----------------------------------------------------------------------------------------

def _skip_eager_frames():
    """Keep Dynamo out of the eager implementation's frames (nvfp4/ops.py, nvfp4/_arrays.py, ...).

    After a graph break at an nvfp4 call (no fullgraph: stream=, odd argument types), the call
    runs eagerly with Dynamo's frame hook active, and Dynamo would try to compile the frame of
    nvfp4.ops.<op> itself. On the generic host path (arrays without the DLPack C exchange API,
    e.g. torch < 2.10) that traces Context/dlpack_device, and torch 2.13 fails there with an
    internal AssertionError on the DLDeviceType enum of tensor.__dlpack_device__() instead of
    running the op. Skipping these files (a set Dynamo consults for frames it is about to
    compile) makes such calls plain eager calls. The routing below does not depend on this:
    Dynamo picks the substitutes at the call site, before looking at the callee's file."""
    import sys

    from torch._dynamo import trace_rules

    files = getattr(trace_rules, "FORCE_SKIP_FILES", None)
    if not isinstance(files, set):  # not in this torch version: only the graph-break fallback is affected
        return
    # ops.py and the private helper modules it uses (_arrays, ...); not gpumode/scales, whose
    # code Dynamo traces (inlines) fine.
    # (_torch_ops stays traceable: blocked_scale_bytes below calls its formula)
    mods = [_ops] + [m for name, m in list(sys.modules.items())
                     if name.startswith("nvfp4._") and name != "nvfp4._torch_ops" and m is not None]
    for mod in mods:
        path = getattr(mod, "__file__", None)
        if path and path.endswith(".py"):
            files.add(path.replace("\\", "/"))


_skip_eager_frames()


def _call_eager(name, *args, **kwargs):
    """The eager op, run outside the graph (a graph break) for arguments that the
    operators cannot carry (stream=, non-torch arrays, unusual scalar types)."""
    return getattr(_ops, name)(*args, **kwargs)


_EAGER_REASON = ("nvfp4: arguments that the torch.ops.nvfp4 operators cannot carry (stream=, non-torch arrays, "
                 "or a scalar that is neither a number nor a tensor): the eager op runs outside the graph")
try:
    _call_eager = torch.compiler.disable(_call_eager, reason=_EAGER_REASON)
except TypeError:  # a torch without disable(reason=)
    _call_eager = torch.compiler.disable(_call_eager)


def _tensors(*xs):
    return all(isinstance(x, torch.Tensor) for x in xs)


def _strs(*xs):
    return all(isinstance(x, str) for x in xs)


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _scalar(value):
    """(float, Tensor-or-None) for a schema's scalar pair, or None if it is neither."""
    if isinstance(value, torch.Tensor):
        return 1.0, value
    if _number(value):
        return float(value), None
    return None


def _substitute(original):
    def register(traceable):
        try:
            torch.compiler.substitute_in_graph(original)(traceable)
        except ValueError as e:  # already registered (this module imported again)
            if "uplicate" not in str(e):
                raise
        return traceable
    return register


@_substitute(_scales.blocked_scale_bytes)
def blocked_scale_bytes(rows, k):
    """nvfp4.blocked_scale_bytes(rows, k) = ceil(rows/128)·128 · ceil(k/64)·4 (k a multiple of 16; the
    library's exact integer formula, so for any k) in Python integer arithmetic, which SymInts (dynamic
    shapes) go through: the fake implementations use it, and compiled code calling
    nvfp4.blocked_scale_bytes gets it instead of a graph break at the extension call."""
    return _torch_ops.scale_bytes(rows, k)


def _gemm_like(name):
    """The traceable gemv / gemm (the same arguments; only the operator differs)."""
    op, op_out = getattr(torch.ops.nvfp4, name), getattr(torch.ops.nvfp4, name + "_out")

    def fn(a, sfa, b, sfb, *, alpha=1.0, sf_layout="linear", out_dtype="float16", out=None, stream=None,
           backend="auto"):
        av = _scalar(alpha)
        if (stream is not None or av is None or not _tensors(a, sfa, b, sfb)
                or not _strs(sf_layout, out_dtype, backend) or not (out is None or isinstance(out, torch.Tensor))):
            return _call_eager(name, a, sfa, b, sfb, alpha=alpha, sf_layout=sf_layout, out_dtype=out_dtype, out=out,
                               stream=stream, backend=backend)
        if out is None:
            return op(a, sfa, b, sfb, av[0], av[1], sf_layout, out_dtype, backend)
        op_out(a, sfa, b, sfb, av[0], av[1], sf_layout, out_dtype, backend, out)
        return out

    fn.__name__ = fn.__qualname__ = name
    return fn


gemv = _substitute(_ops.gemv)(_gemm_like("gemv"))
gemm = _substitute(_ops.gemm)(_gemm_like("gemm"))


@_substitute(_ops.dual_gemm)
def dual_gemm(a, sfa, b1, sfb1, b2, sfb2, *, alpha1=1.0, alpha2=1.0, activation="silu", sf_layout="linear",
              out_dtype="float16", out=None, stream=None, backend="auto"):
    a1, a2 = _scalar(alpha1), _scalar(alpha2)
    if (stream is not None or a1 is None or a2 is None or not _tensors(a, sfa, b1, sfb1, b2, sfb2)
            or not _strs(activation, sf_layout, out_dtype, backend)
            or not (out is None or isinstance(out, torch.Tensor))):
        return _call_eager("dual_gemm", a, sfa, b1, sfb1, b2, sfb2, alpha1=alpha1, alpha2=alpha2,
                           activation=activation, sf_layout=sf_layout, out_dtype=out_dtype, out=out, stream=stream,
                           backend=backend)
    if out is None:
        return torch.ops.nvfp4.dual_gemm(a, sfa, b1, sfb1, b2, sfb2, a1[0], a1[1], a2[0], a2[1], activation,
                                         sf_layout, out_dtype, backend)
    torch.ops.nvfp4.dual_gemm_out(a, sfa, b1, sfb1, b2, sfb2, a1[0], a1[1], a2[0], a2[1], activation, sf_layout,
                                  out_dtype, backend, out)
    return out


def _alphas(alphas):
    """(float list or None, Tensor or None) for grouped_gemm's alphas, or None if unsupported."""
    if alphas is None:
        return None, None
    if isinstance(alphas, torch.Tensor):
        return None, alphas
    if isinstance(alphas, (list, tuple)):
        if all(_number(x) for x in alphas):
            return [float(x) for x in alphas], None
        if all(isinstance(x, torch.Tensor) for x in alphas):  # e.g. [gx * gw, ...]: one value each
            return None, torch.cat([x.reshape(-1) for x in alphas]) if alphas else None
    return None


@_substitute(_ops.grouped_gemm)
def grouped_gemm(a_list, sfa_list, b_list, sfb_list, *, alphas=None, sf_layout="linear", out_dtype="float16",
                 out=None, stream=None, backend="auto"):
    a_list, sfa_list, b_list, sfb_list = list(a_list), list(sfa_list), list(b_list), list(sfb_list)
    if not a_list:
        return []
    al = _alphas(alphas)
    if (stream is not None or al is None or not _tensors(*a_list, *sfa_list, *b_list, *sfb_list)
            or not _strs(sf_layout, out_dtype, backend)
            or not (out is None or (isinstance(out, (list, tuple)) and _tensors(*out)))):
        return _call_eager("grouped_gemm", a_list, sfa_list, b_list, sfb_list, alphas=alphas, sf_layout=sf_layout,
                           out_dtype=out_dtype, out=out, stream=stream, backend=backend)
    if out is None:
        return list(torch.ops.nvfp4.grouped_gemm(a_list, sfa_list, b_list, sfb_list, al[0], al[1], sf_layout,
                                                 out_dtype, backend))
    out = list(out)
    torch.ops.nvfp4.grouped_gemm_out(a_list, sfa_list, b_list, sfb_list, al[0], al[1], sf_layout, out_dtype, backend,
                                     out)
    return out


@_substitute(_ops.grouped_gemm_packed)
def grouped_gemm_packed(a, sfa, b, sfb, offsets, *, alphas=None, out_dtype="float16", out=None, stream=None,
                        backend="auto"):
    if (stream is not None or not (alphas is None or isinstance(alphas, torch.Tensor))
            or not _tensors(a, sfa, b, sfb, offsets) or not _strs(out_dtype, backend)
            or not (out is None or isinstance(out, torch.Tensor))):
        return _call_eager("grouped_gemm_packed", a, sfa, b, sfb, offsets, alphas=alphas, out_dtype=out_dtype, out=out,
                           stream=stream, backend=backend)
    if out is None:
        return torch.ops.nvfp4.grouped_gemm_packed(a, sfa, b, sfb, offsets, alphas, out_dtype, backend)
    torch.ops.nvfp4.grouped_gemm_packed_out(a, sfa, b, sfb, offsets, alphas, out_dtype, backend, out)
    return out


@_substitute(_ops.quantize)
def quantize(x, *, global_scale=None, sf_layout="linear", stream=None, backend="auto"):
    if (stream is not None or not isinstance(x, torch.Tensor) or not _strs(sf_layout, backend)
            or not (global_scale is None or isinstance(global_scale, torch.Tensor) or _number(global_scale))):
        return _call_eager("quantize", x, global_scale=global_scale, sf_layout=sf_layout, stream=stream,
                           backend=backend)
    if global_scale is None:
        q, sf, gs = torch.ops.nvfp4.quantize(x, None, sf_layout, backend)
        return q, sf, gs
    if isinstance(global_scale, torch.Tensor):
        if global_scale.device == x.device:  # eager uses it as is and returns it
            q, sf = torch.ops.nvfp4.quantize_scaled(x, global_scale, sf_layout, backend)
            return q, sf, global_scale
        q, sf, gs = torch.ops.nvfp4.quantize(x, global_scale, sf_layout, backend)  # read on the host, as eager
        return q, sf, gs
    # A number: made on the device inside the graph (a fill, CUDA-graph capturable; eager's host->device
    # copy is not), the same float32 value eager makes.
    gs = torch.full((1,), float(global_scale), dtype=torch.float32, device=x.device)
    q, sf = torch.ops.nvfp4.quantize_scaled(x, gs, sf_layout, backend)
    return q, sf, gs


@_substitute(_ops.dequantize)
def dequantize(q, sf, *, global_scale=1.0, sf_layout="linear", dtype="float32", out=None, stream=None,
               backend="auto"):
    gv = _scalar(global_scale)
    if (stream is not None or gv is None or not _tensors(q, sf) or not _strs(sf_layout, dtype, backend)
            or not (out is None or isinstance(out, torch.Tensor))):
        return _call_eager("dequantize", q, sf, global_scale=global_scale, sf_layout=sf_layout, dtype=dtype, out=out,
                           stream=stream, backend=backend)
    if out is None:
        return torch.ops.nvfp4.dequantize(q, sf, gv[0], gv[1], sf_layout, dtype, backend)
    torch.ops.nvfp4.dequantize_out(q, sf, gv[0], gv[1], sf_layout, dtype, backend, out)
    return out


@_substitute(_ops.swizzle_scales)
def swizzle_scales(sf, *, out=None, stream=None, backend="auto"):
    if (stream is not None or not isinstance(sf, torch.Tensor) or not isinstance(backend, str)
            or not (out is None or isinstance(out, torch.Tensor))):
        return _call_eager("swizzle_scales", sf, out=out, stream=stream, backend=backend)
    if out is None:
        return torch.ops.nvfp4.swizzle_scales(sf, backend)
    torch.ops.nvfp4.swizzle_scales_out(sf, backend, out)
    return out


@_substitute(_ops.unswizzle_scales)
def unswizzle_scales(sf_blocked, rows, k, *, out=None, stream=None, backend="auto"):
    if (stream is not None or not isinstance(sf_blocked, torch.Tensor) or not isinstance(backend, str)
            or not isinstance(rows, int) or isinstance(rows, bool) or not isinstance(k, int) or isinstance(k, bool)
            or not (out is None or isinstance(out, torch.Tensor))):
        return _call_eager("unswizzle_scales", sf_blocked, rows, k, out=out, stream=stream, backend=backend)
    if out is None:
        return torch.ops.nvfp4.unswizzle_scales(sf_blocked, rows, k, backend)
    torch.ops.nvfp4.unswizzle_scales_out(sf_blocked, rows, k, backend, out)
    return out
