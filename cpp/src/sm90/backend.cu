// The sm90a (Hopper, CC 9.0) backend table. Ops without a Hopper kernel yet are left
// null: the dispatcher then runs the portable kernel.
#include "backends.hpp"

namespace nvfp4 {
namespace sm90 {
nvfp4_status_t gemv(const GemmProblem& p, const Exec& exec);
nvfp4_status_t gemm(const GemmProblem& p, const Exec& exec);
size_t gemm_workspace(const GemmProblem& p, const Exec& exec);
}  // namespace sm90

const BackendOps* sm90a_backend() {
  static const BackendOps ops = [] {
    BackendOps b{};
    b.id = NVFP4_BACKEND_SM90A;
    b.gemv = &sm90::gemv;
    b.gemm = &sm90::gemm;
    b.gemm_workspace = &sm90::gemm_workspace;
    return b;
  }();
  return &ops;
}

}  // namespace nvfp4
