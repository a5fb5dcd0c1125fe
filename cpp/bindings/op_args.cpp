#include "op_args.hpp"

#include <cstring>
#include <string>

namespace nvfp4_bindings {

namespace {

std::string arg_error(const char* op, const char* name, const std::string& what) {
  return std::string(op) + ": argument '" + name + "': " + what;
}

// The exchange API of a Python type (cached: a handful of types ever pass through here;
// the GIL is held), or nullptr. A cached type is kept alive (a reference), so that its address
// cannot come back as another type's (e.g. a dead Tensor subclass's).
const dlpack::ExchangeApi* exchange_api(PyTypeObject* type) {
  struct Entry {
    PyTypeObject* type;
    const dlpack::ExchangeApi* api;
  };
  static Entry cache[16];
  static int used = 0;
  for (int i = 0; i < used; ++i)
    if (cache[i].type == type) return cache[i].api;
  const dlpack::ExchangeApi* api = nullptr;
  PyObject* cap = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__dlpack_c_exchange_api__");
  if (cap) {
    void* p = PyCapsule_IsValid(cap, "dlpack_exchange_api") ? PyCapsule_GetPointer(cap, "dlpack_exchange_api") : nullptr;
    const auto* candidate = static_cast<const dlpack::ExchangeApi*>(p);
    if (candidate && candidate->header.version.major == 1 && candidate->dltensor_from_py_object_no_sync &&
        candidate->managed_tensor_allocator && candidate->managed_tensor_to_py_object_no_sync &&
        candidate->current_work_stream)
      api = candidate;
    Py_DECREF(cap);  // the table itself lives as long as the process (DLPack's rule)
  }
  PyErr_Clear();
  if (used < 16) {
    Py_INCREF(reinterpret_cast<PyObject*>(type));
    cache[used++] = Entry{type, api};
  }
  return api;
}

// nvfp4_tensor_t of a DLPack view; strides NULL means compact row-major.
nvfp4_tensor_t describe(const char* op, const char* name, void* data, dlpack::DataType d, int32_t device_type,
                        int32_t device_id, int32_t ndim, const int64_t* shape, const int64_t* strides) {
  nvfp4_tensor_t t{};
  using namespace dlpack;
  const bool one = d.lanes == 1;
  if (d.code == kUInt && d.bits == 8 && one) t.dtype = NVFP4_DTYPE_UINT8;
  else if (d.code == kInt && d.bits == 8 && one) t.dtype = NVFP4_DTYPE_INT8;
  else if (d.code == kInt && d.bits == 32 && one) t.dtype = NVFP4_DTYPE_INT32;
  else if (d.code == kFloat && d.bits == 16 && one) t.dtype = NVFP4_DTYPE_FLOAT16;
  else if (d.code == kFloat && d.bits == 32 && one) t.dtype = NVFP4_DTYPE_FLOAT32;
  else if (d.code == kFloat && d.bits == 64 && one) t.dtype = NVFP4_DTYPE_FLOAT64;
  else if (d.code == kBfloat && d.bits == 16 && one) t.dtype = NVFP4_DTYPE_BFLOAT16;
  else if (d.code == kFloat8_e4m3fn && d.bits == 8 && one) t.dtype = NVFP4_DTYPE_E4M3;
  else if (d.code == kFloat4_e2m1fn && ((d.bits == 4 && d.lanes == 2) || (d.bits == 8 && one)))
    t.dtype = NVFP4_DTYPE_FP4X2;
  else
    throw nb::type_error(arg_error(op, name, "unsupported DLPack dtype (code " + std::to_string(d.code) + ", bits " +
                                                 std::to_string(d.bits) + ", lanes " + std::to_string(d.lanes) + ")")
                             .c_str());
  if (device_type == kCPU || device_type == kCUDAHost) t.device_type = NVFP4_DEVICE_CPU;
  else if (device_type == kCUDA || device_type == kCUDAManaged) t.device_type = NVFP4_DEVICE_CUDA;
  else
    throw nb::type_error(arg_error(op, name, "arrays on DLPack device type " + std::to_string(device_type) +
                                                 " are not supported (CPU or CUDA only)")
                             .c_str());
  t.device_id = device_id;
  if (ndim < 0 || ndim > NVFP4_MAX_DIMS)
    throw nb::value_error(
        arg_error(op, name, "rank " + std::to_string(ndim) + " exceeds the maximum of " + std::to_string(NVFP4_MAX_DIMS))
            .c_str());
  t.ndim = ndim;
  int64_t compact = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.strides[i] = strides ? strides[i] : compact;
    compact *= shape[i];
  }
  t.data = data;
  return t;
}

void set_error(void* ctx, const char* kind, const char* message) {
  *static_cast<std::string*>(ctx) = std::string(kind ? kind : "Error") + ": " + (message ? message : "");
}

bool dtype_of(const char* name, dlpack::DataType* d) {
  using namespace dlpack;
  struct Named {
    const char* name;
    DataType dtype;
  };
  static const Named table[] = {{"float16", {kFloat, 16, 1}}, {"bfloat16", {kBfloat, 16, 1}},
                                {"float32", {kFloat, 32, 1}}, {"uint8", {kUInt, 8, 1}},
                                {"int32", {kInt, 32, 1}}};
  for (const Named& n : table)
    if (std::strcmp(n.name, name) == 0) {
      *d = n.dtype;
      return true;
    }
  return false;
}

}  // namespace

