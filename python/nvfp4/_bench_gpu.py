"""GPU side of `python -m nvfp4 bench` (the main job), and the pieces bench/run.py reuses.

What one row costs and proves (docs/design.md, "Delivered speed"; bench/README.md,
"Timing and checking"):
1. fresh random NVFP4 operands (never zeros; e4m3 scales in [1/16, 1/4] so that every
   output, the dual GEMM's silu(h1)·h2 too, stays well inside fp16);
2. the output is poisoned with NaN, the op runs once, and the result is compared with
   an independent float64 reference computed on the device from the format definitions
   (nvfp4.reference's decode tables; gpu-mode's check |out-ref| <= 1e-3 + 1e-3|ref| on
   fp16 outputs, every element written, no NaN);
3. timing with nvfp4._timing.Timer: warm-up, CUDA graph of back-to-back launches rotating
   over input sets larger than L2, CUDA events, median over batches;
4. SOL = max(bytes / copy bandwidth, flops / bf16 tensor rate), both ceilings measured in
   the same run (datasheet values only when asked or when torch is missing).

The problem classes (inputs, reference, nvfp4 launch) live in _bench_problems.py (matmuls)
and _bench_formats.py (quantize, dequantize, swizzle), the
device description and the table in _bench_report.py; the implementations (Impl, NvFp4)
and `run_case` here are shared with the full suite in bench/ (which adds the peers:
cuBLAS bf16/fp8, dequantize+matmul, torch._grouped_mm, D2D copy). Everything takes a
torch device, so the harness also runs on host tensors (`--device cpu`: a dry run that
tests the plumbing; its times mean nothing).
"""

from __future__ import annotations

import json
import sys
import time

from ._bench_problems import Harness, Problem, select_problems
from ._bench_report import ceilings_line, describe_device, format_table, get_ceilings
from ._eager import EAGER_OPS, graph_single_us, harness_us, launch_floor_us
from ._timing import Ceilings, Progress, Timer, datasheet_ceilings, rotation_count, sol_us

# ---------------------------------------------------------------------------------------
# Implementations (nvfp4 here; the peers live in bench/peers.py) and one case's rows
# ---------------------------------------------------------------------------------------

class Impl:
    """One way of computing a problem. Subclasses: prepare per-set state from the
    canonical NVFP4 set, launch on it, and return a result the problem can check."""
    name = "?"
    backend = ""
    is_nvfp4 = False
    graphable = True

    def skip_reason(self, h, p):
        return None

    def set_bytes(self, p) -> int:
        """Bytes of one rotating set (inputs and the output it holds)."""
        return p.nv_bytes

    def io_bytes(self, p) -> int:
        """Least bytes this implementation must move (for its GB/s)."""
        return self.set_bytes(p)

    def prepare(self, h, p, s):
        raise NotImplementedError

    def poison(self, st) -> None:
        pass

    def launch(self, h, st) -> None:
        raise NotImplementedError

    def result(self, st):
        raise NotImplementedError

    def release(self) -> None:
        """Drop scratch shared across sets."""


class NvFp4(Impl):
    is_nvfp4 = True

    def __init__(self, backend: str = "auto", variant: str = "", name: str | None = None):
        self.backend, self.variant = backend, variant
        self.name = name or ("nvfp4" + (f" ({variant})" if variant else ""))

    def prepare(self, h, p, s):
        self.p = p
        st = p.nv_prepare(h, s, self.variant)
        st["variant"] = self.variant
        return st

    def poison(self, st):
        self.p.nv_poison(st)

    def launch(self, h, st):
        self.p.nv_launch(h, st, self.backend, self.variant)

    def result(self, st):
        return self.p.nv_result(st)

    @property
    def graphable(self):
        return self.p.nv_graphable(self.variant) if hasattr(self, "p") else True


def nvfp4_impls(p: Problem, backends) -> list:
    """The nvfp4 rows of a problem: one per backend, and per variant (quantize: "gs" and
    "amax"). bench/run.py adds the "packed" variant to grouped problems."""
    out = []
    for be in backends:
        for v in p.nv_variants:
            name = "nvfp4" + (f" ({v})" if v else "")
            out.append(NvFp4(be, v, name))
    return out


