// The C ABI: validates every argument once, builds a Problem (problem.hpp) and
// dispatches it to the CPU backend (host operands) or the device's backend chain.
// Nothing is written to any output when validation fails.
// The shared checks (Call, operand views) live in validate.hpp / validate.cpp; this file
// holds the entry points and each op's own checks.
#include <cuda_runtime_api.h>

#include <string.h>

#include <string>
#include <vector>

#include "common/formats.h"
#include "dispatch.hpp"
#include "nvfp4_build_info.h"
#include "validate.hpp"

namespace nvfp4 {
void clear_error();
}  // namespace nvfp4

// ===========================================================================
// C ABI
// ===========================================================================
using namespace nvfp4;
using namespace nvfp4::validate;

extern "C" {

const char* nvfp4_version(void) { return NVFP4_VERSION_STRING; }
const char* nvfp4_build_archs(void) { return NVFP4_BUILD_ARCHS; }

const char* nvfp4_backend_name(nvfp4_backend_t backend) {
  switch (backend) {
    case NVFP4_BACKEND_AUTO: return "auto";
    case NVFP4_BACKEND_CPU: return "cpu";
    case NVFP4_BACKEND_PORTABLE: return "portable";
    case NVFP4_BACKEND_SM90A: return "sm90a";
    case NVFP4_BACKEND_SM100A: return "sm100a";
  }
  return "unknown";
}

int32_t nvfp4_device_count(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver / no device: not an error for a query
    return 0;
  }
  return count;
}

nvfp4_status_t nvfp4_device_info(int32_t device_id, nvfp4_device_info_t* info) {
  clear_error();
  if (!info) return fail(NVFP4_ERROR_INVALID_VALUE, "device_info: argument 'info' is NULL");
  const DeviceProps* p = nullptr;
  TRY(device_props(device_id, &p));
  info->device_id = device_id;
  info->cc_major = p->cc_major;
  info->cc_minor = p->cc_minor;
  info->multiprocessors = p->sm_count;
  info->total_memory_bytes = p->total_memory;
  memcpy(info->name, p->name, sizeof(info->name));
  info->backend = preferred_backend(p->cc_major, p->cc_minor);
  return NVFP4_SUCCESS;
}

nvfp4_backend_t nvfp4_last_backend(void) { return last_backend(); }

nvfp4_status_t nvfp4_stream_synchronize(nvfp4_stream_t stream) {
  clear_error();
  const cudaError_t err = cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream));
  if (err != cudaSuccess)
    return fail(NVFP4_ERROR_CUDA, "cudaStreamSynchronize: %s", cudaGetErrorString(err));
  return NVFP4_SUCCESS;
}

int64_t nvfp4_blocked_scale_bytes(int64_t rows, int64_t k) { return blocked_sf_bytes(rows, k); }
int64_t nvfp4_blocked_scale_offset(int64_t row, int64_t col, int64_t k) { return blocked_sf_offset(row, col, k); }

nvfp4_status_t nvfp4_gemv(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa, const nvfp4_tensor_t* b,
                          const nvfp4_tensor_t* sfb, nvfp4_scalar_t alpha, nvfp4_sf_layout_t sf_layout,
                          const nvfp4_tensor_t* out, const nvfp4_exec_t* exec) {
  clear_error();
  Call c("gemv");
  GemmProblem p;
  TRY(build_gemm(c, true, a, sfa, b, sfb, alpha, sf_layout, out, &p));
  if (empty_gemm(p)) return c.check_aliasing();
  return c.dispatch(&BackendOps::gemv, p, exec);
}

// The op, or with `query` its workspace query (same validation and messages).
static nvfp4_status_t gemm_or_query(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa, const nvfp4_tensor_t* b,
                                    const nvfp4_tensor_t* sfb, nvfp4_scalar_t alpha, nvfp4_sf_layout_t sf_layout,
                                    const nvfp4_tensor_t* out, const nvfp4_exec_t* exec, size_t* query) {
  Call c("gemm");
  GemmProblem p;
  TRY(build_gemm(c, false, a, sfa, b, sfb, alpha, sf_layout, out, &p));
  if (empty_gemm(p)) return c.check_aliasing();
  return c.run(&BackendOps::gemm, &BackendOps::gemm_workspace, p, exec, query);
}

