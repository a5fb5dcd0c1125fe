// The persistent walk of the sm90a grouped kernel family (issue 21): one CTA per SM at most
// walks output tiles t = blockIdx.x, + gridDim.x, ... of a numbering its tile source defines,
// on the pre-decoded GEMM's CTA body (collective/mainloop_rs_predecoded.cuh): the ring carried
// across tiles (warp 0 loads the next tile while the consumers finish the last) and the
// consumers' fragments stored straight from registers (gemm_persistent.cuh's scheme; the
// persistent kernel measured ~2% faster than one CTA per tile on large shapes, bench/NOTES.md
// "the persistent kernel's fragment stores").
//
// Every tile of one launch has the same shape (128 weight rows x 128 tokens); tiles differ in
// their problem (GemmParams: M, N, K, scales, C, alpha), origin and TMA descriptors. A tile
// source `Tiles` provides, with a `Tiles::Cursor` per walking thread (value-initialised):
//   int64_t end()                            a bound of the tile numbers;
//   static constexpr bool kFind              whether tiles below end() may be missing; then
//   bool find(int64_t t, Cursor&)            (warp-collective) whether tile t exists, cursor set
//                                            to it; t grows by gridDim.x per call, false ends
//                                            the walk (producer and consumers must agree);
//   GroupedWalkLoad load(t, int32_t& prev, Cursor&)   warp 0: what run_producer loads for t
//                                            (prev: the source's last descriptor prefetch);
//   GroupedWalkTile tile(t, Cursor&)         consumers: tile t's problem and output origin.
// Sources: the list API's table in the kernel parameters (grouped_gemm.cuh GroupedListTiles:
// every tile below end() exists) and the packed MoE API's device offsets
// (grouped_packed_gemm.cuh PackedTiles: a forward cursor over the experts).
// (The source returns what run_producer takes rather than calling it: with the call one
// inlining level deeper ptxas allocated the list kernel's producer registers differently; this
// form keeps its SASS identical to the kernel before the walk was shared.)
//
// Programmatic dependent launch: the producer's first weight loads go out before
// griddepcontrol.wait (run_producer waits before the first token tile); the consumers wait
// before their first alpha and C store (a grid before may write them).
#pragma once

#include <stdint.h>

#include "../collective/epilogue_cluster_reduce.cuh"
#include "../collective/mainloop_rs_predecoded.cuh"
#include "../ptx.cuh"
#include "gemm_params.cuh"

namespace nvfp4::sm90 {

struct GroupedWalkTile {
  GemmParams q;  // the tile's problem (the epilogue stores rows < q.M, columns < q.N of q.c)
  int64_t w0;    // first weight row (output column)
  int64_t x0;    // first output row of the tile inside q's problem
};

// What warp 0 loads for a tile: weights (and scales) from batch lw of tm.w (tm.sfw), rows
// w0.., tokens from workspace row x_row.., all K blocks of q.
struct GroupedWalkLoad {
  MainloopRSPredecoded::TmaDescs tm;
  GemmParams q;
  int64_t w0;
  int64_t x_row;
  int32_t lw;
};

// `base`: what every tile shares (the ring's barrier counts, the consumers' scale mode).
template <class Tiles>
__device__ __forceinline__ void grouped_persistent_walk(MainloopRSPredecoded::SharedStorage& s, const GemmParams& base,
                                                        const Tiles& source) {
  using MainloopPre = MainloopRSPredecoded;
  if (threadIdx.x < 128) {
    ptx::setmaxnreg_dec<MainloopPre::kProducerRegs>();
    if (threadIdx.x < 32) {
      MainloopPre::RingCursor rc;
      int32_t prev = -1;  // the source's last descriptor prefetch
      typename Tiles::Cursor cur{};
#pragma unroll 1
      for (int64_t t = blockIdx.x; t < source.end(); t += gridDim.x) {
        if constexpr (Tiles::kFind)
          if (!source.find(t, cur)) break;
        const GroupedWalkLoad ld = source.load(t, prev, cur);
        MainloopPre::run_producer(s, ld.tm, ld.q, ld.w0, ld.x_row, ld.lw, 0, ld.q.num_kb, rc, 0);
      }
    }
  } else {
    ptx::setmaxnreg_inc<MainloopPre::kConsumerRegs>();
    const int ctid = threadIdx.x - 128;
    MainloopPre::ConsumerState c = MainloopPre::init_consumer(s, base);
    ptx::pdl_wait_primary();  // alphas and C belong to the grids before until then
    typename Tiles::Cursor cur{};
#pragma unroll 1
    for (int64_t t = blockIdx.x; t < source.end(); t += gridDim.x) {
      if constexpr (Tiles::kFind)
        if (!source.find(t, cur)) break;
      const GroupedWalkTile tile = source.tile(t, cur);
      const float alpha = load_alpha(tile.q);  // (its latency hides behind the main loop)
      float sum[64];
      MainloopPre::run_segment(s, c, 0, tile.q.num_kb, sum);
      EpilogueClusterReduce::store_fragment(tile.q, ctid, sum, tile.w0, tile.x0, 0, alpha);
    }
  }
}

}  // namespace nvfp4::sm90
