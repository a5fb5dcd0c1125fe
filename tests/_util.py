"""Small helpers shared by the tests: result checks, output poisoning, alpha choice; and the GPU
tests' device arrays, backends and operands (below)."""

from __future__ import annotations

import functools
import math
import os

import numpy as np
import pytest

from nvfp4 import _nvfp4_ext
from nvfp4 import reference as R

_E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])

# Tolerances: docs/design.md, "Numerics"
FP16_RTOL = FP16_ATOL = 1e-3
FP32_REL = 1e-5
BF16_RTOL = 2.0 ** -7   # one bf16 ulp (the gpu-mode check is for fp16 only; bf16 has 8 significant bits)

POISON_BYTE = 0xA5


def pow2_alpha(acc, target: float = 64.0) -> float:
    """A power of two that brings the rms of `acc` (alpha = 1 results) near `target`:
    keeps fp16 outputs in range without adding any rounding to the reference."""
    acc = np.asarray(acc, dtype=np.float64)
    rms = float(np.sqrt(np.nanmean(acc * acc))) if acc.size else 0.0
    if not rms > 0 or not math.isfinite(rms):
        return 1.0
    return float(2.0 ** round(math.log2(target / rms)))


def to_f64(x) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def assert_matches(out, ref, dtype: str = None) -> None:
    """The "Numerics" check (docs/design.md) of a GEMM-family output against its float64 reference:
    fp16/bf16 outputs within rtol = atol = 1e-3 of the reference rounded to that dtype,
    fp32 outputs ‖out − ref‖/‖ref‖ < 1e-5; NaN exactly where the reference has NaN."""
    out = np.asarray(out)
    ref = np.asarray(ref, dtype=np.float64)
    dtype = dtype or out.dtype.name
    assert out.shape == ref.shape, f"shape {out.shape} != reference {ref.shape}"
    got = to_f64(out)
    nan_ref = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(got), nan_ref, err_msg="NaN positions differ from the reference")
    got, ref = got[~nan_ref], ref[~nan_ref]
    if dtype == "float32":
        denom = np.linalg.norm(ref)
        err = np.linalg.norm(got - ref) / denom if denom > 0 else np.linalg.norm(got)
        assert err < FP32_REL, f"fp32 relative error {err:.3e} >= {FP32_REL}"
        return
    if dtype == "float16":
        np.testing.assert_allclose(got, ref.astype(np.float16).astype(np.float64), rtol=FP16_RTOL, atol=FP16_ATOL)
    elif dtype == "bfloat16":
        np.testing.assert_allclose(got, round_bf16(ref), rtol=BF16_RTOL, atol=FP16_ATOL)
    else:
        raise AssertionError(f"unexpected output dtype {dtype}")


def round_bf16(x) -> np.ndarray:
    """float64 -> nearest bfloat16 (RNE, via float32 bits; double rounding is harmless at
    this tolerance) -> float64."""
    f = np.asarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def poisoned(shape, dtype) -> np.ndarray:
    """An output array whose every byte is POISON_BYTE."""
    out = np.empty(shape, dtype=dtype)
    out.view(np.uint8)[...] = POISON_BYTE
    return out


def raw(x) -> bytes:
    return np.ascontiguousarray(x).view(np.uint8).tobytes()


def expect_error(exc_type, fn, *names):
    """Calls fn, expects exc_type whose message contains every one of `names`."""
    with pytest.raises(exc_type) as info:
        fn()
    msg = str(info.value)
    for name in names:
        assert name in msg, f"error message does not name {name!r}: {msg!r}"
    return msg


def strided_copy(x: np.ndarray, pad_last: int = 16, pad_rows: int = 3) -> np.ndarray:
    """The same values as x (L, rows, C) / (rows, C) in a view with padded row and batch
    strides (unit inner stride kept), so operands are not contiguous."""
    if x.ndim == 2:
        buf = np.zeros((x.shape[0] + pad_rows, x.shape[1] + pad_last), dtype=x.dtype)
        view = buf[: x.shape[0], : x.shape[1]]
    else:
        buf = np.zeros((x.shape[0], x.shape[1] + pad_rows, x.shape[2] + pad_last), dtype=x.dtype)
        view = buf[:, : x.shape[1], : x.shape[2]]
    view[...] = x
    return view


def assert_same_floats(out, ref) -> None:
    """Bit-identical floats (so -0.0 != 0.0), except that any NaN matches any NaN:
    NaN sign and payload are not part of the contract."""
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.shape == ref.shape and out.dtype == ref.dtype, (out.shape, out.dtype, ref.shape, ref.dtype)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(out), nan, err_msg="NaN positions differ")
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[out.dtype.itemsize]
    bad = (out.view(uint) != ref.view(uint)) & ~nan
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        raise AssertionError(f"{int(bad.sum())} values differ; first at {idx}: got {out[idx]!r}, expected {ref[idx]!r}")


