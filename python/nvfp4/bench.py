"""`python -m nvfp4 bench`: the main job.

On the current GPU: the gpu-mode benchmark shapes of gemv, gemm, dual_gemm and
grouped_gemm, each checked against a float64 reference and timed (median µs, TFLOP/s,
GB/s, speed of light and time/SOL, ceilings measured in the same run). Without a GPU it
says so and checks the install on the CPU. The full suite with peers (cuBLAS bf16/fp8,
dequantize+matmul, torch._grouped_mm) and sweeps is bench/run.py in the repository.
"""

from __future__ import annotations

import os
import time

import numpy as np


def add_arguments(p) -> None:
    p.add_argument("--problems", default="gemv,gemm,dual,grouped",
                   help="comma-separated subset of gemv,gemm,dual,grouped (also: packed = grouped_gemm_packed "
                        "on the grouped shapes); default: the four gpu-mode problems")
    p.add_argument("--shapes", default=None,
                   help="explicit shapes instead, comma-separated: gemm:MxNxK, dual:MxNxK, gemv:MxKxL, "
                        "grouped:M1+M2+...xNxK, packed:..., e.g. 'gemm:128x7168x16384,gemv:7168x16384x1'")
    p.add_argument("--backend", default="auto",
                   help="auto, portable, sm90a, sm100a; a comma-separated list runs each (default auto)")
    p.add_argument("--reps", type=int, default=20,
                   help="timed batches per row, the median is over them; each batch is a CUDA graph of "
                        "back-to-back launches of about 2 ms (default 20)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write every row to this JSON file")
    p.add_argument("--ceilings", choices=("measure", "datasheet"), default="measure",
                   help="copy bandwidth and bf16 rate for SOL: measured now (default) or the datasheet table")
    p.add_argument("--no-graphs", action="store_true",
                   help="time eager back-to-back launches instead of CUDA graph replays")
    p.add_argument("--device", default=None,
                   help="torch device (default cuda); 'cpu' dry-runs the harness on host tensors "
                        "(tests the plumbing; times mean nothing)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _cpu_smoke() -> None:
    from . import gemm, quantize
    from .reference import gemm_ref

    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 256), dtype=np.float32)
    b = rng.standard_normal((32, 256), dtype=np.float32)
    qa, sfa, gsa = quantize(a)
    qb, sfb, gsb = quantize(b)
    alpha = float(gsa[0]) * float(gsb[0])
    t0 = time.perf_counter()
    c = gemm(qa, sfa, qb, sfb, alpha=alpha, out_dtype="float32")
    dt = time.perf_counter() - t0
    ref = gemm_ref(qa, sfa, qb, sfb, alpha=alpha)
    err = float(np.linalg.norm(c - ref) / np.linalg.norm(ref))
    print(f"CPU reference gemm 64x32x256: {dt * 1e3:.2f} ms, rel. error vs numpy reference {err:.2e} "
          f"({'ok' if err < 1e-6 else 'MISMATCH'})")


def run(args) -> int:
    from . import _nvfp4_ext as _ext

    if getattr(args, "device", None) and not str(args.device).startswith("cuda"):
        from ._bench_gpu import run_gpu

        return run_gpu(args)   # a dry run of the harness on host tensors
    if _ext.device_count() == 0:
        print("no CUDA GPU visible: nothing to benchmark; checking the install on the CPU instead")
        if os.path.exists("/dev/nvidiactl"):
            print(f"note: an NVIDIA driver is present but libnvfp4 sees no device "
                  f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}, "
                  f"archs built: {_ext.build_archs()})")
        _cpu_smoke()
        return 0
    from ._bench_gpu import run_gpu

    return run_gpu(args)
