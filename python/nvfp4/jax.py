"""The NVFP4 ops for JAX arrays, under ``jax.jit`` or eagerly: XLA FFI custom calls.

Same functions, signatures and output shapes as :mod:`nvfp4.ops`, taking JAX arrays
(or tracers; numpy arrays are converted) and returning JAX arrays. Each op is one XLA
custom call ``nvfp4_<op>`` with a CPU handler (the library's exact float64 CPU backend)
and a CUDA handler (the GPU backends, on XLA's stream), registered with XLA on import
(cpp/bindings/xla_ffi_handlers.cpp, module ``nvfp4._nvfp4_xla``).

Differences from the eager ops:
  * ``out=`` is not supported (JAX arrays are immutable; use the returned array) and
    ``stream=`` must be None (XLA owns the stream): both raise TypeError.
  * ``alpha`` / ``alpha1`` / ``alpha2`` / ``global_scale`` (dequantize): a Python float is
    baked into the compiled call; a 1-element float32 JAX array (or tracer) is an operand,
    read at kernel time. ``grouped_gemm``'s ``alphas``: a sequence of floats (baked) or a
    (G,) float32 JAX array (an operand). ``unswizzle_scales``' ``rows`` and ``k`` must be
    static Python ints.
  * packed fp4 operands may be uint8/int8 bytes (..., K/2) or ``jnp.float4_e2m1fn``
    arrays (..., K) (bitcast to the same bytes: element 2i in the low nibble); scales
    uint8 or float8_e4m3fn; a 6-D blocked scale view (32, 4, rest_rows, 4, rest_k, L) is
    transposed to its dense (L, bytes) order first.
  * Bad shapes and dtypes raise the library's ValueError / TypeError at trace time (the
    C ABI's own validation run on shape-only descriptors); failures only the data can
    show (e.g. host offsets of grouped_gemm_packed) surface as XLA runtime errors.
  * Scratch: on CUDA, gemm / dual_gemm / grouped_gemm / grouped_gemm_packed get their
    workspace as an extra custom-call result sized at trace time for the first CUDA
    device (so the calls can live in XLA command buffers); see xla_ffi_common.hpp.
"""

from __future__ import annotations

import functools

import numpy as np

try:
    import jax
    import jax.numpy as jnp
except ImportError as _exc:  # pragma: no cover - exercised only without jax
    raise ImportError("nvfp4.jax needs JAX: pip install jax") from _exc
if not hasattr(jax, "ffi") or not hasattr(jax.lax, "platform_dependent"):  # pragma: no cover
    raise ImportError(f"nvfp4.jax needs jax >= 0.5 (jax.ffi), found jax {jax.__version__}")

try:
    from . import _nvfp4_xla as _xla
except ImportError as _exc:
    raise ImportError(
        "nvfp4.jax: this nvfp4 build has no XLA FFI extension (nvfp4._nvfp4_xla could not be imported: "
        f"{_exc}). It is built only when the XLA FFI headers are found at configure time: from an installed "
        "jaxlib, else from the jaxlib wheel downloaded from PyPI, or -DNVFP4_XLA_FFI_DIR=<dir with "
        "xla/ffi/api/ffi.h>. Reinstall nvfp4 with jaxlib installed or PyPI reachable.") from _exc

__all__ = [
    "gemv", "gemm", "dual_gemm", "grouped_gemm", "grouped_gemm_packed",
    "quantize", "dequantize", "swizzle_scales", "unswizzle_scales",
]

_OUT_DTYPES = ("float16", "bfloat16", "float32")
_BACKENDS = ("auto", "cpu", "portable", "sm90a", "sm100a")
_FLOAT4 = getattr(jnp, "float4_e2m1fn", None)
_WORKSPACE_ALIGN = 256   # xla_ffi_common.hpp: kWorkspaceAlign


def _register() -> None:
    """Registers every op's handlers with XLA, once (at import). A CUDA registration made
    while jaxlib has no CUDA plugin is kept by jaxlib for a plugin loaded later."""
    for name, capsules in _xla.registrations().items():
        jax.ffi.register_ffi_target(name, capsules["cpu"], platform="cpu")
        jax.ffi.register_ffi_target(name, capsules["cuda"], platform="CUDA")


