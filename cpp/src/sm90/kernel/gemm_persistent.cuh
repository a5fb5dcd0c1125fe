// The persistent pre-decoded sm90a NVFP4 GEMM kernel, for problems where every output tile
// has one CTA (no split-K: large M) and tiles outnumber SMs.
//
// gridDim.x <= SMs CTAs walk the tiles t = blockIdx.x, blockIdx.x + gridDim.x, ... < `tiles`
// (weight tile fastest, as the non-persistent grid). Tiles from `tiles` on (a partial last
// round of at most half the SMs: gemm_schedule.hpp choose_tail) run on nvfp4_sm90_gemm_tail_kernel
// below, split over clusters, launched behind this kernel (H100, graph µs: 640 x 7168^2
// 140-146 -> 121, 1536 x 7168^2 277-284 -> 255, 1024 x 7168^2 186-189 -> 181; bench/NOTES.md
// session 15). The shared-memory ring continues across tiles
// (MainloopRSPredecoded::run_producer / run_segment keep their ring positions), so warp 0
// loads the next tile while the consumers store the previous one straight from registers
// (EpilogueClusterReduce::store_fragment): no per-tile launch, prologue, first-load wait or
// shared-memory epilogue. Why: -2% on large shapes against one CTA per tile (H100).
//
// kTileX = tokens per tile, as the pre-decoded kernel (128, or 136 where that needs fewer
// token tiles: gemm_schedule.hpp choose_token_tile).
//
// Programmatic dependent launch as the pre-decoded kernel (gemm_predecoded.cuh): warp 0's
// first weight loads precede griddepcontrol.wait (run_producer); the consumers wait before
// they read alpha and store C.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "../collective/epilogue_cluster_reduce.cuh"
#include "../collective/mainloop_rs_predecoded.cuh"
#include "../ptx.cuh"
#include "gemm_params.cuh"
#include "predecoded_tile.cuh"
#include "tile_scheduler.cuh"

namespace nvfp4::sm90 {

// Tile t's origin in the persistent numbering (weight tile fastest, then token tile, batch).
template <int kTileX = kTokenTile>
__device__ __forceinline__ void persistent_tile_origin(const GemmParams& p, int64_t t, int64_t& w0, int64_t& x0,
                                                       int32_t& l) {
  w0 = (t % p.tiles_w) * MainloopRSPredecodedT<kTileX>::kBlockW;
  x0 = ((t / p.tiles_w) % p.tiles_x) * MainloopRSPredecodedT<kTileX>::kBlockX;
  l = static_cast<int32_t>(t / (static_cast<int64_t>(p.tiles_w) * p.tiles_x));
}

template <int kTileX>
__global__ void __launch_bounds__(MainloopRSPredecodedT<kTileX>::kThreads, 1)
    nvfp4_sm90_gemm_persistent_kernel(const __grid_constant__ CUtensorMap tmap_w,
                                      const __grid_constant__ CUtensorMap tmap_xh,
                                      const __grid_constant__ CUtensorMap tmap_sfw, const GemmParams p,
                                      int64_t tiles) {
  using MainloopPre = MainloopRSPredecodedT<kTileX>;
  using Epilogue = EpilogueClusterReduceT<kTileX>;
  extern __shared__ uint8_t smem_raw[];
  typename MainloopPre::SharedStorage& s = shared_storage<typename MainloopPre::SharedStorage>(smem_raw);
  auto origin = [&](int64_t t, int64_t& w0, int64_t& x0, int32_t& l) {
    persistent_tile_origin<kTileX>(p, t, w0, x0, l);
  };
  if (threadIdx.x == 0) {
    // the tail kernel (tiles short of every tile) may take the SMs as these CTAs leave them
    if (tiles < static_cast<int64_t>(p.tiles_w) * p.tiles_x * p.L) ptx::pdl_launch_dependents();
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
      for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        int64_t w0, x0;
        int32_t l;
        origin(t, w0, x0, l);
        MainloopPre::run_producer(s, tm, p, w0, x0, l, 0, p.num_kb, rc);
      }
    }
  } else {
    ptx::setmaxnreg_inc<MainloopPre::kConsumerRegs>();
    const int ctid = threadIdx.x - 128;
    typename MainloopPre::ConsumerState c = MainloopPre::init_consumer(s, p);
    ptx::pdl_wait_primary();  // alpha and C belong to the grids before until then
    const float alpha = load_alpha(p);
#pragma unroll 1
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      int64_t w0, x0;
      int32_t l;
      origin(t, w0, x0, l);
      float sum[MainloopPre::kAccRegs];
      MainloopPre::run_segment(s, c, 0, p.num_kb, sum);
      Epilogue::store_fragment(p, ctid, sum, w0, x0, l, alpha);
    }
  }
}

// The persistent kernel's tail (gemm_schedule.hpp choose_tail): tiles first_tile.. of the same
// numbering, p.splits CTAs per tile (a cluster along x), each a K slice, reduced through
// distributed shared memory (predecoded_tile.cuh, as the pre-decoded kernel). Launched as a
// programmatic dependent of the persistent kernel, whose CTAs let it start as they leave.
template <int kTileX>
__global__ void __launch_bounds__(MainloopRSPredecodedT<kTileX>::kThreads, 1)
    nvfp4_sm90_gemm_tail_kernel(const __grid_constant__ CUtensorMap tmap_w, const __grid_constant__ CUtensorMap tmap_xh,
                                const __grid_constant__ CUtensorMap tmap_sfw, const GemmParams p, int64_t first_tile) {
  const int32_t split = static_cast<int32_t>(blockIdx.x) % p.splits;
  int64_t w0, x0;
  int32_t l;
  persistent_tile_origin<kTileX>(p, first_tile + static_cast<int64_t>(blockIdx.x) / p.splits, w0, x0, l);
  const KSlice k = splitk_slice(p.num_kb, split, p.splits);
  predecoded_tile_cta<kTileX>(tmap_w, tmap_xh, tmap_sfw, p,
                              PredecodedTileOrigin{w0, x0, x0, l, l, l, k.begin, k.count, p.splits, split});
}

}  // namespace nvfp4::sm90
