// How the sm90a GEMM family's output tiles are spread over the SMs: the kernels' tile
// geometry, split-K over clusters that all fit at once, the persistent kernel's split-K tail,
// the pre-decoded kernels' token tile (128 or 136 tokens), and stream-K. Pure functions of
// tile counts, K blocks and device numbers (no CUDA): gemm_plan.hpp builds a GemmPlan on
// them, and the CPU test (tests/sm90_host/gemm_schedule_test.cpp) checks them through it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "../problem.hpp"

namespace nvfp4::sm90 {

// ---------------------------------------------------------------------------
// Geometry of the GEMM kernels (gemm.cu static_asserts these against the collectives)
// ---------------------------------------------------------------------------
constexpr int kTileW = 128;   // weight rows (output columns n) per CTA
constexpr int kTileX = 128;   // tokens (output rows m) per CTA
constexpr int kTileXWide = 136;  // the pre-decoded kernels' second token tile (choose_token_tile)
// The pre-decoded GEMM's split-K-only token tiles for few tokens, smallest first (choose_token_tile;
// mainloop_rs_predecoded.cuh kTokenTileTiny / Small / Mid), and their ring stages.
constexpr int kSplitTiles = 3;
constexpr int kTileXSplit[kSplitTiles] = {32, 64, 96};
constexpr int kPredecodedSplitStages[kSplitTiles] = {12, 8, 6};
// Its index in kTileXSplit, or -1 (the 128- and 136-token tiles).
constexpr int split_tile_index(int32_t tile_x) {
  for (int i = 0; i < kSplitTiles; ++i)
    if (kTileXSplit[i] == tile_x) return i;
  return -1;
}
constexpr int kBlockK = 128;  // K elements per ring stage ("K block")
constexpr int kFusedStages = 5;       // ring stages of the fused kernel (collective/mainloop_rs.cuh)
constexpr int kPredecodedStages = 5;  // ring stages of the pre-decoded kernels (mainloop_rs_predecoded.cuh)
constexpr int kFp4BoxBytes = kBlockK / 2;  // TMA box width of a packed fp4 operand (bytes)
constexpr int kSfBoxCols = 16;  // TMA box width of linear scales: a stage's 8 columns + the next 8
                                // (a box's inner start must be 16-byte aligned)
constexpr int kMaxSplits = 8;   // CTAs of a split-K cluster (the portable cluster size limit)

// Device numbers the plan depends on. clusters[s]: clusters of s CTAs of that kernel that
// can be resident at once (cudaOccupancyMaxActiveClusters, cached per device by gemm.cu;
// a failed query counts as "no limit"), for s = 2 .. kMaxSplits. predecoded_wide_clusters:
// the pre-decoded kernel's 136-token instance (more shared memory: 222 against 212 KB);
// predecoded_split_clusters[i]: its kTileXSplit[i]-token instance.
struct GemmDeviceNumbers {
  int sm_count = 1;
  int fused_clusters[kMaxSplits + 1] = {};
  int predecoded_clusters[kMaxSplits + 1] = {};
  int predecoded_wide_clusters[kMaxSplits + 1] = {};
  int predecoded_split_clusters[kSplitTiles][kMaxSplits + 1] = {};
};

// CTAs per output tile (split-K over a cluster): enough to cover the SMs once...
inline int choose_splits(int64_t tiles, int32_t num_kb, int sm_count) {
  int64_t s = tiles > 0 ? sm_count / tiles : 1;
  if (s > kMaxSplits) s = kMaxSplits;
  if (s > num_kb) s = num_kb;
  if (s < 1) s = 1;
  return static_cast<int>(s);
}
// ...but only with a cluster size whose clusters all fit at once (a cluster of 4 with
// ~200 KB of shared memory per CTA may not tile every GPC; 32 such clusters were suspected
// to run as two waves).
inline int choose_splits_fitting(const int (&clusters)[kMaxSplits + 1], int64_t tiles, int32_t num_kb,
                                 int sm_count) {
  int s = choose_splits(tiles, num_kb, sm_count);
  while (s > 1 && clusters[s] < tiles) --s;
  return s;
}

// The persistent kernel's last round: tiles % SMs tiles would keep that many SMs busy for a
// whole tile's K blocks while the rest idle. Where they are at most half the SMs, the split-K
// kernel runs them instead, `splits` CTAs per tile in clusters that all fit at once, after the
// whole rounds (kernel/gemm_persistent.cuh nvfp4_sm90_gemm_tail_kernel), where the K blocks it
// saves per SM (num_kb - ceil(num_kb / splits)) exceed its fixed cost, kTailFixedBlocks (the
// launch behind the whole rounds, pipeline fill, cluster reduction): H100, graph µs, a round
// ~0.8 µs per K block: 640 x 7168^2 (16 tail tiles x 8, 49 blocks saved) 140-146 -> 121,
// 1024 x 7168^2 (52 x 2, 28 saved) 186-189 -> 181, 768 x 4096^2 (60 x 2, 16 saved) 56.5 -> 56.6.
constexpr int32_t kTailFixedBlocks = 16;
struct TailChoice {
  int64_t tiles = 0;
  int splits = 1;
};
inline TailChoice choose_tail(const int (&clusters)[kMaxSplits + 1], int64_t tiles, int32_t num_kb, int sm_count) {
  TailChoice t;
  const int64_t tail = sm_count > 0 ? tiles % sm_count : 0;
  if (tail == 0 || tiles < sm_count || 2 * tail > sm_count) return t;
  const int s = choose_splits_fitting(clusters, tail, num_kb, sm_count);
  if (s < 2 || num_kb - (num_kb + s - 1) / s <= kTailFixedBlocks) return t;
  t.tiles = tail;
  t.splits = s;
  return t;
}

// The token tile of the pre-decoded paths. A token tile computes all its kTileX columns
// whatever M, so M = 128k + 1 costs k + 1 full tiles: M = 129 at N = K = 7168 is 112 tiles
// on one CTA each (56 K blocks per CTA) against M = 128's 56 tiles split over clusters of 2
// (28 blocks): 69.8 against 31.6 µs (H100), and no split of 112 tiles does better than
// 1.71x (bench/NOTES.md "M = 129 vs 128"). The 136-token instance covers M = 129..136 with
// one tile (257..272 with two, ...), at 136/128 of the MMA work per tile.
//
// Model (the MMA-bound worst case of the wider tile; weight decode per tile is the same at
// both widths, so fewer tiles only help it): the busiest SM's work, in K blocks x token
// columns: waves of one CTA per SM x blocks per CTA x tile width, or for the persistent
// kernel its whole rounds + its last round (a full round, or the split-K tail of choose_tail
// with its fixed cost) x tile width. The wide tile runs where it needs fewer token tiles and
// the model gives it at least 1/32 less work (kWideTileGain): M = 129 28 x 136 against 56 x
// 128; M = 408 (N = K = 7168) 168 tiles (a round + a 36-tile tail, 56 + 19 + 16 blocks) x 136
// against 224 (2 rounds) x 128. Not M = 137 (two tiles at either width), 2049 (1.3% less)
// nor 8192^3 (0.4% less). Measured (H100 graph µs, 128-token -> 136-token plan, bench/NOTES.md
// session 17): 408x7168^2 93.9 -> 80.0, 660x7168^2 143.4 -> 126.0, 1850x7168^2 340.0 -> 316.7,
// 3100x7168^2 552.1 -> 496.3, 4400x4096^2 267.6 -> 253.1, 5500x2048x7168 291.3 -> 274.4.
// 1/32, not 1/8: shapes the model gives 4-12% less work wide (1200x7168^2, 2100x4096x7168,
// 2900x3072x4096, 4300x2048x7168) ran 6-12% faster wide than narrow.
struct TokenTiling {
  int32_t tile_x = kTileX;
  int64_t tiles_x = 0, tiles = 0;
  int splits = 1;
  bool persistent = false;
  int64_t span = 0;  // the model's critical path (above)
};
inline TokenTiling token_tiling(const GemmProblem& p, int64_t tiles_w, int32_t num_kb,
                                const int (&clusters)[kMaxSplits + 1], int sm_count, int32_t tile_x) {
  TokenTiling t;
  t.tile_x = tile_x;
  t.tiles_x = (p.M + tile_x - 1) / tile_x;
  t.tiles = tiles_w * t.tiles_x * p.L;
  t.splits = choose_splits_fitting(clusters, t.tiles, num_kb, sm_count);
  // One CTA per tile and more tiles than SMs: one CTA per SM walks the tiles (-2% on large
  // shapes, H100).
  t.persistent = t.splits == 1 && t.tiles > sm_count;
  const int64_t sms = sm_count > 0 ? sm_count : 1;
  if (t.persistent) {
    // whole rounds, then the partial last one: a round, or the split-K tail kernel and its fixed cost
    const TailChoice tail = choose_tail(clusters, t.tiles, num_kb, sm_count);
    const int64_t last = tail.tiles > 0 ? (num_kb + tail.splits - 1) / tail.splits + kTailFixedBlocks
                                        : (t.tiles % sms != 0 ? num_kb : 0);
    t.span = ((t.tiles / sms) * num_kb + last) * tile_x;
  } else {
    t.span = (t.tiles * t.splits + sms - 1) / sms * ((num_kb + t.splits - 1) / t.splits) * tile_x;
  }
  return t;
}
constexpr int kWideTileGain = 32;  // the wide tile needs span <= (1 - 1/32) x the 128-token tile's
// At most 32 / 64 / 96 tokens per batch: the smallest split-K-only tile that holds them
// (kTileXSplit; the 128-token tile's K block multiplies zero columns there), unless its tiles
// outnumber the SMs (none has a persistent instance). H100, 128-token tile -> 64: 64 x 7168^2
// 30.4 -> 25.4 µs, 64 x 4096x14336 36.1 -> 30.0 (NOTES "Session 25").
inline TokenTiling choose_token_tile(const GemmProblem& p, int64_t tiles_w, int32_t num_kb,
                                     const GemmDeviceNumbers& dev) {
  for (int i = 0; i < kSplitTiles; ++i) {
    if (p.M > kTileXSplit[i]) continue;
    const TokenTiling t =
        token_tiling(p, tiles_w, num_kb, dev.predecoded_split_clusters[i], dev.sm_count, kTileXSplit[i]);
    if (!t.persistent) return t;
  }
  const TokenTiling narrow = token_tiling(p, tiles_w, num_kb, dev.predecoded_clusters, dev.sm_count, kTileX);
  const TokenTiling wide = token_tiling(p, tiles_w, num_kb, dev.predecoded_wide_clusters, dev.sm_count, kTileXWide);
  const bool gain = wide.span * kWideTileGain <= narrow.span * (kWideTileGain - 1);
  return wide.tiles_x < narrow.tiles_x && gain ? wide : narrow;
}

// Stream-K (kernel/gemm_streamk.cuh): the pre-decoded problem's tiles x K blocks as one
// sequence of units, cut into ceil(units / SMs)-unit ranges, one CTA each. A tile cut between
// CTAs is finished by the CTA holding its first K blocks (the last thing that CTA computes):
// it adds the fp32 partials the later CTAs left in the workspace (they computed theirs first)
// in CTA order, then stores. Why: with one ~200 KB CTA per SM, tile counts between half and
// all of the SMs (M = 137..256 at N = K = 7168: 112 tiles of 56 blocks, 2.0x M = 128's time),
// or a last persistent round over half full, leave SMs idle for a whole tile, and no split
// over clusters helps (NOTES "M = 129 vs 128"). Model: the busiest SM's K blocks, ceil(units /
// SMs) + kStreamKFixupBlocks, against the tiled plan's span; stream-K where it is at least
// 1/kStreamKGain smaller (M = 137 x 7168^2 48 + 4 against 56, 512x3072x4096 24 + 4 against 32;
// 4096^3, 249 + 4 against 256, keeps the persistent kernel). The constants are first guesses,
// not tuned; on H100 no shape it takes ran slower than its tiled plan (kernel/gemm_streamk.cuh).
constexpr int32_t kStreamKFixupBlocks = 4;
// The most K blocks a lone-CTA split-only plan (kTileXSplit[i]) may give its busiest SM, as a
// fraction {num, den} of the 128-token stream-K plan's (gemm_plan.hpp plan_gemm): the inverse
// of its K block's cost against a 128-token one. First guesses: 3/2 at 32 and 64 tokens (H100,
// the rule / the lone-CTA plan: 8500x33x7168 35.4 / 37.8 µs, 64x7168x14336 40.9 / 41.7,
// 8500x64x4096 27.7 / 26.6, 8500x64x2048 18.6 / 18.9; NOTES "Session 25"), 6/5 at 96 (between).
constexpr int64_t kSplitTileMaxBlockRatio[kSplitTiles][2] = {{3, 2}, {3, 2}, {6, 5}};
constexpr int kStreamKGain = 16;
inline size_t streamk_partial_bytes(int32_t tile_x) { return static_cast<size_t>(tile_x) * kTileW * 4; }
inline size_t streamk_flag_bytes(int64_t ctas) { return static_cast<size_t>((ctas * 4 + 255) / 256 * 256); }
struct StreamKChoice {
  int64_t units = 0;  // units per CTA (0: no stream-K)
  int64_t ctas = 0;
};
inline StreamKChoice choose_streamk(const TokenTiling& t, int32_t num_kb, int sm_count) {
  StreamKChoice c;
  const int64_t sms = sm_count > 0 ? sm_count : 1;
  const int64_t total = t.tiles * num_kb;
  const int64_t units = (total + sms - 1) / sms;
  const int64_t span = t.span / t.tile_x;  // K blocks on the busiest SM (token_tiling)
  // at most three CTAs per tile (2 * units >= num_kb): fewer tiles than that keep the split over
  // clusters, whose reduction stays in distributed shared memory
  if (total <= 0 || total > INT32_MAX || 2 * units < num_kb ||
      (units + kStreamKFixupBlocks) * kStreamKGain > span * (kStreamKGain - 1))
    return c;
  c.units = units;
  c.ctas = (total + units - 1) / units;
  return c;
}
inline size_t streamk_workspace_bytes(const StreamKChoice& c, int32_t tile_x) {
  return static_cast<size_t>(c.ctas) * streamk_partial_bytes(tile_x) + streamk_flag_bytes(c.ctas);
}

}  // namespace nvfp4::sm90
