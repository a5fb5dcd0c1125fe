// Thread-local error message and status strings of the C ABI.
#include <stdarg.h>
#include <stdio.h>

#include <string>

#include "backends.hpp"

namespace nvfp4 {
namespace {
thread_local std::string g_last_error;
}

nvfp4_status_t fail(nvfp4_status_t status, const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  g_last_error = buf;
  return status;
}

void clear_error() { g_last_error.clear(); }

}  // namespace nvfp4

extern "C" {

const char* nvfp4_last_error(void) { return nvfp4::g_last_error.c_str(); }

const char* nvfp4_status_string(nvfp4_status_t status) {
  switch (status) {
    case NVFP4_SUCCESS: return "success";
    case NVFP4_ERROR_INVALID_VALUE: return "invalid value";
    case NVFP4_ERROR_INVALID_TYPE: return "invalid type";
    case NVFP4_ERROR_NOT_SUPPORTED: return "not supported";
    case NVFP4_ERROR_CUDA: return "CUDA error";
    case NVFP4_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

}  // extern "C"
