// CPU unit test of the sm90a GEMM plan (cpp/src/sm90/gemm_plan.hpp): which problems the
// Hopper kernels take, which kernel runs a problem, its split-K, grid, token TMA box,
// scale-load mode and token workspace. Plain C++ (no CUDA): compiled and run by
// tests/test_sm90_plans.py with the host C++ compiler (nvcc as a fallback).
//
// Checks:
//  1. the support checks and their order (the messages gemm() reports);
//  2. the path, split and grid of the gpu-mode and square shapes on an H100's numbers
//     (132 SMs), including a cluster size whose clusters do not all fit at once;
//  3. the scale-load mode per layout and alignment, the output vector flag;
//  4. invariants over random shapes and device numbers: splits within limits and fitting,
//     the short-chain rule, the path rule, the token tile (128 or 136) the model picks,
//     every (tile, K block) computed exactly once by the grid (the tile scheduler's formula),
//     the workspace query agreeing with the run given exactly that workspace;
//  5. the packed MoE plan;
//  6. the token tile of the pre-decoded paths at M = 128k + 1 .. 136k (choose_token_tile).
// Prints "N passed, N failed".
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <random>
#include <vector>

#include "common/formats.h"
#include "sm90/gemm_plan.hpp"
#include "sm90/packed_plan.hpp"

using namespace nvfp4;
using namespace nvfp4::sm90;

#include "../host_check.hpp"

// Fake, well-aligned device addresses (the plan only looks at their values).
static const uint8_t* addr(uintptr_t a) { return reinterpret_cast<const uint8_t*>(a); }

// A dense problem: packed rows of K/2 bytes, linear scales of K/16 bytes per row (or blocked),
// fp16 row-major output, every base 256-byte aligned.
static GemmProblem dense(int64_t M, int64_t N, int64_t K, int64_t L = 1, nvfp4_sf_layout_t layout = NVFP4_SF_LINEAR) {
  GemmProblem p;
  p.L = L;
  p.M = M;
  p.N = N;
  p.K = K;
  p.a = Fp4Operand{addr(1u << 20), K / 2, M * K / 2};
  p.b = Fp4Operand{addr(1u << 28), K / 2, N * K / 2};
  const int64_t sfa_batch = layout == NVFP4_SF_BLOCKED ? blocked_sf_bytes(M, K) : M * (K / 16);
  const int64_t sfb_batch = layout == NVFP4_SF_BLOCKED ? blocked_sf_bytes(N, K) : N * (K / 16);
  p.sfa = ScaleOperand{addr(3u << 28), layout, K / 16, sfa_batch};
  p.sfb = ScaleOperand{addr(5u << 28), layout, K / 16, sfb_batch};
  p.c.data = reinterpret_cast<void*>(uintptr_t{7} << 28);
  p.c.dtype = DType::kFloat16;
  p.c.row_stride = N;
  p.c.col_stride = 1;
  p.c.batch_stride = M * N;
  return p;
}

static GemmDeviceNumbers h100() {
  GemmDeviceNumbers d;
  d.sm_count = 132;
  for (int s = 0; s <= kMaxSplits; ++s)
    d.fused_clusters[s] = d.predecoded_clusters[s] = d.predecoded_wide_clusters[s] = 1 << 20;
  return d;
}

// The tiled plan (pre-decoded / persistent + tail) of a problem stream-K would take: the
// workspace query's bytes less stream-K's, so its partials do not fit.
static GemmPlan tiled_plan(const GemmProblem& p, const GemmDeviceNumbers& d) {
  const GemmPlan g = plan_gemm(p, d, SIZE_MAX);
  if (g.path != GemmPath::kStreamK) return g;
  const int64_t ctas = g.grid[0];
  return plan_gemm(p, d, g.workspace_bytes - static_cast<size_t>(ctas) * streamk_partial_bytes(g.tile_x) -
                             streamk_flag_bytes(ctas));
}

static const char* path_name(GemmPath p) {
  switch (p) {
    case GemmPath::kEmpty: return "empty";
    case GemmPath::kGemvRoute: return "gemv";
    case GemmPath::kFused: return "fused";
    case GemmPath::kPredecoded: return "predecoded";
    case GemmPath::kPersistent: return "persistent";
    case GemmPath::kDecode: return "decode";
    case GemmPath::kStreamK: return "streamk";
  }
  return "?";
}

static bool same_reason(const char* a, const char* b) {
  return (a == nullptr && b == nullptr) || (a != nullptr && b != nullptr && strcmp(a, b) == 0);
}

// ---------------------------------------------------------------------------
// 1. Support checks
// ---------------------------------------------------------------------------
static void test_support() {
  const GemmDeviceNumbers dev = h100();
  GemmProblem p = dense(256, 512, 1024);
  CHECK(gemm_unsupported(p) == nullptr, "dense problem refused: %s", gemm_unsupported(p));

  // empty problems run (nothing to do), even with a bad K
  for (int which = 0; which < 3; ++which) {
    GemmProblem e = dense(256, 512, 1024);
    e.K = 33;
    (which == 0 ? e.M : which == 1 ? e.N : e.L) = 0;
    const GemmPlan g = plan_gemm(e, dev, SIZE_MAX);
    CHECK(g.unsupported == nullptr && g.path == GemmPath::kEmpty && g.workspace_bytes == 0, "empty %d: %s", which,
          path_name(g.path));
  }
  // K
  for (int64_t K : {int64_t{0}, int64_t{16}, int64_t{48}, int64_t{1000}}) {
    GemmProblem q = dense(256, 512, 1024);
    q.K = K;
    CHECK(same_reason(gemm_unsupported(q), "sm90a gemm: K must be a multiple of 32"), "K=%lld",
          static_cast<long long>(K));
  }
  // the GEMV route takes any alignment, the tiled paths need TMA-compatible fp4 operands
  for (int64_t M : {int64_t{1}, int64_t{2}, int64_t{3}}) {
    GemmProblem q = dense(M, 512, 1024);
    q.a.data = addr((1u << 20) + 4);
    q.b.row_stride = 520;  // not a multiple of 16
    q.sfb.layout = NVFP4_SF_BLOCKED;  // mixed layouts too
    const GemmPlan g = plan_gemm(q, dev, SIZE_MAX);
    if (M <= kGemvMaxTokens)
      CHECK(g.unsupported == nullptr && g.path == GemmPath::kGemvRoute && g.workspace_bytes == 0, "M=%lld: %s",
            static_cast<long long>(M), path_name(g.path));
    else
      CHECK(same_reason(g.unsupported, "sm90a gemm: fp4 operands need 16-byte aligned bases and strides"),
            "M=3 unaligned: %s", g.unsupported ? g.unsupported : "(taken)");
  }
  const char* kAlign = "sm90a gemm: fp4 operands need 16-byte aligned bases and strides";
  {
    GemmProblem q = dense(256, 512, 1024);
    q.b.data = addr((1u << 28) + 8);
    CHECK(same_reason(gemm_unsupported(q), kAlign), "b base");
    q = dense(256, 512, 1024);
    q.a.row_stride = 520;
    CHECK(same_reason(gemm_unsupported(q), kAlign), "a row stride");
    q = dense(256, 512, 1024, 2);
    q.b.batch_stride += 8;
    CHECK(same_reason(gemm_unsupported(q), kAlign), "b batch stride");
    q = dense(256, 512, 1024, 1);
    q.b.batch_stride += 8;  // unused with L == 1
    CHECK(gemm_unsupported(q) == nullptr, "batch stride of one batch checked");
    q = dense(256, 512, 1024);
    q.a.row_stride = int64_t{1} << 40;
    CHECK(same_reason(gemm_unsupported(q), kAlign), "row stride 2^40");
  }
  {
    GemmProblem q = dense(65535LL * 128 + 1, 512, 1024);
    CHECK(same_reason(gemm_unsupported(q), "sm90a gemm: grid too large"), "tiles_x");
    q = dense(65535LL * 128, 512, 1024);
    CHECK(gemm_unsupported(q) == nullptr, "tiles_x = 65535 refused");
    q = dense(256, 512, 1024, 65536);
    CHECK(same_reason(gemm_unsupported(q), "sm90a gemm: grid too large"), "L");
  }
  {
    GemmProblem q = dense(256, 512, 1024);
    q.sfa.layout = NVFP4_SF_BLOCKED;
    CHECK(same_reason(gemm_unsupported(q), "sm90a gemm: mixed scale layouts"), "mixed layouts");
  }
  // scale alignment never refuses (cp.async or plain loads take any)
  {
    GemmProblem q = dense(256, 512, 1024);
    q.sfa.data = addr((3u << 28) + 1);
    q.sfb.row_stride = 65;
    CHECK(gemm_unsupported(q) == nullptr, "odd scales refused");
  }
}

// ---------------------------------------------------------------------------
// 2. Paths of known shapes (H100: 132 SMs)
// ---------------------------------------------------------------------------
struct Want {
  int64_t M, N, K, L;
  bool workspace;
  GemmPath path;
  int splits;
  bool short_chain;
};

