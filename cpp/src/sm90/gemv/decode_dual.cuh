// The dual route's output of the decode kernel (decode_kernel.cuh dual_gemm_decode_kernel,
// launched by dual_gemm.cu).
//
// Dual route (dual_gemm_decode_kernel, launched by dual_gemm.cu): the same body with a task's
// 16 MMA rows = 8 rows of B1 (MMA rows 0..7) and the same 8 rows of B2 (8..15), rows
// base + (i & 1) + 32 (i >> 1), 16 tasks per 128-row band (decode_dual_plan.hpp: a
// task's blocked scales of each matrix are then 2 whole 16-byte lines). Lane (g, t)'s D rows g
// and g + 8 are B1's and B2's sums of the same outputs; after the full K sum (and the cluster
// reduction) the epilogue writes act(alpha1 2^28 d1) * (alpha2 2^28 d2) with the fused dual
// kernel's function (collective/epilogue_dual.cuh EpilogueDual::out_value).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "../collective/epilogue_dual.cuh"
#include "common.cuh"
#include "decode_dual_plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// Dual route: c[l, m, n] = v (already scaled and combined).
__device__ __forceinline__ void decode_store_final(const DecodeArgs& a, int64_t l, int64_t m, int64_t n, float v) {
  const int64_t off = l * a.c_batch + m * a.c_row + n * a.c_col;
  store_value(a.c, a.c_dtype, off, v);
}

}  // namespace nvfp4::sm90::gemv_detail
