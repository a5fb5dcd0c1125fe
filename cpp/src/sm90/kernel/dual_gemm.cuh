// The fused sm90a dual GEMM kernel: c[l] = act(alpha1 * A[l] * B1[l]^T) * (alpha2 * A[l] * B2[l]^T)
// in one kernel after the GEMM's token pass: the tokens A are decoded once into the fp16
// workspace (kernel/token_predecode.cuh) and read by both products; no product reaches
// global memory.
//
// Algorithm: the pre-decoded GEMM's CTA (gemm_predecoded.cuh, predecoded_tile.cuh) with a
// paired weight tile. A CTA owns 64 output columns n0..n0+63 x X tokens; its 128 weight
// rows are B1 rows n0..n0+63 (tile rows 0..63) and B2 rows n0..n0+63 (rows 64..127), loaded
// by two TMA boxes of 64 rows (two tensor maps) into the same ring stage, their scales
// likewise (every ScaleLoad mode, both layouts: dual_produce). The mainloop is the GEMM's
// (collective/mainloop_rs_predecoded.cuh) unchanged: the first consumer warpgroup (weight
// rows 0..63) accumulates A*B1^T, the second (rows 64..127) A*B2^T, for the same 64 n x X
// tokens, each against the same fp16 token tile in shared memory. X = kTileXT: 128, or 32 / 64
// / 96 where the tokens fit (dual_plan.hpp dual_token_tile: the 128-token tile's K block
// multiplies zero columns there, as the GEMM's split-only tiles, gemm_schedule.hpp). The epilogue
// (collective/epilogue_dual.cuh) reduces the split-K cluster's tiles, applies
// act(alpha1 acc1) * (alpha2 acc2) to the full sums and writes the output tile with TMA
// stores.
// Why this pairing: the activation needs both products of an element in one CTA after the
// full K sum; rows of B1 and B2 in one weight tile keep the GEMM's register budget (one
// 64 x 128 accumulator, its promoted sum and two fragment sets per consumer thread: two
// accumulators per warpgroup would not fit the 224 registers beside them).
//
// Grid: (ceil(N / 64) * splits, ceil(M / X), L); clusters of `splits` CTAs along x compute
// one tile over disjoint K slices (tile_scheduler.cuh), splits from dual_plan.hpp.
//
// Programmatic dependent launch, as the pre-decoded GEMM: launched as a dependent of the
// token pass; the weights and their scales of the first stages load before
// griddepcontrol.wait (safe: the pass triggers only after its own wait, when every grid before
// it has completed), the token tiles, alpha1 / alpha2 and the output stores after it.
#pragma once

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/formats.h"
#include "../collective/epilogue_cluster_reduce.cuh"
#include "../collective/epilogue_dual.cuh"
#include "../collective/mainloop_rs_predecoded.cuh"
#include "../ptx.cuh"
#include "dual_gemm_params.cuh"
#include "gemm_params.cuh"
#include "tile_scheduler.cuh"

