"""Session 26 (prepared in 25): one call of the tiled GEMM for ncu. argv: M N K."""
import sys
import cupy as cp, numpy as np, nvfp4
M, N, K = (int(v) for v in sys.argv[1:4])
rng = np.random.default_rng(0)
def fp4(*s): return cp.asarray(rng.integers(0, 256, s, dtype=np.uint8))
def sf(*s): return cp.asarray(rng.integers(0x30, 0x48, s, dtype=np.uint8))
a, sa, b, sb = fp4(M, K // 2), sf(M, K // 16), fp4(N, K // 2), sf(N, K // 16)
for _ in range(3):
    nvfp4.gemm(a, sa, b, sb, backend="sm90a")
cp.cuda.runtime.deviceSynchronize()
print("ok", flush=True)
