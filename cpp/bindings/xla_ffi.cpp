// XLA FFI handlers of every nvfp4 op (module nvfp4._nvfp4_xla, used by nvfp4.jax).
//
// Each op has a CPU handler (host buffers -> the C ABI's float64 CPU backend) and a CUDA
// handler (XLA's stream and device ordinal -> the GPU backends). Like module.cpp, the
// handlers only describe XLA's buffers as nvfp4_tensor_t and call the C ABI, which
// validates everything; a failed status becomes an ffi::Error carrying
// nvfp4_last_error(). The Python layer (python/nvfp4/jax.py) infers output shapes and
// runs the same validation at trace time through the check_* functions below.
//
// Target names (one per op, registered for "cpu" and "CUDA"): nvfp4_<op>.
// Operands (args), results (rets) and attributes:
//   gemv / gemm          args a, sfa, b, sfb [, alpha]      rets out [, workspace]
//                        attrs sf_layout: str, alpha: f32, alpha_operand: bool, backend: str
//   dual_gemm            args a, sfa, b1, sfb1, b2, sfb2 [, alpha1] [, alpha2]
//                        rets out [, workspace]
//                        attrs sf_layout, activation: str, alpha1, alpha2: f32,
//                              alpha1_operand, alpha2_operand: bool, backend
//   grouped_gemm         args a_0..a_{G-1}, sfa_0.., b_0.., sfb_0.. [, alphas (G,) f32]
//                        rets out_0..out_{G-1} [, workspace]
//                        attrs groups: i32 (= G), alphas: f32[] (G values or empty = all 1),
//                              alphas_operand: bool, sf_layout, backend
//   grouped_gemm_packed  args a, sfa, b, sfb, offsets [, alphas]   rets out [, workspace]
//                        attrs alphas_operand: bool, backend
//   quantize             args x [, global_scale]   rets q, sf [, global_scale]
//                        attrs sf_layout, compute_global_scale: bool (the scale is then a
//                              result, else an operand), backend
//   dequantize           args q, sf [, global_scale]   rets out
//                        attrs sf_layout, global_scale: f32, gs_operand: bool, backend
//   swizzle_scales       args sf           rets out           attrs backend
//   unswizzle_scales     args sf_blocked   rets out           attrs backend
// A scalar given as an operand is a 1-element f32 buffer: read on the host by the CPU
// handlers, read at kernel time (device pointer) by the CUDA ones.
//
// Scratch (gemm, dual_gemm, grouped_gemm, grouped_gemm_packed on CUDA): the Python layer
// sizes a trailing uint8 `workspace` result at trace time with the C ABI's
// *_workspace_size query (for the first CUDA device; + 256 bytes, as the handler aligns
// the buffer to the 256 bytes the sm90a paths want); the handler queries again with the
// real buffers and, should that result be too small (traced for another kind of GPU),
// takes the difference from XLA's ScratchAllocator, else from the library's cached
// workspace (NVFP4_WORKSPACE_CACHED) -- except while the stream is being
// captured into a command buffer (a CUDA graph would keep an address XLA frees after the
// call), where it fails with a clear error instead. With the workspace a result, every
// CUDA handler is declared command-buffer compatible (the C ABI only enqueues work on
// the stream: no allocation, no synchronisation).
#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "nvfp4/nvfp4.h"
#include "status.hpp"
#include "xla/ffi/api/ffi.h"

namespace nb = nanobind;
namespace ffi = xla::ffi;

