// CPU unit test of the sm90a grouped GEMM plan (cpp/src/sm90/grouped_plan.hpp): which chunks of
// groups the one-launch kernel takes (the rest go to the per-group GEMM loop), the problem
// table it fills (schedule order, token-workspace rows, tile numbering), split-K, grid,
// scale-load mode, token box and workspace. Plain C++ (no CUDA): compiled and run by
// tests/test_sm90_plans.py with the host C++ compiler (nvcc as a fallback).
//
// Checks:
//  1. the four gpu-mode benchmark cases on an H100's numbers: tiles, one CTA per tile
//     (persistent, min(tiles, SMs) CTAs), workspace = sum M_g x K x 2;
//  2. empty groups left out of the table, largest K first (stable), the fallbacks (alignment,
//     workspace missing or over 1 GiB), L != 1;
//  3. split-K when the tiles are too few (one wave, within every group's K blocks and the
//     cluster capacity), scale-load modes per layout and alignment, token box rows;
//  4. invariants over random ragged problems: every tile of every group numbered exactly once
//     and found again by the kernel's lookup (a binary search over tile_begin), every
//     workspace row belongs to exactly one group (the pass's lookup over x_row), kpad covers
//     every group's K, grid <= SMs;
//  5. the packed MoE API's tiled route on the same persistent walk (packed_plan.hpp,
//     kernel/grouped_packed_gemm.cuh PackedTiles::find emulated lane by lane, with the
//     cursor carried along each CTA's walk): over random valid offset tables (empty experts,
//     experts of > 128 rows) every (expert, token tile, weight tile) computed exactly once by
//     the persistent CTAs and the host's bound never short; over malformed tables (decreasing,
//     negative, past total_M) every tile's rows inside the token matrix, the walk bounded, and
//     each CTA's cursor reading the table once (plus one window per tile).
// Prints "N passed, N failed".
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <random>
#include <vector>

#include "common/formats.h"
#include "sm90/grouped_plan.hpp"
#include "sm90/packed_plan.hpp"

using namespace nvfp4;
using namespace nvfp4::sm90;

#include "../host_check.hpp"
#include "h100_clusters.hpp"

static const uint8_t* addr(uintptr_t a) { return reinterpret_cast<const uint8_t*>(a); }

// A dense group at distinct 256-byte aligned addresses (index i), scales of `layout`.
static GemmProblem group(int i, int64_t M, int64_t N, int64_t K, nvfp4_sf_layout_t layout = NVFP4_SF_LINEAR,
                         DType dt = DType::kFloat16) {
  GemmProblem p;
  p.L = 1;
  p.M = M;
  p.N = N;
  p.K = K;
  const uintptr_t base = (uintptr_t{1} << 32) * static_cast<uintptr_t>(i + 1);
  p.a = Fp4Operand{addr(base), K / 2, 0};
  p.b = Fp4Operand{addr(base + (uintptr_t{1} << 28)), K / 2, 0};
  p.sfa = ScaleOperand{addr(base + (uintptr_t{2} << 28)), layout, K / 16, 0};
  p.sfb = ScaleOperand{addr(base + (uintptr_t{3} << 28)), layout, K / 16, 0};
  p.c.data = reinterpret_cast<void*>(base + (uintptr_t{4} << 28));
  p.c.dtype = dt;
  p.c.row_stride = N;
  p.c.col_stride = 1;
  p.alpha.value = 0.5f * static_cast<float>(i + 1);
  return p;
}

// H100 SXM: 132 SMs, one CTA per SM (h100_clusters.hpp).
static GroupedDeviceNumbers h100() {
  GroupedDeviceNumbers d;
  d.sm_count = 132;
  for (int s = 0; s <= kMaxSplits; ++s) d.clusters[s] = h100_full_sm_clusters(s);
  return d;
}

static GroupedPlan g_plan;  // (9 KB: not on the stack of every helper)
static const GroupedPlan& plan(const std::vector<GemmProblem>& gs, size_t workspace = SIZE_MAX,
                               const GroupedDeviceNumbers& dev = h100()) {
  plan_grouped(gs.data(), 0, static_cast<int32_t>(gs.size()), dev, workspace, &g_plan);
  return g_plan;
}

