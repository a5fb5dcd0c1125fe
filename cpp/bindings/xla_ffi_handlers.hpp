// The XLA FFI handler symbols of every nvfp4 op, defined in xla_ffi_handlers.cpp and handed
// to Python by the module (xla_ffi_module.cpp): nvfp4_xla_<op>_cpu and nvfp4_xla_<op>_cuda,
// registered as the custom-call target nvfp4_<op>. Also the command-buffer counter the
// module reports. The .so exports none of them (cmake/python_ext.map).
#pragma once

#include <atomic>
#include <cstdint>

#include "xla/ffi/api/c_api.h"

#define NVFP4_XLA_DECLARE_HANDLERS(op)                                   \
  extern "C" XLA_FFI_Error* nvfp4_xla_##op##_cpu(XLA_FFI_CallFrame*);   \
  extern "C" XLA_FFI_Error* nvfp4_xla_##op##_cuda(XLA_FFI_CallFrame*);

NVFP4_XLA_DECLARE_HANDLERS(gemv)
NVFP4_XLA_DECLARE_HANDLERS(gemm)
NVFP4_XLA_DECLARE_HANDLERS(dual_gemm)
NVFP4_XLA_DECLARE_HANDLERS(grouped_gemm)
NVFP4_XLA_DECLARE_HANDLERS(grouped_gemm_packed)
NVFP4_XLA_DECLARE_HANDLERS(quantize)
NVFP4_XLA_DECLARE_HANDLERS(dequantize)
NVFP4_XLA_DECLARE_HANDLERS(swizzle_scales)
NVFP4_XLA_DECLARE_HANDLERS(unswizzle_scales)

#undef NVFP4_XLA_DECLARE_HANDLERS

namespace nvfp4_xla {

// CUDA handler calls made while XLA was recording a command buffer (since import).
extern std::atomic<int64_t> g_captured_calls;

}  // namespace nvfp4_xla
