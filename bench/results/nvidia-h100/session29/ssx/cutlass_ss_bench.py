"""Session 29 prototype timing (issue 23): the pre-decoded SS GEMM (cutlass_ss.cu, fp16 operands holding exactly
decoded NVFP4 values, fp32 accumulation promoted every 512 K) against cuBLAS bf16 / fp16 (torch.matmul) and the
library's current nvfp4.gemm, CUDA-graph replays of 20 launches, median of 10 batches after a 25 ms settle, each
implementation timed after the other. The prototype leaves out the two decode passes (tokens and weights -> fp16):
their bytes (2.5625 B per element: 0.5 read + 1/16 scales + 2 written) are added at the copy rate measured here.
  run: python3 bench/results/nvidia-h100/session29/ssx/cutlass_ss_bench.py .scratch/ssx/libss.so"""
import ctypes
import statistics
import sys

import torch

import nvfp4

lib = ctypes.CDLL(sys.argv[1])
# CUTLASS's mma_promotion_interval counts k16 MMAs (4 per 64-K tile): 32 = every 512 K, the library's interval
# (call 9 passed 8, i.e. every 128 K: cutlass_ss_interval8.txt)
INTERVAL = int(sys.argv[2]) if len(sys.argv) > 2 else 32
lib.ss_gemm.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                        ctypes.c_int, ctypes.c_float, ctypes.c_int, ctypes.c_void_p]
torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device("cuda")
print(torch.cuda.get_device_name(), flush=True)


def fp4_valued(rows, k):  # e2m1 x e4m3 scale in [1/16, 1/4] per 16 values, exactly representable in fp16
    mag = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6], device=dev)
    v = mag[torch.randint(0, 8, (rows, k), device=dev)] * (torch.randint(0, 2, (rows, k), device=dev) * 2 - 1)
    sc = torch.exp2(torch.randint(-4, -1, (rows, k // 16), device=dev).float()) * (
        1 + torch.randint(0, 8, (rows, k // 16), device=dev).float() / 8)
    return (v * sc.repeat_interleave(16, dim=1)).half()


def time_graph(fn, n=20, batches=10):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn()
        s.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for _ in range(n):
                fn()
        g.replay()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t = 0.0
        while t < 25.0:  # settle
            e0.record(); g.replay(); e1.record(); e1.synchronize(); t += e0.elapsed_time(e1)
        ts = []
        for _ in range(batches):
            e0.record(); g.replay(); e1.record(); e1.synchronize()
            ts.append(e0.elapsed_time(e1) * 1000 / n)
    del g
    return statistics.median(ts)


x = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
y = torch.empty_like(x)
copy_us = time_graph(lambda: y.copy_(x), n=5, batches=5)
bw = 2 * (1 << 30) / (copy_us * 1e-6)
print(f"copy {bw / 1e12:.2f} TB/s", flush=True)
del x, y

shapes = [(1024, 7168, 7168), (2048, 7168, 7168), (4096, 7168, 7168),
          (8192, 7168, 7168), (4096, 4096, 4096), (8192, 8192, 8192), (2048, 14336, 4096)]
print(f"{'M x N x K':>20} {'cuBLAS bf16':>11} {'fp16':>7} {'nvfp4':>7} {'ss v0':>7} {'ss v1':>7} {'v2 np':>7}"
      f" {'passes':>7} {'v0+pass':>8} | nvfp4/bf16 (v0+pass)/bf16 v0/bf16   check", flush=True)
for M, N, K in shapes:
    a, b = fp4_valued(M, K), fp4_valued(N, K)
    d = torch.empty(M, N, dtype=torch.float16, device=dev)
    ref = a.float() @ b.float().t()
    res = {}
    for v in (0, 1, 2):
        d.fill_(float("nan"))
        rc = lib.ss_gemm(v, a.data_ptr(), b.data_ptr(), d.data_ptr(), M, N, K, 1.0, INTERVAL, torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        if rc != 0:
            res[v] = (None, f"rc {rc}")
            continue
        err = ((d.float() - ref).abs() / (1e-3 + 1e-3 * ref.abs())).max().item()
        st = torch.cuda.current_stream().cuda_stream
        us = time_graph(lambda v=v: lib.ss_gemm(v, a.data_ptr(), b.data_ptr(), d.data_ptr(), M, N, K, 1.0, INTERVAL,
                                                torch.cuda.current_stream().cuda_stream))
        res[v] = (us, f"{err:.2f}")
    ab, bb = a.bfloat16(), b.bfloat16()
    ob = torch.empty(M, N, dtype=torch.bfloat16, device=dev)
    bf = time_graph(lambda: torch.matmul(ab, bb.t(), out=ob))
    oh = torch.empty(M, N, dtype=torch.float16, device=dev)
    hf = time_graph(lambda: torch.matmul(a, b.t(), out=oh))
    qa = torch.randint(0, 256, (M, K // 2), dtype=torch.uint8, device=dev)
    qsa = torch.randint(0x18, 0x28, (M, K // 16), dtype=torch.uint8, device=dev)
    qb = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8, device=dev)
    qsb = torch.randint(0x18, 0x28, (N, K // 16), dtype=torch.uint8, device=dev)
    qo = torch.empty(M, N, dtype=torch.float16, device=dev)
    nv = time_graph(lambda: nvfp4.gemm(qa, qsa, qb, qsb, out=qo))
    passes = (M + N) * K * 2.5625 / bw * 1e6
    v0 = res[0][0]
    f = lambda u: f"{u:7.1f}" if u is not None else "      -"
    print(f"{M:>6} x {N:>5} x {K:>5} {bf:11.1f} {hf:7.1f} {nv:7.1f} {f(res[0][0])} {f(res[1][0])} {f(res[2][0])}"
          f" {passes:7.1f} {f(v0 + passes if v0 else None):>8} | {bf / nv:10.3f} "
          f"{(bf / (v0 + passes)) if v0 else 0:14.3f} {(bf / v0) if v0 else 0:7.3f}   "
          f"{res[0][1]} {res[1][1]} {res[2][1]}", flush=True)
    del a, b, d, ref, ab, bb, ob, oh, qa, qsa, qb, qsb, qo
    torch.cuda.empty_cache()
