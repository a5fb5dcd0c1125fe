// Launchers of the sm100a (Blackwell) backend, one per BackendOps entry it fills
// (backend.cu), implemented in backend.cu (gemm, dual_gemm and their workspaces),
// gemv.cu and grouped.cu (grouped_gemm, grouped_gemm_packed and their workspaces).
// Each *_workspace returns the bytes the entry needs in nvfp4_exec_t::workspace for
// this problem on a device with `exec.sm_count` SMs (0 when the backend would not take
// the problem, or needs nothing); the C ABI's workspace queries read them. The entries
// never allocate: with less workspace than this they answer NVFP4_ERROR_NOT_SUPPORTED
// (gemm: api.cpp reports the size).
#pragma once

#include <stddef.h>

#include "../backends.hpp"

namespace nvfp4::sm100 {

nvfp4_status_t gemv(const GemmProblem& p, const Exec& exec);
nvfp4_status_t gemm(const GemmProblem& p, const Exec& exec);
size_t gemm_workspace(const GemmProblem& p, const Exec& exec);
nvfp4_status_t dual_gemm(const DualGemmProblem& p, const Exec& exec);
size_t dual_gemm_workspace(const DualGemmProblem& p, const Exec& exec);
nvfp4_status_t grouped_gemm(const GroupedGemmProblem& p, const Exec& exec);
size_t grouped_gemm_workspace(const GroupedGemmProblem& p, const Exec& exec);
nvfp4_status_t grouped_gemm_packed(const PackedGroupedGemmProblem& p, const Exec& exec);
size_t grouped_gemm_packed_workspace(const PackedGroupedGemmProblem& p, const Exec& exec);

}  // namespace nvfp4::sm100