// Workspace queries: `bytes` must be given; it is 0 unless the query succeeds.
static nvfp4_status_t start_query(const char* name, size_t* bytes) {
  clear_error();
  if (!bytes) return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument 'bytes' is NULL", name);
  *bytes = 0;
  return NVFP4_SUCCESS;
}

nvfp4_status_t nvfp4_gemm(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa, const nvfp4_tensor_t* b,
                          const nvfp4_tensor_t* sfb, nvfp4_scalar_t alpha, nvfp4_sf_layout_t sf_layout,
                          const nvfp4_tensor_t* out, const nvfp4_exec_t* exec) {
  clear_error();
  return gemm_or_query(a, sfa, b, sfb, alpha, sf_layout, out, exec, nullptr);
}

nvfp4_status_t nvfp4_gemm_workspace_size(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                         const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb,
                                         nvfp4_sf_layout_t sf_layout, const nvfp4_tensor_t* out,
                                         const nvfp4_exec_t* exec, size_t* bytes) {
  TRY(start_query("gemm_workspace_size", bytes));
  return gemm_or_query(a, sfa, b, sfb, nvfp4_scalar_t{1.0f, nullptr}, sf_layout, out, exec, bytes);
}

static nvfp4_status_t build_dual(Call& c, const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                 const nvfp4_tensor_t* b1, const nvfp4_tensor_t* sfb1, const nvfp4_tensor_t* b2,
                                 const nvfp4_tensor_t* sfb2, nvfp4_scalar_t alpha1, nvfp4_scalar_t alpha2,
                                 nvfp4_activation_t activation, nvfp4_sf_layout_t sf_layout,
                                 const nvfp4_tensor_t* out, DualGemmProblem& p) {
  Fp4View va, v1, v2;
  TRY(fp4_view(c, "a", a, false, &va));
  TRY(fp4_view(c, "b1", b1, false, &v1));
  TRY(fp4_view(c, "b2", b2, false, &v2));
  TRY(same_k(c, "a", va, "b1", v1));
  TRY(same_k(c, "a", va, "b2", v2));
  TRY(same_batch(c, "a", va, "b1", v1));
  TRY(same_batch(c, "a", va, "b2", v2));
  if (v1.rows != v2.rows)
    return fail(NVFP4_ERROR_INVALID_VALUE, "dual_gemm: b1 has N=%lld rows but b2 has %lld; they must match",
                static_cast<long long>(v1.rows), static_cast<long long>(v2.rows));
  TRY(scale_view(c, "sfa", sfa, sf_layout, va, false, &p.sfa));
  TRY(scale_view(c, "sfb1", sfb1, sf_layout, v1, false, &p.sfb1));
  TRY(scale_view(c, "sfb2", sfb2, sf_layout, v2, false, &p.sfb2));
  TRY(scalar_check(c, "alpha1", alpha1, &p.alpha1));
  TRY(scalar_check(c, "alpha2", alpha2, &p.alpha2));
  if (activation != NVFP4_ACT_SILU && activation != NVFP4_ACT_GELU_TANH)
    return fail(NVFP4_ERROR_INVALID_VALUE, "dual_gemm: activation must be silu or gelu_tanh, got %d",
                static_cast<int>(activation));
  p.activation = activation;
  p.L = va.L; p.M = va.rows; p.N = v1.rows; p.K = va.K;
  p.a = va.op; p.b1 = v1.op; p.b2 = v2.op;
  OutDims dims;
  if (va.batched) dims.push(va.L);
  dims.push(p.M);
  dims.push(p.N);
  TRY(out_view(c, "out", out, dims, &p.c));
  fill_out_strides(out, va.batched, true, &p.c);
  return NVFP4_SUCCESS;
}

#define NVFP4_DUAL_PARAMS                                                                                     \
  const nvfp4_tensor_t *a, const nvfp4_tensor_t *sfa, const nvfp4_tensor_t *b1, const nvfp4_tensor_t *sfb1, \
      const nvfp4_tensor_t *b2, const nvfp4_tensor_t *sfb2, nvfp4_scalar_t alpha1, nvfp4_scalar_t alpha2,    \
      nvfp4_activation_t activation, nvfp4_sf_layout_t sf_layout, const nvfp4_tensor_t *out,                \
      const nvfp4_exec_t *exec
