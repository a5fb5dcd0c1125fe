"""GPU tests (marker `gpu`, skipped without a CUDA device): every op on device arrays
(PyTorch when importable, else CuPy), every backend of the device, against the
float64 reference. The reference decodes the operands with nvfp4.reference's tables
and multiplies them in float64 on the GPU (torch/CuPy matmul), so the gpu-mode shapes
stay fast. quantize / dequantize / swizzle must be bit-identical to the CPU library.

Run: python -m pytest -q tests/test_gpu_ops.py  (aimed at < 3 minutes on an H100)."""

from __future__ import annotations

import numpy as np
import pytest

import nvfp4
from nvfp4 import _nvfp4_ext
from nvfp4 import reference as R
from _util import (EDGE_CASES, assert_matches, assert_same_floats, edge_input, interesting_input, pow2_alpha,
                   POISON_BYTE)

pytestmark = pytest.mark.gpu

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


@pytest.fixture(scope="module")
def dev():
    if not HAVE_GPU:
        pytest.skip("no CUDA device")
    return _make_device()


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


# ---------------------------------------------------------------------------
# GEMV
# ---------------------------------------------------------------------------

GEMV_GPU_MODE = [(128, 256, 1), (128, 1536, 1), (128, 3072, 1), (256, 7168, 1), (2432, 4608, 2), (384, 7168, 2),
                 (512, 512, 2), (512, 4096, 2), (512, 1536, 2)]
GEMV_ODD = [(1, 32, None), (7, 96, 3), (129, 32, 1), (1000, 96, 2), (1000, 32, None)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,K,L", GEMV_GPU_MODE + GEMV_ODD)
def test_gemv(dev, M, K, L, layout, backend, rng):
    a = Operand(dev, M, K, L, layout, rng)
    b = Operand(dev, 1, K, L, layout, rng, vector=True)
    acc = ref_gemm(dev, a, b)[..., 0]
    alpha = pow2_alpha(acc)
    out = run_backend(backend, lambda: nvfp4.gemv(a.q, a.sf, b.q, b.sf, alpha=alpha, sf_layout=layout,
                                                  backend=backend))
    assert tuple(out.shape) == ((M,) if L is None else (L, M))
    assert_matches(dev.get(out), alpha * acc, "float16")


# ---------------------------------------------------------------------------
# GEMM
# ---------------------------------------------------------------------------

GEMM_GPU_MODE = [(128, 256, 256), (128, 1536, 7168), (128, 3072, 1536), (256, 7168, 256), (256, 7168, 2048),
                 (2304, 4608, 7168), (384, 7168, 2304), (512, 512, 7168), (512, 4096, 512), (512, 1536, 7168)]
GEMM_ODD = [(1, 1000, 32, None), (7, 129, 96, 3), (129, 7, 32, None), (1000, 1, 96, 1), (1000, 129, 96, None),
            (129, 1000, 32, 3), (1, 1, 32, None), (1000, 300, 2080, 2),  # sm90a: pre-decoded tokens, M > 512
            (1030, 136, 2080, 2), (2050, 1000, 4096, None),  # sm90a: fused short chains + misaligned scales; M > 2048
            (100, 3000, 4096, None),  # sm90a: fused, 24 tiles x 4-CTA clusters
            (1030, 2000, 2080, 2)]  # sm90a: persistent pre-decoded kernel, 136-token tiles (256), M/N/K tails


def _gemm_case(dev, M, N, K, L, layout, rng, **kw):
    a = Operand(dev, M, K, L, layout, rng, **kw)
    b = Operand(dev, N, K, L, layout, rng, **kw)
    return a, b, ref_gemm(dev, a, b)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", [s + (1,) for s in GEMM_GPU_MODE] + GEMM_ODD)
def test_gemm(dev, M, N, K, L, layout, backend, rng):
    a, b, acc = _gemm_case(dev, M, N, K, L, layout, rng)
    alpha = pow2_alpha(acc)
    out = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha, sf_layout=layout,
                                                  backend=backend))
    assert tuple(out.shape) == ((M, N) if L is None else (L, M, N))
    assert_matches(dev.get(out), alpha * acc, "float16")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", [(2, 4100, 2048, 3), (2, 200, 96, None), (3, 200, 96, None), (4, 1000, 4096, 2),
                                     (130, 3, 96, 1)])