namespace {

// ===========================================================================
// Handlers
// ===========================================================================

// Where the buffers of one call live, and what the CUDA handlers get from XLA.
struct Env {
  nvfp4_device_type_t device_type = NVFP4_DEVICE_CPU;
  int32_t device_id = 0;
  nvfp4_stream_t stream = nullptr;
  ffi::ScratchAllocator* scratch = nullptr;
  bool cuda() const { return device_type == NVFP4_DEVICE_CUDA; }
};

ffi::Error status_error(nvfp4_status_t st) {
  ffi::ErrorCode code = ffi::ErrorCode::kInternal;
  if (st == NVFP4_ERROR_INVALID_VALUE || st == NVFP4_ERROR_INVALID_TYPE) code = ffi::ErrorCode::kInvalidArgument;
  else if (st == NVFP4_ERROR_NOT_SUPPORTED) code = ffi::ErrorCode::kUnimplemented;
  return ffi::Error(code, std::string("nvfp4: ") + nvfp4_last_error());
}

ffi::Error check(nvfp4_status_t st) { return st == NVFP4_SUCCESS ? ffi::Error::Success() : status_error(st); }

ffi::Error invalid(const std::string& msg) { return ffi::Error::InvalidArgument("nvfp4: " + msg); }

#define NVFP4_FFI_TRY(expr)                     \
  do {                                          \
    ffi::Error err_ = (expr);                   \
    if (err_.failure()) return err_;            \
  } while (0)

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

// The sm90a paths want a 256-byte aligned workspace; XLA guarantees less, so the
// `workspace` result is kWorkspaceAlign bytes larger than the query's and aligned here.
constexpr size_t kWorkspaceAlign = 256;

// Points exec at scratch for the bytes `query` reports: the `workspace` result when it
// is large enough, else XLA's scratch allocator or the library's cached workspace (never
// while capturing a command buffer).
template <class Query>
ffi::Error attach_workspace(const Env& env, std::optional<ffi::AnyBuffer> ws, Query&& query, nvfp4_exec_t* exec) {
  if (!env.cuda()) return ffi::Error::Success();  // the CPU backend needs none
  if (ws && ws->untyped_data()) {  // XLA aligns buffers to less than the 256 bytes asked for
    const uintptr_t p = reinterpret_cast<uintptr_t>(ws->untyped_data());
    const uintptr_t aligned = (p + kWorkspaceAlign - 1) & ~uintptr_t(kWorkspaceAlign - 1);
    const size_t skip = static_cast<size_t>(aligned - p);
    exec->workspace = reinterpret_cast<void*>(aligned);
    exec->workspace_bytes = ws->size_bytes() > skip ? ws->size_bytes() - skip : 0;
  }
  size_t need = 0;
  NVFP4_FFI_TRY(check(query(exec, &need)));
  if (need <= exec->workspace_bytes) return ffi::Error::Success();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(env.stream), &capture) != cudaSuccess) {
    (void)cudaGetLastError();
    capture = cudaStreamCaptureStatusActive;  // unknown: do not allocate
  }
  if (capture != cudaStreamCaptureStatusNone)
    return ffi::Error(ffi::ErrorCode::kFailedPrecondition,
                      "nvfp4: this op needs " + std::to_string(need) + " bytes of workspace on CUDA device " +
                          std::to_string(env.device_id) + " but was traced with " +
                          std::to_string(exec->workspace_bytes) +
                          " (sized for another GPU), and scratch cannot be allocated while XLA captures a "
                          "command buffer; trace on this device or disable command buffers for custom calls");
  if (env.scratch) {
    auto p = env.scratch->Allocate(need, kWorkspaceAlign);
    if (p.has_value()) {
      exec->workspace = *p;
      exec->workspace_bytes = need;
      return ffi::Error::Success();
    }
  }
  // XLA gave no scratch (its allocator is not always available to custom calls): the
  // library's own cached workspace on XLA's stream (nvfp4.h, NVFP4_WORKSPACE_CACHED).
  exec->workspace = nullptr;
  exec->workspace_bytes = 0;
  exec->workspace_mode = NVFP4_WORKSPACE_CACHED;
  return ffi::Error::Success();
}

// ---- ops ------------------------------------------------------------------

// The operands, alpha, layout and exec of a gemv or gemm call.
struct GemmArgs {
  nvfp4_tensor_t a, sfa, b, sfb, out;
  nvfp4_scalar_t alpha;
  nvfp4_sf_layout_t layout;
  nvfp4_exec_t exec;
};

