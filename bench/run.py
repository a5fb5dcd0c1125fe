#!/usr/bin/env python3
"""The nvfp4 benchmark suite: every op on the gpu-mode shapes plus scaling sweeps, against
the peers a Hopper user would pick instead, measured in the same run.

    python bench/run.py [--quick] [--out bench/results]

Writes <out>/<gpu-name>/results.json, results.md and PNG plots (time/SOL per shape,
nvfp4's speedup over each peer, TFLOP/s and GB/s against M, K and tokens), and prints a
summary last. The full run fits in about 6 minutes on an H100, --quick in about 90 s;
--max-minutes stops starting new cases past a time budget. See bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

GEMM_NK = 7168            # DeepSeek-V3 hidden size: the gemm M sweep is M x 7168 x 7168
MOE_G, MOE_N, MOE_K = 8, 4096, 7168   # 8 experts of a DeepSeek-V3-like gate_up projection


def moe_split(tokens: int, groups: int, seed: int = 0) -> list:
    """Tokens routed to `groups` experts: uneven (Dirichlet(2) shares), each expert >= 1,
    the same split on every run."""
    import numpy as np

    rng = np.random.default_rng(seed + tokens)
    extra = max(0, tokens - groups)
    counts = rng.multinomial(extra, rng.dirichlet(2.0 * np.ones(groups))) + 1
    return [int(c) for c in counts]


def moe_routing(tokens: int, experts: int, topk: int = 8, seed: int = 0) -> list:
    """Rows per expert when every token is routed to `topk` distinct experts, the experts
    drawn with Dirichlet(1) popularities (ragged; experts may get no row): the token counts
    a MoE layer's grouped GEMM sees. The same split on every run."""
    import numpy as np

    rng = np.random.default_rng(seed + 7919 * tokens + experts)
    p = rng.dirichlet(np.ones(experts))
    counts = np.zeros(experts, dtype=np.int64)
    for _ in range(tokens):
        counts[rng.choice(experts, size=min(topk, experts), replace=False, p=p)] += 1
    return [int(c) for c in counts]