def test_gemm_few_tokens(dev, M, N, K, L, layout, backend, rng):
    """M <= 2 runs as one GEMV per token on sm90a (row m's scales as a one-row operand,
    rows of a 128-row band of the blocked layout); M = 3, 4 take the tiled GEMM; N < 4 for
    the mirror case. Device alpha, fp32 out."""
    a, b, acc = _gemm_case(dev, M, N, K, L, layout, rng)
    alpha = pow2_alpha(acc) * 0.75
    out = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=dev.scalar(alpha), sf_layout=layout,
                                                  out_dtype="float32", backend=backend))
    assert tuple(out.shape) == ((M, N) if L is None else (L, M, N))
    assert_matches(dev.get(out), alpha * acc, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("M,N,K,L", [(128, 1536, 7168, 1), (129, 1000, 96, 3), (512, 512, 512, None),
                                     (1100, 2100, 2048, 2)])
def test_gemm_out_dtypes(dev, M, N, K, L, out_dtype, backend, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    a, b, acc = _gemm_case(dev, M, N, K, L, "linear", rng)
    alpha = pow2_alpha(acc) * 0.75
    out = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha, out_dtype=out_dtype,
                                                  backend=backend))
    assert_matches(dev.get(out), alpha * acc, out_dtype)


# ---------------------------------------------------------------------------
# GEMM: the pre-decoded kernels' 136-token tile (sm90a)
# ---------------------------------------------------------------------------

IS_SM90 = HAVE_GPU and _nvfp4_ext.device_info(0)["backend"] == "sm90a"
needs_sm90 = pytest.mark.skipif(not IS_SM90, reason="the 136-token tile is sm90a's (a CC 9.0 device)")

# M just above a multiple of 128: where the 136-token instance needs fewer token tiles for
# less work, the plan runs it (cpp/src/sm90/gemm_plan.hpp choose_token_tile; the same shapes
# on an H100's 132 SMs in tests/sm90_host/gemm_plan_test.cpp test_token_tile).
# (M, N, K, L, token tile, kernel) on 132 SMs.
TOKEN_TILE = [
    (129, 7168, 7168, 1, 136, "predecoded"),   # issue 22's shape: one tile, clusters of 2
    (129, 2048, 8192, 1, 136, "predecoded"),   # clusters of 8 (the run-time split reduction)
    (136, 2048, 8192, 3, 136, "predecoded"),   # clusters of 2, batches
    (272, 2000, 4096, 1, 136, "predecoded"),   # clusters of 4, N tail
    (257, 7168, 2048, 1, 136, "predecoded"),   # one CTA per tile; the last tile holds one token
    (257, 4000, 2048, 3, 136, "persistent"),   # 192 tiles, batches, N tail
    (1025, 4096, 2048, 1, 136, "persistent"),  # 256 tiles (against 288 of 128 tokens)
    (200, 4096, 4096, 1, 128, "predecoded"),   # two tiles at either width: the 128-token kernel
    (137, 2048, 8192, 1, 128, "predecoded"),
]


@needs_sm90
@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L,tile,kernel", TOKEN_TILE)
def test_gemm_token_tile_136(dev, M, N, K, L, tile, kernel, layout, out_dtype, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    a, b, acc = _gemm_case(dev, M, N, K, L, layout, rng)
    alpha = pow2_alpha(acc) * (1.0 if out_dtype == "float16" else 0.75)
    out = nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha, sf_layout=layout, out_dtype=out_dtype, backend="sm90a")
    assert tuple(out.shape) == (L, M, N)
    assert_matches(dev.get(out), alpha * acc, out_dtype)


def _gemm_kernel_names(dev, fn):
    """The CUDA kernels fn() launches (torch profiler, after a warm-up call)."""
    torch = dev.torch
    fn()
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.key for e in prof.key_averages()]


