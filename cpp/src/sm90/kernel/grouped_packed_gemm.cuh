// The packed MoE GEMM's tiled route on the grouped kernel family (issue 21): rows
// [offsets[g], offsets[g+1]) of the token matrix times expert g's weights B[g]^T, the offsets
// (and alphas) on the device. After the token pass (gemm.cu's pass over the one total_M x K
// token matrix: it needs no offsets), nvfp4_sm90_moe_kernel runs the grouped GEMM's persistent
// walk (grouped_walk.cuh: min(SMs, tile bound) CTAs, the ring carried across tiles, fragment
// stores) over every expert's tiles, with a tile source that reads the offsets itself:
//
//  - Numbering: token tiles of 128 rows expert by expert in expert order (experts share N and K,
//    so every tile costs the same: no largest-first order to gain), weight tile fastest:
//    tile t = j * tiles_w + w, j the j-th non-empty token tile over all experts. Tiles past the
//    host's bound (token-tile slots ceil((total_M + 127 G) / 128) x tiles_w, which any valid
//    table stays within) are not computed, as with the one-CTA-per-slot kernel before.
//  - Finding tile t on the device, no table anywhere: every warp that needs it (warp 0 and the
//    8 consumer warps) keeps a cursor over the offsets (first expert of a window of 32, token
//    tiles before it); a window is one coalesced load of 33 offsets (L1 hits after the first
//    warp), a warp scan of the clamped experts' tile counts and a ballot. t only grows along a
//    CTA's walk, so the cursor only moves forward: a CTA reads the table once, ceil(G / 32)
//    windows in all, plus one window per tile. Nothing is built by another grid, so there is no
//    workspace table, no host->device copy, no extra launch, and a CUDA-graph replay reads the
//    offsets the buffers hold at that time. All warps compute the same function of the same
//    memory, so producer and consumers agree on the tiles (the ring's contract).
//  - A malformed table (decreasing, negative, past total_M) is clamped per expert as before
//    (gemv/decode_plan.hpp moe_clamp_span: b in [0, total_M], e in [b, total_M]): every token
//    row read and every output row written stays inside the operands; with overlapping spans
//    the tiles past the bound are skipped and overlapping rows written more than once.
//  - Weights and their scales: the one 3-D tensor map each (batch = expert); tokens from
//    workspace rows offsets[g] + x0..; outputs rows < M_g of expert g's rows of C only; alpha
//    = alphas[g] (device, read after griddepcontrol.wait) or 1.
//
// Programmatic dependent launch: warp 0 reads the offsets and issues its first weight loads
// before griddepcontrol.wait. The offsets are safe there for the reason the one-CTA-per-slot
// kernel gave: this grid is a programmatic dependent of the token pass, which triggers only
// after its own griddepcontrol.wait, i.e. once every earlier grid (which may have written the
// offsets) has completed. The consumers read them after their wait.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "../packed_plan.hpp"
#include "../ptx.cuh"
#include "gemm_params.cuh"
#include "grouped_walk.cuh"

namespace nvfp4::sm90 {

struct PackedGemmParams {
  CUtensorMap w;    // weights (G, N, K / 2): batch = expert
  CUtensorMap sfw;  // their linear scales (kScaleTma only)
  CUtensorMap xh;   // the fp16 token workspace [total_M][kpad]
  GemmParams base;  // N, K, num_kb, scale mode, sf_w (batch stride = between experts), C at row 0
  const int32_t* offsets;  // G + 1, on the device
  const float* alphas;     // G, on the device, or null (1)
  int64_t tiles;           // the walk's bound: token-tile slots x tiles_w (packed_plan.hpp PackedPlan)
  int64_t total_M;
  int32_t G;
  int32_t tiles_w;
};
static_assert(sizeof(PackedGemmParams) <= 4096, "the packed GEMM's parameters exceed 4 KB");

struct PackedTiles {
  const PackedGemmParams& p;
  static constexpr bool kFind = true;
  struct Cursor {
    int32_t base = 0;    // first expert of the current window of 32
    int64_t before = 0;  // token tiles of the experts before it
    // tile found last
    int32_t g = 0;
    int64_t row0 = 0, rows = 0;  // the expert's clamped span
    int64_t x0 = 0, w0 = 0;
  };
  __device__ __forceinline__ int64_t end() const { return p.tiles; }

