"""GPU side of `python -m nvfp4 bench` (needs PyTorch for events, peers and the check).

Method (METHOD.md, DESIGN.md §9): ceilings measured in the same run (a 1 GiB
device-to-device copy, bytes read + written; an 8192³ bf16 matmul); each shape checked
against a float64 reference on fresh random data first; then timed with CUDA events
around batches of back-to-back launches that rotate over input sets larger than L2;
warm-up; median over batches."""

from __future__ import annotations

import json
import math
import statistics
import sys

SHAPES = {
    "gemv": [(7168, 16384, 1), (4096, 7168, 8), (7168, 2048, 4)],              # M, K, L
    "gemm": [(128, 7168, 16384), (128, 4096, 7168), (128, 7168, 2048)],       # M, N, K
    "dual": [(256, 4096, 7168), (512, 4096, 7168), (256, 3072, 4096), (512, 3072, 7168)],
    "grouped": [([80, 176, 128, 72, 64, 248, 96, 160], 4096, 7168),           # M_g list, N, K
                ([40, 76, 168, 72, 164, 148, 196, 160], 7168, 2048),
                ([192, 320], 3072, 4096),
                ([128, 384], 4096, 1536)],
}
ROTATE_BYTES = 256 << 20  # input sets spanning > 4x a 60 MB L2


def _progress(i, n, label):
    width = 24
    done = int(width * i / max(n, 1))
    sys.stderr.write(f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {label:<40}")
    sys.stderr.flush()
    if i == n:
        sys.stderr.write("\n")


class _Torch:
    """Random NVFP4 operands and an independent float64 decode, in torch."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device
        e2m1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
        self.e2m1 = torch.tensor(e2m1 + [-v for v in e2m1], dtype=torch.float64, device=device)
        e4m3 = []
        for byte in range(256):
            sign = -1.0 if byte & 0x80 else 1.0
            exp, man = (byte >> 3) & 0xF, byte & 7
            if exp == 0xF and man == 7:
                e4m3.append(math.nan)
            elif exp == 0:
                e4m3.append(sign * man / 8 * 2.0 ** -6)
            else:
                e4m3.append(sign * (1 + man / 8) * 2.0 ** (exp - 7))
        self.e4m3 = torch.tensor(e4m3, dtype=torch.float64, device=device)

    def fp4(self, *shape):
        return self.torch.randint(0, 256, shape, dtype=self.torch.uint8, device=self.device)

    def scales(self, *shape):
        # bytes 0x30..0x47: values 0.5 .. 3.75, never zero
        return self.torch.randint(0x30, 0x48, shape, dtype=self.torch.uint8, device=self.device)

    def decode(self, q, sf):
        """(…, K/2) packed + (…, K/16) linear scales -> float64 (…, K)."""
        t = self.torch
        lo = self.e2m1[(q & 0xF).long()]
        hi = self.e2m1[(q >> 4).long()]
        v = t.stack((lo, hi), dim=-1).flatten(-2)
        s = self.e4m3[sf.long()].repeat_interleave(16, dim=-1)
        return v * s


def _time(torch, launch, n_sets, reps):
    """Median µs per launch over batches of back-to-back launches rotating input sets."""
    for i in range(max(3, n_sets)):
        launch(i % n_sets)
    torch.cuda.synchronize()
    per_batch = max(n_sets, 10)
    times = []
    for _ in range(max(5, reps // per_batch)):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(per_batch):
            launch(i % n_sets)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / per_batch)
    return statistics.median(times)


def _ceilings(torch):
    n = 1 << 29  # 512 MiB each way
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    us = _time(torch, lambda i: dst.copy_(src), 1, 20)
    bw = 2 * n / (us * 1e-6)
    del src, dst
    m = 8192
    a = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
    us = _time(torch, lambda i: a @ b, 1, 10)
    flops = 2 * m ** 3 / (us * 1e-6)
    return bw, flops


def _check(out, ref):
    """gpu-mode's check on fp16 outputs: |out - ref| <= 1e-3 + 1e-3 |ref| everywhere."""
    diff = (out.double() - ref).abs()
    rel = float((out.double() - ref).norm() / ref.norm().clamp_min(1e-30))
    return bool((diff <= 1e-3 + 1e-3 * ref.abs()).all()), rel


def run_gpu(args) -> int:
    try:
        import torch
    except ImportError:
        print("python -m nvfp4 bench needs PyTorch on GPU machines (CUDA events, peers, reference check)")
        return 1
    import nvfp4

    problems = [p.strip() for p in args.problems.split(",") if p.strip()]
    for p in problems:
        if p not in SHAPES:
            print(f"unknown problem {p!r}; choose from {', '.join(SHAPES)}")
            return 2
    dev = torch.device("cuda")
    info = nvfp4._nvfp4_ext.device_info(torch.cuda.current_device())
    print(f"device: {info['name']} (CC {info['compute_capability'][0]}.{info['compute_capability'][1]}, "
          f"{info['multiprocessors']} SMs); nvfp4 {nvfp4.__version__}; backend {args.backend} "
          f"(auto = {info['backend']})")
    bw, rate = _ceilings(torch)
    print(f"ceilings measured now: copy {bw / 1e12:.2f} TB/s, bf16 matmul {rate / 1e12:.0f} TFLOP/s")
    T = _Torch(torch, dev)
    rows, results = [], []
    jobs = [(p, s) for p in problems for s in SHAPES[p]]
    for j, (prob, shape) in enumerate(jobs):
        _progress(j, len(jobs), f"{prob} {shape}")
        res = _bench_one(torch, T, nvfp4, prob, shape, args, bw, rate)
        results.append(res)
    _progress(len(jobs), len(jobs), "done")
    hdr = f"{'problem':<8} {'shape':<34} {'backend':<9} {'µs':>8} {'TFLOP/s':>8} {'GB/s':>7} {'SOL µs':>7} {'t/SOL':>6} check"
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        print(f"{r['problem']:<8} {r['shape']:<34} {r['backend']:<9} {r['us']:>8.1f} {r['tflops']:>8.1f} "
              f"{r['gbps']:>7.0f} {r['sol_us']:>7.1f} {r['us'] / r['sol_us']:>6.2f} "
              f"{'ok' if r['ok'] else 'FAIL'} ({r['rel_err']:.1e})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": info, "copy_bw": bw, "bf16_rate": rate, "results": results}, f, indent=2)
    return 0 if all(r["ok"] for r in results) else 1


