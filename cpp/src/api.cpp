// The C ABI: validates every argument once, builds a Problem (problem.hpp) and
// dispatches it to the CPU backend (host operands) or the device's backend chain.
// Nothing is written to any output when validation fails.
#include <cuda_runtime_api.h>

#include <string.h>

#include <algorithm>
#include <list>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/formats.h"
#include "dispatch.hpp"
#include "nvfp4_build_info.h"

namespace nvfp4 {
void clear_error();

namespace {

using std::string;

// ---------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------
const char* dtype_name(nvfp4_dtype_t d) {
  switch (d) {
    case NVFP4_DTYPE_UINT8: return "uint8";
    case NVFP4_DTYPE_INT8: return "int8";
    case NVFP4_DTYPE_FP4X2: return "float4_e2m1fn_x2";
    case NVFP4_DTYPE_E4M3: return "float8_e4m3fn";
    case NVFP4_DTYPE_FLOAT16: return "float16";
    case NVFP4_DTYPE_BFLOAT16: return "bfloat16";
    case NVFP4_DTYPE_FLOAT32: return "float32";
    case NVFP4_DTYPE_FLOAT64: return "float64";
    case NVFP4_DTYPE_INT32: return "int32";
  }
  return "unknown";
}

int64_t dtype_size(nvfp4_dtype_t d) {
  switch (d) {
    case NVFP4_DTYPE_FLOAT16:
    case NVFP4_DTYPE_BFLOAT16: return 2;
    case NVFP4_DTYPE_FLOAT32:
    case NVFP4_DTYPE_INT32: return 4;
    case NVFP4_DTYPE_FLOAT64: return 8;
    default: return 1;
  }
}

string shape_str(const nvfp4_tensor_t& t) {
  string s = "(";
  for (int i = 0; i < t.ndim; ++i) {
    s += std::to_string(t.shape[i]);
    if (i + 1 < t.ndim || t.ndim == 1) s += ",";
    if (i + 1 < t.ndim) s += " ";
  }
  return s + ")";
}

string dims_str(std::initializer_list<int64_t> dims) {
  string s = "(";
  size_t i = 0;
  for (int64_t d : dims) {
    s += std::to_string(d);
    if (++i < dims.size() || dims.size() == 1) s += ",";
    if (i < dims.size()) s += " ";
  }
  return s + ")";
}

bool is_fp4_dtype(nvfp4_dtype_t d) {
  return d == NVFP4_DTYPE_UINT8 || d == NVFP4_DTYPE_INT8 || d == NVFP4_DTYPE_FP4X2;
}
bool is_sf_dtype(nvfp4_dtype_t d) {
  return d == NVFP4_DTYPE_UINT8 || d == NVFP4_DTYPE_INT8 || d == NVFP4_DTYPE_E4M3;
}
bool is_float_dtype(nvfp4_dtype_t d) {
  return d == NVFP4_DTYPE_FLOAT16 || d == NVFP4_DTYPE_BFLOAT16 || d == NVFP4_DTYPE_FLOAT32;
}

// Byte range [lo, hi) spanned by a tensor (strides are non-negative, checked first).
struct Extent {
  uintptr_t lo = 0, hi = 0;
};
Extent extent_of(const nvfp4_tensor_t& t) {
  int64_t last = 0;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] == 0) return {};
    last += (t.shape[i] - 1) * t.strides[i];
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(t.data);
  const int64_t es = dtype_size(t.dtype);
  return {base, base + static_cast<uintptr_t>((last + 1) * es)};
}
bool overlaps(const Extent& a, const Extent& b) {
  return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

#define TRY(expr)                               \
  do {                                          \
    const nvfp4_status_t st_ = (expr);          \
    if (st_ != NVFP4_SUCCESS) return st_;       \
  } while (0)

// Collects the tensors of one call to check devices and aliasing.
class Call {
 public:
  explicit Call(const char* op) : op_(op) {}
  const char* op() const { return op_.c_str(); }
  void set_op(const char* op) { op_ = op; }

  // Presence, rank bounds, non-negative strides, dtype predicate. A tensor with no
  // elements has meaningless strides (numpy reports 0): `t` is then redirected to a
  // copy with row-major strides so that the layout checks that follow accept it.
  nvfp4_status_t tensor(const char* name, const nvfp4_tensor_t*& t, bool (*dtype_ok)(nvfp4_dtype_t),
                        const char* dtype_expect, bool is_output = false) {
    if (!t) return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s' is required (got NULL)", op(), name);
    if (t->ndim < 0 || t->ndim > NVFP4_MAX_DIMS)
      return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': rank must be 0..%d, got %d", op(), name,
                  NVFP4_MAX_DIMS, t->ndim);
    if (!dtype_ok(t->dtype))
      return fail(NVFP4_ERROR_INVALID_TYPE, "%s: argument '%s': expected dtype %s, got %s", op(), name,
                  dtype_expect, dtype_name(t->dtype));
    if (t->device_type != NVFP4_DEVICE_CPU && t->device_type != NVFP4_DEVICE_CUDA)
      return fail(NVFP4_ERROR_INVALID_TYPE, "%s: argument '%s': unsupported device type %d", op(), name,
                  static_cast<int>(t->device_type));
    int64_t numel = 1;
    for (int i = 0; i < t->ndim; ++i) {
      if (t->shape[i] < 0)
        return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': negative dimension in shape %s", op(),
                    name, shape_str(*t).c_str());
      if (t->strides[i] < 0)
        return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': negative strides are not supported", op(),
                    name);
      numel *= t->shape[i];
    }
    if (numel > 0 && !t->data)
      return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': data pointer is NULL", op(), name);
    if (numel == 0) {
      nvfp4_tensor_t& dense = empties_.emplace_back(*t);
      int64_t stride = 1;
      for (int i = dense.ndim - 1; i >= 0; --i) {
        dense.strides[i] = stride;
        stride *= std::max<int64_t>(dense.shape[i], 1);
      }
      t = &dense;
    }
    const int64_t es = dtype_size(t->dtype);
    if (reinterpret_cast<uintptr_t>(t->data) % es != 0)
      return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': pointer %p is not aligned to its %lld-byte elements",
                  op(), name, t->data, static_cast<long long>(es));
    if (!first_) {
      first_ = t;
      first_name_ = name;
    } else if (t->device_type != first_->device_type ||
               (t->device_type == NVFP4_DEVICE_CUDA && t->device_id != first_->device_id)) {
      return fail(NVFP4_ERROR_INVALID_VALUE,
                  "%s: argument '%s' is on %s:%d but '%s' is on %s:%d; all operands must be on one device",
                  op(), name, t->device_type == NVFP4_DEVICE_CUDA ? "cuda" : "cpu", t->device_id, first_name_,
                  first_->device_type == NVFP4_DEVICE_CUDA ? "cuda" : "cpu", first_->device_id);
    }
    (is_output ? outputs_ : inputs_).push_back({name, t});
    return NVFP4_SUCCESS;
  }

  // Outputs must not overlap inputs or each other.
  nvfp4_status_t check_aliasing() const {
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const Extent o = extent_of(*outputs_[i].second);
      for (const auto& in : inputs_)
        if (overlaps(o, extent_of(*in.second)))
          return fail(NVFP4_ERROR_INVALID_VALUE, "%s: output '%s' overlaps input '%s'; outputs must not alias inputs",
                      op(), outputs_[i].first, in.first);
      for (size_t j = i + 1; j < outputs_.size(); ++j)
        if (overlaps(o, extent_of(*outputs_[j].second)))
          return fail(NVFP4_ERROR_INVALID_VALUE, "%s: outputs '%s' and '%s' overlap", op(), outputs_[i].first,
                      outputs_[j].first);
    }
    return NVFP4_SUCCESS;
  }

  bool on_cpu() const { return first_ && first_->device_type == NVFP4_DEVICE_CPU; }
  int device() const { return first_ ? first_->device_id : 0; }

  // A forced backend must match where the operands are.
  nvfp4_status_t check_backend(const nvfp4_exec_t* exec) const {
    const nvfp4_backend_t b = exec ? exec->backend : NVFP4_BACKEND_AUTO;
    if (on_cpu() && b != NVFP4_BACKEND_AUTO && b != NVFP4_BACKEND_CPU)
      return fail(NVFP4_ERROR_INVALID_VALUE,
                  "%s: operands are host arrays but backend '%s' was requested; move them to the GPU", op(),
                  nvfp4_backend_name(b));
    if (!on_cpu() && b == NVFP4_BACKEND_CPU)
      return fail(NVFP4_ERROR_INVALID_VALUE, "%s: backend 'cpu' requested for device arrays", op());
    return NVFP4_SUCCESS;
  }

  // Runs `member` on the CPU backend or the device chain (with `cached_workspace` bytes
  // of the library's own scratch when > 0).
  template <class P>
  nvfp4_status_t dispatch(LaunchFn<P> BackendOps::*member, const P& problem, const nvfp4_exec_t* exec,
                          size_t cached_workspace = 0) const {
    nvfp4_status_t st = check_aliasing();
    if (st == NVFP4_SUCCESS) st = check_backend(exec);
    if (st != NVFP4_SUCCESS) return st;
    if (on_cpu()) {
      set_last_backend(NVFP4_BACKEND_CPU);
      return (cpu_backend()->*member)(problem, Exec{});
    }
    return run_on_device(member, op(), problem, device(), exec, cached_workspace);
  }

  // Scratch the backend that would run `launch` needs (0 on the CPU).
  template <class P>
  nvfp4_status_t workspace_size(LaunchFn<P> BackendOps::*launch, WorkspaceFn<P> BackendOps::*workspace,
                                const P& problem, const nvfp4_exec_t* exec, size_t* bytes) const {
    *bytes = 0;
    TRY(check_aliasing());
    TRY(check_backend(exec));
    if (on_cpu()) return NVFP4_SUCCESS;
    return workspace_on_device(launch, workspace, op(), problem, device(), exec, bytes);
  }

  // dispatch(), once the workspace covers what the backend needs: the caller's, or with
  // NVFP4_WORKSPACE_CACHED and no caller workspace the library's cached scratch.
  template <class P>
  nvfp4_status_t dispatch_with_workspace(LaunchFn<P> BackendOps::*launch, WorkspaceFn<P> BackendOps::*workspace,
                                         const P& problem, const nvfp4_exec_t* exec) const {
    size_t need = 0;
    TRY(workspace_size(launch, workspace, problem, exec, &need));
    const size_t have = exec && exec->workspace ? exec->workspace_bytes : 0;
    if (need > 0 && exec && !exec->workspace && exec->workspace_mode == NVFP4_WORKSPACE_CACHED)
      return dispatch(launch, problem, exec, need);
    if (need > have)
      return fail(NVFP4_ERROR_INVALID_VALUE,
                  "%s: this problem needs a workspace of %zu bytes (see nvfp4_%s_workspace_size), got %zu", op(),
                  need, op(), have);
    return dispatch(launch, problem, exec);
  }

  // The op (query == nullptr) or its workspace query (*query = bytes).
  template <class P>
  nvfp4_status_t run(LaunchFn<P> BackendOps::*launch, WorkspaceFn<P> BackendOps::*workspace, const P& problem,
                     const nvfp4_exec_t* exec, size_t* query) const {
    return query ? workspace_size(launch, workspace, problem, exec, query)
                 : dispatch_with_workspace(launch, workspace, problem, exec);
  }

 private:
  std::string op_;
  const nvfp4_tensor_t* first_ = nullptr;
  const char* first_name_ = "";
  std::vector<std::pair<const char*, const nvfp4_tensor_t*>> inputs_, outputs_;
  std::list<nvfp4_tensor_t> empties_;  // stable addresses; no allocation while empty (std::deque allocates on construction)
};

