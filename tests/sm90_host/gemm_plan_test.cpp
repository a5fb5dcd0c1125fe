// CPU unit test of the sm90a GEMM plan (cpp/src/sm90/gemm_plan.hpp): which problems the
// Hopper kernels take, which kernel runs a problem, its split-K, grid, token TMA box,
// scale-load mode and token workspace. Plain C++ (no CUDA): compiled and run by
// tests/test_sm90_plans.py with the host C++ compiler (nvcc as a fallback). Invariants over
// random problems, the operand roles, the token tile and stream-K are gemm_schedule_test.cpp's.
//
// Checks:
//  1. the support checks and their order (the messages gemm() reports);
//  2. the path, split and grid of the gpu-mode and square shapes on an H100's numbers
//     (132 SMs), including a cluster size whose clusters do not all fit at once;
//  3. the scale-load mode per layout and alignment, the output vector flag;
//  5. the packed MoE plan; the decode route.
// Prints "N passed, N failed".
#include "gemm_plan_fixtures.hpp"

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
      // (3..32 tokens on enough weight rows run on the decode kernel: test_decode_route; 65: one 128-token tile)
      {65, 256, 8192, 1, true, GemmPath::kFused, 8, true},           // 2 tiles, 64 blocks: 8 CTAs of 8
      {65, 256, 16384, 1, true, GemmPath::kPredecoded, 8, false},    // 8 CTAs of 16 blocks, 72-row token box
      {64, 4096, 7168, 1, true, GemmPath::kPredecoded, 4, false},    // the 64-token tile: 32 tiles x 4
      {40, 2048, 16384, 1, true, GemmPath::kPredecoded, 8, false},   // 16 tiles x 8, a 40-row box
      {24, 2048, 16384, 1, true, GemmPath::kPredecoded, 8, false},   // the 32-token tile, a 24-row box
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
    // the 32- / 64- / 96-token tile where the pre-decoded path has at most 32 / 64 / 96 tokens (none
    // of 128k+1..136k here)
    const int tile = !pre ? 128 : w.M <= 32 ? 32 : w.M <= 64 ? 64 : w.M <= 96 ? 96 : 128;
    CHECK(g.stages == (!pre          ? kFusedStages
                       : tile == 32 ? 12
                       : tile == 64 ? 8
                       : tile == 96 ? 6
                                    : kPredecodedStages),
          "stages %d", g.stages);
    CHECK(g.tile_x == tile, "%lld tokens: tile %d", static_cast<long long>(w.M), g.tile_x);
    CHECK(g.x_box_rows == (w.M < tile ? (w.M + 7) / 8 * 8 : tile), "box rows %d", g.x_box_rows);  // both paths
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
// The decode route (gemv/decode_plan.hpp, gemm_decode.cu): 2..32 tokens on >= 4096 weight rows
// (N·L; 17..32 at K < 1536 on >= 7168), with aligned operands; M = 1 stays a GEMV, M = 33..,
// 17..32 on 4096x1024, 25..32 on long K or many weights and fewer rows the tiled GEMM, misaligned
// operands the old routes.
// ---------------------------------------------------------------------------
static void test_decode_route() {
  const GemmDeviceNumbers dev = h100();
  for (nvfp4_sf_layout_t lay : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED})
    for (int64_t M : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{8}, int64_t{16}, int64_t{17}, int64_t{32},
                      int64_t{33}, int64_t{64}, int64_t{65}, int64_t{128}})
      for (int64_t NK : {int64_t{7168}, int64_t{4096}}) {
        const GemmProblem p = dense(M, NK, NK == 4096 ? 14336 : 7168, 1, lay);
        const GemmPlan g = plan_gemm(p, dev, SIZE_MAX);
        // 25..32 tokens at K > 4096 stay tiled (decode_weights_fit)
        const bool dec = M >= 2 && M <= 24;
        const GemmPath want = M == 1 ? GemmPath::kGemvRoute : dec ? GemmPath::kDecode : GemmPath::kPredecoded;
        CHECK(g.unsupported == nullptr && g.path == want && (!dec || g.workspace_bytes == 0),
              "M=%lld N=%lld layout %d: %s (want %s)", static_cast<long long>(M), static_cast<long long>(NK),
              static_cast<int>(lay), path_name(g.path), path_name(want));
        CHECK(decode_route(p) == dec, "decode_route M=%lld N=%lld", static_cast<long long>(M),
              static_cast<long long>(NK));
        // 14336x4096: 17..24 (58.7 M weights <= 2^26), not 25..32 (> 2^25); 7168x4096 all 2..32
        CHECK(decode_route(dense(M, 14336, 4096, 1, lay)) == (M >= 2 && M <= 24), "decode_route M=%lld 14336x4096",
              static_cast<long long>(M));
        CHECK(decode_route(dense(M, 7168, 4096, 1, lay)) == (M >= 2 && M <= 32), "decode_route M=%lld 7168x4096",
              static_cast<long long>(M));
        // many weights (> 2^26): 14336^2, 14336x7168 and 7168x14336 keep the decode kernel to 16 tokens
        for (const auto& nk : {std::pair<int64_t, int64_t>{14336, 14336}, {14336, 7168}, {7168, 14336}})
          CHECK(decode_route(dense(M, nk.first, nk.second, 1, lay)) == (M >= 2 && M <= 16),
                "decode_route M=%lld %lldx%lld", static_cast<long long>(M), static_cast<long long>(nk.first),
                static_cast<long long>(nk.second));
        GemmProblem few = dense(M, 2048, 7168, 1, lay);  // too few rows: the tiled GEMM (or a GEMV)
        CHECK(!decode_route(few), "decode_route M=%lld N=2048", static_cast<long long>(M));
        // 17..32 tokens on 4096 rows only at K >= 1536 (shorter: too few stages per warp)
        CHECK(decode_route(dense(M, 4096, 1024, 1, lay)) == (M >= 2 && M <= 16), "decode_route M=%lld 4096x1024",
              static_cast<long long>(M));
        CHECK(decode_route(dense(M, 4096, 1536, 1, lay)) == (M >= 2 && M <= 32), "decode_route M=%lld 4096x1536",
              static_cast<long long>(M));
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

int main() {
  test_support();
  test_known_shapes();
  test_scale_modes();
  test_decode_route();
  test_packed();
  return check_summary();
}
