// The DLPack C exchange API (DLPack >= 1.2, `type(x).__dlpack_c_exchange_api__`): a
// framework's table of C functions that view one of its arrays as a DLTensor, allocate a
// new array and give its current stream, without a Python call per tensor. Declared here
// from the DLPack specification (dlpack.h, major version 1); nanobind's own DLPack types
// cover only the DLTensor part.
#pragma once

#include <cstdint>

namespace nvfp4_bindings::dlpack {

struct Device {
  int32_t device_type;  // kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13
  int32_t device_id;
};

struct DataType {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, float8_e4m3fn 10, float4_e2m1fn 17
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL: compact row-major
  uint64_t byte_offset;
};

struct Version {
  uint32_t major;
  uint32_t minor;
};

struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  uint64_t flags;
  Tensor dl_tensor;
};

struct ExchangeApiHeader {
  Version version;
  ExchangeApiHeader* prev_api;
};

struct ExchangeApi {
  ExchangeApiHeader header;
  int (*managed_tensor_allocator)(Tensor* prototype, ManagedTensorVersioned** out, void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind, const char* message));
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, ManagedTensorVersioned** out);
  int (*managed_tensor_to_py_object_no_sync)(ManagedTensorVersioned* tensor, void** out_py_object);
  int (*dltensor_from_py_object_no_sync)(void* py_object, Tensor* out);  // may be NULL
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_current_stream);
};

constexpr int32_t kCPU = 1, kCUDA = 2, kCUDAHost = 3, kCUDAManaged = 13;
constexpr uint8_t kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kFloat8_e4m3fn = 10, kFloat4_e2m1fn = 17;

}  // namespace nvfp4_bindings::dlpack
