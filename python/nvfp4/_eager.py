"""Eager timing as the gpu-mode harness (reference-kernels, problems/nvidia) measures a
submission: what a user calling the op from Python sees, host overhead included.

- gemv: ONE call after a synchronize and an L2 clear (a 256 MiB fill, as the harness's
  clear_l2_cache), CUDA events around the call;
- gemm and dual: events around 50 back-to-back calls over distinct inputs, ÷ 50;
- grouped (list and packed): the same over 15 calls.

Eager time = max(kernel, host time per call) + launch latency, so host overhead shows
directly (docs/design.md, "Delivered speed"). The median over `reps` repetitions.
"""

from __future__ import annotations

import statistics

CALLS = {"gemm": 50, "dual": 50, "grouped": 15, "packed": 15}
EAGER_OPS = ("gemv",) + tuple(CALLS)


def _clear_l2(torch, device, state={}):  # noqa: B006 - one scratch buffer per process
    buf = state.get(device)
    if buf is None:
        buf = state[device] = torch.empty((32, 1024, 1024), dtype=torch.int64, device=device)
    buf.fill_(42)


def harness_us(torch, device, op: str, launch, n_sets: int, reps: int = 20) -> float:
    """Median µs per call of launch(i) (i = input set) timed the gpu-mode way for `op`."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls = CALLS.get(op, 1)
    for i in range(min(n_sets, calls) + 2):  # warm: first-touch allocations, caches
        launch(i % n_sets)
    samples, k = [], 0
    for _ in range(reps):
        torch.cuda.synchronize(device)
        if op == "gemv":
            _clear_l2(torch, device)
        start.record()
        for _ in range(calls):
            launch(k % n_sets)
            k += 1
        end.record()
        torch.cuda.synchronize(device)
        samples.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(samples)


def launch_floor_us(torch, device, reps: int = 20) -> float:
    """The gemv method's floor: one tiny kernel (a 1-element fill) timed as gpu-mode times
    gemv (a synchronize, the L2 clear, events around the one launch). A single call pays its
    launch latency and ramp-up that back-to-back launches hide; no kernel times below this."""
    x = torch.empty(1, device=device)
    return harness_us(torch, device, "gemv", lambda i: x.fill_(1.0), 1, reps)


def graph_single_us(torch, device, launch, n_sets: int, reps: int = 20) -> float:
    """The gemv method with no host work in front of the kernel: each call replayed from a
    CUDA graph captured beforehand (sync, L2 clear, events around one replay). Beside the
    eager number it shows how much of a single call's time is the host path's."""
    graphs = []
    s = torch.cuda.Stream(device)
    with torch.cuda.stream(s):
        for i in range(min(n_sets, 8)):
            launch(i)  # warm-up outside capture
    s.synchronize()
    for i in range(min(n_sets, 8)):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            launch(i)
        graphs.append(g)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for r in range(reps):
        torch.cuda.synchronize(device)
        _clear_l2(torch, device)
        start.record()
        graphs[r % len(graphs)].replay()
        end.record()
        torch.cuda.synchronize(device)
        samples.append(start.elapsed_time(end) * 1e3)
    return statistics.median(samples)
