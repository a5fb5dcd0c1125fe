"""Timing and speed-of-light helpers shared by `python -m nvfp4 bench` and bench/run.py.

Method (docs/design.md, "Delivered speed"; bench/README.md, "Timing and checking"):
- warm up first (module load, cuBLAS handles, first-touch allocations stay out), and then
  run the timed batch itself for warmup_ms (25 ms, as triton's do_bench) so that the GPU's
  clocks have settled: with only a few launches of warm-up, the first implementation timed
  in a case ran its first ~7 ms of batches up to 15% slow on an H100;
- launch back-to-back, rotating over input sets that together exceed the L2 cache
  (ROTATE_BYTES), so every launch reads its operands from HBM as in a real model;
- capture one batch of launches in a CUDA graph and time its replays with CUDA events,
  so that Python's per-call overhead does not hide short kernels (ops that cannot be
  captured fall back to eager back-to-back launches, and the row says so);
- report the median over batches, with min/max and the inter-quartile spread.

Nothing here imports torch at module level: the CPU install check and the unit tests
use the pure functions (rotation_count, sol_us, datasheet_ceilings, Progress).
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

ROTATE_BYTES = 256 << 20   # > 4x the 50-60 MB L2 of an H100/H200 (B200: 126 MB -> still 2x)
MAX_SETS = 64              # rotation sets per measurement, at most

# Datasheet ceilings, used when they cannot be measured in the same run (no torch, or
# --ceilings datasheet). (substring of the device name, HBM bytes/s, dense bf16/fp16
# tensor FLOP/s, what the numbers are). More specific names first: "GH200" contains "H200".
DATASHEET = [
    ("GH200", 4.0e12, 989e12, "GH200 480GB (HBM3) datasheet"),
    ("H100 PCIe", 2.0e12, 756e12, "H100 PCIe datasheet"),
    ("H100 NVL", 3.9e12, 835e12, "H100 NVL datasheet"),
    ("H100", 3.35e12, 989e12, "H100 SXM datasheet"),
    ("H200", 4.8e12, 989e12, "H200 SXM datasheet"),
    ("B200", 8.0e12, 2250e12, "B200 datasheet (dense fp16/bf16)"),
    ("A100-SXM4-40GB", 1.555e12, 312e12, "A100 40GB SXM datasheet"),
    ("A100", 2.039e12, 312e12, "A100 80GB SXM datasheet"),
]

# Dense FP4 over dense bf16 tensor-core rate: on Blackwell (CC 10.x) the sm100a backend
# runs native block-scaled FP4 MMA (B200 datasheet: 9 PFLOP/s dense FP4 vs 2.25 bf16).
# On Hopper the sm90a backend emulates on fp16 tensor cores: the bf16 rate is the ceiling.
FP4_OVER_BF16 = {10: 4.0}


@dataclass
class Ceilings:
    copy_bytes_per_s: float     # D2D copy, bytes read + bytes written per second
    bf16_flops_per_s: float     # dense bf16 matmul rate
    source: str                 # "measured now (...)" or "... datasheet"
    math_flops_per_s: float = 0.0   # the compute ceiling SOL uses (bf16, or fp4 on Blackwell)
    math_note: str = ""

    def __post_init__(self):
        if not self.math_flops_per_s:
            self.math_flops_per_s = self.bf16_flops_per_s

    def for_device(self, cc_major: int) -> "Ceilings":
        """The same ceilings with the compute ceiling of the NVFP4 problem on this device:
        native FP4 on Blackwell, the bf16 rate on Hopper (and older). One SOL per problem
        and device, whichever backend or peer runs."""
        ratio = FP4_OVER_BF16.get(int(cc_major))
        if ratio:
            return Ceilings(self.copy_bytes_per_s, self.bf16_flops_per_s, self.source,
                            ratio * self.bf16_flops_per_s,
                            f"FP4 = {ratio:g}x bf16 (datasheet ratio, CC {cc_major}.x native FP4 MMA)")
        return Ceilings(self.copy_bytes_per_s, self.bf16_flops_per_s, self.source, self.bf16_flops_per_s,
                        "bf16 tensor-core rate (sm90a emulates FP4 on fp16 tensor cores)")

    def as_dict(self) -> dict:
        return asdict(self)


def datasheet_ceilings(device_name: str) -> Ceilings | None:
    """Ceilings from the table above for a device name as CUDA reports it, or None."""
    for key, bw, rate, what in DATASHEET:
        if key.lower() in device_name.lower():
            return Ceilings(bw, rate, f"datasheet ({what}: {bw / 1e12:.2f} TB/s, {rate / 1e12:.0f} TFLOP/s dense bf16)")
    return None


def sol_us(nbytes: float, flops: float, ceilings: Ceilings) -> float:
    """Speed of light in µs: max(bytes / copy bandwidth, flops / compute rate)."""
    t_mem = nbytes / ceilings.copy_bytes_per_s
    t_math = flops / ceilings.math_flops_per_s if flops else 0.0
    return max(t_mem, t_math) * 1e6


def rotation_count(set_bytes: int, target: int = ROTATE_BYTES, max_sets: int = MAX_SETS) -> int:
    """How many input sets to rotate over so that together they span `target` bytes."""
    return int(max(1, min(max_sets, math.ceil(target / max(int(set_bytes), 1)))))


@dataclass
class Timing:
    us: float                  # median µs per launch
    us_min: float
    us_max: float
    spread: float              # (q75 - q25) / median over batches
    batches: int
    launches_per_batch: int
    sets: int                  # input sets rotated over
    mode: str                  # "graph" | "eager" | "host"
    samples: list = field(default_factory=list)   # µs per launch, one per batch
    note: str = ""

    def as_dict(self, with_samples: bool = False) -> dict:
        d = asdict(self)
        if not with_samples:
            d.pop("samples")
        return d


def summarize(samples_us: list, launches: int, sets: int, mode: str, note: str = "") -> Timing:
    s = sorted(samples_us)
    med = statistics.median(s)
    if len(s) >= 4:
        q = statistics.quantiles(s, n=4)
        spread = (q[2] - q[0]) / med if med > 0 else 0.0
    else:
        spread = (s[-1] - s[0]) / med if med > 0 else 0.0
    return Timing(med, s[0], s[-1], spread, len(s), launches, sets, mode, list(samples_us), note)


class Timer:
    """Times `launch(i)` (i = input set index) on `device` ("cuda..." or "cpu").

    reps: timed batches (the median is over them); each batch is `launches_per_batch`
    back-to-back launches lasting about target_batch_us, rotating over the sets.
    budget_s caps the timed part of one measurement (slow fallbacks stay bounded)."""

    def __init__(self, torch, device, *, reps: int = 20, warmup: int = 3, graphs: bool = True,
                 target_batch_us: float = 2000.0, max_launches: int = 256, budget_s: float = 1.0,
                 warmup_ms: float = 25.0):
        self.torch = torch
        self.device = str(device)
        self.cuda = self.device.startswith("cuda")
        self.reps = max(1, int(reps))
        self.warmup = max(1, int(warmup))
        self.graphs = bool(graphs) and self.cuda
        self.target_batch_us = float(target_batch_us)
        self.max_launches = int(max_launches)
        self.budget_s = float(budget_s)
        self.warmup_ms = max(0.0, float(warmup_ms))

    # -- clocks -------------------------------------------------------------
    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def elapsed_us(self, fn) -> float:
        """Wall time of fn() in µs: CUDA events on the current stream, or the host clock."""
        if not self.cuda:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e6
        ev = self.torch.cuda.Event
        start, end = ev(enable_timing=True), ev(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3

    # -- graphs -------------------------------------------------------------
    def _capture(self, launch, n_sets: int, per_batch: int):
        """A CUDA graph of per_batch launches, or (None, why) when the op cannot be captured."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):          # warm up on a side stream, as torch advises before capture
            for i in range(n_sets):
                launch(i)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        prev = torch.cuda.current_stream()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                for i in range(per_batch):
                    launch(i % n_sets)
        except Exception as e:  # noqa: BLE001 - any failure: time eagerly instead
            # torch.cuda.graph does not restore the stream when capture_end raises
            torch.cuda.set_stream(prev)
            # drain a stale (non-sticky) error of the failed capture, so that it does not
            # surface later in an unrelated launch check: a tiny torch launch reads it
            for _ in range(2):
                try:
                    torch.ones(1, device=self.device).add_(1)
                    torch.cuda.synchronize()
                    break
                except Exception:  # noqa: BLE001
                    pass
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return None, f"not capturable ({first[:120]}): eager launches"
        return graph, ""

    # -- the measurement ------------------------------------------------------
    def time(self, launch, n_sets: int, *, graphable: bool = True) -> Timing:
        n_sets = max(1, int(n_sets))
        for i in range(max(self.warmup, n_sets)):
            launch(i % n_sets)
        self.sync()
        n_est = max(n_sets, 3)
        est = self.elapsed_us(lambda: [launch(i % n_sets) for i in range(n_est)]) / n_est
        per_batch = int(min(self.max_launches, max(n_sets, math.ceil(self.target_batch_us / max(est, 0.5)))))

        def eager():
            for i in range(per_batch):
                launch(i % n_sets)

        batch, mode, note, graph = eager, ("eager" if self.cuda else "host"), "", None
        if self.graphs and graphable:
            graph, note = self._capture(launch, n_sets, per_batch)
            if graph is not None:
                batch, mode = graph.replay, "graph"
                batch()          # first replay uploads the graph
                self.sync()
        # Timed batches only once the clocks have settled: repeat the batch for warmup_ms
        # (at most 1000 batches; the host-only dry run needs none of this).
        if self.cuda and self.warmup_ms > 0:
            spent, n = 0.0, 0
            while spent < self.warmup_ms * 1e3 and n < 1000:
                spent += self.elapsed_us(batch)
                n += 1
        n_batches = max(3, min(self.reps, int(self.budget_s * 1e6 / max(est * per_batch, 1.0))))
        samples = [self.elapsed_us(batch) / per_batch for _ in range(n_batches)]
        del graph
        return summarize(samples, per_batch, n_sets, mode, note)


