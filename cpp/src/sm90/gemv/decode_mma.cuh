// The decode kernel's tensor-core core (decode_kernel.cuh runs it): the token tile in shared
// memory and one MMA step over a ring stage. Shared by the dense, packed-MoE and dual routes.
//
// Numerics (docs/design.md "Numerics", the sm90a GEMM's contract): every weight element is
// decoded to e2m1 * 2^-14 in fp16 and multiplied by its block scale (HMUL2, exact:
// fp4_decode.cuh); every token element the same way, once per CTA, into shared memory.
// mma.sync m16n8k16 (fp16 in, fp32 accumulate) then multiplies exact products; the chain of
// one ring stage (512 K, or 256 K in fine stages) is added into a round-to-nearest fp32 sum
// (the wgmma GEMM restarts its chains every 512 K for the same reason: Hopper's tensor-core
// accumulation is not round-to-nearest). c = sum * 2^28 * alpha. Why fp16 and not the GEMV's exact int8 partials
// per scale block: those need one fp32 scaling per (row, token, block), 4 x 12 instructions
// per MMA, 2.4x the issue of this kernel at 16 tokens and more than the weights' bytes allow
// at 32; here the scale work is per weight element and does not grow with M.
//
// MMA mapping (warp task = 16 weight rows; lane (g, t) = (lane / 4, lane % 4)). MMA row i
// is weight row base + (i & 3) + 32 (i >> 2) (the GEMV's task: the blocked scales of a K
// tile are 64 contiguous bytes). A step u covers 4 consecutive 16-byte chunks (32 K each);
// lane (g, t) decodes chunk 4u + t of rows g and g + 8: word jw (8 elements) of a row gives
// 4 fp16 pairs (nibbles p, p + 4; fp4_decode.cuh), pairs 0,1 feed one m16n8k16 (a0/a2 row
// g, a1/a3 row g + 8), pairs 2,3 the next. So the k slots of quad lane t always hold lane t's
// own chunk: K is permuted inside each group of 4 chunks, identically for the tokens, whose
// B fragment (k slots 2t..2t+1, 2t+8..2t+9 of token g) is the same two pairs of the same
// word of token g's chunk 4u + t. Each word of a row is read and decoded once and used by
// 2 * NT8 MMAs (NT8 groups of 8 tokens). D element (i, n) is complete per lane (no quad
// reduction): lane (g, t) holds rows g, g + 8 x tokens 8j + 2t, 8j + 2t + 1.
//
// Tokens in shared memory: [chunk][token][4 x 16 B], the 16 bytes of word jw (its 4 decoded
// pairs) in slot jw ^ (chunk & 3): a quarter warp's LDS.128 (tokens g, g + 1 x chunks
// t = 0..3 of a step) hit 8 distinct 16-byte bank groups. Tiles of tile_cap chunks, decoded
// by the whole CTA between two barriers (the rings keep running across them).
#pragma once

#include <cuda_fp16.h>
#include <stdint.h>

#include "../collective/fp4_decode.cuh"
#include "../ptx.cuh"
#include "common.cuh"
#include "decode_plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// D(16x8 f32) += A(16x16 f16) * B(16x8 f16).
__device__ __forceinline__ void mma_f16_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                              uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Token chunks [t0, t0 + tn) of batch l -> the shared-memory tile at s_tok (layout above);
// tokens >= M are zeros.
// kGrouped (the packed MoE route): tokens m < rows are rows row0 + m of the one token matrix.
// Thread order: pairs of threads take tokens 2p, 2p + 1 of one chunk, consecutive pairs
// consecutive chunks (a warp loads 2 x 256 contiguous bytes), so the 8 threads of one STS.128
// wavefront store 2 token parities x 4 chunk residues: 8 distinct 16-byte bank groups (one
// token's consecutive chunks per warp would hit 4 of them twice). Each thread divides once and
// then steps by the block's stride, not a division by tn per item.
// H100, session 30, same call, graph µs, one token per warp -> this order: 7168^2 M = 16 / 24
// 17.4 / 20.8 -> 17.2 / 20.4, 14336x4096 19.3 / 23.1 -> 18.9 / 22.5, M <= 8 within 0.3. What the
// tile still costs is its decode on every CTA (M = 16 / 24 on 7168^2: ~1.8 / ~3 µs against no
// tile at all), not its loads (every load from one cached line instead: no change;
// bench/NOTES.md "Session 30").
template <int NT8, bool kGrouped = false>
__device__ __forceinline__ void decode_token_tile(uint32_t s_tok, const DecodeArgs& a, int64_t l, int t0, int tn,
                                                  int64_t row0 = 0, int64_t rows = 0) {
  constexpr int kMP = 8 * NT8;
  const uint8_t* xb = a.x + l * a.x_batch;
  const uint8_t* sb = a.sfx + l * a.sfx_batch;
  const bool blocked = a.sfx_blocked != 0;
  const int live = static_cast<int>(kGrouped ? (rows < kMP ? rows : kMP) : (a.M < kMP ? a.M : kMP));
  const int sub = static_cast<int>(threadIdx.x) & 1;  // token parity (blockDim is a multiple of 32)
  const int step = static_cast<int>(blockDim.x) >> 1;  // token pairs x chunks per round
  const int dp = step / tn, dc = step - dp * tn;
  int p = (static_cast<int>(threadIdx.x) >> 1) / tn, c = (static_cast<int>(threadIdx.x) >> 1) - p * tn;
  for (; p < kMP / 2; p += dp) {
    const int m = 2 * p + sub;
    uint32_t out[16];
    if (m < live) {
      const int64_t r = kGrouped ? row0 + m : m;  // the token's row
      const int64_t cg = static_cast<int64_t>(t0) + c;
      const uint4 q = __ldg(reinterpret_cast<const uint4*>(xb + r * a.x_row + cg * 16));
      const uint32_t two = ld_bytes2(sb + sf_row_offset(r, blocked, a.sfx_row, a.sfx_tile_row_bytes) +
                                     sf_chunk_offset(cg, blocked));
      const uint32_t h = e4m3x2_to_f16x2(two);
      const uint32_t s0 = bcast_lo(h), s1 = bcast_hi(h);
      const uint32_t qw[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int jw = 0; jw < 4; ++jw) {
        uint32_t f[4];  // pairs 0..3 (decode_pair<p>, bit for bit)
        decode_word_scaled(qw[jw], jw < 2 ? s0 : s1, f);
#pragma unroll
        for (int i = 0; i < 4; ++i) out[4 * jw + i] = f[i];
      }
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) out[i] = 0u;
    }
    const uint32_t dst = s_tok + static_cast<uint32_t>((c * kMP + m) * 64);
#pragma unroll
    for (int jw = 0; jw < 4; ++jw)
      ptx::sts128(dst + 16 * (jw ^ (c & 3)),
                  make_uint4(out[4 * jw], out[4 * jw + 1], out[4 * jw + 2], out[4 * jw + 3]));
    c += dc;
    if (c >= tn) {
      c -= tn;
      ++p;
    }
  }
}

