"""Host (CPU) cost per eager call of every op at tiny shapes, beside torch's own ops.

    python bench/overhead.py [--frameworks torch,cupy,jax,numpy] [--json FILE]

Each row calls the op back to back n times on the same inputs and reports the wall time
per call (median of 7 batches). The shapes are tiny, so the GPU finishes each launch
sooner than the host issues the next one: the number is the host's cost of a call (what
a user's eager loop pays), not the kernel's. The `gpu µs/call` column (CUDA events around
one batch) shows that the GPU was not the limit: it is below the host number wherever
the row measures the host. Peers in the same process: torch's bf16 matmul and `x + x`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

import nvfp4

N_CALLS = 2000
BATCHES = 7


def _rng_problem(rng, M, N, K, L=None):
    lead = () if L is None else (L,)
    a = rng.integers(0, 256, lead + (M, K // 2), dtype=np.uint8)
    b = rng.integers(0, 256, lead + (N, K // 2), dtype=np.uint8)
    sfa = rng.integers(0x30, 0x48, lead + (M, K // 16), dtype=np.uint8)
    sfb = rng.integers(0x30, 0x48, lead + (N, K // 16), dtype=np.uint8)
    return a, sfa, b, sfb


class Framework:
    """to_device / synchronize / event timing for one framework."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import torch
            self.torch = torch
            self.to = lambda x: torch.from_numpy(np.ascontiguousarray(x)).cuda()
            self.sync = lambda r=None: torch.cuda.synchronize()
        elif name == "cupy":
            import cupy
            self.to = cupy.asarray
            self.sync = lambda r=None: cupy.cuda.runtime.deviceSynchronize()
        elif name == "jax":
            import jax
            gpu = [d for d in jax.devices() if d.platform == "gpu"][0]
            self.to = lambda x: jax.device_put(x, gpu)
            self.sync = lambda r=None: jax.block_until_ready(r)
        elif name == "numpy":
            self.to = lambda x: x
            self.sync = lambda r=None: None
        else:
            raise ValueError(f"unknown framework {name!r}")


def per_call_us(fw: Framework, fn, n: int = N_CALLS, batches: int = BATCHES):
    """(host µs per call, gpu µs per call or None): median over batches of n calls."""
    for _ in range(min(200, n)):
        r = fn()
    fw.sync(r)
    host, gpu = [], None
    for i in range(batches):
        if fw.name == "torch" and i == 0:
            torch = fw.torch
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        for _ in range(n):
            r = fn()
        t1 = time.perf_counter()
        if fw.name == "torch" and i == 0:
            end.record()
            end.synchronize()
            gpu = start.elapsed_time(end) * 1e3 / n
        fw.sync(r)
        host.append((t1 - t0) / n * 1e6)
    return statistics.median(host), gpu


