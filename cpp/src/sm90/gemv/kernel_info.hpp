// Host side shared by the MMA GEMV (gemv.cu) and the decode-regime kernels' launchers
// (gemm_decode.cu, dual_gemm.cu, grouped_packed.cu): the resources of one kernel on a device,
// which their plans (plan.hpp, decode_plan.hpp) turn into CTAs per SM (cached per device:
// common/device_cache.hpp; by gemv.cu for the GEMV, here for the decode kernels), and a decode
// plan turned into a launch.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>

#include "../../common/cuda_check.hpp"
#include "../../common/device_cache.hpp"
#include "../launch.hpp"
#include "decode_plan.hpp"
#include "plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// Registers, static shared memory and the SM's limits for `kernel` on `device`; raises the
// kernel's dynamic shared memory limit to the opt-in maximum on the way (once per device).
inline nvfp4_status_t query_kernel_info(int device, const void* kernel, MmaKernelInfo& v) {
  cudaFuncAttributes fa;
  NVFP4_CUDA_TRY(cudaFuncGetAttributes(&fa, kernel));
  v.regs = fa.numRegs;
  int optin = 0;
  NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&v.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&v.regs_per_sm, cudaDevAttrMaxRegistersPerMultiprocessor, device));
  NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  v.static_smem = static_cast<int>(fa.sharedSizeBytes);
  v.max_smem_block = optin - v.static_smem;
  NVFP4_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, v.max_smem_block));
  return NVFP4_SUCCESS;
}

// v.cluster_ctas (plan.hpp) for `kernel` on the current device: for p = 1..8 CTAs per SM (set by the
// dynamic shared memory of a one-warp block, so that registers do not decide p; each CTA's
// footprint a multiple of the SM's 128-byte allocation unit, as the decode kernels' are) and
// clusters of s = 2..8, max_active_clusters (launch.hpp) x s. 56 queries, once per device and
// kernel (the callers' caches); query_kernel_info first (it raises the shared memory limit). A
// query the driver refuses leaves its entry 0 (the plan then does not use that cluster size): a
// missing entry costs speed, not the call.
inline void query_cluster_ctas(const void* kernel, MmaKernelInfo& v) {
  for (int p = 1; p <= kClusterTablePerSm; ++p) {
    int smem = v.smem_per_sm / p / 128 * 128 - 1024 - v.static_smem;  // (1 KB reserved per CTA)
    if (smem <= 0) continue;
    if (smem > v.max_smem_block) smem = v.max_smem_block;
    for (int s = 2; s <= kClusterTableSize; ++s) {
      const int n = max_active_clusters(kernel, 32, static_cast<size_t>(smem), s);
      v.cluster_ctas[p][s] = n == kNoClusterLimit ? 0 : n * s;
    }
  }
}
// The decode kernels' resources: query_kernel_info and the cluster table their plan reads.
inline nvfp4_status_t query_decode_kernel_info(int device, const void* kernel, MmaKernelInfo& v) {
  const nvfp4_status_t st = query_kernel_info(device, kernel, v);
  if (st == NVFP4_SUCCESS) query_cluster_ctas(kernel, v);
  return st;
}

// query_decode_kernel_info of `kernel` on `device`, cached per device and kernel: one table for the
// instances of every decode route (dense, dual, MoE: 22), keyed by the kernel's address, so that no
// launcher keeps slot arithmetic of its own. A kernel past the table's kDecodeInfoSlots entries is
// queried on every call (correct, slow).
constexpr int kDecodeInfoSlots = 32;
inline nvfp4_status_t decode_kernel_info(int device, const void* kernel, MmaKernelInfo* out) {
  static std::atomic<const void*> keys[kDecodeInfoSlots];
  static PerDeviceCache<MmaKernelInfo> caches[kDecodeInfoSlots];
  auto make = [device, kernel](MmaKernelInfo& v) { return query_decode_kernel_info(device, kernel, v); };
  for (int i = 0; i < kDecodeInfoSlots; ++i) {
    const void* k = keys[i].load(std::memory_order_acquire);
    if (k == nullptr) {  // claim the first free slot (another thread may claim it first)
      const void* expected = nullptr;
      if (keys[i].compare_exchange_strong(expected, kernel, std::memory_order_acq_rel)) k = kernel;
      else k = expected;
    }
    if (k == kernel) return caches[i].get(device, make, out);
  }
  return make(*out);
}

// A decode-regime launch from its plan (decode_plan.hpp decode_launch): the plan's
// shape-dependent kernel parameters written into `a`, and the grid, block, shared memory,
// cluster (the K split) and programmatic dependent launch of the kernel.
inline LaunchShape decode_launch_shape(const DecodeLaunch& dl, DecodeArgs* a) {
  a->tile_cap = dl.tile_cap;
  a->cluster_k = dl.kc;
  a->stages_per_cta = dl.stages_per_cta;
  a->groups_per_batch = dl.groups_per_batch;
  LaunchShape ls;
  ls.grid = dim3(static_cast<unsigned>(dl.ctas), 1, 1);
  ls.block = dim3(static_cast<unsigned>(32 * dl.warps), 1, 1);
  ls.smem = dl.smem_launch;
  ls.cluster_x = dl.kc > 1 ? static_cast<unsigned>(dl.kc) : 0u;
  ls.pdl = a->pdl != 0;
  return ls;
}

}  // namespace nvfp4::sm90::gemv_detail