def _bench_one(torch, T, nvfp4, prob, shape, args, bw, rate):
    be = args.backend
    if prob == "gemv":
        M, K, L = shape
        N, groups = 1, None
        set_bytes = L * (M * K // 2 + M * K // 16 + K // 2 + K // 16) + L * M * 2
        flops = 2 * L * M * K
    elif prob in ("gemm", "dual"):
        M, N, K = shape
        L = 1
        nb = 2 if prob == "dual" else 1
        set_bytes = (M + nb * N) * (K // 2 + K // 16) + M * N * 2
        flops = 2 * nb * M * N * K
    else:
        ms, N, K = shape
        L = 1
        set_bytes = sum(m * (K // 2 + K // 16) + N * (K // 2 + K // 16) + m * N * 2 for m in ms)
        flops = sum(2 * m * N * K for m in ms)
    n_sets = max(1, math.ceil(ROTATE_BYTES / set_bytes))
    sets = []
    for _ in range(n_sets):
        if prob == "gemv":
            a, sa, b, sb = T.fp4(L, M, K // 2), T.scales(L, M, K // 16), T.fp4(L, K // 2), T.scales(L, K // 16)
            out = torch.empty(L, M, dtype=torch.float16, device="cuda")
            sets.append(((a, sa, b, sb), out))
        elif prob == "gemm":
            a, sa, b, sb = T.fp4(M, K // 2), T.scales(M, K // 16), T.fp4(N, K // 2), T.scales(N, K // 16)
            sets.append(((a, sa, b, sb), torch.empty(M, N, dtype=torch.float16, device="cuda")))
        elif prob == "dual":
            ops_ = (T.fp4(M, K // 2), T.scales(M, K // 16), T.fp4(N, K // 2), T.scales(N, K // 16),
                    T.fp4(N, K // 2), T.scales(N, K // 16))
            sets.append((ops_, torch.empty(M, N, dtype=torch.float16, device="cuda")))
        else:
            ops_ = ([T.fp4(m, K // 2) for m in ms], [T.scales(m, K // 16) for m in ms],
                    [T.fp4(N, K // 2) for _ in ms], [T.scales(N, K // 16) for _ in ms])
            sets.append((ops_, [torch.empty(m, N, dtype=torch.float16, device="cuda") for m in ms]))

    def launch(i):
        ops_, out = sets[i]
        if prob == "gemv":
            nvfp4.gemv(*ops_, out=out, backend=be)
        elif prob == "gemm":
            nvfp4.gemm(*ops_, out=out, backend=be)
        elif prob == "dual":
            nvfp4.dual_gemm(*ops_, out=out, backend=be)
        else:
            nvfp4.grouped_gemm(*ops_, out=out, backend=be)

    # correctness on set 0 against an independent float64 decode + matmul
    launch(0)
    torch.cuda.synchronize()
    ops_, out = sets[0]
    if prob == "gemv":
        a, sa, b, sb = ops_
        ref = torch.einsum("lmk,lk->lm", T.decode(a, sa), T.decode(b, sb))
        ok, rel = _check(out, ref)
    elif prob == "gemm":
        a, sa, b, sb = ops_
        ref = T.decode(a, sa) @ T.decode(b, sb).T
        ok, rel = _check(out, ref)
    elif prob == "dual":
        a, sa, b1, s1, b2, s2 = ops_
        da = T.decode(a, sa)
        h1, h2 = da @ T.decode(b1, s1).T, da @ T.decode(b2, s2).T
        ref = h1 * torch.sigmoid(h1) * h2
        ok, rel = _check(out, ref)
    else:
        ok, rel = True, 0.0
        for a, sa, b, sb, o in zip(*ops_, out):
            ref = T.decode(a, sa) @ T.decode(b, sb).T
            g_ok, g_rel = _check(o, ref)
            ok, rel = ok and g_ok, max(rel, g_rel)
    us = _time(torch, launch, n_sets, args.reps)
    sol_us = max(set_bytes / bw, flops / rate) * 1e6
    return {"problem": prob, "shape": str(shape).replace(" ", ""), "backend": be, "us": us,
            "tflops": flops / (us * 1e-6) / 1e12, "gbps": set_bytes / (us * 1e-6) / 1e9, "sol_us": sol_us,
            "ok": ok, "rel_err": rel}
