// Argument validation of the C ABI (api.cpp): the checks every op shares, turning
// nvfp4_tensor_t descriptors into the operands of a Problem (problem.hpp). `Call` gathers
// one call's tensors (devices, aliasing, the forced backend) and hands the validated
// problem to the CPU backend or the device chain (dispatch.hpp). Every check fails with
// a message naming the op and the argument, and nothing is written before all pass.
#pragma once

#include <stdint.h>

#include <initializer_list>
#include <list>
#include <stdio.h>
#include <string>
#include <utility>
#include <vector>

#include "dispatch.hpp"

namespace nvfp4 {
namespace validate {

#define TRY(expr)                               \
  do {                                          \
    const nvfp4_status_t st_ = (expr);          \
    if (st_ != NVFP4_SUCCESS) return st_;       \
  } while (0)

const char* dtype_name(nvfp4_dtype_t d);
// "(2, 3)" / "(4,)": a tensor's shape, or a list of dims, for messages.
std::string shape_str(const nvfp4_tensor_t& t);
std::string dims_str(std::initializer_list<int64_t> dims);

// dtype predicates for Call::tensor.
bool is_fp4_dtype(nvfp4_dtype_t d);
bool is_sf_dtype(nvfp4_dtype_t d);
bool is_float_dtype(nvfp4_dtype_t d);
bool float_out_ok(nvfp4_dtype_t d);
bool fp32_ok(nvfp4_dtype_t d);
bool int32_ok(nvfp4_dtype_t d);

// Collects the tensors of one call to check devices and aliasing.
class Call {
 public:
  explicit Call(const char* op) : op_(op) {}
  // The op's name for messages: "grouped_gemm (group 3)" while group 3 is validated.
  // Formatted on demand, so a grouped call allocates nothing per group.
  const char* op() const {
    if (group_ < 0) return op_;
    snprintf(op_buf_, sizeof op_buf_, "%s (group %d)", op_, group_);
    return op_buf_;
  }
  // The group whose operands are being validated next (-1: none).
  void set_group(int group) { group_ = group; }

  // Presence, rank bounds, non-negative strides, dtype predicate. A tensor with no
  // elements has meaningless strides (numpy reports 0): `t` is then redirected to a
  // copy with row-major strides so that the layout checks that follow accept it.
  nvfp4_status_t tensor(const char* name, const nvfp4_tensor_t*& t, bool (*dtype_ok)(nvfp4_dtype_t),
                        const char* dtype_expect, bool is_output = false);

  // Outputs must not overlap inputs or each other.
  nvfp4_status_t check_aliasing() const;

  // The first operand decides the device (every other one must be on it).
  bool on_cpu() const { return !operands_.empty() && operands_.front().t->device_type == NVFP4_DEVICE_CPU; }
  int device() const { return operands_.empty() ? 0 : operands_.front().t->device_id; }

  // A forced backend must match where the operands are.
  nvfp4_status_t check_backend(const nvfp4_exec_t* exec) const;

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
  const char* op_;
  int group_ = -1;
  mutable char op_buf_[64] = {};
  struct Operand {
    const char* name;
    const nvfp4_tensor_t* t;
    int group;  // grouped_gemm: the operand's group, else -1
    bool is_output;
  };
  // The call's operands: in place up to kInline (every op but a grouped call of many groups), then
  // on the heap, so that a call allocates nothing for them.
  class Operands {
   public:
    static constexpr size_t kInline = 12;
    void push_back(const Operand& o) {
      if (n_ < kInline) inline_[n_] = o;
      else more_.push_back(o);
      ++n_;
    }
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const Operand& operator[](size_t i) const { return i < kInline ? inline_[i] : more_[i - kInline]; }
    const Operand& front() const { return inline_[0]; }

   private:
    Operand inline_[kInline] = {};
    std::vector<Operand> more_;
    size_t n_ = 0;
  };
  Operands operands_;
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
nvfp4_status_t fp4_view(Call& c, const char* name, const nvfp4_tensor_t*& t, bool vector, Fp4View* v);

// Scales of a (rows x K) operand whose fp4 tensor had the given batch form.
nvfp4_status_t scale_view(Call& c, const char* name, const nvfp4_tensor_t*& t, nvfp4_sf_layout_t layout,
                          const Fp4View& of, bool vector, ScaleOperand* s);

// An expected output shape: at most NVFP4_MAX_DIMS extents, held in place (out_view runs on every
// call: no heap allocation for it).
struct OutDims {
  int64_t v[NVFP4_MAX_DIMS] = {};
  int n = 0;
  OutDims() = default;
  OutDims(std::initializer_list<int64_t> l) {  // out_view(..., {rows, N}, ...)
    for (int64_t x : l) push(x);
  }
  void push(int64_t x) {
    if (n < NVFP4_MAX_DIMS) v[n++] = x;
  }
};
// Output of shape `dims` (batched: leading L present).
nvfp4_status_t out_view(Call& c, const char* name, const nvfp4_tensor_t*& t, const OutDims& dims, OutOperand* o);
// The output's batch / row / column strides (has_cols: a matrix, else a vector per batch).
void fill_out_strides(const nvfp4_tensor_t* t, bool batched, bool has_cols, OutOperand* o);

nvfp4_status_t scalar_check(Call& c, const char* name, const nvfp4_scalar_t& s, Alpha* a);
nvfp4_status_t same_k(Call& c, const char* a, const Fp4View& va, const char* b, const Fp4View& vb);
nvfp4_status_t same_batch(Call& c, const char* a, const Fp4View& va, const char* b, const Fp4View& vb);

// Shared by gemm / gemv (and each group of grouped_gemm): validates a, sfa, b, sfb, out into `p`.
nvfp4_status_t build_gemm(Call& c, bool gemv, const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                          const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb, nvfp4_scalar_t alpha,
                          nvfp4_sf_layout_t layout, const nvfp4_tensor_t* out, GemmProblem* p);

inline bool empty_gemm(const GemmProblem& p) { return p.L == 0 || p.M == 0 || p.N == 0; }

}  // namespace validate
}  // namespace nvfp4
