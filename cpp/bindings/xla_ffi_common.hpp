// What every XLA FFI handler of nvfp4 (module nvfp4._nvfp4_xla) shares: where a call's
// buffers live (Env), a failed C ABI status as an ffi::Error, XLA buffers and attributes as
// the C ABI's descriptors, scalars, and the CUDA handlers' scratch. One place, so the op
// handlers (xla_ffi_handlers.cpp) read as "describe the buffers, call the C ABI" and the
// module (xla_ffi_module.cpp) parses layouts and activations the same way.
//
// Scratch (gemm, dual_gemm, grouped_gemm, grouped_gemm_packed on CUDA): the Python layer
// sizes a trailing uint8 `workspace` result at trace time with the C ABI's
// *_workspace_size query (for the first CUDA device; + 256 bytes, as the handler aligns
// the buffer to the 256 bytes the sm90a paths want); the handler queries again with the
// real buffers and, should that result be too small (traced for another kind of GPU),
// takes the difference from XLA's ScratchAllocator, else from the library's cached
// workspace (NVFP4_WORKSPACE_CACHED) -- except while the stream is being
// captured into a command buffer (a CUDA graph would keep an address XLA frees after the
// call), where it fails with a clear error instead.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nvfp4/nvfp4.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace nvfp4_xla {

// Where the buffers of one call live, and what the CUDA handlers get from XLA.
struct Env {
  nvfp4_device_type_t device_type = NVFP4_DEVICE_CPU;
  int32_t device_id = 0;
  nvfp4_stream_t stream = nullptr;
  ffi::ScratchAllocator* scratch = nullptr;
  bool cuda() const { return device_type == NVFP4_DEVICE_CUDA; }
};

// ---- errors ---------------------------------------------------------------

ffi::Error status_error(nvfp4_status_t st);
ffi::Error check(nvfp4_status_t st);
ffi::Error invalid(const std::string& msg);

#define NVFP4_FFI_TRY(expr)                     \
  do {                                          \
    ffi::Error err_ = (expr);                   \
    if (err_.failure()) return err_;            \
  } while (0)

// ---- buffers and attributes -----------------------------------------------

// A dense row-major XLA buffer as an nvfp4_tensor_t on env's device.
ffi::Error to_tensor(const Env& env, const ffi::AnyBuffer& b, const char* name, nvfp4_tensor_t* t);

nvfp4_sf_layout_t parse_layout(std::string_view s, bool* ok);
ffi::Error layout_attr(std::string_view s, nvfp4_sf_layout_t* out);
bool parse_backend(std::string_view s, nvfp4_backend_t* out);
bool parse_activation(std::string_view s, nvfp4_activation_t* out);
ffi::Error make_exec(const Env& env, std::string_view backend, nvfp4_exec_t* exec);

// A scalar: the float attribute, or (operand) the next remaining operand.
ffi::Error scalar(const Env& env, float value, bool operand, ffi::RemainingArgs& extra, size_t* next,
                  const char* name, nvfp4_scalar_t* s);

std::optional<ffi::AnyBuffer> optional_ret(const ffi::RemainingRets& rets, size_t index);

// ---- scratch ----------------------------------------------------------------

// The sm90a paths want a 256-byte aligned workspace; XLA guarantees less, so the
// `workspace` result is kWorkspaceAlign bytes larger than the query's and aligned here.
constexpr size_t kWorkspaceAlign = 256;

// Points exec at scratch for the bytes `query` reports: the `workspace` result when it
// is large enough, else XLA's scratch allocator or the library's cached workspace (never
// while capturing a command buffer).
template <class Query>
ffi::Error attach_workspace(const Env& env, std::optional<ffi::AnyBuffer> ws, Query&& query, nvfp4_exec_t* exec) {
  if (!env.cuda()) return ffi::Error::Success();  // the CPU backend needs none
  if (ws && ws->untyped_data()) {  // XLA aligns buffers to less than the 256 bytes asked for
    const uintptr_t p = reinterpret_cast<uintptr_t>(ws->untyped_data());
    const uintptr_t aligned = (p + kWorkspaceAlign - 1) & ~uintptr_t(kWorkspaceAlign - 1);
    const size_t skip = static_cast<size_t>(aligned - p);
    exec->workspace = reinterpret_cast<void*>(aligned);
    exec->workspace_bytes = ws->size_bytes() > skip ? ws->size_bytes() - skip : 0;
  }
  size_t need = 0;
  NVFP4_FFI_TRY(check(query(exec, &need)));
  if (need <= exec->workspace_bytes) return ffi::Error::Success();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(env.stream), &capture) != cudaSuccess) {
    (void)cudaGetLastError();
    capture = cudaStreamCaptureStatusActive;  // unknown: do not allocate
  }
  if (capture != cudaStreamCaptureStatusNone)
    return ffi::Error(ffi::ErrorCode::kFailedPrecondition,
                      "nvfp4: this op needs " + std::to_string(need) + " bytes of workspace on CUDA device " +
                          std::to_string(env.device_id) + " but was traced with " +
                          std::to_string(exec->workspace_bytes) +
                          " (sized for another GPU), and scratch cannot be allocated while XLA captures a "
                          "command buffer; trace on this device or disable command buffers for custom calls");
  if (env.scratch) {
    auto p = env.scratch->Allocate(need, kWorkspaceAlign);
    if (p.has_value()) {
      exec->workspace = *p;
      exec->workspace_bytes = need;
      return ffi::Error::Success();
    }
  }
  // XLA gave no scratch (its allocator is not always available to custom calls): the
  // library's own cached workspace on XLA's stream (nvfp4.h, NVFP4_WORKSPACE_CACHED).
  exec->workspace = nullptr;
  exec->workspace_bytes = 0;
  exec->workspace_mode = NVFP4_WORKSPACE_CACHED;
  return ffi::Error::Success();
}

}  // namespace nvfp4_xla
