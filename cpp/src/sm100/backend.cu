// The sm100a (Blackwell, compute capability 10.0) backend: native block-scaled
// tcgen05 MMA through CUTLASS 4.2's SM100 collectives.
//
//   gemm                 gemm_1sm.cu (stream-K) / gemm_2sm.cu (2-SM cluster), by shape
//   dual_gemm            dual.cu + dual_kernel.cuh (one kernel, two TMEM accumulators per A tile)
//   grouped_gemm(_packed) grouped.cu (pointer-array persistent kernel)
//   gemv                 gemv.cu (CUDA cores, sm100 fp4/fp8 conversion instructions)
// quantize, dequantize and the scale swizzles are left to the portable backend.
//
// Every entry answers NVFP4_ERROR_NOT_SUPPORTED before launching anything when a
// CUTLASS constraint is not met (plan.hpp), so the dispatcher falls back cleanly.
// Scratch comes from the caller's workspace only; the sizes are the *_workspace
// entries (launchers.hpp), wired into BackendOps like the launchers.
#include "../common/cuda_check.hpp"
#include "kernels.hpp"
#include "launchers.hpp"

namespace nvfp4 {
namespace sm100 {
namespace {

DenseGemmArgs dense_args(const GemmProblem& p, const Exec& exec) {
  DenseGemmArgs g;
  g.M = static_cast<int>(p.M);
  g.N = static_cast<int>(p.N);
  g.K = static_cast<int>(p.K);
  g.L = static_cast<int>(p.L);
  g.a = p.a.data;
  g.a_row = p.a.row_stride;
  g.a_batch = p.a.batch_stride;
  g.b = p.b.data;
  g.b_row = p.b.row_stride;
  g.b_batch = p.b.batch_stride;
  g.sfa = p.sfa.data;
  g.sfa_batch = p.sfa.batch_stride;
  g.sfb = p.sfb.data;
  g.sfb_batch = p.sfb.batch_stride;
  g.d = p.c.data;
  g.d_row = p.c.row_stride;
  g.d_batch = p.c.batch_stride;
  g.alpha = p.alpha.value;
  g.alpha_ptr = p.alpha.device_ptr;
  g.out_bf16 = p.c.dtype == DType::kBFloat16 ? 1 : 0;
  g.device = exec.device;
  g.sm_count = exec.sm_count;
  return g;
}

size_t gemm_cutlass_workspace(GemmConfig cfg, const DenseGemmArgs& g) {
  return cfg == GemmConfig::k2SmPersistent ? gemm_2sm_workspace(g) : gemm_1sm_workspace(g);
}

// Scales in the layout the kernel reads: the caller's blocked tensors, or copies
// (dense batches, padding zeroed) in the workspace.
void point_scales_at(DenseGemmArgs& g, const GemmProblem& p, const GemmWorkspace& w) {
  if (w.sfa) {
    g.sfa = w.sfa;
    g.sfa_batch = blocked_sf_bytes(p.M, p.K);
  }
  if (w.sfb) {
    g.sfb = w.sfb;
    g.sfb_batch = blocked_sf_bytes(p.N, p.K);
  }
}

}  // namespace

nvfp4_status_t gemm(const GemmProblem& p, const Exec& exec) {
  if (const char* why = gemm_unsupported(p)) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a gemm: %s", why);
  const GemmConfig cfg = choose_gemm_config(p.M, p.N, p.L, exec.sm_count);
  DenseGemmArgs g = dense_args(p, exec);
  const GemmWorkspace w = carve_gemm_workspace(exec.workspace, p, gemm_cutlass_workspace(cfg, g));
  if (w.required > 0 && (!exec.workspace || exec.workspace_bytes < w.required))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a gemm: needs a workspace of %zu bytes (got %zu)", w.required,
                exec.workspace ? exec.workspace_bytes : size_t(0));
  point_scales_at(g, p, w);
  const char* why = cfg == GemmConfig::k2SmPersistent ? gemm_2sm_check(g) : gemm_1sm_check(g);
  if (why) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a gemm: %s", why);