static void test_known_shapes() {
  const GemmDeviceNumbers dev = h100();
  const Want wants[] = {
      // gpu-mode shapes: 56 / 32 / 56 tiles
      {128, 7168, 2048, 1, true, GemmPath::kFused, 2, true},         // 8 blocks per CTA: no promotion, no pass
      {128, 4096, 7168, 1, true, GemmPath::kPredecoded, 4, false},   // 14 blocks per CTA
      {128, 4096, 7168, 1, false, GemmPath::kFused, 4, false},       // no workspace: fused, promoted
      {128, 7168, 16384, 1, true, GemmPath::kPredecoded, 2, false},  // 64 blocks per CTA
      {4096, 4096, 4096, 1, true, GemmPath::kPersistent, 1, false},  // 1024 tiles > 132 SMs
      {4096, 4096, 4096, 1, false, GemmPath::kFused, 1, false},
      {8192, 8192, 8192, 1, true, GemmPath::kPersistent, 1, false},
      {512, 2048, 4096, 1, true, GemmPath::kPredecoded, 2, false},   // 64 tiles, 32 blocks: 2 CTAs of 16
      {1024, 1024, 4096, 1, true, GemmPath::kPredecoded, 2, false},  // 64 tiles, 2 CTAs of 16 blocks
      {1024, 2048, 4096, 1, true, GemmPath::kPredecoded, 1, false},  // 128 tiles <= 132 SMs: not persistent
      {128, 7168, 1024, 1, true, GemmPath::kFused, 2, true},         // short slices, tiles < SMs: fused
      {4096, 4096, 1024, 1, true, GemmPath::kPersistent, 1, false},  // short slices, 1024 tiles > SMs: the pass
      {512, 7168, 1024, 1, true, GemmPath::kPersistent, 1, false},   // 224 tiles
      {256, 7168, 256, 1, true, GemmPath::kFused, 1, true},          // 112 tiles <= 132 SMs: fused
      {300, 300, 96, 3, true, GemmPath::kFused, 1, true},            // one K block: one CTA per tile
      // (3..64 tokens run on the decode kernel: test_decode_route; 65 has the same single token tile)
      {65, 256, 8192, 1, true, GemmPath::kFused, 8, true},           // 2 tiles, 64 blocks: 8 CTAs of 8
      {65, 256, 16384, 1, true, GemmPath::kPredecoded, 8, false},    // 8 CTAs of 16 blocks, 72-row token box
  };
  for (const Want& w : wants) {
    const GemmProblem p = dense(w.M, w.N, w.K, w.L);
    const GemmPlan g = plan_gemm(p, dev, w.workspace ? SIZE_MAX : 0);
    CHECK(g.unsupported == nullptr && g.path == w.path && g.splits == w.splits && g.short_chain == w.short_chain,
          "%lldx%lldx%lld L=%lld ws=%d: %s splits %d short %d (want %s %d %d)", static_cast<long long>(w.M),
          static_cast<long long>(w.N), static_cast<long long>(w.K), static_cast<long long>(w.L), w.workspace,
          path_name(g.path), g.splits, g.short_chain, path_name(w.path), w.splits, w.short_chain);
    const bool pre = w.path == GemmPath::kPredecoded || w.path == GemmPath::kPersistent;
    // linear scale rows of K / 16 bytes: staged where not 16-byte multiples, given the workspace
    const bool stage = w.workspace && w.K % 256 != 0;
    CHECK(g.stage_w == stage && g.stage_x == (stage && !pre), "staging w %d x %d", g.stage_w, g.stage_x);
    const size_t token = pre ? token_workspace_bytes(w.M, w.K, w.L) : 0;
    CHECK(g.workspace_bytes == token + (g.stage_w ? staged_sf_bytes(w.N, w.K, w.L) : 0) +
                                   (g.stage_x ? staged_sf_bytes(w.M, w.K, w.L) : 0),
          "workspace %zu", g.workspace_bytes);
    CHECK(g.stages == (pre ? kPredecodedStages : kFusedStages), "stages %d", g.stages);
    CHECK(g.tile_x == 128, "%lld tokens: tile %d", static_cast<long long>(w.M), g.tile_x);  // (none of 128k+1..136k)
    CHECK(g.x_box_rows == (w.M < 128 ? (w.M + 7) / 8 * 8 : 128), "box rows %d", g.x_box_rows);  // both paths
  }
  // the persistent grid: one CTA per SM
  {
    const GemmPlan g = plan_gemm(dense(4096, 4096, 4096), dev, SIZE_MAX);
    CHECK(g.grid[0] == 132 && g.grid[1] == 1 && g.grid[2] == 1 && g.tiles == 1024, "persistent grid %u %u %u",
          g.grid[0], g.grid[1], g.grid[2]);
    CHECK(g.tail_tiles == 0, "4096^3: 1024 = 7 x 132 + 100 tiles, a last round over half full: no tail");
  }
  // the persistent path's split-K tail (choose_tail): a last round of at most half the SMs
  {
    struct TailWant {
      int64_t M, N, K;
      int64_t tail;
      int splits;
    };
    const TailWant tails[] = {
        {1024, 7168, 7168, 52, 2},  // 448 tiles = 3 x 132 + 52: 104 CTAs of 28 blocks
        {640, 7168, 7168, 16, 8},   // 280 = 2 x 132 + 16: clusters of 8 (kMaxSplits), 7 blocks each
        {1536, 7168, 7168, 12, 8},  // 672 = 5 x 132 + 12
        {8192, 8192, 8192, 4, 8},   // 4096 = 31 x 132 + 4
        {512, 7168, 7168, 0, 1},    // 224 = 132 + 92: over half
        {2048, 7168, 7168, 0, 1},   // 896 = 6 x 132 + 104
        {768, 4096, 4096, 0, 1},    // 192 = 132 + 60: clusters of 2 save 16 blocks, not more than the fixed cost
        {1024, 7168, 4224, 0, 1},   // 33 K blocks: 16 saved, no tail
        {1024, 7168, 4480, 52, 2},  // 35 K blocks: 17 saved
        {640, 7168, 2048, 0, 1},    // 16 K blocks: 14 saved at clusters of 8
    };
    for (const TailWant& w : tails) {
      const GemmPlan g = tiled_plan(dense(w.M, w.N, w.K), dev);
      CHECK(g.tail_tiles == w.tail && g.tail_splits == w.splits, "%lldx%lldx%lld: tail %lld x %d (want %lld x %d)",
            static_cast<long long>(w.M), static_cast<long long>(w.N), static_cast<long long>(w.K),
            static_cast<long long>(g.tail_tiles), g.tail_splits, static_cast<long long>(w.tail), w.splits);
    }
    // 52 tail tiles with clusters of 2 that do not all fit at once (50 of 52): no tail
    GemmDeviceNumbers d = dev;
    d.predecoded_clusters[2] = 50;
    const GemmPlan g = tiled_plan(dense(1024, 7168, 7168), d);
    CHECK(g.path == GemmPath::kPersistent && g.tail_tiles == 0, "tail without room for its clusters: %lld",
          static_cast<long long>(g.tail_tiles));
  }
  // 128 x 4096 x 7168 with 4-CTA clusters that do not all fit at once (24 of the 32 needed):
  // the split drops to 3
  {
    GemmDeviceNumbers d = dev;
    d.fused_clusters[4] = 24;
    d.predecoded_clusters[4] = 24;
    const GemmPlan g = plan_gemm(dense(128, 4096, 7168), d, SIZE_MAX);
    CHECK(g.path == GemmPath::kPredecoded && g.splits == 3, "%s splits %d", path_name(g.path), g.splits);
    CHECK(g.grid[0] == 32 * 3 && g.grid[1] == 1 && g.grid[2] == 1, "grid %u %u %u", g.grid[0], g.grid[1], g.grid[2]);
  }
  // exactly as many clusters fit as there are tiles: the split stays
  {
    GemmDeviceNumbers d = dev;
    d.fused_clusters[4] = d.predecoded_clusters[4] = 32;
    const GemmPlan g = plan_gemm(dense(128, 4096, 7168), d, SIZE_MAX);
    CHECK(g.path == GemmPath::kPredecoded && g.splits == 4, "%s splits %d", path_name(g.path), g.splits);
  }
  // the fused split decides the short-chain rule, the pre-decoded split the launch:
  // 128x7168x2048 on 2-CTA clusters that do not fit runs one CTA per tile, 16 blocks: promoted
  // and therefore pre-decoded
  {
    GemmDeviceNumbers d = dev;
    d.fused_clusters[2] = 10;
    const GemmPlan g = plan_gemm(dense(128, 7168, 2048), d, SIZE_MAX);
    CHECK(g.path == GemmPath::kPredecoded && g.splits == 2 && g.workspace_bytes == token_workspace_bytes(128, 2048, 1),
          "%s splits %d", path_name(g.path), g.splits);
    const GemmPlan f = plan_gemm(dense(128, 7168, 2048), d, 0);
    CHECK(f.path == GemmPath::kFused && f.splits == 1 && !f.short_chain, "%s splits %d short %d", path_name(f.path),
          f.splits, f.short_chain);
  }
  // workspace: exactly the token bytes suffice, one byte less does not; over 1 GiB: fused
  {
    const GemmProblem p = dense(128, 4096, 7168);
    const size_t need = token_workspace_bytes(128, 7168, 1);
    CHECK(need == 128 * 7168 * 2, "token bytes %zu", need);
    CHECK(plan_gemm(p, dev, need).path == GemmPath::kPredecoded, "exact workspace");
    CHECK(plan_gemm(p, dev, need - 1).path == GemmPath::kFused, "short workspace");
    const GemmProblem big = dense(32768, 4096, 16384 + 128);  // 32768 x 16512 x 2 > 1 GiB
    const GemmPlan g = plan_gemm(big, dev, SIZE_MAX);
    CHECK(g.path == GemmPath::kFused && g.workspace_bytes == staged_sf_bytes(32768, 16512, 1) +
                                                                staged_sf_bytes(4096, 16512, 1),
          "over 1 GiB: %s (scales staged: K %% 256 != 0)", path_name(g.path));
    const GemmProblem cap = dense(32640, 4096, 16384);  // 32640 rows (both tile multiples): 1020 MiB
    CHECK(plan_gemm(cap, dev, SIZE_MAX).path == GemmPath::kPersistent, "under 1 GiB");
    const GemmProblem over = dense(32768, 4096, 16384);  // rows padded to 32776 (a 136 multiple): over 1 GiB
    CHECK(plan_gemm(over, dev, SIZE_MAX).path == GemmPath::kFused, "1 GiB + 8 rows");
  }
  // rows padded (token_ws_rows): 3 -> 8, 5 -> 8, 129 -> 256, 128 -> 128, 2177 -> 2312 (17 wide tiles)
  CHECK(token_workspace_bytes(3, 96, 2) == 4096, "token bytes of K 96: %zu", token_workspace_bytes(3, 96, 2));
  CHECK(token_workspace_bytes(5, 160, 1) == 4096, "token bytes of K 160: %zu", token_workspace_bytes(5, 160, 1));
  CHECK(token_workspace_bytes(129, 128, 1) == 65536 && token_workspace_bytes(128, 128, 3) == 98304 &&
            token_workspace_bytes(2177, 128, 1) == 2312 * 256,
        "token bytes of 129 / 128 rows");
  for (int64_t M = 1; M <= 3000; ++M) {  // every token box of the plan inside the padded rows
    const int64_t ws = token_ws_rows(M);
    CHECK(ws >= M && ws - M < 136 && ws >= token_box_rows(M), "token_ws_rows(%lld) = %lld", (long long)M, (long long)ws);
    const GemmPlan g = plan_gemm(dense(M, 7168, 7168), dev, SIZE_MAX);
    if (g.path == GemmPath::kPredecoded || g.path == GemmPath::kPersistent)
      CHECK((g.tiles_x - 1) * g.tile_x + g.x_box_rows <= ws && g.workspace_bytes == token_workspace_bytes(M, 7168, 1),
            "M %lld: the last of %lld tiles of %d rows (box %d) past %lld workspace rows", (long long)M,
            (long long)g.tiles_x, g.tile_x, g.x_box_rows, (long long)ws);
  }
}

