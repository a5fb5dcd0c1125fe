// Host-side planning of the sm90a packed MoE GEMM (grouped_packed.cu): its route (the decode
// kernel with the experts as the batch, or the tiled persistent walk), the walk's bound of
// tiles and grid, the token workspace and the weights' scale-load mode (staged where no TMA
// box reads them). Built on gemm_plan.hpp's pieces; pure functions of the problem, checked on
// the CPU by tests/sm90_host/gemm_plan_test.cpp (test_packed) and decode_moe_plan_test.cpp.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "../problem.hpp"
#include "gemm_plan.hpp"
#include "gemv/decode_moe_plan.hpp"

namespace nvfp4::sm90 {

// Decode route: few rows per expert (decode: top-8 of 1..64 tokens over 64 experts, mostly
// 0..2 rows each) run the decode-regime kernel with the experts as the batch
// (gemv/decode_moe_plan.hpp): one CTA group per chunk of <= 16 rows of a
// non-empty expert, streaming its weights like the GEMV; empty experts read nothing. The tiled
// kernel below reads each used expert's weights once per 128-row token tile too, but at the
// pre-decoded GEMM's cost per weight byte whatever the tile holds (H100, moe_route: top-8 of 16
// tokens over 64 experts, 128 rows, 306 µs = ~2.2x the used experts' bytes at copy speed; the
// dense decode kernel streams at ~1.6-1.9x). The host knows only total_M and G: the mean rows
// per expert total_M / G bounds how many chunks re-read an expert. At mean <= 8 the chunks
// stay within ~1.2x the used experts (top-8 of 64 tokens over 64 experts: 70 chunks of 16 rows
// for 59 used experts); above, 32-row chunks (decode_moe_nt8) up to a mean of 16 (top-8 of 128
// tokens over 64 experts: 99 chunks of 16 rows for 62 used experts, ~70 of 32). Rows of weights
// N * min(G, total_M) >= 4096, as the dense route asks: fewer rows leave too few warp tasks for
// the SMs. H100 (session 26, graph, same call), 64 experts, tiled -> decode route: top-8 of 128
// tokens (mean 16) 395.5 -> 335.3 us at (2048, 7168), 393.3 -> 360.4 at (7168, 2048); of 192 (mean
// 24) 390.1 -> 364.1 but 356.3 -> 395.0; of 256 (mean 32) 422.1 -> 441.4, 436.7 -> 494.0. So the
// route ends at a mean of 16 (bench/NOTES.md "Session 26").
constexpr int64_t kPackedDecodeMeanRows = 16;
inline bool packed_decode_route(const PackedGroupedGemmProblem& p) {
  if (p.G <= 0 || p.total_M <= 0 || p.N <= 0) return false;
  const int64_t used_max = p.total_M < p.G ? p.total_M : p.G;  // experts that can be non-empty
  return p.total_M <= kPackedDecodeMeanRows * p.G && p.N * used_max >= gemv_detail::kDecodeMinRows &&
         gemv_detail::decode_moe_unsupported(p) == nullptr;
}

// Tiled route: the token pass, then the grouped GEMM's persistent walk over every expert's tiles
// (kernel/grouped_packed_gemm.cuh nvfp4_sm90_moe_kernel), tiles found on the device from the
// offsets. Token tiles of expert g: packed_token_tiles(b_g, e_g) over its clamped span
// (gemv_detail::moe_clamp_span), numbered expert by expert, weight tile fastest. The host knows
// only the bound: slots = ceil((total_M + 127 G) / 128) token tiles (sum_g ceil(M_g / 128) <=
// (total_M + 127 G) / 128 for any valid table), tiles = slots x tiles_w; grid = min(SMs, tiles)
// persistent CTAs (packed_grid); tiles the device finds past the bound (only overlapping spans)
// are not computed.
NVFP4_HD int64_t packed_token_tiles(int64_t b, int64_t e) { return (e - b + kTileX - 1) / kTileX; }

struct PackedPlan {
  const char* unsupported = nullptr;
  bool empty = false;      // nothing to compute
  int64_t slots = 0;       // token-tile slots: the upper bound ceil((total_M + 127 G) / 128)
  int64_t tiles_w = 0;     // weight tiles
  int64_t tiles = 0;       // the walk's bound: slots x tiles_w
  int32_t num_kb = 0;
  int32_t x_box_rows = 0;
  int32_t sf_mode = kScaleSync;              // the weights' scales
  int32_t sf_mode_without_tma = kScaleSync;  // if their tensor map cannot be encoded
  int32_t c_vec4 = 0;
  size_t workspace_bytes = 0;  // the fp16 token workspace (all total_M tokens, offset_ws_rows) + staged scales
  bool stage_w = false;        // the weights' scales staged at stage_offset (kernel/scale_stage.cuh)
  size_t stage_offset = 0;
};

inline PackedPlan plan_packed(const PackedGroupedGemmProblem& p) {
  PackedPlan g;
  if (p.G <= 0 || p.total_M <= 0 || p.N <= 0) {
    g.empty = true;
    return g;
  }
  auto refuse = [&](const char* why) {
    g.unsupported = why;
    return g;
  };
  if (p.K <= 0 || p.K % 32 != 0) return refuse("sm90a grouped gemm packed: K must be a multiple of 32");
  if (p.sfb.layout != NVFP4_SF_LINEAR || p.sfa.layout != NVFP4_SF_LINEAR)
    return refuse("sm90a grouped gemm packed: linear scales only");
  if (!tma_compatible(p.a, p.total_M, 1))
    return refuse("sm90a grouped gemm packed: fp4 operands need 16-byte aligned rows");
  g.slots = (p.total_M + static_cast<int64_t>(p.G) * (kTileX - 1)) / kTileX;
  g.tiles_w = (p.N + kTileW - 1) / kTileW;
  // (slots: the one-CTA-per-slot kernel's grid y limit, kept: it bounds G, whose offsets every
  // CTA of the walk scans, to ~66k)
  if (g.slots > 65535 || g.tiles_w > 0x7FFFFFFF) return refuse("sm90a grouped gemm packed: grid too large");
  g.tiles = g.slots * g.tiles_w;
  g.x_box_rows = token_box_rows(p.total_M);
  g.workspace_bytes = token_workspace_bytes(offset_ws_rows(p.total_M, g.x_box_rows), p.K, 1);
  if (g.workspace_bytes > kTokenWorkspaceMaxBytes)
    return refuse("sm90a grouped gemm packed: token workspace over 1 GiB");
  if (!tma_compatible(p.b, p.N, p.G)) return refuse("sm90a grouped gemm packed: TMA cannot take the weights");
  g.num_kb = k_blocks(p.K);
  g.sf_mode_without_tma = scales_async(p.sfb, p.G) ? kScaleCpAsync : kScaleSync;
  g.sf_mode = scales_tma(p.sfb, p.G) ? kScaleTma : g.sf_mode_without_tma;
  if (g.sf_mode != kScaleTma && p.G <= 65535) {
    // the experts' scales staged after the token workspace, as the GEMM's (plan_gemm); the
    // experts are the staging kernel's batches (grid z)
    g.stage_offset = g.workspace_bytes;
    g.stage_w = take_staging(SIZE_MAX, staged_sf_bytes(p.N, p.K, p.G), &g.workspace_bytes, &g.sf_mode,
                             &g.sf_mode_without_tma);
  }
  g.c_vec4 = out_vec4(p.c, 1);
  return g;
}

// Persistent CTAs of the tiled route: one per SM at most, no more than the bound of tiles.
inline int64_t packed_grid(const PackedPlan& g, int sm_count) {
  const int64_t sms = sm_count > 0 ? sm_count : 1;
  return g.tiles < sms ? g.tiles : sms;
}

}  // namespace nvfp4::sm90
