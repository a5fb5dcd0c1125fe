// The nanobind module nvfp4._nvfp4_xla (used by nvfp4.jax): the capsules of every op's
// XLA FFI handlers for registration with XLA (registrations()), the command-buffer counter,
// and the trace-time checks (check_<op>) through which python/nvfp4/jax.py runs the C ABI's
// own validation and workspace queries on shape-only descriptors. The handlers themselves
// are in xla_ffi_handlers.cpp; this file is what Python sees of them.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nvfp4/nvfp4.h"
#include "status.hpp"
#include "xla_ffi_common.hpp"
#include "xla_ffi_handlers.hpp"

namespace nb = nanobind;
using nvfp4_xla::parse_activation;
using nvfp4_xla::parse_layout;

namespace {

// Trace-time checks run the C ABI's own validation on shape-only descriptors: CUDA
// tensors with well-aligned, disjoint fake addresses on a device ordinal that cannot
// exist. Validation never dereferences device pointers; when it passes, the op (or its
// workspace query) stops at the device lookup with "CUDA device <kNoDevice> does not
// exist", which is what "valid" looks like here. Nothing is launched.
constexpr int32_t kNoDevice = 0x3fffffff;

nvfp4_dtype_t dtype_from_name(const std::string& op, const std::string& name, const std::string& d) {
  if (d == "uint8") return NVFP4_DTYPE_UINT8;
  if (d == "int8") return NVFP4_DTYPE_INT8;
  if (d == "float8_e4m3fn") return NVFP4_DTYPE_E4M3;
  if (d == "float16") return NVFP4_DTYPE_FLOAT16;
  if (d == "bfloat16") return NVFP4_DTYPE_BFLOAT16;
  if (d == "float32") return NVFP4_DTYPE_FLOAT32;
  if (d == "float64") return NVFP4_DTYPE_FLOAT64;
  if (d == "int32") return NVFP4_DTYPE_INT32;
  throw nb::type_error((op + ": argument '" + name + "': unsupported dtype " + d).c_str());
}

// Descriptors (dtype name, shape) -> dense CUDA tensors at disjoint fake addresses.
class Shapes {
 public:
  Shapes(std::string op, int32_t device) : op_(std::move(op)), device_(device) {}

  const nvfp4_tensor_t* add(nb::handle desc, const char* name) {
    if (desc.is_none()) return nullptr;
    nb::tuple t = nb::cast<nb::tuple>(desc);
    nvfp4_tensor_t& x = tensors_.emplace_back();
    x.dtype = dtype_from_name(op_, name, nb::cast<std::string>(t[0]));
    std::vector<int64_t> shape = nb::cast<std::vector<int64_t>>(t[1]);
    if (shape.size() > NVFP4_MAX_DIMS)
      throw nb::value_error((op_ + ": argument '" + name + "': rank " + std::to_string(shape.size()) +
                             " exceeds the maximum of " + std::to_string(NVFP4_MAX_DIMS)).c_str());
    x.ndim = static_cast<int32_t>(shape.size());
    int64_t stride = 1;
    for (int i = x.ndim - 1; i >= 0; --i) {
      x.shape[i] = shape[i];
      x.strides[i] = stride;
      stride *= shape[i] > 0 ? shape[i] : 1;
    }
    const uint64_t bytes = static_cast<uint64_t>(stride) * static_cast<uint64_t>(nvfp4_dtype_size(x.dtype));
    x.data = reinterpret_cast<void*>(static_cast<uintptr_t>(next_));
    next_ += ((bytes + (1u << 20) - 1) >> 20 << 20) + (1u << 20);  // 1 MiB aligned, gap between tensors
    x.device_type = NVFP4_DEVICE_CUDA;
    x.device_id = device_;
    return &x;
  }

  std::vector<nvfp4_tensor_t> add_list(nb::handle descs, const char* name) {
    std::vector<nvfp4_tensor_t> out;
    for (nb::handle d : descs) out.push_back(*add(d, name));
    return out;
  }