// ---------------------------------------------------------------------------
// 3. Scale-load mode, output vector flag
// ---------------------------------------------------------------------------
static void test_scale_modes() {
  const GemmDeviceNumbers dev = h100();
  // blocked, K % 128 == 0, 16-byte aligned: bulk copies
  GemmPlan g = plan_gemm(dense(256, 512, 1024, 2, NVFP4_SF_BLOCKED), dev, SIZE_MAX);
  CHECK(g.sf_mode == kScaleBulk, "blocked bulk: %d", g.sf_mode);
  // Without the staging workspace (0 bytes: these fused problems need no token workspace):
  // blocked, K % 128 != 0: cp.async (4-byte aligned)
  g = plan_gemm(dense(256, 512, 1056, 2, NVFP4_SF_BLOCKED), dev, 0);
  CHECK(g.sf_mode == kScaleCpAsync && g.sf_mode_without_tma == kScaleCpAsync && !g.stage_w && !g.stage_x,
        "blocked K tail: %d", g.sf_mode);
  // blocked, batch stride not a multiple of 16 (but of 4): cp.async
  {
    GemmProblem p = dense(256, 512, 1024, 2, NVFP4_SF_BLOCKED);
    p.sfb.batch_stride += 4;
    CHECK(plan_gemm(p, dev, 0).sf_mode == kScaleCpAsync, "blocked odd batch");
    p.sfa.data = addr((3u << 28) + 2);
    CHECK(plan_gemm(p, dev, 0).sf_mode == kScaleSync, "blocked 2-byte aligned");
  }
  // linear, rows of 16-byte multiples (K % 256 == 0): TMA boxes, cp.async if they cannot be encoded
  g = plan_gemm(dense(256, 512, 1024), dev, SIZE_MAX);
  CHECK(g.sf_mode == kScaleTma && g.sf_mode_without_tma == kScaleCpAsync && !g.stage_w && !g.stage_x &&
            g.workspace_bytes == 0,
        "linear TMA: %d / %d", g.sf_mode, g.sf_mode_without_tma);
  // linear, rows of 4-byte multiples: cp.async; odd rows: plain loads
  g = plan_gemm(dense(256, 512, 1088), dev, 0);  // 68-byte rows
  CHECK(g.sf_mode == kScaleCpAsync, "linear 4-byte rows: %d", g.sf_mode);
  {
    GemmProblem p = dense(256, 512, 1024);
    p.sfa.row_stride = 66;
    CHECK(plan_gemm(p, dev, 0).sf_mode == kScaleSync, "linear 2-byte rows");
    p = dense(256, 512, 1024, 3);
    p.sfb.batch_stride = 512 * 64 + 4;
    CHECK(plan_gemm(p, dev, 0).sf_mode == kScaleCpAsync, "linear batch stride not a multiple of 16");
  }
  // With it (the workspace query asks for it): scales no TMA box reads are staged
  // (kernel/scale_stage.cuh) and read with kScaleTma. Fused: each operand that is not
  // TMA-readable, the staged copies after each other, 256-byte aligned.
  {
    g = plan_gemm(dense(256, 512, 1056, 2, NVFP4_SF_BLOCKED), dev, SIZE_MAX);
    CHECK(g.path == GemmPath::kFused && g.stage_w && g.stage_x && g.sf_mode == kScaleTma &&
              g.sf_mode_without_tma == kScaleCpAsync && g.stage_w_offset == 0 &&
              g.stage_x_offset == staged_sf_bytes(512, 1056, 2) &&
              g.workspace_bytes == staged_sf_bytes(512, 1056, 2) + staged_sf_bytes(256, 1056, 2),
          "blocked K tail staged: %d %d %zu %zu", g.stage_w, g.stage_x, g.stage_x_offset, g.workspace_bytes);
    CHECK(staged_sf_cols(1056) == 80 && staged_sf_bytes(512, 1056, 2) == 81920 && staged_sf_bytes(3, 96, 1) == 256,
          "staged sizes %lld %zu", static_cast<long long>(staged_sf_cols(1056)), staged_sf_bytes(512, 1056, 2));
    // exactly the bytes, or one short: staged / not
    CHECK(plan_gemm(dense(256, 512, 1056, 2, NVFP4_SF_BLOCKED), dev, g.workspace_bytes).stage_x, "exact workspace");
    const GemmPlan s = plan_gemm(dense(256, 512, 1056, 2, NVFP4_SF_BLOCKED), dev, g.workspace_bytes - 1);
    CHECK(!s.stage_w && !s.stage_x && s.sf_mode == kScaleCpAsync && s.workspace_bytes == 0, "short workspace");
    // only the token operand unreadable: only it is staged, at offset 0
    GemmProblem p = dense(256, 512, 1024);
    p.sfa.row_stride = 66;
    g = plan_gemm(p, dev, SIZE_MAX);
    CHECK(!g.stage_w && g.stage_x && g.stage_x_offset == 0 && g.sf_mode == kScaleTma &&
              g.workspace_bytes == staged_sf_bytes(256, 1024, 1),
          "token scales staged: %d %d", g.stage_w, g.stage_x);
    // pre-decoded: only the weights' scales reach the GEMM; staged after the token workspace
    g = plan_gemm(dense(512, 4096, 7200), dev, SIZE_MAX);  // 450-byte rows
    const size_t token = token_workspace_bytes(512, 7200, 1);
    CHECK(g.path == GemmPath::kPredecoded && g.stage_w && !g.stage_x && g.stage_w_offset == token &&
              g.workspace_bytes == token + staged_sf_bytes(4096, 7200, 1) && g.sf_mode == kScaleTma,
          "pre-decoded 7200: %s %d %d %zu", path_name(g.path), g.stage_w, g.stage_x, g.workspace_bytes);
    // ... and with the token workspace only: pre-decoded, weights' scales by plain loads
    g = plan_gemm(dense(512, 4096, 7200), dev, token);
    CHECK(g.path == GemmPath::kPredecoded && !g.stage_w && g.sf_mode == kScaleSync && g.workspace_bytes == token,
          "pre-decoded 7200, token workspace only: %d", g.sf_mode);
    // the tokens' scales do not matter there: misaligned ones leave the weights' TMA boxes
    p = dense(512, 4096, 7168);
    p.sfa.row_stride = 450;
    g = plan_gemm(p, dev, SIZE_MAX);
    CHECK(g.path == GemmPath::kPredecoded && !g.stage_w && !g.stage_x && g.sf_mode == kScaleTma &&
              g.workspace_bytes == token_workspace_bytes(512, 7168, 1),
          "pre-decoded, odd token scales: %d", g.sf_mode);
  }
  // output: contiguous, 4-element aligned rows and batches
  CHECK(plan_gemm(dense(256, 512, 1024), dev, SIZE_MAX).c_vec4 == 1, "vec4");
  {
    GemmProblem p = dense(256, 510, 1024);
    CHECK(plan_gemm(p, dev, SIZE_MAX).c_vec4 == 0, "row stride 510");
    p = dense(256, 512, 1024);
    p.c.col_stride = 256;
    p.c.row_stride = 1;
    CHECK(plan_gemm(p, dev, SIZE_MAX).c_vec4 == 0, "column-major output");
    p = dense(256, 512, 1024);
    p.c.data = reinterpret_cast<void*>((uintptr_t{7} << 28) + 4);  // fp16: 8-byte alignment needed
    CHECK(plan_gemm(p, dev, SIZE_MAX).c_vec4 == 0, "fp16 output 4-byte aligned");
    p.c.dtype = DType::kFloat32;  // fp32: 16 bytes needed
    CHECK(plan_gemm(p, dev, SIZE_MAX).c_vec4 == 0, "fp32 output 4-byte aligned");
    p = dense(256, 512, 1024, 2);
    p.c.batch_stride = 256 * 512 + 2;
    CHECK(plan_gemm(p, dev, SIZE_MAX).c_vec4 == 0, "batch stride");
  }
}

