// Scale preparation for the tensor-core kernels, written into the caller's workspace:
// scales (linear, or blocked for re-ordering) -> the blocked layout CUTLASS's
// Sm1xxBlockScaledConfig reads (== nvfp4::blocked_sf_offset, checked on the CPU by
// tests/sm100_host), padding written as zero. Output-driven: every destination word
// is written exactly once.
#include <cuda_runtime_api.h>

#include "../common/cuda_check.hpp"
#include "../common/formats.h"
#include "kernels.hpp"
#include "scale_map.hpp"

namespace nvfp4::sm100 {
namespace {

constexpr int kThreads = 256;

// One thread per 4-byte word of the destination (4 scale columns of one row).
__global__ void __launch_bounds__(kThreads) swizzle_scales_kernel(const __grid_constant__ SwizzleBatch batch) {
  const SwizzleJob& job = batch.jobs[blockIdx.y];
  const BlockedGeometry geo = blocked_geometry(job.rows, job.K);
  const int64_t total = geo.words_per_batch * job.L;
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; w < total;
       w += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t l = w / geo.words_per_batch;
    const BlockedWord bw = blocked_word(geo, w - l * geo.words_per_batch);
    const uint32_t value = gather_scale_word(job, geo, l, bw);
    reinterpret_cast<uint32_t*>(job.dst + l * geo.bytes_per_batch)[bw.word] = value;
  }
}

unsigned grid_for(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

}  // namespace

nvfp4_status_t launch_swizzle(const SwizzleBatch& batch, cudaStream_t stream) {
  if (batch.count == 0) return NVFP4_SUCCESS;
  int64_t most = 0;
  for (int j = 0; j < batch.count; ++j) {
    const BlockedGeometry geo = blocked_geometry(batch.jobs[j].rows, batch.jobs[j].K);
    const int64_t words = geo.words_per_batch * batch.jobs[j].L;
    most = words > most ? words : most;
  }
  const dim3 grid(grid_for(most), static_cast<unsigned>(batch.count));
  swizzle_scales_kernel<<<grid, kThreads, 0, stream>>>(batch);
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
}

}  // namespace nvfp4::sm100
