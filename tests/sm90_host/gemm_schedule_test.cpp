// CPU unit test of how the sm90a GEMM runs a problem (cpp/src/sm90/gemm_schedule.hpp and
// gemm_plan.hpp's operand roles, through plan_gemm): the roles, and how the tiles spread over
// the SMs. Plain C++ (no CUDA):
// compiled and run by tests/test_sm90_plans.py with the host C++ compiler (nvcc as a fallback).
//
// Checks:
//  4. invariants over random shapes and device numbers: splits within limits and fitting,
//     the short-chain rule, the path rule, the token tile (128 or 136) the model picks,
//     every (tile, K block) computed exactly once by the grid (the tile scheduler's formula),
//     the workspace query agreeing with the run given exactly that workspace;
//  6. the token tile of the pre-decoded paths at M = 128k + 1 .. 136k (choose_token_tile);
//  7. the operand roles (Cᵀ = B·Aᵀ: swap_roles) and the swapped problem's strides;
//  8. stream-K (choose_streamk): where the model takes it, its units, grid and workspace.
// Prints "N passed, N failed".
#include "gemm_plan_fixtures.hpp"

// ---------------------------------------------------------------------------
// 4. Invariants over random problems and device numbers
// ---------------------------------------------------------------------------
static void test_invariants(std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int pre_seen = 0, persistent_seen = 0, fused_seen = 0, short_seen = 0, wide_seen = 0, wide_persistent_seen = 0;
  int tail_seen = 0, streamk_seen = 0, split_seen[kSplitTiles] = {};
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
      for (int i = 0; i < kSplitTiles; ++i)
        d.predecoded_split_clusters[i][s] =
            s < 2 ? 1 << 20 : static_cast<int>(pick(0, 3) == 0 ? pick(0, 64) : d.predecoded_clusters[s]);
    }
    const size_t ws = pick(0, 2) == 0 ? 0 : SIZE_MAX;
    const GemmPlan g = plan_gemm(p, d, ws);
    if (M <= gemv_detail::kDecodeMaxTokens && N * L >= gemv_detail::decode_min_rows(M, K) &&
        gemv_detail::decode_weights_fit(M, N * L, K) && (p.sfb.layout == NVFP4_SF_BLOCKED || K % 256 == 0)) {  // dense operands: always the decode kernel
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
    int split = -1;  // the index of a split-only tile, recomputed
    for (int i = 0; i < kSplitTiles; ++i)
      if (g.tile_x == kTileXSplit[i]) split = i;
    CHECK(g.tile_x == kTileX || (pre && wide) || (split >= 0 && g.path == GemmPath::kPredecoded),
          "tile %d on %s", g.tile_x, path_name(g.path));
    CHECK(!pre || g.stages == (split >= 0 ? kPredecodedSplitStages[split] : kPredecodedStages), "stages %d",
          g.stages);
    const int64_t tiles_w = (N + 127) / 128, tiles_x = (M + g.tile_x - 1) / g.tile_x, tiles = tiles_w * tiles_x * L;
    const int32_t num_kb = static_cast<int32_t>((K + 127) / 128);
    CHECK(g.tiles_w == tiles_w && g.tiles_x == tiles_x && g.tiles == tiles && g.num_kb == num_kb, "tiles");
    CHECK(g.splits >= 1 && g.splits <= kMaxSplits && g.splits <= num_kb, "splits %d of %d blocks", g.splits, num_kb);
    const int(&clusters)[kMaxSplits + 1] =
        pre ? (wide ? d.predecoded_wide_clusters : split >= 0 ? d.predecoded_split_clusters[split] : d.predecoded_clusters)
            : d.fused_clusters;
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
      // the smallest split-only tile (32, 64, 96) holding M whose tiles do not outnumber the SMs at
      // one split; a lone-CTA plan of one falls back to the 128-token stream-K plan where that gives
      // the busiest SM under 2/3 (the 96-token tile: 5/6) of its K blocks
      const int64_t one_tiles = tiles_w * L;
      auto lone = [&](const int(&cl)[kMaxSplits + 1]) {
        return choose_splits_fitting(cl, one_tiles, num_kb, d.sm_count) == 1;
      };
      auto fits = [&](const int(&cl)[kMaxSplits + 1]) { return !(lone(cl) && one_tiles > d.sm_count); };
      const int tx_split[kSplitTiles] = {32, 64, 96};
      const int64_t ratio[kSplitTiles][2] = {{3, 2}, {3, 2}, {6, 5}};
      int split0 = -1;
      for (int i = kSplitTiles - 1; i >= 0; --i)
        if (M <= tx_split[i] && fits(d.predecoded_split_clusters[i])) split0 = i;
      bool fallback = false;
      StreamKChoice fsk;
      if (split0 >= 0 && lone(d.predecoded_split_clusters[split0])) {
        fsk = choose_streamk(token_tiling(p, tiles_w, num_kb, d.predecoded_clusters, d.sm_count, kTileX), num_kb,
                             d.sm_count);
        fallback = fsk.units > 0 && ws >= token + streamk_workspace_bytes(fsk, kTileX) &&
                   ratio[split0][1] * static_cast<int64_t>(num_kb) > ratio[split0][0] * (fsk.units + kStreamKFixupBlocks);
      }
      const int split_due = fallback ? -1 : split0;
      const TokenTiling tt = choose_token_tile(p, tiles_w, num_kb, d);
      const StreamKChoice skc = fallback ? fsk : split >= 0 ? StreamKChoice{} : choose_streamk(tt, num_kb, d.sm_count);
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
      CHECK(split == split_due, "split-only tile rule: %lld tokens, tile %d", static_cast<long long>(M), g.tile_x);
      if (split >= 0) ++split_seen[split];
      const bool fewer = (M + kTileXWide - 1) / kTileXWide < (M + kTileX - 1) / kTileX;
      CHECK(split >= 0 || fallback || wide == (fewer && 32 * span(kTileXWide, d.predecoded_wide_clusters) <=
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
            wide_persistent_seen > 5 && tail_seen > 3 && streamk_seen > 3 && split_seen[0] > 5 && split_seen[1] > 5 &&
            split_seen[2] > 5,
        "coverage of the random cases: pre %d (persistent %d, tail %d, stream-K %d) fused %d (short %d) wide %d "
        "(persistent %d) split-only 32 / 64 / 96: %d %d %d",
        pre_seen, persistent_seen, tail_seen, streamk_seen, fused_seen, short_seen, wide_seen, wide_persistent_seen,
        split_seen[0], split_seen[1], split_seen[2]);
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
      // the 64-token tile (M <= 64 on the pre-decoded path, split-K only)
      {64, 7168, 7168, 1, 64, 1, GemmPath::kPredecoded, 2},     // 56 tiles
      {64, 4096, 14336, 1, 64, 1, GemmPath::kPredecoded, 4},    // 32 tiles
      {64, 14336, 4096, 1, 64, 1, GemmPath::kPredecoded, 1},    // 112 tiles
      {64, 2048, 8192, 3, 64, 1, GemmPath::kPredecoded, 2},     // 48 tiles, batches
      {64, 28672, 4096, 1, 128, 1, GemmPath::kPersistent, 1},   // 224 tiles: no persistent small instance
      // the 32-token tile (M <= 32 on the pre-decoded path, split-K only; fewer than 4096 weight rows,
      // else the decode kernel)
      {32, 2048, 16384, 1, 32, 1, GemmPath::kPredecoded, 8},    // 16 tiles, clusters of 8
      {32, 3968, 7168, 1, 32, 1, GemmPath::kPredecoded, 4},     // 31 tiles
      // the 96-token tile (M = 65..96, split-K only)
      {65, 7168, 7168, 1, 96, 1, GemmPath::kPredecoded, 2},     // 56 tiles
      {96, 4096, 14336, 1, 96, 1, GemmPath::kPredecoded, 4},    // 32 tiles
      {96, 14336, 4096, 1, 96, 1, GemmPath::kPredecoded, 1},    // 112 tiles
      {80, 2048, 8192, 3, 96, 1, GemmPath::kPredecoded, 2},     // 48 tiles, batches
      {97, 7168, 7168, 1, 128, 1, GemmPath::kPredecoded, 2},    // one token more: the 128-token tile
      {96, 28672, 4096, 1, 128, 1, GemmPath::kPersistent, 1},   // 224 tiles: no persistent 96 instance
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
      CHECK(g.tiles == tiles && g.x_box_rows == (w.M < w.tile_x ? (w.M + 7) / 8 * 8 : w.tile_x), "tiles %lld, box %d",
            static_cast<long long>(g.tiles), g.x_box_rows);
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
      {97, 256, 16384, GemmPath::kPredecoded, 128, 0, 0},    // 2 tiles: 2 units per CTA, > 3 CTAs per tile
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
  // the swapped 8500 x 64 x 4096: 67 weight tiles of one token tile. The 64-token tile would run
  // them one CTA each (32 K blocks on the busiest SM); the 128-token stream-K plan, 17 units per
  // CTA on 127 CTAs, gives it 21 (+ 4 for the fix-up) < 2/3 x 32: stream-K (plan_gemm's fallback)
  const GemmPlan s = plan_gemm(gemm_roles(dense(8500, 64, 4096)), dev, SIZE_MAX);
  CHECK(s.path == GemmPath::kStreamK && s.tile_x == kTileX && s.sk_units == 17 && s.grid[0] == 127,
        "8500x64x4096: %s, tile %d, %lld units", path_name(s.path), s.tile_x, static_cast<long long>(s.sk_units));
  // 8500 x 64 x 2048 (16 blocks): stream-K would give 8 + 4 > 2/3 x 16: the 64-token tile, one CTA per tile
  const GemmPlan s2 = plan_gemm(gemm_roles(dense(8500, 64, 2048)), dev, SIZE_MAX);
  CHECK(s2.path == GemmPath::kPredecoded && s2.tile_x == kTileXSplit[1] && s2.splits == 1 && s2.grid[0] == 67,
        "8500x64x2048: %s, tile %d", path_name(s2.path), s2.tile_x);
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

int main() {
  std::mt19937_64 rng(20261125);
  test_invariants(rng);
  test_token_tile();
  test_roles(rng);
  test_streamk();
  return check_summary();
}
