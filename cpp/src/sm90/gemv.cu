// Hopper (sm90a) NVFP4 GEMV launcher:  c[l, m] = alpha * sum_k A[l, m, k] * B[l, 0, k].
//
// Memory bound: A (+ its scales) is streamed once at HBM speed; everything else is
// small. Two kernels (docs/design.md "Backends"):
//   gemv/mma_kernel.cuh  int8 tensor cores on exactly decoded values, a cp.async ring
//                        per warp, optional K split over a 2-CTA cluster: large M*L.
//   gemv/reg_kernel.cuh  CUDA cores, register double buffer, K split across warps:
//                        small M*L and misaligned operands.
//   gemv/plan.hpp        which kernel, with which shape (occupancy model), the kernel
//                        parameters: pure host code, unit-tested on the CPU.
// Both decode b once per CTA into shared memory, accumulate in fp32 with one rounding
// per scale block, reduce with warp shuffles and shared memory: no workspace, no
// atomics, deterministic. Both are launched as programmatic dependents (PDL): launch
// and CTA start-up overlap the preceding grid's tail.
// This file: the per-device kernel resources the plan needs, and the launches.
// Status and measurements: bench/NOTES.md "GEMV (sm90a)".
#include <cuda_runtime.h>
#include <stdint.h>

#include "../backends.hpp"
#include "../common/cuda_check.hpp"
#include "../common/device_cache.hpp"
#include "../problem.hpp"
#include "gemv/kernel_info.hpp"
#include "gemv/mma_kernel.cuh"
#include "gemv/plan.hpp"
#include "gemv/reg_kernel.cuh"
#include "launchers.hpp"

namespace nvfp4::sm90 {
namespace gemv_detail {

// Launches `kernel` with the programmatic-stream-serialization attribute when args.pdl
// is set (the kernels wait for the preceding grid before any global access), and as
// clusters of `cluster` CTAs when cluster > 1.
template <typename Kernel, typename... KArgs>
nvfp4_status_t launch_ex(Kernel kernel, const Args& args, int64_t ctas, int threads, size_t smem,
                         cudaStream_t stream, int cluster, KArgs... kargs) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(ctas), 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2] = {};
  int n_attr = 0;
  if (cluster > 1) {
    attr[n_attr].id = cudaLaunchAttributeClusterDimension;
    attr[n_attr].val.clusterDim.x = static_cast<unsigned>(cluster);
    attr[n_attr].val.clusterDim.y = 1;
    attr[n_attr].val.clusterDim.z = 1;
    ++n_attr;
  }
  if (args.pdl != 0) {
    attr[n_attr].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n_attr].val.programmaticStreamSerializationAllowed = 1;
    ++n_attr;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n_attr;
  NVFP4_CUDA_TRY(cudaLaunchKernelEx(&cfg, kernel, args, kargs...));
  return NVFP4_SUCCESS;
}

// ---- register kernel ---------------------------------------------------------------

// Shape S of kRegShapes (plan.hpp); kAligned: 16-byte loads, else byte loads.
template <int S, bool kAligned>
nvfp4_status_t launch_reg(const Args& args, int64_t ctas, size_t smem, cudaStream_t stream) {
  constexpr RegShape r = kRegShapes[S];
  return launch_ex(gemv_reg_kernel<r.R, r.U, r.WK, kAligned>, args, ctas, kRegThreads, smem, stream, 1);
}

template <bool kAligned>
nvfp4_status_t launch_reg_shape(int shape, const Args& args, int64_t ctas, size_t smem, cudaStream_t s) {
  static_assert(kNumRegShapes == 4, "one case per register-kernel shape");
  switch (shape) {
    case 0: return launch_reg<0, kAligned>(args, ctas, smem, s);
    case 1: return launch_reg<1, kAligned>(args, ctas, smem, s);
    case 2: return launch_reg<2, kAligned>(args, ctas, smem, s);
    case 3: return launch_reg<3, kAligned>(args, ctas, smem, s);
    default: break;
  }
  return fail(NVFP4_ERROR_INTERNAL, "sm90a gemv: unknown register-kernel shape %d", shape);
}

// ---- MMA kernel --------------------------------------------------------------------