#define NVFP4_DUAL_ARGS a, sfa, b1, sfb1, b2, sfb2, alpha1, alpha2, activation, sf_layout, out

static nvfp4_status_t dual_or_query(NVFP4_DUAL_PARAMS, size_t* query) {
  Call c("dual_gemm");
  DualGemmProblem p;
  TRY(build_dual(c, NVFP4_DUAL_ARGS, p));
  if (p.L == 0 || p.M == 0 || p.N == 0) return c.check_aliasing();
  return c.run(&BackendOps::dual_gemm, &BackendOps::dual_gemm_workspace, p, exec, query);
}

nvfp4_status_t nvfp4_dual_gemm(NVFP4_DUAL_PARAMS) {
  clear_error();
  return dual_or_query(NVFP4_DUAL_ARGS, exec, nullptr);
}

nvfp4_status_t nvfp4_dual_gemm_workspace_size(NVFP4_DUAL_PARAMS, size_t* bytes) {
  TRY(start_query("dual_gemm_workspace_size", bytes));
  return dual_or_query(NVFP4_DUAL_ARGS, exec, bytes);
}
#undef NVFP4_DUAL_PARAMS
#undef NVFP4_DUAL_ARGS

// The non-empty groups go to `groups`.
static nvfp4_status_t build_grouped(Call& c, int32_t count, const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                    const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb,
                                    const nvfp4_scalar_t* alphas, nvfp4_sf_layout_t sf_layout,
                                    const nvfp4_tensor_t* out, std::vector<GemmProblem>& groups) {
  if (count < 0) return fail(NVFP4_ERROR_INVALID_VALUE, "grouped_gemm: count must be >= 0, got %d", count);
  if (count == 0) return NVFP4_SUCCESS;
  if (!a || !sfa || !b || !sfb || !out)
    return fail(NVFP4_ERROR_INVALID_VALUE, "grouped_gemm: the a, sfa, b, sfb and out arrays are required");
  groups.reserve(count);
  for (int32_t g = 0; g < count; ++g) {
    c.set_group(g);
    GemmProblem p;
    const nvfp4_scalar_t alpha = alphas ? alphas[g] : nvfp4_scalar_t{1.0f, nullptr};
    TRY(build_gemm(c, false, &a[g], &sfa[g], &b[g], &sfb[g], alpha, sf_layout, &out[g], &p));
    if (a[g].ndim != 2 || out[g].ndim != 2)
      return fail(NVFP4_ERROR_INVALID_VALUE, "%s: operands must be 2-D (no batch dim)", c.op());
    if (!empty_gemm(p)) groups.push_back(p);
  }
  c.set_group(-1);
  return NVFP4_SUCCESS;
}

#define NVFP4_GROUPED_PARAMS                                                                                     \
  int32_t count, const nvfp4_tensor_t *a, const nvfp4_tensor_t *sfa, const nvfp4_tensor_t *b,                  \
      const nvfp4_tensor_t *sfb, const nvfp4_scalar_t *alphas, nvfp4_sf_layout_t sf_layout,                    \
      const nvfp4_tensor_t *out, const nvfp4_exec_t *exec
#define NVFP4_GROUPED_ARGS count, a, sfa, b, sfb, alphas, sf_layout, out

static nvfp4_status_t grouped_or_query(NVFP4_GROUPED_PARAMS, size_t* query) {
  Call c("grouped_gemm");
  thread_local std::vector<GemmProblem> groups;  // reused: no allocation per call once grown
  groups.clear();
  TRY(build_grouped(c, NVFP4_GROUPED_ARGS, groups));
  if (groups.empty()) return c.check_aliasing();
  GroupedGemmProblem gp;
  gp.count = static_cast<int32_t>(groups.size());
  gp.groups = groups.data();
  return c.run(&BackendOps::grouped_gemm, &BackendOps::grouped_gemm_workspace, gp, exec, query);
}

nvfp4_status_t nvfp4_grouped_gemm(NVFP4_GROUPED_PARAMS) {
  clear_error();
  return grouped_or_query(NVFP4_GROUPED_ARGS, exec, nullptr);
}

