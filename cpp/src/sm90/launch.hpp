// The one launch path of the sm90a GEMM family (gemm.cu, grouped_packed.cu, dual_gemm.cu):
// cudaLaunchKernelEx with an optional thread-block cluster along x and an optional
// programmatic dependent launch (PDL), every return code checked; and the once-per-device
// opt-in to more than 48 KB of dynamic shared memory. Host code only.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <initializer_list>
#include <type_traits>
#include <utility>

#include "../common/cuda_check.hpp"
#include "../common/device_cache.hpp"

namespace nvfp4::sm90 {

struct LaunchShape {
  dim3 grid;
  dim3 block;
  size_t smem = 0;         // dynamic shared memory, bytes
  unsigned cluster_x = 0;  // > 0: clusters of cluster_x x 1 x 1 CTAs (the attribute is set even for 1)
  bool pdl = false;        // programmatic stream serialization: the kernel may start before the grid
                           // in front of it completes and waits for it with griddepcontrol.wait.
                           // Every such kernel must have a CTA that waits before it can exit: a chain
                           // (staging -> pass -> GEMM) orders the GEMM's early weight loads after the
                           // staging writes only because each link waits before it triggers.
};

// cudaLaunchConfig_t of a LaunchShape (also what the occupancy queries take). Not
// copyable: the config points at its own attributes.
class LaunchConfig {
 public:
  LaunchConfig(const LaunchShape& shape, cudaStream_t stream) {
    unsigned n = 0;
    if (shape.cluster_x > 0) {
      attr_[n].id = cudaLaunchAttributeClusterDimension;
      attr_[n].val.clusterDim.x = shape.cluster_x;
      attr_[n].val.clusterDim.y = 1;
      attr_[n].val.clusterDim.z = 1;
      ++n;
    }
    if (shape.pdl) {
      attr_[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr_[n].val.programmaticStreamSerializationAllowed = 1;
      ++n;
    }
    cfg_.gridDim = shape.grid;
    cfg_.blockDim = shape.block;
    cfg_.dynamicSmemBytes = shape.smem;
    cfg_.stream = stream;
    cfg_.attrs = n > 0 ? attr_ : nullptr;
    cfg_.numAttrs = n;
  }
  LaunchConfig(const LaunchConfig&) = delete;
  LaunchConfig& operator=(const LaunchConfig&) = delete;
  const cudaLaunchConfig_t* get() const { return &cfg_; }

 private:
  cudaLaunchAttribute attr_[2] = {};
  cudaLaunchConfig_t cfg_ = {};
};

template <class... Params, class... Args>
nvfp4_status_t launch(void (*kernel)(Params...), const LaunchShape& shape, cudaStream_t stream, Args&&... args) {
  const LaunchConfig cfg(shape, stream);
  NVFP4_CUDA_TRY(cudaLaunchKernelEx(cfg.get(), kernel, std::forward<Args>(args)...));
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
}

// launch() without its by-value copy of the argument (cudaLaunchKernelEx's template coerces
// every argument into a local first): for parameter blocks of several KB (the grouped GEMM's
// 23.9 KB, the grouped scale staging's 4.6 KB) kept off small thread stacks.
template <class Params>
nvfp4_status_t launch_params(void (*kernel)(Params), const LaunchShape& shape, cudaStream_t stream,
                             const std::remove_cv_t<std::remove_reference_t<Params>>* params) {
  const LaunchConfig cfg(shape, stream);
  void* args[] = {const_cast<void*>(static_cast<const void*>(params))};
  NVFP4_CUDA_TRY(cudaLaunchKernelExC(cfg.get(), reinterpret_cast<const void*>(kernel), args));
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
}

// Clusters of `splits` CTAs of `kernel` (`threads` per CTA, `smem` bytes of dynamic shared
// memory) that can be resident at once; a failed query counts as no limit (kNoClusterLimit).
// The kernel's shared-memory limit must have been raised (opt_in_smem). Callers cache it.
constexpr int kNoClusterLimit = 1 << 20;
inline int max_active_clusters(const void* kernel, unsigned threads, size_t smem, int splits) {
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(splits), 1, 1);
  shape.block = dim3(threads, 1, 1);
  shape.smem = smem;
  shape.cluster_x = static_cast<unsigned>(splits);
  const LaunchConfig cfg(shape, nullptr);
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, cfg.get()) != cudaSuccess) {
    (void)cudaGetLastError();
    return kNoClusterLimit;
  }
  return n;
}

// Raises each kernel's dynamic shared-memory limit to its size, once per device (`done`:
// owned by the caller; a host-side cost of ~µs per call otherwise).
struct SmemOptIn {
  const void* kernel;
  size_t bytes;
};
using SmemOptInDone = PerDeviceCache<bool>;
inline nvfp4_status_t opt_in_smem(SmemOptInDone& done, int device, std::initializer_list<SmemOptIn> kernels) {
  bool unused = false;
  return done.get(device, [&](bool&) -> nvfp4_status_t {
    for (const SmemOptIn& k : kernels)
      NVFP4_CUDA_TRY(
          cudaFuncSetAttribute(k.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(k.bytes)));
    return NVFP4_SUCCESS;
  }, &unused);
}

}  // namespace nvfp4::sm90