namespace nvfp4::sm90 {

template <int kTileXT>
using DualMainloopT = MainloopRSPredecodedT<kTileXT>;
// (the token tile's constants: the weight half of a stage, the threads, the scale rows)
using DualMainloop = DualMainloopT<kTokenTile>;

static_assert(DualMainloop::kBlockW == 2 * kDualTileN, "a weight tile = 64 rows of B1 + 64 rows of B2");

struct DualTmaDescs {
  const void* w1;    // B1, box 64 bytes x 64 rows
  const void* w2;    // B2
  const void* xh;    // fp16 token workspace [L][M][Kp]
  const void* sfw1;  // kScaleTma only: B1's linear scales, box 16 x 64 rows
  const void* sfw2;
};

// Byte offsets inside a ring stage: B2's half of the packed weight tile and of its scales
// (64 rows of 64 bytes; kScaleTma: 64 rows x 16 columns; kScaleBulk: one 1 KB band).
constexpr uint32_t kDualHalfW = kDualTileN * DualMainloop::kPackedRow;
constexpr uint32_t kDualHalfSf = 1024;
static_assert(sizeof(DualMainloop::Stage::wsf) == 2 * kDualHalfSf, "two scale halves per stage");

// kScaleBulk: the stage holds the whole 128-row band of B1 (bytes 0..1023) and of B2
// (1024..2047) that contains rows n0..n0+63, in the blocked order (docs/design.md "Blocked
// scale layout": two 512-byte K tiles of 4 columns). Tile row r is B(1 + r / 64) row
// n0 + r % 64, i.e. band row (n0 % 128) + r % 64. (Half of each band is another CTA's: 1 KB
// more per stage than the bytes used, against 8 KB of weights and 32 KB of tokens.)
__device__ __forceinline__ uint32_t dual_bulk_sf_offset(int64_t n0, uint32_t r, uint32_t c) {
  const uint32_t br = static_cast<uint32_t>(n0 & 127) + (r & 63u);
  return (r >> 6) * kDualHalfSf + (c >> 2) * 512u + (br & 31u) * 16u + (br >> 5) * 4u + (c & 3u);
}

// kScaleCpAsync / kScaleSync: [row][8] scales of one stage, zero-filled outside the matrix
// (MainloopRS::load_scales_rows for a paired tile): tile row r = lane + 32 j is B1 row n0 + r
// for j < 2, B2 row n0 + r - 64 for j >= 2. The operand is selected by value, not by a
// reference into the parameter space (which would copy the parameters to local memory).
__device__ __forceinline__ void dual_load_scales_rows(uint8_t* dst, const DualParams& p, int64_t n0, int32_t l,
                                                      int32_t kb, int lane) {
  const GemmParams& g = p.g;
  const int64_t kcols = g.K / 16;
#pragma unroll 1
  for (int j = 0; j < 4; ++j) {
    const int r = lane + 32 * j;
    const bool second = j >= 2;
    const uint8_t* base = (second ? p.sf_w2.data : g.sf_w.data) +
                          static_cast<int64_t>(l) * (second ? p.sf_w2.batch_stride : g.sf_w.batch_stride);
    const int64_t row_stride = second ? p.sf_w2.row_stride : g.sf_w.row_stride;
    const int64_t row = n0 + (r & 63);
#pragma unroll 1
    for (int h = 0; h < 2; ++h) {
      const int64_t c0 = static_cast<int64_t>(kb) * DualMainloop::kSfRow + h * 4;
      int64_t nvalid = kcols - c0;
      nvalid = nvalid < 0 ? 0 : (nvalid > 4 ? 4 : nvalid);
      if (row >= g.N) nvalid = 0;
      const uint8_t* gp = base;
      if (nvalid > 0) gp = base + (g.sf_blocked ? blocked_sf_offset(row, c0, g.K) : row * row_stride + c0);
      uint8_t* sp = dst + r * DualMainloop::kSfRow + h * 4;
      if (g.sf_mode == kScaleCpAsync) {
        ptx::cp_async_4_zfill(sp, gp, static_cast<uint32_t>(nvalid));
      } else {
        ptx::sts32(ptx::smem_u32(sp), ptx::ldg_bytes4(gp, nvalid));
      }
    }
  }
}

// Warp 0: fills the ring for K blocks kb0 .. kb0 + nkb - 1 of tile (n0, x0, l)
// (MainloopRSPredecoded::run_producer with the paired weight tile). The first kStages blocks
// get their weights and scales before griddepcontrol.wait, their token tiles after it.
template <int kTileXT>
__device__ __forceinline__ void dual_produce(typename DualMainloopT<kTileXT>::SharedStorage& s,
                                             const DualTmaDescs& tm, const DualParams& p, int64_t n0, int64_t x0,
                                             int32_t l, int32_t kb0, int32_t nkb) {
  using Mainloop = DualMainloopT<kTileXT>;
  using Stage = typename Mainloop::Stage;
  constexpr int kStages = Mainloop::kStages;
  const GemmParams& g = p.g;
  const int lane = threadIdx.x & 31;
  const typename Mainloop::TmaDescs tx_desc{tm.w1, tm.xh, tm.sfw1};  // load_x reads .xh only
  const bool tx_only = g.sf_mode == kScaleBulk || g.sf_mode == kScaleTma;
  const uint32_t sf_bytes = tx_only ? 2 * kDualHalfSf : 0u;
  const uint32_t tx = DualMainloop::kBlockW * DualMainloop::kPackedRow +
                      2u * 128u * static_cast<uint32_t>(g.x_box_rows) + sf_bytes;
  const int early = nkb < kStages ? nkb : kStages;  // token tiles deferred past the wait
  const int32_t n0i = static_cast<int32_t>(n0);
  int stage = 0, phase = 0;
  for (int i = 0; i < nkb; ++i) {
    const int32_t kb = kb0 + i;
    if (i == early) {
      ptx::pdl_wait_primary();
      if (lane == 0)
        for (int e = 0; e < early; ++e) Mainloop::load_x(s.ring[e], tx_desc, &s.full[e], kb0 + e, x0, l);
    }
    if (i >= kStages) ptx::mbar_wait(&s.empty[stage], phase ^ 1);
    Stage& st = s.ring[stage];
    uint64_t* bar = &s.full[stage];
    if (lane == 0) {
      ptx::mbar_arrive_expect_tx(bar, tx);
      ptx::tma_load_3d(st.w, tm.w1, bar, kb * DualMainloop::kPackedRow, n0i, l);
      ptx::tma_load_3d(st.w + kDualHalfW, tm.w2, bar, kb * DualMainloop::kPackedRow, n0i, l);
      if (i >= early) Mainloop::load_x(st, tx_desc, bar, kb, x0, l);
      if (g.sf_mode == kScaleBulk) {
        const int64_t band = ((n0 / 128) * (g.K / 64) + 2 * static_cast<int64_t>(kb)) * 512;  // K % 128 == 0
        ptx::bulk_load(st.wsf, g.sf_w.data + static_cast<int64_t>(l) * g.sf_w.batch_stride + band, kDualHalfSf, bar);
        ptx::bulk_load(st.wsf + kDualHalfSf, p.sf_w2.data + static_cast<int64_t>(l) * p.sf_w2.batch_stride + band,
                       kDualHalfSf, bar);
      } else if (g.sf_mode == kScaleTma) {
        // the box's inner start must be 16-byte aligned: block kb's 8 columns sit at 8 * (kb & 1)
        ptx::tma_load_3d(st.wsf, tm.sfw1, bar, (kb >> 1) * DualMainloop::kSfTmaCols, n0i, l);
        ptx::tma_load_3d(st.wsf + kDualHalfSf, tm.sfw2, bar, (kb >> 1) * DualMainloop::kSfTmaCols, n0i, l);
      }
    }
    if (!tx_only) {
      dual_load_scales_rows(st.wsf, p, n0, l, kb, lane);
      if (g.sf_mode == kScaleCpAsync)
        ptx::cp_async_mbar_arrive_noinc(bar);
      else
        ptx::mbar_arrive(bar);
    }
    if (++stage == kStages) { stage = 0; phase ^= 1; }
  }
  if (nkb == early && nkb > 0) {
    ptx::pdl_wait_primary();
    if (lane == 0)
      for (int e = 0; e < early; ++e) Mainloop::load_x(s.ring[e], tx_desc, &s.full[e], kb0 + e, x0, l);
  }
}

template <int kTileXT>
__global__ void __launch_bounds__(DualMainloop::kThreads, 1)
    nvfp4_sm90_dual_gemm_kernel(const __grid_constant__ CUtensorMap tmap_w1,
                                const __grid_constant__ CUtensorMap tmap_w2,
                                const __grid_constant__ CUtensorMap tmap_xh,
                                const __grid_constant__ CUtensorMap tmap_sfw1,
                                const __grid_constant__ CUtensorMap tmap_sfw2,
                                const __grid_constant__ CUtensorMap tmap_c, const DualParams p) {
  using Mainloop = DualMainloopT<kTileXT>;
  using Epilogue = EpilogueDualT<kTileXT>;
  static_assert(Mainloop::kThreads == DualMainloop::kThreads && Mainloop::kPackedRow == DualMainloop::kPackedRow &&
                    sizeof(Mainloop::Stage::wsf) == 2 * kDualHalfSf,
                "the paired weight tile's layout is the same at every token tile");
  static_assert(Epilogue::kSmemBytes <= sizeof(typename Mainloop::Stage) * Mainloop::kStages,
                "the epilogue's fp32 and output tiles reuse the stage ring");
  extern __shared__ uint8_t smem_raw[];
  typename Mainloop::SharedStorage& s = shared_storage<typename Mainloop::SharedStorage>(smem_raw);
  const TileWork work = cluster_splitk_work(p.g.splits, p.g.num_kb);
  const int64_t n0 = static_cast<int64_t>(work.tile_w) * kDualTileN;
  const int64_t x0 = static_cast<int64_t>(work.tile_x) * Mainloop::kBlockX;

  if (threadIdx.x == 0) {
    Mainloop::init_barriers(s, p.g);
    ptx::tma_prefetch_desc(&tmap_w1);
    ptx::tma_prefetch_desc(&tmap_w2);
    ptx::tma_prefetch_desc(&tmap_xh);
  }
  __syncthreads();

  float* tile = reinterpret_cast<float*>(&s.ring[0]);
  float alpha1, alpha2;  // read before the main loop (their load latency hides there)
  if (threadIdx.x < 128) {
    ptx::setmaxnreg_dec<Mainloop::kProducerRegs>();
    if (threadIdx.x < 32) {
      const DualTmaDescs tm{&tmap_w1, &tmap_w2, &tmap_xh, &tmap_sfw1, &tmap_sfw2};
      dual_produce<kTileXT>(s, tm, p, n0, x0, work.batch, work.kb_begin, work.kb_count);
    }
    ptx::pdl_wait_primary();  // (warp 0 waited in dual_produce already)
    alpha1 = load_alpha(p.g);
    alpha2 = load_alpha2(p);
    ptx::named_barrier_sync(1, Mainloop::kThreads);  // ring free: the tiles may overwrite it
  } else {
    ptx::setmaxnreg_inc<Mainloop::kConsumerRegs>();
    ptx::pdl_wait_primary();  // costs nothing: the first token tile comes after the same wait
    alpha1 = load_alpha(p.g);
    alpha2 = load_alpha2(p);
    typename Mainloop::ConsumerState c = Mainloop::init_consumer(s, p.g);
    if (p.g.sf_mode == kScaleBulk) {  // the paired tile's rows in the two bands (the other modes keep [row][...])
      c.sfoff0 = static_cast<uint32_t>(offsetof(typename Mainloop::Stage, wsf)) + dual_bulk_sf_offset(n0, c.r0, 2 * c.t);
      c.sfoff1 =
          static_cast<uint32_t>(offsetof(typename Mainloop::Stage, wsf)) + dual_bulk_sf_offset(n0, c.r0 + 8, 2 * c.t);
    }
    float sum[Mainloop::kAccRegs];
    Mainloop::run_segment(s, c, work.kb_begin, work.kb_count, sum);
    ptx::named_barrier_sync(1, Mainloop::kThreads);
    Epilogue::Base::stage_fragment(tile, threadIdx.x - 128, sum);
  }
  Epilogue::reduce_and_store(p, &tmap_c, tile, work.split, n0, x0, work.batch, alpha1, alpha2);
}

}  // namespace nvfp4::sm90
