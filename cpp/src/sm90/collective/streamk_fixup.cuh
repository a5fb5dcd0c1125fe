// Stream-K fixup of the sm90a NVFP4 GEMM (pre-decoded path; see tile_scheduler.cuh):
// partial 128x128 fp32 tiles travel through a global workspace, one slot per CTA.
//
// Workspace (after the pre-decoded tokens): int32 flags[ctas], zeroed by the
// pre-decode pass of the same call, then float4 partials[ctas][16][256]: consumer
// thread ctid's 64 accumulators as 16 float4, [j][ctid] so that every warp store and
// load is 512 contiguous bytes. Partials bypass L1 (st/ld .cg); the flag is a
// gpu-scope release store after all 256 consumer threads stored and fenced, read with
// acquire loads by one thread, then a named barrier hands the data to the others.
#pragma once

#include <stdint.h>

#include "ptx.cuh"

namespace nvfp4::sm90 {

struct StreamKFixup {
  static constexpr int kConsumerThreads = 256;
  static constexpr uint32_t kBarrier = 2;  // named barrier of the 256 consumer threads
  static constexpr int64_t kSlotFloat4 = 16 * kConsumerThreads;

  // Non-finisher: publish this CTA's partial tile.
  static __device__ __forceinline__ void publish(float4* partials, int32_t* flags, int32_t cta, int ctid,
                                                 const float (&acc)[64]) {
    float4* dst = partials + cta * kSlotFloat4 + ctid;
#pragma unroll
    for (int j = 0; j < 16; ++j)
      __stcg(dst + j * kConsumerThreads, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
    __threadfence();
    ptx::named_barrier_sync(kBarrier, kConsumerThreads);
    if (ctid == 0) ptx::st_release_gpu(flags + cta, 1);
  }

  // Finisher: acc += partials of CTAs [begin, end), in that order (deterministic).
  static __device__ __forceinline__ void accumulate(const float4* partials, const int32_t* flags, int32_t begin,
                                                    int32_t end, int ctid, float (&acc)[64]) {
    if (begin >= end) return;
    if (ctid == 0)
      for (int32_t q = begin; q < end; ++q)
        while (ptx::ld_acquire_gpu(flags + q) == 0) __nanosleep(100);
    ptx::named_barrier_sync(kBarrier, kConsumerThreads);
    for (int32_t q = begin; q < end; ++q) {
      const float4* src = partials + q * kSlotFloat4 + ctid;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const float4 v = __ldcg(src + j * kConsumerThreads);
        acc[4 * j + 0] += v.x;
        acc[4 * j + 1] += v.y;
        acc[4 * j + 2] += v.z;
        acc[4 * j + 3] += v.w;
      }
    }
  }
};

}  // namespace nvfp4::sm90
