// Token pre-decode pass of the sm90a GEMM (pre-decoded paths: gemm_plan.hpp plan_gemm, the
// dual GEMM, and the packed MoE kernel): its parameters and the per-row device functions, shared by the
// GEMM's pass (token_predecode.cuh) and the grouped GEMM's (grouped_gemm.cuh).
//
// For small M (the gpu-mode shapes have M = 128 tokens against N = 4k..7k weight
// rows) every CTA of the fused kernel decodes the same token tile again: as much
// integer work as its own weight decode. Decoding the tokens once into an fp16
// workspace [L][M][Kp] (Kp = K rounded up to 128) and loading that with TMA (128-byte
// swizzle) leaves the main loop with the weight decode only.
//
// Layout: each 128-K block is stored in the same permuted logical order the weight
// fragments use (collective/fp4_decode.cuh): logical chunk c (8 fp16) at element 8c of
// the block. Values are e2m1 * e4m3 * 2^-14 exactly, like the fused transform writes.
#pragma once

#include <stdint.h>

#include "../../common/formats.h"
#include "../collective/fp4_decode.cuh"
#include "../ptx.cuh"

namespace nvfp4::sm90 {

struct XPredecodeParams {
  const uint8_t* a;
  int64_t a_row_stride, a_batch_stride;  // bytes
  const uint8_t* sf;
  int64_t sf_row_stride, sf_batch_stride;
  int32_t sf_blocked;
  int32_t sf_words;  // blocked and 4-byte aligned (base and batch stride): 32-bit scale loads
  int64_t M, K;
  int32_t L;
  int32_t num_kb;
  uint16_t* out;                          // fp16 bits
  int64_t out_row_stride, out_batch_stride;  // elements
  uint32_t* zero;      // words the dense pass zeroes after its wait (the stream-K GEMM's flags), or null
  int64_t zero_words;
};

// Grid: one CTA of kPredecodeThreads per (row, piece of kPredecodeUnroll x
// kPredecodeThreads output chunks, batch): blockIdx = (m, piece, l). One thread per
// 16-byte output chunk at a time, so a warp stores 512 contiguous bytes per instruction;
// each thread first loads the inputs of its kPredecodeUnroll chunks (kPredecodeThreads
// apart), then decodes and stores them: kPredecodeUnroll times the bytes in flight of one
// chunk per thread (4 halved the occupancy and was slower than 2). (A mapping of one thread
// per 64-K half block writing 8 chunks 16 bytes apart, with a 64-bit division per thread,
// ran at ~0.9 TB/s: bench/NOTES.md "a faster pre-decode pass".)
constexpr int kPredecodeThreads = 256;
constexpr int kPredecodeUnroll = 2;
constexpr int kChunksPerBlock = 16;  // 128 fp16 of a 128-K block

__host__ __device__ __forceinline__ int32_t predecode_pieces(int32_t num_kb) {
  constexpr int32_t kPiece = kPredecodeThreads * kPredecodeUnroll;
  return (num_kb * kChunksPerBlock + kPiece - 1) / kPiece;
}
// Output chunk of unroll step u of this thread (blockIdx.y = piece).
__device__ __forceinline__ int32_t predecode_chunk_index(int u) {
  return (static_cast<int32_t>(blockIdx.y) * kPredecodeUnroll + u) * kPredecodeThreads +
         static_cast<int32_t>(threadIdx.x);
}

// Row m of batch l (uniform over a CTA), computed once per thread.
struct XPredecodeRow {
  const uint8_t* a;   // packed row
  const uint8_t* sf;  // linear: the row's first scale; blocked: its byte in K tile 0 (tile j at +512 j)
  uint16_t* out;      // fp16 row
  int64_t bytes;      // K / 2
  int32_t kcols;      // K / 16 (even: K is a multiple of 32)
};
__device__ __forceinline__ XPredecodeRow predecode_row(const XPredecodeParams& p, int64_t m, int64_t l) {
  XPredecodeRow r;
  r.a = p.a + l * p.a_batch_stride + m * p.a_row_stride;
  const uint8_t* sfb = p.sf + l * p.sf_batch_stride;
  if (p.sf_blocked) {
    const int64_t tiles_k = (p.K / 16 + 3) / 4;  // blocked_sf_offset (formats.h), with column 0
    r.sf = sfb + (m / 128) * tiles_k * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4;
  } else {
    r.sf = sfb + m * p.sf_row_stride;
  }
  r.out = p.out + l * p.out_batch_stride + m * p.out_row_stride;
  r.bytes = p.K / 2;
  r.kcols = static_cast<int32_t>(p.K / 16);
  return r;
}

// L2 prefetch of the packed 64 bytes of this thread's 128-K block (its chunk 0 thread),
// issued before griddepcontrol.wait (a hint, see ptx.cuh).
__device__ __forceinline__ void x_predecode_prefetch(const XPredecodeParams& p, const XPredecodeRow& r, int32_t ci) {
  const int32_t kb = ci / kChunksPerBlock;
  if ((ci % kChunksPerBlock) != 0 || kb >= p.num_kb) return;
  ptx::prefetch_l2(r.a + static_cast<int64_t>(kb) * 64);
}

// Output chunk ci (0 .. num_kb * 16) of a row: logical chunk c = ci % 16 of K block
// kb = ci / 16 is pair P = c % 4 of word 2h + wl (h = c / 8, wl = (c / 4) % 2) of the four
// 16-byte chunks t of the block's packed row, scaled by physical block 2t + h
// (fp4_decode.cuh: decode_x_half writes the same 8 chunks per half block).
// (The pass was instruction-bound with a blocked_sf_offset per scale byte.)
struct XChunkInput {
  uint32_t q[4];   // word 2h + wl of packed chunk t (0 past K)
  uint32_t sf[4];  // e4m3 byte of physical block 2t + h (0 past K)
};
__device__ __forceinline__ void x_predecode_load(const XPredecodeParams& p, const XPredecodeRow& r, int32_t ci,
                                                 XChunkInput& in) {
  const int32_t kb = ci / kChunksPerBlock;
  const uint32_t c = static_cast<uint32_t>(ci % kChunksPerBlock);
  const uint32_t h = c >> 3, word = 2 * h + ((c >> 2) & 1u);
  const uint8_t* src = r.a + static_cast<int64_t>(kb) * 64 + 4 * word;
  const int64_t bytes_left = r.bytes - static_cast<int64_t>(kb) * 64;  // multiple of 16 (<= 0: no block)
#pragma unroll
  for (int t = 0; t < 4; ++t)
    in.q[t] = t * 16 < bytes_left ? __ldg(reinterpret_cast<const uint32_t*>(src + t * 16)) : 0u;
  // scale columns 8kb + 2t + h; kcols is even, so column 8kb + 2t + h exists iff 8kb + 2t does
  const int32_t cols_left = r.kcols - kb * 8;
  if (p.sf_blocked && p.sf_words) {
    // blocked: columns 8kb..8kb+3 are one 32-bit word of K tile 2kb, 8kb+4.. of tile 2kb+1
    const uint8_t* t0 = r.sf + static_cast<int64_t>(2 * kb) * 512;
    const uint32_t w0 = cols_left > 0 ? __ldg(reinterpret_cast<const uint32_t*>(t0)) : 0u;
    const uint32_t w1 = cols_left > 4 ? __ldg(reinterpret_cast<const uint32_t*>(t0 + 512)) : 0u;
    in.sf[0] = (w0 >> (8 * h)) & 0xFFu;
    in.sf[1] = cols_left > 2 ? (w0 >> (16 + 8 * h)) & 0xFFu : 0u;
    in.sf[2] = (w1 >> (8 * h)) & 0xFFu;
    in.sf[3] = cols_left > 6 ? (w1 >> (16 + 8 * h)) & 0xFFu : 0u;
  } else {
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int32_t col = kb * 8 + 2 * t + static_cast<int32_t>(h);
      const int64_t off = p.sf_blocked ? static_cast<int64_t>(col / 4) * 512 + (col % 4) : col;
      in.sf[t] = 2 * t < cols_left ? static_cast<uint32_t>(__ldg(r.sf + off)) : 0u;
    }
  }
}
__device__ __forceinline__ void x_predecode_store(const XPredecodeParams& p, const XPredecodeRow& r, int32_t ci,
                                                  const XChunkInput& in) {
  const int32_t kb = ci / kChunksPerBlock;
  if (kb >= p.num_kb) return;
  const uint32_t c = static_cast<uint32_t>(ci % kChunksPerBlock);
  const uint32_t shift = 12u - 4u * (c & 3u);
  uint32_t o[4];
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const uint32_t s2 = bcast_lo(e4m3x2_to_f16x2(in.sf[t]));
    const uint32_t x = in.q[t] << shift;
    // e2m1x2_to_f16x2_scaled<c % 4> (fp4_decode.cuh) with a run-time pair index; written out
    // here because routing the template through a shared helper changed the GEMM kernels' SASS
    o[t] = hmul2_u32((x & 0x80008000u) | ((x >> 3) & 0x0E000E00u), s2);
  }
  ptx::stg128(r.out + static_cast<int64_t>(kb) * 128 + 8 * c, make_uint4(o[0], o[1], o[2], o[3]));
}
// This thread's chunks of row m of batch l: all loads first, then the decodes and stores.
__device__ __forceinline__ void x_predecode_row_piece(const XPredecodeParams& p, const XPredecodeRow& r) {
  XChunkInput in[kPredecodeUnroll];
#pragma unroll
  for (int u = 0; u < kPredecodeUnroll; ++u) x_predecode_load(p, r, predecode_chunk_index(u), in[u]);
#pragma unroll
  for (int u = 0; u < kPredecodeUnroll; ++u) x_predecode_store(p, r, predecode_chunk_index(u), in[u]);
}

}  // namespace nvfp4::sm90