_register()


# ---------------------------------------------------------------------------
# Argument helpers
# ---------------------------------------------------------------------------

def _common(op: str, out, stream, backend) -> None:
    if out is not None:
        raise TypeError(f"nvfp4.jax.{op}: out= is not supported for JAX arrays (they are immutable); "
                        "use the returned array")
    if stream is not None:
        raise TypeError(f"nvfp4.jax.{op}: stream= must be None for JAX arrays (XLA chooses the stream), "
                        f"got {stream!r}")
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise ValueError(f"backend must be one of auto, cpu, portable, sm90a, sm100a; got {backend!r}")


def _layout(sf_layout) -> str:
    if not isinstance(sf_layout, str) or sf_layout not in ("linear", "blocked"):
        raise ValueError(f"sf_layout must be 'linear' or 'blocked', got {sf_layout!r}")
    return sf_layout


def _out_dtype(name, op: str, arg: str = "out_dtype") -> str:
    if name not in _OUT_DTYPES:
        raise ValueError(f"{op}: {arg} must be one of {', '.join(_OUT_DTYPES)}, got {name!r}")
    return np.dtype(jnp.dtype(name)).name


def _array(x, op: str, name: str):
    if isinstance(x, jax.Array):
        return x
    try:
        return jnp.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{op}: argument '{name}': expected an array, got {type(x).__name__}") from exc


