// cudaOccupancyMaxActiveClusters x kc (CTAs of one wave in clusters of kc) when p CTAs fit on an SM (dynamic shared
// memory sets p), for an 8-warp and a 1-warp block: the table the decode plan's wave model needs.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void __launch_bounds__(256, 1) k(int* p) { extern __shared__ int s[]; if (p) p[threadIdx.x] = s[threadIdx.x]; }
int main() {
  int smem_sm = 0, optin = 0, sms = 0;
  cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0);
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
  printf("SMs %d, smem/SM %d, opt-in %d\n", sms, smem_sm, optin);
  for (int threads : {256, 32}) for (int p = 1; p <= 8; ++p) {
    int sm = smem_sm / p / 128 * 128 - 1024; if (sm > optin) sm = optin;
    if (threads == 256 && p > 8) continue;
    printf("threads %3d per_sm %d smem %6d:", threads, p, sm);
    for (int kc = 1; kc <= 8; ++kc) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(kc * 64, 1, 1); cfg.blockDim = dim3(threads, 1, 1); cfg.dynamicSmemBytes = sm;
      cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = kc; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
      cfg.attrs = at; cfg.numAttrs = 1;
      int n = -1; cudaError_t e = cudaOccupancyMaxActiveClusters(&n, k, &cfg);
      printf(" %4d", e ? -1 : n * kc);
    }
    printf("\n");
  }
}
