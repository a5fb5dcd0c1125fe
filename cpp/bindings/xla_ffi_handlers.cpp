// The XLA FFI handlers of every nvfp4 op (module nvfp4._nvfp4_xla, used by nvfp4.jax): one
// function per op that describes XLA's buffers and calls the C ABI, and the CPU and CUDA
// handler symbols bound to it. The module (xla_ffi_module.cpp) hands these symbols to
// Python for registration; the pieces every op shares are in xla_ffi_common.hpp.
//
// Each op has a CPU handler (host buffers -> the C ABI's float64 CPU backend) and a CUDA
// handler (XLA's stream and device ordinal -> the GPU backends). Like module.cpp, the
// handlers only describe XLA's buffers as nvfp4_tensor_t and call the C ABI, which
// validates everything; a failed status becomes an ffi::Error carrying
// nvfp4_last_error(). The Python layer (python/nvfp4/jax.py) infers output shapes and
// runs the same validation at trace time through the check_* functions of
// xla_ffi_module.cpp.
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
// Scratch (gemm, dual_gemm, grouped_gemm, grouped_gemm_packed on CUDA) is a trailing
// `workspace` result, attached by attach_workspace (xla_ffi_common.hpp, which tells how it
// is sized and what happens when it is too small). With the workspace a result, every
// CUDA handler is declared command-buffer compatible (the C ABI only enqueues work on
// the stream: no allocation, no synchronisation).
#include "xla_ffi_handlers.hpp"

#include <cuda_runtime_api.h>

#include <atomic>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nvfp4/nvfp4.h"
#include "xla_ffi_common.hpp"

using namespace nvfp4_xla;

namespace {

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

}  // namespace

// CUDA handler calls made while XLA was recording a command buffer (stream capture): what
// tells a test that the calls really run inside XLA's CUDA graphs. One cudaStreamIsCapturing
// per call (a query of the stream's state, no synchronization).
std::atomic<int64_t> nvfp4_xla::g_captured_calls{0};

namespace {

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
