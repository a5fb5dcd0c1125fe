"""The eager host path on the GPU: torch tensors read through the DLPack C exchange API,
outputs allocated by torch, torch's current stream by default, and the library's cached
workspace (NVFP4_WORKSPACE_CACHED) under CUDA-graph capture, replay with new inputs,
concurrent replays, several streams and threads. Results are compared with the
library's float64 CPU backend on the same random inputs."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nvfp4
from nvfp4 import ops
from _util import assert_matches, graph_capture

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

if not torch.cuda.is_available() or nvfp4._nvfp4_ext.device_count() == 0:
    pytest.skip("no CUDA device", allow_module_level=True)


def _host(rng, M, N, K):
    return (rng.integers(0, 256, (M, K // 2), dtype=np.uint8), rng.integers(0x30, 0x48, (M, K // 16), dtype=np.uint8),
            rng.integers(0, 256, (N, K // 2), dtype=np.uint8), rng.integers(0x30, 0x48, (N, K // 16), dtype=np.uint8))


def _dev(arrays):
    return [torch.from_numpy(x).cuda() for x in arrays]


def _check(got, host_arrays, rtol=1e-3, **kw):
    want = nvfp4.gemm(*host_arrays, out_dtype="float32", **kw)
    np.testing.assert_allclose(got.float().cpu().numpy(), want, rtol=rtol, atol=1e-3)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def test_outputs_are_torch_tensors_on_the_operands_device(rng):
    h = _host(rng, 130, 72, 2048)
    out = nvfp4.gemm(*_dev(h), out_dtype="bfloat16")
    assert isinstance(out, torch.Tensor) and out.device == torch.device("cuda", 0)
    assert out.dtype == torch.bfloat16 and out.shape == (130, 72)
    _check(out, h, rtol=8e-3)  # bf16: 8 significant bits


def test_default_stream_is_torchs_current_stream(rng):
    """A copy into `a` queued on stream s behind a long sleep: the gemm called under
    `with torch.cuda.stream(s)` must see the new `a` (on the legacy stream it would not)."""
    old, new = _host(rng, 256, 256, 2048), _host(rng, 256, 256, 2048)
    a, sfa, b, sfb = _dev(old)
    a_new = torch.from_numpy(new[0]).cuda()
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)
        a.copy_(a_new)
        out = nvfp4.gemm(a, sfa, b, sfb, out_dtype="float32")
    s.synchronize()
    _check(out, (new[0], old[1], old[2], old[3]))


def test_workspace_grows_in_stream_order(rng):
    cases = [(128, 256, 2048), (1024, 512, 8192), (128, 256, 2048)]
    outs, hosts = [], []
    for M, N, K in cases:
        h = _host(rng, M, N, K)
        hosts.append(h)
        outs.append(nvfp4.gemm(*_dev(h), out_dtype="float32"))
    torch.cuda.synchronize()
    for out, h in zip(outs, hosts):
        _check(out, h)


def _capture(fn):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # warm-up outside capture
        fn()
    s.synchronize()
    with graph_capture(torch, g):
        fn()
    return g


@pytest.mark.parametrize("op", ["gemm", "dual_gemm", "grouped_gemm", "grouped_gemm_packed"])
def test_graph_capture_owns_its_scratch_and_replays_new_inputs(op, rng):
    M, N, K = 256, 256, 2048
    a, sfa, b, sfb = _dev(_host(rng, M, N, K))
    # the experts' weights stacked (the packed op's b), b and b2 views of them
    bb = torch.from_numpy(rng.integers(0, 256, (2, N, K // 2), dtype=np.uint8)).cuda()
    sfbb = torch.from_numpy(rng.integers(0x30, 0x48, (2, N, K // 16), dtype=np.uint8)).cuda()
    b, b2, sfb, sfb2 = bb[0], bb[1], sfbb[0], sfbb[1]
    offsets = torch.tensor([0, 100, 256], dtype=torch.int32, device="cuda")
    out = torch.empty(M, N, dtype=torch.float32, device="cuda")

    def run():
        if op == "gemm":
            nvfp4.gemm(a, sfa, b, sfb, out=out)
        elif op == "dual_gemm":
            nvfp4.dual_gemm(a, sfa, b, sfb, b2, sfb2, out=out)
        elif op == "grouped_gemm":
            nvfp4.grouped_gemm([a[:100], a[100:]], [sfa[:100], sfa[100:]], [b, b2], [sfb, sfb2],
                               out=[out[:100], out[100:]])
        else:
            nvfp4.grouped_gemm_packed(a, sfa, bb, sfbb, offsets, out=out)

    g = _capture(run)
    for _ in range(2):  # new inputs into the captured buffers, then replay
        fresh = _host(rng, M, N, K)
        for dst, src in zip((a, sfa, b, sfb), fresh):
            dst.copy_(torch.from_numpy(src))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        got = out.cpu().numpy()
        A, SA, B, SB = (x.cpu().numpy() for x in (a, sfa, b, sfb))
        B2, SB2 = b2.cpu().numpy(), sfb2.cpu().numpy()
        if op == "gemm":
            want = nvfp4.gemm(A, SA, B, SB, out_dtype="float32")
        elif op == "dual_gemm":
            want = nvfp4.dual_gemm(A, SA, B, SB, B2, SB2, out_dtype="float32")
        else:
            want = np.concatenate([nvfp4.gemm(A[:100], SA[:100], B, SB, out_dtype="float32"),
                                   nvfp4.gemm(A[100:], SA[100:], B2, SB2, out_dtype="float32")])
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_two_graphs_replayed_concurrently_on_two_streams(rng):
    """Both graphs were captured on one stream; each owns its scratch, so replaying them
    at once on two streams cannot mix their pre-decoded tokens."""
    M, N, K = 1024, 1024, 4096
    hosts = [_host(rng, M, N, K) for _ in range(2)]
    devs = [_dev(h) for h in hosts]
    outs = [torch.empty(M, N, dtype=torch.float32, device="cuda") for _ in range(2)]
    graphs = [_capture(lambda d=d, o=o: nvfp4.gemm(*d, out=o)) for d, o in zip(devs, outs)]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    for o in outs:
        o.fill_(float("nan"))
    torch.cuda.synchronize()
    for _ in range(10):
        for g, s in zip(graphs, streams):
            with torch.cuda.stream(s):
                g.replay()
    torch.cuda.synchronize()
    for o, h in zip(outs, hosts):
        _check(o, h)


def test_threads_on_their_own_streams(rng):
    M, N, K = 512, 512, 4096
    hosts = [_host(rng, M, N, K) for _ in range(4)]
    results, errors = [None] * 4, []

    def work(i):
        try:
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                d = _dev(hosts[i])
                for _ in range(20):
                    results[i] = nvfp4.gemm(*d, out_dtype="float32")
            s.synchronize()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for out, h in zip(results, hosts):
        _check(out, h)


def test_scratch_cache_outlives_destroyed_streams(rng):
    """The scratch cache (one buffer per thread, device and stream; past eight, the least
    recently used given back) keeps no stream handle past the call: CuPy and cuda.core destroy
    a stream with its object. Nine streams made and destroyed here (cudaStreamCreateWithFlags /
    cudaStreamDestroy through CuPy's runtime module, passed as int handles) fill the cache, then
    eight torch streams created before them (so no handle can be a reused one) each add an
    entry, every one evicting an entry whose stream is gone: an eviction that used the dead
    stream's handle (cudaFreeAsync on it) is undefined behaviour, a segfault at worst, an API
    error that compute-sanitizer --report-api-errors all reports at best."""
    from nvfp4.reference import gemm_ref

    runtime = pytest.importorskip("cupy").cuda.runtime
    M, N, K = 1024, 512, 8192  # the pre-decoded plan: 16 MiB of cached scratch
    h = _host(rng, M, N, K)
    want = gemm_ref(*h)  # float64, numpy
    d = _dev(h)
    torch.cuda.synchronize()
    older = [torch.cuda.Stream() for _ in range(8)]
    handles = [runtime.streamCreateWithFlags(1) for _ in range(9)]  # 1: cudaStreamNonBlocking
    try:
        for hs in handles:
            out = nvfp4.gemm(*d, out_dtype="float32", stream=hs)
            runtime.streamSynchronize(hs)
            assert_matches(out.cpu().numpy(), want, "float32")
    finally:
        for hs in handles:
            runtime.streamDestroy(hs)
    for ts in older:
        with torch.cuda.stream(ts):
            out = nvfp4.gemm(*d, out_dtype="float32")
        ts.synchronize()
        assert_matches(out.cpu().numpy(), want, "float32")


def test_capsule_path_matches_the_exchange_path(rng, monkeypatch):
    """The fallback for torch without the exchange API (torch._C._to_dlpack capsules,
    stream and outputs resolved in Python) gives the same bytes."""
    h = _host(rng, 200, 96, 2048)
    d = _dev(h)
    fast = nvfp4.gemm(*d, alpha=0.5)
    monkeypatch.setattr(ops, "_DIRECT", set())
    monkeypatch.setattr(ops, "_direct", lambda t: False)
    slow = nvfp4.gemm(*d, alpha=0.5)
    torch.cuda.synchronize()
    assert torch.equal(fast, slow)


def test_bad_input_raises_before_anything_is_written(rng):
    h = _host(rng, 64, 64, 256)
    a, sfa, b, sfb = _dev(h)
    out = torch.full((64, 64), 7.0, dtype=torch.float16, device="cuda")
    with pytest.raises(ValueError, match="'sfb'"):
        nvfp4.gemm(a, sfa, b, sfb[:, :8], out=out)
    with pytest.raises(TypeError, match="alpha"):
        nvfp4.gemm(a, sfa, b, sfb, alpha="2", out=out)
    torch.cuda.synchronize()
    assert bool((out == 7.0).all())


def test_grouped_device_alphas_are_read_at_replay(rng):
    """grouped_gemm's alphas as a (G,) float32 tensor on the device: each group reads its
    element when the kernel runs, so a captured call follows new alphas on replay."""
    shapes = [(100, 256, 2048), (1, 72, 512), (156, 200, 4096)]
    hosts = [_host(rng, *s) for s in shapes]
    dev = [_dev(h) for h in hosts]
    alphas = torch.tensor([0.5, 2.0, -1.0], dtype=torch.float32, device="cuda")
    outs = [torch.empty(s[0], s[1], dtype=torch.float32, device="cuda") for s in shapes]

    def run():
        nvfp4.grouped_gemm([d[0] for d in dev], [d[1] for d in dev], [d[2] for d in dev], [d[3] for d in dev],
                           alphas=alphas, out=outs)

    g = _capture(run)
    for new in ([0.25, 4.0, 1.0], [3.0, -0.5, 0.125]):
        alphas.copy_(torch.tensor(new))
        for o in outs:
            o.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        for o, h, al in zip(outs, hosts, new):
            _check(o, h, alpha=al)