def build_suites(quick: bool = False, tiny: bool = False) -> list:
    """[(name, title, [problem specs])] in run order (most important first)."""
    from nvfp4._bench_problems import SHAPES

    if tiny:   # a self-test of the harness (runs on the CPU too): every op, every peer, small
        shapes = ["gemv:64x256x2", "gemm:64x32x256", "dual:32x48x128", "grouped:16+24x32x64"]
        gemm_m, gemm_nk = [1, 16, 64], 64
        gemv_m, gemv_k = [64, 128], 256
        gemm_k, k_mn = [64, 128], (16, 32)
        moe_tokens, moe = [8, 40], (4, 32, 64)
        quant = [(64, 256)]
        decode = ["gemm:2x64x256", "gemm:17x64x256"]
        moe_route = [(4, 5, (32, 64))]
    else:
        shapes = [f"{op}:{s}" for op in ("gemv", "gemm", "dual", "grouped") for s in SHAPES[op]]
        gemm_nk, gemv_k, k_mn, moe = GEMM_NK, 7168, (128, 7168), (MOE_G, MOE_N, MOE_K)
        if quick:
            gemm_m = [1, 16, 128, 1024, 8192]
            gemv_m = [2048, 16384]
            gemm_k = [2048, 16384]
            moe_tokens = [128, 1024, 8192]
            quant = [(4096, 7168)]
        else:
            gemm_m = [2 ** i for i in range(14)]                    # 1 .. 8192
            gemv_m = [512 * 2 ** i for i in range(7)]               # 512 .. 32768
            gemm_k = [1024 * 2 ** i for i in range(6)]              # 1024 .. 32768
            moe_tokens = [64 * 2 ** i for i in range(9)]            # 64 .. 16384
            quant = [(128, 7168), (4096, 7168), (16384, 16384)]
        # issue 22: the decode regime (2..64 tokens) on its (N, K) pairs, M = 1 (GEMV) as the
        # floor's reference, and the tile boundary 128 / 129 on N = K = 7168
        decode = [f"gemm:{m}x{nn}x{kk}" for nn, kk in ((7168, 7168), (4096, 14336), (14336, 4096))
                  for m in ((1, 4, 16, 64) if quick else (1, 2, 4, 8, 16, 32, 64))]
        decode += ["gemm:128x7168x7168", "gemm:129x7168x7168"]
        # issues 21 and 22: top-8 routing over 64 and 128 experts, DeepSeek-like expert shapes,
        # from decode (1..64 tokens: mostly 0-2 rows per expert) to prefill
        moe_route = [(e, t, nk) for e in (64, 128) for t in (1, 4, 16, 64, 128, 1024, 8192)
                     for nk in ((2048, 7168), (7168, 2048))]
    g, n, k = moe
    return [
        ("shapes", "Benchmark shapes (gpu-mode)", shapes),
        ("gemm_m", f"gemm, M sweep (N = K = {gemm_nk})", [f"gemm:{m}x{gemm_nk}x{gemm_nk}" for m in gemm_m]),
        ("moe", f"MoE: grouped_gemm_packed, {g} experts, N = {n}, K = {k}, tokens sweep",
         [f"packed:{'+'.join(map(str, moe_split(t, g)))}x{n}x{k}" for t in moe_tokens]),
        ("moe_route", "MoE: grouped_gemm_packed, top-8 routing of T tokens over E experts (ragged, empty experts "
         "included), (N, K) = (2048, 7168) and (7168, 2048); SOL counts the used experts' bytes",
         [f"packed:{'+'.join(map(str, moe_routing(t, e)))}x{nk[0]}x{nk[1]}" for e, t, nk in moe_route]),
        ("gemv_m", f"gemv, M sweep (K = {gemv_k}, L = 1)", [f"gemv:{m}x{gemv_k}x1" for m in gemv_m]),
        ("gemm_k", f"gemm, K sweep (M = {k_mn[0]}, N = {k_mn[1]})", [f"gemm:{k_mn[0]}x{k_mn[1]}x{kk}" for kk in gemm_k]),
        ("decode", "gemm, decode regime (issue 22): M = 1..64 on (N, K) = 7168x7168, 4096x14336, 14336x4096; "
         "M = 128 / 129", decode),
        ("quant", "quantize / dequantize / scale swizzle vs a D2D copy",
         [f"{op}:{m}x{kk}" for m, kk in quant for op in ("quantize", "dequantize", "swizzle", "unswizzle")]),
    ]