// ---------------------------------------------------------------------------
// 4. Invariants over random problems and device numbers
// ---------------------------------------------------------------------------
static void test_invariants(std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int pre_seen = 0, persistent_seen = 0, fused_seen = 0, short_seen = 0, wide_seen = 0, wide_persistent_seen = 0;
  int tail_seen = 0, streamk_seen = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    const int64_t M = pick(0, 4) == 0 ? pick(3, 140) : pick(0, 3) == 0 ? 128 * pick(1, 20) + pick(1, 8) : pick(3, 9000);
    const int64_t N = pick(1, 9000);
    const int64_t K = 32 * (pick(0, 3) == 0 ? pick(1, 40) : pick(1, 600));
    const int64_t L = pick(0, 3) == 0 ? pick(2, 5) : 1;
    const GemmProblem p = dense(M, N, K, L, pick(0, 1) ? NVFP4_SF_BLOCKED : NVFP4_SF_LINEAR);
    GemmDeviceNumbers d;
    d.sm_count = static_cast<int>(pick(1, 200));
    for (int s = 0; s <= kMaxSplits; ++s) {
      d.fused_clusters[s] = s < 2 ? 1 << 20 : static_cast<int>(pick(0, 3) == 0 ? pick(0, 64) : 1 << 20);
      d.predecoded_clusters[s] = s < 2 ? 1 << 20 : static_cast<int>(pick(0, 3) == 0 ? pick(0, 64) : 1 << 20);
      d.predecoded_wide_clusters[s] =
          s < 2 ? 1 << 20 : static_cast<int>(pick(0, 3) == 0 ? pick(0, 64) : d.predecoded_clusters[s]);
    }
    const size_t ws = pick(0, 2) == 0 ? 0 : SIZE_MAX;
    const GemmPlan g = plan_gemm(p, d, ws);
    if (M <= gemv_detail::kDecodeMaxTokens && N * L >= gemv_detail::decode_min_rows(M) &&
        (p.sfb.layout == NVFP4_SF_BLOCKED || K % 256 == 0)) {  // dense operands: always the decode kernel
      CHECK(g.unsupported == nullptr && g.path == GemmPath::kDecode && g.workspace_bytes == 0 && g.grid[0] == 0,
            "%lldx%lldx%lld: %s", static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K),
            path_name(g.path));
      continue;
    }
    if (g.unsupported != nullptr) {
      CHECK(M > 65535LL * 128 || L > 65535, "refused %lldx%lldx%lld: %s", static_cast<long long>(M),
            static_cast<long long>(N), static_cast<long long>(K), g.unsupported);
      continue;
    }
    const bool pre = g.path == GemmPath::kPredecoded || g.path == GemmPath::kPersistent || g.path == GemmPath::kStreamK;
    const bool sk = g.path == GemmPath::kStreamK;
    const bool wide = g.tile_x == kTileXWide;
    CHECK(g.tile_x == kTileX || (pre && wide), "tile %d on %s", g.tile_x, path_name(g.path));
    const int64_t tiles_w = (N + 127) / 128, tiles_x = (M + g.tile_x - 1) / g.tile_x, tiles = tiles_w * tiles_x * L;
    const int32_t num_kb = static_cast<int32_t>((K + 127) / 128);
    CHECK(g.tiles_w == tiles_w && g.tiles_x == tiles_x && g.tiles == tiles && g.num_kb == num_kb, "tiles");
    CHECK(g.splits >= 1 && g.splits <= kMaxSplits && g.splits <= num_kb, "splits %d of %d blocks", g.splits, num_kb);
    const int(&clusters)[kMaxSplits + 1] =
        pre ? (wide ? d.predecoded_wide_clusters : d.predecoded_clusters) : d.fused_clusters;
    CHECK(g.splits == 1 || clusters[g.splits] >= tiles, "split %d: %d clusters fit, %lld tiles", g.splits,
          clusters[g.splits], static_cast<long long>(tiles));
    CHECK(g.splits == 1 || static_cast<int64_t>(g.splits) * tiles <= d.sm_count, "splits %d x %lld tiles > %d SMs",
          g.splits, static_cast<long long>(tiles), d.sm_count);
    // the fused split (recomputed, on 128-token tiles) decides the short chain and whether a
    // pass may pay off
    const int64_t tiles128 = tiles_w * ((M + 127) / 128) * L;
    const int fused_splits = choose_splits_fitting(d.fused_clusters, tiles128, num_kb, d.sm_count);
    const bool fused_short = (num_kb + fused_splits - 1) / fused_splits <= kShortChainBlocks;
    const size_t token = token_workspace_bytes(M, K, L);
    // the pass pays off for long promoted slices (K >= kPredecodeMinK) or more tiles than SMs
    const bool many_tiles = tiles128 > d.sm_count;
    const bool pass_due = ws == SIZE_MAX && token <= kTokenWorkspaceMaxBytes &&
                          ((K >= kPredecodeMinK && !fused_short) || many_tiles);
    // scale staging: scales no TMA box reads (blocked with K % 128 != 0, linear with K % 256
    // != 0; these operands are aligned) are staged given the workspace, the tokens' only
    // where the fused kernel reads them, after the token workspace
    const bool readable = p.sfb.layout == NVFP4_SF_BLOCKED ? K % 128 == 0 : K % 256 == 0;
    const bool staged = ws == SIZE_MAX && !readable;
    CHECK(g.stage_w == staged && g.stage_x == (staged && !pre),
          "staging %d %d (K %lld, %s)", g.stage_w, g.stage_x, static_cast<long long>(K), path_name(g.path));
    CHECK(g.sf_mode == (readable ? (p.sfb.layout == NVFP4_SF_BLOCKED ? kScaleBulk : kScaleTma)
                                 : staged ? kScaleTma
                                 : p.sfb.layout == NVFP4_SF_BLOCKED || K % 64 == 0 ? kScaleCpAsync : kScaleSync),
          "scale mode %d", g.sf_mode);
    const size_t wb = g.stage_w ? staged_sf_bytes(N, K, L) : 0, xb = g.stage_x ? staged_sf_bytes(M, K, L) : 0;
    // stream-K's partials and flags follow the tokens (choose_streamk, recomputed below)
    const int64_t sk_ctas = sk ? (tiles * num_kb + g.sk_units - 1) / g.sk_units : 0;
    const size_t skb = sk ? static_cast<size_t>(sk_ctas) * streamk_partial_bytes(g.tile_x) + streamk_flag_bytes(sk_ctas) : 0;
    CHECK(!g.stage_w || g.stage_w_offset == (pre ? token + skb : 0), "staged w offset %zu", g.stage_w_offset);
    CHECK(!g.stage_x || g.stage_x_offset == wb, "staged x offset %zu", g.stage_x_offset);
    if (pre) {
      ++pre_seen;
      persistent_seen += g.path == GemmPath::kPersistent;
      CHECK(pass_due, "pre-decoded where the fused kernel or no workspace was due");
      CHECK(g.workspace_bytes == token + skb + wb && token % 256 == 0 &&
                token >= static_cast<size_t>(L * M * ((K + 127) / 128 * 128) * 2),
            "workspace %zu", g.workspace_bytes);
      CHECK(g.x_box_rows == (M < g.tile_x ? (M + 7) / 8 * 8 : g.tile_x) && g.x_box_rows % 8 == 0, "box rows %d",
            g.x_box_rows);
      // stream-K where its model wins (the tiled plan's tile, recomputed) and the workspace has room
      const TokenTiling tt = choose_token_tile(p, tiles_w, num_kb, d);
      const StreamKChoice skc = choose_streamk(tt, num_kb, d.sm_count);
      CHECK(sk == (skc.units > 0), "stream-K rule: %s, units %lld", path_name(g.path), static_cast<long long>(skc.units));
      CHECK(sk || (g.path == GemmPath::kPersistent) == (g.splits == 1 && tiles > d.sm_count), "persistent rule");
      // the tile rule, recomputed: the wide tile only where it needs fewer token tiles and the
      // busiest SM's MMA work (K blocks x tile width: waves x blocks per CTA, or the persistent
      // kernel's whole rounds + its last round or split-K tail) is at least 1/32 smaller
      auto span = [&](int32_t tx, const int(&cl)[kMaxSplits + 1]) {
        const int64_t t = tiles_w * ((M + tx - 1) / tx) * L;
        const int s = choose_splits_fitting(cl, t, num_kb, d.sm_count);
        const bool persistent = s == 1 && t > d.sm_count;
        if (!persistent) return (t * s + d.sm_count - 1) / d.sm_count * ((num_kb + s - 1) / s) * tx;
        const int64_t part = t % d.sm_count;
        int64_t last = part == 0 ? 0 : num_kb;
        if (part > 0 && 2 * part <= d.sm_count) {  // choose_tail's conditions, written out
          const int ts = choose_splits_fitting(cl, part, num_kb, d.sm_count);
          if (ts >= 2 && num_kb - (num_kb + ts - 1) / ts > kTailFixedBlocks) last = (num_kb + ts - 1) / ts + kTailFixedBlocks;
        }
        return (t / d.sm_count * num_kb + last) * tx;
      };
      const bool fewer = (M + kTileXWide - 1) / kTileXWide < (M + kTileX - 1) / kTileX;
      CHECK(wide == (fewer && 32 * span(kTileXWide, d.predecoded_wide_clusters) <=
                                  31 * span(kTileX, d.predecoded_clusters)),
            "tile rule: %lld tokens, tile %d", static_cast<long long>(M), g.tile_x);
      wide_seen += wide;
      wide_persistent_seen += wide && g.path == GemmPath::kPersistent;
    } else {
      CHECK(g.path == GemmPath::kFused, "path %s", path_name(g.path));
      ++fused_seen;
      short_seen += g.short_chain;
      CHECK(g.splits == fused_splits && g.short_chain == fused_short, "fused split / chain");
      CHECK(g.short_chain == ((num_kb + g.splits - 1) / g.splits <= kShortChainBlocks), "short-chain rule");
      CHECK(!pass_due, "fused where the pre-decoded path was due");
      CHECK(g.workspace_bytes == wb + xb && g.x_box_rows == token_box_rows(M), "fused workspace, token box");
    }
    // the workspace query (SIZE_MAX) and a run given exactly that workspace agree
    if (ws == SIZE_MAX) {
      const GemmPlan r = plan_gemm(p, d, g.workspace_bytes);
      CHECK(r.path == g.path && r.splits == g.splits && r.tile_x == g.tile_x && r.workspace_bytes == g.workspace_bytes,
            "query vs run: %s/%s", path_name(g.path), path_name(r.path));
    }
    // every (tile, K block) computed exactly once
    if (sk) {
      ++streamk_seen;
      const int64_t total = tiles * num_kb, U = g.sk_units;
      CHECK(g.splits == 1 && g.grid[0] == static_cast<uint32_t>(sk_ctas) && g.grid[1] == 1 && g.grid[2] == 1 &&
                sk_ctas <= d.sm_count && 2 * U >= num_kb && (sk_ctas - 1) * U < total,
            "stream-K grid %u of %lld units", g.grid[0], static_cast<long long>(U));
      CHECK(g.sk_partials_offset == token &&
                g.sk_flags_offset == token + static_cast<size_t>(sk_ctas) * streamk_partial_bytes(g.tile_x),
            "stream-K offsets");
      // kernel/gemm_streamk.cuh's walk: CTA c's segments; a segment starting inside a tile is the
      // CTA's first (one partial slot per CTA); each cut tile has one owner (its first K block)
      // whose partners are the CTAs c + 1 .. ((t + 1) num_kb - 1) / U, each holding a partial of t
      if (iter % 50 == 0 && total <= (1 << 22)) {
        std::vector<int> owner(static_cast<size_t>(tiles), 0), partials(static_cast<size_t>(tiles), 0);
        bool ok = true;
        for (int64_t c = 0; c < sk_ctas; ++c) {
          const int64_t b = c * U, e = std::min(b + U, total);
          for (int64_t u = b; u < e;) {
            const int64_t t = u / num_kb, k0 = u - t * num_kb, n = std::min(num_kb - k0, e - u);
            if (k0 != 0) {
              ok = ok && u == b;  // only a CTA's first segment starts inside a tile
              ++partials[static_cast<size_t>(t)];
            } else if (n < num_kb) {
              ok = ok && u + n == e;  // the owner's segment is the CTA's last
              ++owner[static_cast<size_t>(t)];
              ok = ok && ((t + 1) * num_kb - 1) / U - c == (num_kb - n + U - 1) / U;  // partners hold the rest
            }
            u += n;
          }
        }
        for (int64_t t = 0; t < tiles; ++t)
          ok = ok && (partials[static_cast<size_t>(t)] == 0 ? owner[static_cast<size_t>(t)] == 0
                                                            : owner[static_cast<size_t>(t)] == 1);
        CHECK(ok, "stream-K walk: %lld tiles x %d blocks, %lld per CTA", static_cast<long long>(tiles), num_kb,
              static_cast<long long>(U));
      }
      continue;
    }
    if (g.path == GemmPath::kPersistent) {
      CHECK(g.grid[0] == static_cast<uint32_t>(d.sm_count) && g.grid[1] == 1 && g.grid[2] == 1, "persistent grid");
      // CTA b takes tiles b, b + grid, ... below tiles - tail_tiles: each once, all K blocks; the tail kernel's
      // cluster j takes tile tiles - tail_tiles + j, split as cluster_splitk_work splits (covered above)
      CHECK(g.tail_tiles == 0 || (g.tail_tiles * 2 <= d.sm_count && (g.tiles - g.tail_tiles) % d.sm_count == 0 &&
                                  g.tail_splits >= 2 && g.tail_splits <= kMaxSplits &&
                                  g.tail_tiles * g.tail_splits <= d.sm_count &&
                                  g.num_kb - (g.num_kb + g.tail_splits - 1) / g.tail_splits > kTailFixedBlocks),
            "tail %lld x %d of %lld tiles", static_cast<long long>(g.tail_tiles), g.tail_splits,
            static_cast<long long>(g.tiles));
      // no tail: none, over half the SMs, or even the widest split (smax) saves no more than the fixed cost
      // or has no room for its clusters
      const int64_t rest = g.tiles % d.sm_count;
      const int64_t smax = rest > 0 ? std::min<int64_t>(std::min<int64_t>(kMaxSplits, d.sm_count / rest), g.num_kb) : 1;
      CHECK(g.tail_tiles > 0 || rest == 0 || 2 * rest > d.sm_count || smax < 2 ||
                g.num_kb - (g.num_kb + smax - 1) / smax <= kTailFixedBlocks ||
                std::min(d.predecoded_clusters[smax], d.predecoded_wide_clusters[smax]) < rest,
            "a tail the plan should have taken: %lld tiles", static_cast<long long>(g.tiles));
      tail_seen += g.tail_tiles > 0;
      continue;
    }
    CHECK(g.grid[0] == static_cast<uint32_t>(tiles_w * g.splits) && g.grid[1] == tiles_x && g.grid[2] == L,
          "grid %u %u %u", g.grid[0], g.grid[1], g.grid[2]);
    if (iter % 50 == 0 && tiles_w * g.splits <= 4096) {
      // kernel/tile_scheduler.cuh: cluster_splitk_work for blockIdx.x = tile_w * splits + split
      std::vector<int> covered(static_cast<size_t>(tiles_w * num_kb), 0);
      for (int64_t bx = 0; bx < g.grid[0]; ++bx) {
        const int64_t tile_w = bx / g.splits, split = bx % g.splits;
        const int64_t b = num_kb * split / g.splits, e = num_kb * (split + 1) / g.splits;
        for (int64_t kb = b; kb < e; ++kb) ++covered[static_cast<size_t>(tile_w * num_kb + kb)];
      }
      bool once = true;
      for (int c : covered) once = once && c == 1;
      CHECK(once, "split-K coverage %lld tiles x %d blocks, splits %d", static_cast<long long>(tiles_w), num_kb,
            g.splits);
    }
  }
  CHECK(pre_seen > 100 && persistent_seen > 20 && fused_seen > 100 && short_seen > 50 && wide_seen > 20 &&
            wide_persistent_seen > 5 && tail_seen > 3 && streamk_seen > 3,
        "coverage of the random cases: pre %d (persistent %d, tail %d, stream-K %d) fused %d (short %d) wide %d "
        "(persistent %d)",
        pre_seen, persistent_seen, tail_seen, streamk_seen, fused_seen, short_seen, wide_seen, wide_persistent_seen);
}

