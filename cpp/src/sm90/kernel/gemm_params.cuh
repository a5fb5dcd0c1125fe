// Kernel-side parameters of the sm90a NVFP4 GEMM kernels (everything except the TMA
// descriptors, which travel as separate __grid_constant__ arguments), filled by the
// launchers from a plan (gemm_plan.hpp), and the kernels' shared-storage alignment.
//
// Naming inside the sm90 GEMM: the problem computes C[l] = alpha * A[l] * B[l]^T.
// The kernels swap the operands (Machete-like, docs/design.md "Backends"): B ("w",
// weights, N rows) is the wgmma A operand, dequantized into registers; A ("x", tokens,
// M rows) is the wgmma B operand, fp16 in shared memory.
#pragma once

#include <stdint.h>

#include "../gemm_plan.hpp"  // ScaleLoad

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
  int32_t sf_mode;       // ScaleLoad: how the producer fetches the block scales
  int32_t x_box_rows;    // token rows per TMA box (pre-decoded: the fp16 workspace's, the token tile
                         // 128 or 136; fused: the fp4 tokens'), or M rounded up to 8 if less
  int32_t tiles_w, tiles_x;  // persistent pre-decoded kernel: output tiles per batch along N and M
  ScaleSrc sf_w, sf_x;
  float alpha;
  const float* alpha_ptr;  // read in-kernel when non-null
  void* c;
  int32_t c_dtype;       // DType
  int32_t c_vec4;        // 1: 4 consecutive n are contiguous and 4-element aligned
  int64_t c_row_stride, c_col_stride, c_batch_stride;  // elements
};

// The parameters of problem p for a planned launch (host): gemm.cu's GEMM from its GemmPlan,
// the fused dual kernel's A·B1ᵀ part from its DualPlan (dual_gemm.cu adds B2's fields).
inline GemmParams gemm_params_of(const GemmProblem& p, int32_t num_kb, int splits, int32_t sf_mode, int32_t x_box_rows,
                                 int64_t tiles_w, int64_t tiles_x, int32_t c_vec4) {
  GemmParams kp{};
  kp.M = p.M;
  kp.N = p.N;
  kp.K = p.K;
  kp.L = static_cast<int32_t>(p.L);
  kp.num_kb = num_kb;
  kp.splits = splits;
  kp.sf_blocked = p.sfb.layout == NVFP4_SF_BLOCKED ? 1 : 0;
  kp.sf_mode = sf_mode;
  kp.x_box_rows = x_box_rows;
  kp.tiles_w = static_cast<int32_t>(tiles_w);
  kp.tiles_x = static_cast<int32_t>(tiles_x);
  kp.sf_w = ScaleSrc{p.sfb.data, p.sfb.row_stride, p.sfb.batch_stride, p.N};
  kp.sf_x = ScaleSrc{p.sfa.data, p.sfa.row_stride, p.sfa.batch_stride, p.M};
  kp.alpha = p.alpha.value;
  kp.alpha_ptr = p.alpha.device_ptr;
  kp.c = p.c.data;
  kp.c_dtype = static_cast<int32_t>(p.c.dtype);
  kp.c_vec4 = c_vec4;
  kp.c_row_stride = p.c.row_stride;
  kp.c_col_stride = p.c.col_stride;
  kp.c_batch_stride = p.c.batch_stride;
  return kp;
}

// alpha: the float, or the device scalar read at kernel time (only after griddepcontrol.wait
// where the kernel is a programmatic dependent: a grid before may write it).
__device__ __forceinline__ float load_alpha(const GemmParams& p) {
  return p.alpha_ptr != nullptr ? __ldg(p.alpha_ptr) : p.alpha;
}

// The kernels' shared storage: the dynamic shared memory rounded up to 1 KB (the 128-byte
// swizzle atoms of the TMA tiles need 1 KB alignment; the launch adds 1 KB for it).
template <class Storage>
__device__ __forceinline__ Storage& shared_storage(uint8_t* smem_raw) {
  const uintptr_t base = (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~static_cast<uintptr_t>(1023);
  return *reinterpret_cast<Storage*>(base);
}
template <class Storage>
constexpr size_t dynamic_smem_bytes() { return sizeof(Storage) + 1024; }  // + the manual 1 KB alignment

}  // namespace nvfp4::sm90
