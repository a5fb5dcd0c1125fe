// Host-side plan of the sm90a dual GEMM  c = act(alpha1 * A * B1^T) * (alpha2 * A * B2^T):
// whether the fused kernel (kernel/dual_gemm.cuh) runs the problem or the composed path
// (two GEMMs into fp32 scratch + an act*mul pass, dual_gemm.cu) does, and for the fused
// kernel its split-K, grid, scale-load mode, output store mode and token workspace. Pure
// functions of the problem and of device numbers the caller passes in (no CUDA), so that
// tests/sm90_host/dual_plan_test.cpp checks exactly the code the backend runs. The GEMM's
// plan (gemm_plan.hpp) is used, not changed.
//
// Tile of the fused kernel: kDualTileN = 64 output columns n x 128 tokens (32 / 64 / 96 where the
// tokens fit: dual_token_tile). Its 128 weight rows
// are B1 rows n0..n0+63 (rows 0..63: the first consumer warpgroup, accumulator A*B1^T) and B2
// rows n0..n0+63 (rows 64..127: the second, A*B2^T), so both products of one output element
// end in the same CTA and the epilogue applies act*mul on the fully reduced tile.
//
// Decode route (dual_decode_route): 2..16 tokens on >= 2048 output columns (N·L), 17..32 on >= 8192,
// run the decode kernel's dual instance instead (gemv/decode_kernel.cuh dual_gemm_decode_kernel, launch plan
// gemv/decode_dual_plan.hpp): one launch streaming B1 and B2 once, no token pass.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "gemm_plan.hpp"
#include "gemv/decode_dual_plan.hpp"

