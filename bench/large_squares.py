"""Large square GEMMs: nvfp4 gemm against cuBLAS bf16 (torch.matmul) in one process.

The two alternate in rounds (each: 20 back-to-back eager calls between CUDA events, inputs
rotated over > 256 MB), after 0.3 s of warm-up each, so that both see the same clocks; the
ratio is taken per round and its median reported, with the spread. Random packed bytes and
scale bytes in [0x30, 0x40) for nvfp4, randn for bf16.

--sustained S: afterwards each op also runs back to back for S seconds while nvidia-smi samples the
SM clock and board power; printed: µs per call, median MHz and W, and energy per call (W x µs). At
these sizes both ops run at the board's power cap, where time per call = energy per call / cap
(bench/NOTES.md "The large-M main loop is power-limited").

    python bench/large_squares.py [--sizes 4096,8192] [--rounds 7] [--sustained 3]
"""
import argparse
import statistics as st
import time

try:
    import torch
except ImportError:  # pragma: no cover - GPU machines only
    raise SystemExit("bench/large_squares.py needs PyTorch with CUDA")

import nvfp4
from nvfp4._timing import ClockSampler


def batch_ms(fn, n, sets):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for i in range(n):
        fn(i % sets)
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) / n


def sustained(name, fn, sets, seconds, device_index):
    """fn back to back for `seconds` (batches of 20) under a ClockSampler; one line."""
    with ClockSampler(device_index) as clk:
        calls, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for i in range(20):
                fn(i % sets)
            torch.cuda.synchronize()
            calls += 20
        us = (time.perf_counter() - t0) / calls * 1e6
    c = clk.stats
    power = (f"SM {c['mhz']:.0f} MHz (min {c['mhz_min']:.0f}), {c['watts']:.0f} W (max {c['watts_max']:.0f}), "
             f"{c['watts'] * us:.0f} µJ per call ({c['samples']} samples)") if c else "no nvidia-smi samples"
    print(f"  sustained {seconds:g} s, {name}: {us:.1f} µs per call; {power}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sustained", type=float, default=0.0, metavar="S",
                    help="also run each op back to back for S seconds with clock / power sampling")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    torch.manual_seed(0)
    print(f"device: {torch.cuda.get_device_name()}")
    for S in (int(x) for x in args.sizes.split(",")):
        sets = max(2, int(256e6 // (S * S * 2 * 2)) + 1)
        A = [torch.randn(S, S, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
        B = [torch.randn(S, S, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
        qa = [torch.randint(0, 256, (S, S // 2), device="cuda", dtype=torch.uint8) for _ in range(sets)]
        qb = [torch.randint(0, 256, (S, S // 2), device="cuda", dtype=torch.uint8) for _ in range(sets)]
        sa = [torch.randint(0x30, 0x40, (S, S // 16), device="cuda", dtype=torch.uint8) for _ in range(sets)]
        sb = [torch.randint(0x30, 0x40, (S, S // 16), device="cuda", dtype=torch.uint8) for _ in range(sets)]
        bf16 = lambda i: torch.matmul(A[i], B[i].T)  # noqa: E731
        fp4 = lambda i: nvfp4.gemm(qa[i], sa[i], qb[i], sb[i])  # noqa: E731
        for fn in (bf16, fp4):
            t0 = time.time()
            while time.time() - t0 < 0.3:
                batch_ms(fn, 5, sets)
        tb, tf, ratio = [], [], []
        for _ in range(args.rounds):
            b, f = batch_ms(bf16, 20, sets), batch_ms(fp4, 20, sets)
            tb.append(b)
            tf.append(f)
            ratio.append(b / f)
        flops = 2 * S ** 3
        print(f"{S}^3: nvfp4 {st.median(tf) * 1e3:.1f} us ({flops / st.median(tf) / 1e9:.0f} TFLOP/s, "
              f"backend {nvfp4.last_backend()}), cuBLAS bf16 {st.median(tb) * 1e3:.1f} us "
              f"({flops / st.median(tb) / 1e9:.0f} TFLOP/s); nvfp4 / cuBLAS bf16 rate per round: median "
              f"{st.median(ratio):.3f}, min {min(ratio):.3f}, max {max(ratio):.3f}")
        for name, fn in (("nvfp4", fp4), ("cuBLAS bf16", bf16)) if args.sustained > 0 else ():
            sustained(name, fn, sets, args.sustained, torch.cuda.current_device())
        del A, B, qa, qb, sa, sb
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
