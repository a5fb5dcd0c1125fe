// The one launcher signature every backend implements. api.cpp validates the
// arguments (validate.hpp), builds a Problem (problem.hpp) and walks the device's backend
// chain (dispatch.cpp: sm100a -> portable, sm90a -> portable, portable): the first backend
// whose entry is non-null and does not answer NVFP4_ERROR_NOT_SUPPORTED runs the op.
// A backend answering NOT_SUPPORTED must not have touched any memory.
// Adding a backend = new folder (entries declared in its launchers.hpp, named after the
// BackendOps fields) + one BackendOps table + its declaration below + its place in
// backend_chain (dispatch.cpp); docs/design.md, "Adding an op or a backend".
#pragma once

#include "problem.hpp"

namespace nvfp4 {

struct Exec {
  nvfp4_stream_t stream = nullptr;   // a cudaStream_t
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int device = 0;                    // the current device is already set to it
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  // NVFP4_WORKSPACE_CACHED and no caller workspace: a launcher may take scratch of its own
  // from the library's cache (workspace_cache.hpp) on `stream`.
  bool cached_workspace = false;
};

template <class P>
using LaunchFn = nvfp4_status_t (*)(const P& problem, const Exec& exec);
template <class P>
using WorkspaceFn = size_t (*)(const P& problem, const Exec& exec);

struct BackendOps {
  nvfp4_backend_t id;
  LaunchFn<GemmProblem> gemv = nullptr;         // N == 1
  LaunchFn<GemmProblem> gemm = nullptr;
  WorkspaceFn<GemmProblem> gemm_workspace = nullptr;   // null: needs none
  LaunchFn<DualGemmProblem> dual_gemm = nullptr;
  WorkspaceFn<DualGemmProblem> dual_gemm_workspace = nullptr;
  LaunchFn<GroupedGemmProblem> grouped_gemm = nullptr;
  WorkspaceFn<GroupedGemmProblem> grouped_gemm_workspace = nullptr;
  LaunchFn<PackedGroupedGemmProblem> grouped_gemm_packed = nullptr;
  WorkspaceFn<PackedGroupedGemmProblem> grouped_gemm_packed_workspace = nullptr;
  LaunchFn<QuantizeProblem> quantize = nullptr;
  LaunchFn<DequantizeProblem> dequantize = nullptr;
  LaunchFn<SwizzleProblem> swizzle_scales = nullptr;    // linear -> blocked
  LaunchFn<SwizzleProblem> unswizzle_scales = nullptr;  // blocked -> linear
};

// Each returns null when that backend was not compiled into this build.
const BackendOps* cpu_backend();
const BackendOps* portable_backend();
const BackendOps* sm90a_backend();
const BackendOps* sm100a_backend();

// Sets the thread-local error message; returns `status` for `return fail(...)`.
nvfp4_status_t fail(nvfp4_status_t status, const char* fmt, ...);

}  // namespace nvfp4
