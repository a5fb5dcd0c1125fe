// The sm90a grouped GEMM (list API, issue 21): G independent problems C_g = alpha_g * A_g * B_g^T,
// any M_g, N_g, K_g, in two launches whatever G is (up to kGroupedMaxGroups per launch pair:
// grouped_plan.hpp):
//   1. nvfp4_sm90_grouped_token_pass_kernel decodes every group's tokens once into one fp16
//      workspace [sum M_g][kpad] (group g from row x_row_g; kpad = the longest K rounded up to
//      128, blocks past a group's K are neither written nor read). One CTA per (row, piece):
//      the row finds its group by a binary search over the table, then runs the GEMM's token
//      pass code (token_predecode.cuh) on that group's operands.
//   2. nvfp4_sm90_grouped_gemm_kernel: every group's 128x128 output tiles in one numbering
//      (largest K first, weight tile fastest: grouped_plan.hpp); a tile finds its group by a
//      binary search over tile_begin and runs the pre-decoded GEMM's CTA body on it:
//      - kSplit = false (the tiles fill the SMs): persistent, min(tiles, SMs) CTAs walk tiles
//        t = blockIdx.x, + gridDim.x, ... with the ring carried across tiles and fragment
//        stores straight from registers (the persistent GEMM, gemm_persistent.cuh: warp 0
//        loads the next tile while the consumers store the last). The walk is the grouped
//        family's (grouped_walk.cuh), shared with the packed MoE API's tiled route
//        (grouped_packed_gemm.cuh), whose tiles come from device offsets instead of this
//        table (GroupedListTiles below is this kernel's tile source);
//      - kSplit = true (fewer tiles than SMs): split-K over clusters of `splits` CTAs, one
//        wave, each cluster one tile, reduced through distributed shared memory
//        (predecoded_tile.cuh, as the pre-decoded GEMM).
//
// The problem table and the TMA descriptors travel in the kernel parameters (one
// __grid_constant__ struct: 23.9 KB for 64 groups; sm90 kernels take 32764 bytes of parameters
// with CUDA >= 12.1; the pass gets a 3.6 KB table of its own). Per group the host encodes two descriptors (weights; linear scales when
// they load by TMA) with cuTensorMapEncodeTiled, 60-76 ns each on an H100 host
// (bench/results/nvidia-h100/host_primitives.md): < 160 ns per group, no device work, nothing
// to fence. The alternative, one prototype descriptor patched per group on the device with
// tensormap.replace (CUTLASS's sm90 ptr-array kernels, DeepGEMM), saves that host time but
// adds a global descriptor buffer, a generic->tensormap proxy release/acquire per group and a
// device step in front of the first TMA; not worth it for <= 64 groups. The token operand needs
// no per-group descriptor (one workspace), the outputs are stored without TMA.
// Everything a call reads (table, pointers, alphas) is in the parameters or in device memory
// read at kernel time: no host synchronisation, no host->device copy, so a call is capturable
// in a CUDA graph and its replays read new data in the same buffers (and new device alphas).
//
// Programmatic dependent launch as the pre-decoded GEMM: the pass waits for the grid before it
// and only then lets the GEMM start; the GEMM loads its first stages' weights before its own
// griddepcontrol.wait (safe: every grid before the pass has completed by then) and its token
// tiles, alphas and C stores after it.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "../collective/epilogue_cluster_reduce.cuh"
#include "../collective/mainloop_rs_predecoded.cuh"
#include "../grouped_plan.hpp"
#include "../ptx.cuh"
#include "gemm_params.cuh"
#include "grouped_walk.cuh"
#include "predecoded_tile.cuh"
#include "tile_scheduler.cuh"

#include "token_predecode_rows.cuh"

