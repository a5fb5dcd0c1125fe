// Session 28 probe: how many clusters of C CTAs (384 threads, ~226 KB dynamic smem: the grouped kernel's
// footprint) are co-resident on this GPU: cudaOccupancyMaxActiveClusters, and a launch of 128 CTAs in clusters
// of C that spin 200 µs each and record their start time (two start waves = not co-resident).
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
__global__ void __launch_bounds__(384, 1) k(unsigned long long* t) {
  extern __shared__ char s[];
  unsigned long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  if (threadIdx.x == 0) t[blockIdx.x] = t0;
  unsigned long long t1 = t0;
  while (t1 - t0 < 200000) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  if (threadIdx.x == 0) s[0] = 1;
}
int main() {
  const size_t smem = 226 * 1024;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  unsigned long long* d; cudaMalloc(&d, 256 * 8);
  for (int C : {1, 2, 4, 8}) {
    cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute a[1];
    a[0].id = cudaLaunchAttributeClusterDimension; a[0].val.clusterDim.x = C; a[0].val.clusterDim.y = 1; a[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(128); cfg.blockDim = dim3(384); cfg.dynamicSmemBytes = smem; cfg.attrs = a; cfg.numAttrs = 1;
    int n = -1; cudaError_t e = cudaOccupancyMaxActiveClusters(&n, (void*)k, &cfg);
    cudaLaunchKernelEx(&cfg, k, d); cudaError_t e2 = cudaDeviceSynchronize();
    std::vector<unsigned long long> t(128); cudaMemcpy(t.data(), d, 128 * 8, cudaMemcpyDeviceToHost);
    unsigned long long lo = *std::min_element(t.begin(), t.end());
    int late = 0; for (auto x : t) late += (x - lo) > 100000;
    printf("cluster %d: max active clusters %d (%s), launch %s: %d of 128 CTAs started > 100 us after the first\n", C, n,
           cudaGetErrorString(e), cudaGetErrorString(e2), late);
  }
}
