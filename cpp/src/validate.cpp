// The shared argument checks of the C ABI (validate.hpp).
#include "validate.hpp"

#include <algorithm>

#include "common/align.hpp"
#include "common/formats.h"

namespace nvfp4 {
namespace validate {

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

namespace {
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
  const int64_t es = nvfp4_dtype_size(t.dtype);
  return {base, base + static_cast<uintptr_t>((last + 1) * es)};
}
bool overlaps(const Extent& a, const Extent& b) {
  return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}
// " of group 3" after an operand's name in a grouped call's messages ("" for group -1).
struct GroupSuffix {
  char text[24] = "";
  explicit GroupSuffix(int group) {
    if (group >= 0) snprintf(text, sizeof text, " of group %d", group);
  }
};
}  // namespace

// ---------------------------------------------------------------------------
// Call
// ---------------------------------------------------------------------------

nvfp4_status_t Call::tensor(const char* name, const nvfp4_tensor_t*& t, bool (*dtype_ok)(nvfp4_dtype_t),
                            const char* dtype_expect, bool is_output) {
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
  const int64_t es = nvfp4_dtype_size(t->dtype);
  if (!is_aligned(t->data, es))
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: argument '%s': pointer %p is not aligned to its %lld-byte elements",
                op(), name, t->data, static_cast<long long>(es));
  if (!operands_.empty()) {
    const Operand& first = operands_.front();
    const nvfp4_tensor_t& f = *first.t;
    if (t->device_type != f.device_type || (t->device_type == NVFP4_DEVICE_CUDA && t->device_id != f.device_id)) {
      GroupSuffix where(first.group != group_ ? first.group : -1);
      return fail(NVFP4_ERROR_INVALID_VALUE,
                  "%s: argument '%s' is on %s:%d but '%s'%s is on %s:%d; all operands must be on one device",
                  op(), name, t->device_type == NVFP4_DEVICE_CUDA ? "cuda" : "cpu", t->device_id, first.name,
                  where.text, f.device_type == NVFP4_DEVICE_CUDA ? "cuda" : "cpu", f.device_id);
    }
  }
  operands_.push_back({name, t, group_, is_output});
  return NVFP4_SUCCESS;
}

// Sorted by start address, an operand overlaps an earlier one exactly when it starts below
// the largest end seen so far: one sweep finds any output overlapping an input or another
// output in O(n log n) (a grouped call of 64 groups has 320 operands: the pairwise check
// was 20k comparisons per call). Inputs may overlap each other.
nvfp4_status_t Call::check_aliasing() const {
  struct Span {
    Extent e;
    uint32_t index;
  };
  thread_local std::vector<Span> spans;  // reused: no allocation per call once grown
  spans.clear();
  bool any_output = false;
  for (uint32_t i = 0; i < operands_.size(); ++i) {
    const Extent e = extent_of(*operands_[i].t);
    any_output |= operands_[i].is_output;
    if (e.lo < e.hi) spans.push_back({e, i});
  }
  if (!any_output) return NVFP4_SUCCESS;
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.e.lo < b.e.lo; });
  uintptr_t end_in = 0, end_out = 0;  // largest end among the inputs / outputs so far
  for (const Span& s : spans) {
    const bool out = operands_[s.index].is_output;
    if (s.e.lo < end_out || (out && s.e.lo < end_in)) {
      for (const Span& other : spans) {  // name the pair (error path only)
        const Operand &a = operands_[other.index], &b = operands_[s.index];
        if (other.index == s.index || !(a.is_output || b.is_output) || !overlaps(other.e, s.e)) continue;
        const Operand& o = a.is_output ? a : b;
        const Operand& x = a.is_output ? b : a;
        const GroupSuffix o_where(o.group), x_where(x.group);
        if (x.is_output)
          return fail(NVFP4_ERROR_INVALID_VALUE, "%s: outputs '%s'%s and '%s'%s overlap", op(), o.name, o_where.text,
                      x.name, x_where.text);
        return fail(NVFP4_ERROR_INVALID_VALUE,
                    "%s: output '%s'%s overlaps input '%s'%s; outputs must not alias inputs", op(), o.name,
                    o_where.text, x.name, x_where.text);
      }
    }
    (out ? end_out : end_in) = std::max(out ? end_out : end_in, s.e.hi);
  }
  return NVFP4_SUCCESS;
}

nvfp4_status_t Call::check_backend(const nvfp4_exec_t* exec) const {
  const nvfp4_backend_t b = exec ? exec->backend : NVFP4_BACKEND_AUTO;
  if (on_cpu() && b != NVFP4_BACKEND_AUTO && b != NVFP4_BACKEND_CPU)
    return fail(NVFP4_ERROR_INVALID_VALUE,
                "%s: operands are host arrays but backend '%s' was requested; move them to the GPU", op(),
                nvfp4_backend_name(b));
  if (!on_cpu() && b == NVFP4_BACKEND_CPU)
    return fail(NVFP4_ERROR_INVALID_VALUE, "%s: backend 'cpu' requested for device arrays", op());
  return NVFP4_SUCCESS;
}

// ---------------------------------------------------------------------------
// Operand views
// ---------------------------------------------------------------------------

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
nvfp4_status_t out_view(Call& c, const char* name, const nvfp4_tensor_t*& t, const OutDims& dims, OutOperand* o) {
  nvfp4_status_t st = c.tensor(name, t, float_out_ok, "float16, bfloat16 or float32", /*is_output=*/true);
  if (st != NVFP4_SUCCESS) return st;
  bool ok = t->ndim == dims.n;
  for (int i = 0; ok && i < dims.n; ++i) ok = t->shape[i] == dims.v[i];
  if (!ok) {
    string exp = "(";
    for (int i = 0; i < dims.n; ++i) exp += std::to_string(dims.v[i]) + (i + 1 < dims.n ? ", " : "");
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
  if (s.device_ptr && !is_aligned(s.device_ptr, 4))
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
  OutDims dims;
  if (va.batched) dims.push(va.L);
  dims.push(p->M);
  if (!gemv) dims.push(p->N);
  TRY(out_view(c, "out", out, dims, &p->c));
  fill_out_strides(out, va.batched, !gemv, &p->c);
  return NVFP4_SUCCESS;
}

}  // namespace validate
}  // namespace nvfp4
