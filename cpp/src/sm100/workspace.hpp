// Workspace sizes of the sm100a entries, for the C ABI's workspace queries.
// Each returns the bytes the entry needs in nvfp4_exec_t::workspace for this problem
// on a device with `exec.sm_count` SMs (0 when the backend would not take the
// problem, or needs nothing). The entries never allocate: with less workspace than
// this they answer NVFP4_ERROR_NOT_SUPPORTED (gemm: api.cpp reports the size).
#pragma once

#include <stddef.h>

#include "../backends.hpp"

namespace nvfp4::sm100 {

size_t gemm_workspace_size(const GemmProblem& p, const Exec& exec);          // wired as BackendOps::gemm_workspace
size_t dual_gemm_workspace_size(const DualGemmProblem& p, const Exec& exec);
size_t grouped_workspace_size(const GroupedGemmProblem& p, const Exec& exec);
size_t grouped_packed_workspace_size(const PackedGroupedGemmProblem& p, const Exec& exec);

}  // namespace nvfp4::sm100