template <class Array>
nvfp4_tensor_t describe_ndarray(const char* op, const char* name, const Array& a) {
  const nb::dlpack::dtype d = a.dtype();
  int64_t shape[NVFP4_MAX_DIMS + 1] = {}, strides[NVFP4_MAX_DIMS + 1] = {};
  const int32_t ndim = static_cast<int32_t>(a.ndim());
  for (int32_t i = 0; i < ndim && i <= NVFP4_MAX_DIMS; ++i) {
    shape[i] = static_cast<int64_t>(a.shape(i));
    strides[i] = static_cast<int64_t>(a.stride(i));
  }
  return describe(op, name, const_cast<void*>(static_cast<const void*>(a.data())),
                  dlpack::DataType{d.code, d.bits, d.lanes}, a.device_type(), a.device_id(), ndim, shape, strides);
}

int32_t read_array_only(nb::handle obj) {
  if (const dlpack::ExchangeApi* api = exchange_api(Py_TYPE(obj.ptr()))) {
    dlpack::Tensor dl{};
    if (api->dltensor_from_py_object_no_sync(obj.ptr(), &dl) != 0) throw nb::python_error();
    return dl.ndim;
  }
  nb::ndarray<nb::ro> arr;
  if (!nb::try_cast(obj, arr))
    throw nb::type_error((std::string("_read_arrays: expected a DLPack array, got ") + Py_TYPE(obj.ptr())->tp_name).c_str());
  return static_cast<int32_t>(arr.ndim());
}

nvfp4_tensor_t OpArgs::convert(nb::handle obj, const char* name, bool writable, bool frames) {
  const dlpack::ExchangeApi* api = exchange_api(Py_TYPE(obj.ptr()));
  nvfp4_tensor_t t;
  if (api) {
    dlpack::Tensor dl{};
    if (api->dltensor_from_py_object_no_sync(obj.ptr(), &dl) != 0) throw nb::python_error();
    t = describe(op_, name, static_cast<char*>(dl.data) + dl.byte_offset, dl.dtype, dl.device.device_type,
                 dl.device.device_id, dl.ndim, dl.shape, dl.strides);
  } else if (writable) {
    nb::ndarray<> arr;
    if (!nb::try_cast(obj, arr))
      throw nb::type_error(arg_error(op_, name, std::string("expected a writable DLPack array, got ") +
                                                    Py_TYPE(obj.ptr())->tp_name)
                               .c_str());
    t = describe_ndarray(op_, name, arr);
    keep_rw_.push_back(std::move(arr));
  } else {
    nb::ndarray<nb::ro> arr;
    if (!nb::try_cast(obj, arr))
      throw nb::type_error(
          arg_error(op_, name, std::string("expected a DLPack array, got ") + Py_TYPE(obj.ptr())->tp_name).c_str());
    t = describe_ndarray(op_, name, arr);
    keep_ro_.push_back(std::move(arr));
  }
  if (batch_last_ && t.ndim == 3) {  // (rows, cols, L) -> (L, rows, cols)
    const nvfp4_tensor_t v = t;
    for (int i = 0; i < 3; ++i) {
      t.shape[i] = v.shape[(i + 2) % 3];
      t.strides[i] = v.strides[(i + 2) % 3];
    }
  }
  if (frames && !have_first_) {
    have_first_ = true;
    api_ = api;
    device_type_ = t.device_type == NVFP4_DEVICE_CUDA ? dlpack::kCUDA : dlpack::kCPU;
    device_id_ = t.device_id;
  }
  return t;
}