def _copy_us(torch, device, n: int, timer: Timer) -> float:
    src = torch.empty(n, dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    # Eager, never graph-captured: inside a CUDA graph a D2D copy becomes a memcpy node
    # run by the copy engines (2.75 TB/s on an H200 against 4.1 TB/s for the SM copy
    # that an eager copy_ runs), which would understate the bandwidth ceiling.
    return timer.time(lambda i: dst.copy_(src), 1, graphable=False).us


def _matmul_us(torch, device, m: int, timer: Timer) -> float:
    a = torch.randn(m, m, dtype=torch.bfloat16, device=device)
    b = torch.randn(m, m, dtype=torch.bfloat16, device=device)
    c = torch.empty(m, m, dtype=torch.bfloat16, device=device)
    return timer.time(lambda i: torch.matmul(a, b, out=c), 1).us


def measure_ceilings(torch, device, timer: Timer) -> Ceilings:
    """Copy bandwidth (a 1 GiB device-to-device copy, bytes read + written) and the bf16
    matmul rate (8192³, random data) of this device, measured now. On the CPU (a dry run
    of the harness) the sizes shrink and the numbers mean nothing."""
    cuda = str(device).startswith("cuda")
    n = (1 << 30) if cuda else (1 << 22)
    m = 8192 if cuda else 256
    copy_us = _copy_us(torch, device, n, timer)
    mm_us = _matmul_us(torch, device, m, timer)
    if cuda:
        torch.cuda.empty_cache()
    what = "1 GiB D2D copy, read+write" if cuda else "CPU dry run, meaningless"
    return Ceilings(2 * n / (copy_us * 1e-6), 2 * m ** 3 / (mm_us * 1e-6),
                    f"measured now ({what}; bf16 matmul {m}x{m}x{m} on random data)")


class Progress:
    """A progress bar on stderr: redrawn in place on a terminal, else a line every 10%."""

    def __init__(self, total: int, enabled: bool = True, stream=None, width: int = 28):
        self.total = max(1, int(total))
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()
        self._last_decile = -1
        self.done = 0

    def render(self, i: int, label: str) -> str:
        frac = min(1.0, i / self.total)
        filled = int(self.width * frac)
        elapsed = time.perf_counter() - self.t0
        return f"[{'#' * filled}{'.' * (self.width - filled)}] {i}/{self.total} {elapsed:5.0f}s {label}"

    def update(self, i: int, label: str = "") -> None:
        self.done = i
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r" + self.render(i, label)[:120].ljust(120))
            if i >= self.total:
                self.stream.write("\n")
        else:
            decile = int(10 * min(i, self.total) / self.total)
            if decile == self._last_decile and i < self.total:
                return
            self._last_decile = decile
            self.stream.write(self.render(i, label) + "\n")
        self.stream.flush()


def parse_clock_samples(text: str, skip: int = 2) -> dict | None:
    """Median SM clock (MHz) and board power (W) of nvidia-smi's `clocks.sm,power.draw` CSV lines
    (noheader, nounits), the first `skip` samples (the ramp) left out where enough remain; None
    without a usable sample."""
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2:
            continue
        try:
            rows.append((float(parts[0]), float(parts[1])))
        except ValueError:
            continue
    if len(rows) > skip + 2:
        rows = rows[skip:]
    if not rows:
        return None
    mhz = sorted(r[0] for r in rows)
    watts = sorted(r[1] for r in rows)
    return {"mhz": statistics.median(mhz), "mhz_min": mhz[0], "watts": statistics.median(watts),
            "watts_max": watts[-1], "samples": len(rows)}


class ClockSampler:
    """SM clock and board power while a measurement runs: nvidia-smi samples GPU `index` every `ms`
    in the background; after the `with` block, `stats` is parse_clock_samples' dict (None if
    nvidia-smi is missing or gave nothing). Why: the large-M GEMMs run at the board's power cap,
    where a call's time is its energy over the cap (bench/NOTES.md "The large-M main loop is
    power-limited"), so a timing means little without the clock it ran at."""

    def __init__(self, index: int = 0, ms: int = 100):
        self.cmd = ["nvidia-smi", "-i", str(index), "--query-gpu=clocks.sm,power.draw",
                    "--format=csv,noheader,nounits", "-lms", str(ms)]
        self.proc = None
        self.stats = None

    def __enter__(self):
        import subprocess

        try:
            self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.proc = None
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.terminate()
            try:
                out = self.proc.communicate(timeout=5)[0]
            except Exception:  # noqa: BLE001 - a stuck sampler only loses the clock column
                self.proc.kill()
                out = ""
            self.stats = parse_clock_samples(out)
        return False