static int64_t tiles_of(int64_t M, int64_t N) { return ((M + 127) / 128) * ((N + 127) / 128); }

// ---------------------------------------------------------------------------
// 1. The benchmark cases
// ---------------------------------------------------------------------------
static void test_benchmark() {
  struct Case {
    std::vector<int64_t> Ms;
    int64_t N, K;
  };
  const Case cases[] = {{{80, 176, 128, 72, 64, 248, 96, 160}, 4096, 7168},
                        {{40, 76, 168, 72, 164, 148, 196, 160}, 7168, 2048},
                        {{192, 320}, 3072, 4096},
                        {{128, 384}, 4096, 1536}};
  const int64_t expect_tiles[] = {32 * 11, 56 * 13, 24 * 5, 32 * 4};
  for (int c = 0; c < 4; ++c) {
    std::vector<GemmProblem> gs;
    int64_t rows = 0;
    for (size_t i = 0; i < cases[c].Ms.size(); ++i) {
      gs.push_back(group(static_cast<int>(i), cases[c].Ms[i], cases[c].N, cases[c].K));
      rows += cases[c].Ms[i];
    }
    const GroupedPlan& g = plan(gs);
    CHECK(g.fallback == nullptr, "case %d: %s", c, g.fallback ? g.fallback : "");
    CHECK(g.count == static_cast<int32_t>(gs.size()), "case %d: count %d", c, g.count);
    CHECK(g.tiles == expect_tiles[c], "case %d: tiles %lld", c, static_cast<long long>(g.tiles));
    CHECK(g.splits == 1, "case %d: splits %d (the tiles fill the SMs)", c, g.splits);
    CHECK(g.grid == static_cast<uint32_t>(g.tiles < 132 ? g.tiles : 132), "case %d: grid %u", c, g.grid);
    CHECK(g.rows == rows && g.kpad == cases[c].K, "case %d: rows %lld kpad %lld", c, static_cast<long long>(g.rows),
          static_cast<long long>(g.kpad));
    CHECK(g.workspace_bytes == token_workspace_bytes(rows + 127, cases[c].K, 1), "case %d: workspace %zu", c,
          g.workspace_bytes);
    CHECK(g.sf_mode == kScaleTma && g.x_box_rows == 128, "case %d: sf mode %d box %d", c, g.sf_mode, g.x_box_rows);
    for (int32_t i = 0; i < g.count; ++i)
      CHECK(g.entry[i].problem == i && g.entry[i].alpha == 0.5f * (i + 1), "case %d: entry %d is problem %d", c, i,
            g.entry[i].problem);  // equal K: the caller's order is kept
  }
}