// ---------------------------------------------------------------------------
// Operand views
// ---------------------------------------------------------------------------

// A packed fp4 operand: (rows, K/2) or batched (L, rows, K/2); vectors (K/2) / (L, K/2).
struct Fp4View {
  bool batched = false;
  int64_t L = 1, rows = 0, K = 0;
  Fp4Operand op;
};

nvfp4_status_t fp4_view(Call& c, const char* name, const nvfp4_tensor_t*& t, bool vector, Fp4View* v) {
  nvfp4_status_t st = c.tensor(name, t, is_fp4_dtype, "uint8, int8 or float4_e2m1fn_x2 (packed fp4)");
  if (st != NVFP4_SUCCESS) return st;
  const int base = vector ? 1 : 2;
  if (t->ndim != base && t->ndim != base + 1)
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': expected shape %s or %s, got %s", c.op(), name,
                vector ? "(K/2,)" : "(M, K/2)", vector ? "(L, K/2)" : "(L, M, K/2)", shape_str(*t).c_str());
  const int d = t->ndim;
  v->batched = (d == base + 1);
  v->L = v->batched ? t->shape[0] : 1;
  v->rows = vector ? 1 : t->shape[d - 2];
  v->K = 2 * t->shape[d - 1];
  if (v->K % 32 != 0 || v->K == 0)
    return fail(NVFP4_ERROR_INVALID_VALUE,
                "%s: argument '%s': K must be a positive multiple of 32 (last dim K/2 a multiple of 16), got K=%lld "
                "(last dim %lld)",
                c.op(), name, static_cast<long long>(v->K), static_cast<long long>(t->shape[d - 1]));
  if (t->shape[d - 1] > 1 && t->strides[d - 1] != 1)
    return fail(NVFP4_ERROR_INVALID_VALUE,
                "%s: argument '%s': must be K-major (unit stride along the last dim), got strides with last %lld",
                c.op(), name, static_cast<long long>(t->strides[d - 1]));
  v->op.data = static_cast<const uint8_t*>(t->data);
  v->op.row_stride = vector ? 0 : t->strides[d - 2];
  v->op.batch_stride = v->batched ? t->strides[0] : 0;
  if (!vector && v->rows > 1 && v->op.row_stride < t->shape[d - 1])
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': rows overlap (row stride %lld < K/2 = %lld)", c.op(),
                name, static_cast<long long>(v->op.row_stride), static_cast<long long>(t->shape[d - 1]));
  return NVFP4_SUCCESS;
}