// ---------------------------------------------------------------------------
// 5. Packed MoE plan
// ---------------------------------------------------------------------------
static PackedGroupedGemmProblem packed(int32_t G, int64_t total_M, int64_t N, int64_t K) {
  PackedGroupedGemmProblem p;
  p.G = G;
  p.total_M = total_M;
  p.N = N;
  p.K = K;
  p.a = Fp4Operand{addr(1u << 20), K / 2, 0};
  p.b = Fp4Operand{addr(1u << 28), K / 2, N * K / 2};
  p.sfa = ScaleOperand{addr(3u << 28), NVFP4_SF_LINEAR, K / 16, 0};
  p.sfb = ScaleOperand{addr(5u << 28), NVFP4_SF_LINEAR, K / 16, N * (K / 16)};
  p.c.data = reinterpret_cast<void*>(uintptr_t{7} << 28);
  p.c.dtype = DType::kBFloat16;
  p.c.row_stride = N;
  p.c.col_stride = 1;
  return p;
}

static void test_packed() {
  {
    const PackedPlan g = plan_packed(packed(8, 1024, 4096, 7168));
    CHECK(g.unsupported == nullptr && !g.empty, "taken: %s", g.unsupported ? g.unsupported : "");
    CHECK(g.slots == (1024 + 8 * 127) / 128 && g.tiles_w == 32 && g.num_kb == 56, "grid %lld x %lld",
          static_cast<long long>(g.tiles_w), static_cast<long long>(g.slots));
    CHECK(g.workspace_bytes == token_workspace_bytes(1024 + 127, 7168, 1) && g.x_box_rows == 128, "workspace %zu",
          g.workspace_bytes);
    CHECK(g.sf_mode == kScaleTma && g.sf_mode_without_tma == kScaleCpAsync && g.c_vec4 == 1, "modes %d %d",
          g.sf_mode, g.c_vec4);
  }
  {
    const PackedPlan g = plan_packed(packed(3, 7, 12, 96));
    CHECK(g.unsupported == nullptr && g.slots == (7 + 3 * 127) / 128 && g.tiles_w == 1 && g.x_box_rows == 8,
          "small: %lld slots, box %d", static_cast<long long>(g.slots), g.x_box_rows);
    // 6-byte scale rows: staged after the token workspace (the experts as batches), read by TMA
    const size_t token = token_workspace_bytes(offset_ws_rows(7, g.x_box_rows), 96, 1);
    CHECK(g.sf_mode == kScaleTma && g.sf_mode_without_tma == kScaleCpAsync && g.stage_w && g.stage_offset == token &&
              g.workspace_bytes == token + staged_sf_bytes(12, 96, 3) && g.c_vec4 == 1,
          "6-byte scale rows: %d staged %d; 12-column output: %d", g.sf_mode, g.stage_w, g.c_vec4);
    const PackedPlan a = plan_packed(packed(8, 1024, 4096, 7168));
    CHECK(!a.stage_w && a.sf_mode == kScaleTma, "aligned experts' scales: not staged");
  }
  for (int which = 0; which < 3; ++which) {
    PackedGroupedGemmProblem p = packed(2, 256, 512, 1024);
    p.K = 33;  // not looked at
    if (which == 0) p.total_M = 0;
    if (which == 1) p.N = 0;
    if (which == 2) p.G = 0;
    const PackedPlan g = plan_packed(p);
    CHECK(g.empty && g.unsupported == nullptr && g.workspace_bytes == 0, "empty %d", which);
  }
  struct Refusal {
    const char* why;
    void (*edit)(PackedGroupedGemmProblem&);
  };
  const Refusal refusals[] = {
      {"sm90a grouped gemm packed: K must be a multiple of 32", [](PackedGroupedGemmProblem& p) { p.K = 48; }},
      {"sm90a grouped gemm packed: linear scales only",
       [](PackedGroupedGemmProblem& p) { p.sfb.layout = NVFP4_SF_BLOCKED; }},
      {"sm90a grouped gemm packed: fp4 operands need 16-byte aligned rows",
       [](PackedGroupedGemmProblem& p) { p.a.row_stride = 520; }},
      {"sm90a grouped gemm packed: grid too large", [](PackedGroupedGemmProblem& p) { p.G = 70000; }},
      {"sm90a grouped gemm packed: token workspace over 1 GiB",
       [](PackedGroupedGemmProblem& p) {
         p.total_M = 40000;
         p.K = 16384;
       }},
      {"sm90a grouped gemm packed: TMA cannot take the weights",
       [](PackedGroupedGemmProblem& p) { p.b.batch_stride += 8; }},
  };
  for (const Refusal& r : refusals) {
    PackedGroupedGemmProblem p = packed(2, 256, 512, 1024);
    r.edit(p);
    const PackedPlan g = plan_packed(p);
    CHECK(same_reason(g.unsupported, r.why), "want '%s', got '%s'", r.why, g.unsupported ? g.unsupported : "(taken)");
  }
}