nvfp4_status_t nvfp4_grouped_gemm_workspace_size(NVFP4_GROUPED_PARAMS, size_t* bytes) {
  TRY(start_query("grouped_gemm_workspace_size", bytes));
  return grouped_or_query(NVFP4_GROUPED_ARGS, exec, bytes);
}
#undef NVFP4_GROUPED_PARAMS
#undef NVFP4_GROUPED_ARGS

static nvfp4_status_t build_packed(Call& c, const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                   const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb,
                                   const nvfp4_tensor_t* offsets, const nvfp4_tensor_t* alphas,
                                   const nvfp4_tensor_t* out, PackedGroupedGemmProblem& p) {
  Fp4View va, vb;
  TRY(fp4_view(c, "a", a, false, &va));
  if (va.batched)
    return fail(NVFP4_ERROR_INVALID_VALUE, "grouped_gemm_packed: argument 'a' must be 2-D (sum M_g, K/2), got %s",
                shape_str(*a).c_str());
  TRY(fp4_view(c, "b", b, false, &vb));
  if (!vb.batched)
    return fail(NVFP4_ERROR_INVALID_VALUE, "grouped_gemm_packed: argument 'b' must be 3-D (G, N, K/2), got %s",
                shape_str(*b).c_str());
  TRY(same_k(c, "a", va, "b", vb));
  TRY(scale_view(c, "sfa", sfa, NVFP4_SF_LINEAR, va, false, &p.sfa));
  TRY(scale_view(c, "sfb", sfb, NVFP4_SF_LINEAR, vb, false, &p.sfb));
  TRY(c.tensor("offsets", offsets, int32_ok, "int32"));
  if (offsets->ndim != 1 || offsets->shape[0] != vb.L + 1 || (offsets->shape[0] > 1 && offsets->strides[0] != 1))
    return fail(NVFP4_ERROR_INVALID_VALUE,
                "grouped_gemm_packed: argument 'offsets' must be a contiguous int32 array of shape (%lld,) (G+1), got %s",
                static_cast<long long>(vb.L + 1), shape_str(*offsets).c_str());
  if (alphas) {
    TRY(c.tensor("alphas", alphas, fp32_ok, "float32"));
    if (alphas->ndim != 1 || alphas->shape[0] != vb.L || (vb.L > 1 && alphas->strides[0] != 1))
      return fail(NVFP4_ERROR_INVALID_VALUE,
                  "grouped_gemm_packed: argument 'alphas' must be a contiguous float32 array of shape (%lld,), got %s",
                  static_cast<long long>(vb.L), shape_str(*alphas).c_str());
    p.alphas = static_cast<const float*>(alphas->data);
  }
  p.G = static_cast<int32_t>(vb.L);
  p.total_M = va.rows; p.N = vb.rows; p.K = va.K;
  p.a = va.op; p.b = vb.op;
  p.offsets = static_cast<const int32_t*>(offsets->data);
  TRY(out_view(c, "out", out, {p.total_M, p.N}, &p.c));
  fill_out_strides(out, false, true, &p.c);
  if (c.on_cpu()) {  // host offsets can be checked; device ones are clamped by the kernels
    const int32_t* o = p.offsets;
    if (o[0] != 0 || o[p.G] != p.total_M)
      return fail(NVFP4_ERROR_INVALID_VALUE,
                  "grouped_gemm_packed: offsets must start at 0 and end at sum M_g = %lld, got %d and %d",
                  static_cast<long long>(p.total_M), o[0], o[p.G]);
    for (int32_t g = 0; g < p.G; ++g)
      if (o[g + 1] < o[g])
        return fail(NVFP4_ERROR_INVALID_VALUE, "grouped_gemm_packed: offsets must be non-decreasing (offsets[%d]=%d > offsets[%d]=%d)",
                    g, o[g], g + 1, o[g + 1]);
  }
  return NVFP4_SUCCESS;
}

static nvfp4_status_t packed_or_query(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa, const nvfp4_tensor_t* b,
                                      const nvfp4_tensor_t* sfb, const nvfp4_tensor_t* offsets,
                                      const nvfp4_tensor_t* alphas, const nvfp4_tensor_t* out,
                                      const nvfp4_exec_t* exec, size_t* query) {
  Call c("grouped_gemm_packed");
  PackedGroupedGemmProblem p;
  TRY(build_packed(c, a, sfa, b, sfb, offsets, alphas, out, p));
  if (p.G == 0 || p.total_M == 0 || p.N == 0) return c.check_aliasing();
  return c.run(&BackendOps::grouped_gemm_packed, &BackendOps::grouped_gemm_packed_workspace, p, exec, query);
}

