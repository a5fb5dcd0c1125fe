"""Device arrays of every framework (torch, CuPy, JAX; cuda.core streams), out=, stream=,
device alpha, and the gpu-mode adapters. Each GPU result is compared with the library's
CPU (float64) result on the same random inputs. Skipped without a CUDA device."""

from __future__ import annotations

import numpy as np
import pytest

import nvfp4
from nvfp4 import _nvfp4_ext
from _util import graph_capture

pytestmark = pytest.mark.gpu

if _nvfp4_ext.device_count() == 0:
    pytest.skip("no CUDA device", allow_module_level=True)


def _host_problem(rng, M, N, K, L=None):
    lead = () if L is None else (L,)
    a = rng.integers(0, 256, lead + (M, K // 2), dtype=np.uint8)
    b = rng.integers(0, 256, lead + (N, K // 2), dtype=np.uint8)
    sfa = rng.integers(0x30, 0x48, lead + (M, K // 16), dtype=np.uint8)
    sfb = rng.integers(0x30, 0x48, lead + (N, K // 16), dtype=np.uint8)
    return a, sfa, b, sfb


def _close(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


# --- framework adapters: to device, back to numpy -----------------------------------

def _torch():
    torch = pytest.importorskip("torch")
    return (lambda x: torch.from_numpy(np.ascontiguousarray(x)).cuda(),
            lambda x: x.float().cpu().numpy() if x.dtype in (torch.float16, torch.bfloat16) else x.cpu().numpy(),
            lambda x: isinstance(x, torch.Tensor) and x.is_cuda)


def _cupy():
    cupy = pytest.importorskip("cupy")
    return (lambda x: cupy.asarray(x), lambda x: cupy.asnumpy(x),
            lambda x: isinstance(x, cupy.ndarray))


def _jax():
    jax = pytest.importorskip("jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX has no GPU backend here")
    return (lambda x: jax.device_put(x, gpus[0]), lambda x: np.asarray(x),
            lambda x: isinstance(x, jax.Array) and next(iter(x.devices())).platform == "gpu")


FRAMEWORKS = {"torch": _torch, "cupy": _cupy, "jax": _jax}


@pytest.mark.parametrize("fw", list(FRAMEWORKS))
def test_gemm_gemv_on_each_framework(fw):
    to_dev, to_host, is_dev = FRAMEWORKS[fw]()
    rng = np.random.default_rng()
    a, sfa, b, sfb = _host_problem(rng, 129, 200, 96, L=2)
    want = nvfp4.gemm(a, sfa, b, sfb, alpha=0.5, out_dtype="float32")
    got = nvfp4.gemm(*map(to_dev, (a, sfa, b, sfb)), alpha=0.5)
    assert is_dev(got)
    _close(to_host(got), want)

    bv, sfbv = b[:, 0], sfb[:, 0]
    want_v = nvfp4.gemv(a, sfa, bv, sfbv, out_dtype="float32")
    got_v = nvfp4.gemv(*map(to_dev, (a, sfa, bv, sfbv)))
    assert is_dev(got_v)
    _close(to_host(got_v), want_v)


@pytest.mark.parametrize("fw", list(FRAMEWORKS))
def test_quantize_bit_identical_on_each_framework(fw):
    to_dev, to_host, is_dev = FRAMEWORKS[fw]()
    rng = np.random.default_rng()
    x = (rng.standard_normal((3, 129, 160)) * rng.uniform(0.01, 100)).astype(np.float32)
    for layout in ("linear", "blocked"):
        q0, s0, g0 = nvfp4.quantize(x, sf_layout=layout)
        q1, s1, g1 = nvfp4.quantize(to_dev(x), sf_layout=layout)
        assert is_dev(q1) and is_dev(s1) and is_dev(g1)
        np.testing.assert_array_equal(to_host(q1), q0)
        np.testing.assert_array_equal(to_host(s1), s0)
        np.testing.assert_array_equal(to_host(g1), g0)
        d0 = nvfp4.dequantize(q0, s0, global_scale=float(g0[0]), sf_layout=layout)
        d1 = nvfp4.dequantize(q1, s1, global_scale=g1, sf_layout=layout)   # device scalar
        np.testing.assert_array_equal(to_host(d1), d0)


def test_torch_out_stream_and_device_alpha():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    a, sfa, b, sfb = _host_problem(rng, 64, 72, 256)
    want = nvfp4.gemm(a, sfa, b, sfb, alpha=0.25, out_dtype="float32")
    ta, tsa, tb, tsb = (torch.from_numpy(x).cuda() for x in (a, sfa, b, sfb))
    out = torch.full((64, 72), float("nan"), dtype=torch.float32, device="cuda")
    alpha = torch.tensor([0.25], device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):       # stream=None: the current torch stream
        r = nvfp4.gemm(ta, tsa, tb, tsb, alpha=alpha, out_dtype="float32", out=out)
    s.synchronize()
    assert r is out
    _close(out.cpu().numpy(), want)
    out2 = torch.empty_like(out)
    nvfp4.gemm(ta, tsa, tb, tsb, alpha=0.25, out=out2, stream=s)   # explicit stream object
    s.synchronize()
    _close(out2.cpu().numpy(), want)
    # float4 / float8 torch dtypes are accepted as such
    if hasattr(torch, "float4_e2m1fn_x2"):
        out3 = nvfp4.gemm(ta.view(torch.float4_e2m1fn_x2), tsa.view(torch.float8_e4m3fn),
                          tb.view(torch.float4_e2m1fn_x2), tsb.view(torch.float8_e4m3fn), alpha=0.25,
                          out_dtype="float32")
        _close(out3.cpu().numpy(), want)


def test_bf16_output_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    a, sfa, b, sfb = _host_problem(rng, 33, 40, 64)
    want = nvfp4.gemm(a, sfa, b, sfb, out_dtype="float32")
    got = nvfp4.gemm(*(torch.from_numpy(x).cuda() for x in (a, sfa, b, sfb)), out_dtype="bfloat16")
    assert got.dtype == torch.bfloat16
    np.testing.assert_allclose(got.float().cpu().numpy(), want, rtol=8e-3, atol=1e-2)


def test_cupy_with_cuda_core_stream():
    cupy = pytest.importorskip("cupy")
    core = pytest.importorskip("cuda.core")
    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    rng = np.random.default_rng()
    a, sfa, b, sfb = _host_problem(rng, 7, 1000, 32)
    want = nvfp4.gemm(a, sfa, b, sfb, out_dtype="float32")
    got = nvfp4.gemm(*(cupy.asarray(x) for x in (a, sfa, b, sfb)), out_dtype="float32", stream=stream)
    stream.sync()
    _close(cupy.asnumpy(got), want)


def test_cpu_array_to_gpu_backend_rejected():
    rng = np.random.default_rng()
    a, sfa, b, sfb = _host_problem(rng, 8, 8, 32)
    with pytest.raises(ValueError, match="backend"):
        nvfp4.gemm(a, sfa, b, sfb, backend="portable")


def test_mixed_devices_rejected():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    a, sfa, b, sfb = _host_problem(rng, 8, 8, 32)
    with pytest.raises(ValueError, match="one device"):
        nvfp4.gemm(torch.from_numpy(a).cuda(), sfa, b, sfb)


# --- gpu-mode adapters ------------------------------------------------------------------

def _gpumode_operand(torch, rows, k, l):
    """gpu-mode style: (rows, K/2, L) fp4x2, (rows, K/16, L) fp8 and the permuted 6-D blocked view."""
    a = torch.randint(0, 256, (l, rows, k // 2), dtype=torch.uint8, device="cuda").permute(1, 2, 0)
    # scales 0.125 .. 0.47: keeps the dual GEMM's product of two sums inside fp16 range
    sf_l = torch.randint(0x20, 0x30, (l, rows, k // 16), dtype=torch.uint8, device="cuda")
    rest_m, rest_k = (rows + 127) // 128, (k // 16 + 3) // 4
    dense = torch.zeros((l, rest_m, rest_k, 32, 4, 4), dtype=torch.uint8, device="cuda")
    blocked = nvfp4.swizzle_scales(sf_l).view(l, rest_m, rest_k, 32, 4, 4)
    dense.copy_(blocked)
    return a, sf_l.permute(1, 2, 0), dense.permute(3, 4, 1, 5, 2, 0)


@pytest.mark.parametrize("sf_layout", ["linear", "blocked"])
def test_gpumode_gemm_and_gemv(sf_layout):
    torch = pytest.importorskip("torch")
    from nvfp4 import gpumode

    M, N, K, L = 129, 200, 256, 2
    a, sfa, sfa_p = _gpumode_operand(torch, M, K, L)
    b, sfb, sfb_p = _gpumode_operand(torch, N, K, L)
    c = torch.empty((M, N, L), dtype=torch.float16, device="cuda")
    r = gpumode.gemm((a, b, sfa, sfb, sfa_p, sfb_p, c), sf_layout=sf_layout)
    assert r is c
    want = nvfp4.gemm(*(x.permute(2, 0, 1).cpu().numpy() for x in (a, sfa, b, sfb)), out_dtype="float32")
    _close(c.permute(2, 0, 1).cpu().numpy(), want)

    bv, sfbv, sfbv_p = _gpumode_operand(torch, 1, K, L)
    cv = torch.empty((M, 1, L), dtype=torch.float16, device="cuda")
    gpumode.gemv((a, bv, sfa, sfbv, sfa_p, sfbv_p, cv), sf_layout=sf_layout)
    want_v = nvfp4.gemv(a.permute(2, 0, 1).cpu().numpy(), sfa.permute(2, 0, 1).cpu().numpy(),
                        bv[0].permute(1, 0).cpu().numpy(), sfbv[0].permute(1, 0).cpu().numpy(), out_dtype="float32")
    _close(cv[:, 0, :].permute(1, 0).cpu().numpy(), want_v)


@pytest.mark.parametrize("sf_layout", ["linear", "blocked"])
def test_gpumode_dual_and_grouped(sf_layout):
    torch = pytest.importorskip("torch")
    from nvfp4 import gpumode

    M, N, K = 256, 512, 256
    a, sfa, sfa_p = _gpumode_operand(torch, M, K, 1)
    b1, sfb1, sfb1_p = _gpumode_operand(torch, N, K, 1)
    b2, sfb2, sfb2_p = _gpumode_operand(torch, N, K, 1)
    c = torch.empty((M, N, 1), dtype=torch.float16, device="cuda")
    gpumode.dual_gemm((a, b1, b2, sfa, sfb1, sfb2, sfa_p, sfb1_p, sfb2_p, c), sf_layout=sf_layout)
    host = [x.permute(2, 0, 1).cpu().numpy() for x in (a, sfa, b1, sfb1, b2, sfb2)]
    want = nvfp4.dual_gemm(*host, out_dtype="float32")
    _close(c.permute(2, 0, 1).cpu().numpy(), want)

    abc, sfs, sfs_p, sizes = [], [], [], []
    for m, n, k in [(96, 128, 256), (128, 256, 512)]:
        ga, gsa, gsa_p = _gpumode_operand(torch, m, k, 1)
        gb, gsb, gsb_p = _gpumode_operand(torch, n, k, 1)
        abc.append((ga, gb, torch.empty((m, n, 1), dtype=torch.float16, device="cuda")))
        sfs.append((gsa, gsb))
        sfs_p.append((gsa_p, gsb_p))
        sizes.append((m, n, k, 1))
    outs = gpumode.grouped_gemm((abc, sfs, sfs_p, sizes), sf_layout=sf_layout)
    for (ga, gb, gc), (gsa, gsb), o in zip(abc, sfs, outs):
        assert o is gc
        want = nvfp4.gemm(*(x[:, :, 0].cpu().numpy() for x in (ga, gsa, gb, gsb)), out_dtype="float32")
        _close(gc[:, :, 0].cpu().numpy(), want)


def test_quantize_with_device_global_scale_is_graph_capturable():
    torch = pytest.importorskip("torch")
    x = torch.randn(256, 4096, device="cuda")
    q, s, g = nvfp4.quantize(x)
    q2, s2, g2 = nvfp4.quantize(x, global_scale=g)   # device array: used in place, no copy
    assert g2 is g and torch.equal(q, q2) and torch.equal(s, s2)
    graph = torch.cuda.CUDAGraph()
    with graph_capture(torch, graph):
        q3, s3, _ = nvfp4.quantize(x, global_scale=g)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(q3, q) and torch.equal(s3, s)