namespace nvfp4::sm90 {

struct GroupedParams {
  CUtensorMap xh;                         // the fp16 token workspace [rows][kpad]
  CUtensorMap w[kGroupedMaxGroups];       // group g's weights, N_g x K_g / 2 bytes, box 64 B x 128
  CUtensorMap sfw[kGroupedMaxGroups];     // their linear scales (kScaleTma only)
  GroupedEntry g[kGroupedMaxGroups];      // schedule order (grouped_plan.hpp)
  GemmParams base;  // what every group shares: splits, sf_blocked, sf_mode, x_box_rows (L = 1)
  int64_t tiles;
  int32_t count;
};
struct GroupedPassParams {
  GroupedPassEntry g[kGroupedMaxGroups];  // the same order
  uint16_t* ws;  // the token workspace (fp16 bits)
  int64_t kpad;
  int32_t count;
  int32_t sf_blocked;
};
// cudaLaunchKernelEx takes at most 32764 bytes of kernel parameters (sm70+, CUDA >= 12.1); the
// pass stays within the 4 KB every CUDA 12 driver takes on its usual path.
static_assert(sizeof(GroupedParams) <= 32764, "the grouped GEMM kernel's parameters exceed 32764 bytes");
static_assert(sizeof(GroupedPassParams) <= 4096, "the grouped token pass's parameters exceed 4 KB");
static_assert(EpilogueClusterReduce::kSmemBytes <= sizeof(MainloopRSPredecoded::Stage) * MainloopRSPredecoded::kStages,
              "the epilogue tile reuses the stage ring");
static_assert(kPredecodeThreads * kPredecodeUnroll == kGroupedPassChunksPerCta && kChunksPerBlock == 16,
              "grouped_plan.hpp's grouped_pass_pieces is token_predecode.cuh's predecode_pieces");

// The last table entry whose key (ascending, entry 0's is 0) is <= v: at most 6 steps for 64
// groups, parameter-space loads only. Keys: tile_begin (GEMM), x_row (pass).
__device__ __forceinline__ int64_t grouped_key(const GroupedEntry& e) { return e.tile_begin; }
__device__ __forceinline__ int64_t grouped_key(const GroupedPassEntry& e) { return e.x_row; }
template <class Table>
__device__ __forceinline__ int32_t grouped_find(const Table& p, int64_t v) {
  int32_t lo = 0, hi = p.count;
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) >> 1;
    if (grouped_key(p.g[mid]) <= v) lo = mid; else hi = mid;
  }
  return lo;
}

// ---- 1. token pass ------------------------------------------------------------------------
// grid (sum M_g, max pieces, 1) x kPredecodeThreads: blockIdx.x = workspace row. A CTA whose
// piece lies past its group's K blocks loads and stores nothing (x_predecode_load reads zeros
// past K, x_predecode_store skips blocks >= num_kb), but still waits and triggers like the rest.
__global__ void __launch_bounds__(kPredecodeThreads)
    nvfp4_sm90_grouped_token_pass_kernel(const __grid_constant__ GroupedPassParams p) {
  const int64_t row = blockIdx.x;
  const GroupedPassEntry& e = p.g[grouped_find(p, row)];
  XPredecodeParams xp;
  xp.a = e.a;
  xp.a_row_stride = e.a_row_stride;
  xp.a_batch_stride = 0;
  xp.sf = e.sfa;
  xp.sf_row_stride = e.sfa_row_stride;
  xp.sf_batch_stride = 0;
  xp.sf_blocked = p.sf_blocked;
  xp.sf_words = e.sfa_words;
  xp.M = e.M;
  xp.K = e.K;
  xp.L = 1;
  xp.num_kb = e.num_kb;
  xp.out = p.ws + static_cast<int64_t>(e.x_row) * p.kpad;
  xp.out_row_stride = p.kpad;
  xp.out_batch_stride = 0;
  xp.zero = nullptr;
  xp.zero_words = 0;
  const XPredecodeRow r = predecode_row(xp, row - e.x_row, 0);
  const bool active = static_cast<int32_t>(blockIdx.y) < predecode_pieces(e.num_kb);  // (uniform)
  if (active) {
#pragma unroll
    for (int u = 0; u < kPredecodeUnroll; ++u) x_predecode_prefetch(xp, r, predecode_chunk_index(u));
  }
  ptx::pdl_wait_primary();
  ptx::pdl_launch_dependents();  // the GEMM may start its prologue and weight loads now
  if (active) x_predecode_row_piece(xp, r);
}

// ---- 2. the GEMM --------------------------------------------------------------------------
struct GroupedTile {
  int32_t g;      // table entry
  int64_t w0;     // first weight row (output column)
  int64_t x0;     // first token (output row) inside the group
};
__device__ __forceinline__ GroupedTile grouped_tile(const GroupedParams& p, int64_t t) {
  GroupedTile r;
  r.g = grouped_find(p, t);
  const GroupedEntry& e = p.g[r.g];
  const int64_t u = t - e.tile_begin;
  r.w0 = (u % e.tiles_w) * MainloopRSPredecoded::kBlockW;
  r.x0 = (u / e.tiles_w) * MainloopRSPredecoded::kBlockX;
  return r;
}