nvfp4_status_t nvfp4_grouped_gemm_packed(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                         const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb,
                                         const nvfp4_tensor_t* offsets, const nvfp4_tensor_t* alphas,
                                         const nvfp4_tensor_t* out, const nvfp4_exec_t* exec) {
  clear_error();
  return packed_or_query(a, sfa, b, sfb, offsets, alphas, out, exec, nullptr);
}

nvfp4_status_t nvfp4_grouped_gemm_packed_workspace_size(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                                        const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb,
                                                        const nvfp4_tensor_t* offsets, const nvfp4_tensor_t* alphas,
                                                        const nvfp4_tensor_t* out, const nvfp4_exec_t* exec,
                                                        size_t* bytes) {
  TRY(start_query("grouped_gemm_packed_workspace_size", bytes));
  return packed_or_query(a, sfa, b, sfb, offsets, alphas, out, exec, bytes);
}

// x (K) / (rows, K) / (L, rows, K).
nvfp4_status_t nvfp4_quantize(const nvfp4_tensor_t* x, const nvfp4_tensor_t* q, const nvfp4_tensor_t* sf,
                              nvfp4_sf_layout_t sf_layout, const nvfp4_tensor_t* global_scale,
                              int32_t compute_global_scale, const nvfp4_exec_t* exec) {
  clear_error();
  Call c("quantize");
  TRY(c.tensor("x", x, is_float_dtype, "float32, float16 or bfloat16"));
  if (x->ndim < 1 || x->ndim > 3)
    return fail(NVFP4_ERROR_INVALID_VALUE, "quantize: argument 'x' must have shape (K,), (rows, K) or (L, rows, K), got %s",
                shape_str(*x).c_str());
  const int d = x->ndim;
  QuantizeProblem p;
  p.K = x->shape[d - 1];
  p.rows = d >= 2 ? x->shape[d - 2] : 1;
  p.L = d == 3 ? x->shape[0] : 1;
  if (p.K % 32 != 0 || p.K == 0)
    return fail(NVFP4_ERROR_INVALID_VALUE, "quantize: argument 'x': K (last dim) must be a positive multiple of 32, got %lld",
                static_cast<long long>(p.K));
  if (x->strides[d - 1] != 1)
    return fail(NVFP4_ERROR_INVALID_VALUE, "quantize: argument 'x' must have unit stride along K");
  p.x = x->data;
  p.x_dtype = static_cast<DType>(x->dtype);
  p.x_row_stride = d >= 2 ? x->strides[d - 2] : 0;
  p.x_batch_stride = d == 3 ? x->strides[0] : 0;

  // q has x's shape with K/2 last.
  TRY(c.tensor("q", q, is_fp4_dtype, "uint8, int8 or float4_e2m1fn_x2", true));
  bool ok = q->ndim == d && q->shape[d - 1] == p.K / 2;
  for (int i = 0; ok && i < d - 1; ++i) ok = q->shape[i] == x->shape[i];
  if (!ok || q->strides[d - 1] != 1)
    return fail(NVFP4_ERROR_INVALID_VALUE, "quantize: argument 'q' must have x's shape with K/2 = %lld last and unit inner stride, got %s",
                static_cast<long long>(p.K / 2), shape_str(*q).c_str());
  p.q = static_cast<uint8_t*>(q->data);
  p.q_row_stride = d >= 2 ? q->strides[d - 2] : 0;
  p.q_batch_stride = d == 3 ? q->strides[0] : 0;

  TRY(c.tensor("sf", sf, is_sf_dtype, "uint8, int8 or float8_e4m3fn", true));
  p.sf = static_cast<uint8_t*>(sf->data);
  p.sf_layout = sf_layout;
  if (sf_layout == NVFP4_SF_LINEAR) {
    ok = sf->ndim == d && sf->shape[d - 1] == p.K / kSfVec;
    for (int i = 0; ok && i < d - 1; ++i) ok = sf->shape[i] == x->shape[i];
    if (!ok || (p.K / kSfVec > 1 && sf->strides[d - 1] != 1))
      return fail(NVFP4_ERROR_INVALID_VALUE,
                  "quantize: argument 'sf' (linear) must have x's shape with K/16 = %lld last and unit inner stride, got %s",
                  static_cast<long long>(p.K / kSfVec), shape_str(*sf).c_str());
    p.sf_row_stride = d >= 2 ? sf->strides[d - 2] : 0;
    p.sf_batch_stride = d == 3 ? sf->strides[0] : 0;
  } else if (sf_layout == NVFP4_SF_BLOCKED) {
    const int64_t bytes = blocked_sf_bytes(p.rows, p.K);
    if (d == 3) ok = sf->ndim == 2 && sf->shape[0] == p.L && sf->shape[1] == bytes && sf->strides[1] == 1 &&
                     (p.L <= 1 || sf->strides[0] >= bytes);
    else ok = sf->ndim == 1 && sf->shape[0] == bytes && sf->strides[0] == 1;
    if (!ok)
      return fail(NVFP4_ERROR_INVALID_VALUE, "quantize: argument 'sf' (blocked) must be a dense array of shape %s, got %s",
                  d == 3 ? dims_str({p.L, bytes}).c_str() : dims_str({bytes}).c_str(), shape_str(*sf).c_str());
    p.sf_batch_stride = d == 3 ? sf->strides[0] : 0;
  } else {
    return fail(NVFP4_ERROR_INVALID_VALUE, "quantize: unknown scale layout %d", static_cast<int>(sf_layout));
  }
  TRY(c.tensor("global_scale", global_scale, fp32_ok, "float32", compute_global_scale != 0));
  int64_t gs_numel = 1;
  for (int i = 0; i < global_scale->ndim; ++i) gs_numel *= global_scale->shape[i];
  if (gs_numel != 1)
    return fail(NVFP4_ERROR_INVALID_VALUE, "quantize: argument 'global_scale' must hold exactly one float32, got shape %s",
                shape_str(*global_scale).c_str());
  p.global_scale = static_cast<float*>(global_scale->data);
  p.compute_global_scale = compute_global_scale != 0;
  if (p.L == 0 || p.rows == 0) {
    TRY(c.check_aliasing());
    if (p.compute_global_scale && c.on_cpu()) *p.global_scale = 1.0f;
    if (p.compute_global_scale && !c.on_cpu()) return c.dispatch(&BackendOps::quantize, p, exec);
    return NVFP4_SUCCESS;
  }
  return c.dispatch(&BackendOps::quantize, p, exec);
}

