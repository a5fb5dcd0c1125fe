"""Framework plumbing: which framework an array belongs to, where it lives, how to
allocate outputs of the same kind, and which CUDA stream to run on.

No validation of shapes or dtypes happens here (libnvfp4's api.cpp does it)."""

from __future__ import annotations

import numpy as np

from . import _nvfp4_ext as _ext

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13


def framework(x) -> str:
    mod = type(x).__module__
    if mod.startswith("torch"):
        return "torch"
    if mod.startswith("cupy"):
        return "cupy"
    if mod.startswith("jax") or mod.startswith("jaxlib"):
        return "jax"
    if isinstance(x, np.ndarray):
        return "numpy"
    if hasattr(x, "__dlpack__"):
        return "dlpack"
    raise TypeError(f"expected an array (numpy, CuPy, PyTorch, JAX or any DLPack producer), got {type(x).__name__}")


def dlpack_device(x) -> tuple[int, int]:
    if isinstance(x, np.ndarray):
        return (_DL_CPU, 0)
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        raise TypeError(f"expected an array with __dlpack_device__, got {type(x).__name__}")
    kind, ordinal = dev()
    return int(kind), int(ordinal)


def on_gpu(x) -> bool:
    return dlpack_device(x)[0] in (_DL_CUDA, _DL_CUDA_MANAGED)


def as_bytes(x):
    """torch float4_e2m1fn_x2 / float8_e4m3fn tensors as uint8 views (no copy), so that
    any torch version's DLPack export works; other arrays pass unchanged."""
    if framework(x) == "torch":
        import torch

        special = [getattr(torch, n, None) for n in ("float4_e2m1fn_x2", "float8_e4m3fn")]
        if x.dtype in [s for s in special if s is not None]:
            return x.view(torch.uint8)
    return x


class Context:
    """The framework/device of an op's first operand: allocates outputs and picks the stream."""

    def __init__(self, like, op: str):
        self.op = op
        self.like = like
        self.fw = framework(like)
        self.device_kind, self.device_id = dlpack_device(like)
        self.gpu = self.device_kind in (_DL_CUDA, _DL_CUDA_MANAGED)

    # -- allocation -------------------------------------------------------
    def empty(self, shape, dtype: str):
        shape = tuple(int(s) for s in shape)
        fw = self.fw
        if fw == "torch":
            import torch

            return torch.empty(shape, dtype=getattr(torch, dtype), device=self.like.device)
        if fw == "cupy":
            import cupy

            if dtype == "bfloat16":
                raise TypeError(f"{self.op}: CuPy has no bfloat16 arrays; pass out= or use another out dtype")
            with cupy.cuda.Device(self.device_id):
                return cupy.empty(shape, dtype=dtype)
        if fw == "jax":
            import jax
            import jax.numpy as jnp

            dev = next(iter(self.like.devices()))
            return jax.device_put(jnp.zeros(shape, dtype=getattr(jnp, dtype)), dev).block_until_ready()
        if self.gpu:
            raise TypeError(f"{self.op}: cannot allocate outputs for {type(self.like).__name__} device arrays; pass out=")
        if dtype == "bfloat16":
            raise TypeError(f"{self.op}: numpy has no bfloat16 arrays; use out_dtype='float16' or 'float32', "
                            "or pass torch/JAX arrays")
        return np.empty(shape, dtype=dtype)

    def full1(self, value: float):
        """A 1-element float32 array holding `value` on the operands' device."""
        out = np.array([value], dtype=np.float32)
        if self.fw == "torch":
            import torch

            return torch.tensor(out, device=self.like.device)
        if self.fw == "cupy":
            import cupy

            with cupy.cuda.Device(self.device_id):
                return cupy.asarray(out)
        if self.fw == "jax":
            import jax

            return jax.device_put(out, next(iter(self.like.devices())))
        return out

    # -- streams ----------------------------------------------------------
    def stream(self, stream) -> int:
        if not self.gpu:
            return 0
        if stream is None:
            if self.fw == "torch":
                import torch

                return int(torch.cuda.current_stream(self.like.device).cuda_stream)
            if self.fw == "cupy":
                import cupy

                with cupy.cuda.Device(self.device_id):
                    return int(cupy.cuda.get_current_stream().ptr)
            return 0  # the legacy default stream
        return stream_handle(stream)

    def before(self, *arrays):
        """JAX computes asynchronously on its own streams: wait for the inputs."""
        if self.fw == "jax":
            for a in arrays:
                if hasattr(a, "block_until_ready"):
                    a.block_until_ready()

    def after(self, stream_handle_: int):
        """JAX cannot order its work after ours: finish before handing results back."""
        if self.fw == "jax" and self.gpu:
            _ext.stream_synchronize(stream_handle_)


def stream_handle(stream) -> int:
    """An int handle, an object with __cuda_stream__ (cuda.core, recent torch/CuPy),
    a torch.cuda.Stream (.cuda_stream) or a CuPy stream (.ptr)."""
    if isinstance(stream, bool):
        raise TypeError("stream must be an int handle or a stream object, got bool")
    if isinstance(stream, int):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        return int(value[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        h = getattr(stream, attr, None)
        if h is not None:
            return int(h)
    raise TypeError(f"stream must be an int handle or an object with __cuda_stream__, got {type(stream).__name__}")


def host_float(value, name: str) -> float:
    """A Python number or a 1-element array of any framework (e.g. the global_scale a
    previous quantize returned) as a Python float."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a float or a 1-element array, got bool")
    if isinstance(value, (int, float, np.floating, np.integer)):
        return float(value)
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "reshape"):
        n = 1
        for d in shape:
            n *= int(d)
        if n != 1:
            raise ValueError(f"{name} must be a float or a 1-element array, got shape {tuple(int(d) for d in shape)}")
        return float(value.reshape(-1)[0])
    raise TypeError(f"{name} must be a float or a 1-element array, got {type(value).__name__}")


def permute(x, axes):
    """x.transpose(*axes) for numpy/CuPy/JAX, x.permute(*axes) for torch (whose
    transpose swaps two dims only)."""
    if framework(x) == "torch":
        return x.permute(*axes)
    return x.transpose(*axes)
