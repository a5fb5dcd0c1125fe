"""The C ABI's two workspace modes on the GPU, called through ctypes (the Python layer
always uses NVFP4_WORKSPACE_CACHED): quantize computing its global scale takes a
different path in each (atomics + finalize with caller scratch, per-CTA maxima in the
cached scratch), and both must give the same bytes as the CPU backend."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import nvfp4
from _util import c_library as _lib  # located once per session, never inside a capture

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

if not torch.cuda.is_available() or nvfp4._nvfp4_ext.device_count() == 0:
    pytest.skip("no CUDA device", allow_module_level=True)

DTYPES = {torch.uint8: 0, torch.float16: 4, torch.bfloat16: 5, torch.float32: 6}


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("device_type", ctypes.c_int),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32), ("shape", ctypes.c_int64 * 6),
                ("strides", ctypes.c_int64 * 6)]


class Exec(ctypes.Structure):
    _fields_ = [("stream", ctypes.c_void_p), ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t),
                ("backend", ctypes.c_int), ("workspace_mode", ctypes.c_int)]




def _t(x):
    t = Tensor(x.data_ptr(), DTYPES[x.dtype], 1, x.device.index or 0, x.dim())
    for i, (n, s) in enumerate(zip(x.shape, x.stride())):
        t.shape[i], t.strides[i] = n, s
    return t


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(128, 1024), (3, 200, 96), (8, 7168)])
@pytest.mark.parametrize("layout", [0, 1])
def test_quantize_computed_scale_same_in_both_workspace_modes(dtype, shape, layout):
    lib = _lib()
    x = torch.randn(*shape, device="cuda").to(dtype)
    x.view(-1)[5] = 37.5  # a clear amax
    results = []
    for mode in (0, 1):  # NVFP4_WORKSPACE_CALLER (no workspace given), NVFP4_WORKSPACE_CACHED
        q, sf, gs = nvfp4.quantize(x, sf_layout="blocked" if layout else "linear")  # shapes and dtypes
        for t in (q, sf, gs):
            t.view(torch.uint8).fill_(0xA5)
        ex = Exec(torch.cuda.current_stream().cuda_stream, None, 0, 0, mode)
        st = lib.nvfp4_quantize(ctypes.byref(_t(x)), ctypes.byref(_t(q)), ctypes.byref(_t(sf)), layout,
                                ctypes.byref(_t(gs)), 1, ctypes.byref(ex))
        assert st == 0, lib.nvfp4_last_error().decode()
        torch.cuda.synchronize()
        results.append((q.cpu().numpy(), sf.cpu().numpy(), gs.cpu().numpy()))
    want = nvfp4.quantize(x.float().cpu().numpy() if dtype == torch.float32 else x.cpu(),
                          sf_layout="blocked" if layout else "linear")
    want = tuple(np.asarray(w.numpy() if hasattr(w, "numpy") else w) for w in want)
    for got in results:
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