def cases(fw: Framework, rng):
    """(label, callable) for every op at tiny shapes."""
    to = fw.to
    a, sfa, b, sfb = (to(x) for x in _rng_problem(rng, 128, 128, 2048))
    a_s, sfa_s, b_s, sfb_s = (to(x) for x in _rng_problem(rng, 128, 128, 256))
    gv_a, gv_sfa, gv_b, gv_sfb = (to(x) for x in _rng_problem(rng, 256, 1, 1024))
    gv_b, gv_sfb = gv_b[0], gv_sfb[0]
    b2, sfb2 = (to(x) for x in _rng_problem(rng, 1, 128, 2048)[2:])
    x = rng.standard_normal((128, 1024)).astype(np.float32)
    xd = to(x)
    q, sf, gs = nvfp4.quantize(xd)
    G, per = 8, 16
    pa, psfa, _, _ = (to(v) for v in _rng_problem(rng, G * per, 1, 256))
    pb, psfb = (to(v) for v in _rng_problem(rng, 1, 128, 256, L=G)[2:])
    offsets = to(np.arange(0, G * per + 1, per, dtype=np.int32))
    out_dtype = "float32" if fw.name in ("cupy", "numpy") else "float16"
    out = nvfp4.gemm(a, sfa, b, sfb, out_dtype=out_dtype)
    rows = [
        ("gemv 256x1024", lambda: nvfp4.gemv(gv_a, gv_sfa, gv_b, gv_sfb, out_dtype=out_dtype)),
        ("gemm 128x128x2048 (two launches)", lambda: nvfp4.gemm(a, sfa, b, sfb, out_dtype=out_dtype)),
        ("gemm 128x128x2048 out=", lambda: nvfp4.gemm(a, sfa, b, sfb, out=out)),
        ("gemm 128x128x256 (one launch)", lambda: nvfp4.gemm(a_s, sfa_s, b_s, sfb_s, out_dtype=out_dtype)),
        ("dual_gemm 128x128x2048", lambda: nvfp4.dual_gemm(a, sfa, b, sfb, b2, sfb2, out_dtype=out_dtype)),
        ("grouped_gemm_packed G=8 16x128x256",
         lambda: nvfp4.grouped_gemm_packed(pa, psfa, pb, psfb, offsets, out_dtype=out_dtype)),
        ("quantize 128x1024 fp32 (computes the global scale)", lambda: nvfp4.quantize(xd)),
        ("quantize 128x1024 fp32, global_scale given", lambda: nvfp4.quantize(xd, global_scale=gs)),
        ("dequantize 128x1024", lambda: nvfp4.dequantize(q, sf, global_scale=gs)),
        ("swizzle_scales 128x64", lambda: nvfp4.swizzle_scales(sf)),
    ]
    if fw.name == "jax":  # the jitted calls too (XLA FFI custom calls; JAX dispatches asynchronously)
        import jax

        jgemm = jax.jit(lambda *t: nvfp4.gemm(*t, out_dtype=out_dtype))
        jdual = jax.jit(lambda *t: nvfp4.dual_gemm(*t, out_dtype=out_dtype))
        jquant = jax.jit(lambda t: nvfp4.quantize(t))
        rows += [("jax.jit(gemm) 128x128x2048", lambda: jgemm(a, sfa, b, sfb)),
                 ("jax.jit(dual_gemm) 128x128x2048", lambda: jdual(a, sfa, b, sfb, b2, sfb2)),
                 ("jax.jit(quantize) 128x1024 fp32", lambda: jquant(xd))]
    for g in (1, 8, 64):
        ga = [to(v) for v in _rng_problem(rng, 16, 128, 256, L=g)]
        lists = [[t[i] for i in range(g)] for t in ga]
        rows.append((f"grouped_gemm G={g} 16x128x256",
                     lambda lists=lists: nvfp4.grouped_gemm(*lists, out_dtype=out_dtype)))
        if g != 8:  # the same with the outputs given: what the per-group allocation costs
            outs = nvfp4.grouped_gemm(*lists, out_dtype=out_dtype)
            rows.append((f"grouped_gemm G={g} 16x128x256 out=",
                         lambda lists=lists, outs=outs: nvfp4.grouped_gemm(*lists, out=outs)))
            # the floor under any per-group call: only describing its 5 G arrays, as every op
            # describes its operands (no validation, no launch)
            arrays = [x for lst in lists for x in lst] + list(outs)
            rows.append((f"grouped_gemm G={g}: describing its {len(arrays)} arrays only",
                         lambda arrays=arrays: nvfp4._nvfp4_ext._describe_arrays(arrays)))
            # below that: only reading each array's DLPack view (torch: its C exchange call), the
            # part no implementation of a per-group call can drop
            rows.append((f"grouped_gemm G={g}: reading its {len(arrays)} arrays' views only",
                         lambda arrays=arrays: nvfp4._nvfp4_ext._read_arrays(arrays)))
    return rows


def peers(fw: Framework):
    if fw.name != "torch":
        return []
    torch = fw.torch
    a = torch.randn(128, 2048, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(128, 2048, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(128, 128, device="cuda")
    return [("torch bf16 matmul 128x128x2048", lambda: torch.matmul(a, b.t())),
            ("torch.empty 16x128 fp16, 64 times (a Python loop)",
             lambda: [torch.empty((16, 128), dtype=torch.float16, device="cuda") for _ in range(64)]),
            ("torch x + x 128x128", lambda: x + x)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frameworks", default="torch", help="comma-separated: torch, cupy, jax, numpy")
    ap.add_argument("--json", default=None, help="write the rows here")
    args = ap.parse_args(argv)
    if nvfp4._nvfp4_ext.device_count() == 0:
        print("overhead: no CUDA device; nothing to measure")
        return 0
    rng = np.random.default_rng(0)
    results = []
    device = nvfp4.info()["devices"][0]["name"]
    print(f"device: {device}")
    print(f"| framework | call | host µs/call | gpu µs/call (first batch) |")
    print(f"|---|---|---:|---:|")
    for name in args.frameworks.split(","):
        try:
            fw = Framework(name)
        except Exception as e:  # a framework missing on this machine
            print(f"| {name} | (unavailable: {type(e).__name__}: {e}) | | |")
            continue
        for label, fn in peers(fw) + cases(fw, rng):
            n = {"numpy": 20, "jax": 200}.get(name, N_CALLS)
            try:
                host, gpu = per_call_us(fw, fn, n=n, batches=BATCHES if name != "numpy" else 3)
            except Exception as e:
                print(f"| {name} | {label} | failed: {type(e).__name__}: {e} | |")
                continue
            gpu_s = f"{gpu:.1f}" if gpu is not None else ""
            print(f"| {name} | {label} | {host:.1f} | {gpu_s} |", flush=True)
            results.append({"framework": name, "call": label, "host_us": host, "gpu_us": gpu})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "rows": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
