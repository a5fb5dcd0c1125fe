"""Session 25: the 64- and 32-token instances alone, for racecheck / synccheck (the full smoke ran past 120 s)."""
import cupy as cp
import numpy as np
import nvfp4
rng = np.random.default_rng(0)
def fp4(*s): return cp.asarray(rng.integers(0, 256, s, dtype=np.uint8))
def sf(*s): return cp.asarray(rng.integers(0x30, 0x48, s, dtype=np.uint8))
for M, N, K, L in [(64, 256, 16384, 1), (25, 1000, 8192, 3), (48, 3000, 2080, 2), (40, 1024, 4096, 1),
                   (96, 256, 16384, 1), (70, 3000, 2080, 2), (80, 1000, 8192, 3), (65, 1024, 4096, 1)]:
    a, sa, b, sb = fp4(L, M, K // 2), sf(L, M, K // 16), fp4(L, N, K // 2), sf(L, N, K // 16)
    nvfp4.gemm(a, nvfp4.swizzle_scales(sa), b, nvfp4.swizzle_scales(sb), sf_layout="blocked", backend="sm90a")
    nvfp4.gemm(a, sa, b, sb, backend="sm90a")
    cp.cuda.runtime.deviceSynchronize()
    print("ok", M, N, K, L, flush=True)
