// Launchers of the sm90a (Hopper) backend, one per BackendOps entry it fills
// (backend.cu), implemented in gemv.cu, gemm.cu, gemm_decode.cu, dual_gemm.cu, grouped_gemm.cu and
// grouped_packed.cu.
#pragma once

#include "../backends.hpp"

namespace nvfp4::sm90 {

nvfp4_status_t gemv(const GemmProblem& p, const Exec& exec);
nvfp4_status_t gemm(const GemmProblem& p, const Exec& exec);
size_t gemm_workspace(const GemmProblem& p, const Exec& exec);
// NVFP4_SUCCESS when gemm(p) would run (it then launches nothing else that could
// refuse), else NOT_SUPPORTED with the reason; launches nothing. For callers that run
// several GEMMs and must refuse before the first one writes anything. `workspace` (if
// given) receives gemm_workspace(p) (0 when refused).
nvfp4_status_t gemm_supported(const GemmProblem& p, const Exec& exec, size_t* workspace = nullptr);
// gemm(p) right after a gemm() on the same stream with the same tokens (a, sfa, M, K, L)
// and the same exec.workspace: where that call pre-decoded the tokens into the workspace,
// this one reads them from there instead of decoding them again (one launch and one
// pass over A fewer: the dual GEMM's second product). A problem gemm() runs with swapped
// roles (gemm_plan.hpp swap_roles) decodes its own tokens (B's rows) instead.
nvfp4_status_t gemm_same_tokens(const GemmProblem& p, const Exec& exec);
// The decode-regime GEMM (gemm_decode.cu): gemm() runs it where gemm_plan.hpp's
// decode_route(p) holds (2..16 tokens, >= 4096 weight rows, aligned operands).
nvfp4_status_t gemm_decode(const GemmProblem& p, const Exec& exec);

nvfp4_status_t dual_gemm(const DualGemmProblem& p, const Exec& exec);
size_t dual_gemm_workspace(const DualGemmProblem& p, const Exec& exec);
nvfp4_status_t grouped_gemm(const GroupedGemmProblem& p, const Exec& exec);
size_t grouped_gemm_workspace(const GroupedGemmProblem& p, const Exec& exec);
nvfp4_status_t grouped_gemm_packed(const PackedGroupedGemmProblem& p, const Exec& exec);
size_t grouped_gemm_packed_workspace(const PackedGroupedGemmProblem& p, const Exec& exec);

}  // namespace nvfp4::sm90