namespace nvfp4::sm90 {

constexpr int kDualTileN = kTileW / 2;  // output columns per CTA (64 rows of each of B1, B2)
// Split-K only down to K slices of one promotion chain (4 blocks of 128: accumulator_promotion.cuh):
// shorter slices spend more on the ring fill and the cluster reduction than they save.
constexpr int kDualMinBlocksPerSplit = 4;
// Wave model of the split choice, in K blocks: a CTA costs its blocks plus this fixed part
// (ring fill, epilogue, cluster reduction). Fitted to a split sweep of the dual kernel (H200,
// graph replay, 256x3072x4096: s = 1, 2, 3, 4 -> 33.9, 40.7, 49.0, 56.7 µs = rounds x (0.85 µs
// per block + 6.8 µs), i.e. ~8 blocks; the first guess, 2, chose s = 4 there).
constexpr int kDualFixedBlocks = 8;

enum class DualPath : int32_t {
  kEmpty = 0,     // nothing to compute
  kFused = 1,     // token pass + the fused dual kernel
  kComposed = 2,  // two GEMMs + act*mul (dual_gemm.cu), where the fused kernel does not run
  kDecode = 3,    // the decode kernel's dual instance (dual_decode_route)
};

// The decode regime of the gated MLP: M = 2..32 tokens (kDecodeMinTokens .. kDecodeDualMaxTokens: 1..4
// token groups) on at least kDecodeMinRows (4096; 17..32 tokens: kDecodeDualWideMinRows, 16384, where
// the fused kernel's 32-token tile is slower) weight rows, i.e. 2 N L >= that: a task is
// 16 weight rows (8 of B1 + 8 of B2), so the dual problem of N columns has the warp tasks, bytes and
// MMA work of the dense problem of 2 N rows, and the dense route's bounds carry over (measured on
// the dense kernel, decode_plan.hpp: 4096 rows fill the 132 SMs' rings, 2048 rows lost to the tiled
// GEMM). What it replaces (bench/NOTES.md "Dual GEMM decode route"): M = 2 the composed path (two
// decode-kernel GEMMs or 2 x 2 GEMVs into fp32 scratch + the act*mul pass: the weights' bytes and
// three launches); M = 3..16 the fused kernel's 128-token tile (every weight element decoded once
// per tile, mostly empty at these M: the tiled GEMM's ~2.9x SOL on the dense shapes, against the
// decode kernel's ~1.9x). Operands as the dense decode kernel takes them (16-byte aligned fp4
// rows, weight scales in 16-byte pieces), B1 and B2 scales in one layout; the rest keeps its path.
inline bool dual_decode_route(const DualGemmProblem& p) {
  return p.M >= gemv_detail::kDecodeMinTokens && p.M <= gemv_detail::kDecodeDualMaxTokens && p.N > 0 && p.L > 0 &&
         2 * p.N * p.L >= (p.M > gemv_detail::kDecodeWideTokens ? gemv_detail::kDecodeDualWideMinRows
                                                                 : gemv_detail::kDecodeMinRows) &&
         gemv_detail::decode_dual_unsupported(p) == nullptr;
}

// Tokens per tile of the fused kernel: the smallest of the GEMM's split-only tiles (gemm_schedule.hpp
// kTileXSplit: 32, 64, 96) that holds M, else 128. Why: the 128-token tile's K block multiplies zero
// columns at few tokens, as the GEMM's (the dual kernel is split-K only at every width, so no
// persistent or stream-K plan competes). H100, 128-token tile -> this rule (bench/NOTES.md
// "Session 25"): 32 x 4096x7168 33.2 -> 25.3 µs, 64 x 4096x7168 34.7 -> 28.6, 96 x 4096x7168 34.7 ->
// 31.4; 32 x 14336x4096 68.4 -> 48.6, 64 x 14336x4096 69.0 -> 54.5.
inline int32_t dual_token_tile(int64_t M) {
  for (int i = 0; i < kSplitTiles; ++i)
    if (M <= kTileXSplit[i]) return kTileXSplit[i];
  return kTileX;
}

// How the fused kernel writes its output tile.
enum DualStore : int32_t {
  kDualStoreTma = 0,    // staged in shared memory, one TMA store per box (UTMASTG)
  kDualStorePlain = 1,  // predicated global stores (TMA cannot express the output: below)
};

// Device numbers: SM count and clusters[s] = resident clusters of s fused dual CTAs
// (cudaOccupancyMaxActiveClusters, cached per device; a failed query counts as "no limit").
struct DualDeviceNumbers {
  int sm_count = 1;
  int clusters[kMaxSplits + 1] = {};
};

struct DualPlan {
  const char* unsupported = nullptr;  // why the fused kernel leaves the problem to the composed path
  DualPath path = DualPath::kEmpty;
  int64_t tiles_n = 0, tiles_x = 0, tiles = 0;  // output tiles per batch along N (64) and M (tile_x); all
  int32_t tile_x = kTileX;                      // tokens per tile (dual_token_tile)
  int32_t num_kb = 0;
  int splits = 1;                     // CTAs per tile (split-K over a cluster of `splits` x 1 x 1)
  int32_t x_box_rows = 0;             // token rows per TMA box
  int32_t sf_mode = kScaleSync;       // ScaleLoad of the weights' scales (both B1's and B2's)
  int32_t sf_mode_without_tma = kScaleSync;  // if their tensor maps cannot be encoded (kScaleTma)
  int32_t store = kDualStorePlain;    // DualStore
  int32_t c_box_rows = 0;             // kDualStoreTma: token rows per TMA store box
  int32_t c_vec4 = 0;                 // kDualStorePlain: 4 consecutive n contiguous and aligned
  size_t workspace_bytes = 0;         // the fp16 token workspace (+ the staged scales)
  uint32_t grid[3] = {0, 0, 0};
  // Scale staging (kernel/scale_stage.cuh): B1's and B2's scales, not TMA-readable, copied
  // after the token workspace (B1's at stage_offset, B2's staged_sf_bytes(N, K, L) later).
  bool stage_w = false;
  size_t stage_offset = 0;
};

// TMA can store the output: unit column stride, 16-byte aligned base and row / batch strides
// (in bytes), strides below 2^40. Else (e.g. fp16 rows of N = 7 or 129 elements, a column
// stride, an odd offset) the kernel stores with predicated global stores.
inline bool out_tma_compatible(const OutOperand& c, int64_t M, int64_t L) {
  const int64_t esize = c.dtype == DType::kFloat32 ? 4 : 2;
  if (c.col_stride != 1 || !is_aligned(c.data, 16)) return false;
  if (M > 1 && (c.row_stride <= 0 || (c.row_stride * esize) % 16 != 0)) return false;
  if (L > 1 && (c.batch_stride <= 0 || (c.batch_stride * esize) % 16 != 0)) return false;
  const int64_t limit = int64_t{1} << 40;
  return c.row_stride * esize < limit && c.batch_stride * esize < limit;
}

// Token rows per TMA store box: a CTA of a split-K cluster stores its share of the tile_x rows
// in 8-row groups (epilogue_dual.cuh); one box for the share where the split divides the
// tile_x / 8 groups, else 8-row boxes.
inline int32_t dual_store_box_rows(int splits, int32_t tile_x = kTileX) {
  const int groups = tile_x / 8;
  return groups % splits == 0 ? tile_x / splits : 8;
}

// Weights' scale-load mode: only B1's and B2's scales reach the kernel (the token pass
// reads A's), so A's layout and alignment do not matter here.
inline int32_t dual_scale_mode(const ScaleOperand& s1, const ScaleOperand& s2, int64_t K, int64_t L,
                               int32_t* without_tma) {
  *without_tma = scales_async(s1, L) && scales_async(s2, L) ? kScaleCpAsync : kScaleSync;
  if (scales_bulk(s1, K, L) && scales_bulk(s2, K, L)) return kScaleBulk;
  if (scales_tma(s1, L) && scales_tma(s2, L)) return kScaleTma;
  return *without_tma;
}

// Resident CTAs-per-round of clusters of s (s = 1: one CTA per SM).
inline int64_t dual_cluster_slots(const DualDeviceNumbers& dev, int s) {
  const int64_t by_sms = dev.sm_count / s;
  if (s == 1) return dev.sm_count > 0 ? dev.sm_count : 1;
  const int64_t c = dev.clusters[s] < by_sms ? dev.clusters[s] : by_sms;
  return c > 0 ? c : 0;
}

// Split-K: the s (1..kMaxSplits, K slices of at least kDualMinBlocksPerSplit blocks) with the
// fewest modelled block-times: rounds(s) * (ceil(num_kb / s) + kDualFixedBlocks), rounds(s) =
// ceil(tiles / resident clusters of s). Ties go to the smaller s. H100 (132 SMs), the four
// benchmark shapes: 256x4096 (128 tiles), 512x4096 (256) and 256x3072x4096 (96 tiles: 96 CTAs
// leave 36 SMs idle, but any split needs 3 rounds) s = 1; 512x3072x7168 (192 tiles, two
// rounds at s = 1) s = 2 (H200 sweep: 89.7 µs against 103.8 at s = 1).
inline int choose_dual_splits(const DualDeviceNumbers& dev, int64_t tiles, int32_t num_kb) {
  int max_s = num_kb / kDualMinBlocksPerSplit;
  if (max_s > kMaxSplits) max_s = kMaxSplits;
  if (max_s < 1) max_s = 1;
  int best = 1;
  int64_t best_cost = -1;
  for (int s = 1; s <= max_s; ++s) {
    const int64_t slots = dual_cluster_slots(dev, s);
    if (slots <= 0) continue;
    const int64_t rounds = (tiles + slots - 1) / slots;
    const int64_t cost = rounds * ((num_kb + s - 1) / s + kDualFixedBlocks);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best = s;
    }
  }
  return best;
}

