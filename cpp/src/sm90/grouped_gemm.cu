// sm90a grouped GEMM (G independent problems given as a host array): one sm90a GEMM per
// group, in group order on the caller's stream, sharing one workspace (the largest any
// group needs; stream order keeps the groups' uses apart, and each GEMM waits for the
// grid before it before touching memory, PDL included).
//
// Not the single persistent launch over all groups' tiles that docs/design.md "Backends"
// describes: the GEMM's plan covers one problem (split-K from its M, N and K). A loop of
// the tuned GEMM still runs ~15-25x faster than the portable loop it replaces on Hopper
// (bench/NOTES.md "dual and grouped on the sm90a GEMM"); what it leaves is one launch and
// one pipeline fill per group.
#include "launchers.hpp"

namespace nvfp4::sm90 {

namespace {
// NOT_SUPPORTED (nothing launched) when any group's GEMM would refuse; `workspace` (if
// given): the largest group's gemm_workspace.
nvfp4_status_t check_groups(const GroupedGemmProblem& p, const Exec& exec, size_t* workspace = nullptr) {
  if (workspace != nullptr) *workspace = 0;
  for (int32_t i = 0; i < p.count; ++i) {
    size_t bytes = 0;
    const nvfp4_status_t st = gemm_supported(p.groups[i], exec, workspace != nullptr ? &bytes : nullptr);
    if (st != NVFP4_SUCCESS) return st;
    if (workspace != nullptr && bytes > *workspace) *workspace = bytes;
  }
  return NVFP4_SUCCESS;
}
}  // namespace

size_t grouped_gemm_workspace(const GroupedGemmProblem& p, const Exec& exec) {
  size_t bytes = 0;
  if (check_groups(p, exec, &bytes) != NVFP4_SUCCESS) return 0;  // the portable loop runs it: no scratch
  return bytes;
}

nvfp4_status_t grouped_gemm(const GroupedGemmProblem& p, const Exec& exec) {
  if (exec.cc_major != 9 || exec.cc_minor != 0)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a grouped gemm: needs a CC 9.0 device");
  const nvfp4_status_t supported = check_groups(p, exec);
  if (supported != NVFP4_SUCCESS) return supported;
  for (int32_t i = 0; i < p.count; ++i) {
    const nvfp4_status_t st = gemm(p.groups[i], exec);
    if (st != NVFP4_SUCCESS) return st;
  }
  return NVFP4_SUCCESS;
}

}  // namespace nvfp4::sm90
