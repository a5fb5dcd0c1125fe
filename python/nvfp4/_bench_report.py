"""Reporting for `python -m nvfp4 bench` and bench/run.py: the device description, the
speed-of-light ceilings line, and the main job's text table."""

from __future__ import annotations

import platform
import re

from ._timing import Ceilings, Timer, datasheet_ceilings, measure_ceilings

def describe_device(torch, device) -> dict:
    """Name, compute capability, SMs, memory, L2, nvfp4's backend, software versions."""
    import nvfp4

    info = {"nvfp4": nvfp4.__version__, "torch": getattr(torch, "__version__", None) if torch else None,
            "python": platform.python_version(), "build_archs": nvfp4.info()["build_archs"]}
    dev = str(device)
    if not dev.startswith("cuda"):
        info.update({"name": "cpu (dry run)", "compute_capability": [0, 0], "backend": "cpu", "slug": "cpu-dry-run"})
        return info
    idx = torch.device(dev).index
    idx = torch.cuda.current_device() if idx is None else idx
    d = nvfp4._nvfp4_ext.device_info(idx)
    props = torch.cuda.get_device_properties(idx)
    info.update({"index": idx, "name": d["name"], "compute_capability": list(d["compute_capability"]),
                 "multiprocessors": d["multiprocessors"], "memory_bytes": d["total_memory_bytes"],
                 "l2_bytes": getattr(props, "L2_cache_size", None), "backend": d["backend"],
                 "cuda_runtime_torch": getattr(torch.version, "cuda", None), "slug": gpu_slug(d["name"])})
    return info


def gpu_slug(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3' (a folder name)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


def get_ceilings(torch, device, dev_info: dict, how: str, timer: Timer | None):
    """Ceilings for SOL: measured now (default, needs torch) or the datasheet table; the
    compute ceiling is the device's (FP4 on Blackwell, bf16 elsewhere)."""
    c = None
    note = ""
    if how == "datasheet" or torch is None:
        c = datasheet_ceilings(dev_info.get("name", ""))
        if c is None:
            note = f"no datasheet entry for {dev_info.get('name')!r}"
            if torch is None:
                return None, note
            note += "; measuring instead"
    if c is None:
        c = measure_ceilings(torch, device, timer)
    return c.for_device(dev_info.get("compute_capability", [0])[0]), note


def ceilings_line(c: Ceilings) -> str:
    return (f"ceilings: copy {c.copy_bytes_per_s / 1e12:.2f} TB/s, bf16 matmul {c.bf16_flops_per_s / 1e12:.0f} "
            f"TFLOP/s [{c.source}]; SOL = max(bytes / copy, flops / {c.math_flops_per_s / 1e12:.0f} TFLOP/s)")


def _num(v, fmt, width):
    return f"{'-':>{width}}" if v is None else f"{v:>{width}{fmt}}"


def check_text(r: dict) -> str:
    if r.get("skipped"):
        return f"skipped: {r['skipped']}"
    if r.get("error"):
        return f"ERROR {r['error']}"
    rel = r.get("rel_err")
    rel_s = "-" if rel is None else f"{rel:.1e}"
    if r.get("ok") is None:
        return f"err {rel_s}"
    return f"{'ok' if r['ok'] else 'FAIL'} {rel_s}"


def format_table(rows, with_impl: bool | None = None) -> str:
    """The main job's table: problem, shape, backend, µs (median, graph replay), eager µs
    (the gpu-mode harness's way), TFLOP/s, GB/s, SOL µs, time/SOL, check. An eagerly timed
    row (op not graph-capturable) has its µs marked '*'.
    An impl column appears when rows differ by more than the backend (variants, peers)."""
    if with_impl is None:
        with_impl = any(r["impl"] != "nvfp4" for r in rows)
    shape_w = max([28] + [len(r["shape"]) for r in rows])
    impl_w = max([12] + [len(r["impl"]) for r in rows]) if with_impl else 0
    hdr = f"{'problem':<10} {'shape':<{shape_w}} " + (f"{'impl':<{impl_w}} " if with_impl else "") + \
        f"{'backend':<9} {'µs':>9} {'eager µs':>9} {'TFLOP/s':>8} {'GB/s':>7} {'SOL µs':>8} {'t/SOL':>7}  check"
    lines = [hdr, "-" * len(hdr)]
    for r in rows:
        mode = (r.get("timing") or {}).get("mode", "")
        us = r.get("us")
        us_s = f"{'-':>9}" if us is None else f"{us:>8.1f}" + ("*" if mode == "eager" else " ")
        t_sol = r.get("t_over_sol")
        lines.append(
            f"{r['op']:<10} {r['shape']:<{shape_w}} " + (f"{r['impl']:<{impl_w}} " if with_impl else "") +
            f"{(r.get('backend') or '-'):<9} {us_s} {_num(r.get('eager_us'), '.1f', 9)} {_num(r.get('tflops'), '.1f', 8)} {_num(r.get('gbps') if us else None, '.0f', 7)} "
            f"{_num(r.get('sol_us'), '.1f', 8)} {_num(t_sol, '.2f', 7)}  {check_text(r)}")
    return "\n".join(lines)