// ---------------------------------------------------------------------------
// 2. The table and the fallbacks
// ---------------------------------------------------------------------------
static void test_table_and_fallbacks() {
  {
    std::vector<GemmProblem> gs = {group(0, 0, 256, 512), group(1, 100, 256, 512), group(2, 5, 0, 512),
                                   group(3, 1, 300, 1024), group(4, 129, 8, 96), group(5, 7, 256, 1024)};
    const GroupedPlan& g = plan(gs);
    CHECK(g.fallback == nullptr && g.count == 4, "empty groups left out: count %d", g.count);
    // largest K first, stable among equals: 3 (K 1024), 5 (1024), 1 (512), 4 (96)
    const int order[] = {3, 5, 1, 4};
    for (int i = 0; i < 4 && i < g.count; ++i)
      CHECK(g.entry[i].problem == order[i], "order %d: problem %d", i, g.entry[i].problem);
    CHECK(g.rows == 1 + 7 + 100 + 129 && g.kpad == 1024 && g.min_kb == 1, "rows %lld kpad %lld min_kb %d",
          static_cast<long long>(g.rows), static_cast<long long>(g.kpad), g.min_kb);
    CHECK(g.x_box_rows == 128, "box %d (a group of 129 rows)", g.x_box_rows);
    CHECK(g.entry[0].x_row == 0 && g.entry[1].x_row == 1 && g.entry[2].x_row == 8 && g.entry[3].x_row == 108,
          "x rows");
    CHECK(g.entry[3].num_kb == 1 && g.entry[3].tiles_w == 1, "K 96: one block; N 8: one tile");
  }
  const char* kAlign = "sm90a grouped gemm: fp4 operands need 16-byte aligned bases and rows";
  {
    std::vector<GemmProblem> gs = {group(0, 64, 256, 512), group(1, 64, 256, 512)};
    gs[1].b.data = addr(reinterpret_cast<uintptr_t>(gs[1].b.data) + 8);
    CHECK(plan(gs).fallback == kAlign, "b base");
    gs[1] = group(1, 64, 256, 512);
    gs[1].a.row_stride = 264;
    CHECK(plan(gs).fallback == kAlign, "a row stride");
    gs[1] = group(1, 64, 256, 512);
    gs[1].L = 2;
    CHECK(plan(gs).fallback != nullptr, "L = 2");
    gs[1] = group(1, 64, 256, 512);
    gs[1].sfb.layout = NVFP4_SF_BLOCKED;
    CHECK(plan(gs).fallback != nullptr, "mixed layouts");
  }
  {
    std::vector<GemmProblem> gs = {group(0, 64, 256, 512)};
    const size_t need = token_workspace_bytes(64 + 63, 512, 1);  // box 64: 63 rows past the tokens
    CHECK(plan(gs, need).fallback == nullptr, "exact workspace");
    CHECK(plan(gs, need - 256).fallback != nullptr, "workspace too small");
    CHECK(plan(gs, 0).fallback != nullptr, "no workspace");
    std::vector<GemmProblem> big = {group(0, 40000, 256, 16384)};  // 40000 x 16384 x 2 > 1 GiB
    CHECK(plan(big).fallback != nullptr, "token workspace over 1 GiB");
  }
  {
    std::vector<GemmProblem> gs = {group(0, 0, 256, 512), group(1, 64, 0, 512)};
    const GroupedPlan& g = plan(gs);
    CHECK(g.fallback == nullptr && g.count == 0 && g.tiles == 0, "all empty: nothing to launch");
  }
}

