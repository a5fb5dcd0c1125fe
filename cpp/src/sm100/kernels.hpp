// Internal interface between the sm100a backend's entries (launchers.hpp, backend.cu)
// and the translation units that instantiate the CUTLASS kernels. CUTLASS-free on purpose:
// backend.cu stays cheap to compile and each heavy kernel lives in its own .cu.
#pragma once

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "../backends.hpp"
#include "plan.hpp"

namespace nvfp4::sm100 {

// One dense block-scaled GEMM as CUTLASS sees it: D[l] = alpha * A[l] * B[l]^T with
// both operands K-major and both scale tensors in the blocked layout.
struct DenseGemmArgs {
  int M = 0, N = 0, K = 0, L = 1;
  const void* a = nullptr;
  int64_t a_row = 0, a_batch = 0;  // bytes
  const void* b = nullptr;
  int64_t b_row = 0, b_batch = 0;  // bytes
  const void* sfa = nullptr;       // blocked
  int64_t sfa_batch = 0;           // bytes (0 or the dense blocked size: CUTLASS's own layout)
  const void* sfb = nullptr;
  int64_t sfb_batch = 0;
  void* d = nullptr;
  int64_t d_row = 0, d_batch = 0;  // elements of the kernel's output type
  float alpha = 1.0f;
  const float* alpha_ptr = nullptr;
  int out_bf16 = 0;  // 16-bit output format: 0 fp16, 1 bf16
  int device = 0, sm_count = 0;
};

// Every CUTLASS-backed entry is split in three so that NOT_SUPPORTED is always
// answered before anything is launched:
//   *_check      can_implement on the arguments (touches no memory)
//   *_workspace  bytes of CUTLASS's own scratch for these arguments
//   *_run        initialize (may clear that scratch) + launch on `stream`

// gemm_1sm.cu: 128x128x256 tile, one SM, stream-K scheduler, fp16/bf16 output.
const char* gemm_1sm_check(const DenseGemmArgs& g);
size_t gemm_1sm_workspace(const DenseGemmArgs& g);
nvfp4_status_t gemm_1sm_run(const DenseGemmArgs& g, void* workspace, cudaStream_t stream);

// gemm_2sm.cu: 256x256x256 tile over a 2x1 cluster (2-SM MMA), persistent, fp16/bf16 output.
const char* gemm_2sm_check(const DenseGemmArgs& g);
size_t gemm_2sm_workspace(const DenseGemmArgs& g);
nvfp4_status_t gemm_2sm_run(const DenseGemmArgs& g, void* workspace, cudaStream_t stream);

// dual.cu / dual_kernel.cuh: one kernel, two tensor-memory accumulators sharing each A
// tile: out[l] = act(alpha1 * A[l].B1[l]^T) * (alpha2 * A[l].B2[l]^T), fp16/bf16 bits.
// All three scale tensors in the blocked layout. No scratch beyond the scale copies.
struct DualGemmArgs {
  int M = 0, N = 0, K = 0, L = 1;
  const void* a = nullptr;
  int64_t a_row = 0, a_batch = 0;  // bytes
  const void* b1 = nullptr;
  int64_t b1_row = 0, b1_batch = 0;
  const void* b2 = nullptr;
  int64_t b2_row = 0, b2_batch = 0;
  const void* sfa = nullptr;  // blocked
  int64_t sfa_batch = 0;      // bytes
  const void* sfb1 = nullptr;
  int64_t sfb1_batch = 0;
  const void* sfb2 = nullptr;
  int64_t sfb2_batch = 0;
  void* d = nullptr;
  int64_t d_row = 0, d_batch = 0;  // 16-bit elements
  float alpha1 = 1.0f, alpha2 = 1.0f;
  const float* alpha1_ptr = nullptr;
  const float* alpha2_ptr = nullptr;
  int activation = 0;  // nvfp4_activation_t
  int out_bf16 = 0;    // 0: fp16 bits, 1: bf16 bits
  int device = 0;
};
// dual_check: why the kernel cannot take these arguments (nullptr: it can); touches no memory.
const char* dual_check(const DualGemmArgs& g);
nvfp4_status_t dual_run(const DualGemmArgs& g, cudaStream_t stream);

// grouped.cu: pointer-array persistent kernel (1 SM, 128x128x256), fp16/bf16 output.
GroupTableSizes group_table_sizes();
size_t grouped_cutlass_workspace(int groups, int sm_count, int device);

// scales.cu: linear/blocked -> blocked copies into the workspace.
struct ScaleSource {
  const uint8_t* data = nullptr;
  nvfp4_sf_layout_t layout = NVFP4_SF_LINEAR;
  int64_t row_stride = 0;   // linear
  int64_t batch_stride = 0;
};
// dst: dense blocked batches (batch stride blocked_sf_bytes(rows, K)) of `rows` rows,
// dst row r <- src[0] row r. Padding (rows >= `rows`, scale columns >= K/16) is
// written as zero. (One source; an array because grouped.cu writes src[0].)
struct SwizzleJob {
  uint8_t* dst = nullptr;
  int64_t rows = 0, K = 0, L = 1;
  ScaleSource src[1];
};
constexpr int kMaxSwizzleJobs = 32;
struct SwizzleBatch {
  int count = 0;
  SwizzleJob jobs[kMaxSwizzleJobs];
};
nvfp4_status_t launch_swizzle(const SwizzleBatch& batch, cudaStream_t stream);

}  // namespace nvfp4::sm100
