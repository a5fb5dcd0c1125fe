// The sm90a (Hopper, CC 9.0) backend table. Ops without a Hopper path (quantize,
// dequantize, the scale swizzles) are left null: the dispatcher then runs the portable
// kernel.
#include "launchers.hpp"

namespace nvfp4 {

const BackendOps* sm90a_backend() {
  static const BackendOps ops = [] {
    BackendOps b{};
    b.id = NVFP4_BACKEND_SM90A;
    b.gemv = &sm90::gemv;
    b.gemm = &sm90::gemm;
    b.gemm_workspace = &sm90::gemm_workspace;
    b.dual_gemm = &sm90::dual_gemm;
    b.dual_gemm_workspace = &sm90::dual_gemm_workspace;
    b.grouped_gemm = &sm90::grouped_gemm;
    b.grouped_gemm_workspace = &sm90::grouped_gemm_workspace;
    b.grouped_gemm_packed = &sm90::grouped_gemm_packed;
    b.grouped_gemm_packed_workspace = &sm90::grouped_gemm_packed_workspace;
    return b;
  }();
  return &ops;
}

}  // namespace nvfp4