ffi::Error gemm_args(Env& env, ffi::AnyBuffer a, ffi::AnyBuffer sfa, ffi::AnyBuffer b, ffi::AnyBuffer sfb,
                     ffi::RemainingArgs extra, ffi::Result<ffi::AnyBuffer> out, std::string_view sf_layout,
                     float alpha, bool alpha_operand, std::string_view backend, GemmArgs* g) {
  NVFP4_FFI_TRY(to_tensor(env, a, "a", &g->a));
  NVFP4_FFI_TRY(to_tensor(env, sfa, "sfa", &g->sfa));
  NVFP4_FFI_TRY(to_tensor(env, b, "b", &g->b));
  NVFP4_FFI_TRY(to_tensor(env, sfb, "sfb", &g->sfb));
  NVFP4_FFI_TRY(to_tensor(env, *out, "out", &g->out));
  size_t next = 0;
  NVFP4_FFI_TRY(scalar(env, alpha, alpha_operand, extra, &next, "alpha", &g->alpha));
  NVFP4_FFI_TRY(layout_attr(sf_layout, &g->layout));
  return make_exec(env, backend, &g->exec);
}

ffi::Error gemv_impl(Env& env, ffi::AnyBuffer a, ffi::AnyBuffer sfa, ffi::AnyBuffer b, ffi::AnyBuffer sfb,
                     ffi::RemainingArgs extra, ffi::Result<ffi::AnyBuffer> out, ffi::RemainingRets /*unused*/,
                     std::string_view sf_layout, float alpha, bool alpha_operand, std::string_view backend) {
  GemmArgs g;
  NVFP4_FFI_TRY(gemm_args(env, a, sfa, b, sfb, extra, out, sf_layout, alpha, alpha_operand, backend, &g));
  return check(nvfp4_gemv(&g.a, &g.sfa, &g.b, &g.sfb, g.alpha, g.layout, &g.out, &g.exec));
}

ffi::Error gemm_impl(Env& env, ffi::AnyBuffer a, ffi::AnyBuffer sfa, ffi::AnyBuffer b, ffi::AnyBuffer sfb,
                     ffi::RemainingArgs extra, ffi::Result<ffi::AnyBuffer> out, ffi::RemainingRets ws,
                     std::string_view sf_layout, float alpha, bool alpha_operand, std::string_view backend) {
  GemmArgs g;
  NVFP4_FFI_TRY(gemm_args(env, a, sfa, b, sfb, extra, out, sf_layout, alpha, alpha_operand, backend, &g));
  NVFP4_FFI_TRY(attach_workspace(env, optional_ret(ws, 0), [&](const nvfp4_exec_t* e, size_t* bytes) {
    return nvfp4_gemm_workspace_size(&g.a, &g.sfa, &g.b, &g.sfb, g.layout, &g.out, e, bytes);
  }, &g.exec));
  return check(nvfp4_gemm(&g.a, &g.sfa, &g.b, &g.sfb, g.alpha, g.layout, &g.out, &g.exec));
}

ffi::Error dual_gemm_impl(Env& env, ffi::AnyBuffer a, ffi::AnyBuffer sfa, ffi::AnyBuffer b1, ffi::AnyBuffer sfb1,
                          ffi::AnyBuffer b2, ffi::AnyBuffer sfb2, ffi::RemainingArgs extra,
                          ffi::Result<ffi::AnyBuffer> out, ffi::RemainingRets ws, std::string_view sf_layout,
                          std::string_view activation, float alpha1, float alpha2, bool alpha1_operand,
                          bool alpha2_operand, std::string_view backend) {
  nvfp4_tensor_t ta, tsa, tb1, tsb1, tb2, tsb2, to;
  NVFP4_FFI_TRY(to_tensor(env, a, "a", &ta));
  NVFP4_FFI_TRY(to_tensor(env, sfa, "sfa", &tsa));
  NVFP4_FFI_TRY(to_tensor(env, b1, "b1", &tb1));
  NVFP4_FFI_TRY(to_tensor(env, sfb1, "sfb1", &tsb1));
  NVFP4_FFI_TRY(to_tensor(env, b2, "b2", &tb2));
  NVFP4_FFI_TRY(to_tensor(env, sfb2, "sfb2", &tsb2));
  NVFP4_FFI_TRY(to_tensor(env, *out, "out", &to));
  size_t next = 0;
  nvfp4_scalar_t s1, s2;
  NVFP4_FFI_TRY(scalar(env, alpha1, alpha1_operand, extra, &next, "alpha1", &s1));
  NVFP4_FFI_TRY(scalar(env, alpha2, alpha2_operand, extra, &next, "alpha2", &s2));
  nvfp4_sf_layout_t layout;
  NVFP4_FFI_TRY(layout_attr(sf_layout, &layout));
  nvfp4_activation_t act;
  if (!parse_activation(activation, &act))
    return invalid("activation must be 'silu' or 'gelu_tanh', got '" + std::string(activation) + "'");
  nvfp4_exec_t exec;
  NVFP4_FFI_TRY(make_exec(env, backend, &exec));
  NVFP4_FFI_TRY(attach_workspace(env, optional_ret(ws, 0), [&](const nvfp4_exec_t* e, size_t* bytes) {
    return nvfp4_dual_gemm_workspace_size(&ta, &tsa, &tb1, &tsb1, &tb2, &tsb2, s1, s2, act, layout, &to, e, bytes);
  }, &exec));
  return check(nvfp4_dual_gemm(&ta, &tsa, &tb1, &tsb1, &tb2, &tsb2, s1, s2, act, layout, &to, &exec));
}

