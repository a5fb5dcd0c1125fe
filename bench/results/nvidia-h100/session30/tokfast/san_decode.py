"""The decode routes' kernels (dense, dual, packed MoE) on small shapes, for compute-sanitizer
(memcheck / racecheck / synccheck) after the token tile's new thread order (tile2.patch):
odd token counts (both parities of the last pair live), 17..24 tokens (three groups), K tails,
both scale layouts, clusters splitting K."""
import cupy as cp
import numpy as np

import nvfp4

rng = np.random.default_rng(1)
fp4 = lambda *s: cp.asarray(rng.integers(0, 256, s, dtype=np.uint8))
sf = lambda *s: cp.asarray(rng.integers(0x30, 0x48, s, dtype=np.uint8))
sw = nvfp4.swizzle_scales
for M, N, K, L in [(3, 4100, 4000, 1), (16, 4096, 2048, 1), (17, 4096, 4096, 1), (24, 2400, 1024, 3), (5, 4096, 8192, 1)]:
    a, sa, b, sb = fp4(L, M, K // 2), sf(L, M, K // 16), fp4(L, N, K // 2), sf(L, N, K // 16)
    nvfp4.gemm(a, sw(sa), b, sw(sb), sf_layout="blocked")
    if K % 256 == 0:
        nvfp4.gemm(a, sa, b, sb, out_dtype="float32")
for M, N, K, L in [(5, 2050, 256, 1), (13, 1024, 8192, 2)]:
    a, sa, b, sb = fp4(L, M, K // 2), sf(L, M, K // 16), fp4(L, N, K // 2), sf(L, N, K // 16)
    b2, sb2 = fp4(L, N, K // 2), sf(L, N, K // 16)
    nvfp4.dual_gemm(a, sw(sa), b, sw(sb), b2, sw(sb2), sf_layout="blocked")
    nvfp4.dual_gemm(a, sa, b, sb, b2, sb2, activation="gelu_tanh", out_dtype="float32")
for G, N, K, counts in [(16, 512, 256, (3, 0, 0, 1, 2, 0, 1, 0, 0, 0, 4, 0, 0, 1, 0, 0)), (16, 512, 256, (21, 0, 1, 12) + (0,) * 12)]:
    T = sum(counts)
    offs = cp.asarray(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    nvfp4.grouped_gemm_packed(fp4(T, K // 2), sf(T, K // 16), fp4(G, N, K // 2), sf(G, N, K // 16), offs, out_dtype="float32")
cp.cuda.runtime.deviceSynchronize()
print("san_decode: done")
