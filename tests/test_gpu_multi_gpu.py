"""Several GPUs: every op runs on the device that holds its operands (cuda:1 while cuda:0
is current: result on cuda:1, equal to the float64 reference, no kernel on cuda:0, the
caller's current device unchanged), operands split over two devices are refused with the
argument named and nothing written, two threads drive two GPUs at once, a CUDA graph
captured on cuda:1 replays new inputs, and the two multi-GPU examples (torch.distributed
tensor parallelism, JAX shard_map) run and match their float64 references.

Skipped unless two CUDA devices are visible."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import nvfp4
from nvfp4 import _nvfp4_ext, reference as ref

from _util import assert_matches, graph_capture, pow2_alpha

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

if _nvfp4_ext.device_count() < 2 or torch.cuda.device_count() < 2:
    pytest.skip("needs two CUDA devices", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV0, DEV1 = torch.device("cuda", 0), torch.device("cuda", 1)


def _on(dev, *arrays):
    return [torch.from_numpy(np.ascontiguousarray(x)).to(dev) for x in arrays]


def _np(x):
    return x.float().cpu().numpy() if x.dtype in (torch.float16, torch.bfloat16) else x.cpu().numpy()


def _operands(rng, M, N, K, L=None, layout="linear"):
    a, sfa = ref.make_operand(M, K, L, layout, rng)
    b, sfb = ref.make_operand(N, K, L, layout, rng)
    return a, sfa, b, sfb


# Each case: (host inputs, call(device tensors) -> device outputs, float64/bit-exact reference check).
def _case_gemv(rng):
    a, sfa = ref.make_operand(200, 512, None, "linear", rng)
    b, sfb = ref.make_operand(1, 512, None, "linear", rng, vector=True)
    want = ref.gemv_ref(a, sfa, b, sfb)
    return (a, sfa, b, sfb), lambda *d: nvfp4.gemv(*d, out_dtype="float32"), \
        lambda out: assert_matches(_np(out), want)


def _case_gemm(rng):
    h = _operands(rng, 130, 200, 2048, L=2, layout="blocked")
    want = ref.gemm_ref(*h, sf_layout="blocked")
    alpha = pow2_alpha(want)
    return h, lambda *d: nvfp4.gemm(*d, alpha=alpha, sf_layout="blocked", out_dtype="bfloat16"), \
        lambda out: assert_matches(_np(out).astype(np.float32), alpha * want, "bfloat16")


def _case_dual_gemm(rng):
    a, sfa, b1, sfb1 = _operands(rng, 129, 200, 4096)
    b2, sfb2 = ref.make_operand(200, 4096, None, "linear", rng)
    al = pow2_alpha(ref.gemm_ref(a, sfa, b1, sfb1), 2.0)
    want = ref.dual_gemm_ref(a, sfa, b1, sfb1, b2, sfb2, alpha1=al, alpha2=al)
    return (a, sfa, b1, sfb1, b2, sfb2), \
        lambda *d: nvfp4.dual_gemm(*d, alpha1=al, alpha2=al, out_dtype="float32"), \
        lambda out: assert_matches(_np(out), want)


def _case_grouped_gemm(rng):
    probs = [_operands(rng, m, n, k) for m, n, k in [(7, 64, 256), (130, 200, 2048), (1, 8, 32)]]
    want = [ref.gemm_ref(*p) for p in probs]

    def call(*d):
        return nvfp4.grouped_gemm(list(d[0::4]), list(d[1::4]), list(d[2::4]), list(d[3::4]), out_dtype="float32")

    def check(outs):
        assert all(o.device == DEV1 for o in outs)
        for o, w in zip(outs, want):
            assert_matches(_np(o), w)
    return [x for p in probs for x in p], call, check


def _case_grouped_gemm_packed(rng):
    G, N, K, counts = 4, 200, 2048, [5, 0, 130, 1]
    a, sfa = ref.make_operand(sum(counts), K, None, "linear", rng)
    b, sfb = ref.make_operand(N, K, G, "linear", rng)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    want = ref.grouped_gemm_packed_ref(a, sfa, b, sfb, offsets)
    return (a, sfa, b, sfb, offsets), lambda *d: nvfp4.grouped_gemm_packed(*d, out_dtype="float32"), \
        lambda out: assert_matches(_np(out), want)


def _case_quantize(rng):
    x = (rng.standard_normal((3, 70, 512)) * 4).astype(np.float32)
    q_ref, sf_ref, gs_ref = ref.quantize_ref(x, sf_layout="blocked")

    def check(res):
        q, sf, gs = res
        assert q.device == sf.device == gs.device == DEV1
        np.testing.assert_array_equal(q.cpu().numpy(), q_ref)
        np.testing.assert_array_equal(sf.cpu().numpy(), sf_ref)
        assert gs.cpu().numpy().reshape(-1)[0] == gs_ref
    return (x,), lambda x: nvfp4.quantize(x, sf_layout="blocked"), check


def _case_dequantize(rng):
    q, sf = ref.make_operand(70, 512, 2, "linear", rng)
    want = ref.dequantize_ref(q, sf, global_scale=0.5)
    return (q, sf), lambda *d: nvfp4.dequantize(*d, global_scale=0.5), \
        lambda out: np.testing.assert_array_equal(out.cpu().numpy(), want)


def _case_swizzle_scales(rng):
    sf = ref.random_scales((2, 130, 96), rng)
    want = ref.to_blocked(sf)
    return (sf,), lambda sf: nvfp4.swizzle_scales(sf), \
        lambda out: np.testing.assert_array_equal(out.cpu().numpy(), want)


def _case_unswizzle_scales(rng):
    sf = ref.random_scales((2, 130, 96), rng)
    return (ref.to_blocked(sf),), lambda blk: nvfp4.unswizzle_scales(blk, 130, 96 * 16), \
        lambda out: np.testing.assert_array_equal(out.cpu().numpy(), sf)


CASES = {name[len("_case_"):]: fn for name, fn in globals().items() if name.startswith("_case_")}


def _kernel_devices(fn):
    """Runs fn under the torch profiler; returns (fn's result, the set of device indices
    CUDA kernels ran on)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        result = fn()
        torch.cuda.synchronize(DEV0)
        torch.cuda.synchronize(DEV1)
    devices = {e.device_index for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
    return result, devices


@pytest.mark.parametrize("op", sorted(CASES))
def test_op_runs_on_the_device_holding_its_operands(op, rng):
    host, call, check = CASES[op](rng)
    dev = _on(DEV1, *host)
    torch.cuda.set_device(0)
    torch.cuda.synchronize(DEV1)
    mem0 = torch.cuda.memory_allocated(0)
    result, kernel_devices = _kernel_devices(lambda: call(*dev))
    assert torch.cuda.current_device() == 0, "the caller's current device changed"
    assert kernel_devices == {1}, f"{op}: kernels ran on devices {sorted(kernel_devices)}, expected only cuda:1"
    assert torch.cuda.memory_allocated(0) == mem0, f"{op}: memory was allocated on cuda:0"
    outs = result if isinstance(result, (list, tuple)) else [result]
    assert all(o.device == DEV1 for o in outs), [o.device for o in outs]
    check(result)


def test_cupy_arrays_on_the_second_device(rng):
    cupy = pytest.importorskip("cupy")
    h = _operands(rng, 130, 200, 2048)
    with cupy.cuda.Device(1):
        d = [cupy.asarray(x) for x in h]
    with cupy.cuda.Device(0):
        out = nvfp4.gemm(*d, out_dtype="float32")
        assert cupy.cuda.runtime.getDevice() == 0
    assert out.device.id == 1
    assert_matches(cupy.asnumpy(out), ref.gemm_ref(*h))


def test_jax_arrays_on_the_second_device(rng):
    jax = pytest.importorskip("jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if len(gpus) < 2:
        pytest.skip("JAX sees fewer than two GPUs")
    h = _operands(rng, 130, 200, 2048)
    d = [jax.device_put(x, gpus[1]) for x in h]
    out = nvfp4.gemm(*d, out_dtype="float32")
    assert next(iter(out.devices())) == gpus[1]
    assert_matches(np.asarray(out), ref.gemm_ref(*h))


@pytest.mark.parametrize("bad", ["sfa", "b", "out"])
def test_operands_on_two_devices_are_refused_naming_the_argument(bad, rng):
    h = _operands(rng, 64, 64, 256)
    names = ["a", "sfa", "b", "sfb"]
    args = [t.to(DEV0 if n == bad else DEV1) for n, t in zip(names, _on("cpu", *h))]
    out = torch.full((64, 64), 7.0, dtype=torch.float32, device=DEV0 if bad == "out" else DEV1)
    with pytest.raises(ValueError) as info:
        nvfp4.gemm(*args, out_dtype="float32", out=out)
    msg = str(info.value)
    assert f"'{bad}'" in msg and "cuda:0" in msg and "cuda:1" in msg, msg
    torch.cuda.synchronize(DEV0)
    torch.cuda.synchronize(DEV1)
    assert bool((out == 7.0).all()), "out was written by a refused call"


def test_grouped_list_with_one_group_elsewhere_names_it(rng):
    probs = [_operands(rng, 16, 64, 256) for _ in range(3)]
    a = _on(DEV1, *[p[0] for p in probs])
    a[2] = a[2].to(DEV0)
    rest = [_on(DEV1, *[p[i] for p in probs]) for i in (1, 2, 3)]
    with pytest.raises(ValueError, match=r"group 2\): argument 'a' is on cuda:0 but 'a' of group 0 is on cuda:1"):
        nvfp4.grouped_gemm(a, *rest)


def test_two_threads_drive_two_gpus_concurrently(rng):
    hosts = [_operands(rng, 512, 1024, 4096) for _ in range(2)]
    wants = [ref.gemm_ref(*h) for h in hosts]
    results, errors = [None, None], []
    barrier = threading.Barrier(2)

    def work(i):
        try:
            dev = torch.device("cuda", i)
            d = _on(dev, *hosts[i])
            barrier.wait()
            for _ in range(50):
                results[i] = nvfp4.gemm(*d, out_dtype="float32")
                nvfp4.dual_gemm(d[0], d[1], d[2], d[3], d[2], d[3], out_dtype="float32")
            torch.cuda.synchronize(dev)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
    for i in range(2):
        assert results[i].device == torch.device("cuda", i)
        assert_matches(_np(results[i]), wants[i])


def test_graph_captured_on_the_second_device_replays_new_inputs(rng):
    first, second = _operands(rng, 256, 512, 4096), _operands(rng, 256, 512, 4096)
    d = _on(DEV1, *first)
    with torch.cuda.device(1):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            nvfp4.gemm(*d, out_dtype="float32")  # warm-up outside capture
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        # torch.cuda.graph's default capture stream is created once per process, on whatever
        # device was current then: capture on a stream of cuda:1 explicitly
        with graph_capture(torch, g, s):
            out = nvfp4.gemm(*d, out_dtype="float32")
        for x, new in zip(d, _on(DEV1, *second)):
            x.copy_(new)
        g.replay()
        torch.cuda.synchronize(DEV1)
    assert out.device == DEV1
    assert_matches(_np(out), ref.gemm_ref(*second))


def _run_example(args, timeout=600):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "python"),
                                                                    os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    print(proc.stdout[-4000:], proc.stderr[-4000:])
    assert proc.returncode == 0, f"{args[0]} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def test_example_torch_tensor_parallel_gated_mlp():
    out = _run_example(["examples/tp_gated_mlp_torch.py", "--tokens", "64", "--hidden", "1024",
                        "--intermediate", "2048", "--iters", "5"])
    assert "matches the float64 reference" in out


def test_example_jax_sharded_gated_mlp():
    pytest.importorskip("jax")
    out = _run_example(["examples/sharded_gated_mlp_jax.py", "--tokens", "64", "--hidden", "1024",
                        "--intermediate", "2048", "--iters", "5"])
    assert "matches the float64 reference" in out


@pytest.mark.parametrize("op", ["gemm", "grouped_gemm"])
def test_device_alpha_on_another_gpu_is_refused(op, rng):
    h = _operands(rng, 64, 64, 256)
    d = _on(DEV1, *h)
    if op == "gemm":
        call = lambda: nvfp4.gemm(*d, alpha=torch.ones(1, device=DEV0))  # noqa: E731
    else:
        call = lambda: nvfp4.grouped_gemm([d[0]], [d[1]], [d[2]], [d[3]], alphas=torch.ones(1, device=DEV0))  # noqa: E731
    with pytest.raises(ValueError, match=r"'alpha(s)?'.*cuda:0 but the operands are on cuda:1"):
        call()