 private:
  std::string op_;
  int32_t device_;
  std::deque<nvfp4_tensor_t> tensors_;  // stable addresses
  uint64_t next_ = uint64_t(1) << 40;
};

int32_t check_device(int device) { return device < 0 ? kNoDevice : static_cast<int32_t>(device); }

// Validation only (device < 0): success or the expected missing-device failure. `bytes`
// is a pointer read here, after the query wrote it: the order in which a call's arguments
// are evaluated is unspecified, and GCC reads a by-value argument before the query in the
// same argument list has run.
size_t finish(nvfp4_status_t st, int device, const size_t* bytes) {
  if (st == NVFP4_SUCCESS) return device < 0 ? 0 : *bytes;
  if (device < 0 && st == NVFP4_ERROR_INVALID_VALUE) {
    const std::string expected = "CUDA device " + std::to_string(kNoDevice) + " does not exist";
    if (std::strncmp(nvfp4_last_error(), expected.c_str(), expected.size()) == 0) return 0;
  }
  nvfp4_bindings::raise_status(st);
}

nvfp4_sf_layout_t layout_arg(const std::string& s) {
  bool ok;
  nvfp4_sf_layout_t l = parse_layout(s, &ok);
  if (!ok) throw nb::value_error(("sf_layout must be 'linear' or 'blocked', got '" + s + "'").c_str());
  return l;
}

template <class Fn>
nb::capsule capsule(Fn* fn) {
  static_assert(std::is_invocable_r_v<XLA_FFI_Error*, Fn, XLA_FFI_CallFrame*>, "not an XLA FFI handler");
  return nb::capsule(reinterpret_cast<void*>(fn));
}

}  // namespace

