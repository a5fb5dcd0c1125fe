// The portable backend's BackendOps table: simple CUDA kernels for every op on any
// GPU of compute capability >= 8.0. It is the fallback behind the sm90a / sm100a
// fast paths and their on-GPU correctness oracle.
#include "portable/launchers.hpp"

namespace nvfp4 {
namespace portable {
size_t gemm_workspace(const GemmProblem&, const Exec&) { return 0; }
}  // namespace portable

const BackendOps* portable_backend() {
  static const BackendOps ops = [] {
    BackendOps o;
    o.id = NVFP4_BACKEND_PORTABLE;
    o.gemv = portable::gemv;
    o.gemm = portable::gemm;
    o.gemm_workspace = portable::gemm_workspace;
    o.dual_gemm = portable::dual_gemm;
    o.grouped_gemm = portable::grouped_gemm;
    o.grouped_gemm_packed = portable::grouped_gemm_packed;
    o.quantize = portable::quantize;
    o.dequantize = portable::dequantize;
    o.swizzle_scales = portable::swizzle_scales;
    o.unswizzle_scales = portable::unswizzle_scales;
    return o;
  }();
  return &ops;
}

}  // namespace nvfp4