// ---------------------------------------------------------------------------
// 3. Split-K, scale-load modes, token box
// ---------------------------------------------------------------------------
static void test_split_modes_box() {
  const GroupedDeviceNumbers dev = h100();
  {
    // 2 tiles, K 4096 (32 blocks): 8-CTA clusters (132 / 2 = 66, capped at 8), one wave
    const GroupedPlan& g = plan({group(0, 100, 128, 4096), group(1, 3, 100, 4096)});
    CHECK(g.splits == 8 && g.grid == 16, "2 tiles: splits %d grid %u", g.splits, g.grid);
    CHECK(g.x_box_rows == 104, "box fitted to the largest group (100 -> 104): %d", g.x_box_rows);
  }
  {
    // a short group bounds the split: K 96 is one block
    const GroupedPlan& g = plan({group(0, 100, 128, 4096), group(1, 3, 100, 96)});
    CHECK(g.splits == 1 && g.grid == 2, "K 96 group: splits %d grid %u", g.splits, g.grid);
  }
  {
    // 40 tiles: 132 / 40 = 3
    std::vector<GemmProblem> gs = {group(0, 128, 128 * 40, 2048)};
    const GroupedPlan& g = plan(gs);
    CHECK(g.splits == 3 && g.grid == 120, "40 tiles: splits %d grid %u", g.splits, g.grid);
    GroupedDeviceNumbers tight = dev;
    tight.clusters[3] = 39;  // 40 clusters of 3 do not fit at once
    plan_grouped(gs.data(), 0, 1, tight, SIZE_MAX, &g_plan);
    CHECK(g_plan.splits == 2 && g_plan.grid == 80, "cluster capacity: splits %d", g_plan.splits);
  }
  {
    const GroupedPlan& g = plan({group(0, 64, 256, 1024, NVFP4_SF_BLOCKED), group(1, 64, 256, 512, NVFP4_SF_BLOCKED)});
    CHECK(g.sf_mode == kScaleBulk && g.sf_blocked == 1, "blocked, K %% 128 == 0: bulk (%d)", g.sf_mode);
  }
  // Scales no TMA box reads in any group: with the token workspace only, the groups' own
  // mode; given the room (the size query), every group's staged after the token workspace in
  // entry order (largest K first) and read with kScaleTma.
  auto plan_ws = [&](const std::vector<GemmProblem>& gs, size_t ws) -> const GroupedPlan& {
    plan_grouped(gs.data(), 0, static_cast<int32_t>(gs.size()), dev, ws, &g_plan);
    return g_plan;
  };
  {
    std::vector<GemmProblem> gs = {group(0, 64, 256, 1024, NVFP4_SF_BLOCKED), group(1, 64, 256, 96, NVFP4_SF_BLOCKED)};
    const size_t token = token_workspace_bytes(offset_ws_rows(128, 64), 1024, 1);
    CHECK(plan_ws(gs, token).sf_mode == kScaleCpAsync && !g_plan.stage_w && g_plan.workspace_bytes == token,
          "blocked, a K tail, token workspace only: cp.async (%d)", g_plan.sf_mode);
    const GroupedPlan& g = plan_ws(gs, SIZE_MAX);
    const size_t w0 = staged_sf_bytes(256, 1024, 1), w1 = staged_sf_bytes(256, 96, 1);
    CHECK(g.stage_w && g.sf_mode == kScaleTma && g.sf_mode_without_tma == kScaleCpAsync &&
              g.stage_offset[0] == token && g.stage_offset[1] == token + w0 && g.workspace_bytes == token + w0 + w1,
          "blocked, a K tail: staged (%d, %zu)", g.sf_mode, g.workspace_bytes);
    CHECK(!plan_ws(gs, token + w0 + w1 - 1).stage_w && plan_ws(gs, token + w0 + w1).stage_w, "exact workspace");
  }
  {
    std::vector<GemmProblem> gs = {group(0, 64, 256, 1024), group(1, 64, 256, 96)};  // K 96: rows of 6 scale bytes
    const size_t token = token_workspace_bytes(offset_ws_rows(128, 64), 1024, 1);
    CHECK(plan_ws(gs, token).sf_mode == kScaleSync, "linear, 6-byte scale rows: sync (%d)", g_plan.sf_mode);
    CHECK(plan_ws(gs, SIZE_MAX).stage_w && g_plan.sf_mode == kScaleTma, "linear, 6-byte rows: staged");
    gs[1] = group(1, 64, 256, 512);
    gs[1].sfb.row_stride = 36;  // 4-byte aligned rows
    CHECK(plan_ws(gs, token).sf_mode == kScaleCpAsync && g_plan.sf_mode_without_tma == kScaleCpAsync,
          "linear, 4-aligned");
    CHECK(plan_ws(gs, SIZE_MAX).stage_w, "linear, 4-aligned: staged");
    gs[1].sfb.row_stride = 32;
    CHECK(!plan_ws(gs, SIZE_MAX).stage_w && g_plan.sf_mode == kScaleTma, "aligned: not staged");
  }
  {
    const GroupedPlan& g = plan({group(0, 1, 256, 512), group(1, 2, 256, 512)});
    CHECK(g.x_box_rows == 8, "tiny groups: box %d", g.x_box_rows);
  }
  CHECK(grouped_pass_pieces(1) == 1 && grouped_pass_pieces(32) == 1 && grouped_pass_pieces(33) == 2 &&
            grouped_pass_pieces(56) == 2,
        "pass pieces");
}

// ---------------------------------------------------------------------------
// 4. Invariants over random ragged problems
// ---------------------------------------------------------------------------
// The kernel's lookups (kernel/grouped_gemm.cuh: grouped_find).
static int32_t find(const GroupedPlan& g, int64_t v, bool by_tile) {
  int32_t lo = 0, hi = g.count;
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) >> 1;
    const int64_t key = by_tile ? g.entry[mid].tile_begin : g.entry[mid].x_row;
    if (key <= v) lo = mid; else hi = mid;
  }
  return lo;
}

