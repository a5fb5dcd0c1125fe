"""Every op once on small odd shapes, on each GPU backend of the device, for
`compute-sanitizer` (memcheck / racecheck). CuPy arrays keep start-up light.
Usage: compute-sanitizer --tool memcheck python3 tools/sanitize_smoke.py"""

import cupy as cp
import numpy as np

import nvfp4

rng = np.random.default_rng(0)


def fp4(*shape):
    return cp.asarray(rng.integers(0, 256, shape, dtype=np.uint8))


def sf(*shape):
    return cp.asarray(rng.integers(0x30, 0x48, shape, dtype=np.uint8))


backends = ["portable"] + [d["backend"] for d in nvfp4.info()["devices"][:1] if d["backend"] != "portable"]
for be in backends:
    for M, N, K, L in [(7, 200, 96, 3), (129, 8, 32, 1), (1, 129, 256, 2), (2, 300, 2048, 2)]:
        a, sa, b, sb = fp4(L, M, K // 2), sf(L, M, K // 16), fp4(L, N, K // 2), sf(L, N, K // 16)
        nvfp4.gemm(a, sa, b, sb, backend=be)
        nvfp4.gemm(a, nvfp4.swizzle_scales(sa), b, nvfp4.swizzle_scales(sb), sf_layout="blocked",
                   out_dtype="float32", backend=be)
        nvfp4.gemv(a, sa, b[:, 0], sb[:, 0], backend=be)
        try:
            nvfp4.dual_gemm(a, sa, b, sb, b, sb, backend=be)
        except NotImplementedError:
            pass
    x = cp.asarray(rng.standard_normal((3, 129, 96), dtype=np.float32))
    for layout in ("linear", "blocked"):
        q, s, g = nvfp4.quantize(x, sf_layout=layout, backend=be if be == "portable" else "auto")
        nvfp4.dequantize(q, s, global_scale=g, sf_layout=layout, backend="auto")
    nvfp4.unswizzle_scales(nvfp4.swizzle_scales(sf(2, 129, 6)), 129, 96)
    # long rows: the portable row-segment quantize, amax and staged dequantize kernels, and
    # the 16-byte staged swizzles (K/16 a multiple of 16)
    for dt in (np.float32, np.float16):
        x2 = cp.asarray(rng.standard_normal((2, 130, 2080)).astype(dt))
        for layout in ("linear", "blocked"):
            q, s, g = nvfp4.quantize(x2, sf_layout=layout, backend=be if be == "portable" else "auto")
            for out_dt in ("float32", "float16"):
                nvfp4.dequantize(q, s, global_scale=g, sf_layout=layout, dtype=out_dt, backend="auto")
    nvfp4.unswizzle_scales(nvfp4.swizzle_scales(sf(2, 130, 64)), 130, 1024)
    ga = [fp4(m, 64) for m in (40, 56)]
    gsa = [sf(m, 8) for m in (40, 56)]
    nvfp4.grouped_gemm(ga, gsa, [fp4(72, 64)] * 2, [sf(72, 8)] * 2, backend="auto")
    offs = cp.asarray(np.array([0, 5, 5, 20], dtype=np.int32))
    nvfp4.grouped_gemm_packed(fp4(20, 64), sf(20, 8), fp4(3, 33, 64), sf(3, 33, 8), offs, backend="auto")
    # the packed MoE decode route (sm90a: gemv/decode_kernel.cuh gemm_decode_moe_kernel): empty experts,
    # chunks of 8 rows; an expert of 20 rows in chunks of 16 (two token groups); K split over a
    # cluster of 2 (K = 8192); then a malformed table (decreasing, negative, past total_M)
    for G, N, K, counts in [(16, 512, 256, (3, 0, 0, 1, 2, 0, 1, 0, 0, 0, 4, 0, 0, 1, 0, 0)),
                            (16, 512, 256, (20, 0, 1, 12) + (0,) * 12), (8, 1024, 8192, (1, 0, 2, 0, 0, 1, 0, 0))]:
        T = sum(counts)
        moe_offs = cp.asarray(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
        nvfp4.grouped_gemm_packed(fp4(T, K // 2), sf(T, K // 16), fp4(G, N, K // 2), sf(G, N, K // 16), moe_offs,
                                  out_dtype="float32", backend=be)
    moe_bad = cp.asarray(np.array([0, 9, 3, -5, 2 ** 31 - 1] + [4] * 12, dtype=np.int32))
    nvfp4.grouped_gemm_packed(fp4(12, 128), sf(12, 16), fp4(16, 512, 128), sf(16, 512, 16), moe_bad, backend=be)
    # the packed tiled route (sm90a: kernel/grouped_packed_gemm.cuh, the persistent grouped walk):
    # experts of 300 / 0 / 129 / 1 / 70 rows on 16 weight tiles = 144 tiles (CTAs walking two tiles
    # on 132 SMs: the ring carried across experts), K = 96; then overlapping spans past the bound
    T, counts = 500, (300, 0, 129, 1, 70)
    tiled_offs = cp.asarray(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    nvfp4.grouped_gemm_packed(fp4(T, 48), sf(T, 6), fp4(5, 2048, 48), sf(5, 2048, 6), tiled_offs,
                              alphas=cp.asarray(np.full(5, 0.5, np.float32)), backend=be)
    tiled_bad = cp.asarray(np.array([0, 200, 0, 200, 0], dtype=np.int32))
    nvfp4.grouped_gemm_packed(fp4(200, 32), sf(200, 4), fp4(4, 136, 32), sf(4, 136, 4), tiled_bad,
                              out_dtype="float32", backend=be)
    if be == "sm90a":
        # the pre-decoded GEMM path (token pre-decode pass, TMA box fitted to M < 128, split-K
        # cluster reduction): K slices longer than one unpromoted chain (blocked scales: bulk
        # copies; racecheck found a hazard here until every consumer lane released the ring
        # stages, session 4); then a fused short-chain case with ring reuse, 9 token tiles,
        # L = 2 and a K tail (unaligned scale rows: producer-lane scale stores).
        # Then a lone CTA per tile (splits == 1): stream-K (165 tiles of 16 blocks) and the fused
        # kernel (120 tiles of 8 blocks: fewer tiles than SMs). Last: the 136-token instance (gemm_plan.hpp
        # choose_token_tile; 132 SMs): M = 129 in one token tile, clusters of 8 (the run-time
        # split reduction, 17 token rows per CTA). Then stream-K (kernel/gemm_streamk.cuh; 132 SMs): 70
        # tiles of 32 blocks cut into 17-block ranges (tiles over three CTAs), 144 tiles in two batches;
        # last the persistent kernel (256 wide tiles of 17 blocks, M / N / K tails). The first case
        # (40 tokens) runs the 64-token instance (M <= 64); 72 tokens the 96-token one, 100 tokens the
        # 128-token one (clusters of 8); 64 x 256 x 16384 the 64-token instance in clusters of 8, 25 x 1000 x
        # 8192 (3 batches) the 32-token one in clusters of 5.
        for M, N, K, L in [(40, 4096, 16384, 1), (72, 1024, 16384, 1), (100, 1024, 16384, 1), (64, 256, 16384, 1),
                           (25, 1000, 8192, 3),
                           (1030, 136, 2080, 2),
                           (300, 7000, 2048, 1), (300, 5000, 1024, 1), (129, 2048, 8192, 1), (640, 1792, 4096, 1),
                           (300, 3000, 4096, 2), (1030, 2000, 2080, 2)]:
            a, sa, b, sb = fp4(L, M, K // 2), sf(L, M, K // 16), fp4(L, N, K // 2), sf(L, N, K // 16)
            nvfp4.gemm(a, nvfp4.swizzle_scales(sa), b, nvfp4.swizzle_scales(sb), sf_layout="blocked", backend=be)
            nvfp4.gemm(a, sa, b, sb, backend=be)
        # the fused dual kernel (cpp/src/sm90/dual_plan.hpp): split-K clusters (8 and 3 CTAs on an
        # H100: the run-time and the compile-time reduction), bulk-copied blocked and TMA-loaded
        # linear scales, TMA stores (N = 200, 520) and plain stores (N = 7)
        for M, N, K, L in [(129, 200, 4096, 1), (300, 520, 2048, 3), (7, 7, 256, 2)]:
            a, sa, b, sb = fp4(L, M, K // 2), sf(L, M, K // 16), fp4(L, N, K // 2), sf(L, N, K // 16)
            b2, sb2 = fp4(L, N, K // 2), sf(L, N, K // 16)
            sw = nvfp4.swizzle_scales
            nvfp4.dual_gemm(a, sw(sa), b, sw(sb), b2, sw(sb2), sf_layout="blocked", backend=be)
            nvfp4.dual_gemm(a, sa, b, sb, b2, sb2, activation="gelu_tanh", out_dtype="float32", backend=be)
        # the dense decode route (gemv/decode_kernel.cuh gemm_decode_kernel; H100 plans, decode_plan.hpp):
        # 16 tokens x 4096 x 2048 in 256-K stages over clusters of 3; 3 tokens x 4100 x 4000 (blocked: a
        # partial last fine stage, an N tail) in fine stages over clusters of 6; 20 tokens (3 groups) x
        # 2400 x 1024 x 3 batches in 512-K stages, one CTA per task range
        for M, N, K, L in [(16, 4096, 2048, 1), (3, 4100, 4000, 1), (20, 2400, 1024, 3)]:
            a, sa, b, sb = fp4(L, M, K // 2), sf(L, M, K // 16), fp4(L, N, K // 2), sf(L, N, K // 16)
            nvfp4.gemm(a, nvfp4.swizzle_scales(sa), b, nvfp4.swizzle_scales(sb), sf_layout="blocked", backend=be)
            if K % 256 == 0:
                nvfp4.gemm(a, sa, b, sb, out_dtype="float32", backend=be)
        # the dual decode route (gemv/decode_kernel.cuh dual_gemm_decode_kernel): 5 tokens on a part-empty
        # 128-row band (N = 2050), both layouts; 12 tokens (two token groups) with K split over a cluster
        for M, N, K, L in [(5, 2050, 256, 1), (12, 1024, 8192, 2)]:
            a, sa, b, sb = fp4(L, M, K // 2), sf(L, M, K // 16), fp4(L, N, K // 2), sf(L, N, K // 16)
            b2, sb2 = fp4(L, N, K // 2), sf(L, N, K // 16)
            sw = nvfp4.swizzle_scales
            nvfp4.dual_gemm(a, sw(sa), b, sw(sb), b2, sw(sb2), sf_layout="blocked", backend=be)
            nvfp4.dual_gemm(a, sa, b, sb, b2, sb2, activation="gelu_tanh", out_dtype="float32", backend=be)
        # the one-launch grouped GEMM (kernel/grouped_gemm.cuh): ragged M_g (0, 1, 130), N_g and
        # K_g (tails, several K in one table), both layouts; then few tiles (split-K clusters)
        for Ms, Ns, Ks in [((0, 1, 130, 37), (200, 7, 129, 64), (96, 2080, 256, 1024)), ((100, 3), (128, 100), (4096,) * 2)]:
            ga, gsa = [fp4(m, k // 2) for m, k in zip(Ms, Ks)], [sf(m, k // 16) for m, k in zip(Ms, Ks)]
            gb, gsb = [fp4(n, k // 2) for n, k in zip(Ns, Ks)], [sf(n, k // 16) for n, k in zip(Ns, Ks)]
            nvfp4.grouped_gemm(ga, gsa, gb, gsb, backend=be)
            nvfp4.grouped_gemm(ga, [nvfp4.swizzle_scales(x) for x in gsa], gb, [nvfp4.swizzle_scales(x) for x in gsb],
                               sf_layout="blocked", out_dtype="float32", backend=be)
cp.cuda.runtime.deviceSynchronize()
print("sanitize smoke: ran every op on backends", backends)