// ---------------------------------------------------------------------------
// The decode route (gemv/decode_plan.hpp, gemm_decode.cu): 2..16 tokens on >= 4096 weight rows
// (N·L), 17..32 on >= 7168, with aligned operands; M = 1 stays a GEMV, M = 33.., 17..32 on
// 4096x14336 and fewer rows the tiled GEMM, misaligned operands the old routes.
// ---------------------------------------------------------------------------
static void test_decode_route() {
  const GemmDeviceNumbers dev = h100();
  for (nvfp4_sf_layout_t lay : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED})
    for (int64_t M : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{8}, int64_t{16}, int64_t{17}, int64_t{32},
                      int64_t{33}, int64_t{64}, int64_t{65}, int64_t{128}})
      for (int64_t NK : {int64_t{7168}, int64_t{4096}}) {
        const GemmProblem p = dense(M, NK, NK == 4096 ? 14336 : 7168, 1, lay);
        const GemmPlan g = plan_gemm(p, dev, SIZE_MAX);
        const bool dec = M >= 2 && (M <= 16 || (M <= 32 && NK == 7168));
        const GemmPath want = M == 1 ? GemmPath::kGemvRoute : dec ? GemmPath::kDecode : GemmPath::kPredecoded;
        CHECK(g.unsupported == nullptr && g.path == want && (!dec || g.workspace_bytes == 0),
              "M=%lld N=%lld layout %d: %s (want %s)", static_cast<long long>(M), static_cast<long long>(NK),
              static_cast<int>(lay), path_name(g.path), path_name(want));
        CHECK(decode_route(p) == dec, "decode_route M=%lld N=%lld", static_cast<long long>(M),
              static_cast<long long>(NK));
        // 14336x4096 (wide rows) takes 17..32 as 7168^2 does
        CHECK(decode_route(dense(M, 14336, 4096, 1, lay)) == (M >= 2 && M <= 32), "decode_route M=%lld 14336x4096",
              static_cast<long long>(M));
        GemmProblem few = dense(M, 2048, 7168, 1, lay);  // too few rows: the tiled GEMM (or a GEMV)
        CHECK(!decode_route(few), "decode_route M=%lld N=2048", static_cast<long long>(M));
      }
  // batched, odd shapes, mixed layouts, fp32 out, strided output: still the decode kernel
  {
    GemmProblem p = dense(15, 1400, 96, 3, NVFP4_SF_BLOCKED);  // 4200 rows in all
    p.sfa.layout = NVFP4_SF_LINEAR;  // tokens linear, weights blocked
    p.sfa.row_stride = 96 / 16;
    p.sfa.batch_stride = 15 * 6;
    p.c.dtype = DType::kFloat32;
    p.c.row_stride = 1;
    p.c.col_stride = 15;  // column-major output
    CHECK(plan_gemm(p, dev, 0).path == GemmPath::kDecode, "mixed layouts, K = 96, L = 3");
  }
  // linear weight scales need K % 256 (16-byte scale pieces per stage): K = 96 -> the tiled GEMM
  // (M = 3) or the GEMVs (M = 2)
  {
    GemmProblem p = dense(3, 4096, 96, 1, NVFP4_SF_LINEAR);
    CHECK(!decode_route(p) && plan_gemm(p, dev, SIZE_MAX).path == GemmPath::kFused, "linear K = 96, M = 3");
    p = dense(2, 4096, 96, 1, NVFP4_SF_LINEAR);
    CHECK(!decode_route(p) && plan_gemm(p, dev, SIZE_MAX).path == GemmPath::kGemvRoute, "linear K = 96, M = 2");
  }
  // misaligned token rows (row stride 8 bytes more than K / 2): M = 2 GEMVs, M = 3 refused
  {
    GemmProblem p = dense(2, 4096, 1024);
    p.a.row_stride = 520;
    CHECK(!decode_route(p) && plan_gemm(p, dev, SIZE_MAX).path == GemmPath::kGemvRoute, "misaligned M = 2");
    p.M = 3;
    CHECK(!decode_route(p) && plan_gemm(p, dev, SIZE_MAX).unsupported != nullptr, "misaligned M = 3");
  }
  // misaligned weights
  {
    GemmProblem p = dense(8, 4096, 1024);
    CHECK(decode_route(p), "aligned 8x4096x1024 not taken");
    p.b.data = addr((1u << 28) + 8);
    CHECK(!decode_route(p), "misaligned weights taken");
  }
  // unknown output dtype: not the decode kernel
  {
    GemmProblem p = dense(8, 4096, 1024);
    p.c.dtype = static_cast<DType>(99);
    CHECK(!decode_route(p), "unknown dtype taken");
  }
}