static void test_random() {
  std::mt19937_64 rng(21);
  for (int it = 0; it < 400; ++it) {
    const int G = 1 + static_cast<int>(rng() % kGroupedMaxGroups);
    std::vector<GemmProblem> gs;
    for (int i = 0; i < G; ++i) {
      const int64_t M = rng() % 5 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 600);
      const int64_t N = 1 + static_cast<int64_t>(rng() % 900);
      const int64_t K = 32 * (1 + static_cast<int64_t>(rng() % 128));
      gs.push_back(group(i, M, N, K, (it & 1) ? NVFP4_SF_BLOCKED : NVFP4_SF_LINEAR));
    }
    GroupedDeviceNumbers dev = h100();
    dev.sm_count = 1 + static_cast<int>(rng() % 160);
    const GroupedPlan& g = plan(gs, SIZE_MAX, dev);
    CHECK(g.fallback == nullptr, "it %d: %s", it, g.fallback ? g.fallback : "");
    int expect_count = 0;
    int64_t expect_tiles = 0, rows = 0, kpad = 0;
    for (const GemmProblem& p : gs)
      if (p.M > 0) {
        ++expect_count;
        expect_tiles += tiles_of(p.M, p.N);
        rows += p.M;
        kpad = std::max<int64_t>(kpad, (p.K + 127) / 128 * 128);
      }
    CHECK(g.count == expect_count && g.tiles == expect_tiles && g.rows == rows && g.kpad == kpad,
          "it %d: count %d tiles %lld rows %lld", it, g.count, static_cast<long long>(g.tiles),
          static_cast<long long>(g.rows));
    if (g.count == 0) continue;
    // every tile found in the group that numbered it, each (group, local tile) once
    std::vector<int64_t> seen(g.count, 0);
    for (int64_t t = 0; t < g.tiles; ++t) {
      const int32_t i = find(g, t, true);
      const GroupedEntry& e = g.entry[i];
      const int64_t u = t - e.tile_begin;
      if (!(u >= 0 && u < tiles_of(e.M, e.N))) {
        CHECK(false, "it %d: tile %lld outside group %d", it, static_cast<long long>(t), i);
        break;
      }
      ++seen[i];
    }
    bool all = true, sorted = true, box = true;
    for (int32_t i = 0; i < g.count; ++i) {
      const GroupedEntry& e = g.entry[i];
      all = all && seen[i] == tiles_of(e.M, e.N);
      sorted = sorted && (i == 0 || g.entry[i - 1].num_kb >= e.num_kb);
      box = box && (e.M > g.x_box_rows ? g.x_box_rows == 128 : true);
      // the pass: the group's first and last rows find it
      all = all && find(g, e.x_row, false) == i && find(g, e.x_row + e.M - 1, false) == i;
      all = all && static_cast<int64_t>(e.num_kb) * 128 <= g.kpad && e.num_kb >= g.min_kb;
      all = all && gs[e.problem].M == e.M && gs[e.problem].sfb.data == e.sfb && gs[e.problem].c.data == e.c;
      // the pass's entry of the same group
      const GroupedPassEntry& t = g.pass[i];
      all = all && t.a == gs[e.problem].a.data && t.sfa == gs[e.problem].sfa.data && t.x_row == e.x_row &&
            t.M == e.M && t.K == e.K && t.num_kb == e.num_kb;
    }
    CHECK(all, "it %d: tiles, rows or K blocks of a group", it);
    CHECK(sorted, "it %d: not largest K first", it);
    CHECK(box && g.x_box_rows % 8 == 0 && g.x_box_rows <= 128, "it %d: box %d", it, g.x_box_rows);
    CHECK(g.splits >= 1 && g.splits <= kMaxSplits && g.splits <= g.min_kb, "it %d: splits %d", it, g.splits);
    CHECK(g.grid >= 1 && g.grid <= static_cast<uint32_t>(dev.sm_count) &&
              (g.splits == 1 ? g.grid == static_cast<uint32_t>(std::min<int64_t>(g.tiles, dev.sm_count))
                             : g.grid == g.tiles * g.splits),
          "it %d: grid %u (SMs %d, tiles %lld, splits %d)", it, g.grid, dev.sm_count, static_cast<long long>(g.tiles),
          g.splits);
    // every group's boxes inside the workspace, wherever its rows start (offset_ws_rows)
    CHECK(g.workspace_bytes >= static_cast<size_t>((g.rows + g.x_box_rows - 1) * g.kpad * 2), "it %d: workspace", it);
    // staged scales: contiguous after the token workspace, ending at its end
    if (g.stage_w) {
      size_t end = g.stage_offset[0];
      for (int32_t i = 0; i < g.count; ++i) {
        CHECK(g.stage_offset[i] == end && end % 256 == 0, "it %d: stage offset %d", it, i);
        end += staged_sf_bytes(g.entry[i].N, g.entry[i].K, 1);
      }
      CHECK(end == g.workspace_bytes && g.sf_mode == kScaleTma, "it %d: staged end %zu", it, end);
    }
  }
}