def _fp4(x, op: str, name: str):
    """Packed fp4 bytes; a float4_e2m1fn array (..., K) becomes its bytes (..., K/2)."""
    x = _array(x, op, name)
    if _FLOAT4 is not None and x.dtype == _FLOAT4:
        if x.ndim == 0 or x.shape[-1] % 2:
            raise ValueError(f"{op}: argument '{name}': a float4_e2m1fn array needs an even last dim "
                             f"(two values per byte), got shape {tuple(x.shape)}")
        x = jax.lax.bitcast_convert_type(x.reshape(tuple(x.shape[:-1]) + (x.shape[-1] // 2, 2)), jnp.uint8)
    return x


def _scales(x, op: str, name: str, sf_layout: str):
    """Scale bytes; a 6-D blocked view (32, 4, rest_rows, 4, rest_k, L) becomes the dense
    (L, bytes) array it is a view of (JAX arrays have no strides to keep it a view)."""
    x = _array(x, op, name)
    if sf_layout == "blocked" and x.ndim == 6:
        x = jnp.transpose(x, (5, 2, 4, 0, 1, 3)).reshape(x.shape[5], -1)
    return x


def _desc(x):
    """(dtype name, shape): what the C ABI's trace-time validation needs of an operand."""
    return (np.dtype(x.dtype).name, tuple(int(d) for d in x.shape))


def _scalar(value, name: str):
    """(float attribute, operand or None): a Python number, or a 1-element float32 array."""
    if isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return np.float32(value), None
    if isinstance(value, (jax.Array, np.ndarray)):
        arr = jnp.asarray(value)
        if arr.dtype != jnp.float32 or arr.size != 1:
            raise ValueError(f"argument '{name}': an array scalar must be a 1-element float32 array")
        return np.float32(1.0), arr
    raise TypeError(f"{name} must be a float or a 1-element float32 array, got {type(value).__name__}")


def _operands(*args):
    return tuple(a for a in args if a is not None)


def _ffi(op: str, results, *args, **attrs):
    return jax.ffi.ffi_call(f"nvfp4_{op}", results, vmap_method="sequential")(*args, **attrs)


@functools.lru_cache(maxsize=None)
def _cuda_ordinal():
    """CUDA ordinal of JAX's first CUDA device (None without one): where the workspace of
    the CUDA branch is sized at trace time."""
    try:
        devices = jax.devices("cuda")
    except Exception:  # no CUDA backend in this jaxlib / no GPU
        return None
    if not devices:
        return None
    d = devices[0]
    hw = getattr(d, "local_hardware_id", None)
    return int(hw) if hw is not None else int(d.id)


def _workspace_bytes(query) -> int:
    device = _cuda_ordinal()
    if device is None:
        return 0
    try:
        return int(query(device))
    except Exception:  # e.g. not supported there: the handler's own query decides at run time
        return 0


def _ffi_scratch(op: str, results, args, attrs, query):
    """An op that may need scratch: on CUDA the custom call gets a trailing uint8
    workspace result of the bytes `query(device)` reports; on the CPU none. The platform
    is chosen at lowering (lax.platform_dependent), so jaxprs and shapes show only the
    op's own results."""
    results = list(results)

    def on_cpu(*a):
        return _ffi(op, results, *a, **attrs)

    def on_cuda(*a):
        n = _workspace_bytes(query)
        if n == 0:
            return _ffi(op, results, *a, **attrs)
        # + _WORKSPACE_ALIGN: the handler aligns the buffer (XLA guarantees less than 256 bytes)
        return _ffi(op, results + [jax.ShapeDtypeStruct((n + _WORKSPACE_ALIGN,), jnp.uint8)], *a, **attrs)[:-1]

    return jax.lax.platform_dependent(*args, cpu=on_cpu, cuda=on_cuda)


# ---------------------------------------------------------------------------
# Ops (signatures of nvfp4.ops)
# ---------------------------------------------------------------------------

def gemv(a, sfa, b, sfb, *, alpha=1.0, sf_layout="linear", out_dtype="float16", out=None, stream=None,
         backend="auto"):
    """c = alpha * A·b: a (M, K/2) or (L, M, K/2), b (K/2,) or (L, K/2) -> (M,) / (L, M)."""
    op = "gemv"
    _common(op, out, stream, backend)
    layout = _layout(sf_layout)
    dtype = _out_dtype(out_dtype, op)
    a, b = _fp4(a, op, "a"), _fp4(b, op, "b")
    sfa, sfb = _scales(sfa, op, "sfa", layout), _scales(sfb, op, "sfb", layout)
    sa = tuple(a.shape)
    shape = sa[:-1] if len(sa) in (2, 3) else (0,)
    _xla.check_gemv(_desc(a), _desc(sfa), _desc(b), _desc(sfb), (dtype, shape), layout)
    av, aa = _scalar(alpha, "alpha")
    return _ffi(op, jax.ShapeDtypeStruct(shape, dtype), *_operands(a, sfa, b, sfb, aa), sf_layout=layout,
                alpha=av, alpha_operand=aa is not None, backend=backend)


def gemm(a, sfa, b, sfb, *, alpha=1.0, sf_layout="linear", out_dtype="float16", out=None, stream=None,
         backend="auto"):
    """C = alpha * A·Bᵀ: a (M, K/2), b (N, K/2) -> (M, N); batched (L, ...) -> (L, M, N)."""
    op = "gemm"
    _common(op, out, stream, backend)
    layout = _layout(sf_layout)
    dtype = _out_dtype(out_dtype, op)
    a, b = _fp4(a, op, "a"), _fp4(b, op, "b")
    sfa, sfb = _scales(sfa, op, "sfa", layout), _scales(sfb, op, "sfb", layout)
    sa, sb = tuple(a.shape), tuple(b.shape)
    shape = sa[:-1] + sb[-2:-1] if len(sa) in (2, 3) and len(sb) >= 2 else (0,)
    descs = (_desc(a), _desc(sfa), _desc(b), _desc(sfb), (dtype, shape))
    _xla.check_gemm(*descs, layout)
    av, aa = _scalar(alpha, "alpha")
    (c,) = _ffi_scratch(op, [jax.ShapeDtypeStruct(shape, dtype)], _operands(a, sfa, b, sfb, aa),
                        dict(sf_layout=layout, alpha=av, alpha_operand=aa is not None, backend=backend),
                        lambda device: _xla.check_gemm(*descs, layout, device=device))
    return c


def dual_gemm(a, sfa, b1, sfb1, b2, sfb2, *, alpha1=1.0, alpha2=1.0, activation="silu", sf_layout="linear",
              out_dtype="float16", out=None, stream=None, backend="auto"):
    """C = act(alpha1·A·B1ᵀ) * (alpha2·A·B2ᵀ), act = "silu" or "gelu_tanh"."""
    op = "dual_gemm"
    _common(op, out, stream, backend)
    layout = _layout(sf_layout)
    dtype = _out_dtype(out_dtype, op)
    if not isinstance(activation, str) or activation not in ("silu", "gelu_tanh"):
        raise ValueError(f"activation must be 'silu' or 'gelu_tanh', got {activation!r}")
    a, b1, b2 = _fp4(a, op, "a"), _fp4(b1, op, "b1"), _fp4(b2, op, "b2")
    sfa = _scales(sfa, op, "sfa", layout)
    sfb1, sfb2 = _scales(sfb1, op, "sfb1", layout), _scales(sfb2, op, "sfb2", layout)
    sa, sb = tuple(a.shape), tuple(b1.shape)
    shape = sa[:-1] + sb[-2:-1] if len(sa) in (2, 3) and len(sb) >= 2 else (0,)
    descs = (_desc(a), _desc(sfa), _desc(b1), _desc(sfb1), _desc(b2), _desc(sfb2), (dtype, shape))
    _xla.check_dual_gemm(*descs, activation, layout)
    a1v, a1a = _scalar(alpha1, "alpha1")
    a2v, a2a = _scalar(alpha2, "alpha2")
    (c,) = _ffi_scratch(op, [jax.ShapeDtypeStruct(shape, dtype)], _operands(a, sfa, b1, sfb1, b2, sfb2, a1a, a2a),
                        dict(sf_layout=layout, activation=activation, alpha1=a1v, alpha2=a2v,
                             alpha1_operand=a1a is not None, alpha2_operand=a2a is not None, backend=backend),
                        lambda device: _xla.check_dual_gemm(*descs, activation, layout, device=device))
    return c


def grouped_gemm(a_list, sfa_list, b_list, sfb_list, *, alphas=None, sf_layout="linear", out_dtype="float16",
                 out=None, stream=None, backend="auto"):
    """G independent GEMMs C_g = alpha_g · A_g·B_gᵀ (2-D operands); returns a list.

    One custom call for all groups (operands a_0..a_{G-1}, sfa_0.., b_0.., sfb_0..; G
    results). alphas: None, G floats, or a (G,) float32 JAX array (read at kernel time)."""
    op = "grouped_gemm"
    _common(op, out, stream, backend)
    a_list, sfa_list, b_list, sfb_list = list(a_list), list(sfa_list), list(b_list), list(sfb_list)
    if not a_list:
        return []
    layout = _layout(sf_layout)
    dtype = _out_dtype(out_dtype, op)
    a_list = [_fp4(x, op, "a") for x in a_list]
    b_list = [_fp4(x, op, "b") for x in b_list]
    sfa_list = [_scales(x, op, "sfa", layout) for x in sfa_list]
    sfb_list = [_scales(x, op, "sfb", layout) for x in sfb_list]
    g = len(a_list)
    alpha_values, alpha_array = np.zeros((0,), np.float32), None
    if isinstance(alphas, jax.Array):
        alpha_array = alphas
        if alpha_array.dtype != jnp.float32 or alpha_array.size != g:
            raise ValueError(f"grouped_gemm: argument 'alphas': an array must be float32 with one value per group "
                             f"({g}), got {alpha_array.dtype} of shape {tuple(alpha_array.shape)}")
        alpha_array = alpha_array.reshape(g)
    elif alphas is not None:
        alpha_values = np.asarray([float(x) for x in alphas], dtype=np.float32)
    if len(sfa_list) != g or len(b_list) != g or len(sfb_list) != g or (alphas is not None and
                                                                       alpha_array is None and len(alpha_values) != g):
        raise ValueError("grouped_gemm: a, sfa, b, sfb, out (and alphas if given) must have the same length")
    shapes = []
    for a, b in zip(a_list, b_list):
        sa, sb = tuple(a.shape), tuple(b.shape)
        shapes.append((sa[0], sb[0]) if len(sa) == 2 and len(sb) == 2 else (0,))
    descs = ([_desc(x) for x in a_list], [_desc(x) for x in sfa_list], [_desc(x) for x in b_list],
             [_desc(x) for x in sfb_list], [(dtype, s) for s in shapes])
    _xla.check_grouped_gemm(*descs, layout)
    outs = _ffi_scratch(op, [jax.ShapeDtypeStruct(s, dtype) for s in shapes],
                        (*a_list, *sfa_list, *b_list, *sfb_list, *_operands(alpha_array)),
                        dict(groups=np.int32(g), alphas=alpha_values, alphas_operand=alpha_array is not None,
                             sf_layout=layout, backend=backend),
                        lambda device: _xla.check_grouped_gemm(*descs, layout, device=device))
    return list(outs)


def grouped_gemm_packed(a, sfa, b, sfb, offsets, *, alphas=None, out_dtype="float16", out=None, stream=None,
                        backend="auto"):
    """MoE layout: a (ΣM_g, K/2), b (G, N, K/2), int32 offsets (G+1,); rows
    offsets[g]:offsets[g+1] use expert g. Returns (ΣM_g, N). Linear scales."""
    op = "grouped_gemm_packed"
    _common(op, out, stream, backend)
    dtype = _out_dtype(out_dtype, op)
    a, b = _fp4(a, op, "a"), _fp4(b, op, "b")
    sfa, sfb = _scales(sfa, op, "sfa", "linear"), _scales(sfb, op, "sfb", "linear")
    offsets = _array(offsets, op, "offsets")
    alphas = None if alphas is None else _array(alphas, op, "alphas")
    sa, sb = tuple(a.shape), tuple(b.shape)
    shape = (sa[0], sb[1]) if len(sa) == 2 and len(sb) == 3 else (0,)
    descs = (_desc(a), _desc(sfa), _desc(b), _desc(sfb), _desc(offsets),
             None if alphas is None else _desc(alphas), (dtype, shape))
    _xla.check_grouped_gemm_packed(*descs)
    (c,) = _ffi_scratch(op, [jax.ShapeDtypeStruct(shape, dtype)], _operands(a, sfa, b, sfb, offsets, alphas),
                        dict(alphas_operand=alphas is not None, backend=backend),
                        lambda device: _xla.check_grouped_gemm_packed(*descs, device=device))
    return c


def quantize(x, *, global_scale=None, sf_layout="linear", stream=None, backend="auto"):
    """x (..., K) float32/float16/bfloat16 -> (q, sf, global_scale).

    q: packed e2m1 uint8 (..., K/2); sf: e4m3 scale bytes, linear (..., K/16) or blocked
    ((L,) bytes); global_scale: a 1-element float32 array (decode scale, amax/(6·448) when
    not given, computed by the op). A given global_scale may be a float or a 1-element
    array; a 1-element float32 JAX array is used as is and returned."""
    op = "quantize"
    _common(op, None, stream, backend)
    layout = _layout(sf_layout)
    x = _array(x, op, "x")
    sx = tuple(x.shape)
    lead = None
    if len(sx) > 3:  # flatten leading dims into one batch dim (q and linear sf get them back)
        lead = sx[:-2]
        x = x.reshape((-1,) + sx[-2:])
        sx = tuple(x.shape)
    k = sx[-1] if sx else 0
    q_shape = sx[:-1] + (k // 2,) if sx else (0,)
    if layout == "blocked" and len(sx) >= 1:
        rows = sx[-2] if len(sx) >= 2 else 1
        nbytes = _xla.blocked_scale_bytes(rows, k)
        sf_shape = (sx[0], nbytes) if len(sx) == 3 else (nbytes,)
    else:
        sf_shape = sx[:-1] + (k // 16,) if sx else (0,)
    compute = global_scale is None
    gs = None
    if not compute:
        if isinstance(global_scale, (bool, np.bool_)):
            raise TypeError("global_scale must be a float or a 1-element array, got bool")
        if isinstance(global_scale, (int, float, np.floating, np.integer)):
            gs = jnp.full((1,), global_scale, dtype=jnp.float32)
        elif isinstance(global_scale, (jax.Array, np.ndarray)):
            gs = jnp.asarray(global_scale)
            if gs.size != 1:
                raise ValueError(f"global_scale must be a float or a 1-element array, got shape {tuple(gs.shape)}")
            if gs.dtype != jnp.float32:
                gs = gs.astype(jnp.float32).reshape((1,))
        else:
            raise TypeError(f"global_scale must be a float or a 1-element array, got {type(global_scale).__name__}")
    gs_desc = ("float32", (1,)) if compute else _desc(gs)
    _xla.check_quantize(_desc(x), ("uint8", q_shape), ("uint8", sf_shape), gs_desc, layout, compute)
    results = [jax.ShapeDtypeStruct(q_shape, jnp.uint8), jax.ShapeDtypeStruct(sf_shape, jnp.uint8)]
    if compute:
        results.append(jax.ShapeDtypeStruct((1,), jnp.float32))
    res = _ffi(op, results, *_operands(x, gs), sf_layout=layout, compute_global_scale=compute, backend=backend)
    q, sf = res[0], res[1]
    if compute:
        gs = res[2]
    if lead is not None:
        q = q.reshape(lead + tuple(q.shape[-2:]))
        if layout != "blocked":
            sf = sf.reshape(lead + tuple(sf.shape[-2:]))
    return q, sf, gs


def dequantize(q, sf, *, global_scale=1.0, sf_layout="linear", dtype="float32", out=None, stream=None,
               backend="auto"):
    """Packed e2m1 (..., K/2) + scales -> values (..., K) = e2m1 · e4m3 · global_scale."""
    op = "dequantize"
    _common(op, out, stream, backend)
    layout = _layout(sf_layout)
    out_dtype = _out_dtype(dtype, op, "dtype")
    q = _fp4(q, op, "q")
    sf = _scales(sf, op, "sf", layout)
    sq = tuple(q.shape)
    shape = sq[:-1] + (2 * sq[-1],) if sq else (0,)
    _xla.check_dequantize(_desc(q), _desc(sf), (out_dtype, shape), layout)
    gv, ga = _scalar(global_scale, "global_scale")
    return _ffi(op, jax.ShapeDtypeStruct(shape, out_dtype), *_operands(q, sf, ga), sf_layout=layout,
                global_scale=gv, gs_operand=ga is not None, backend=backend)


def swizzle_scales(sf, *, out=None, stream=None, backend="auto"):
    """Linear scales (rows, K/16) or (L, rows, K/16) -> blocked bytes (n,) or (L, n),
    n = ceil(rows/128)·128 · ceil(K/64)·4; padding is zero."""
    op = "swizzle_scales"
    _common(op, out, stream, backend)
    sf = _array(sf, op, "sf")
    s = tuple(sf.shape)
    shape = (0,)
    if len(s) in (2, 3):
        n = _xla.blocked_scale_bytes(s[-2], 16 * s[-1])
        shape = (s[0], n) if len(s) == 3 else (n,)
    _xla.check_swizzle_scales(_desc(sf), ("uint8", shape))
    return _ffi(op, jax.ShapeDtypeStruct(shape, jnp.uint8), sf, backend=backend)


def unswizzle_scales(sf_blocked, rows, k, *, out=None, stream=None, backend="auto"):
    """Blocked bytes (n,) / (L, n) / the 6-D view (32, 4, rest_rows, 4, rest_k, L) ->
    linear (rows, k/16) / (L, rows, k/16); k is the number of K elements (static ints)."""
    op = "unswizzle_scales"
    _common(op, out, stream, backend)
    sf_blocked = _scales(sf_blocked, op, "sf_blocked", "blocked")
    s = tuple(sf_blocked.shape)
    try:
        rows, k = int(rows), int(k)
    except (TypeError, jax.errors.ConcretizationTypeError) as exc:
        raise TypeError("unswizzle_scales: rows and k must be static Python ints (they fix the output shape)") from exc
    if k % 16 != 0 or k <= 0 or rows < 0:
        raise ValueError(f"unswizzle_scales: k must be a positive multiple of 16 (K elements), got {k}; rows >= 0")
    shape = (s[0], rows, k // 16) if len(s) == 2 else (rows, k // 16)
    _xla.check_unswizzle_scales(_desc(sf_blocked), ("uint8", shape))
    return _ffi(op, jax.ShapeDtypeStruct(shape, jnp.uint8), sf_blocked, backend=backend)
