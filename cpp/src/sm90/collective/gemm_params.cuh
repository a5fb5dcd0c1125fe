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

// How the block scales reach shared memory.
enum ScaleLoad : int32_t {
  kScaleSync = 0,   // plain byte loads by the producer warp (any alignment)
  kScaleCpAsync = 1,  // 4-byte cp.async with zero-fill, smem [row][8] (4-byte aligned rows)
  kScaleBulk = 2,   // blocked layout, K % 128 == 0: the stage's 128-row x 8-column scales are
                    // 1 KB contiguous in global memory -> one bulk copy, smem keeps the blocked order
  kScaleTma = 3,    // linear layout with 16-byte aligned rows: a TMA box of 16 columns x 128
                    // rows per stage (the first 8 columns are the stage's), smem [row][16]
};

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
  int32_t sf_mode;       // ScaleLoad: how the producer fetches the block scales
  ScaleSrc sf_w, sf_x;
  float alpha;
  const float* alpha_ptr;  // read in-kernel when non-null
  void* c;
  int32_t c_dtype;       // DType
  int32_t c_vec4;        // 1: 4 consecutive n are contiguous and 4-element aligned
  int64_t c_row_stride, c_col_stride, c_batch_stride;  // elements
};

}  // namespace nvfp4::sm90
