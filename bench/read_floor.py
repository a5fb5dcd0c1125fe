"""The HBM read floor of the decode regime: how fast can any kernel read a decode GEMM's bytes?

In the decode regime (2..64 tokens against 4-bit weights) a GEMM's time is reading the weights once.
The suite's SOL divides those bytes by the copy bandwidth of a 1 GiB copy, a steady-state rate that a
10-20 µs kernel never reaches: a launch ramps up, and its last waves drain. This script measures, in
one process and the same way the suite times nvfp4 (CUDA-graph batches, inputs rotated over > 256 MB,
median):

- floor: the fastest of a few plain read kernels (triton: 16-byte loads, a sum per program, one store
  per program; grid and unroll swept) over exactly the weight + scale bytes of the shape;
- torch.sum over the same bytes (a second, independent read kernel);
- nvfp4.gemm at M = 1, 2, 4, 8, 16 tokens on the shape;

and prints each beside the SOL of the bytes (copy rate). time / floor is the part of a decode kernel's
time that its own design can still win; time / SOL includes what no kernel of that size can.

    python bench/read_floor.py [--shapes 7168x7168,4096x14336,14336x4096] [--tokens 1,2,4,8,16]
"""
import argparse

try:
    import torch
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - GPU machines only
    raise SystemExit("bench/read_floor.py needs PyTorch with CUDA and triton")

import nvfp4
from nvfp4._timing import Timer, measure_ceilings, rotation_count


@triton.jit
def _read_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    pid = tl.program_id(0)
    base = pid.to(tl.int64) * BLOCK * ITERS
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for i in range(ITERS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


def triton_floor(timer, bufs, configs):
    """Best median over the (BLOCK, ITERS, num_warps) configs: (µs, config)."""
    n = bufs[0].numel()
    best = None
    for block, iters, warps in configs:
        grid = (triton.cdiv(n, block * iters),)
        out = torch.empty(grid[0], dtype=torch.int32, device=bufs[0].device)

        def launch(i, block=block, iters=iters, warps=warps, grid=grid, out=out):
            _read_kernel[grid](bufs[i], out, n, BLOCK=block, ITERS=iters, num_warps=warps)

        t = timer.time(launch, len(bufs)).us
        if best is None or t < best[0]:
            best = (t, f"BLOCK {block} x {iters}, {warps} warps, {grid[0]} programs")
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="7168x7168,4096x14336,14336x4096", help="NxK weight shapes")
    ap.add_argument("--tokens", default="1,2,4,8,16")
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    dev = torch.device("cuda")
    timer = Timer(torch, dev, reps=args.reps)
    ceil = measure_ceilings(torch, dev, timer)
    print(f"device: {torch.cuda.get_device_name()}; copy {ceil.copy_bytes_per_s / 1e12:.2f} TB/s (1 GiB D2D, "
          f"read + write); nvfp4 {nvfp4.__version__}, triton {triton.__version__}")
    configs = [(b, it, w) for b in (1024, 2048) for it in (1, 4, 8) for w in (4, 8)]
    head = f"{'N x K':>12} {'MB':>6} {'SOL µs':>7} {'floor µs':>8} {'floor/SOL':>9} {'sum µs':>7} | " \
           + " ".join(f"{'M=' + t:>14}" for t in args.tokens.split(","))
    print(head + "\n" + "-" * len(head))
    print(f"{'':>62}" + " ".join(f"{'µs (/floor)':>14}" for _ in args.tokens.split(",")))
    for spec in args.shapes.split(","):
        N, K = (int(v) for v in spec.split("x"))
        nbytes = N * K // 2 + N * K // 16
        sets = rotation_count(nbytes)
        raw = [torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=dev) for _ in range(sets)]
        floor_us, cfg = triton_floor(timer, [r.view(torch.int32) for r in raw], configs)
        f32 = [r.view(torch.float32) for r in raw]
        sum_us = timer.time(lambda i: torch.sum(f32[i]), sets).us
        sol = nbytes / ceil.copy_bytes_per_s * 1e6
        qb = [r[:N * K // 2].view(N, K // 2) for r in raw]
        sb = [(r[N * K // 2:].view(N, K // 16) & 0x0F) | 0x30 for r in raw]  # finite e4m3 scales
        cells = []
        for tok in (int(t) for t in args.tokens.split(",")):
            qa = torch.randint(0, 256, (tok, K // 2), dtype=torch.uint8, device=dev)
            sa = torch.randint(0x30, 0x40, (tok, K // 16), dtype=torch.uint8, device=dev)
            out = torch.empty(tok, N, dtype=torch.bfloat16, device=dev)
            t = timer.time(lambda i: nvfp4.gemm(qa, sa, qb[i], sb[i], out=out), sets).us
            cells.append(f"{t:7.1f} ({t / floor_us:4.2f})")
        print(f"{spec:>12} {nbytes / 1e6:6.1f} {sol:7.1f} {floor_us:8.1f} {floor_us / sol:9.2f} {sum_us:7.1f} | "
              + " ".join(f"{c:>14}" for c in cells))
        print(f"{'':>12} floor kernel: {cfg}")
        del raw, f32, qb, sb
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