// Operands a_0..a_{G-1}, sfa_0.., b_0.., sfb_0.. [, alphas]; results out_0.. [, workspace].
ffi::Error grouped_gemm_impl(Env& env, ffi::RemainingArgs args, ffi::RemainingRets rets, int32_t groups,
                             ffi::Span<const float> alphas, bool alphas_operand, std::string_view sf_layout,
                             std::string_view backend) {
  if (groups < 0) return invalid("grouped_gemm: groups must be >= 0, got " + std::to_string(groups));
  const size_t g = static_cast<size_t>(groups);
  if (args.size() != 4 * g + (alphas_operand ? 1 : 0) || rets.size() < g)
    return invalid("grouped_gemm: expected 4*groups operands (+ alphas) and groups results, got " +
                   std::to_string(args.size()) + " and " + std::to_string(rets.size()) + " for " +
                   std::to_string(g) + " groups");
  if (alphas.size() != 0 && alphas.size() != g)
    return invalid("grouped_gemm: " + std::to_string(alphas.size()) + " alphas for " + std::to_string(g) + " groups");
  std::vector<nvfp4_tensor_t> ta(g), tsa(g), tb(g), tsb(g), to(g);
  static const char* const kNames[4] = {"a", "sfa", "b", "sfb"};
  for (size_t i = 0; i < g; ++i) {
    nvfp4_tensor_t* dst[4] = {&ta[i], &tsa[i], &tb[i], &tsb[i]};
    for (size_t k = 0; k < 4; ++k) {
      auto buf = args.get<ffi::AnyBuffer>(k * g + i);
      if (buf.has_error()) return invalid(std::string("grouped_gemm: operand ") + kNames[k] + ": " + buf.error().message());
      NVFP4_FFI_TRY(to_tensor(env, *buf, kNames[k], dst[k]));
    }
    auto o = rets.get<ffi::AnyBuffer>(i);
    if (o.has_error()) return invalid("grouped_gemm: result out: " + o.error().message());
    NVFP4_FFI_TRY(to_tensor(env, **o, "out", &to[i]));
  }
  std::vector<nvfp4_scalar_t> s(g, nvfp4_scalar_t{1.0f, nullptr});
  for (size_t i = 0; i < alphas.size(); ++i) s[i].value = alphas[i];
  if (alphas_operand) {
    auto buf = args.get<ffi::AnyBuffer>(4 * g);
    if (buf.has_error()) return invalid("grouped_gemm: operand alphas: " + buf.error().message());
    if (buf->element_type() != ffi::DataType::F32 || buf->element_count() != g)
      return invalid("grouped_gemm: argument 'alphas': an array must be float32 with one value per group");
    const float* p = static_cast<const float*>(buf->untyped_data());
    for (size_t i = 0; i < g; ++i) {
      if (env.cuda()) s[i].device_ptr = p + i;
      else s[i].value = p[i];
    }
  }
  nvfp4_sf_layout_t layout;
  NVFP4_FFI_TRY(layout_attr(sf_layout, &layout));
  nvfp4_exec_t exec;
  NVFP4_FFI_TRY(make_exec(env, backend, &exec));
  NVFP4_FFI_TRY(attach_workspace(env, optional_ret(rets, g), [&](const nvfp4_exec_t* e, size_t* bytes) {
    return nvfp4_grouped_gemm_workspace_size(groups, ta.data(), tsa.data(), tb.data(), tsb.data(), s.data(), layout,
                                             to.data(), e, bytes);
  }, &exec));
  return check(nvfp4_grouped_gemm(groups, ta.data(), tsa.data(), tb.data(), tsb.data(), s.data(), layout, to.data(),
                                  &exec));
}

