// Scale staging: copies block-scale operands whose rows no TMA box can read (linear rows
// not 16-byte aligned, i.e. K % 256 != 0; blocked scales with K % 128 != 0; misaligned
// bases) into the workspace as linear rows of staged_sf_cols(K) bytes (a multiple of 16),
// so that the GEMM loads them with kScaleTma like aligned ones. Why: the GEMM's fallbacks
// for such scales (4-byte cp.async, or byte loads by the producer warp) made the kernel
// 2.5-6x slower (H100, 128x7168x1440: 72.4 µs with 90-byte rows, 14.3 µs with the same
// scales in 96-byte rows; 512x4096x7200: 348.6 vs 53.8 µs; bench/NOTES.md "scale staging").
// The plans decide (gemm_plan.hpp plan_gemm, packed_plan.hpp plan_packed, dual_plan.hpp, grouped_plan.hpp);
// scale_stage.cu launches it for gemm.cu, dual_gemm.cu, grouped_packed.cu and grouped_gemm.cu.
#pragma once

#include <cstdint>

#include "../../common/formats.h"
#include "../ptx.cuh"

namespace nvfp4::sm90 {

struct ScaleStageOperand {
  const uint8_t* src;
  int64_t row_stride, batch_stride;  // bytes (row_stride: linear only)
  int64_t rows, K;
  int64_t words_per_row;             // staged_sf_cols(K) / 4
  uint32_t* dst;                     // [L][rows][words_per_row] words
  int64_t block_begin;               // first CTA (along x) of this operand
  int32_t blocked;                   // NVFP4_SF_BLOCKED source
};

// kMaxOps: 2 for the GEMM, dual and MoE launchers (small parameters per launch), 64 for the
// grouped GEMM (one operand per group of a chunk).
template <int kMaxOps>
struct ScaleStageParams {
  ScaleStageOperand op[kMaxOps];
  int32_t count;
};

constexpr int kScaleStageThreads = 256;
constexpr int kScaleStageRows = kScaleStageThreads / 32;  // one warp per row

// Grid (CTAs of every operand: kScaleStageRows rows each, 1, L). A warp copies one row, its
// lanes one staged 4-byte word (4 scale columns; columns past K / 16 are zero) at a time,
// consecutive lanes on consecutive words (no per-thread 64-bit division: the first
// one-thread-per-word version took 3.8-4.5 µs for 4096 x 450 bytes, H100). A programmatic
// dependent: it reads its sources and overwrites the workspace only after the grid in
// front of it completed (that grid may write the sources, or still read an earlier call's
// staged scales).
template <int kMaxOps>
__global__ void __launch_bounds__(kScaleStageThreads)
    nvfp4_sm90_scale_stage_kernel(const __grid_constant__ ScaleStageParams<kMaxOps> p) {
  ptx::pdl_wait_primary();
  ptx::pdl_launch_dependents();  // the token pass / GEMM after it wait for this grid's end
  int i = 0;
  while (i + 1 < p.count && static_cast<int64_t>(blockIdx.x) >= p.op[i + 1].block_begin) ++i;
  const ScaleStageOperand& op = p.op[i];
  const int64_t row = (blockIdx.x - op.block_begin) * kScaleStageRows + (threadIdx.x >> 5);
  if (row >= op.rows) return;
  const int64_t l = blockIdx.z;
  const uint8_t* base = op.src + l * op.batch_stride;
  uint32_t* dst = op.dst + (l * op.rows + row) * op.words_per_row;
  const int64_t kcols = op.K / 16;
  for (int64_t word = threadIdx.x & 31; word < op.words_per_row; word += 32) {
    const int64_t c0 = word * 4;
    // the 4 columns c0..c0+3 of one row are contiguous in both layouts (blocked: one 4-column group)
    const uint8_t* gp = base + (op.blocked ? blocked_sf_offset(row, c0, op.K) : row * op.row_stride + c0);
    int64_t n = kcols - c0;
    n = n < 0 ? 0 : (n > 4 ? 4 : n);
    dst[word] = ptx::ldg_bytes4(gp, n);
  }
}

}  // namespace nvfp4::sm90