def impls_for(p, backends):
    """nvfp4 rows (one per backend; grouped: grouped_gemm and grouped_gemm_packed) + peers."""
    from nvfp4._bench_gpu import NvFp4, nvfp4_impls
    from nvfp4._bench_problems import Grouped
    from peers import peers_for

    if isinstance(p, Grouped) and not p.packed:
        nv = []
        for be in backends:
            nv += [NvFp4(be, "", "nvfp4"), NvFp4(be, "packed", "nvfp4 packed")]
    else:
        nv = nvfp4_impls(p, backends)
    return nv + peers_for(p)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python bench/run.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer sweep points (about 90 s on an H100)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"),
                    help="results root; files go to <out>/<gpu-name>/ (default bench/results)")
    ap.add_argument("--suites", default=None,
                    help="comma-separated subset of shapes,gemm_m,moe,moe_route,gemv_m,gemm_k,decode,quant (default all)")
    ap.add_argument("--backend", default="auto", help="nvfp4 backend(s), comma-separated (default auto)")
    ap.add_argument("--reps", type=int, default=None, help="timed batches per row (default 10; --quick 5)")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="start no new case after this many minutes (default 5.5; --quick 2)")
    ap.add_argument("--ceilings", choices=("measure", "datasheet"), default="measure")
    ap.add_argument("--no-graphs", action="store_true", help="eager back-to-back launches instead of CUDA graphs")
    ap.add_argument("--no-peers", action="store_true", help="nvfp4 rows only")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--device", default="cuda", help="torch device; 'cpu' with --tiny dry-runs the harness")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes: a self-test of the suite (CPU too)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("bench/run.py needs PyTorch (device memory, CUDA events and graphs, the float64 check and all "
              "peers); not installed: nothing run. `python -m nvfp4 bench` prints datasheet SOL without it.")
        return 1
    import nvfp4
    from nvfp4._bench_gpu import run_case
    from nvfp4._bench_problems import Harness, parse_spec
    from nvfp4._bench_report import ceilings_line, describe_device, get_ceilings
    from nvfp4._timing import ROTATE_BYTES, Progress, Timer

    import report

    if args.device.startswith("cuda") and nvfp4._nvfp4_ext.device_count() == 0:
        print("no CUDA GPU visible to libnvfp4: nothing to benchmark (try --device cpu --tiny for a dry run)")
        return 1
    reps = args.reps or (5 if args.quick else 10)
    max_min = args.max_minutes if args.max_minutes is not None else (2.0 if args.quick else 5.5)
    backends = [b.strip() for b in args.backend.split(",") if b.strip()] or ["auto"]
    suites = build_suites(args.quick, args.tiny)
    if args.suites:
        want = {s.strip() for s in args.suites.split(",") if s.strip()}
        unknown = want - {s[0] for s in suites}
        if unknown:
            print(f"unknown suite(s) {', '.join(sorted(unknown))}; choose from {', '.join(s[0] for s in suites)}")
            return 2
        suites = [s for s in suites if s[0] in want]

    t_start = time.perf_counter()
    h = Harness(torch, args.device)
    timer = Timer(torch, args.device, reps=reps, graphs=not args.no_graphs, budget_s=0.5)
    dev = describe_device(torch, args.device)
    cc = dev.get("compute_capability", [0, 0])
    print(f"device: {dev['name']} (CC {cc[0]}.{cc[1]}); nvfp4 {dev['nvfp4']} (auto = {dev['backend']}), "
          f"torch {dev['torch']}", flush=True)
    ceilings, note = get_ceilings(torch, args.device, dev, args.ceilings, timer)
    if note:
        print(f"note: {note}")
    print(ceilings_line(ceilings), flush=True)

    cases = [(name, spec) for name, _, specs in suites for spec in specs]
    bar = Progress(len(cases), enabled=not args.quiet)
    rows = []
    for i, (suite, spec) in enumerate(cases):
        bar.update(i, f"{suite} {spec}")
        p = parse_spec(spec)
        impls = impls_for(p, backends)
        if args.no_peers:
            impls = [x for x in impls if x.is_nvfp4]
        if (time.perf_counter() - t_start) / 60 > max_min:
            rows += [dict(suite=suite, op=p.op, spec=p.spec, shape=p.label, dims=p.dims(), impl=x.name,
                          backend=x.backend, is_nvfp4=x.is_nvfp4, flops=p.flops, bytes=p.nv_bytes,
                          nv_bytes=p.nv_bytes, sol_us=None, us=None, ok=None, rel_err=None, error=None,
                          skipped=f"time budget ({max_min:g} min) spent") for x in impls]
            continue
        rows += run_case(h, p, impls, timer, ceilings, suite=suite)
    elapsed = time.perf_counter() - t_start
    bar.update(len(cases), f"done in {elapsed:.0f} s")

    doc = {
        "schema": 1, "kind": "nvfp4 benchmark suite", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": ["bench/run.py"] + list(sys.argv[1:] if argv is None else argv), "quick": args.quick,
        "tiny": args.tiny, "elapsed_s": elapsed, "device": dev, "ceilings": ceilings.as_dict(),
        "timing": {"reps": reps, "graphs": not args.no_graphs, "rotate_bytes": ROTATE_BYTES,
                   "target_batch_us": timer.target_batch_us, "budget_s": timer.budget_s},
        "suites": [{"name": n, "title": t} for n, t, _ in suites],
        "rows": rows,
    }
    outdir = os.path.join(args.out, dev["slug"])
    written = report.write_all(doc, outdir, plots=not args.no_plots)
    print(report.terminal_summary(doc))
    for what, path in written.items():
        print(f"{what}: {path}")
    nv = [r for r in rows if r.get("is_nvfp4") and not r.get("skipped")]
    bad = [r for r in nv if not r.get("ok")]
    if bad:
        print(f"{len(bad)} nvfp4 row(s) failed their check or errored: " +
              "; ".join(f"{r['spec']} [{r['impl']}]" for r in bad[:8]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