ffi::Error grouped_gemm_packed_impl(Env& env, ffi::AnyBuffer a, ffi::AnyBuffer sfa, ffi::AnyBuffer b,
                                    ffi::AnyBuffer sfb, ffi::AnyBuffer offsets, ffi::RemainingArgs extra,
                                    ffi::Result<ffi::AnyBuffer> out, ffi::RemainingRets ws, bool alphas_operand,
                                    std::string_view backend) {
  nvfp4_tensor_t ta, tsa, tb, tsb, toff, tal, to;
  NVFP4_FFI_TRY(to_tensor(env, a, "a", &ta));
  NVFP4_FFI_TRY(to_tensor(env, sfa, "sfa", &tsa));
  NVFP4_FFI_TRY(to_tensor(env, b, "b", &tb));
  NVFP4_FFI_TRY(to_tensor(env, sfb, "sfb", &tsb));
  NVFP4_FFI_TRY(to_tensor(env, offsets, "offsets", &toff));
  NVFP4_FFI_TRY(to_tensor(env, *out, "out", &to));
  if (alphas_operand) {
    auto buf = extra.get<ffi::AnyBuffer>(0);
    if (buf.has_error()) return invalid("grouped_gemm_packed: operand alphas: " + buf.error().message());
    NVFP4_FFI_TRY(to_tensor(env, *buf, "alphas", &tal));
  }
  const nvfp4_tensor_t* alphas = alphas_operand ? &tal : nullptr;
  nvfp4_exec_t exec;
  NVFP4_FFI_TRY(make_exec(env, backend, &exec));
  NVFP4_FFI_TRY(attach_workspace(env, optional_ret(ws, 0), [&](const nvfp4_exec_t* e, size_t* bytes) {
    return nvfp4_grouped_gemm_packed_workspace_size(&ta, &tsa, &tb, &tsb, &toff, alphas, &to, e, bytes);
  }, &exec));
  return check(nvfp4_grouped_gemm_packed(&ta, &tsa, &tb, &tsb, &toff, alphas, &to, &exec));
}

// rets q, sf [, global_scale when computed]; args x [, global_scale when given].
ffi::Error quantize_impl(Env& env, ffi::AnyBuffer x, ffi::RemainingArgs extra, ffi::Result<ffi::AnyBuffer> q,
                         ffi::Result<ffi::AnyBuffer> sf, ffi::RemainingRets rest, std::string_view sf_layout,
                         bool compute_global_scale, std::string_view backend) {
  nvfp4_tensor_t tx, tq, tsf, tg;
  NVFP4_FFI_TRY(to_tensor(env, x, "x", &tx));
  NVFP4_FFI_TRY(to_tensor(env, *q, "q", &tq));
  NVFP4_FFI_TRY(to_tensor(env, *sf, "sf", &tsf));
  if (compute_global_scale) {
    auto g = optional_ret(rest, 0);
    if (!g) return invalid("quantize: the computed global_scale result is missing");
    NVFP4_FFI_TRY(to_tensor(env, *g, "global_scale", &tg));
  } else {
    auto g = extra.get<ffi::AnyBuffer>(0);
    if (g.has_error()) return invalid("quantize: operand global_scale: " + g.error().message());
    NVFP4_FFI_TRY(to_tensor(env, *g, "global_scale", &tg));
  }
  nvfp4_sf_layout_t layout;
  NVFP4_FFI_TRY(layout_attr(sf_layout, &layout));
  nvfp4_exec_t exec;
  NVFP4_FFI_TRY(make_exec(env, backend, &exec));
  return check(nvfp4_quantize(&tx, &tq, &tsf, layout, &tg, compute_global_scale ? 1 : 0, &exec));
}

