// The fused sm90a NVFP4 GEMM kernel: C[l] = alpha * A[l] * B[l]^T with both operands
// decoded inside the kernel, exactly, into fp16 for the tensor cores.
//
// Algorithm (docs/design.md "Backends"): the operands are swapped so that the weights
// (B, N rows) are the wgmma A operand and the tokens (A, M rows) the wgmma B operand. One
// CTA computes a 128 (weight rows) x 128 (tokens) output tile over a K slice:
//   - warp 0 streams the packed fp4 tiles of both operands and their block scales into a
//     5-stage shared-memory ring (TMA; bulk copy, cp.async or plain loads for the scales,
//     depending on layout and alignment: ScaleLoad);
//   - two "transform" warpgroups decode the token tile once per K block into fp16 shared
//     memory (128-byte swizzle: the wgmma B layout);
//   - two consumer warpgroups decode their 64 weight rows straight into wgmma register
//     fragments (RS wgmma m64n128k16; the decode of block i+1 overlaps the wgmma of block i)
//     (collective/mainloop_rs.cuh).
// Why: on small M every weight element must be decoded once per CTA and never per MMA (the
// integer pipe has half the fp32 rate), and exact e2m1 * e4m3 products are fp16 values, so
// fp16 tensor cores give exact products (collective/fp4_decode.cuh).
//
// Split-K over a thread-block cluster (tile_scheduler.cuh): the `splits` CTAs of a cluster
// compute the same tile over disjoint K slices and reduce through distributed shared memory
// in a fixed order (collective/epilogue_cluster_reduce.cuh): deterministic, no workspace.
//
// Accumulation: the wgmma fp32 accumulator is restarted every 4 K blocks (512 K) and added
// into a round-to-nearest fp32 sum (collective/accumulator_promotion.cuh): one long chain of
// tensor-core accumulations lost up to 1e-3 absolute on outputs of ~0.1 among ~40. Where no
// CTA's K slice exceeds kShortChainBlocks (8) blocks the launcher runs the instance P = 0,
// without promotion (<= 0.28 of the tolerance measured), whose transform warpgroups get 80
// registers instead of 48.
//
// Programmatic dependent launch: the prologue (barrier init, descriptor prefetch) runs
// before griddepcontrol.wait and overlaps the end of the grid before; every global load and
// store, and the alpha read, come after it (-0.9 µs on 128x7168x2048, 15.75 -> 14.83, and
// +0.1% on 4096^3, H200). L2 prefetches of the first blocks before the wait were measured
// slower (+6 µs on 4096^3) and removed. launch_dependents is signalled right away: the next
// grid's CTAs may then take SMs as this grid's CTAs leave (they wait for this grid before
// touching memory).
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "../collective/epilogue_cluster_reduce.cuh"
#include "../collective/mainloop_rs.cuh"
#include "../ptx.cuh"
#include "gemm_params.cuh"
#include "tile_scheduler.cuh"

namespace nvfp4::sm90 {

static_assert(EpilogueClusterReduce::kSmemBytes <= sizeof(MainloopRS::Stage) * MainloopRS::kStages,
              "the epilogue tile reuses the stage ring");
static_assert(EpilogueClusterReduce::kTileW == MainloopRS::kBlockW &&
                  EpilogueClusterReduce::kTileX == MainloopRS::kBlockX,
              "tile shapes");

// P = promotion interval in K blocks (collective/accumulator_promotion.cuh): the default, or
// 0 when every CTA's K slice is at most kShortChainBlocks blocks (gemm_plan.hpp).
template <int P>
__global__ void __launch_bounds__(MainloopRS::kThreads, 1)
    nvfp4_sm90_gemm_kernel(const __grid_constant__ CUtensorMap tmap_w, const __grid_constant__ CUtensorMap tmap_x,
                           const __grid_constant__ CUtensorMap tmap_sfw,
                           const __grid_constant__ CUtensorMap tmap_sfx, const GemmParams p) {
  using Mainloop = MainloopRS;
  using Epilogue = EpilogueClusterReduce;
  extern __shared__ uint8_t smem_raw[];
  Mainloop::SharedStorage& s = shared_storage<Mainloop::SharedStorage>(smem_raw);
  const TileWork work = cluster_splitk_work(p.splits, p.num_kb);
  const int64_t w0 = static_cast<int64_t>(work.tile_w) * Mainloop::kBlockW;
  const int64_t x0 = static_cast<int64_t>(work.tile_x) * Mainloop::kBlockX;
  const Mainloop::TmaDescs tm{&tmap_w, &tmap_x, &tmap_sfw, &tmap_sfx};

  if (threadIdx.x == 0) {
    Mainloop::init_barriers(s, p);
    ptx::tma_prefetch_desc(&tmap_w);
    ptx::tma_prefetch_desc(&tmap_x);
  }
  __syncthreads();
  ptx::pdl_launch_dependents();
  ptx::pdl_wait_primary();
  // alpha here, not in the epilogue: its load latency hides under the main loop
  const float alpha = load_alpha(p);

  float* tile = reinterpret_cast<float*>(&s.ring[0]);
  if (threadIdx.x < Mainloop::kTransformThreads) {
    ptx::setmaxnreg_dec<Mainloop::transform_regs<P>()>();
    Mainloop::run_transform(s, tm, p, w0, x0, work.batch, work.kb_begin, work.kb_count);
    ptx::named_barrier_sync(1, Mainloop::kThreads);  // ring free: the tile may overwrite it
  } else {
    ptx::setmaxnreg_inc<Mainloop::consumer_regs<P>()>();
    float sum[64];  // this thread's fp32 fragment of the CTA's K range
    Mainloop::run_consumer<P>(s, p, work.kb_begin, work.kb_count, sum);
    ptx::named_barrier_sync(1, Mainloop::kThreads);
    Epilogue::stage_fragment(tile, threadIdx.x - Mainloop::kTransformThreads, sum);
  }
  Epilogue::reduce_and_store(p, tile, p.splits, work.split, w0, x0, work.batch, alpha);
}

}  // namespace nvfp4::sm90