// ---- 5. packed MoE: the device tile walk ---------------------------------------------------

static PackedGroupedGemmProblem packed(int32_t G, int64_t total_M, int64_t N, int64_t K) {
  PackedGroupedGemmProblem p;
  p.G = G;
  p.total_M = total_M;
  p.N = N;
  p.K = K;
  p.a = Fp4Operand{addr(uintptr_t{1} << 20), K / 2, 0};
  p.b = Fp4Operand{addr(uintptr_t{1} << 32), K / 2, N * K / 2};
  p.sfa = ScaleOperand{addr(uintptr_t{3} << 32), NVFP4_SF_LINEAR, K / 16, 0};
  p.sfb = ScaleOperand{addr(uintptr_t{5} << 32), NVFP4_SF_LINEAR, K / 16, N * (K / 16)};
  p.c.data = reinterpret_cast<void*>(uintptr_t{7} << 32);
  p.c.dtype = DType::kFloat16;
  p.c.row_stride = N;
  p.c.col_stride = 1;
  return p;
}

// PackedTiles::Cursor and find(), one warp emulated lane by lane (the same steps: clamped
// spans of a window of 32 experts, inclusive scan, window total, ballot of the first lane whose
// tiles pass j).
struct WalkCursor {
  int32_t base = 0;
  int64_t before = 0;
  int32_t g = 0;
  int64_t row0 = 0, rows = 0, x0 = 0, w0 = 0;
  int64_t windows = 0;  // windows loaded (test only)
};
static bool walk_find(const std::vector<int32_t>& off, int32_t G, int64_t total_M, int32_t tiles_w, int64_t t,
                      WalkCursor& c) {
  const int64_t j = t / tiles_w;
  for (; c.base < G; c.base += 32) {
    ++c.windows;
    int64_t b[32], e[32], n[32], inc[32];
    for (int lane = 0; lane < 32; ++lane) {
      const int32_t g = c.base + lane;
      b[lane] = e[lane] = 0;
      if (g < G) gemv_detail::moe_clamp_span(off[g], off[g + 1], total_M, b[lane], e[lane]);
      n[lane] = packed_token_tiles(b[lane], e[lane]);
      inc[lane] = n[lane] + (lane > 0 ? inc[lane - 1] : 0);
    }
    const int64_t window = inc[31];
    if (j < c.before + window) {
      int src = 0;
      while (!(c.before + inc[src] > j)) ++src;
      const int64_t first = c.before + inc[src] - n[src];
      c.g = c.base + src;
      c.row0 = b[src];
      c.rows = e[src] - b[src];
      c.x0 = (j - first) * 128;
      c.w0 = (t - j * tiles_w) * 128;
      return true;
    }
    c.before += window;
  }
  return false;
}