// ---------------------------------------------------------------------------
// 6. Token tile of the pre-decoded paths (H100: 132 SMs)
// ---------------------------------------------------------------------------
struct TileWant {
  int64_t M, N, K, L;
  int32_t tile_x;
  int64_t tiles_x;
  GemmPath path;
  int splits;
};

static void test_token_tile() {
  const GemmDeviceNumbers dev = h100();
  const TileWant wants[] = {
      // N = K = 7168 (56 weight tiles, 56 K blocks): the busiest SM's work in K blocks x tokens
      {128, 7168, 7168, 1, 128, 1, GemmPath::kPredecoded, 2},   // 28 x 128
      {129, 7168, 7168, 1, 136, 1, GemmPath::kPredecoded, 2},   // 28 x 136 (128-token tiles: 112 tiles, 56 x 128)
      {136, 7168, 7168, 1, 136, 1, GemmPath::kPredecoded, 2},
      {137, 7168, 7168, 1, 128, 2, GemmPath::kPredecoded, 1},   // two tiles at either width: the narrower
      {200, 7168, 7168, 1, 128, 2, GemmPath::kPredecoded, 1},
      {256, 7168, 7168, 1, 128, 2, GemmPath::kPredecoded, 1},   // 56 x 128
      {257, 7168, 7168, 1, 136, 2, GemmPath::kPredecoded, 1},   // 56 x 136 against 168 tiles: 2 x 56 x 128
      {272, 7168, 7168, 1, 136, 2, GemmPath::kPredecoded, 1},
      {273, 7168, 7168, 1, 128, 3, GemmPath::kPersistent, 1},
      {385, 7168, 7168, 1, 136, 3, GemmPath::kPersistent, 1},   // 168 tiles: a round + a 36-tile tail, against 224: 2 rounds
      {512, 7168, 7168, 1, 128, 4, GemmPath::kPersistent, 1},   // 2 x 56 x 128
      {513, 7168, 7168, 1, 136, 4, GemmPath::kPersistent, 1},   // 224 tiles, 2 per SM, against 280: 3
      {1024, 7168, 7168, 1, 128, 8, GemmPath::kPersistent, 1},
      {1025, 7168, 7168, 1, 128, 9, GemmPath::kPersistent, 1},  // 504 or 448 tiles: 4 per SM either way
      {2049, 7168, 7168, 1, 128, 17, GemmPath::kPersistent, 1}, // 896 tiles (7 per SM) against 952 (8): 7% less
      {4096, 4096, 4096, 1, 128, 32, GemmPath::kPersistent, 1}, // 31 x 32 tiles of 136: still 8 per SM
      {8192, 8192, 8192, 1, 128, 64, GemmPath::kPersistent, 1}, // 30 x 136 against 32 x 128: 0.4% less
      // the GPU tests' shapes (tests/test_gpu_gemm.py, "the 136-token tile")
      {129, 2048, 8192, 1, 136, 1, GemmPath::kPredecoded, 8},   // 16 tiles, clusters of 8
      {136, 2048, 8192, 3, 136, 1, GemmPath::kPredecoded, 2},   // 48 tiles
      {272, 2000, 4096, 1, 136, 2, GemmPath::kPredecoded, 4},   // 32 tiles
      {257, 7168, 2048, 1, 136, 2, GemmPath::kPredecoded, 1},   // 112 tiles (128 wide: 168, persistent)
      {257, 4000, 2048, 3, 136, 2, GemmPath::kPersistent, 1},   // 192 tiles, 2 per SM, against 288: 3
      {1025, 4096, 2048, 1, 136, 8, GemmPath::kPersistent, 1},  // 256 tiles against 288
      {1030, 2000, 2080, 2, 136, 8, GemmPath::kPersistent, 1},  // 256 tiles against 288
      {137, 2048, 8192, 1, 128, 2, GemmPath::kPredecoded, 4},
      {200, 4096, 4096, 1, 128, 2, GemmPath::kPredecoded, 2},
  };
  for (const TileWant& w : wants) {
    for (nvfp4_sf_layout_t layout : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED}) {
      const GemmPlan g = tiled_plan(dense(w.M, w.N, w.K, w.L, layout), dev);
      CHECK(g.unsupported == nullptr && g.tile_x == w.tile_x && g.tiles_x == w.tiles_x && g.path == w.path &&
                g.splits == w.splits,
            "%lldx%lldx%lld L=%lld: tile %d, %lld token tiles, %s, splits %d (want %d, %lld, %s, %d)",
            static_cast<long long>(w.M), static_cast<long long>(w.N), static_cast<long long>(w.K),
            static_cast<long long>(w.L), g.tile_x, static_cast<long long>(g.tiles_x), path_name(g.path), g.splits,
            w.tile_x, static_cast<long long>(w.tiles_x), path_name(w.path), w.splits);
      const int64_t tiles = (w.N + 127) / 128 * w.tiles_x * w.L;
      CHECK(g.tiles == tiles && g.x_box_rows == w.tile_x, "tiles %lld, box %d", static_cast<long long>(g.tiles),
            g.x_box_rows);
      if (g.path == GemmPath::kPredecoded)
        CHECK(g.grid[0] == static_cast<uint32_t>((w.N + 127) / 128 * w.splits) && g.grid[1] == w.tiles_x &&
                  g.grid[2] == w.L,
              "grid %u %u %u", g.grid[0], g.grid[1], g.grid[2]);
      CHECK(g.workspace_bytes == token_workspace_bytes(w.M, w.K, w.L) + (g.stage_w ? staged_sf_bytes(w.N, w.K, w.L) : 0),
            "workspace %zu", g.workspace_bytes);
    }
  }
  // the wide instance's own cluster capacity decides its split: M = 129 with 2-CTA clusters
  // of the 136-token kernel that do not all fit (40 of 56) runs 56 lone CTAs of 56 blocks,
  // no better than 112 of the 128-token tile: the narrower tile
  {
    GemmDeviceNumbers d = dev;
    d.predecoded_wide_clusters[2] = 40;
    const GemmPlan g = plan_gemm(dense(129, 7168, 7168), d, SIZE_MAX);
    CHECK(g.tile_x == 128 && g.splits == 1 && g.tiles_x == 2, "tile %d splits %d", g.tile_x, g.splits);
  }
  // fewer SMs (114, H100 PCIe): M = 129 still one 136-token tile, split 2
  {
    GemmDeviceNumbers d = dev;
    d.sm_count = 114;
    const GemmPlan g = plan_gemm(dense(129, 7168, 7168), d, SIZE_MAX);
    CHECK(g.tile_x == 136 && g.splits == 2, "114 SMs: tile %d splits %d", g.tile_x, g.splits);
  }
  // the fused kernel keeps the 128-token tile: M = 129 without workspace
  {
    const GemmPlan g = plan_gemm(dense(129, 7168, 7168), dev, 0);
    CHECK(g.path == GemmPath::kFused && g.tile_x == 128 && g.tiles_x == 2, "fused: tile %d", g.tile_x);
  }
  CHECK(token_box_rows(129, kTileXWide) == 136 && token_box_rows(300, kTileXWide) == 136 &&
            token_box_rows(129) == 128 && token_box_rows(65) == 72,
        "token boxes");
}

