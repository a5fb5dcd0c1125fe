// The pre-decoded sm90a NVFP4 GEMM kernel: C[l] = alpha * A[l] * B[l]^T where the tokens
// (A) were decoded once into an fp16 workspace by the token pass (token_predecode.cuh) and
// only the weights are decoded here.
//
// Why: in the fused kernel every CTA along N decodes the same token tile again, as much
// integer work as its own weight decode. Once the CTAs' K slices are long enough to need
// accumulator promotion (gemm_plan.hpp: more than 8 K blocks per CTA, K >= 2048), decoding
// the tokens once and reading them as fp16 by TMA is faster (H200: 128x4096x7168 26.4 vs
// 30.3 µs; 1024..8192 tokens 14-27% faster).
//
// kTileX = tokens per tile: 128, or 136 where that needs fewer token tiles (gemm_schedule.hpp
// choose_token_tile: M = 129..136 one tile, split-K over a cluster like M = 128, instead of
// two), or 32 / 64 / 96 for M <= 32 / 64 / 96 (a quarter / half / three quarters of a 128-token
// tile's tensor work; mainloop_rs_predecoded.cuh gives the register and shared-memory budget).
//
// One CTA per (output tile, K slice): grid (tiles_w * splits, tiles_x, L), clusters of
// `splits` CTAs along x reduce their slices through distributed shared memory (split-K,
// tile_scheduler.cuh). The CTA body is predecoded_tile.cuh: warp 0 produces (weights, their
// scales and the fp16 token tiles into a 5-stage ring, 12 / 8 / 6 at 32 / 64 / 96 tokens:
// collective/mainloop_rs_predecoded.cuh),
// two consumer warpgroups decode the weights into wgmma register fragments and multiply,
// the epilogue reduces the cluster's tiles and stores. Launched as a programmatic dependent
// of the token pass: the first stages' weights load before griddepcontrol.wait.
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

template <int kTileX>
__global__ void __launch_bounds__(MainloopRSPredecodedT<kTileX>::kThreads, 1)
    nvfp4_sm90_gemm_predecoded_kernel(const __grid_constant__ CUtensorMap tmap_w,
                                      const __grid_constant__ CUtensorMap tmap_xh,
                                      const __grid_constant__ CUtensorMap tmap_sfw, const GemmParams p) {
  using MainloopPre = MainloopRSPredecodedT<kTileX>;
  static_assert(
      EpilogueClusterReduceT<kTileX>::kSmemBytes <= sizeof(typename MainloopPre::Stage) * MainloopPre::kStages,
      "the epilogue tile reuses the stage ring");
  const TileWork work = cluster_splitk_work(p.splits, p.num_kb);
  const int64_t w0 = static_cast<int64_t>(work.tile_w) * MainloopPre::kBlockW;
  const int64_t x0 = static_cast<int64_t>(work.tile_x) * MainloopPre::kBlockX;
  predecoded_tile_cta<kTileX>(tmap_w, tmap_xh, tmap_sfw, p,
                              PredecodedTileOrigin{w0, x0, x0, work.batch, work.batch, work.batch, work.kb_begin,
                                                   work.kb_count, p.splits, work.split});
}

}  // namespace nvfp4::sm90