// One step u of a stage: chunks 4u + t of rows g, g + 8 (the lane's weight bytes at wa, its
// scales at ws: ring slot + a_off / sf_off) times the NT8 token groups of stage chunk 4u + t
// (tst[jw]: the token fragment address of word jw at the stage's first chunk, chunk t, slot
// jw ^ t; the step and group offsets are immediates). kCheck: partial stage, chunks >= nc of
// it are past K (stale ring and tile data: their fragments are zeroed).
// kDual: blocked scales of a 64-K tile are B1's 2 lines then B2's (row g + 8: 32 bytes on).
// SC: chunks per ring stage (decode_gemm).
template <int NT8, bool kBlocked, bool kCheck, bool kDual, int SC>
__device__ __forceinline__ void decode_step(uint32_t wa, uint32_t ws, const uint32_t (&tst)[4], int u, int t, int nc,
                                            float (&acc)[NT8][4]) {
  constexpr uint32_t kSfU = kBlocked ? 128u : 8u, kSfR8 = kBlocked ? (kDual ? 32u : 8u) : 16u * SC;
  constexpr uint32_t kA8 = 4 * 16 * SC;
  constexpr uint32_t kChunk = 8 * NT8 * 64;  // token tile bytes per chunk
  const bool live = !kCheck || 4 * u + t < nc;
  const uint4 x = ptx::lds128(wa + 64 * u);
  const uint4 y = ptx::lds128(wa + kA8 + 64 * u);
  uint32_t ha = e4m3x2_to_f16x2(ptx::lds_u16(ws + kSfU * u));
  uint32_t hb = e4m3x2_to_f16x2(ptx::lds_u16(ws + kSfR8 + kSfU * u));
  if (!live) ha = hb = 0u;  // decoded e2m1 values are finite: x * 0 = 0
  const uint32_t sa[2] = {bcast_lo(ha), bcast_hi(ha)}, sb[2] = {bcast_lo(hb), bcast_hi(hb)};
  const uint32_t xw[4] = {x.x, x.y, x.z, x.w}, yw[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
  for (int jw = 0; jw < 4; ++jw) {
    uint32_t f[4], g[4];  // pairs 0..3 of rows g, g + 8 (decode_pair<p>, bit for bit)
    decode_word_scaled(xw[jw], sa[jw >> 1], f);
    decode_word_scaled(yw[jw], sb[jw >> 1], g);
    const uint32_t f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3], g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3];
#pragma unroll
    for (int j = 0; j < NT8; ++j) {
      uint4 b = ptx::lds128(tst[jw] + static_cast<uint32_t>(4 * u) * kChunk + static_cast<uint32_t>(j * 8 * 64));
      if (!live) b = make_uint4(0u, 0u, 0u, 0u);  // stale tile bytes may be NaN / Inf
      mma_f16_16816(acc[j], f0, g0, f1, g1, b.x, b.y);
      mma_f16_16816(acc[j], f2, g2, f3, g3, b.z, b.w);
    }
  }
}

}  // namespace nvfp4::sm90::gemv_detail
