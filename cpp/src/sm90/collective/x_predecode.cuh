// Activation pre-decode pass of the sm90a NVFP4 GEMM (pre-decoded path, any M with K >= 2048).
//
// For small M (the gpu-mode shapes have M = 128 tokens against N = 4k..7k weight
// rows) every CTA of the fused kernel decodes the same token tile again: as much
// integer work as its own weight decode. Decoding the tokens once into an fp16
// workspace [L][M][Kp] (Kp = K rounded up to 128) and loading that with TMA (128-byte
// swizzle) leaves the main loop with the weight decode only.
//
// Layout: each 128-K block is stored in the same permuted logical order the weight
// fragments use (fp4_decode.cuh): logical chunk c (8 fp16) at element 8c of the
// block. Values are e2m1 * e4m3 * 2^-14 exactly, like the fused transform writes.
#pragma once

#include <stdint.h>

#include "../../common/formats.h"
#include "fp4_decode.cuh"
#include "ptx.cuh"

namespace nvfp4::sm90 {

struct XPredecodeParams {
  const uint8_t* a;
  int64_t a_row_stride, a_batch_stride;  // bytes
  const uint8_t* sf;
  int64_t sf_row_stride, sf_batch_stride;
  int32_t sf_blocked;
  int64_t M, K;
  int32_t L;
  int32_t num_kb;
  uint16_t* out;                          // fp16 bits
  int64_t out_row_stride, out_batch_stride;  // elements
  int32_t* zero_flags;                     // stream-K flags of the GEMM that follows (or null)
  int32_t num_flags;
};

// L2 prefetch of the packed bytes thread idx will read (its 64-byte row piece; the h = 0
// thread of each pair), issued before griddepcontrol.wait (a hint, see ptx.cuh).
__device__ __forceinline__ void x_predecode_prefetch(const XPredecodeParams& p, int64_t idx) {
  const int64_t halves = static_cast<int64_t>(p.num_kb) * 2;
  if (idx >= static_cast<int64_t>(p.L) * p.M * halves || (idx & 1) != 0) return;
  const int64_t rest = idx / halves;
  const int64_t kb = (idx % halves) >> 1;
  ptx::prefetch_l2(p.a + (rest / p.M) * p.a_batch_stride + (rest % p.M) * p.a_row_stride + kb * 64);
}

// One thread per (batch, row, 64-K half block): reads 32 packed bytes and 4 scales,
// writes 8 x 16 bytes. The first num_flags threads also zero the stream-K flags.
__device__ __forceinline__ void x_predecode_thread(const XPredecodeParams& p, int64_t idx) {
  if (idx < p.num_flags) p.zero_flags[idx] = 0;
  const int64_t halves = static_cast<int64_t>(p.num_kb) * 2;
  const int64_t total = static_cast<int64_t>(p.L) * p.M * halves;
  if (idx >= total) return;
  const int64_t hb = idx % halves;
  const int64_t rest = idx / halves;
  const int64_t m = rest % p.M;
  const int64_t l = rest / p.M;
  const int64_t kb = hb >> 1;
  const uint32_t h = static_cast<uint32_t>(hb & 1);

  // packed bytes: words 2h, 2h+1 of each 16-byte chunk t of the block
  const uint8_t* row = p.a + l * p.a_batch_stride + m * p.a_row_stride + kb * 64;
  const int64_t bytes_left = p.K / 2 - kb * 64;  // >= 16, multiple of 16
  uint32_t q[4][2];
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    uint2 v = make_uint2(0u, 0u);
    if (t * 16 < bytes_left) v = __ldg(reinterpret_cast<const uint2*>(row + t * 16 + 8 * h));
    q[t][0] = v.x;
    q[t][1] = v.y;
  }
  // scales of physical blocks 2t + h (columns kb*8 + 2t + h)
  const uint8_t* sfb = p.sf + l * p.sf_batch_stride;
  const int64_t kcols = p.K / 16;
  uint32_t s4 = 0;
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const int64_t c = kb * 8 + 2 * t + h;
    uint32_t v = 0;
    if (c < kcols) v = __ldg(sfb + (p.sf_blocked ? blocked_sf_offset(m, c, p.K) : m * p.sf_row_stride + c));
    s4 |= v << (8 * t);
  }
  const uint32_t h01 = e4m3x2_to_f16x2(s4), h23 = e4m3x2_to_f16x2(s4 >> 16);
  const uint32_t sc2[4] = {bcast_lo(h01), bcast_hi(h01), bcast_lo(h23), bcast_hi(h23)};
  uint4 o[8];
  decode_x_half(q, sc2, o);
  uint4* dst = reinterpret_cast<uint4*>(p.out + l * p.out_batch_stride + m * p.out_row_stride + kb * 128 + 64 * h);
#pragma unroll
  for (int j = 0; j < 8; ++j) dst[j] = o[j];
}

}  // namespace nvfp4::sm90
