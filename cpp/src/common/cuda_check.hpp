// Every CUDA return code is checked; failures become NVFP4_ERROR_CUDA with the CUDA
// error string, the expression and the location in nvfp4_last_error().
#pragma once

#include <cuda_runtime_api.h>

#include "../backends.hpp"

#define NVFP4_CUDA_TRY(expr)                                                         \
  do {                                                                               \
    const cudaError_t nvfp4_err_ = (expr);                                           \
    if (nvfp4_err_ != cudaSuccess)                                                   \
      return ::nvfp4::fail(NVFP4_ERROR_CUDA, "%s: %s (%s at %s:%d)",                 \
                           cudaGetErrorName(nvfp4_err_), cudaGetErrorString(nvfp4_err_), \
                           #expr, __FILE__, __LINE__);                               \
  } while (0)

// After every kernel launch.
#define NVFP4_CHECK_LAUNCH() NVFP4_CUDA_TRY(cudaGetLastError())

namespace nvfp4 {
inline cudaStream_t cuda_stream(const Exec& exec) {
  return reinterpret_cast<cudaStream_t>(exec.stream);
}
}  // namespace nvfp4
