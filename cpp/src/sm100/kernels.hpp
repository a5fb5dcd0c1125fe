// Internal interface between the sm100a backend table (backend.cu) and the
// translation units that instantiate the CUTLASS kernels. CUTLASS-free on purpose:
// backend.cu stays cheap to compile and each heavy kernel lives in its own .cu.
#pragma once

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "../backends.hpp"
#include "plan.hpp"
#include "workspace.hpp"

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

// dual.cu: the same GEMM over the row-interleaved operand [b1;b2] (N' = 2N) whose
// epilogue pairs the two accumulator columns of each output column:
//   out = act(alpha1 * acc[2n]) * (alpha2 * acc[2n+1]), written as bytes (see dual.cu).
struct DualEpilogueArgs {
  float alpha1 = 1.0f, alpha2 = 1.0f;
  const float* alpha1_ptr = nullptr;
  const float* alpha2_ptr = nullptr;
  int activation = 0;  // nvfp4_activation_t
  int out_bf16 = 0;    // 0: fp16 bits, 1: bf16 bits
};
// g.N is 2N, g.d the output viewed as bytes (d_row / d_batch in bytes).
const char* dual_check(const DenseGemmArgs& g, const DualEpilogueArgs& e);
size_t dual_workspace(const DenseGemmArgs& g, const DualEpilogueArgs& e);
nvfp4_status_t dual_run(const DenseGemmArgs& g, const DualEpilogueArgs& e, void* workspace, cudaStream_t stream);

// grouped.cu: pointer-array persistent kernel (1 SM, 128x128x256), fp16/bf16 output.
GroupTableSizes group_table_sizes();
size_t grouped_cutlass_workspace(int groups, int sm_count, int device);

// Full entries (they plan, prepare tables and scales, and launch).
nvfp4_status_t grouped_gemm(const GroupedGemmProblem& p, const Exec& exec);
nvfp4_status_t grouped_gemm_packed(const PackedGroupedGemmProblem& p, const Exec& exec);

// gemv.cu: CUDA-core GEMV with the sm100 fp4/fp8 -> f16x2 conversions.
nvfp4_status_t gemv(const GemmProblem& p, const Exec& exec);

// scales.cu: linear/blocked -> blocked copies into the workspace, and the
// row-interleaved [b1;b2] operand of the dual GEMM.
struct ScaleSource {
  const uint8_t* data = nullptr;
  nvfp4_sf_layout_t layout = NVFP4_SF_LINEAR;
  int64_t row_stride = 0;   // linear
  int64_t batch_stride = 0;
};
// dst: dense blocked batches (batch stride blocked_sf_bytes(rows, K)) of `rows` rows.
// interleave == 0: dst row r <- src[0] row r.
// interleave == 1: dst row r <- src[r & 1] row r >> 1 (rows = 2N).
// Padding (rows >= `rows`, scale columns >= K/16) is written as zero.
struct SwizzleJob {
  uint8_t* dst = nullptr;
  int64_t rows = 0, K = 0, L = 1;
  ScaleSource src[2];
  int interleave = 0;
};
constexpr int kMaxSwizzleJobs = 32;
struct SwizzleBatch {
  int count = 0;
  SwizzleJob jobs[kMaxSwizzleJobs];
};
nvfp4_status_t launch_swizzle(const SwizzleBatch& batch, cudaStream_t stream);

// dst (L, 2N, K/2) dense <- rows of b1 / b2 alternately (16-byte copies).
nvfp4_status_t launch_interleave_rows(uint8_t* dst, const Fp4Operand& b1, const Fp4Operand& b2, int64_t N,
                                      int64_t K, int64_t L, cudaStream_t stream);

}  // namespace nvfp4::sm100
