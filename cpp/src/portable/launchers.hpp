// Launchers of the portable backend (one per BackendOps entry), implemented in
// gemm.cu, quantize.cu, scales.cu and backend.cu (gemm_workspace), collected into the
// table in backend.cu.
#pragma once

#include "backends.hpp"

namespace nvfp4 {
namespace portable {

nvfp4_status_t gemv(const GemmProblem& p, const Exec& exec);
nvfp4_status_t gemm(const GemmProblem& p, const Exec& exec);
size_t gemm_workspace(const GemmProblem& p, const Exec& exec);  // 0: needs none
nvfp4_status_t dual_gemm(const DualGemmProblem& p, const Exec& exec);
nvfp4_status_t grouped_gemm(const GroupedGemmProblem& p, const Exec& exec);
nvfp4_status_t grouped_gemm_packed(const PackedGroupedGemmProblem& p, const Exec& exec);
nvfp4_status_t quantize(const QuantizeProblem& p, const Exec& exec);
nvfp4_status_t dequantize(const DequantizeProblem& p, const Exec& exec);
nvfp4_status_t swizzle_scales(const SwizzleProblem& p, const Exec& exec);
nvfp4_status_t unswizzle_scales(const SwizzleProblem& p, const Exec& exec);

}  // namespace portable
}  // namespace nvfp4