// The GEMM parameters of entry gi (the mainloop and epilogue read the problem from there).
__device__ __forceinline__ GemmParams grouped_gemm_params(const GroupedParams& p, int32_t gi) {
  const GroupedEntry& e = p.g[gi];
  GemmParams q = p.base;
  q.M = e.M;
  q.N = e.N;
  q.K = e.K;
  q.num_kb = e.num_kb;
  q.sf_w = ScaleSrc{e.sfb, e.sfb_row_stride, 0, e.N};
  q.alpha = e.alpha;
  q.alpha_ptr = e.alpha_ptr;
  q.c = e.c;
  q.c_dtype = e.c_dtype;
  q.c_vec4 = e.c_vec4;
  q.c_row_stride = e.c_row_stride;
  q.c_col_stride = e.c_col_stride;
  q.c_batch_stride = 0;
  return q;
}

// kSplit = false: the persistent walk (grouped_walk.cuh) over the table's tiles.
struct GroupedListTiles {
  const GroupedParams& p;
  __device__ __forceinline__ int64_t end() const { return p.tiles; }
  static constexpr bool kFind = false;  // every tile < end() exists
  struct Cursor {};
  __device__ __forceinline__ GroupedWalkLoad load(int64_t t, int32_t& prev, Cursor&) const {
    const GroupedTile tile = grouped_tile(p, t);
    const GemmParams q = grouped_gemm_params(p, tile.g);
    if (tile.g != prev && (threadIdx.x & 31) == 0) {
      ptx::tma_prefetch_desc(&p.w[tile.g]);
      prev = tile.g;
    }
    const MainloopRSPredecoded::TmaDescs tm{&p.w[tile.g], &p.xh, &p.sfw[tile.g]};
    return GroupedWalkLoad{tm, q, tile.w0, p.g[tile.g].x_row + tile.x0, 0};
  }
  __device__ __forceinline__ GroupedWalkTile tile(int64_t t, Cursor&) const {
    const GroupedTile tile = grouped_tile(p, t);
    return GroupedWalkTile{grouped_gemm_params(p, tile.g), tile.w0, tile.x0};
  }
};

// kSplit = true: cluster blockIdx.x / splits computes tile blockIdx.x / splits, this CTA its
// K slice (the formula of tile_scheduler.cuh); grid = tiles * splits <= SMs.
__device__ __forceinline__ void grouped_split_tile(MainloopRSPredecoded::SharedStorage& s, const GroupedParams& p) {
  const int32_t S = p.base.splits;
  const int32_t split = static_cast<int32_t>(blockIdx.x) % S;
  const GroupedTile tile = grouped_tile(p, static_cast<int64_t>(blockIdx.x) / S);
  const GemmParams q = grouped_gemm_params(p, tile.g);
  const KSlice k = splitk_slice(q.num_kb, split, S);
  const MainloopRSPredecoded::TmaDescs tm{&p.w[tile.g], &p.xh, &p.sfw[tile.g]};
  predecoded_tile(s, tm, q,
                  PredecodedTileOrigin{tile.w0, tile.x0, p.g[tile.g].x_row + tile.x0, 0, 0, 0, k.begin, k.count, S,
                                       split});
}

template <bool kSplit>
__global__ void __launch_bounds__(MainloopRSPredecoded::kThreads, 1)
    nvfp4_sm90_grouped_gemm_kernel(const __grid_constant__ GroupedParams p) {
  using MainloopPre = MainloopRSPredecoded;
  extern __shared__ uint8_t smem_raw[];
  MainloopPre::SharedStorage& s = shared_storage<MainloopPre::SharedStorage>(smem_raw);
  if (threadIdx.x == 0) {
    MainloopPre::init_barriers(s, p.base);
    ptx::tma_prefetch_desc(&p.xh);
  }
  __syncthreads();
  if constexpr (kSplit)
    grouped_split_tile(s, p);
  else
    grouped_persistent_walk(s, p.base, GroupedListTiles{p});
}

}  // namespace nvfp4::sm90