  // All 32 lanes of the warp, t non-decreasing from call to call: tile t into `c`; false when
  // the experts hold fewer tiles.
  __device__ __forceinline__ bool find(int64_t t, Cursor& c) const {
    const int lane = threadIdx.x & 31;
    const int64_t j = t / p.tiles_w;  // token tile
#pragma unroll 1
    for (; c.base < p.G; c.base += 32) {
      const int32_t g = c.base + lane;
      int64_t b = 0, e = 0;
      if (g < p.G) gemv_detail::moe_clamp_span(p.offsets[g], p.offsets[g + 1], p.total_M, b, e);
      const int64_t n = packed_token_tiles(b, e);
      int64_t inc = n;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int64_t v = __shfl_up_sync(0xFFFFFFFFu, inc, d);
        if (lane >= d) inc += v;
      }
      const int64_t window = __shfl_sync(0xFFFFFFFFu, inc, 31);
      if (j < c.before + window) {  // (uniform) in this window: the first lane whose tiles pass j
        const int src = __ffs(__ballot_sync(0xFFFFFFFFu, c.before + inc > j)) - 1;
        const int64_t first = c.before + __shfl_sync(0xFFFFFFFFu, inc - n, src);
        c.g = c.base + src;
        c.row0 = __shfl_sync(0xFFFFFFFFu, b, src);
        c.rows = __shfl_sync(0xFFFFFFFFu, e - b, src);
        c.x0 = (j - first) * MainloopRSPredecoded::kBlockX;
        c.w0 = (t - j * p.tiles_w) * MainloopRSPredecoded::kBlockW;
        return true;
      }
      c.before += window;
    }
    return false;
  }
  __device__ __forceinline__ GroupedWalkLoad load(int64_t, int32_t&, const Cursor& c) const {
    const MainloopRSPredecoded::TmaDescs tm{&p.w, &p.xh, &p.sfw};
    return GroupedWalkLoad{tm, p.base, c.w0, c.row0 + c.x0, c.g};
  }
  // Expert g's problem: M_g rows of C from its first row, alpha from its slot.
  __device__ __forceinline__ GroupedWalkTile tile(int64_t, const Cursor& c) const {
    GemmParams q = p.base;
    q.M = c.rows;
    q.c = static_cast<uint8_t*>(p.base.c) +
          c.row0 * p.base.c_row_stride * (p.base.c_dtype == static_cast<int32_t>(DType::kFloat32) ? 4 : 2);
    q.alpha = 1.0f;
    q.alpha_ptr = p.alphas != nullptr ? p.alphas + c.g : nullptr;
    return GroupedWalkTile{q, c.w0, c.x0};
  }
};

__global__ void __launch_bounds__(MainloopRSPredecoded::kThreads, 1)
    nvfp4_sm90_moe_kernel(const __grid_constant__ PackedGemmParams p) {
  using MainloopPre = MainloopRSPredecoded;
  extern __shared__ uint8_t smem_raw[];
  MainloopPre::SharedStorage& s = shared_storage<MainloopPre::SharedStorage>(smem_raw);
  if (threadIdx.x == 0) {
    MainloopPre::init_barriers(s, p.base);
    ptx::tma_prefetch_desc(&p.w);
    ptx::tma_prefetch_desc(&p.xh);
  }
  __syncthreads();
  grouped_persistent_walk(s, p.base, PackedTiles{p});
}

}  // namespace nvfp4::sm90