nvfp4_scalar_t OpArgs::scalar(nb::handle value, const char* name) {
  nvfp4_scalar_t s{1.0f, nullptr};
  PyObject* v = value.ptr();
  if (PyFloat_Check(v) || (PyLong_Check(v) && !PyBool_Check(v))) {
    s.value = static_cast<float>(PyFloat_AsDouble(v));
    if (PyErr_Occurred()) throw nb::python_error();
    return s;
  }
  if (PyBool_Check(v) || value.is_none())
    throw nb::type_error(arg_error(op_, name, std::string("must be a float or a 1-element float32 array, got ") +
                                                  Py_TYPE(v)->tp_name)
                             .c_str());
  if (!PyObject_HasAttrString(v, "__dlpack__") && !exchange_api(Py_TYPE(v))) {  // numpy scalars and the like
    const double d = PyFloat_AsDouble(v);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      throw nb::type_error(arg_error(op_, name, std::string("must be a float or a 1-element float32 array, got ") +
                                                    Py_TYPE(v)->tp_name)
                               .c_str());
    }
    s.value = static_cast<float>(d);
    return s;
  }
  const nvfp4_tensor_t t = convert(value, name, false, false);
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  if (t.dtype != NVFP4_DTYPE_FLOAT32 || n != 1)
    throw nb::value_error(arg_error(op_, name, "an array scalar must be a 1-element float32 array").c_str());
  check_scalar_device(t, name);
  if (t.device_type == NVFP4_DEVICE_CPU) s.value = *static_cast<const float*>(t.data);
  else s.device_ptr = static_cast<const float*>(t.data);
  return s;
}

// A device scalar is read by the kernel on the operands' GPU: one on another GPU would be a
// peer access (a fault without peer mappings), so it is refused here, naming the argument.
void OpArgs::check_scalar_device(const nvfp4_tensor_t& t, const char* name) const {
  if (t.device_type != NVFP4_DEVICE_CUDA || !have_first_) return;
  if (device_type_ != dlpack::kCUDA || t.device_id != device_id_)
    throw nb::value_error(arg_error(op_, name, "is on cuda:" + std::to_string(t.device_id) + " but the operands are on " +
                                                   (device_type_ == dlpack::kCUDA ? "cuda:" + std::to_string(device_id_)
                                                                                  : std::string("the CPU")))
                              .c_str());
}

void OpArgs::scalars(nb::handle values, const char* name, size_t count, nvfp4_scalar_t* out) {
  PyObject* v = values.ptr();
  if (PyList_Check(v) || PyTuple_Check(v)) {  // floats (or 1-element arrays), one per group
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    if (static_cast<size_t>(n) != count)
      throw nb::value_error(arg_error(op_, name, "must have one value per group (" + std::to_string(count) +
                                                     "), got " + std::to_string(n)).c_str());
    PyObject** items = PySequence_Fast_ITEMS(v);
    for (size_t i = 0; i < count; ++i) out[i] = scalar(nb::handle(items[i]), name);
    return;
  }
  // one float32 array of `count` values: on the device, group i reads element i at kernel time
  const nvfp4_tensor_t t = convert(values, name, false, false);
  if (t.dtype != NVFP4_DTYPE_FLOAT32 || t.ndim != 1 || t.shape[0] != static_cast<int64_t>(count) ||
      (count > 1 && t.strides[0] != 1))
    throw nb::value_error(arg_error(op_, name, "must be a sequence of floats or a contiguous float32 array of shape (" +
                                                   std::to_string(count) + ",)").c_str());
  check_scalar_device(t, name);
  const float* p = static_cast<const float*>(t.data);
  for (size_t i = 0; i < count; ++i)
    out[i] = t.device_type == NVFP4_DEVICE_CPU ? nvfp4_scalar_t{p[i], nullptr} : nvfp4_scalar_t{1.0f, p + i};
}

nb::object OpArgs::allocate(const int64_t* shape, int ndim, const char* dtype, nvfp4_tensor_t* desc) {
  dlpack::DataType dt{};
  if (!dtype_of(dtype, &dt)) throw nb::value_error((std::string(op_) + ": unknown dtype '" + dtype + "'").c_str());
  if (alloc_.is_none() && api_) {
    int64_t dims[NVFP4_MAX_DIMS] = {};
    for (int i = 0; i < ndim; ++i) dims[i] = shape[i];
    dlpack::Tensor proto{};
    proto.device = dlpack::Device{device_type_, device_id_};
    proto.ndim = ndim;
    proto.dtype = dt;
    proto.shape = dims;
    dlpack::ManagedTensorVersioned* mt = nullptr;
    std::string err;
    if (api_->managed_tensor_allocator(&proto, &mt, &err, set_error) != 0 || !mt)
      throw std::runtime_error(std::string(op_) + ": allocating the output failed: " + err);
    const dlpack::Tensor& dl = mt->dl_tensor;
    *desc = describe(op_, "out", static_cast<char*>(dl.data) + dl.byte_offset, dl.dtype, dl.device.device_type,
                     dl.device.device_id, dl.ndim, dl.shape, dl.strides);
    void* py = nullptr;
    if (api_->managed_tensor_to_py_object_no_sync(mt, &py) != 0 || !py) throw nb::python_error();
    return nb::steal(static_cast<PyObject*>(py));
  }
  if (alloc_.is_none())
    throw nb::type_error((std::string(op_) + ": cannot allocate outputs for these arrays; pass out=").c_str());
  nb::tuple dims = nb::steal<nb::tuple>(PyTuple_New(ndim));
  for (int i = 0; i < ndim; ++i) PyTuple_SET_ITEM(dims.ptr(), i, PyLong_FromLongLong(shape[i]));
  nb::object arr = alloc_(dims, dtype);
  *desc = convert(arr, "out", true, false);
  return arr;
}