def interesting_input(shape, dtype, rng):
    """Values over many binades, with some exact e2m1 grid points and zeros."""
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-12, 12, size=shape[:-1] + (1,)))
    flat = x.reshape(-1)
    n = flat.size
    flat[rng.integers(0, n, n // 8)] = 0.0
    flat[rng.integers(0, n, n // 8)] = rng.choice(_E2M1, n // 8)
    return x.astype(dtype)


EDGE_CASES = ["zeros", "huge", "tiny", "grid", "negative_zero", "nan_inf"]


def edge_input(case, shape, rng):
    """Quantize edge inputs (float32); "huge" overflows to inf on purpose."""
    with np.errstate(over="ignore"):
        return _edge_input(case, shape, rng).astype(np.float32)


def _edge_input(case, shape, rng):
    return {
        "zeros": np.zeros(shape),
        "huge": rng.standard_normal(shape) * 3e38,
        "tiny": rng.standard_normal(shape) * 1e-40,            # float32 subnormals
        "grid": rng.choice(_E2M1, shape) * rng.choice([1.0, 0.5, 448.0], shape[:-1] + (1,)),
        "negative_zero": -np.zeros(shape),
        "nan_inf": np.where(rng.random(shape) < 0.05, rng.choice([np.nan, np.inf, -np.inf], shape),
                            rng.standard_normal(shape)),
    }[case]


# ---------------------------------------------------------------------------
# The GPU tests' device helpers (tests/test_gpu_*.py): every op on device arrays (PyTorch when
# importable, else CuPy), every backend of the device, against the float64 reference. The
# reference decodes the operands with nvfp4.reference's tables and multiplies them in float64
# on the GPU (torch/CuPy matmul), so the gpu-mode shapes stay fast. The `dev` fixture is in
# conftest.py. The per-op files: test_gpu_gemm.py, test_gpu_gemv.py, test_gpu_dual_gemm.py,
# test_gpu_grouped_gemm.py, test_gpu_quantize.py (together aimed at < 3 minutes on an H100).
# ---------------------------------------------------------------------------

HAVE_GPU = _nvfp4_ext.device_count() > 0
LAYOUTS = ["linear", "blocked"]


# ---------------------------------------------------------------------------
# Device arrays: PyTorch, else CuPy
# ---------------------------------------------------------------------------

class TorchDevice:
    name = "torch"

    def __init__(self, torch):
        self.torch = torch
        self.dev = torch.device("cuda", 0)
        self.e2m1 = torch.tensor(R.E2M1_VALUES, dtype=torch.float64, device=self.dev)
        self.e4m3 = torch.tensor(R.E4M3_VALUES, dtype=torch.float64, device=self.dev)

    def put(self, x):
        return self.torch.from_numpy(np.ascontiguousarray(x)).to(self.dev)

    def get(self, x):
        x = x.detach()
        if x.dtype == self.torch.bfloat16:
            x = x.float()
        return x.cpu().numpy()

    def empty(self, shape, dtype):
        return self.torch.empty(shape, dtype=getattr(self.torch, dtype), device=self.dev)

    def poisoned(self, shape, dtype):
        out = self.empty(shape, dtype)
        out.view(self.torch.uint8).fill_(POISON_BYTE)
        return out

    def scalar(self, value):
        return self.torch.tensor([value], dtype=self.torch.float32, device=self.dev)

    def decode(self, q, sf_linear):
        """float64 values of packed q (..., rows, K/2) with linear scales (..., rows, K/16)."""
        t = self.torch
        codes = t.stack([q & 15, q >> 4], dim=-1).reshape(*q.shape[:-1], 2 * q.shape[-1])
        return self.e2m1[codes.long()] * self.e4m3[sf_linear.long()].repeat_interleave(16, dim=-1)

    def matmul_t(self, a, b):
        return self.torch.matmul(a, b.transpose(-1, -2))

    def six_d(self, dense, rows, k):
        rest_m, rest_k = -(-rows // 128), R.blocked_cols(k) // 4
        d = dense.reshape(-1, rest_m, rest_k, 32, 4, 4)
        return d.permute(3, 4, 1, 5, 2, 0)

    def stream(self):
        return self.torch.cuda.Stream()

    def use_stream(self, s):
        return self.torch.cuda.stream(s)

    def synchronize(self):
        self.torch.cuda.synchronize()


class CupyDevice(TorchDevice):
    name = "cupy"

    def __init__(self, cupy):
        self.cp = cupy
        self.e2m1 = cupy.asarray(R.E2M1_VALUES)
        self.e4m3 = cupy.asarray(R.E4M3_VALUES)

    def put(self, x):
        return self.cp.asarray(np.ascontiguousarray(x))

    def get(self, x):
        return self.cp.asnumpy(x)

    def empty(self, shape, dtype):
        return self.cp.empty(shape, dtype=dtype)

    def poisoned(self, shape, dtype):
        out = self.empty(shape, dtype)
        out.view(self.cp.uint8).fill(POISON_BYTE)
        return out

    def scalar(self, value):
        return self.cp.asarray([value], dtype=self.cp.float32)

    def decode(self, q, sf_linear):
        cp = self.cp
        codes = cp.stack([q & 15, q >> 4], axis=-1).reshape(*q.shape[:-1], 2 * q.shape[-1])
        return self.e2m1[codes] * cp.repeat(self.e4m3[sf_linear], 16, axis=-1)

    def matmul_t(self, a, b):
        return self.cp.matmul(a, self.cp.swapaxes(b, -1, -2))

    def six_d(self, dense, rows, k):
        rest_m, rest_k = -(-rows // 128), R.blocked_cols(k) // 4
        return dense.reshape(-1, rest_m, rest_k, 32, 4, 4).transpose(3, 4, 1, 5, 2, 0)

    def stream(self):
        return self.cp.cuda.Stream(non_blocking=True)

    def use_stream(self, s):
        return s

    def synchronize(self):
        self.cp.cuda.Device().synchronize()


def _make_device():
    try:
        import torch

        if torch.cuda.is_available():
            return TorchDevice(torch)
    except ImportError:
        pass
    cupy = pytest.importorskip("cupy", reason="the GPU tests need PyTorch or CuPy")
    return CupyDevice(cupy)

def _backends():
    names = ["auto", "portable"]
    if HAVE_GPU:
        native = _nvfp4_ext.device_info(0)["backend"]
        if native not in names and native != "none":
            names.append(native)
    return names


BACKENDS = _backends()


def run_backend(backend, fn):
    """Runs fn(); a forced non-portable backend that does not implement a case may
    answer NotImplementedError (auto then falls back) -> skip. portable must run all."""
    try:
        return fn()
    except NotImplementedError as e:
        if backend in ("auto", "portable"):
            raise
        pytest.skip(f"backend {backend} does not run this case: {e}")


@functools.lru_cache(maxsize=None)
def library_path():
    """The installed libnvfp4.so, located once per session with `python -m nvfp4 --cmake-dir`:
    that subprocess takes about a second, which must never fall inside a graph capture (see
    graph_capture)."""
    import subprocess
    import sys
    cmake_dir = subprocess.run([sys.executable, "-m", "nvfp4", "--cmake-dir"], capture_output=True,
                               text=True, check=True).stdout.strip()
    return os.path.join(os.path.dirname(os.path.dirname(cmake_dir)), "libnvfp4.so")


@functools.lru_cache(maxsize=None)
def c_library():
    """libnvfp4.so through ctypes (the C ABI tests), located once per session (library_path)."""
    import ctypes
    lib = ctypes.CDLL(library_path())
    lib.nvfp4_last_error.restype = ctypes.c_char_p
    return lib


def graph_capture(torch, graph, stream=None):
    """torch.cuda.graph in thread_local capture mode. The default (global) mode also fails a CUDA call
    made by any other thread while the capture is open, and invalidates the capture: once
    test_gpu_frameworks has started JAX, JAX's runtime threads make such calls (session 13's full
    suite: a grouped capture invalidated, then every later JAX test failed on a stream in error
    state). thread_local still rejects an unsafe call made by the capturing thread, i.e. by nvfp4."""
    return torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local")


def kernel_names(dev, fn):
    """The CUDA kernels fn() launches (torch profiler, after a warm-up call that does the
    per-device setup), as the profiler names them (one entry per kernel, launches merged)."""
    torch = dev.torch
    fn()
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.key for e in prof.key_averages()]
    if not names:  # no CUPTI records at all, e.g. under compute-sanitizer: nothing to assert on
        pytest.skip("the profiler saw no CUDA activity (compute-sanitizer?)")
    return names


# ---------------------------------------------------------------------------
# Operands: generated on the host (numpy), uploaded; the reference uses linear scales
# ---------------------------------------------------------------------------

class Operand:
    """A random packed operand on the device, with its linear scales and, for the op,
    the scales in the layout under test."""

    def __init__(self, dev, rows, k, L, layout, rng, vector=False, lo=2.0 ** -4, hi=2.0 ** 4):
        lead = () if L is None else (L,)
        shape = lead + ((k // 2,) if vector else (rows, k // 2))
        q = R.random_fp4(shape, rng)
        sf = R.random_scales(shape[:-1] + (k // 16,), rng, lo, hi)
        self.q_host, self.sf_host = q, sf
        self.q = dev.put(q)
        self.sf_linear = dev.put(sf)
        if layout == "blocked":   # a vector's blocked scales are those of a 1-row matrix
            self.sf = dev.put(R.to_blocked(sf[..., None, :] if vector else sf))
        else:
            self.sf = self.sf_linear
        self.vector = vector

    def values(self, dev):
        """float64 (…, rows, K) on the device (vectors: (…, 1, K))."""
        q, sf = self.q, self.sf_linear
        if self.vector:
            q, sf = q.reshape(*q.shape[:-1], 1, q.shape[-1]), sf.reshape(*sf.shape[:-1], 1, sf.shape[-1])
        return dev.decode(q, sf)


def ref_gemm(dev, a: Operand, b: Operand) -> np.ndarray:
    return dev.get(dev.matmul_t(a.values(dev), b.values(dev)))
