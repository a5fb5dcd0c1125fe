// Host side shared by the MMA GEMV (gemv.cu) and the decode-regime GEMM (gemm_decode.cu):
// the resources of one kernel on a device, which their plans (plan.hpp, decode_plan.hpp)
// turn into CTAs per SM. Callers cache the result per device (common/device_cache.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include "../../common/cuda_check.hpp"
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

}  // namespace nvfp4::sm90::gemv_detail
