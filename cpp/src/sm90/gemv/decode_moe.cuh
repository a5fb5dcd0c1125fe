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

// Packed MoE route: what warp 0's chunk scan hands the rest of the CTA (decode_kernel.cuh): the
// kernel's only static shared memory, 32 bytes in front of the dynamic rings (these need 16-byte
// alignment only; their bank patterns do not change under a uniform shift).
struct MoeChunkShared {
  int64_t expert, row0, rows;  // rows = 0: the CTA's slot is past the last chunk
  float alpha;
};

// Packed MoE route: slot j of the grid -> the j-th chunk of kRows token rows over the
// non-empty experts in expert order (expert g's chunks cover rows [b_g, e_g) of the token
// matrix). Each expert's span is clamped (decode_plan.hpp moe_clamp_span), so a malformed
// table reads and writes inside the operands. One warp scans (all 32 lanes; every lane gets
// the answer; the kernel's other warps take it from shared memory): expert g = 32 r + lane of
// row r, so a row's loads are 33 consecutive words (coalesced), kBatch rows loaded before any is
// scanned (G <= 128: one round trip), the chunk counts scanned across the warp in expert order
// and carried from row to row. Why one warp and coalesced rows: every CTA reads the same table,
// so the scan's requests all land on one L2 slice; with every warp scanning and lane i loading
// experts [i q, i q + q) (q = ceil(G / 32)), 8 live rows took 31.0 µs at G <= 32 and 37.3 / 39.6
// at G = 64 / 96 (H100, 2048 x 7168 experts; bench/NOTES.md "Session 27"). false: j is past the
// last chunk.
template <int kRows>
__device__ __forceinline__ bool moe_find_chunk(const int32_t* offsets, int32_t G, int64_t total, int64_t j,
                                               int64_t& expert, int64_t& row0, int64_t& rows) {
  constexpr int kBatch = 4;
  const int lane = threadIdx.x & 31;
  int64_t carry = 0;  // chunks of the rows before
  for (int32_t r0 = 0; r0 < G; r0 += 32 * kBatch) {
    int64_t b[kBatch], e[kBatch];
#pragma unroll
    for (int t = 0; t < kBatch; ++t) {
      const int32_t g = r0 + 32 * t + lane;
      const bool live = g < G;
      moe_clamp_span(live ? __ldcg(offsets + g) : 0, live ? __ldcg(offsets + g + 1) : 0, total, b[t], e[t]);
    }
#pragma unroll
    for (int t = 0; t < kBatch; ++t) {
      const int64_t n = moe_chunks(b[t], e[t], kRows);
      int64_t inc = n;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int64_t v = __shfl_up_sync(0xFFFFFFFFu, inc, d);
        if (lane >= d) inc += v;
      }
      const int64_t first = carry + inc - n;
      const unsigned hit = __ballot_sync(0xFFFFFFFFu, n > 0 && j >= first && j < first + n);
      if (hit != 0) {
        const int src = __ffs(hit) - 1;
        const int64_t r = b[t] + (j - first) * kRows;
        const int64_t c = e[t] - r < kRows ? e[t] - r : kRows;
        expert = r0 + 32 * t + src;
        row0 = __shfl_sync(0xFFFFFFFFu, r, src);
        rows = __shfl_sync(0xFFFFFFFFu, c, src);
        return true;
      }
      carry += __shfl_sync(0xFFFFFFFFu, inc, 31);
    }
  }
  return false;
}

}  // namespace nvfp4::sm90::gemv_detail