nb::object OpArgs::output_or_new(nb::handle out, const int64_t* shape, int ndim, const char* dtype,
                                 nvfp4_tensor_t* desc) {
  if (!out.is_none()) {
    *desc = output(out, "out");
    return nb::borrow(out);
  }
  const int64_t empty[1] = {0};
  return ndim >= 0 ? allocate(shape, ndim, dtype, desc) : allocate(empty, 1, dtype, desc);
}

nvfp4_exec_t OpArgs::exec(nb::handle stream, const char* backend) const {
  nvfp4_exec_t e{};
  e.workspace_mode = NVFP4_WORKSPACE_CACHED;
  PyObject* s = stream.ptr();
  if (stream.is_none()) {
    if (api_ && device_type_ == dlpack::kCUDA) {
      void* handle = nullptr;
      if (api_->current_work_stream(dlpack::kCUDA, device_id_, &handle) != 0) throw nb::python_error();
      e.stream = static_cast<nvfp4_stream_t>(handle);
    }
  } else if (PyBool_Check(s)) {
    throw nb::type_error("stream must be an int handle or a stream object, got bool");
  } else if (PyLong_Check(s)) {
    e.stream = reinterpret_cast<nvfp4_stream_t>(static_cast<uintptr_t>(PyLong_AsUnsignedLongLongMask(s)));
  } else if (PyObject_HasAttrString(s, "__cuda_stream__")) {  // (version, handle)
    nb::object proto = stream.attr("__cuda_stream__");
    if (PyCallable_Check(proto.ptr())) proto = proto();
    e.stream = reinterpret_cast<nvfp4_stream_t>(nb::cast<uintptr_t>(proto[1]));
  } else {
    bool found = false;
    for (const char* attr : {"cuda_stream", "ptr", "handle"}) {
      if (PyObject_HasAttrString(s, attr)) {
        e.stream = reinterpret_cast<nvfp4_stream_t>(nb::cast<uintptr_t>(stream.attr(attr)));
        found = true;
        break;
      }
    }
    if (!found)
      throw nb::type_error((std::string("stream must be an int handle or an object with __cuda_stream__, got ") +
                            Py_TYPE(s)->tp_name)
                               .c_str());
  }
  if (std::strcmp(backend, "auto") == 0) e.backend = NVFP4_BACKEND_AUTO;
  else if (std::strcmp(backend, "cpu") == 0) e.backend = NVFP4_BACKEND_CPU;
  else if (std::strcmp(backend, "portable") == 0) e.backend = NVFP4_BACKEND_PORTABLE;
  else if (std::strcmp(backend, "sm90a") == 0) e.backend = NVFP4_BACKEND_SM90A;
  else if (std::strcmp(backend, "sm100a") == 0) e.backend = NVFP4_BACKEND_SM100A;
  else
    throw nb::value_error(
        (std::string("backend must be one of auto, cpu, portable, sm90a, sm100a; got '") + backend + "'").c_str());
  return e;
}

bool squeeze_unit(nvfp4_tensor_t* t, int dim) {
  if (dim >= t->ndim || t->shape[dim] != 1) return false;
  for (int i = dim; i + 1 < t->ndim; ++i) {
    t->shape[i] = t->shape[i + 1];
    t->strides[i] = t->strides[i + 1];
  }
  --t->ndim;
  return true;
}

nvfp4_sf_layout_t parse_layout(const char* s) {
  if (std::strcmp(s, "linear") == 0) return NVFP4_SF_LINEAR;
  if (std::strcmp(s, "blocked") == 0) return NVFP4_SF_BLOCKED;
  throw nb::value_error((std::string("sf_layout must be 'linear' or 'blocked', got '") + s + "'").c_str());
}

}  // namespace nvfp4_bindings