def _first_line(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0][:200] if msg else ''}"


def run_case(h, p: Problem, impls, timer: Timer, ceilings: Ceilings, *, suite: str = "",
             on_row=None, eager: bool = True) -> list:
    """Check and time every impl on problem p; one row dict per impl. Input sets are
    built once per case (as many as the hungriest impl needs to span ROTATE_BYTES) and
    the float64 reference once, from set 0; each impl derives its own sets from them.
    With `eager`, the gpu-mode problems are also timed the gpu-mode harness's way
    (_eager.py): row["eager_us"] beside the graph-replay row["us"]."""
    rows = []
    sol = sol_us(p.nv_bytes, p.flops, ceilings)

    def base(impl):
        return {"suite": suite, "op": p.op, "spec": p.spec, "shape": p.label, "dims": p.dims(),
                "impl": impl.name, "backend": impl.backend, "is_nvfp4": impl.is_nvfp4,
                "flops": p.flops, "bytes": impl.io_bytes(p), "nv_bytes": p.nv_bytes, "sol_us": sol,
                "us": None, "eager_us": None, "ok": None, "rel_err": None, "error": None, "skipped": None}

    runnable = []
    for impl in impls:
        reason = impl.skip_reason(h, p)
        if reason:
            row = base(impl)
            row["skipped"] = reason
            rows.append(row)
        else:
            runnable.append(impl)
    if not runnable:
        return rows
    sets, ref = [], None
    try:
        n_sets = max(rotation_count(impl.set_bytes(p)) for impl in runnable)
        p.begin_case()
        sets = [p.make_set(h) for _ in range(n_sets)]
        ref = p.reference(h, sets[0])
    except Exception as e:  # noqa: BLE001 - out of memory, a bad shape: report, go on
        for impl in runnable:
            row = base(impl)
            row["error"] = "inputs/reference: " + _first_line(e)
            rows.append(row)
        sets, ref = [], None
        h.empty_cache()
        return rows
    for impl in runnable:
        row = base(impl)
        states = []
        try:
            n = min(len(sets), rotation_count(impl.set_bytes(p)))
            states = [impl.prepare(h, p, s) for s in sets[:n]]
            impl.poison(states[0])
            impl.launch(h, states[0])
            h.sync()
            res = impl.result(states[0])
            ok, rel = (None, None) if res is None else p.check(h, res, ref, impl.is_nvfp4 and p.fp16_out)
            row["ok"] = ok if impl.is_nvfp4 else None
            row["rel_err"] = rel
            tm = timer.time(lambda i: impl.launch(h, states[i]), n, graphable=impl.graphable)
            us = tm.us
            if eager and h.cuda and p.op in EAGER_OPS:
                row["eager_us"] = harness_us(h.torch, h.device, p.op, lambda i: impl.launch(h, states[i]), n)
                if p.op == "gemv" and impl.graphable:
                    row["eager_graph_us"] = graph_single_us(h.torch, h.device, lambda i: impl.launch(h, states[i]), n)
            row.update({"us": us, "timing": tm.as_dict(), "samples": tm.samples,
                        "tflops": p.flops / (us * 1e-6) / 1e12 if p.flops else None,
                        "gbps": impl.io_bytes(p) / (us * 1e-6) / 1e9,
                        "t_over_sol": us / sol if sol > 0 else None})
        except Exception as e:  # noqa: BLE001
            row["error"] = _first_line(e)
            if impl.is_nvfp4:
                row["ok"] = False
            if "out of memory" in str(e).lower():
                h.empty_cache()
        finally:
            states = []
            impl.release()
        rows.append(row)
        if on_row:
            on_row(row)
    del sets, ref
    h.empty_cache()
    return rows


# ---------------------------------------------------------------------------------------
# The main job
# ---------------------------------------------------------------------------------------

