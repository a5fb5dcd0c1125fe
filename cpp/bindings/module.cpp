// nanobind module: converts DLPack arrays to nvfp4_tensor_t, calls the C ABI and
// turns a failed status into a Python exception. No validation lives here
// (api.cpp does it) and no allocation (the Python layer allocates outputs).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

#include "nvfp4/nvfp4.h"

namespace nb = nanobind;

namespace {

using InArray = nb::ndarray<nb::ro>;   // inputs: read-only arrays accepted
using OutArray = nb::ndarray<>;        // outputs: must be writable

// DLPack type codes beyond nanobind's enum (DLPack 1.1).
constexpr uint8_t kDLFloat8_e4m3fn = 10;
constexpr uint8_t kDLFloat4_e2m1fn = 17;

[[noreturn]] void raise_status(nvfp4_status_t st) {
  const char* msg = nvfp4_last_error();
  switch (st) {
    case NVFP4_ERROR_INVALID_VALUE: throw nb::value_error(msg);
    case NVFP4_ERROR_INVALID_TYPE: throw nb::type_error(msg);
    case NVFP4_ERROR_NOT_SUPPORTED:
      PyErr_SetString(PyExc_NotImplementedError, msg);
      throw nb::python_error();
    default: throw std::runtime_error(std::string(nvfp4_status_string(st)) + ": " + msg);
  }
}

void check(nvfp4_status_t st) {
  if (st != NVFP4_SUCCESS) raise_status(st);
}

std::string describe_dtype(const nb::dlpack::dtype& d) {
  return "DLPack dtype (code " + std::to_string(d.code) + ", bits " + std::to_string(d.bits) + ", lanes " +
         std::to_string(d.lanes) + ")";
}

template <class Array>
nvfp4_tensor_t to_tensor(const Array& a, const char* name) {
  nvfp4_tensor_t t{};
  const nb::dlpack::dtype d = a.dtype();
  using Code = nb::dlpack::dtype_code;
  const uint8_t code = d.code;
  if (code == static_cast<uint8_t>(Code::UInt) && d.bits == 8 && d.lanes == 1) t.dtype = NVFP4_DTYPE_UINT8;
  else if (code == static_cast<uint8_t>(Code::Int) && d.bits == 8 && d.lanes == 1) t.dtype = NVFP4_DTYPE_INT8;
  else if (code == static_cast<uint8_t>(Code::Int) && d.bits == 32 && d.lanes == 1) t.dtype = NVFP4_DTYPE_INT32;
  else if (code == static_cast<uint8_t>(Code::Float) && d.bits == 16 && d.lanes == 1) t.dtype = NVFP4_DTYPE_FLOAT16;
  else if (code == static_cast<uint8_t>(Code::Float) && d.bits == 32 && d.lanes == 1) t.dtype = NVFP4_DTYPE_FLOAT32;
  else if (code == static_cast<uint8_t>(Code::Float) && d.bits == 64 && d.lanes == 1) t.dtype = NVFP4_DTYPE_FLOAT64;
  else if (code == static_cast<uint8_t>(Code::Bfloat) && d.bits == 16 && d.lanes == 1) t.dtype = NVFP4_DTYPE_BFLOAT16;
  else if (code == kDLFloat8_e4m3fn && d.bits == 8 && d.lanes == 1) t.dtype = NVFP4_DTYPE_E4M3;
  else if (code == kDLFloat4_e2m1fn && ((d.bits == 4 && d.lanes == 2) || (d.bits == 8 && d.lanes == 1)))
    t.dtype = NVFP4_DTYPE_FP4X2;
  else
    throw nb::type_error((std::string("argument '") + name + "': unsupported " + describe_dtype(d)).c_str());

  const int dev = a.device_type();
  if (dev == nb::device::cpu::value || dev == nb::device::cuda_host::value) {
    t.device_type = NVFP4_DEVICE_CPU;
  } else if (dev == nb::device::cuda::value || dev == nb::device::cuda_managed::value) {
    t.device_type = NVFP4_DEVICE_CUDA;
  } else {
    throw nb::type_error((std::string("argument '") + name + "': arrays on DLPack device type " +
                          std::to_string(dev) + " are not supported (CPU or CUDA only)").c_str());
  }
  t.device_id = a.device_id();
  if (a.ndim() > NVFP4_MAX_DIMS)
    throw nb::value_error((std::string("argument '") + name + "': rank " + std::to_string(a.ndim()) +
                           " exceeds the maximum of " + std::to_string(NVFP4_MAX_DIMS)).c_str());
  t.ndim = static_cast<int32_t>(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) {
    t.shape[i] = static_cast<int64_t>(a.shape(i));
    t.strides[i] = static_cast<int64_t>(a.stride(i));
  }
  t.data = const_cast<void*>(static_cast<const void*>(a.data()));
  return t;
}

nvfp4_sf_layout_t parse_layout(const std::string& s) {
  if (s == "linear") return NVFP4_SF_LINEAR;
  if (s == "blocked") return NVFP4_SF_BLOCKED;
  throw nb::value_error(("sf_layout must be 'linear' or 'blocked', got '" + s + "'").c_str());
}

nvfp4_backend_t parse_backend(const std::string& s) {
  if (s == "auto") return NVFP4_BACKEND_AUTO;
  if (s == "cpu") return NVFP4_BACKEND_CPU;
  if (s == "portable") return NVFP4_BACKEND_PORTABLE;
  if (s == "sm90a") return NVFP4_BACKEND_SM90A;
  if (s == "sm100a") return NVFP4_BACKEND_SM100A;
  throw nb::value_error(("backend must be one of auto, cpu, portable, sm90a, sm100a; got '" + s + "'").c_str());
}

// A Python float, or a 1-element fp32 array on the device (read at kernel time).
nvfp4_scalar_t to_scalar(float value, const std::optional<InArray>& array, const char* name) {
  nvfp4_scalar_t s{value, nullptr};
  if (array) {
    nvfp4_tensor_t t = to_tensor(*array, name);
    int64_t n = 1;
    for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
    if (t.dtype != NVFP4_DTYPE_FLOAT32 || n != 1)
      throw nb::value_error((std::string("argument '") + name + "': an array scalar must be a 1-element float32 array").c_str());
    if (t.device_type == NVFP4_DEVICE_CPU) {
      s.value = *static_cast<const float*>(t.data);
    } else {
      s.device_ptr = static_cast<const float*>(t.data);
    }
  }
  return s;
}

struct ExecArgs {
  nvfp4_exec_t exec{};
  ExecArgs(uintptr_t stream, const std::string& backend, const std::optional<OutArray>& workspace) {
    exec.stream = reinterpret_cast<nvfp4_stream_t>(stream);
    exec.backend = parse_backend(backend);
    if (workspace) {
      exec.workspace = workspace->data();
      exec.workspace_bytes = workspace->nbytes();
    }
  }
};

// The GIL is released around every call into the library.
#define CALL(expr)                          \
  do {                                      \
    nvfp4_status_t st_;                     \
    {                                       \
      nb::gil_scoped_release release_;      \
      st_ = (expr);                         \
    }                                       \
    check(st_);                             \
  } while (0)

}  // namespace

