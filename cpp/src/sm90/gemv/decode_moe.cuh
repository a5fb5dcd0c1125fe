// The packed MoE route's pieces of the decode kernel (decode_kernel.cuh gemm_decode_moe_kernel,
// launched by grouped_packed.cu): the chunk scan over the device offsets and the row store.
//
// Packed MoE route (gemm_decode_moe_kernel, launched by grouped_packed.cu): the same body with
// the experts as the batch; each CTA first finds its chunk of <= 8 NT8 token rows of one
// expert from the device offsets (after griddepcontrol.wait), so empty experts get no CTA and
// an expert with more rows than a chunk gets several (decode_moe_plan.hpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "common.cuh"
#include "decode_moe_plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// Packed MoE route: c[row, n] = v * 2^28 * alpha (alpha: the expert's, read once per CTA).
__device__ __forceinline__ void decode_store_row(const DecodeArgs& a, int64_t row, int64_t n, float v, float alpha) {
  const float s = v * 268435456.0f * alpha;
  const int64_t off = row * a.c_row + n * a.c_col;
  store_value(a.c, a.c_dtype, off, s);
}

// Packed MoE route: slot j of the grid -> the j-th chunk of kRows token rows over the
// non-empty experts in expert order (expert g's chunks cover rows [b_g, e_g) of the token
// matrix). Each expert's span is clamped (decode_plan.hpp moe_clamp_span), so a malformed
// table reads and writes inside the operands. Lane i sums
// the chunks of experts [i q, i q + q) (q = ceil(G / 32): its loads are independent, one
// round trip), a warp scan finds the lane whose range holds chunk j, that lane walks its
// experts again (L1 hits). Called by all 32 lanes; every lane gets the answer. false: j is
// past the last chunk.
template <int kRows>
__device__ __forceinline__ bool moe_find_chunk(const int32_t* offsets, int32_t G, int64_t total, int64_t j,
                                               int64_t& expert, int64_t& row0, int64_t& rows) {
  const int lane = threadIdx.x & 31;
  const int32_t q = (G + 31) / 32;
  const int32_t g0 = min(G, lane * q), g1 = min(G, g0 + q);
  auto span = [&](int32_t g, int64_t& b, int64_t& e) {
    moe_clamp_span(__ldcg(offsets + g), __ldcg(offsets + g + 1), total, b, e);
  };
  int64_t n = 0;
#pragma unroll 4
  for (int32_t g = g0; g < g1; ++g) {
    int64_t b, e;
    span(g, b, e);
    n += moe_chunks(b, e, kRows);
  }
  int64_t inc = n;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int64_t v = __shfl_up_sync(0xFFFFFFFFu, inc, d);
    if (lane >= d) inc += v;
  }
  const int64_t first = inc - n;
  const unsigned hit = __ballot_sync(0xFFFFFFFFu, n > 0 && j >= first && j < inc);
  if (hit == 0) return false;
  const int src = __ffs(hit) - 1;
  int64_t x = 0, r = 0, c = 0;
  if (lane == src) {
    int64_t k = j - first;
    for (int32_t g = g0; g < g1; ++g) {
      int64_t b, e;
      span(g, b, e);
      const int64_t nc = moe_chunks(b, e, kRows);
      if (k < nc) {
        x = g;
        r = b + k * kRows;
        c = min(static_cast<int64_t>(kRows), e - r);
        break;
      }
      k -= nc;
    }
  }
  expert = __shfl_sync(0xFFFFFFFFu, x, src);
  row0 = __shfl_sync(0xFFFFFFFFu, r, src);
  rows = __shfl_sync(0xFFFFFFFFu, c, src);
  return true;
}

}  // namespace nvfp4::sm90::gemv_detail
