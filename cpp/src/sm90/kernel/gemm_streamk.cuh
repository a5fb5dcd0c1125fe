// The stream-K pre-decoded sm90a NVFP4 GEMM kernel (gemm_schedule.hpp choose_streamk says where).
//
// The problem's tiles x K blocks form one sequence of units u = tile * num_kb + kb (tiles in
// the persistent numbering: weight tile fastest, then token tile, batch), cut into ranges
// [r * U, (r + 1) * U), U = sk.units, one per CTA. A range holds the tail of one tile (a later
// K range), whole tiles, the head of another (its first K blocks), walked in that order
// through the persistent kernel's ring (MainloopRSPredecoded::run_producer / run_segment keep
// their ring positions across segments), so the producer loads the next segment while the
// consumers finish this one.
//
// A segment's end:
//   - a whole tile: stored straight from registers (EpilogueClusterReduce::store_fragment);
//   - a tile's later K range (it starts inside the tile, so it is the range's first segment
//     and a range has at most one): its fp32 fragment goes to the range's workspace slot, then
//     the range's flag is released;
//   - a tile's first K range that does not finish it (the range's last segment): the owner.
//     It waits for the flags of the ranges that start inside the tile (r + 1 .. the range
//     holding the tile's last unit), adds their partials in range order (deterministic) and
//     stores. Those ranges computed their part first and wait on nothing before it.
// Range r runs on CTA gridDim.x - 1 - r: the ranges an owner waits for belong to CTAs with
// lower blockIdx, which the hardware dispatches first (a 1-D grid goes out in blockIdx order
// on the GPUs we know; CUDA does not promise it, and a scheme needing no promise would take
// each CTA's range from an atomic ticket), so they are running or done when the owner waits,
// whatever else holds the other SMs (MPS limits, green contexts, another stream's persistent
// kernel waiting for this one's output). Range r on CTA r would make an owner wait for CTAs
// not yet dispatched: a hang if other work held the remaining SMs until this kernel finished.
// The flags are zeroed by the token pass in front (kernel/token_predecode.cuh), which this
// kernel's consumers wait for (griddepcontrol.wait) before touching the workspace. This kernel
// must never trigger its dependents early (griddepcontrol.launch_dependents): their CTAs would
// take SMs before this grid's last CTAs are dispatched.
//
// Measured (H100, graph µs, tiled plan -> stream-K, bench/NOTES.md session 18): 8500x64x4096
// (swapped) 39.9 -> 28.7, 640x1792x4096 32.7 -> 28.0, 408x7168^2 86.7 -> 76.6, 1100x2100x4096
// 55.0 -> 49.5, 512x3072x4096 34.8 -> 32.2; M = 137..272 at 7168^2 within 2% (their cost is the
// second token tile's weight decode, not idle SMs).
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "../collective/epilogue_cluster_reduce.cuh"
#include "../collective/mainloop_rs_predecoded.cuh"
#include "../ptx.cuh"
#include "gemm_params.cuh"
#include "gemm_persistent.cuh"

namespace nvfp4::sm90 {

struct StreamKParams {
  float* partials;   // [range][kAccRegs / 4][256 consumer threads] float4
  uint32_t* flags;   // [range]: 1 once the range's partial is written (0 before: the token pass)
  int32_t units;     // units per CTA
  int32_t total;     // tiles * num_kb (< 2^31: choose_streamk; 32-bit unit arithmetic keeps the
                     // producer warp's 40 registers free of 64-bit division)
};

namespace streamk_detail {

constexpr uint32_t kConsumerBarrier = 2;  // named barrier of the 256 consumer threads (1: the tile kernels')

__device__ __forceinline__ uint32_t ld_acquire_gpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_gpu(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// One consumer thread's fragment in its slot: float4 j of thread ctid at (j * 256 + ctid), so
// a warp's access is 512 contiguous bytes. L2 only (.cg): the owner runs on another SM.
template <int kAccRegs>
__device__ __forceinline__ void write_partial(float* slot, int ctid, const float (&v)[kAccRegs]) {
  float4* d = reinterpret_cast<float4*>(slot);
#pragma unroll
  for (int j = 0; j < kAccRegs / 4; ++j)
    __stcg(d + j * 256 + ctid, make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]));
}
template <int kAccRegs>
__device__ __forceinline__ void add_partial(const float* slot, int ctid, float (&v)[kAccRegs]) {
  const float4* d = reinterpret_cast<const float4*>(slot);
#pragma unroll
  for (int j = 0; j < kAccRegs / 4; ++j) {
    const float4 f = __ldcg(d + j * 256 + ctid);
    v[4 * j] += f.x;
    v[4 * j + 1] += f.y;
    v[4 * j + 2] += f.z;
    v[4 * j + 3] += f.w;
  }
}

}  // namespace streamk_detail

