// The Python side of one op call: operands described for the C ABI, outputs allocated in
// the operands' framework, the stream resolved. One extension call per op: arrays whose
// type offers the DLPack C exchange API (torch >= 2.10) are read through it (no Python
// call per tensor) and get their outputs and default stream from it; other arrays go
// through nanobind's DLPack import and an allocator callable given by the Python layer.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <vector>

#include "dlpack_exchange.hpp"
#include "nvfp4/nvfp4.h"
#include "status.hpp"

namespace nvfp4_bindings {

namespace nb = nanobind;

// For bench/overhead.py's floor probe: reads `obj`'s DLPack view the cheapest way the binding
// can (the type's exchange API, else nanobind's DLPack import) and describes nothing; returns
// its rank. What any per-array call pays at least, whatever the library then does.
int32_t read_array_only(nb::handle obj);

class OpArgs {
 public:
  // `alloc`: None, or a callable (shape tuple, dtype name) -> array of the caller's
  // framework on the operands' device, used when the operands' type has no exchange API.
  // `batch_last`: rank-3 arrays are the gpu-mode (rows, cols, L) tensors, read as the
  // (L, rows, cols) operands they are views of (no Python permute per tensor).
  OpArgs(const char* op, nb::handle alloc, bool batch_last = false)
      : op_(op), alloc_(alloc), batch_last_(batch_last) {}

  nvfp4_tensor_t input(nb::handle obj, const char* name) { return convert(obj, name, false, true); }
  nvfp4_tensor_t output(nb::handle obj, const char* name) { return convert(obj, name, true, true); }
  // A Python number, or a 1-element float32 array (on the device: read at kernel time).
  nvfp4_scalar_t scalar(nb::handle value, const char* name);
  // `count` scalars: a list/tuple of floats (or 1-element arrays), or one float32 array of
  // shape (count,) (on the device: element i is read at kernel time).
  void scalars(nb::handle values, const char* name, size_t count, nvfp4_scalar_t* out);
  // A new array (dtype "float16", "bfloat16", "float32", "uint8", "int32") of the
  // operands' framework on their device; `desc` describes it for the C ABI.
  nb::object allocate(const int64_t* shape, int ndim, const char* dtype, nvfp4_tensor_t* desc);
  // `out` if given (described into desc), else a new array of `shape` (ndim < 0: the
  // operands are too malformed to infer one; a 0-element array lets the C ABI report why).
  nb::object output_or_new(nb::handle out, const int64_t* shape, int ndim, const char* dtype, nvfp4_tensor_t* desc);
  // stream: None (the framework's current stream for exchange-API arrays, else the legacy
  // default stream), an int handle, or an object with __cuda_stream__ / cuda_stream / ptr.
  nvfp4_exec_t exec(nb::handle stream, const char* backend) const;

 private:
  // `frames`: the first such array decides the operands' framework and device (scalars and
  // the arrays allocated here do not).
  nvfp4_tensor_t convert(nb::handle obj, const char* name, bool writable, bool frames);
  void check_scalar_device(const nvfp4_tensor_t& t, const char* name) const;

  const char* op_;
  nb::handle alloc_;
  bool batch_last_ = false;
  const dlpack::ExchangeApi* api_ = nullptr;  // of the first operand's type
  bool have_first_ = false;
  int32_t device_type_ = dlpack::kCPU, device_id_ = 0;
  // Arrays imported without the exchange API, alive until the call returns.
  std::vector<nb::ndarray<nb::ro>> keep_ro_;
  std::vector<nb::ndarray<>> keep_rw_;
};

nvfp4_sf_layout_t parse_layout(const char* s);

// Drops dimension `dim` of t if it has extent 1 (true), else leaves t alone (false).
bool squeeze_unit(nvfp4_tensor_t* t, int dim);

}  // namespace nvfp4_bindings
