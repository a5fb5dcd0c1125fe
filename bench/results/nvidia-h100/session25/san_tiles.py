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
# the fused dual kernel's token tiles (dual_plan.hpp dual_token_tile): 32 (s = 5 and 6: empty row shares), 64, 96
for M, N, K, L in [(7, 392, 3072, 3), (7, 8, 3072, 1), (33, 256, 4096, 1), (65, 200, 2048, 2), (17, 520, 2080, 1)]:
    a, sa = fp4(L, M, K // 2), sf(L, M, K // 16)
    b1, s1, b2, s2 = fp4(L, N, K // 2), sf(L, N, K // 16), fp4(L, N, K // 2), sf(L, N, K // 16)
    nvfp4.dual_gemm(a, sa, b1, s1, b2, s2, backend="sm90a")
    nvfp4.dual_gemm(a, nvfp4.swizzle_scales(sa), b1, nvfp4.swizzle_scales(s1), b2, nvfp4.swizzle_scales(s2),
                    sf_layout="blocked", out_dtype="float32", backend="sm90a")
    cp.cuda.runtime.deviceSynchronize()
    print("ok dual", M, N, K, L, flush=True)