@needs_sm90
@pytest.mark.parametrize("M,N,K,L,tile,kernel", TOKEN_TILE)
def test_gemm_token_tile_kernel(dev, M, N, K, L, tile, kernel, rng):
    """The plan's tile and kernel, seen in the kernel names (templates on the token tile)."""
    import re

    if dev.name != "torch":
        pytest.skip("needs PyTorch (profiler)")
    if dev.torch.cuda.get_device_properties(0).multi_processor_count != 132:
        pytest.skip("the expected tiles are those of a 132-SM device (H100 SXM, H200)")
    a, b = Operand(dev, M, K, L, "linear", rng), Operand(dev, N, K, L, "linear", rng)
    names = _gemm_kernel_names(dev, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, backend="sm90a"))
    # demangled "nvfp4_sm90_gemm_persistent_kernel<136>(...)" or mangled "...kernelILi136E..."
    found = {(m.group(1), int(m.group(2) or m.group(3))) for n in names
             for m in [re.search(r"nvfp4_sm90_gemm_(predecoded|persistent)_kernel(?:<(\d+)>|ILi(\d+)E)", n)] if m}
    assert found == {(kernel, tile)}, names


@pytest.mark.parametrize("backend", BACKENDS)
def test_gemm_extreme_scales(dev, backend, rng):
    """Every e4m3 scale byte but NaN (subnormals, zero, negatives, 448): the products
    span 2^-10 .. 2688, which the fp16 emulation must still represent exactly."""
    M, N, K = 257, 130, 1024
    a, b = Operand(dev, M, K, None, "linear", rng), Operand(dev, N, K, None, "linear", rng)
    codes = np.array([c for c in range(256) if c not in (0x7F, 0xFF)], np.uint8)
    for op in (a, b):
        op.sf_host = rng.choice(codes, op.sf_host.shape).astype(np.uint8)
        op.sf = op.sf_linear = dev.put(op.sf_host)
    acc = ref_gemm(dev, a, b)
    out = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, out_dtype="float32", backend=backend))
    assert_matches(dev.get(out), acc, "float32")
    # the smallest scales alone (products 2^-10 .. 6·7·2^-9)
    for op in (a, b):
        op.sf = op.sf_linear = dev.put(rng.integers(1, 8, op.sf_host.shape).astype(np.uint8))
    acc = ref_gemm(dev, a, b)
    out = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=2.0 ** 16, out_dtype="float32",
                                                  backend=backend))
    assert_matches(dev.get(out), 2.0 ** 16 * acc, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nan_scales_propagate(dev, layout, backend, rng):
    M, N, K = 300, 200, 512
    qa, qb = R.random_fp4((M, K // 2), rng), R.random_fp4((N, K // 2), rng)
    sfa, sfb = R.random_scales((M, K // 16), rng), R.random_scales((N, K // 16), rng)
    sfa[5, 3], sfa[299, 31], sfb[130, 0] = 0x7F, 0xFF, 0x7F
    qa[5, :] = 0                                                    # NaN * 0 is NaN too
    lay = (lambda s: R.to_blocked(s)) if layout == "blocked" else (lambda s: s)
    out = run_backend(backend, lambda: nvfp4.gemm(dev.put(qa), dev.put(lay(sfa)), dev.put(qb), dev.put(lay(sfb)),
                                                  sf_layout=layout, out_dtype="float32", backend=backend))
    got = dev.get(out)
    expect = np.zeros((M, N), bool)
    expect[[5, 299]] = True
    expect[:, 130] = True
    np.testing.assert_array_equal(np.isnan(got), expect)
    v = run_backend(backend, lambda: nvfp4.gemv(dev.put(qa), dev.put(lay(sfa)), dev.put(qb[0]),
                                                dev.put(lay(sfb[:1]) if layout == "blocked" else sfb[0]),
                                                sf_layout=layout, out_dtype="float32", backend=backend))
    np.testing.assert_array_equal(np.isnan(dev.get(v)), expect[:, 0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_gemm_device_alpha_stream_and_out(dev, backend, rng):
    M, N, K, L = 256, 384, 1024, 2
    a, b, acc = _gemm_case(dev, M, N, K, L, "linear", rng)
    alpha = pow2_alpha(acc) * 1.25
    alpha_dev = dev.scalar(alpha)
    out = dev.poisoned((L, M, N), "float16")
    dev.synchronize()                                # inputs were written on the default stream
    s = dev.stream()
    res = run_backend(backend, lambda: nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha_dev, out=out, stream=s,
                                                  backend=backend))
    assert res is out
    s.synchronize()
    assert_matches(dev.get(out), alpha * acc, "float16")
    # stream=None on a framework's current stream
    out2 = dev.poisoned((L, M, N), "float32")
    with dev.use_stream(s):
        nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha_dev, out=out2, backend=backend)
    s.synchronize()
    assert_matches(dev.get(out2), alpha * acc, "float32")
    # an int handle
    handle = s.cuda_stream if dev.name == "torch" else s.ptr
    out3 = nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha, stream=int(handle), backend=backend)
    s.synchronize()
    assert_matches(dev.get(out3), alpha * acc, "float16")


def test_gemm_cuda_graph_reads_alpha_at_replay(dev, rng):
    if dev.name != "torch":
        pytest.skip("graph capture through torch.cuda.graph")
    torch = dev.torch
    M, N, K = 128, 256, 512
    a, b, acc = _gemm_case(dev, M, N, K, None, "linear", rng)
    alpha = pow2_alpha(acc)
    alpha_dev = dev.scalar(alpha)
    out = dev.empty((M, N), "float32")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):                       # warm-up outside capture
        nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha_dev, out=out)
    s.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        nvfp4.gemm(a.q, a.sf, b.q, b.sf, alpha=alpha_dev, out=out)
    alpha_dev.fill_(2 * alpha)
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert_matches(dev.get(out), 2 * alpha * acc, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_gemm_gpu_mode_permuted_views_and_6d_scales(dev, backend, rng):
    """gpu-mode inputs: (M, K/2, L) views with L outermost, and the (32, 4, rest_m, 4,
    rest_k, L) scale view whose padding gpu-mode fills with non-zero bytes."""
    M, N, K, L = 200, 136, 768, 2
    a, b, acc = _gemm_case(dev, M, N, K, L, "linear", rng)
    alpha = pow2_alpha(acc)
    a_gm = a.q.permute(1, 2, 0) if dev.name == "torch" else a.q.transpose(1, 2, 0)
    b_gm = b.q.permute(1, 2, 0) if dev.name == "torch" else b.q.transpose(1, 2, 0)
    back = (lambda x: x.permute(2, 0, 1)) if dev.name == "torch" else (lambda x: x.transpose(2, 0, 1))
    pad = lambda s: rng.integers(1, 3, size=s)
    va = dev.six_d(dev.put(R.to_blocked_6d(a.sf_host, pad_value=pad)), M, K)
    vb = dev.six_d(dev.put(R.to_blocked_6d(b.sf_host, pad_value=pad)), N, K)
    out = run_backend(backend, lambda: nvfp4.gemm(back(a_gm), va, back(b_gm), vb, alpha=alpha, sf_layout="blocked",
                                                  backend=backend))
    assert_matches(dev.get(out), alpha * acc, "float16")
    lin = nvfp4.unswizzle_scales(va, M, K)                         # the 6-D view into unswizzle too
    np.testing.assert_array_equal(dev.get(lin), a.sf_host)


@pytest.mark.parametrize("backend", BACKENDS)
def test_strided_operands(dev, backend, rng):
    M, N, K, L = 130, 70, 256, 3
    a, b, acc = _gemm_case(dev, M, N, K, L, "linear", rng)
    alpha = pow2_alpha(acc)

    def padded(x):
        big = dev.empty((x.shape[0], x.shape[1] + 3, x.shape[2] + 32), "uint8")
        big[:, : x.shape[1], : x.shape[2]] = x
        return big[:, : x.shape[1], : x.shape[2]]

    out_big = dev.poisoned((L, M + 1, N + 8), "float32")
    out = out_big[:, 1:, 4: N + 4]
    run_backend(backend, lambda: nvfp4.gemm(padded(a.q), padded(a.sf), padded(b.q), padded(b.sf), alpha=alpha,
                                            out=out, backend=backend))
    assert_matches(dev.get(out), alpha * acc, "float32")
    host = dev.get(out_big).view(np.uint8)
    assert (host[:, 0] == POISON_BYTE).all(), "wrote outside the output view"


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_size_is_a_no_op(dev, backend):
    q = dev.empty((0, 32), "uint8")
    sf = dev.empty((0, 4), "uint8")
    b = dev.put(np.zeros((8, 32), np.uint8))
    sfb = dev.put(np.zeros((8, 4), np.uint8))
    out = nvfp4.gemm(q, sf, b, sfb, backend=backend)
    assert tuple(out.shape) == (0, 8)
    out = nvfp4.gemm(b, sfb, q, sf, backend=backend)
    assert tuple(out.shape) == (8, 0)


# ---------------------------------------------------------------------------
# Dual GEMM
# ---------------------------------------------------------------------------

DUAL_GPU_MODE = [(1536, 512, 7168), (256, 512, 256), (3072, 1024, 1536), (7168, 1024, 256), (7168, 2304, 2048),
                 (4608, 384, 7168), (7168, 384, 2304), (512, 768, 7168), (4096, 768, 512)]
DUAL_ODD = [(1, 7, 32, None), (129, 1000, 96, 3), (1000, 1, 32, 1), (7, 129, 96, None)]


def dual_case(dev, M, N, K, L, layout, activation, rng):
    """Random operands of a dual GEMM, power-of-two alphas and the float64 reference."""
    a = Operand(dev, M, K, L, layout, rng)
    b1, b2 = Operand(dev, N, K, L, layout, rng), Operand(dev, N, K, L, layout, rng)
    av = a.values(dev)
    acc1 = dev.get(dev.matmul_t(av, b1.values(dev)))
    acc2 = dev.get(dev.matmul_t(av, b2.values(dev)))
    a1, a2 = pow2_alpha(acc1, 3.0), pow2_alpha(acc2, 16.0)
    ref = R.activation_ref(a1 * acc1, activation) * (a2 * acc2)
    return a, b1, b2, a1, a2, ref


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,L", [s + (1,) for s in DUAL_GPU_MODE] + DUAL_ODD)
def test_dual_gemm(dev, M, N, K, L, layout, backend, rng):
    activation = "silu" if (M + N + K) % 2 == 0 or layout == "linear" else "gelu_tanh"
    a, b1, b2, a1, a2, ref = dual_case(dev, M, N, K, L, layout, activation, rng)
    out = run_backend(backend, lambda: nvfp4.dual_gemm(a.q, a.sf, b1.q, b1.sf, b2.q, b2.sf, alpha1=a1, alpha2=a2,
                                                       activation=activation, sf_layout=layout, backend=backend))
    assert_matches(dev.get(out), ref, "float16")


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "portable"])
@pytest.mark.parametrize("M,N,L,layout", [(8300, 4098, None, "blocked"), (4200, 4100, 2, "linear")])
def test_dual_gemm_row_chunks(dev, M, N, L, layout, backend, rng):
    """Many token tiles and ragged N: on sm90a the fused kernel takes both (N = 4098 fp16 rows
    are not 16-byte aligned: its plain-store epilogue; N = 4100: TMA stores). The composed
    path's row chunks (fp32 products over 256 MiB) now run only where the fused kernel's
    token workspace would pass 1 GiB, a size not tested here."""
    a, b1, b2, a1, a2, ref = dual_case(dev, M, N, 64, L, layout, "silu", rng)
    out = run_backend(backend, lambda: nvfp4.dual_gemm(a.q, a.sf, b1.q, b1.sf, b2.q, b2.sf, alpha1=a1, alpha2=a2,
                                                       sf_layout=layout, backend=backend))
    assert_matches(dev.get(out), ref, "float16")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("activation", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
def test_dual_gemm_activations_dtypes_device_alphas(dev, activation, out_dtype, backend, rng):
    if out_dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    M, N, K = 256, 384, 2048
    a = Operand(dev, M, K, None, "linear", rng)
    b1, b2 = Operand(dev, N, K, None, "linear", rng), Operand(dev, N, K, None, "linear", rng)
    acc1, acc2 = ref_gemm(dev, a, b1), ref_gemm(dev, a, b2)
    a1, a2 = pow2_alpha(acc1, 3.0) * 1.5, pow2_alpha(acc2, 16.0) * 0.75
    ref = R.activation_ref(a1 * acc1, activation) * (a2 * acc2)
    out = dev.poisoned((M, N), out_dtype)
    dev.synchronize()
    s = dev.stream()
    run_backend(backend, lambda: nvfp4.dual_gemm(a.q, a.sf, b1.q, b1.sf, b2.q, b2.sf, alpha1=dev.scalar(a1),
                                                 alpha2=dev.scalar(a2), activation=activation, out=out, stream=s,
                                                 backend=backend))
    s.synchronize()
    assert_matches(dev.get(out), ref, out_dtype)


# ---------------------------------------------------------------------------
# Grouped GEMM
# ---------------------------------------------------------------------------

GROUPS = [([96, 128], [128, 256], [256, 512]),
          ([256, 72], [512, 384], [256, 256]),
          ([80, 128, 256], [384, 256, 128], [256, 512, 256]),
          ([64, 72, 96], [128, 384, 512], [512, 512, 256]),
          ([40, 56, 384, 512], [512, 384, 256, 128], [256] * 4),
          ([512, 384, 256, 128], [256] * 4, [512, 768, 512, 768]),
          ([1, 7, 129, 1000], [1000, 129, 7, 1], [32, 96, 32, 96])]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("Ms,Ns,Ks", GROUPS)
def test_grouped_gemm(dev, Ms, Ns, Ks, layout, backend, rng):
    A = [Operand(dev, m, k, None, layout, rng) for m, k in zip(Ms, Ks)]
    B = [Operand(dev, n, k, None, layout, rng) for n, k in zip(Ns, Ks)]
    accs = [ref_gemm(dev, a, b) for a, b in zip(A, B)]
    alphas = [pow2_alpha(acc) * 1.5 for acc in accs]
    outs = run_backend(backend, lambda: nvfp4.grouped_gemm([a.q for a in A], [a.sf for a in A], [b.q for b in B],
                                                           [b.sf for b in B], alphas=alphas, sf_layout=layout,
                                                           backend=backend))
    assert len(outs) == len(Ms)
    for o, acc, al in zip(outs, accs, alphas):
        assert_matches(dev.get(o), al * acc, "float16")


PACKED = [([80, 176, 128, 72, 64, 248, 96, 160], 512, 2048), ([0, 7, 0, 129, 1], 1000, 96),
          ([192, 320], 3072, 512), ([40, 76, 168, 72, 164, 148, 196, 160], 256, 7168)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("with_alphas", [False, True])
@pytest.mark.parametrize("Ms,N,K", PACKED)
def test_grouped_gemm_packed(dev, Ms, N, K, with_alphas, backend, rng):
    G, total = len(Ms), sum(Ms)
    a = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    b = Operand(dev, N, K, G, "linear", rng, lo=0.25, hi=1.0)
    offsets_host = np.concatenate([[0], np.cumsum(Ms)]).astype(np.int32)
    offsets = dev.put(offsets_host)
    av, bv = a.values(dev), b.values(dev)
    ref = np.zeros((total, N))
    al = rng.choice([0.125, 0.25, 0.375], G).astype(np.float32) if with_alphas else np.ones(G, np.float32)
    for g in range(G):
        lo, hi = offsets_host[g], offsets_host[g + 1]
        if hi > lo:
            ref[lo:hi] = al[g] * dev.get(dev.matmul_t(av[lo:hi], bv[g]))
    out = run_backend(backend, lambda: nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, offsets,
                                                                 alphas=dev.put(al) if with_alphas else None,
                                                                 out_dtype="float32", backend=backend))
    assert_matches(dev.get(out), ref, "float32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_grouped_gemm_packed_many_experts_fp16(dev, backend, rng):
    """40 experts (the sm90a kernel scans the offsets 32 experts at a time), empty and
    one-row experts, a 128-row boundary inside an expert, fp16 output."""
    Ms = [int(x) for x in rng.integers(0, 70, 40)]
    Ms[3], Ms[7], Ms[11], Ms[30] = 0, 1, 130, 0
    N, K, G, total = 392, 256, len(Ms), sum(Ms)
    a = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    b = Operand(dev, N, K, G, "linear", rng, lo=0.25, hi=1.0)
    offsets_host = np.concatenate([[0], np.cumsum(Ms)]).astype(np.int32)
    av, bv = a.values(dev), b.values(dev)
    al = rng.choice([0.125, 0.25], G).astype(np.float32)
    ref = np.zeros((total, N))
    for g in range(G):
        lo, hi = offsets_host[g], offsets_host[g + 1]
        if hi > lo:
            ref[lo:hi] = al[g] * dev.get(dev.matmul_t(av[lo:hi], bv[g]))
    out = run_backend(backend, lambda: nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, dev.put(offsets_host),
                                                                 alphas=dev.put(al), backend=backend))
    assert_matches(dev.get(out), ref, "float16")


@pytest.mark.parametrize("backend", BACKENDS)
def test_grouped_gemm_packed_bad_table_is_safe(dev, backend, rng):
    """An offsets table that is not non-decreasing within [0, total_M] (it lives on the
    device, so it cannot be validated): every backend clamps it; no fault, no hang.
    Rows it covers for the first time come out finite (the others may be skipped)."""
    total, N, K = 200, 136, 64
    a = Operand(dev, total, K, None, "linear", rng, lo=0.25, hi=1.0)
    b = Operand(dev, N, K, 4, "linear", rng, lo=0.25, hi=1.0)
    offsets = dev.put(np.array([0, 300, 100, -5, 10 ** 6], np.int32))
    out = dev.poisoned((total, N), "float32")
    dev.synchronize()
    run_backend(backend, lambda: nvfp4.grouped_gemm_packed(a.q, a.sf, b.q, b.sf, offsets, out=out,
                                                           out_dtype="float32", backend=backend))
    dev.synchronize()
    assert np.isfinite(dev.get(out)[:100]).all()


# ---------------------------------------------------------------------------
# quantize / dequantize / swizzle: bit-identical to the CPU library
# ---------------------------------------------------------------------------

QUANT_SHAPES = [(64,), (7, 96), (3, 129, 160), (256, 7168), (1000, 32)]


def _cpu_quantize(dev, xd, **kw):
    """The CPU library's quantize of the same values (bf16 through a torch CPU tensor)."""
    if dev.name == "torch":
        q, sf, g = nvfp4.quantize(xd.cpu(), **kw)
        return q.numpy(), sf.numpy(), g.numpy()
    return nvfp4.quantize(dev.get(xd), **kw)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("given_gs", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", QUANT_SHAPES)
def test_quantize_matches_cpu_bit_for_bit(dev, shape, dtype, layout, given_gs, backend, rng):
    if dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    x = interesting_input(shape, "float32", rng)
    xd = dev.put(x).to(dev.torch.bfloat16) if dtype == "bfloat16" else dev.put(x.astype(dtype))
    gs = float(np.float32(rng.uniform(0.01, 2.0))) if given_gs else None
    q, sf, g = run_backend(backend, lambda: nvfp4.quantize(xd, global_scale=gs, sf_layout=layout, backend=backend))
    qc, sfc, gc = _cpu_quantize(dev, xd, global_scale=gs, sf_layout=layout)
    np.testing.assert_array_equal(dev.get(q), qc)
    np.testing.assert_array_equal(dev.get(sf), sfc)
    assert dev.get(g).tobytes() == gc.tobytes()
    qr, sfr, gr = R.quantize_ref(dev.get(xd).astype(np.float32), global_scale=gs, sf_layout=layout)
    np.testing.assert_array_equal(qc, qr)
    np.testing.assert_array_equal(sfc, sfr)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", EDGE_CASES)
def test_quantize_edge_inputs_match_cpu(dev, case, backend, rng):
    x = edge_input(case, (130, 256), rng)
    for gs in (None, 1.0, 1e-30):
        for layout in LAYOUTS:
            q, sf, g = run_backend(backend, lambda: nvfp4.quantize(dev.put(x), global_scale=gs, sf_layout=layout,
                                                                   backend=backend))
            qc, sfc, gc = nvfp4.quantize(x, global_scale=gs, sf_layout=layout)
            np.testing.assert_array_equal(dev.get(q), qc, err_msg=f"{case} gs={gs} {layout}")
            np.testing.assert_array_equal(dev.get(sf), sfc, err_msg=f"{case} gs={gs} {layout}")
            assert dev.get(g).tobytes() == gc.tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("gs", [1.0, 0.37, "device"])
def test_dequantize_every_code_and_scale_matches_cpu(dev, dtype, gs, backend):
    if dtype == "bfloat16" and dev.name != "torch":
        pytest.skip("bfloat16 device arrays need PyTorch")
    q = np.tile(R.pack_fp4(np.arange(32) % 16), (256, 1))           # every code in every row
    sf = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 2, axis=1)   # row r: scale byte r
    for layout in LAYOUTS:
        sf_in = R.to_blocked(sf) if layout == "blocked" else sf
        g = dev.scalar(0.37) if gs == "device" else gs
        out = run_backend(backend, lambda: nvfp4.dequantize(dev.put(q), dev.put(sf_in), global_scale=g,
                                                            sf_layout=layout, dtype=dtype, backend=backend))
        gv = 0.37 if gs == "device" else gs
        if dtype == "bfloat16":   # the CPU library through torch CPU tensors; compare the 16-bit patterns
            t = dev.torch
            cpu = nvfp4.dequantize(t.from_numpy(q), t.from_numpy(sf_in), global_scale=gv, sf_layout=layout,
                                   dtype=dtype)
            got, want = out.cpu().view(t.int16).numpy(), cpu.view(t.int16).numpy()
            nan = t.isnan(cpu).numpy()
            np.testing.assert_array_equal(t.isnan(out.cpu()).numpy(), nan)
            np.testing.assert_array_equal(got[~nan], want[~nan])
            continue
        cpu = nvfp4.dequantize(q, sf_in, global_scale=gv, sf_layout=layout, dtype=dtype)
        assert_same_floats(dev.get(out), cpu)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("qshape", [(7, 48), (3, 129, 80), (512, 3584), (16,)])
def test_dequantize_random_matches_cpu(dev, qshape, layout, backend, rng):
    k = 2 * qshape[-1]
    q = R.random_fp4(qshape, rng)
    sf = rng.integers(0, 256, qshape[:-1] + (k // 16,), dtype=np.uint8)      # NaN scales included
    sf_in = R.to_blocked(sf if sf.ndim > 1 else sf[None]) if layout == "blocked" else sf
    for dtype in ("float32", "float16"):
        out = run_backend(backend, lambda: nvfp4.dequantize(dev.put(q), dev.put(sf_in), global_scale=0.5,
                                                            sf_layout=layout, dtype=dtype, backend=backend))
        cpu = nvfp4.dequantize(q, sf_in, global_scale=0.5, sf_layout=layout, dtype=dtype)
        assert_same_floats(dev.get(out), cpu)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("L", [None, 3])
@pytest.mark.parametrize("rows,k", [(1, 32), (7, 96), (129, 160), (300, 32), (1000, 7168)])
def test_swizzle_unswizzle_match_cpu(dev, rows, k, L, backend, rng):
    lead = () if L is None else (L,)
    sf = rng.integers(0, 256, lead + (rows, k // 16), dtype=np.uint8)     # any bytes, NaN and zero too
    n = R.blocked_bytes(rows, k)
    out = dev.poisoned(lead + (n,), "uint8")
    run_backend(backend, lambda: nvfp4.swizzle_scales(dev.put(sf), out=out, backend=backend))
    blocked = dev.get(out)
    np.testing.assert_array_equal(blocked, nvfp4.swizzle_scales(sf))      # CPU library (padding zero)
    np.testing.assert_array_equal(blocked, R.to_blocked(sf))
    back = run_backend(backend, lambda: nvfp4.unswizzle_scales(out, rows, k, backend=backend))
    np.testing.assert_array_equal(dev.get(back), sf)


# ---------------------------------------------------------------------------
# Errors specific to device arrays
# ---------------------------------------------------------------------------

def test_device_validation(dev, rng):
    a = Operand(dev, 64, 128, None, "linear", rng)
    b = Operand(dev, 32, 128, None, "linear", rng)
    out = dev.poisoned((64, 32), "float16")
    before = dev.get(out).view(np.uint8).copy()
    with pytest.raises(ValueError, match="'b'.*one device|one device.*'b'"):
        nvfp4.gemm(a.q, a.sf, b.q_host, b.sf, out=out)                     # host b with device a
    with pytest.raises(ValueError, match="'out'"):
        nvfp4.gemm(a.q, a.sf, b.q, b.sf, out=np.zeros((64, 32), np.float16))
    with pytest.raises(ValueError, match="backend"):
        nvfp4.gemm(a.q, a.sf, b.q, b.sf, out=out, backend="cpu")
    with pytest.raises(ValueError, match="'sfb'"):
        nvfp4.gemm(a.q, a.sf, b.q, b.sf[:, :4], out=out)
    with pytest.raises(ValueError, match="offsets"):
        nvfp4.grouped_gemm_packed(a.q, a.sf, b.q[None], b.sf[None], dev.put(np.array([0], np.int32)))
    dev.synchronize()
    np.testing.assert_array_equal(dev.get(out).view(np.uint8), before)
