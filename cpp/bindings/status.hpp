// A failed C ABI status as the Python exception of the same kind, with the library's message
// (shared by the nanobind modules _nvfp4_ext and _nvfp4_xla).
#pragma once

#include <nanobind/nanobind.h>

#include <stdexcept>
#include <string>

#include "nvfp4/nvfp4.h"

namespace nvfp4_bindings {

[[noreturn]] inline void raise_status(nvfp4_status_t st) {
  const char* msg = nvfp4_last_error();
  switch (st) {
    case NVFP4_ERROR_INVALID_VALUE: throw nanobind::value_error(msg);
    case NVFP4_ERROR_INVALID_TYPE: throw nanobind::type_error(msg);
    case NVFP4_ERROR_NOT_SUPPORTED:
      PyErr_SetString(PyExc_NotImplementedError, msg);
      throw nanobind::python_error();
    default: throw std::runtime_error(std::string(nvfp4_status_string(st)) + ": " + msg);
  }
}

}  // namespace nvfp4_bindings
