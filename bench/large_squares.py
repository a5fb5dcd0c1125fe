"""Large square GEMMs: nvfp4 gemm against cuBLAS bf16 (torch.matmul) in one process.

The two alternate in rounds (each: 20 back-to-back eager calls between CUDA events, inputs
rotated over > 256 MB), after 0.3 s of warm-up each, so that both see the same clocks; the
ratio is taken per round and its median reported, with the spread. Random packed bytes and
scale bytes in [0x30, 0x40) for nvfp4, randn for bf16.

    python bench/large_squares.py [--sizes 4096,8192] [--rounds 7]
"""
import argparse
import statistics as st
import time

try:
    import torch
except ImportError:  # pragma: no cover - GPU machines only
    raise SystemExit("bench/large_squares.py needs PyTorch with CUDA")

import nvfp4


def batch_ms(fn, n, sets):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for i in range(n):
        fn(i % sets)
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=7)
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
        del A, B, qa, qb, sa, sb
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
