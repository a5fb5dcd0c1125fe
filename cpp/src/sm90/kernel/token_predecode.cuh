// The token pre-decode pass kernel of the sm90a GEMM (gemm.cu launches it; the dual and the
// packed MoE launchers through gemm_parts.hpp). What it computes and how it is laid out:
// token_predecode_rows.cuh. A separate header because a non-template __global__ may be
// defined in one translation unit only; the grouped GEMM has its own pass built from the
// same row functions.
#pragma once

#include "../ptx.cuh"
#include "token_predecode_rows.cuh"

namespace nvfp4::sm90 {

// The pass. It is launched as a programmatic dependent of the grid before it (PDL): it
// prefetches its input into L2, waits for that grid, and only then lets the GEMM after
// it start (that GEMM loads weights before its own griddepcontrol.wait, which is safe
// only once every grid before this pass has completed). PDL here and on the pre-decoded
// GEMM: -0.7..-1.2 µs on the gpu-mode shapes against neither (H200).
__global__ void __launch_bounds__(kPredecodeThreads) nvfp4_sm90_x_predecode_kernel(const XPredecodeParams p) {
  const XPredecodeRow row = predecode_row(p, blockIdx.x, blockIdx.z);
#pragma unroll
  for (int u = 0; u < kPredecodeUnroll; ++u) x_predecode_prefetch(p, row, predecode_chunk_index(u));
  ptx::pdl_wait_primary();
  ptx::pdl_launch_dependents();  // the GEMM may start its prologue and weight loads now
  if (p.zero != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) {
    // (the GEMM behind reads them only after this grid completed: its griddepcontrol.wait)
    for (int64_t i = threadIdx.x; i < p.zero_words; i += blockDim.x) p.zero[i] = 0u;
  }
  x_predecode_row_piece(p, row);
}

}  // namespace nvfp4::sm90