static void test_packed_walk() {
  std::mt19937_64 rng(2121);
  for (int it = 0; it < 300; ++it) {
    const bool malformed = it % 3 == 2;
    const int32_t G = 1 + static_cast<int32_t>(rng() % (it % 5 == 0 ? 300 : 70));
    const int64_t N = 32 * (1 + static_cast<int64_t>(rng() % 40));
    const int64_t K = 256;
    // rows: mostly top-k-like ragged, some experts empty, some over 128 rows
    std::vector<int32_t> off(G + 1, 0);
    for (int32_t g = 0; g < G; ++g) {
      const int r = static_cast<int>(rng() % 10);
      const int32_t m = r < 3 ? 0 : r < 8 ? static_cast<int32_t>(rng() % 130) : static_cast<int32_t>(rng() % 700);
      off[g + 1] = off[g] + m;
    }
    int64_t total_M = off[G];
    if (total_M == 0) total_M = 1 + static_cast<int64_t>(rng() % 300);  // (the API's total_M is the A matrix's)
    if (malformed)
      for (int32_t g = 0; g <= G; ++g)
        if (rng() % 3 == 0) off[g] = static_cast<int32_t>(static_cast<int64_t>(rng() % (total_M + 400)) - 200);
    const PackedPlan plan = plan_packed(packed(G, total_M, N, K));
    if (!(plan.unsupported == nullptr && !plan.empty)) {
      CHECK(false, "it %d: plan %s", it, plan.unsupported ? plan.unsupported : "empty");
      continue;
    }
    const int sms = it % 2 ? 132 : 1 + static_cast<int>(rng() % 20);
    const int64_t grid = packed_grid(plan, sms);
    CHECK(grid >= 1 && grid <= sms && grid <= plan.tiles && plan.tiles == plan.slots * plan.tiles_w &&
              plan.tiles_w == (N + 127) / 128,
          "it %d: grid %lld tiles %lld", it, static_cast<long long>(grid), static_cast<long long>(plan.tiles));
    // the device's tile count over the clamped spans
    int64_t device_tiles = 0;
    for (int32_t g = 0; g < G; ++g) {
      int64_t b, e;
      gemv_detail::moe_clamp_span(off[g], off[g + 1], total_M, b, e);
      device_tiles += packed_token_tiles(b, e) * plan.tiles_w;
    }
    if (!malformed)
      CHECK(device_tiles <= plan.tiles, "it %d: bound %lld short of %lld tiles", it,
            static_cast<long long>(plan.tiles), static_cast<long long>(device_tiles));
    std::vector<int64_t> seen;  // (g, x0 / 128, w0 / 128) counts, valid tables
    std::vector<int64_t> first_tile(G + 1, 0);
    for (int32_t g = 0; g < G; ++g) first_tile[g + 1] = first_tile[g] + packed_token_tiles(off[g], off[g + 1]);
    if (!malformed) seen.assign(static_cast<size_t>(first_tile[G] * plan.tiles_w), 0);
    bool inside = true, match = true, windows_ok = true;
    int64_t computed = 0;
    for (int64_t cta = 0; cta < grid; ++cta) {
      WalkCursor producer, consumer;  // two warps of the CTA, each with its cursor
      int64_t steps = 0;
      for (int64_t t = cta; t < plan.tiles; t += grid) {
        const bool fp = walk_find(off, G, total_M, static_cast<int32_t>(plan.tiles_w), t, producer);
        const bool fc = walk_find(off, G, total_M, static_cast<int32_t>(plan.tiles_w), t, consumer);
        match = match && fp == fc && (!fp || (producer.g == consumer.g && producer.x0 == consumer.x0 &&
                                               producer.w0 == consumer.w0 && producer.rows == consumer.rows));
        if (!fp) break;
        ++steps;
        ++computed;
        const WalkCursor& c = producer;
        // rows read: row0 + x0 .. (TMA zero-fills past total_M); rows written: < rows of [row0, ..)
        inside = inside && c.g >= 0 && c.g < G && c.row0 >= 0 && c.row0 + c.rows <= total_M && c.x0 >= 0 &&
                 c.x0 < c.rows && c.w0 >= 0 && c.w0 < N;
        if (!malformed && inside) {
          const int64_t u = (first_tile[c.g] + c.x0 / 128) * plan.tiles_w + c.w0 / 128;
          match = match && c.row0 == off[c.g] && c.rows == off[c.g + 1] - off[c.g] && c.x0 % 128 == 0 &&
                  c.w0 % 128 == 0 && u < static_cast<int64_t>(seen.size());
          if (match) ++seen[u];
        }
      }
      windows_ok = windows_ok && producer.windows <= (G + 31) / 32 + steps + 1;
    }
    CHECK(inside, "it %d: a tile outside the operands", it);
    CHECK(match, "it %d: producer and consumer cursors disagree, or a tile not the expert's", it);
    CHECK(windows_ok, "it %d: a cursor read the table more than once", it);
    if (!malformed) {
      bool once = computed == device_tiles;
      for (int64_t v : seen) once = once && v == 1;
      CHECK(once, "it %d: %lld tiles computed, %lld expected, not each once", it, static_cast<long long>(computed),
            static_cast<long long>(device_tiles));
    } else {
      CHECK(computed <= plan.tiles && computed <= device_tiles, "it %d: malformed: %lld tiles", it,
            static_cast<long long>(computed));
    }
  }
}

int main() {
  test_benchmark();
  test_table_and_fallbacks();
  test_split_modes_box();
  test_random();
  test_packed_walk();
  return check_summary();
}