// Scales of a (rows x K) operand whose fp4 tensor had the given batch form.
nvfp4_status_t scale_view(Call& c, const char* name, const nvfp4_tensor_t*& t, nvfp4_sf_layout_t layout,
                          const Fp4View& of, bool vector, ScaleOperand* s) {
  nvfp4_status_t st = c.tensor(name, t, is_sf_dtype, "uint8, int8 or float8_e4m3fn (e4m3 scales)");
  if (st != NVFP4_SUCCESS) return st;
  const int64_t kb = of.K / kSfVec;
  s->data = static_cast<const uint8_t*>(t->data);
  s->layout = layout;
  if (layout == NVFP4_SF_LINEAR) {
    const int want = (vector ? 1 : 2) + (of.batched ? 1 : 0);
    bool ok = t->ndim == want && t->shape[want - 1] == kb;
    if (ok && !vector) ok = t->shape[want - 2] == of.rows;
    if (ok && of.batched) ok = t->shape[0] == of.L;
    if (!ok) {
      string exp = of.batched ? (vector ? dims_str({of.L, kb}) : dims_str({of.L, of.rows, kb}))
                              : (vector ? dims_str({kb}) : dims_str({of.rows, kb}));
      return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': linear scales must have shape %s (K/16 = %lld), got %s",
                  c.op(), name, exp.c_str(), static_cast<long long>(kb), shape_str(*t).c_str());
    }
    if (kb > 1 && t->strides[want - 1] != 1)
      return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': linear scales need unit stride along K/16", c.op(), name);
    s->row_stride = vector ? 0 : t->strides[want - 2];
    s->batch_stride = of.batched ? t->strides[0] : 0;
    return NVFP4_SUCCESS;
  }
  if (layout != NVFP4_SF_BLOCKED)
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: unknown scale layout %d", c.op(), static_cast<int>(layout));
  const int64_t bytes = blocked_sf_bytes(of.rows, of.K);
  const int64_t rest_rows = blocked_sf_rows(of.rows) / 128, rest_k = blocked_sf_cols(of.K) / 4;
  if (t->ndim == 1 && !of.batched && t->shape[0] == bytes && (bytes <= 1 || t->strides[0] == 1)) {
    s->batch_stride = 0;
    return NVFP4_SUCCESS;
  }
  if (t->ndim == 2 && t->shape[0] == of.L && t->shape[1] == bytes && t->strides[1] == 1) {
    s->batch_stride = t->strides[0];
    if (of.L > 1 && s->batch_stride < bytes)
      return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': blocked batches overlap (batch stride %lld < %lld bytes)",
                  c.op(), name, static_cast<long long>(s->batch_stride), static_cast<long long>(bytes));
    return NVFP4_SUCCESS;
  }
  if (t->ndim == 6) {
    // (32, 4, rest_rows, 4, rest_k, L) view of the dense blocked bytes, L outermost.
    const int64_t want_shape[6] = {32, 4, rest_rows, 4, rest_k, of.L};
    const int64_t want_strides[5] = {16, 4, rest_k * 512, 1, 512};
    bool ok = true;
    for (int i = 0; i < 6; ++i) ok = ok && t->shape[i] == want_shape[i];
    for (int i = 0; i < 5 && ok; ++i) ok = t->shape[i] == 1 || t->strides[i] == want_strides[i];
    if (ok) {
      s->batch_stride = of.L > 1 ? t->strides[5] : 0;
      if (of.L > 1 && s->batch_stride < bytes) ok = false;
    }
    if (ok) return NVFP4_SUCCESS;
    return fail(NVFP4_ERROR_INVALID_VALUE,
                "%s: argument '%s': a 6-D blocked scale view must have shape (32, 4, %lld, 4, %lld, %lld) and the "
                "strides of the dense blocked layout (16, 4, %lld, 1, 512, >=%lld); got shape %s",
                c.op(), name, static_cast<long long>(rest_rows), static_cast<long long>(rest_k),
                static_cast<long long>(of.L), static_cast<long long>(rest_k * 512), static_cast<long long>(bytes),
                shape_str(*t).c_str());
  }
  string exp = of.batched ? dims_str({of.L, bytes}) : dims_str({bytes});
  return fail(NVFP4_ERROR_INVALID_VALUE,
              "%s: argument '%s': blocked scales for %lld rows x K=%lld must be a dense array of shape %s "
              "(ceil(rows/128)*128 * ceil(K/64)*4 bytes per batch) or the 6-D view (32, 4, %lld, 4, %lld, %lld); "
              "got shape %s",
              c.op(), name, static_cast<long long>(of.rows), static_cast<long long>(of.K), exp.c_str(),
              static_cast<long long>(rest_rows), static_cast<long long>(rest_k), static_cast<long long>(of.L),
              shape_str(*t).c_str());
}

