# One packed MoE call (or its dense equivalents) for ncu: argv = kind N K
import sys, cupy as cp, numpy as np, nvfp4
kind, N, K = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(1)
def fp4(*s): return cp.asarray(rng.integers(0, 256, s, dtype=np.uint8))
def sf(*s): return cp.asarray(rng.integers(0x30, 0x48, s, dtype=np.uint8))
counts = [0] * 64
for e in (13, 33, 36, 43, 46, 47, 50, 62): counts[e] = 1  # bench/run.py moe_routing(1, 64)
G = 64 if kind == "moe" else 8
if kind == "moe8": counts = [1] * 8
off = cp.asarray(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
T = int(sum(counts))
a, sa, b, sb = fp4(T, K // 2), sf(T, K // 16), fp4(G, N, K // 2), sf(G, N, K // 16)
for _ in range(4):
    nvfp4.grouped_gemm_packed(a, sa, b, sb, off)
cp.cuda.runtime.deviceSynchronize(); print("ok")
