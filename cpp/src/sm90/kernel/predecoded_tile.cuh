// One output tile of the pre-decoded sm90a GEMM computed by a whole CTA (384 threads),
// once its ring barriers are initialised: warp 0 produces (weights and their scales from
// batch `lw`, fp16 token tiles from batch `lx` starting at workspace row `x_row`), the
// consumer warpgroups run the main loop over K blocks kb0 .. kb0 + nkb - 1, then the
// epilogue reduces the `splits` tiles of the cluster and stores rows x0.. of output batch
// `lc` (rows < p.M, columns < p.N). Shared by the pre-decoded GEMM kernel (gemm_predecoded.cuh),
// the persistent GEMM's tail kernel (gemm_persistent.cuh) and the grouped GEMM's split-K form
// (grouped_gemm.cuh), whose tiles differ only in these origins.
// kTileX = tokens per tile (mainloop_rs_predecoded.cuh: 128, or 136 / 32 / 64 / 96 for the dense GEMM's
// wide and split-only instances); the default is the one every other kernel uses.
//
// Programmatic dependent launch: warp 0 loads the first stages' weights before
// griddepcontrol.wait (run_producer); every other thread waits before it reads alpha
// (which a grid before may write), and the C stores come after that.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "../collective/epilogue_cluster_reduce.cuh"
#include "../collective/mainloop_rs_predecoded.cuh"
#include "../ptx.cuh"
#include "gemm_params.cuh"

namespace nvfp4::sm90 {

struct PredecodedTileOrigin {
  int64_t w0;     // first weight row (output column)
  int64_t x0;     // first output row of the tile
  int64_t x_row;  // its first token row in the workspace
  int32_t lw, lx, lc;  // batch of the weights, of the token workspace, of the output
  int32_t kb0, nkb;    // this CTA's K blocks
  int32_t splits, split;  // CTAs of the split-K cluster, and this one's rank
};

template <int kTileX = kTokenTile>
__device__ __forceinline__ void predecoded_tile(typename MainloopRSPredecodedT<kTileX>::SharedStorage& s,
                                                const typename MainloopRSPredecodedT<kTileX>::TmaDescs& tm,
                                                const GemmParams& p, const PredecodedTileOrigin& o) {
  using MainloopPre = MainloopRSPredecodedT<kTileX>;
  using Epilogue = EpilogueClusterReduceT<kTileX>;
  float* tile = reinterpret_cast<float*>(&s.ring[0]);
  float alpha;  // read before the main loop (its load latency hides there)
  if (threadIdx.x < 128) {
    ptx::setmaxnreg_dec<MainloopPre::kProducerRegs>();
    if (threadIdx.x < 32) {
      typename MainloopPre::RingCursor rc;
      MainloopPre::run_producer(s, tm, p, o.w0, o.x_row, o.lw, o.kb0, o.nkb, rc, o.lx);
    }
    ptx::pdl_wait_primary();  // (warp 0 waited in run_producer already)
    alpha = load_alpha(p);
    ptx::named_barrier_sync(1, MainloopPre::kThreads);  // ring free: the tile may overwrite it
  } else {
    ptx::setmaxnreg_inc<MainloopPre::kConsumerRegs>();
    // alpha (which a grid before may write) after the wait; the wait costs the consumers
    // nothing: their first token tile comes after the same wait
    ptx::pdl_wait_primary();
    alpha = load_alpha(p);
    float sum[MainloopPre::kAccRegs];
    MainloopPre::run_consumer(s, p, o.kb0, o.nkb, sum);
    ptx::named_barrier_sync(1, MainloopPre::kThreads);
    Epilogue::stage_fragment(tile, threadIdx.x - 128, sum);
  }
  Epilogue::reduce_and_store(p, tile, o.splits, o.split, o.w0, o.x0, o.lc, alpha);
}

// A split-K kernel's whole CTA on one tile (the pre-decoded GEMM, the persistent GEMM's tail):
// the ring's barriers and the descriptor prefetches, then predecoded_tile.
template <int kTileX>
__device__ __forceinline__ void predecoded_tile_cta(const CUtensorMap& tmap_w, const CUtensorMap& tmap_xh,
                                                    const CUtensorMap& tmap_sfw, const GemmParams& p,
                                                    const PredecodedTileOrigin& o) {
  using MainloopPre = MainloopRSPredecodedT<kTileX>;
  extern __shared__ uint8_t smem_raw[];
  typename MainloopPre::SharedStorage& s = shared_storage<typename MainloopPre::SharedStorage>(smem_raw);
  if (threadIdx.x == 0) {
    MainloopPre::init_barriers(s, p);
    ptx::tma_prefetch_desc(&tmap_w);
    ptx::tma_prefetch_desc(&tmap_xh);
  }
  __syncthreads();
  const typename MainloopPre::TmaDescs tm{&tmap_w, &tmap_xh, &tmap_sfw};
  predecoded_tile<kTileX>(s, tm, p, o);
}

}  // namespace nvfp4::sm90
