// Kernel-side parameters of the fused sm90a dual GEMM (kernel/dual_gemm.cuh), besides its
// TMA descriptors: the GEMM's parameters for everything the pre-decoded mainloop and the
// epilogue helpers share (problem N = output columns, B1's scales in sf_w, alpha1 in alpha,
// the output), plus what the second product and the act*mul epilogue add. Filled by
// dual_gemm.cu from a plan (dual_plan.hpp).
#pragma once

#include <stdint.h>

#include "../dual_plan.hpp"
#include "gemm_params.cuh"

namespace nvfp4::sm90 {

struct DualParams {
  GemmParams g;             // sf_w: B1's scales; alpha / alpha_ptr: alpha1; splits, sf_mode, output
  ScaleSrc sf_w2;           // B2's scales
  float alpha2;
  const float* alpha2_ptr;  // read in-kernel when non-null
  int32_t act;              // nvfp4_activation_t
  int32_t store;            // DualStore
  int32_t c_box_rows;       // kDualStoreTma: token rows per store box
};

// alpha2 as load_alpha reads alpha1 (only after griddepcontrol.wait).
__device__ __forceinline__ float load_alpha2(const DualParams& p) {
  return p.alpha2_ptr != nullptr ? __ldg(p.alpha2_ptr) : p.alpha2;
}

}  // namespace nvfp4::sm90
