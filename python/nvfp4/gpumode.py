"""Adapters for the gpu-mode NVFP4 problems: each takes the problem's input tuple,
writes the output tensor `c` in place and returns it, so that

    from nvfp4.gpumode import gemm as custom_kernel

is a drop-in `custom_kernel(data)`. gpu-mode tensors are torch tensors shaped
(rows, K/2, L) with L the largest stride; they are viewed (no copies) as the
(L, rows, K/2) operands nvfp4 takes. No global scales: alpha = 1.

`sf_layout` picks which scale tensors of the tuple are read: "linear" (sfa, sfb:
(rows, K/16, L)) or "blocked" (the permuted 6-D (32, 4, rest_rows, 4, rest_k, L) views).
"""

from __future__ import annotations

import sys

from . import _nvfp4_ext as _ext
from . import ops

__all__ = ["gemv", "gemm", "dual_gemm", "grouped_gemm"]


def _direct(t) -> bool:
    """Hand the gpu-mode (rows, cols, L) tensors to the extension as they are (batch_last:
    it reads them as (L, rows, cols) views, no Python permute per tensor): for tensors of
    the exchange-API fast path, outside torch.compile tracing (which goes through the
    public ops, registered by nvfp4.torch)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.compiler.is_compiling():
        return False
    return ops._direct(type(t))


def _pick(sf_layout, linear, blocked):
    if sf_layout == "linear":
        return linear
    if sf_layout == "blocked":
        return blocked
    raise ValueError(f"sf_layout must be 'linear' or 'blocked', got {sf_layout!r}")


def _operand(t):
    """(rows, K/2, L) -> (L, rows, K/2) view."""
    return t.permute(2, 0, 1)


def _scales(linear, blocked, sf_layout):
    if sf_layout == "linear":
        return linear.permute(2, 0, 1)
    if sf_layout == "blocked":
        return blocked
    raise ValueError(f"sf_layout must be 'linear' or 'blocked', got {sf_layout!r}")


def gemv(data, sf_layout: str = "linear", backend: str = "auto"):
    """(a, b, sfa, sfb, sfa_permuted, sfb_permuted, c): c (M, 1, L) = a·b per batch."""
    a, b, sfa, sfb, sfa_p, sfb_p, c = data
    if _direct(a):
        _ext.gemv(a, _pick(sf_layout, sfa, sfa_p), b, _pick(sf_layout, sfb, sfb_p), 1.0, sf_layout, "float16", c,
                  None, backend, None, True)
        return c
    out = c[:, 0, :].permute(1, 0)                       # (L, M) view of c
    b_vec = b[0].permute(1, 0)                           # (L, K/2)
    sfb_vec = sfb[0].permute(1, 0) if sf_layout == "linear" else sfb_p
    ops.gemv(_operand(a), _scales(sfa, sfa_p, sf_layout), b_vec, sfb_vec, sf_layout=sf_layout,
             out_dtype="float16", out=out, backend=backend)
    return c


def gemm(data, sf_layout: str = "linear", backend: str = "auto"):
    """(a, b, sfa, sfb, sfa_permuted, sfb_permuted, c): c (M, N, L) = a·bᵀ per batch."""
    a, b, sfa, sfb, sfa_p, sfb_p, c = data
    if _direct(a):
        _ext.gemm(a, _pick(sf_layout, sfa, sfa_p), b, _pick(sf_layout, sfb, sfb_p), 1.0, sf_layout, "float16", c,
                  None, backend, None, True)
        return c
    ops.gemm(_operand(a), _scales(sfa, sfa_p, sf_layout), _operand(b), _scales(sfb, sfb_p, sf_layout),
             sf_layout=sf_layout, out=c.permute(2, 0, 1), backend=backend)
    return c


def dual_gemm(data, sf_layout: str = "linear", backend: str = "auto"):
    """(a, b1, b2, sfa, sfb1, sfb2, sfa_perm, sfb1_perm, sfb2_perm, c): c = silu(a·b1ᵀ)·(a·b2ᵀ)."""
    a, b1, b2, sfa, sfb1, sfb2, sfa_p, sfb1_p, sfb2_p, c = data
    if _direct(a):
        _ext.dual_gemm(a, _pick(sf_layout, sfa, sfa_p), b1, _pick(sf_layout, sfb1, sfb1_p), b2,
                       _pick(sf_layout, sfb2, sfb2_p), 1.0, 1.0, "silu", sf_layout, "float16", c, None, backend,
                       None, True)
        return c
    ops.dual_gemm(_operand(a), _scales(sfa, sfa_p, sf_layout), _operand(b1), _scales(sfb1, sfb1_p, sf_layout),
                  _operand(b2), _scales(sfb2, sfb2_p, sf_layout), activation="silu", sf_layout=sf_layout,
                  out=c.permute(2, 0, 1), backend=backend)
    return c


def grouped_gemm(data, sf_layout: str = "linear", backend: str = "auto"):
    """(abc_tensors, sfasfb_tensors, sfasfb_reordered_tensors, problem_sizes): per group
    c_g (M_g, N_g, 1) = a_g·b_gᵀ; returns the list of c_g."""
    abc, sf_linear, sf_blocked, _sizes = data
    if abc and _direct(abc[0][0]):
        sfs = _pick(sf_layout, sf_linear, sf_blocked)
        _ext.grouped_gemm([t[0] for t in abc], [s[0] for s in sfs], [t[1] for t in abc], [s[1] for s in sfs], None,
                          sf_layout, "float16", [t[2] for t in abc], None, backend, None, True)
        return [c for _, _, c in abc]
    a_list = [_operand(a)[0] for a, _, _ in abc]
    b_list = [_operand(b)[0] for _, b, _ in abc]
    outs = [c.permute(2, 0, 1)[0] for _, _, c in abc]
    if sf_layout == "linear":
        sfa_list = [s.permute(2, 0, 1)[0] for s, _ in sf_linear]
        sfb_list = [s.permute(2, 0, 1)[0] for _, s in sf_linear]
    elif sf_layout == "blocked":
        sfa_list = [s for s, _ in sf_blocked]
        sfb_list = [s for _, s in sf_blocked]
    else:
        raise ValueError(f"sf_layout must be 'linear' or 'blocked', got {sf_layout!r}")
    ops.grouped_gemm(a_list, sfa_list, b_list, sfb_list, sf_layout=sf_layout, out=outs, backend=backend)
    return [c for _, _, c in abc]
