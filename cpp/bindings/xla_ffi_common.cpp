// The shared pieces of the XLA FFI handlers declared in xla_ffi_common.hpp: C ABI status ->
// ffi::Error, XLA buffers -> nvfp4_tensor_t, attribute strings -> the C ABI's enums,
// scalar operands, optional results. Kept out of the handlers so each op there is only
// its own buffers and its C ABI call.
#include "xla_ffi_common.hpp"

#include <string>
#include <string_view>

namespace nvfp4_xla {

ffi::Error status_error(nvfp4_status_t st) {
  ffi::ErrorCode code = ffi::ErrorCode::kInternal;
  if (st == NVFP4_ERROR_INVALID_VALUE || st == NVFP4_ERROR_INVALID_TYPE) code = ffi::ErrorCode::kInvalidArgument;
  else if (st == NVFP4_ERROR_NOT_SUPPORTED) code = ffi::ErrorCode::kUnimplemented;
  return ffi::Error(code, std::string("nvfp4: ") + nvfp4_last_error());
}

ffi::Error check(nvfp4_status_t st) { return st == NVFP4_SUCCESS ? ffi::Error::Success() : status_error(st); }

ffi::Error invalid(const std::string& msg) { return ffi::Error::InvalidArgument("nvfp4: " + msg); }

namespace {

ffi::Error dtype_of(ffi::DataType t, const char* name, nvfp4_dtype_t* out) {
  switch (t) {
    case ffi::DataType::U8: *out = NVFP4_DTYPE_UINT8; return ffi::Error::Success();
    case ffi::DataType::S8: *out = NVFP4_DTYPE_INT8; return ffi::Error::Success();
    case ffi::DataType::F8E4M3FN: *out = NVFP4_DTYPE_E4M3; return ffi::Error::Success();
    case ffi::DataType::F16: *out = NVFP4_DTYPE_FLOAT16; return ffi::Error::Success();
    case ffi::DataType::BF16: *out = NVFP4_DTYPE_BFLOAT16; return ffi::Error::Success();
    case ffi::DataType::F32: *out = NVFP4_DTYPE_FLOAT32; return ffi::Error::Success();
    case ffi::DataType::F64: *out = NVFP4_DTYPE_FLOAT64; return ffi::Error::Success();
    case ffi::DataType::S32: *out = NVFP4_DTYPE_INT32; return ffi::Error::Success();
    default:
      // float4_e2m1fn buffers count values, not bytes: nvfp4.jax bitcasts them to uint8.
      return invalid(std::string("argument '") + name + "': unsupported XLA element type " +
                     std::to_string(static_cast<int>(t)));
  }
}

}  // namespace

// A dense row-major XLA buffer as an nvfp4_tensor_t on env's device.
ffi::Error to_tensor(const Env& env, const ffi::AnyBuffer& b, const char* name, nvfp4_tensor_t* t) {
  *t = nvfp4_tensor_t{};
  NVFP4_FFI_TRY(dtype_of(b.element_type(), name, &t->dtype));
  const auto dims = b.dimensions();
  if (dims.size() > NVFP4_MAX_DIMS)
    return invalid(std::string("argument '") + name + "': rank " + std::to_string(dims.size()) +
                   " exceeds the maximum of " + std::to_string(NVFP4_MAX_DIMS));
  t->ndim = static_cast<int32_t>(dims.size());
  int64_t stride = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    t->shape[i] = dims[i];
    t->strides[i] = stride;
    stride *= dims[i] > 0 ? dims[i] : 1;
  }
  t->data = b.untyped_data();
  t->device_type = env.device_type;
  t->device_id = env.device_id;
  return ffi::Error::Success();
}

nvfp4_sf_layout_t parse_layout(std::string_view s, bool* ok) {
  *ok = true;
  if (s == "linear") return NVFP4_SF_LINEAR;
  if (s == "blocked") return NVFP4_SF_BLOCKED;
  *ok = false;
  return NVFP4_SF_LINEAR;
}

ffi::Error layout_attr(std::string_view s, nvfp4_sf_layout_t* out) {
  bool ok;
  *out = parse_layout(s, &ok);
  return ok ? ffi::Error::Success()
            : invalid("sf_layout must be 'linear' or 'blocked', got '" + std::string(s) + "'");
}

bool parse_backend(std::string_view s, nvfp4_backend_t* out) {
  if (s == "auto") *out = NVFP4_BACKEND_AUTO;
  else if (s == "cpu") *out = NVFP4_BACKEND_CPU;
  else if (s == "portable") *out = NVFP4_BACKEND_PORTABLE;
  else if (s == "sm90a") *out = NVFP4_BACKEND_SM90A;
  else if (s == "sm100a") *out = NVFP4_BACKEND_SM100A;
  else return false;
  return true;
}

bool parse_activation(std::string_view s, nvfp4_activation_t* out) {
  if (s == "silu") *out = NVFP4_ACT_SILU;
  else if (s == "gelu_tanh") *out = NVFP4_ACT_GELU_TANH;
  else return false;
  return true;
}

ffi::Error make_exec(const Env& env, std::string_view backend, nvfp4_exec_t* exec) {
  *exec = nvfp4_exec_t{};
  exec->stream = env.stream;
  if (!parse_backend(backend, &exec->backend))
    return invalid("backend must be one of auto, cpu, portable, sm90a, sm100a; got '" + std::string(backend) + "'");
  return ffi::Error::Success();
}

namespace {

// A 1-element f32 operand as a scalar: read on the host (CPU), by the kernel (CUDA).
ffi::Error scalar_operand(const Env& env, ffi::RemainingArgs& extra, size_t* next, const char* name,
                          nvfp4_scalar_t* s) {
  auto b = extra.get<ffi::AnyBuffer>((*next)++);
  if (b.has_error()) return invalid(std::string("operand '") + name + "' is missing: " + b.error().message());
  if (b->element_type() != ffi::DataType::F32 || b->element_count() != 1)
    return invalid(std::string("argument '") + name + "': an array scalar must be a 1-element float32 array");
  if (env.cuda()) s->device_ptr = static_cast<const float*>(b->untyped_data());
  else s->value = *static_cast<const float*>(b->untyped_data());
  return ffi::Error::Success();
}

}  // namespace

// A scalar: the float attribute, or (operand) the next remaining operand.
ffi::Error scalar(const Env& env, float value, bool operand, ffi::RemainingArgs& extra, size_t* next,
                  const char* name, nvfp4_scalar_t* s) {
  *s = nvfp4_scalar_t{value, nullptr};
  return operand ? scalar_operand(env, extra, next, name, s) : ffi::Error::Success();
}

std::optional<ffi::AnyBuffer> optional_ret(const ffi::RemainingRets& rets, size_t index) {
  if (index >= rets.size()) return std::nullopt;
  auto r = rets.get<ffi::AnyBuffer>(index);
  if (r.has_error()) return std::nullopt;
  return **r;
}

}  // namespace nvfp4_xla