def _no_torch(problems, dev_name: str, why: str = "PyTorch is not installed") -> int:
    print(f"python -m nvfp4 bench times with PyTorch (CUDA events and graphs, the float64 check), and {why}: "
          "nothing timed. Speed of light of the shapes from the datasheet instead:")
    c = datasheet_ceilings(dev_name)
    if c is None:
        print(f"  (no datasheet entry for {dev_name!r})")
        return 1
    print(f"  {c.source}")
    for p in problems:
        s = sol_us(p.nv_bytes, p.flops, c)
        bound = "memory" if p.nv_bytes / c.copy_bytes_per_s >= p.flops / c.math_flops_per_s else "compute"
        print(f"  {p.op:<10} {p.label:<28} SOL {s:8.1f} µs ({bound} bound)")
    return 1


def run_gpu(args) -> int:
    try:
        problems = select_problems(args.problems, getattr(args, "shapes", None))
    except ValueError as e:
        print(f"error: {e}")
        return 2
    try:
        import torch
    except ImportError:
        import nvfp4

        name = nvfp4._nvfp4_ext.device_info(0)["name"] if nvfp4._nvfp4_ext.device_count() else ""
        return _no_torch(problems, name)
    device = getattr(args, "device", None) or "cuda"
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        import nvfp4

        return _no_torch(problems, nvfp4._nvfp4_ext.device_info(0)["name"],
                         f"torch {torch.__version__} sees no CUDA device (a CPU-only build?) though libnvfp4 does")
    backends = [b.strip() for b in args.backend.split(",") if b.strip()] or ["auto"]
    from ._bench_peers import CublasBf16, GroupedMM

    h = Harness(torch, device)
    timer = Timer(torch, device, reps=args.reps, graphs=not getattr(args, "no_graphs", False))
    dev = describe_device(torch, device)
    cc = dev.get("compute_capability", [0, 0])
    print(f"device: {dev['name']} (CC {cc[0]}.{cc[1]}" +
          (f", {dev['multiprocessors']} SMs" if "multiprocessors" in dev else "") +
          f"); nvfp4 {dev['nvfp4']}, torch {dev['torch']}; backend auto = {dev['backend']}", flush=True)
    ceilings, note = get_ceilings(torch, device, dev, getattr(args, "ceilings", "measure"), timer)
    if note:
        print(f"note: {note}")
    print(ceilings_line(ceilings), flush=True)
    jobs = [(p, be) for p in problems for be in backends]
    bar = Progress(len(jobs), enabled=not getattr(args, "quiet", False))
    rows = []
    t0 = time.perf_counter()
    for j, (p, be) in enumerate(jobs):
        bar.update(j, f"{p.op} {p.label} [{be}]")
        peers = [CublasBf16()] if p.op in EAGER_OPS and be == backends[0] else []
        if peers and p.op == "grouped":
            peers.append(GroupedMM())
        rows += run_case(h, p, nvfp4_impls(p, [be]) + peers, timer, ceilings)
    bar.update(len(jobs), f"done in {time.perf_counter() - t0:.0f} s")
    print(format_table(rows))
    floor = launch_floor_us(torch, device) if h.cuda else None
    if floor is not None:
        print(f"eager floor: one 1-element fill timed as gemv (sync, L2 clear, one call): {floor:.1f} µs")
    for r in rows:
        if r.get("eager_graph_us") is not None:
            print(f"gemv {r['shape']} {r['impl']}: one call eager {r['eager_us']:.1f} µs, the same call replayed "
                  f"from a CUDA graph (no host work in front) {r['eager_graph_us']:.1f} µs")
    print("µs: median per launch over batches of back-to-back launches (CUDA graph replays; '*' = eager "
          "launches, op not capturable) rotating over > 256 MiB of inputs. eager µs: timed as the gpu-mode "
          "harness does (gemv: one call after a sync and an L2 clear; gemm, dual: 50 back-to-back calls; "
          "grouped: 15), host overhead included. check: gpu-mode tolerance (rtol=atol=1e-3) vs float64, "
          "with ‖out-ref‖/‖ref‖.")
    if args.json:
        doc = {"schema": 1, "kind": "nvfp4 bench (main job)", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "argv": sys.argv, "device": dev, "ceilings": ceilings.as_dict(), "eager_floor_us": floor,
               "rows": rows}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, default=str)
        print(f"wrote {args.json}")
    return 0 if all(r.get("ok") for r in rows if r["is_nvfp4"]) else 1