nvfp4_status_t nvfp4_dequantize(const nvfp4_tensor_t* q, const nvfp4_tensor_t* sf, nvfp4_sf_layout_t sf_layout,
                                nvfp4_scalar_t global_scale, const nvfp4_tensor_t* out, const nvfp4_exec_t* exec) {
  clear_error();
  Call c("dequantize");
  TRY(c.tensor("q", q, is_fp4_dtype, "uint8, int8 or float4_e2m1fn_x2"));
  if (q->ndim < 1 || q->ndim > 3)
    return fail(NVFP4_ERROR_INVALID_VALUE, "dequantize: argument 'q' must have shape (K/2,), (rows, K/2) or (L, rows, K/2), got %s",
                shape_str(*q).c_str());
  // Reuse the fp4 operand view: 1-D is a vector, 2-D a matrix, 3-D a batched matrix.
  Fp4View v;
  const bool vector = q->ndim == 1;
  TRY(fp4_view(c, "q", q, vector, &v));
  DequantizeProblem p;
  TRY(scale_view(c, "sf", sf, sf_layout, v, vector, &p.sf));
  TRY(scalar_check(c, "global_scale", global_scale, &p.global_scale));
  p.L = v.L; p.rows = v.rows; p.K = v.K;
  p.q = v.op.data; p.q_row_stride = v.op.row_stride; p.q_batch_stride = v.op.batch_stride;
  OutDims dims;
  for (int i = 0; i < q->ndim; ++i) dims.push(q->shape[i]);
  dims.v[dims.n - 1] = p.K;
  OutOperand o;
  TRY(out_view(c, "out", out, dims, &o));
  if (out->strides[q->ndim - 1] != 1)
    return fail(NVFP4_ERROR_INVALID_VALUE, "dequantize: argument 'out' must have unit stride along K");
  p.out = o.data;
  p.out_dtype = o.dtype;
  p.out_row_stride = q->ndim >= 2 ? out->strides[q->ndim - 2] : 0;
  p.out_batch_stride = q->ndim == 3 ? out->strides[0] : 0;
  if (p.L == 0 || p.rows == 0) return c.check_aliasing();
  return c.dispatch(&BackendOps::dequantize, p, exec);
}

