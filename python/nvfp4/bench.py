"""`python -m nvfp4 bench`: the main job (grows with the kernels; see bench/ for the full suite)."""

from __future__ import annotations

import time

import numpy as np


def add_arguments(p) -> None:
    p.add_argument("--problems", default="gemv,gemm,dual,grouped",
                   help="comma-separated subset of gemv,gemm,dual,grouped")
    p.add_argument("--backend", default="auto", help="auto, portable, sm90a, ...")
    p.add_argument("--reps", type=int, default=50, help="timed launches per shape")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")


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

    if _ext.device_count() == 0:
        print("no CUDA GPU visible: nothing to benchmark; checking the install on the CPU instead")
        _cpu_smoke()
        return 0
    from ._bench_gpu import run_gpu

    return run_gpu(args)