bool float_out_ok(nvfp4_dtype_t d) { return is_float_dtype(d); }
bool fp32_ok(nvfp4_dtype_t d) { return d == NVFP4_DTYPE_FLOAT32; }
bool int32_ok(nvfp4_dtype_t d) { return d == NVFP4_DTYPE_INT32; }

// Output of shape `dims` (batched: leading L present).
nvfp4_status_t out_view(Call& c, const char* name, const nvfp4_tensor_t*& t, const std::vector<int64_t>& dims,
                        OutOperand* o) {
  nvfp4_status_t st = c.tensor(name, t, float_out_ok, "float16, bfloat16 or float32", /*is_output=*/true);
  if (st != NVFP4_SUCCESS) return st;
  bool ok = t->ndim == static_cast<int>(dims.size());
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = t->shape[i] == dims[i];
  if (!ok) {
    string exp = "(";
    for (size_t i = 0; i < dims.size(); ++i) exp += std::to_string(dims[i]) + (i + 1 < dims.size() ? ", " : "");
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': expected shape %s), got %s", c.op(), name,
                exp.c_str(), shape_str(*t).c_str());
  }
  o->data = t->data;
  o->dtype = static_cast<DType>(t->dtype);
  return NVFP4_SUCCESS;
}

nvfp4_status_t scalar_check(Call& c, const char* name, const nvfp4_scalar_t& s, Alpha* a) {
  a->value = s.value;
  a->device_ptr = s.device_ptr;
  if (s.device_ptr && reinterpret_cast<uintptr_t>(s.device_ptr) % 4 != 0)
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': scalar pointer is not 4-byte aligned", c.op(), name);
  return NVFP4_SUCCESS;
}