// The kernel's resources on `device`, queried once per device (and the kernel's dynamic
// shared memory limit raised to the opt-in maximum on the way).
template <bool kBlocked>
nvfp4_status_t mma_info(int device, MmaKernelInfo* out) {
  static PerDeviceCache<MmaKernelInfo> cache;
  return cache.get(device, [device](MmaKernelInfo& v) {
    return query_kernel_info(device, reinterpret_cast<const void*>(gemv_mma_kernel<kMmaSC, kMmaDepth, kBlocked, kMmaLPR>),
                             v);
  }, out);
}

template <bool kBlocked>
nvfp4_status_t launch_mma(Args args, MmaShape shape, bool even_spread, const Exec& exec, int sm_count, int64_t L) {
  MmaKernelInfo info;
  const nvfp4_status_t st = mma_info<kBlocked>(exec.device, &info);
  if (st != NVFP4_SUCCESS) return st;
  if (shape.ks <= 0 || shape.wt <= 0) {
    shape = choose_mma_shape(info, args.nchunks, args.tasks_per_batch, L, sm_count);
    if (shape.ks == 0) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: shared memory too small");
  }
  const MmaLaunch ml = mma_launch(info, shape, args.nchunks, args.tasks_per_batch, L, sm_count, even_spread);
  if (ml.unsupported) return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s", ml.unsupported);
  args.cluster_k = ml.kc;
  args.stages_per_cta = ml.stages_per_cta;
  args.tile_cap = ml.tile_cap;
  args.groups_per_batch = ml.groups_per_batch;
  return launch_ex(gemv_mma_kernel<kMmaSC, kMmaDepth, kBlocked, kMmaLPR>, args, ml.ctas, 32 * ml.warps,
                   ml.smem_launch, cuda_stream(exec), ml.kc, shape.ks);
}

// Runs `cfg` (plan.hpp's choose_gemv, or one built by hand for a benchmark) on a
// problem that gemv_unsupported accepts; the MMA kernel falls back to the register
// kernel where its alignment does not hold.
inline nvfp4_status_t launch_gemv(const GemmProblem& p, const Exec& exec, const GemvConfig& cfg, int sm_count) {
  if (p.M <= 0 || p.L <= 0) return NVFP4_SUCCESS;
  Args args = make_args(p, cfg);
  const GemvAlignment al = gemv_alignment(p);
  if (cfg.kernel == GemvKernel::kMma && al.mma_ok) {
    return args.sf_blocked ? launch_mma<true>(args, cfg.mma, cfg.even_spread, exec, sm_count, p.L)
                           : launch_mma<false>(args, cfg.mma, cfg.even_spread, exec, sm_count, p.L);
  }
  const int shape = cfg.kernel == GemvKernel::kMma ? choose_reg_shape(p.M, p.L, sm_count) : cfg.reg_shape;
  if (shape < 0 || shape >= kNumRegShapes)
    return fail(NVFP4_ERROR_INTERNAL, "sm90a gemv: unknown register-kernel shape %d", shape);
  const RegLaunch rl = reg_launch(shape, p.M, p.L, args.tile_cap);
  if (rl.unsupported) return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s", rl.unsupported);
  args.groups_per_batch = rl.groups_per_batch;
  cudaStream_t stream = cuda_stream(exec);
  return al.aligned ? launch_reg_shape<true>(shape, args, rl.ctas, rl.smem, stream)
                    : launch_reg_shape<false>(shape, args, rl.ctas, rl.smem, stream);
}

}  // namespace gemv_detail

nvfp4_status_t gemv(const GemmProblem& p, const Exec& exec) {
  using namespace gemv_detail;
  if (exec.cc_major != 9 || exec.cc_minor != 0)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: needs a CC 9.0 device");
  if (const char* why = gemv_unsupported(p)) return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s", why);
  if (p.M <= 0 || p.L <= 0) return NVFP4_SUCCESS;
  int sm_count = exec.sm_count;
  if (sm_count <= 0) NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, exec.device));
  return launch_gemv(p, exec, choose_gemv(p, sm_count), sm_count);
}

}  // namespace nvfp4::sm90