NB_MODULE(_nvfp4_ext, m) {
  m.doc() = "Low-level bindings of libnvfp4 (use the `nvfp4` package instead).";

  m.def("version", [] { return std::string(nvfp4_version()); });
  m.def("build_archs", [] { return std::string(nvfp4_build_archs()); });
  m.def("device_count", [] { return nvfp4_device_count(); });
  m.def("device_info", [](int device) {
    nvfp4_device_info_t info{};
    check(nvfp4_device_info(device, &info));
    nb::dict d;
    d["device"] = info.device_id;
    d["name"] = std::string(info.name);
    d["compute_capability"] = nb::make_tuple(info.cc_major, info.cc_minor);
    d["multiprocessors"] = info.multiprocessors;
    d["total_memory_bytes"] = info.total_memory_bytes;
    d["backend"] = info.backend == NVFP4_BACKEND_AUTO ? std::string("none") : std::string(nvfp4_backend_name(info.backend));
    return d;
  });
  m.def("last_backend", [] { return std::string(nvfp4_backend_name(nvfp4_last_backend())); });
  m.def("stream_synchronize", [](uintptr_t stream) {
    CALL(nvfp4_stream_synchronize(reinterpret_cast<nvfp4_stream_t>(stream)));
  });
  m.def("blocked_scale_bytes", &nvfp4_blocked_scale_bytes, nb::arg("rows"), nb::arg("k"));
  m.def("blocked_scale_offset", &nvfp4_blocked_scale_offset, nb::arg("row"), nb::arg("col"), nb::arg("k"));

  m.def("gemv", [](InArray a, InArray sfa, InArray b, InArray sfb, float alpha, std::optional<InArray> alpha_arr,
                   const std::string& layout, OutArray out, uintptr_t stream, const std::string& backend) {
    nvfp4_tensor_t ta = to_tensor(a, "a"), tsa = to_tensor(sfa, "sfa"), tb = to_tensor(b, "b"),
                   tsb = to_tensor(sfb, "sfb"), to = to_tensor(out, "out");
    nvfp4_scalar_t s = to_scalar(alpha, alpha_arr, "alpha");
    ExecArgs e(stream, backend, std::nullopt);
    CALL(nvfp4_gemv(&ta, &tsa, &tb, &tsb, s, parse_layout(layout), &to, &e.exec));
  });

  // Ops that may need scratch take `workspace` and `query`: with query=True they only
  // return the bytes the op needs (its *_workspace_size), else they run and return 0.
  m.def("gemm", [](InArray a, InArray sfa, InArray b, InArray sfb, float alpha, std::optional<InArray> alpha_arr,
                   const std::string& layout, OutArray out, uintptr_t stream, const std::string& backend,
                   std::optional<OutArray> workspace, bool query) {
    nvfp4_tensor_t ta = to_tensor(a, "a"), tsa = to_tensor(sfa, "sfa"), tb = to_tensor(b, "b"),
                   tsb = to_tensor(sfb, "sfb"), to = to_tensor(out, "out");
    nvfp4_scalar_t s = to_scalar(alpha, alpha_arr, "alpha");
    ExecArgs e(stream, backend, workspace);
    size_t bytes = 0;
    if (query) CALL(nvfp4_gemm_workspace_size(&ta, &tsa, &tb, &tsb, parse_layout(layout), &to, &e.exec, &bytes));
    else CALL(nvfp4_gemm(&ta, &tsa, &tb, &tsb, s, parse_layout(layout), &to, &e.exec));
    return bytes;
  });

  m.def("dual_gemm", [](InArray a, InArray sfa, InArray b1, InArray sfb1, InArray b2, InArray sfb2, float alpha1,
                        std::optional<InArray> alpha1_arr, float alpha2, std::optional<InArray> alpha2_arr,
                        const std::string& activation, const std::string& layout, OutArray out, uintptr_t stream,
                        const std::string& backend, std::optional<OutArray> workspace, bool query) {
    nvfp4_activation_t act;
    if (activation == "silu") act = NVFP4_ACT_SILU;
    else if (activation == "gelu_tanh") act = NVFP4_ACT_GELU_TANH;
    else throw nb::value_error(("activation must be 'silu' or 'gelu_tanh', got '" + activation + "'").c_str());
    nvfp4_tensor_t ta = to_tensor(a, "a"), tsa = to_tensor(sfa, "sfa"), tb1 = to_tensor(b1, "b1"),
                   tsb1 = to_tensor(sfb1, "sfb1"), tb2 = to_tensor(b2, "b2"), tsb2 = to_tensor(sfb2, "sfb2"),
                   to = to_tensor(out, "out");
    nvfp4_scalar_t s1 = to_scalar(alpha1, alpha1_arr, "alpha1"), s2 = to_scalar(alpha2, alpha2_arr, "alpha2");
    ExecArgs e(stream, backend, workspace);
    size_t bytes = 0;
    if (query)
      CALL(nvfp4_dual_gemm_workspace_size(&ta, &tsa, &tb1, &tsb1, &tb2, &tsb2, s1, s2, act, parse_layout(layout), &to,
                                          &e.exec, &bytes));
    else CALL(nvfp4_dual_gemm(&ta, &tsa, &tb1, &tsb1, &tb2, &tsb2, s1, s2, act, parse_layout(layout), &to, &e.exec));
    return bytes;
  });

  m.def("grouped_gemm", [](std::vector<InArray> a, std::vector<InArray> sfa, std::vector<InArray> b,
                           std::vector<InArray> sfb, std::vector<float> alphas, const std::string& layout,
                           std::vector<OutArray> out, uintptr_t stream, const std::string& backend,
                           std::optional<OutArray> workspace, bool query) {
    const size_t g = a.size();
    if (sfa.size() != g || b.size() != g || sfb.size() != g || out.size() != g || (!alphas.empty() && alphas.size() != g))
      throw nb::value_error("grouped_gemm: a, sfa, b, sfb, out (and alphas if given) must have the same length");
    std::vector<nvfp4_tensor_t> ta(g), tsa(g), tb(g), tsb(g), to(g);
    std::vector<nvfp4_scalar_t> s(g, nvfp4_scalar_t{1.0f, nullptr});
    for (size_t i = 0; i < g; ++i) {
      ta[i] = to_tensor(a[i], "a"); tsa[i] = to_tensor(sfa[i], "sfa"); tb[i] = to_tensor(b[i], "b");
      tsb[i] = to_tensor(sfb[i], "sfb"); to[i] = to_tensor(out[i], "out");
      if (!alphas.empty()) s[i].value = alphas[i];
    }
    ExecArgs e(stream, backend, workspace);
    size_t bytes = 0;
    if (query)
      CALL(nvfp4_grouped_gemm_workspace_size(static_cast<int32_t>(g), ta.data(), tsa.data(), tb.data(), tsb.data(),
                                             s.data(), parse_layout(layout), to.data(), &e.exec, &bytes));
    else
      CALL(nvfp4_grouped_gemm(static_cast<int32_t>(g), ta.data(), tsa.data(), tb.data(), tsb.data(), s.data(),
                              parse_layout(layout), to.data(), &e.exec));
    return bytes;
  });

  m.def("grouped_gemm_packed", [](InArray a, InArray sfa, InArray b, InArray sfb, InArray offsets,
                                  std::optional<InArray> alphas, OutArray out, uintptr_t stream,
                                  const std::string& backend, std::optional<OutArray> workspace, bool query) {
    nvfp4_tensor_t ta = to_tensor(a, "a"), tsa = to_tensor(sfa, "sfa"), tb = to_tensor(b, "b"),
                   tsb = to_tensor(sfb, "sfb"), toff = to_tensor(offsets, "offsets"), to = to_tensor(out, "out");
    nvfp4_tensor_t tal{};
    if (alphas) tal = to_tensor(*alphas, "alphas");
    ExecArgs e(stream, backend, workspace);
    size_t bytes = 0;
    if (query)
      CALL(nvfp4_grouped_gemm_packed_workspace_size(&ta, &tsa, &tb, &tsb, &toff, alphas ? &tal : nullptr, &to, &e.exec,
                                                    &bytes));
    else CALL(nvfp4_grouped_gemm_packed(&ta, &tsa, &tb, &tsb, &toff, alphas ? &tal : nullptr, &to, &e.exec));
    return bytes;
  });

  // global_scale is read-only when given (a caller's array may be read-only); when
  // compute_global_scale is set it is an array the Python layer just allocated.
  m.def("quantize", [](InArray x, OutArray q, OutArray sf, const std::string& layout, InArray global_scale,
                       bool compute_global_scale, uintptr_t stream, const std::string& backend) {
    nvfp4_tensor_t tx = to_tensor(x, "x"), tq = to_tensor(q, "q"), tsf = to_tensor(sf, "sf"),
                   tg = to_tensor(global_scale, "global_scale");
    ExecArgs e(stream, backend, std::nullopt);
    CALL(nvfp4_quantize(&tx, &tq, &tsf, parse_layout(layout), &tg, compute_global_scale ? 1 : 0, &e.exec));
  });

  m.def("dequantize", [](InArray q, InArray sf, const std::string& layout, float gs, std::optional<InArray> gs_arr,
                         OutArray out, uintptr_t stream, const std::string& backend) {
    nvfp4_tensor_t tq = to_tensor(q, "q"), tsf = to_tensor(sf, "sf"), to = to_tensor(out, "out");
    nvfp4_scalar_t s = to_scalar(gs, gs_arr, "global_scale");
    ExecArgs e(stream, backend, std::nullopt);
    CALL(nvfp4_dequantize(&tq, &tsf, parse_layout(layout), s, &to, &e.exec));
  });

  m.def("swizzle_scales", [](InArray sf, OutArray out, uintptr_t stream, const std::string& backend) {
    nvfp4_tensor_t ts = to_tensor(sf, "sf"), to = to_tensor(out, "out");
    ExecArgs e(stream, backend, std::nullopt);
    CALL(nvfp4_swizzle_scales(&ts, &to, &e.exec));
  });

  m.def("unswizzle_scales", [](InArray sf_blocked, OutArray out, uintptr_t stream, const std::string& backend) {
    nvfp4_tensor_t ts = to_tensor(sf_blocked, "sf_blocked"), to = to_tensor(out, "out");
    ExecArgs e(stream, backend, std::nullopt);
    CALL(nvfp4_unswizzle_scales(&ts, &to, &e.exec));
  });
}