ffi::Error dequantize_impl(Env& env, ffi::AnyBuffer q, ffi::AnyBuffer sf, ffi::RemainingArgs extra,
                           ffi::Result<ffi::AnyBuffer> out, std::string_view sf_layout, float global_scale,
                           bool gs_operand, std::string_view backend) {
  nvfp4_tensor_t tq, tsf, to;
  NVFP4_FFI_TRY(to_tensor(env, q, "q", &tq));
  NVFP4_FFI_TRY(to_tensor(env, sf, "sf", &tsf));
  NVFP4_FFI_TRY(to_tensor(env, *out, "out", &to));
  size_t next = 0;
  nvfp4_scalar_t s;
  NVFP4_FFI_TRY(scalar(env, global_scale, gs_operand, extra, &next, "global_scale", &s));
  nvfp4_sf_layout_t layout;
  NVFP4_FFI_TRY(layout_attr(sf_layout, &layout));
  nvfp4_exec_t exec;
  NVFP4_FFI_TRY(make_exec(env, backend, &exec));
  return check(nvfp4_dequantize(&tq, &tsf, layout, s, &to, &exec));
}

ffi::Error swizzle_scales_impl(Env& env, ffi::AnyBuffer sf, ffi::Result<ffi::AnyBuffer> out,
                               std::string_view backend) {
  nvfp4_tensor_t ts, to;
  NVFP4_FFI_TRY(to_tensor(env, sf, "sf", &ts));
  NVFP4_FFI_TRY(to_tensor(env, *out, "out", &to));
  nvfp4_exec_t exec;
  NVFP4_FFI_TRY(make_exec(env, backend, &exec));
  return check(nvfp4_swizzle_scales(&ts, &to, &exec));
}

ffi::Error unswizzle_scales_impl(Env& env, ffi::AnyBuffer sf_blocked, ffi::Result<ffi::AnyBuffer> out,
                                 std::string_view backend) {
  nvfp4_tensor_t ts, to;
  NVFP4_FFI_TRY(to_tensor(env, sf_blocked, "sf_blocked", &ts));
  NVFP4_FFI_TRY(to_tensor(env, *out, "out", &to));
  nvfp4_exec_t exec;
  NVFP4_FFI_TRY(make_exec(env, backend, &exec));
  return check(nvfp4_unswizzle_scales(&ts, &to, &exec));
}

// ---- bindings: one CPU and one CUDA handler per op --------------------------

// Adapters from XLA's decoded arguments to the op implementations above.
template <auto Impl>
struct OnCpu {
  template <class... Args>
  ffi::Error operator()(Args... args) const {
    Env env;
    return Impl(env, std::move(args)...);
  }
};

// CUDA handler calls made while XLA was recording a command buffer (stream capture): what
// tells a test that the calls really run inside XLA's CUDA graphs. One cudaStreamIsCapturing
// per call (a query of the stream's state, no synchronization).
std::atomic<int64_t> g_captured_calls{0};

template <auto Impl>
struct OnCuda {
  template <class... Args>
  ffi::Error operator()(nvfp4_stream_t stream, int32_t device, ffi::ScratchAllocator scratch, Args... args) const {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(stream), &capture) != cudaSuccess)
      (void)cudaGetLastError();
    else if (capture == cudaStreamCaptureStatusActive)
      g_captured_calls.fetch_add(1, std::memory_order_relaxed);
    Env env;
    env.device_type = NVFP4_DEVICE_CUDA;
    env.device_id = device;
    env.stream = stream;
    env.scratch = &scratch;
    return Impl(env, std::move(args)...);
  }
};

}  // namespace

#define NVFP4_CPU ffi::Ffi::Bind()
#define NVFP4_CUDA                                        \
  ffi::Ffi::Bind()                                        \
      .Ctx<ffi::PlatformStream<nvfp4_stream_t>>()         \
      .Ctx<ffi::DeviceOrdinal>()                          \
      .Ctx<ffi::ScratchAllocator>()
#define NVFP4_ARG Arg<ffi::AnyBuffer>()
#define NVFP4_RET Ret<ffi::AnyBuffer>()
#define NVFP4_STR(name) Attr<std::string_view>(name)

#define NVFP4_FFI_GEMV_SIG(B)                                                                             \
  B.NVFP4_ARG.NVFP4_ARG.NVFP4_ARG.NVFP4_ARG.RemainingArgs().NVFP4_RET.RemainingRets()                 \
      .NVFP4_STR("sf_layout").Attr<float>("alpha").Attr<bool>("alpha_operand").NVFP4_STR("backend")