NB_MODULE(_nvfp4_xla, m) {
  m.def("captured_calls", [] { return nvfp4_xla::g_captured_calls.load(std::memory_order_relaxed); },
        "CUDA handler calls made while XLA recorded a command buffer (since import).");
  m.doc() = "XLA FFI handlers of libnvfp4 for nvfp4.jax (use nvfp4.jax instead).";
  m.def("version", [] { return std::string(nvfp4_version()); });
  m.def("blocked_scale_bytes", &nvfp4_blocked_scale_bytes, nb::arg("rows"), nb::arg("k"));

  m.def("registrations", [] {
    nb::dict d;
#define NVFP4_REG(op)                                                          \
  {                                                                            \
    nb::dict p;                                                                \
    p["cpu"] = capsule(nvfp4_xla_##op##_cpu);                                  \
    p["cuda"] = capsule(nvfp4_xla_##op##_cuda);                                \
    d["nvfp4_" #op] = p;                                                       \
  }
    NVFP4_REG(gemv) NVFP4_REG(gemm) NVFP4_REG(dual_gemm) NVFP4_REG(grouped_gemm) NVFP4_REG(grouped_gemm_packed)
    NVFP4_REG(quantize) NVFP4_REG(dequantize) NVFP4_REG(swizzle_scales) NVFP4_REG(unswizzle_scales)
#undef NVFP4_REG
    return d;
  }, "{target name: {'cpu': capsule, 'cuda': capsule}} of every op's XLA FFI handlers.");

  // check_<op>(descriptors..., device=-1): a descriptor is (dtype name, shape). With
  // device < 0, runs the C ABI's validation of these shapes and dtypes (raising its
  // ValueError / TypeError); with a CUDA ordinal, returns the op's workspace bytes there.
  m.def("check_gemv", [](nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle out,
                         const std::string& sf_layout) {
    const nvfp4_sf_layout_t layout = layout_arg(sf_layout);
    Shapes s("gemv", kNoDevice);
    auto ta = s.add(a, "a"), tsa = s.add(sfa, "sfa"), tb = s.add(b, "b"), tsb = s.add(sfb, "sfb"),
         to = s.add(out, "out");
    finish(nvfp4_gemv(ta, tsa, tb, tsb, nvfp4_scalar_t{1.0f, nullptr}, layout, to, nullptr), -1, nullptr);
  });

  m.def("check_gemm", [](nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle out,
                         const std::string& sf_layout, int device) {
    const nvfp4_sf_layout_t layout = layout_arg(sf_layout);
    Shapes s("gemm", check_device(device));
    auto ta = s.add(a, "a"), tsa = s.add(sfa, "sfa"), tb = s.add(b, "b"), tsb = s.add(sfb, "sfb"),
         to = s.add(out, "out");
    size_t bytes = 0;
    return finish(nvfp4_gemm_workspace_size(ta, tsa, tb, tsb, layout, to, nullptr, &bytes), device, &bytes);
  }, nb::arg("a"), nb::arg("sfa"), nb::arg("b"), nb::arg("sfb"), nb::arg("out"), nb::arg("sf_layout"),
     nb::arg("device") = -1);

  m.def("check_dual_gemm", [](nb::handle a, nb::handle sfa, nb::handle b1, nb::handle sfb1, nb::handle b2,
                              nb::handle sfb2, nb::handle out, const std::string& activation,
                              const std::string& sf_layout, int device) {
    nvfp4_activation_t act;
    if (!parse_activation(activation, &act))
      throw nb::value_error(("activation must be 'silu' or 'gelu_tanh', got '" + activation + "'").c_str());
    const nvfp4_sf_layout_t layout = layout_arg(sf_layout);
    Shapes s("dual_gemm", check_device(device));
    auto ta = s.add(a, "a"), tsa = s.add(sfa, "sfa"), tb1 = s.add(b1, "b1"), tsb1 = s.add(sfb1, "sfb1"),
         tb2 = s.add(b2, "b2"), tsb2 = s.add(sfb2, "sfb2"), to = s.add(out, "out");
    const nvfp4_scalar_t one{1.0f, nullptr};
    size_t bytes = 0;
    return finish(nvfp4_dual_gemm_workspace_size(ta, tsa, tb1, tsb1, tb2, tsb2, one, one, act, layout, to, nullptr,
                                                 &bytes),
                  device, &bytes);
  }, nb::arg("a"), nb::arg("sfa"), nb::arg("b1"), nb::arg("sfb1"), nb::arg("b2"), nb::arg("sfb2"), nb::arg("out"),
     nb::arg("activation"), nb::arg("sf_layout"), nb::arg("device") = -1);

  m.def("check_grouped_gemm", [](nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle out,
                                 const std::string& sf_layout, int device) {
    const nvfp4_sf_layout_t layout = layout_arg(sf_layout);
    Shapes s("grouped_gemm", check_device(device));
    auto ta = s.add_list(a, "a"), tsa = s.add_list(sfa, "sfa"), tb = s.add_list(b, "b"),
         tsb = s.add_list(sfb, "sfb"), to = s.add_list(out, "out");
    const size_t g = ta.size();
    if (tsa.size() != g || tb.size() != g || tsb.size() != g || to.size() != g)
      throw nb::value_error("grouped_gemm: a, sfa, b, sfb, out (and alphas if given) must have the same length");
    std::vector<nvfp4_scalar_t> alphas(g, nvfp4_scalar_t{1.0f, nullptr});
    size_t bytes = 0;
    return finish(nvfp4_grouped_gemm_workspace_size(static_cast<int32_t>(g), ta.data(), tsa.data(), tb.data(),
                                                    tsb.data(), alphas.data(), layout, to.data(), nullptr, &bytes),
                  device, &bytes);
  }, nb::arg("a"), nb::arg("sfa"), nb::arg("b"), nb::arg("sfb"), nb::arg("out"), nb::arg("sf_layout"),
     nb::arg("device") = -1);

  m.def("check_grouped_gemm_packed", [](nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb,
                                        nb::handle offsets, nb::handle alphas, nb::handle out, int device) {
    Shapes s("grouped_gemm_packed", check_device(device));
    auto ta = s.add(a, "a"), tsa = s.add(sfa, "sfa"), tb = s.add(b, "b"), tsb = s.add(sfb, "sfb"),
         toff = s.add(offsets, "offsets"), tal = s.add(alphas, "alphas"), to = s.add(out, "out");
    size_t bytes = 0;
    return finish(nvfp4_grouped_gemm_packed_workspace_size(ta, tsa, tb, tsb, toff, tal, to, nullptr, &bytes), device,
                  &bytes);
  }, nb::arg("a"), nb::arg("sfa"), nb::arg("b"), nb::arg("sfb"), nb::arg("offsets"), nb::arg("alphas").none(),
     nb::arg("out"), nb::arg("device") = -1);

  m.def("check_quantize", [](nb::handle x, nb::handle q, nb::handle sf, nb::handle global_scale,
                             const std::string& sf_layout, bool compute_global_scale) {
    const nvfp4_sf_layout_t layout = layout_arg(sf_layout);
    Shapes s("quantize", kNoDevice);
    auto tx = s.add(x, "x"), tq = s.add(q, "q"), tsf = s.add(sf, "sf"), tg = s.add(global_scale, "global_scale");
    finish(nvfp4_quantize(tx, tq, tsf, layout, tg, compute_global_scale ? 1 : 0, nullptr), -1, nullptr);
  });

  m.def("check_dequantize", [](nb::handle q, nb::handle sf, nb::handle out, const std::string& sf_layout) {
    const nvfp4_sf_layout_t layout = layout_arg(sf_layout);
    Shapes s("dequantize", kNoDevice);
    auto tq = s.add(q, "q"), tsf = s.add(sf, "sf"), to = s.add(out, "out");
    finish(nvfp4_dequantize(tq, tsf, layout, nvfp4_scalar_t{1.0f, nullptr}, to, nullptr), -1, nullptr);
  });

  m.def("check_swizzle_scales", [](nb::handle sf, nb::handle out) {
    Shapes s("swizzle_scales", kNoDevice);
    auto ts = s.add(sf, "sf"), to = s.add(out, "out");
    finish(nvfp4_swizzle_scales(ts, to, nullptr), -1, nullptr);
  });

  m.def("check_unswizzle_scales", [](nb::handle sf_blocked, nb::handle out) {
    Shapes s("unswizzle_scales", kNoDevice);
    auto ts = s.add(sf_blocked, "sf_blocked"), to = s.add(out, "out");
    finish(nvfp4_unswizzle_scales(ts, to, nullptr), -1, nullptr);
  });
}