template <int kTileX>
__global__ void __launch_bounds__(MainloopRSPredecodedT<kTileX>::kThreads, 1)
    nvfp4_sm90_gemm_streamk_kernel(const __grid_constant__ CUtensorMap tmap_w,
                                   const __grid_constant__ CUtensorMap tmap_xh,
                                   const __grid_constant__ CUtensorMap tmap_sfw, const GemmParams p,
                                   const StreamKParams sk) {
  using MainloopPre = MainloopRSPredecodedT<kTileX>;
  using Epilogue = EpilogueClusterReduceT<kTileX>;
  constexpr int kAccRegs = MainloopPre::kAccRegs;
  static_assert(kAccRegs % 4 == 0, "float4 partials");
  extern __shared__ uint8_t smem_raw[];
  typename MainloopPre::SharedStorage& s = shared_storage<typename MainloopPre::SharedStorage>(smem_raw);
  const int32_t kb = p.num_kb;
  const int32_t range = static_cast<int32_t>(gridDim.x - 1 - blockIdx.x);  // (why reversed: above)
  const int32_t begin = range * sk.units;
  const int32_t end = sk.total - begin > sk.units ? begin + sk.units : sk.total;  // (no 32-bit overflow)
  if (threadIdx.x == 0) {
    MainloopPre::init_barriers(s, p);
    ptx::tma_prefetch_desc(&tmap_w);
    ptx::tma_prefetch_desc(&tmap_xh);
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    ptx::setmaxnreg_dec<MainloopPre::kProducerRegs>();
    if (threadIdx.x < 32) {
      const typename MainloopPre::TmaDescs tm{&tmap_w, &tmap_xh, &tmap_sfw};
      typename MainloopPre::RingCursor rc;
#pragma unroll 1
      for (int32_t u = begin; u < end;) {
        const int32_t t = u / kb, k0 = u - t * kb;
        const int32_t n = kb - k0 < end - u ? kb - k0 : end - u;
        int64_t w0, x0;
        int32_t l;
        persistent_tile_origin<kTileX>(p, t, w0, x0, l);
        MainloopPre::run_producer(s, tm, p, w0, x0, l, k0, n, rc);
        u += n;
      }
    }
  } else {
    ptx::setmaxnreg_inc<MainloopPre::kConsumerRegs>();
    const int ctid = threadIdx.x - 128;
    typename MainloopPre::ConsumerState c = MainloopPre::init_consumer(s, p);
    ptx::pdl_wait_primary();  // alpha, C and the workspace's flags belong to the grids before until then
    const float alpha = load_alpha(p);
    const size_t slot_floats = static_cast<size_t>(kAccRegs) * 256;
#pragma unroll 1
    for (int32_t u = begin; u < end;) {
      float sum[kAccRegs];
      {
        const int32_t t = u / kb, k0 = u - t * kb;
        const int32_t n = kb - k0 < end - u ? kb - k0 : end - u;
        MainloopPre::run_segment(s, c, k0, n, sum);
      }
      // (the segment's numbers again, not kept live across the main loop: the consumer's
      // registers are the accumulators')
      asm volatile("" : "+r"(u));
      const int32_t t = u / kb, k0 = u - t * kb;
      const int32_t n = kb - k0 < end - u ? kb - k0 : end - u;
      int64_t w0, x0;
      int32_t l;
      persistent_tile_origin<kTileX>(p, t, w0, x0, l);
      if (k0 != 0) {
        // a later K range of tile t: this CTA's partial, for the tile's owner
        streamk_detail::write_partial<kAccRegs>(sk.partials + static_cast<size_t>(range) * slot_floats, ctid, sum);
        ptx::named_barrier_sync(streamk_detail::kConsumerBarrier, 256);  // every thread's part written
        if (ctid == 0) {
          __threadfence();
          streamk_detail::st_release_gpu(sk.flags + range, 1u);
        }
      } else {
        if (n < kb) {
          // the tile's first K range, the rest in ranges range + 1 .. last: add theirs in order
          const int32_t last = ((t + 1) * kb - 1) / sk.units;
#pragma unroll 1
          for (int32_t q = range + 1; q <= last; ++q) {
            // Every consumer thread acquires q's flag itself (its own loads of q's partial are then
            // ordered after it); the vote keeps the loop's exit warp-uniform. (A thread-0 spin + a
            // named barrier made the whole consumer loop divergent to ptxas: R2UR per HGMMA, +9%
            // instructions per K block, spills.)
            while (!__all_sync(0xFFFFFFFFu, streamk_detail::ld_acquire_gpu(sk.flags + q) != 0u)) __nanosleep(64);
            streamk_detail::add_partial<kAccRegs>(sk.partials + static_cast<size_t>(q) * slot_floats, ctid, sum);
          }
        }
        Epilogue::store_fragment(p, ctid, sum, w0, x0, l, alpha);
      }
      u += n;
    }
  }
}

}  // namespace nvfp4::sm90