#define NVFP4_DUAL_SIG(B)                                                                              \
  B.NVFP4_ARG.NVFP4_ARG.NVFP4_ARG.NVFP4_ARG.NVFP4_ARG.NVFP4_ARG.RemainingArgs().NVFP4_RET.RemainingRets() \
      .NVFP4_STR("sf_layout").NVFP4_STR("activation").Attr<float>("alpha1").Attr<float>("alpha2")       \
      .Attr<bool>("alpha1_operand").Attr<bool>("alpha2_operand").NVFP4_STR("backend")
#define NVFP4_GROUPED_SIG(B)                                                                        \
  B.RemainingArgs().RemainingRets().Attr<int32_t>("groups").Attr<ffi::Span<const float>>("alphas")  \
      .Attr<bool>("alphas_operand").NVFP4_STR("sf_layout").NVFP4_STR("backend")
#define NVFP4_PACKED_SIG(B)                                                                           \
  B.NVFP4_ARG.NVFP4_ARG.NVFP4_ARG.NVFP4_ARG.NVFP4_ARG.RemainingArgs().NVFP4_RET.RemainingRets()       \
      .Attr<bool>("alphas_operand").NVFP4_STR("backend")
#define NVFP4_QUANTIZE_SIG(B)                                                                    \
  B.NVFP4_ARG.RemainingArgs().NVFP4_RET.NVFP4_RET.RemainingRets().NVFP4_STR("sf_layout")         \
      .Attr<bool>("compute_global_scale").NVFP4_STR("backend")
#define NVFP4_DEQUANTIZE_SIG(B)                                                                   \
  B.NVFP4_ARG.NVFP4_ARG.RemainingArgs().NVFP4_RET.NVFP4_STR("sf_layout").Attr<float>("global_scale") \
      .Attr<bool>("gs_operand").NVFP4_STR("backend")
#define NVFP4_SWIZZLE_SIG(B) B.NVFP4_ARG.NVFP4_RET.NVFP4_STR("backend")

#define NVFP4_DEFINE_HANDLERS(op, SIG)                                                        \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(nvfp4_xla_##op##_cpu, OnCpu<&op##_impl>{}, SIG(NVFP4_CPU)); \
  XLA_FFI_DEFINE_HANDLER_SYMBOL(nvfp4_xla_##op##_cuda, OnCuda<&op##_impl>{}, SIG(NVFP4_CUDA), \
                                {ffi::Traits::kCmdBufferCompatible});

NVFP4_DEFINE_HANDLERS(gemv, NVFP4_FFI_GEMV_SIG)
NVFP4_DEFINE_HANDLERS(gemm, NVFP4_FFI_GEMV_SIG)
NVFP4_DEFINE_HANDLERS(dual_gemm, NVFP4_DUAL_SIG)
NVFP4_DEFINE_HANDLERS(grouped_gemm, NVFP4_GROUPED_SIG)
NVFP4_DEFINE_HANDLERS(grouped_gemm_packed, NVFP4_PACKED_SIG)
NVFP4_DEFINE_HANDLERS(quantize, NVFP4_QUANTIZE_SIG)
NVFP4_DEFINE_HANDLERS(dequantize, NVFP4_DEQUANTIZE_SIG)
NVFP4_DEFINE_HANDLERS(swizzle_scales, NVFP4_SWIZZLE_SIG)
NVFP4_DEFINE_HANDLERS(unswizzle_scales, NVFP4_SWIZZLE_SIG)

// ===========================================================================
// Python module: handler capsules and trace-time checks
// ===========================================================================
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

int64_t dtype_bytes(nvfp4_dtype_t d) {
  switch (d) {
    case NVFP4_DTYPE_FLOAT16:
    case NVFP4_DTYPE_BFLOAT16: return 2;
    case NVFP4_DTYPE_FLOAT32:
    case NVFP4_DTYPE_INT32: return 4;
    case NVFP4_DTYPE_FLOAT64: return 8;
    default: return 1;
  }
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
    const uint64_t bytes = static_cast<uint64_t>(stride) * static_cast<uint64_t>(dtype_bytes(x.dtype));
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
  m.def("captured_calls", [] { return g_captured_calls.load(std::memory_order_relaxed); },
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