// Shared by swizzle/unswizzle: `lin` is the linear tensor, `blk` the blocked one.
static nvfp4_status_t build_swizzle(Call& c, const char* lin_name, const nvfp4_tensor_t*& lin, bool lin_out,
                                    const char* blk_name, const nvfp4_tensor_t*& blk, SwizzleProblem* p) {
  TRY(c.tensor(lin_name, lin, is_sf_dtype, "uint8, int8 or float8_e4m3fn", lin_out));
  TRY(c.tensor(blk_name, blk, is_sf_dtype, "uint8, int8 or float8_e4m3fn", !lin_out));
  if (lin->ndim != 2 && lin->ndim != 3)
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s' must have shape (rows, K/16) or (L, rows, K/16), got %s",
                c.op(), lin_name, shape_str(*lin).c_str());
  const int d = lin->ndim;
  p->L = d == 3 ? lin->shape[0] : 1;
  p->rows = lin->shape[d - 2];
  p->K = lin->shape[d - 1] * kSfVec;
  if (lin->shape[d - 1] > 1 && lin->strides[d - 1] != 1)
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s' needs unit stride along K/16", c.op(), lin_name);
  p->linear_row_stride = lin->strides[d - 2];
  p->linear_batch_stride = d == 3 ? lin->strides[0] : 0;
  const int64_t bytes = blocked_sf_bytes(p->rows, p->K);
  bool ok;
  if (d == 3) ok = blk->ndim == 2 && blk->shape[0] == p->L && blk->shape[1] == bytes && blk->strides[1] == 1 &&
                   (p->L <= 1 || blk->strides[0] >= bytes);
  else ok = blk->ndim == 1 && blk->shape[0] == bytes && (bytes <= 1 || blk->strides[0] == 1);
  if (!ok)
    return fail(NVFP4_ERROR_INVALID_VALUE,
                "%s: argument '%s' must be a dense blocked array of shape %s for %lld rows x %lld scale columns, got %s",
                c.op(), blk_name, d == 3 ? dims_str({p->L, bytes}).c_str() : dims_str({bytes}).c_str(),
                static_cast<long long>(p->rows), static_cast<long long>(p->K / kSfVec), shape_str(*blk).c_str());
  p->blocked_batch_stride = d == 3 ? blk->strides[0] : 0;
  return NVFP4_SUCCESS;
}

nvfp4_status_t nvfp4_swizzle_scales(const nvfp4_tensor_t* sf, const nvfp4_tensor_t* out, const nvfp4_exec_t* exec) {
  clear_error();
  Call c("swizzle_scales");
  SwizzleProblem p;
  TRY(build_swizzle(c, "sf", sf, false, "out", out, &p));
  p.src = static_cast<const uint8_t*>(sf->data);
  p.dst = static_cast<uint8_t*>(out->data);
  if (p.L == 0 || p.rows == 0 || p.K == 0) return c.check_aliasing();
  return c.dispatch(&BackendOps::swizzle_scales, p, exec);
}

nvfp4_status_t nvfp4_unswizzle_scales(const nvfp4_tensor_t* sf_blocked, const nvfp4_tensor_t* out,
                                      const nvfp4_exec_t* exec) {
  clear_error();
  Call c("unswizzle_scales");
  SwizzleProblem p;
  TRY(build_swizzle(c, "out", out, true, "sf_blocked", sf_blocked, &p));
  p.src = static_cast<const uint8_t*>(sf_blocked->data);
  p.dst = static_cast<uint8_t*>(out->data);
  if (p.L == 0 || p.rows == 0 || p.K == 0) return c.check_aliasing();
  return c.dispatch(&BackendOps::unswizzle_scales, p, exec);
}

}  // extern "C"