// ---------------------------------------------------------------------------
// Operand roles: which problems run as Cᵀ = B·Aᵀ, and that the swapped problem's strides
// address C's elements (a small float GEMM through both problems' strides)
// ---------------------------------------------------------------------------
static void test_roles(std::mt19937_64& rng) {
  const GemmDeviceNumbers dev = h100();
  CHECK(swap_roles(dense(4096, 128, 4096)) && swap_roles(dense(4096, 16, 7168)) && swap_roles(dense(16384, 1, 1024)) &&
            swap_roles(dense(1000, 100, 7168, 2)) && swap_roles(dense(6144, 128, 2048)) &&
            swap_roles(dense(4096, 129, 4096)) && swap_roles(dense(8192, 1024, 7168)) &&
            swap_roles(dense(16384, 1024, 2048)),
        "few weight rows, many tokens, the pass's tokens past 24 MiB: swapped");
  // N past 1024, or B's fp16 past 32 MiB (1024 x 16384 x 2 = 32 MiB is the edge)
  CHECK(!swap_roles(dense(8192, 1025, 4096)) && swap_roles(dense(8192, 1024, 16384)) &&
            !swap_roles(dense(8192, 1024, 16416)) && swap_roles(dense(8192, 512, 8192, 3)) &&
            !swap_roles(dense(8192, 512, 8192, 5)),
        "B's rows past the measured swap: kept roles");
  CHECK(!swap_roles(dense(4096, 1025, 4096)) && !swap_roles(dense(128, 4096, 7168)) &&
            !swap_roles(dense(4096, 4096, 4096)) && !swap_roles(dense(2, 1, 1024)),
        "kept roles");
  // the token bytes' edge (24 MiB = 6144 x 2048 x 2) and the ratio's (M >= 4 N)
  CHECK(!swap_roles(dense(6143, 128, 2048)) && !swap_roles(dense(3000, 2, 1024)) && !swap_roles(dense(1000, 100, 7168)) &&
            !swap_roles(dense(8192, 128, 512)) && !swap_roles(dense(4096, 128, 2048)),
        "tokens that stay in L2: kept roles");
  CHECK(!swap_roles(dense(511, 128, 1 << 16)) && swap_roles(dense(512, 128, 1 << 15)), "M >= 4 N");
  {
    // the swapped problems' routes: decode (16 tokens on 4096 rows), a GEMV (1 token), tiled with one token tile
    const GemmProblem q16 = gemm_roles(dense(4096, 16, 7168));
    CHECK(q16.M == 16 && q16.N == 4096 && plan_gemm(q16, dev, SIZE_MAX).path == GemmPath::kDecode, "N = 16: %s",
          path_name(plan_gemm(q16, dev, SIZE_MAX).path));
    CHECK(plan_gemm(gemm_roles(dense(16384, 1, 1024)), dev, SIZE_MAX).path == GemmPath::kGemvRoute, "N = 1: a GEMV");
    // H100's cluster capacity (bench/NOTES.md: 30 clusters of 4): 32 tiles split 3, pre-decoded (as
    // 128x4096x4096 runs today)
    GemmDeviceNumbers h = dev;
    h.fused_clusters[4] = h.predecoded_clusters[4] = 30;
    const GemmPlan g = plan_gemm(gemm_roles(dense(4096, 128, 4096)), h, SIZE_MAX);
    CHECK(g.tiles_x == 1 && g.tiles_w == 32 && g.path == GemmPath::kPredecoded && g.splits == 3 &&
              g.workspace_bytes == token_workspace_bytes(128, 4096, 1),
          "N = 128: one token tile, split 3, the pass over 128 rows (%s, %d, %zu bytes)", path_name(g.path), g.splits,
          g.workspace_bytes);
    const GemmPlan h2 = plan_gemm(gemm_roles(dense(8192, 128, 7168)), dev, SIZE_MAX);
    CHECK(h2.tiles_x == 1 && h2.tiles_w == 64 && h2.workspace_bytes == token_workspace_bytes(128, 7168, 1),
          "8192x128x7168: the pass over 128 rows, not 8192 (%zu bytes)", h2.workspace_bytes);
    // a problem on the decode route keeps its roles (its checks are on the weights' side)
    GemmProblem d = dense(32, 8, 1024, 1024);
    CHECK(decode_route(d) && !swap_roles(d), "decode route: roles kept");
  }
  // strides: C[l, m, n] = sum_k A[l, m, k] B[l, n, k] through p's output strides equals the
  // swapped problem's C'[l, n, m] = sum_k A'[l, n, k] B'[l, m, k] through its strides
  for (int it = 0; it < 200; ++it) {
    auto pick = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % (hi - lo + 1)); };
    const int64_t M = pick(1, 9), N = pick(1, 9), K = pick(1, 5), L = pick(1, 3);
    const bool colmajor = rng() % 2 == 0;
    GemmProblem p = dense(M, N, 32, L);
    p.c.row_stride = colmajor ? 1 : N + 2;
    p.c.col_stride = colmajor ? M + 3 : 1;
    p.c.batch_stride = (colmajor ? (M + 3) * N : (N + 2) * M) + 5;
    std::vector<double> A(L * M * K), B(L * N * K);
    for (double& v : A) v = static_cast<double>(pick(-8, 8));
    for (double& v : B) v = static_cast<double>(pick(-8, 8));
    const size_t out_elems = static_cast<size_t>(L * p.c.batch_stride + 64);
    std::vector<double> c1(out_elems, 0.0), c2(out_elems, 0.0);
    // the problem as stated
    for (int64_t l = 0; l < L; ++l)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += A[(l * M + m) * K + k] * B[(l * N + n) * K + k];
          c1[l * p.c.batch_stride + m * p.c.row_stride + n * p.c.col_stride] = acc;
        }
    // the swapped problem: its tokens are B's rows, its weights A's
    const GemmProblem q = swapped_roles(p);
    CHECK(q.M == N && q.N == M && q.a.data == p.b.data && q.sfa.data == p.sfb.data && q.b.data == p.a.data &&
              q.sfb.data == p.sfa.data && q.c.batch_stride == p.c.batch_stride && q.c.data == p.c.data,
          "swapped operands");
    for (int64_t l = 0; l < L; ++l)
      for (int64_t m = 0; m < q.M; ++m)
        for (int64_t n = 0; n < q.N; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += B[(l * q.M + m) * K + k] * A[(l * q.N + n) * K + k];
          c2[l * q.c.batch_stride + m * q.c.row_stride + n * q.c.col_stride] = acc;
        }
    CHECK(c1 == c2, "it %d: %lldx%lldx%lld L=%lld %s: swapped strides address other elements", it,
          static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K), static_cast<long long>(L),
          colmajor ? "column-major" : "row-major");
  }
}

// ---------------------------------------------------------------------------
// Stream-K (choose_streamk): where the model takes it, its units and grid, its workspace
// ---------------------------------------------------------------------------
static void test_streamk() {
  GemmDeviceNumbers dev = h100();
  dev.fused_clusters[4] = dev.predecoded_clusters[4] = 30;  // H100's cluster capacity (bench/NOTES.md)
  struct SkWant {
    int64_t M, N, K;
    GemmPath path;
    int32_t tile_x;
    int64_t units;  // per CTA (stream-K only)
    uint32_t ctas;
  };
  const SkWant wants[] = {
      {137, 7168, 7168, GemmPath::kStreamK, 128, 48, 131},   // 112 tiles x 56 blocks: 48 + 4 against 56
      {408, 7168, 7168, GemmPath::kStreamK, 136, 72, 131},   // 168 wide tiles: 72 + 4 against 56 + 19 + 16
      {1024, 7168, 7168, GemmPath::kStreamK, 128, 191, 132}, // 448 tiles: 191 + 4 against 3 x 56 + 28 + 16
      {512, 3072, 4096, GemmPath::kStreamK, 128, 24, 128},   // 96 tiles x 32: 24 + 4 against 32
      {2048, 7168, 7168, GemmPath::kPersistent, 128, 0, 0},  // 896 tiles: 381 + 4 against 7 x 56 (6.8 rounds)
      {4096, 4096, 4096, GemmPath::kPersistent, 128, 0, 0},  // 249 + 4 against 256
      {128, 7168, 7168, GemmPath::kPredecoded, 128, 0, 0},   // 56 tiles split 2: 24 + 4 against 28
      {1024, 2048, 4096, GemmPath::kPredecoded, 128, 0, 0},  // 128 tiles: 32 + 4 against 32
      {65, 256, 16384, GemmPath::kPredecoded, 128, 0, 0},    // 2 tiles: 2 units per CTA, > 3 CTAs per tile
  };
  for (const SkWant& w : wants) {
    const GemmProblem p = dense(w.M, w.N, w.K);
    const GemmPlan g = plan_gemm(p, dev, SIZE_MAX);
    CHECK(g.path == w.path && g.tile_x == w.tile_x && g.sk_units == w.units && (w.ctas == 0 || g.grid[0] == w.ctas),
          "%lldx%lldx%lld: %s, tile %d, %lld units, %u CTAs (want %s, %d, %lld, %u)", static_cast<long long>(w.M),
          static_cast<long long>(w.N), static_cast<long long>(w.K), path_name(g.path), g.tile_x,
          static_cast<long long>(g.sk_units), g.grid[0], path_name(w.path), w.tile_x, static_cast<long long>(w.units),
          w.ctas);
    if (g.path != GemmPath::kStreamK) continue;
    const size_t token = token_workspace_bytes(w.M, w.K, 1);
    const size_t sk = static_cast<size_t>(g.grid[0]) * streamk_partial_bytes(g.tile_x) + streamk_flag_bytes(g.grid[0]);
    CHECK(g.workspace_bytes == token + sk && g.sk_partials_offset == token &&
              g.sk_flags_offset == token + g.grid[0] * streamk_partial_bytes(g.tile_x) && g.sk_flags_offset % 256 == 0,
          "stream-K workspace %zu", g.workspace_bytes);
    // one byte short of it: the tiled plan in the token workspace
    const GemmPlan r = plan_gemm(p, dev, g.workspace_bytes - 1);
    CHECK(r.path != GemmPath::kStreamK && r.workspace_bytes == token, "short workspace: %s", path_name(r.path));
  }
  // the swapped 8500 x 64 x 4096: 67 weight tiles of one token tile, 17 units per CTA
  const GemmPlan s = plan_gemm(gemm_roles(dense(8500, 64, 4096)), dev, SIZE_MAX);
  CHECK(s.path == GemmPath::kStreamK && s.sk_units == 17 && s.grid[0] == 127, "8500x64x4096: %s, %lld units",
        path_name(s.path), static_cast<long long>(s.sk_units));
}

int main() {
  std::mt19937_64 rng(20261125);
  test_support();
  test_known_shapes();
  test_scale_modes();
  test_invariants(rng);
  test_decode_route();
  test_packed();
  test_token_tile();
  test_roles(rng);
  test_streamk();
  return check_summary();
}