  const cudaStream_t stream = cuda_stream(exec);
  SwizzleBatch jobs;
  if (w.sfa) {
    SwizzleJob& j = jobs.jobs[jobs.count++];
    j.dst = static_cast<uint8_t*>(w.sfa);
    j.rows = p.M; j.K = p.K; j.L = p.L;
    j.src[0] = ScaleSource{p.sfa.data, p.sfa.layout, p.sfa.row_stride, p.sfa.batch_stride};
  }
  if (w.sfb) {
    SwizzleJob& j = jobs.jobs[jobs.count++];
    j.dst = static_cast<uint8_t*>(w.sfb);
    j.rows = p.N; j.K = p.K; j.L = p.L;
    j.src[0] = ScaleSource{p.sfb.data, p.sfb.layout, p.sfb.row_stride, p.sfb.batch_stride};
  }
  const nvfp4_status_t st = launch_swizzle(jobs, stream);
  if (st != NVFP4_SUCCESS) return st;
  return cfg == GemmConfig::k2SmPersistent ? gemm_2sm_run(g, w.cutlass, stream) : gemm_1sm_run(g, w.cutlass, stream);
}

namespace {

// ---------------------------------------------------------------------------
// Dual GEMM (dual.cu / dual_kernel.cuh: one kernel, two TMEM accumulators)
// ---------------------------------------------------------------------------
DualGemmArgs dual_args(const DualGemmProblem& p, const Exec& exec, const DualWorkspace& w) {
  DualGemmArgs g;
  g.M = static_cast<int>(p.M);
  g.N = static_cast<int>(p.N);
  g.K = static_cast<int>(p.K);
  g.L = static_cast<int>(p.L);
  g.a = p.a.data;
  g.a_row = p.a.row_stride;
  g.a_batch = p.a.batch_stride;
  g.b1 = p.b1.data;
  g.b1_row = p.b1.row_stride;
  g.b1_batch = p.b1.batch_stride;
  g.b2 = p.b2.data;
  g.b2_row = p.b2.row_stride;
  g.b2_batch = p.b2.batch_stride;
  // scales: the caller's blocked tensors, or the copies (dense batches) in the workspace
  g.sfa = w.sfa ? w.sfa : p.sfa.data;
  g.sfa_batch = w.sfa ? blocked_sf_bytes(p.M, p.K) : p.sfa.batch_stride;
  g.sfb1 = w.sfb1 ? w.sfb1 : p.sfb1.data;
  g.sfb1_batch = w.sfb1 ? blocked_sf_bytes(p.N, p.K) : p.sfb1.batch_stride;
  g.sfb2 = w.sfb2 ? w.sfb2 : p.sfb2.data;
  g.sfb2_batch = w.sfb2 ? blocked_sf_bytes(p.N, p.K) : p.sfb2.batch_stride;
  g.d = p.c.data;
  g.d_row = p.c.row_stride;
  g.d_batch = p.c.batch_stride;
  g.alpha1 = p.alpha1.value;
  g.alpha2 = p.alpha2.value;
  g.alpha1_ptr = p.alpha1.device_ptr;
  g.alpha2_ptr = p.alpha2.device_ptr;
  g.activation = static_cast<int>(p.activation);
  g.out_bf16 = p.c.dtype == DType::kBFloat16 ? 1 : 0;
  g.device = exec.device;
  return g;
}

void add_swizzle_job(SwizzleBatch& jobs, void* dst, const ScaleOperand& s, int64_t rows, int64_t K, int64_t L) {
  if (!dst) return;
  SwizzleJob& j = jobs.jobs[jobs.count++];
  j.dst = static_cast<uint8_t*>(dst);
  j.rows = rows; j.K = K; j.L = L;
  j.src[0] = ScaleSource{s.data, s.layout, s.row_stride, s.batch_stride};
}

}  // namespace

nvfp4_status_t dual_gemm(const DualGemmProblem& p, const Exec& exec) {
  if (const char* why = dual_unsupported(p)) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a dual gemm: %s", why);
  const DualWorkspace w = carve_dual_workspace(exec.workspace, p);
  if (w.required > 0 && (!exec.workspace || exec.workspace_bytes < w.required))
    return fail(NVFP4_ERROR_NOT_SUPPORTED,
                "sm100a dual gemm: needs a workspace of %zu bytes (got %zu); see dual_gemm_workspace_size",
                w.required, exec.workspace ? exec.workspace_bytes : size_t(0));
  const DualGemmArgs g = dual_args(p, exec, w);
  if (const char* why = dual_check(g)) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a dual gemm: %s", why);

  const cudaStream_t stream = cuda_stream(exec);
  SwizzleBatch jobs;
  add_swizzle_job(jobs, w.sfa, p.sfa, p.M, p.K, p.L);
  add_swizzle_job(jobs, w.sfb1, p.sfb1, p.N, p.K, p.L);
  add_swizzle_job(jobs, w.sfb2, p.sfb2, p.N, p.K, p.L);
  const nvfp4_status_t st = launch_swizzle(jobs, stream);
  if (st != NVFP4_SUCCESS) return st;
  return dual_run(g, stream);
}

size_t gemm_workspace(const GemmProblem& p, const Exec& exec) {
  // Problems this backend leaves to the next one need nothing from the caller.
  if (gemm_shape_unsupported(p)) return 0;
  const GemmConfig cfg = choose_gemm_config(p.M, p.N, p.L, exec.sm_count);
  return carve_gemm_workspace(nullptr, p, gemm_cutlass_workspace(cfg, dense_args(p, exec))).required;
}

size_t dual_gemm_workspace(const DualGemmProblem& p, const Exec&) {
  if (dual_unsupported(p)) return 0;
  return carve_dual_workspace(nullptr, p).required;
}

}  // namespace sm100

const BackendOps* sm100a_backend() {
  static const BackendOps ops = [] {
    BackendOps o;
    o.id = NVFP4_BACKEND_SM100A;
    o.gemv = sm100::gemv;
    o.gemm = sm100::gemm;
    o.gemm_workspace = sm100::gemm_workspace;
    o.dual_gemm = sm100::dual_gemm;
    o.dual_gemm_workspace = sm100::dual_gemm_workspace;
    o.grouped_gemm = sm100::grouped_gemm;
    o.grouped_gemm_workspace = sm100::grouped_gemm_workspace;
    o.grouped_gemm_packed = sm100::grouped_gemm_packed;
    o.grouped_gemm_packed_workspace = sm100::grouped_gemm_packed_workspace;
    return o;
  }();
  return &ops;
}

}  // namespace nvfp4