// decode = false: the plan without the decode route (dual_gemm.cu, where its launch cannot run).
inline DualPlan plan_dual(const DualGemmProblem& p, const DualDeviceNumbers& dev, bool decode = true) {
  DualPlan g;
  if (p.M <= 0 || p.N <= 0 || p.L <= 0) return g;
  if (decode && dual_decode_route(p)) {
    g.path = DualPath::kDecode;  // launch shape: gemv/decode_plan.hpp decode_dual_launch (per-device kernel facts)
    return g;
  }
  auto composed = [&](const char* why) {
    g.path = DualPath::kComposed;
    g.unsupported = why;
    return g;
  };
  if (p.K <= 0 || p.K % 32 != 0) return composed("sm90a dual gemm: K must be a multiple of 32");
  // One or two tokens: the composed path runs them as GEMVs over the weights (gemm_plan.hpp,
  // kGemvMaxTokens: 3-4x faster than a mostly empty 128-token tile at M = 1).
  if (p.M <= kGemvMaxTokens) return composed("sm90a dual gemm: one or two tokens run as GEMVs");
  if (!tma_compatible(p.a, p.M, p.L) || !tma_compatible(p.b1, p.N, p.L) || !tma_compatible(p.b2, p.N, p.L))
    return composed("sm90a dual gemm: fp4 operands need 16-byte aligned bases and strides");
  if (p.sfb1.layout != p.sfb2.layout) return composed("sm90a dual gemm: mixed scale layouts");
  g.tiles_n = (p.N + kDualTileN - 1) / kDualTileN;
  g.tile_x = dual_token_tile(p.M);
  g.tiles_x = (p.M + g.tile_x - 1) / g.tile_x;
  if (g.tiles_x > 65535 || p.L > 65535 || g.tiles_n * kMaxSplits > 0x7FFFFFFF)
    return composed("sm90a dual gemm: grid too large");
  g.workspace_bytes = token_workspace_bytes(p.M, p.K, p.L);
  if (g.workspace_bytes > kTokenWorkspaceMaxBytes)
    return composed("sm90a dual gemm: token workspace over 1 GiB");
  g.path = DualPath::kFused;
  g.tiles = g.tiles_n * g.tiles_x * p.L;
  g.num_kb = k_blocks(p.K);
  g.splits = choose_dual_splits(dev, g.tiles, g.num_kb);
  g.x_box_rows = token_box_rows(p.M, g.tile_x);
  g.sf_mode = dual_scale_mode(p.sfb1, p.sfb2, p.K, p.L, &g.sf_mode_without_tma);
  if (g.sf_mode != kScaleBulk && g.sf_mode != kScaleTma) {
    // scales no TMA box reads (K % 256 != 0 linear, K % 128 != 0 blocked): staged, as the
    // GEMM's (gemm_plan.hpp; dual 256x4096x7200 ran ~8x the bf16 peer on byte loads)
    g.stage_offset = g.workspace_bytes;
    g.stage_w = take_staging(SIZE_MAX, 2 * staged_sf_bytes(p.N, p.K, p.L), &g.workspace_bytes, &g.sf_mode,
                             &g.sf_mode_without_tma);
  }
  g.store = out_tma_compatible(p.c, p.M, p.L) ? kDualStoreTma : kDualStorePlain;
  g.c_box_rows = dual_store_box_rows(g.splits, g.tile_x);
  g.c_vec4 = out_vec4(p.c, p.L);
  g.grid[0] = static_cast<uint32_t>(g.tiles_n * g.splits);
  g.grid[1] = static_cast<uint32_t>(g.tiles_x);
  g.grid[2] = static_cast<uint32_t>(p.L);
  return g;
}

}  // namespace nvfp4::sm90