nvfp4_status_t same_k(Call& c, const char* a, const Fp4View& va, const char* b, const Fp4View& vb) {
  if (va.K != vb.K)
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: K mismatch: '%s' has K=%lld, '%s' has K=%lld", c.op(), a,
                static_cast<long long>(va.K), b, static_cast<long long>(vb.K));
  return NVFP4_SUCCESS;
}
nvfp4_status_t same_batch(Call& c, const char* a, const Fp4View& va, const char* b, const Fp4View& vb) {
  if (va.batched != vb.batched)
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: '%s' and '%s' must both have a leading batch dim L or neither",
                c.op(), a, b);
  if (va.L != vb.L)
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: batch mismatch: '%s' has L=%lld, '%s' has L=%lld", c.op(), a,
                static_cast<long long>(va.L), b, static_cast<long long>(vb.L));
  return NVFP4_SUCCESS;
}

void fill_out_strides(const nvfp4_tensor_t* t, bool batched, bool has_cols, OutOperand* o) {
  const int d = t->ndim;
  o->batch_stride = batched ? t->strides[0] : 0;
  if (has_cols) {
    o->row_stride = t->strides[d - 2];
    o->col_stride = t->strides[d - 1];
  } else {
    o->row_stride = t->strides[d - 1];
    o->col_stride = 1;
  }
}

