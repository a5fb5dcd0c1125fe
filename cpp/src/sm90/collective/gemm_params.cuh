// Kernel-side parameters of the sm90a NVFP4 GEMM (everything except the TMA
// descriptors, which travel as separate __grid_constant__ arguments).
//
// Naming inside the sm90 GEMM: the problem computes C[l] = alpha * A[l] * B[l]^T.
// The kernel swaps the operands (Machete-like, DESIGN §8): B ("w", weights, N rows)
// is the wgmma A operand, dequantized into registers; A ("x", tokens, M rows) is the
// wgmma B operand, dequantized once per CTA into fp16 shared memory.
#pragma once

#include <stdint.h>

namespace nvfp4::sm90 {

struct ScaleSrc {
  const uint8_t* data;
  int64_t row_stride;    // linear layout only
  int64_t batch_stride;
  int64_t rows;          // valid rows (N for w, M for x)
};

struct GemmParams {
  int64_t M, N, K;
  int32_t L;
  int32_t num_kb;        // ceil(K / kBlockK)
  int32_t splits;        // CTAs per cluster sharing one output tile (split-K)
  int32_t sf_blocked;    // 1: blocked 128x4 scale layout, 0: linear
  int32_t sf_async;      // 1: scale bytes are 4-byte aligned -> cp.async; 0: plain loads
  ScaleSrc sf_w, sf_x;
  float alpha;
  const float* alpha_ptr;  // read in-kernel when non-null
  void* c;
  int32_t c_dtype;       // DType
  int32_t c_vec4;        // 1: 4 consecutive n are contiguous and 4-element aligned
  int64_t c_row_stride, c_col_stride, c_batch_stride;  // elements
};

}  // namespace nvfp4::sm90