// Shared by gemm / gemv: validates a, sfa, b, sfb, out into `p`.
nvfp4_status_t build_gemm(Call& c, bool gemv, const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                          const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb, nvfp4_scalar_t alpha,
                          nvfp4_sf_layout_t layout, const nvfp4_tensor_t* out, GemmProblem* p) {
  Fp4View va, vb;
  TRY(fp4_view(c, "a", a, false, &va));
  TRY(fp4_view(c, "b", b, gemv, &vb));
  TRY(same_k(c, "a", va, "b", vb));
  TRY(same_batch(c, "a", va, "b", vb));
  TRY(scale_view(c, "sfa", sfa, layout, va, false, &p->sfa));
  TRY(scale_view(c, "sfb", sfb, layout, vb, gemv, &p->sfb));
  TRY(scalar_check(c, "alpha", alpha, &p->alpha));
  p->L = va.L;
  p->M = va.rows;
  p->N = gemv ? 1 : vb.rows;
  p->K = va.K;
  p->a = va.op;
  p->b = vb.op;
  std::vector<int64_t> dims;
  if (va.batched) dims.push_back(va.L);
  dims.push_back(p->M);
  if (!gemv) dims.push_back(p->N);
  TRY(out_view(c, "out", out, dims, &p->c));
  fill_out_strides(out, va.batched, !gemv, &p->c);
  return NVFP4_SUCCESS;
}

bool empty_gemm(const GemmProblem& p) { return p.L == 0 || p.M == 0 || p.N == 0; }

}  // namespace
}  // namespace nvfp4

// ===========================================================================
// C ABI
// ===========================================================================
using namespace nvfp4;

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
  std::vector<int64_t> dims;
  if (va.batched) dims.push_back(va.L);
  dims.push_back(p.M);
  dims.push_back(p.N);
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
    const std::string op = "grouped_gemm (group " + std::to_string(g) + ")";
    c.set_op(op.c_str());
    GemmProblem p;
    const nvfp4_scalar_t alpha = alphas ? alphas[g] : nvfp4_scalar_t{1.0f, nullptr};
    TRY(build_gemm(c, false, &a[g], &sfa[g], &b[g], &sfb[g], alpha, sf_layout, &out[g], &p));
    if (a[g].ndim != 2 || out[g].ndim != 2)
      return fail(NVFP4_ERROR_INVALID_VALUE, "%s: operands must be 2-D (no batch dim)", op.c_str());
    if (!empty_gemm(p)) groups.push_back(p);
  }
  c.set_op("grouped_gemm");
  return NVFP4_SUCCESS;
}

#define NVFP4_GROUPED_PARAMS                                                                                     \
  int32_t count, const nvfp4_tensor_t *a, const nvfp4_tensor_t *sfa, const nvfp4_tensor_t *b,                  \
      const nvfp4_tensor_t *sfb, const nvfp4_scalar_t *alphas, nvfp4_sf_layout_t sf_layout,                    \
      const nvfp4_tensor_t *out, const nvfp4_exec_t *exec
#define NVFP4_GROUPED_ARGS count, a, sfa, b, sfb, alphas, sf_layout, out

static nvfp4_status_t grouped_or_query(NVFP4_GROUPED_PARAMS, size_t* query) {
  Call c("grouped_gemm");
  std::vector<GemmProblem> groups;
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
  std::vector<int64_t> dims(q->shape, q->shape + q->ndim);
  dims.back() = p.K;
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
