// CPU unit test of the sm90a dual GEMM plan (cpp/src/sm90/dual_plan.hpp): which problems the
// fused dual kernel takes (the rest go to the composed path), its split-K, grid, scale-load
// mode, output store mode and box, and token workspace. Plain C++ (no CUDA): compiled and run
// by tests/test_sm90_plans.py with the host C++ compiler (nvcc as a fallback).
//
// Checks:
//  1. what leaves the fused kernel (empty, K, one or two tokens, alignment, layouts, grid,
//     workspace cap), and that A's scale layout and alignment do not matter;
//  2. the split and grid of the four benchmark shapes on an H100's numbers (132 SMs, the
//     cluster capacities of 16- and 18-SM GPCs);
//  3. the scale-load mode per layout and alignment, the output store mode and box rows;
//  4. invariants over random shapes and device numbers: splits within limits, K slices of at
//     least one promotion chain, no split worse than one CTA per tile by the model, every
//     (tile, K block) computed once (the tile scheduler's formula), the epilogue's row
//     shares covering the 128 rows in whole store boxes, the workspace = the token workspace;
//  5. the decode route (dual_decode_route, gemv/decode_dual_plan.hpp): which problems it
//     takes (M = 2..16, 2 N L >= 4096, the decode kernel's operand rules, one scale layout for B1
//     and B2), what keeps its old path, the launch shape of the target shapes on an H100, launch
//     invariants, the kernel parameters; and the dual task mapping of decode_kernel.cuh emulated
//     lane by lane for a whole 128-row band (weight rows copied to the MMA rows the consumer
//     reads, the scale bytes each consumer lane reads = the scales of its rows and chunk in both
//     layouts, every output column of the band written once from B1's and B2's sums of it).
// Prints "N passed, N failed".
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <random>
#include <vector>

#include "common/formats.h"
#include "sm90/dual_plan.hpp"
#include "sm90/gemv/decode_plan.hpp"

using namespace nvfp4;
using namespace nvfp4::sm90;

#include "../host_check.hpp"
#include "decode_launch_equal.hpp"
#include "h100_clusters.hpp"

static const uint8_t* addr(uintptr_t a) { return reinterpret_cast<const uint8_t*>(a); }

// A dense dual problem: packed rows of K/2 bytes, linear (or blocked) scales, output of `dt`
// row-major, every base 256-byte aligned.
static DualGemmProblem dense(int64_t M, int64_t N, int64_t K, int64_t L = 1,
                             nvfp4_sf_layout_t layout = NVFP4_SF_LINEAR, DType dt = DType::kFloat16) {
  DualGemmProblem p;
  p.L = L;
  p.M = M;
  p.N = N;
  p.K = K;
  p.a = Fp4Operand{addr(1u << 20), K / 2, M * K / 2};
  p.b1 = Fp4Operand{addr(1u << 28), K / 2, N * K / 2};
  p.b2 = Fp4Operand{addr(2u << 28), K / 2, N * K / 2};
  const int64_t sfa_batch = layout == NVFP4_SF_BLOCKED ? blocked_sf_bytes(M, K) : M * (K / 16);
  const int64_t sfb_batch = layout == NVFP4_SF_BLOCKED ? blocked_sf_bytes(N, K) : N * (K / 16);
  p.sfa = ScaleOperand{addr(3u << 28), layout, K / 16, sfa_batch};
  p.sfb1 = ScaleOperand{addr(5u << 28), layout, K / 16, sfb_batch};
  p.sfb2 = ScaleOperand{addr(6u << 28), layout, K / 16, sfb_batch};
  p.c.data = reinterpret_cast<void*>(uintptr_t{7} << 28);
  p.c.dtype = dt;
  p.c.row_stride = N;
  p.c.col_stride = 1;
  p.c.batch_stride = M * N;
  return p;
}

// H100 SXM: 132 SMs, one CTA per SM (h100_clusters.hpp).
static DualDeviceNumbers h100() {
  DualDeviceNumbers d;
  d.sm_count = 132;
  for (int s = 0; s <= kMaxSplits; ++s) d.clusters[s] = h100_full_sm_clusters(s);
  return d;
}

static const char* path_name(DualPath p) {
  switch (p) {
    case DualPath::kEmpty: return "empty";
    case DualPath::kFused: return "fused";
    case DualPath::kComposed: return "composed";
    case DualPath::kDecode: return "decode";
  }
  return "?";
}

static bool same_reason(const char* a, const char* b) {
  return (a == nullptr && b == nullptr) || (a != nullptr && b != nullptr && strcmp(a, b) == 0);
}

// ---------------------------------------------------------------------------
// 1. What the fused kernel takes
// ---------------------------------------------------------------------------
static void expect_composed(const DualGemmProblem& p, const char* why, const char* what) {
  const DualPlan g = plan_dual(p, h100());
  CHECK(g.path == DualPath::kComposed && same_reason(g.unsupported, why), "%s: %s (%s)", what, path_name(g.path),
        g.unsupported ? g.unsupported : "no reason");
}

static void test_support() {
  const DualDeviceNumbers dev = h100();
  {
    const DualPlan g = plan_dual(dense(256, 512, 1024), dev);
    CHECK(g.path == DualPath::kFused && g.unsupported == nullptr, "dense: %s", path_name(g.path));
  }
  for (int which = 0; which < 3; ++which) {
    DualGemmProblem e = dense(256, 512, 1024);
    e.K = 33;
    (which == 0 ? e.M : which == 1 ? e.N : e.L) = 0;
    const DualPlan g = plan_dual(e, dev);
    CHECK(g.path == DualPath::kEmpty && g.workspace_bytes == 0, "empty %d: %s", which, path_name(g.path));
  }
  for (int64_t K : {int64_t{0}, int64_t{16}, int64_t{48}}) {
    DualGemmProblem q = dense(256, 512, 1024);
    q.K = K;
    expect_composed(q, "sm90a dual gemm: K must be a multiple of 32", "K");
  }
  for (int64_t M : {int64_t{1}, int64_t{2}})
    expect_composed(dense(M, 512, 1024), "sm90a dual gemm: one or two tokens run as GEMVs", "M <= 2");
  {
    const DualPlan g = plan_dual(dense(3, 512, 1024), dev);
    CHECK(g.path == DualPath::kFused && g.x_box_rows == 8 && g.tile_x == 32, "M = 3: %s box %d tile %d",
          path_name(g.path), g.x_box_rows, g.tile_x);
  }
  const char* kAlign = "sm90a dual gemm: fp4 operands need 16-byte aligned bases and strides";
  {
    DualGemmProblem q = dense(256, 512, 1024);
    q.b2.data = addr((2u << 28) + 8);
    expect_composed(q, kAlign, "b2 base");
    q = dense(256, 512, 1024);
    q.b1.row_stride = 520;
    expect_composed(q, kAlign, "b1 row stride");
    q = dense(256, 512, 1024);
    q.a.row_stride = 520;
    expect_composed(q, kAlign, "a row stride");
    q = dense(256, 512, 1024, 2);
    q.b2.batch_stride += 8;
    expect_composed(q, kAlign, "b2 batch stride");
    q = dense(256, 512, 1024, 1);
    q.b2.batch_stride += 8;  // unused with L == 1
    CHECK(plan_dual(q, dev).path == DualPath::kFused, "batch stride of one batch checked");
  }
  {
    DualGemmProblem q = dense(256, 512, 1024);
    q.sfb2.layout = NVFP4_SF_BLOCKED;
    expect_composed(q, "sm90a dual gemm: mixed scale layouts", "mixed");
    // A's scales reach only the token pass: any layout and alignment
    q = dense(256, 512, 1024);
    q.sfa.layout = NVFP4_SF_BLOCKED;
    q.sfa.data = addr((3u << 28) + 1);
    const DualPlan g = plan_dual(q, dev);
    CHECK(g.path == DualPath::kFused && g.sf_mode == kScaleTma, "A's scales: %s mode %d", path_name(g.path),
          g.sf_mode);
  }
  expect_composed(dense(65535LL * 128 + 1, 512, 1024), "sm90a dual gemm: grid too large", "tiles_x");
  expect_composed(dense(256, 512, 1024, 65536), "sm90a dual gemm: grid too large", "L");
  // token workspace: 2 bytes per (padded: token_ws_rows) token element, 1 GiB at most
  expect_composed(dense(32768, 256, 16384), "sm90a dual gemm: token workspace over 1 GiB", "workspace");
  CHECK(plan_dual(dense(32640, 256, 16384), dev).path == DualPath::kFused, "1020 MiB of tokens refused");
}

// ---------------------------------------------------------------------------
// 2. The benchmark shapes (H100)
// ---------------------------------------------------------------------------
static void test_known_shapes() {
  const DualDeviceNumbers dev = h100();
  struct Want {
    int64_t M, N, K;
    int splits;
  } wants[] = {
      {256, 4096, 7168, 1},  // 128 tiles <= 132 SMs
      {512, 4096, 7168, 1},  // 256 tiles: two rounds either way; splitting only adds reductions
      {256, 3072, 4096, 1},  // 96 tiles: 1 round of 32 + 8 blocks (40) < 3 rounds of 32 clusters x 8 (48)
      {512, 3072, 7168, 2},  // 192 tiles: 3 rounds x (28 + 8) blocks (108) < 2 x (56 + 8) (128)
  };
  for (const Want& w : wants) {
    for (nvfp4_sf_layout_t layout : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED}) {
      const DualPlan g = plan_dual(dense(w.M, w.N, w.K, 1, layout), dev);
      CHECK(g.path == DualPath::kFused && g.splits == w.splits, "%lldx%lldx%lld: %s splits %d (want %d)",
            static_cast<long long>(w.M), static_cast<long long>(w.N), static_cast<long long>(w.K), path_name(g.path),
            g.splits, w.splits);
      CHECK(g.tile_x == 128 && g.tiles_n == w.N / 64 && g.tiles_x == w.M / 128 && g.num_kb == w.K / 128, "tiles");
      CHECK(g.grid[0] == static_cast<uint32_t>(g.tiles_n * g.splits) && g.grid[1] == static_cast<uint32_t>(g.tiles_x) &&
                g.grid[2] == 1,
            "grid %u %u %u", g.grid[0], g.grid[1], g.grid[2]);
      CHECK(g.workspace_bytes == token_workspace_bytes(w.M, w.K, 1) && g.x_box_rows == 128, "workspace %zu",
            g.workspace_bytes);
      CHECK(g.sf_mode == (layout == NVFP4_SF_BLOCKED ? kScaleBulk : kScaleTma), "mode %d", g.sf_mode);
      CHECK(g.store == kDualStoreTma && g.c_box_rows == 128 / g.splits, "store %d box %d", g.store, g.c_box_rows);
    }
  }
}

// ---------------------------------------------------------------------------
// 3. Scale-load mode, store mode, store box
// ---------------------------------------------------------------------------
static void test_modes() {
  const DualDeviceNumbers dev = h100();
  struct ModeCase {
    int64_t K;
    nvfp4_sf_layout_t layout;
    int32_t mode;
  } modes[] = {
      {1024, NVFP4_SF_BLOCKED, kScaleBulk},     // K % 128 == 0
      {1056, NVFP4_SF_BLOCKED, kScaleCpAsync},  // K tail: per-row loads
      {4096, NVFP4_SF_LINEAR, kScaleTma},       // 256-byte scale rows
      {4160, NVFP4_SF_LINEAR, kScaleCpAsync},   // 260-byte rows: 4-byte aligned only
      {96, NVFP4_SF_LINEAR, kScaleSync},        // 6-byte rows
  };
  // the operands' own mode (dual_scale_mode); the plan stages what is neither bulk nor TMA
  // (both weights' scales after the token workspace) and reads the copies with kScaleTma
  for (const ModeCase& c : modes) {
    const DualGemmProblem q = dense(300, 200, c.K, 2, c.layout);
    int32_t without = -1;
    const int32_t mode = dual_scale_mode(q.sfb1, q.sfb2, q.K, q.L, &without);
    const DualPlan g = plan_dual(q, dev);
    const bool staged = c.mode != kScaleBulk && c.mode != kScaleTma;
    const size_t token = token_workspace_bytes(300, c.K, 2);
    CHECK(g.path == DualPath::kFused && mode == c.mode && g.stage_w == staged &&
              g.sf_mode == (staged ? kScaleTma : c.mode) &&
              g.workspace_bytes == token + (staged ? 2 * staged_sf_bytes(200, c.K, 2) : 0) &&
              (!staged || g.stage_offset == token),
          "K=%lld layout %d: mode %d / planned %d staged %d (want %d)", static_cast<long long>(c.K),
          static_cast<int>(c.layout), mode, g.sf_mode, g.stage_w, c.mode);
  }
  {
    DualGemmProblem q = dense(300, 200, 4096);
    q.sfb2.data = addr((6u << 28) + 4);  // one operand's misalignment decides for both
    int32_t without = -1;
    CHECK(dual_scale_mode(q.sfb1, q.sfb2, q.K, q.L, &without) == kScaleCpAsync && without == kScaleCpAsync,
          "b2 misaligned");
    const DualPlan g = plan_dual(q, dev);
    CHECK(g.sf_mode == kScaleTma && g.stage_w && g.sf_mode_without_tma == kScaleCpAsync, "b2 misaligned: staged");
    q = dense(300, 200, 4096, 1, NVFP4_SF_BLOCKED);
    q.sfb1.data = addr((5u << 28) + 8);
    CHECK(dual_scale_mode(q.sfb1, q.sfb2, q.K, q.L, &without) == kScaleCpAsync && plan_dual(q, dev).stage_w,
          "blocked b1 misaligned");
  }
  // output: TMA where 16-byte aligned rows, batches and base, unit column stride
  struct StoreCase {
    int64_t M, N, L;
    DType dt;
    int32_t store;
  } stores[] = {
      {300, 200, 1, DType::kFloat16, kDualStoreTma},   // 400-byte rows
      {300, 8, 3, DType::kBFloat16, kDualStoreTma},    // 16-byte rows
      {300, 7, 1, DType::kFloat16, kDualStorePlain},   // 14-byte rows
      {129, 129, 1, DType::kFloat32, kDualStorePlain},  // 516-byte rows
      {129, 4, 3, DType::kFloat32, kDualStoreTma},     // 16-byte rows, 2064-byte batches
      {7, 200, 3, DType::kFloat16, kDualStoreTma},     // batches of 7 x 400 bytes
  };
  for (const StoreCase& c : stores) {
    const DualPlan g = plan_dual(dense(c.M, c.N, 96, c.L, NVFP4_SF_LINEAR, c.dt), dev);
    CHECK(g.store == c.store, "%lldx%lld L=%lld dtype %d: store %d (want %d)", static_cast<long long>(c.M),
          static_cast<long long>(c.N), static_cast<long long>(c.L), static_cast<int>(c.dt), g.store, c.store);
  }
  {
    DualGemmProblem q = dense(300, 200, 96);
    q.c.col_stride = 2;
    CHECK(plan_dual(q, dev).store == kDualStorePlain, "column stride");
    q = dense(300, 200, 96);
    q.c.data = reinterpret_cast<void*>((uintptr_t{7} << 28) + 2);
    CHECK(plan_dual(q, dev).store == kDualStorePlain, "base + 2 bytes");
    q = dense(300, 208, 96, 2);
    q.c.batch_stride = 300 * 208 + 4;
    CHECK(plan_dual(q, dev).store == kDualStorePlain, "batch stride of 8 bytes modulo 16");
    q = dense(300, 208, 96, 1);
    q.c.batch_stride = 3;  // unused with L == 1
    CHECK(plan_dual(q, dev).store == kDualStoreTma, "batch stride of one batch checked");
  }
  // one box per share where the split divides the tile's 8-row groups, else 8-row boxes
  struct Boxes {
    int32_t tile_x;
    int rows[kMaxSplits + 1];
  } boxes[] = {{128, {0, 128, 64, 8, 32, 8, 8, 8, 16}},
               {96, {0, 96, 48, 32, 24, 8, 16, 8, 8}},
               {64, {0, 64, 32, 8, 16, 8, 8, 8, 8}},
               {32, {0, 32, 16, 8, 8, 8, 8, 8, 8}}};
  for (const Boxes& b : boxes)
    for (int s = 1; s <= kMaxSplits; ++s)
      CHECK(dual_store_box_rows(s, b.tile_x) == b.rows[s], "box rows of %d splits, tile %d: %d", s, b.tile_x,
            dual_store_box_rows(s, b.tile_x));
}

// ---------------------------------------------------------------------------
// 4. Invariants
// ---------------------------------------------------------------------------
static int64_t model_cost(const DualDeviceNumbers& dev, int64_t tiles, int32_t num_kb, int s) {
  const int64_t slots = dual_cluster_slots(dev, s);
  return (tiles + slots - 1) / slots * ((num_kb + s - 1) / s + kDualFixedBlocks);
}

static void test_invariants() {
  std::mt19937_64 rng(12345);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  int tiles_seen[4] = {};
  for (int iter = 0; iter < 3000; ++iter) {
    DualDeviceNumbers dev;
    dev.sm_count = static_cast<int>(pick(1, 160));
    for (int s = 2; s <= kMaxSplits; ++s) dev.clusters[s] = rng() % 4 == 0 ? 1 << 20 : static_cast<int>(pick(0, 80));
    const int64_t M = pick(0, 2) == 0 ? pick(3, 140) : pick(3, 3000), N = pick(1, 9000), K = 32 * pick(1, 300),
                  L = pick(1, 4);
    const DualPlan g = plan_dual(dense(M, N, K, L), dev, false);  // the fused plan (5. checks the route)
    CHECK(g.path == DualPath::kFused, "%lldx%lldx%lld: %s", static_cast<long long>(M), static_cast<long long>(N),
          static_cast<long long>(K), path_name(g.path));
    const int s = g.splits;
    CHECK(s >= 1 && s <= kMaxSplits && (s == 1 || g.num_kb / s >= kDualMinBlocksPerSplit), "splits %d kb %d", s,
          g.num_kb);
    CHECK(s == 1 || dual_cluster_slots(dev, s) > 0, "splits %d with no resident cluster", s);
    CHECK(model_cost(dev, g.tiles, g.num_kb, s) <= model_cost(dev, g.tiles, g.num_kb, 1), "split %d costs more", s);
    // the token tile: the smallest of 32, 64, 96 holding M, else 128
    const int tx = M <= 32 ? 32 : M <= 64 ? 64 : M <= 96 ? 96 : 128;
    ++tiles_seen[tx / 32 - 1];
    CHECK(g.tile_x == tx && g.x_box_rows == (M < tx ? (M + 7) / 8 * 8 : tx), "%lld tokens: tile %d box %d",
          static_cast<long long>(M), g.tile_x, g.x_box_rows);
    CHECK(g.tiles == g.tiles_n * g.tiles_x * L && g.tiles_n == (N + 63) / 64 && g.tiles_x == (M + tx - 1) / tx,
          "tiles");
    CHECK(g.grid[0] == static_cast<uint32_t>(g.tiles_n * s) && g.grid[1] == static_cast<uint32_t>(g.tiles_x) &&
              g.grid[2] == static_cast<uint32_t>(L),
          "grid");
    CHECK(g.stage_w == (K % 256 != 0) && g.workspace_bytes == token_workspace_bytes(M, K, L) +
                                                               (g.stage_w ? 2 * staged_sf_bytes(N, K, L) : 0),
          "workspace (staged %d)", g.stage_w);
    // tile_scheduler.cuh: cluster rank q computes K blocks [num_kb q / s, num_kb (q + 1) / s)
    int32_t next = 0;
    bool whole = true;
    for (int q = 0; q < s; ++q) {
      const int32_t b = static_cast<int32_t>(static_cast<int64_t>(g.num_kb) * q / s);
      const int32_t e = static_cast<int32_t>(static_cast<int64_t>(g.num_kb) * (q + 1) / s);
      whole = whole && b == next && e > b;
      next = e;
    }
    CHECK(whole && next == g.num_kb, "K slices of %d splits over %d blocks", s, g.num_kb);
    // epilogue_dual.cuh: rank q stores rows [8 (G q / s), 8 (G (q + 1) / s)) in boxes of c_box_rows,
    // G = tile / 8 groups (a share is empty only where the split exceeds the groups)
    const int groups = tx / 8;
    int rows_next = 0;
    bool boxed = true;
    for (int q = 0; q < s; ++q) {
      const int r0 = 8 * (q * groups / s), r1 = 8 * ((q + 1) * groups / s);
      boxed = boxed && r0 == rows_next && (r1 > r0 || s > groups) && (r1 - r0) % g.c_box_rows == 0;
      rows_next = r1;
    }
    CHECK(boxed && rows_next == tx, "row shares of %d splits, tile %d, box %d", s, tx, g.c_box_rows);
  }
  CHECK(tiles_seen[0] > 50 && tiles_seen[1] > 50 && tiles_seen[2] > 50 && tiles_seen[3] > 500,
        "coverage: tiles 32 / 64 / 96 / 128: %d %d %d %d", tiles_seen[0], tiles_seen[1], tiles_seen[2], tiles_seen[3]);
}

// ---------------------------------------------------------------------------
// 5. The decode route
// ---------------------------------------------------------------------------
using namespace nvfp4::sm90::gemv_detail;

// H100 SXM numbers (as gemv_plan_test.cpp) and the dual decode instances as built by CUDA 13 for
// sm_90a (ptxas -v, session 25): 77-79 / 108 / 119 / 124-126 registers for one to four token groups
// (three and four under __launch_bounds__ min 2 blocks); no static shared memory.
static MmaKernelInfo dual_decode_info(int nt8) {
  MmaKernelInfo i;
  i.regs = nt8 == 1 ? 79 : nt8 == 2 ? 108 : nt8 == 3 ? 119 : 126;
  i.smem_per_sm = 233472;
  i.regs_per_sm = 65536;
  i.static_smem = 0;
  i.max_smem_block = 232448;
  h100_cluster_table(i);
  return i;
}

static void test_decode_route() {
  const DualDeviceNumbers dev = h100();
  // the target shapes: 2..16 tokens decode (17..32 on 14336x4096: 28672 rows), 1 composed, the rest fused
  for (nvfp4_sf_layout_t layout : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED})
    for (int64_t NK : {0, 1})
      for (int64_t M : {1, 2, 3, 4, 7, 8, 9, 16, 17, 24, 25, 32, 33, 64, 256}) {
        const int64_t N = NK ? 14336 : 4096, K = NK ? 4096 : 7168;
        const DualGemmProblem p = dense(M, N, K, 1, layout);
        const DualPath want = M == 1                  ? DualPath::kComposed
                              : M <= 16 || (M <= 32 && NK) ? DualPath::kDecode
                                                           : DualPath::kFused;
        const DualPlan g = plan_dual(p, dev);
        CHECK(g.path == want && dual_decode_route(p) == (want == DualPath::kDecode),
              "%lldx%lldx%lld layout %d: %s", (long long)M, (long long)N, (long long)K, (int)layout, path_name(g.path));
        CHECK(plan_dual(p, dev, false).path == (M <= 2 ? DualPath::kComposed : DualPath::kFused), "without the route");
        // 2..32 tokens (1..4 token groups), as the dense route
        CHECK((decode_dual_unsupported(p) == nullptr) == (M >= 2 && M <= kDecodeDualMaxTokens), "dual support M=%lld",
              (long long)M);
      }
  // the rows bound: 2 N L >= 4096 weight rows (17..32 tokens: 16384)
  struct Rows {
    int64_t N, L;
    bool decode;
  } rows[] = {{2048, 1, true}, {2047, 1, false}, {1024, 2, true}, {683, 3, true}, {682, 3, false},
              {200, 1, false}, {8, 256, true},  {8, 255, false}};
  for (const Rows& r : rows)
    for (int64_t M : {2, 5, 16}) {
      const DualPlan g = plan_dual(dense(M, r.N, 1024, r.L), dev);
      const DualPath other = M <= 2 ? DualPath::kComposed : DualPath::kFused;
      CHECK(g.path == (r.decode ? DualPath::kDecode : other), "M %lld N %lld L %lld: %s", (long long)M,
            (long long)r.N, (long long)r.L, path_name(g.path));
    }
  struct Rows32 {
    int64_t N, K;
    bool decode;
  } rows32[] = {{8192, 1024, true}, {8191, 1024, false}, {8192, 7168, true}, {4096, 7168, false}};
  for (const Rows32& r : rows32)
    for (int64_t M : {17, 32}) {
      const DualPlan g = plan_dual(dense(M, r.N, r.K), dev);
      CHECK(g.path == (r.decode ? DualPath::kDecode : DualPath::kFused), "M %lld N %lld K %lld: %s", (long long)M,
            (long long)r.N, (long long)r.K, path_name(g.path));
    }
  // operands: what the decode kernel refuses keeps its old path
  {
    DualGemmProblem q = dense(4, 4096, 4224);  // linear weight scales with K % 256 != 0
    CHECK(decode_dual_unsupported(q) != nullptr && plan_dual(q, dev).path == DualPath::kFused, "linear K 4224");
    q = dense(2, 4096, 4224);
    CHECK(plan_dual(q, dev).path == DualPath::kComposed, "linear K 4224, M 2");
    q = dense(4, 4096, 4224, 1, NVFP4_SF_BLOCKED);  // blocked: 16-byte lines whatever K
    CHECK(plan_dual(q, dev).path == DualPath::kDecode, "blocked K 4224");
    q = dense(4, 4096, 96, 1, NVFP4_SF_BLOCKED);
    CHECK(plan_dual(q, dev).path == DualPath::kDecode, "blocked K 96");
    q = dense(4, 4096, 7168);
    q.sfb2.layout = NVFP4_SF_BLOCKED;
    CHECK(decode_dual_unsupported(q) != nullptr && plan_dual(q, dev).path == DualPath::kComposed, "mixed layouts");
    q = dense(4, 4096, 7168);
    q.b2.row_stride = 3584 + 8;
    CHECK(decode_dual_unsupported(q) != nullptr && plan_dual(q, dev).path != DualPath::kDecode, "b2 rows 8 off");
    q = dense(4, 4096, 7168);
    q.b2.row_stride = 3584 + 16;  // own strides: taken
    q.sfb2.row_stride = 448 + 16;
    CHECK(plan_dual(q, dev).path == DualPath::kDecode, "b2 / sfb2 strides of their own");
    q = dense(4, 4096, 7168);
    q.sfb1.row_stride = 448 + 8;  // linear scale rows in 16-byte pieces
    CHECK(plan_dual(q, dev).path != DualPath::kDecode, "sfb1 rows 8 off");
    q = dense(4, 4096, 7168);
    q.a.row_stride = 3584 + 8;
    CHECK(plan_dual(q, dev).path != DualPath::kDecode, "token rows 8 off");
    q = dense(4, 4096, 7168, 1, NVFP4_SF_BLOCKED);
    q.sfa.layout = NVFP4_SF_LINEAR;  // token scales: any layout and alignment
    q.sfa.data = addr((3u << 28) + 1);
    CHECK(plan_dual(q, dev).path == DualPath::kDecode, "token scales");
    for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat32})
      CHECK(plan_dual(dense(3, 4096, 7168, 3, NVFP4_SF_LINEAR, dt), dev).path == DualPath::kDecode, "dtype");
    q = dense(4, 4096, 7168);
    q.c.col_stride = 4096;  // any output strides
    q.c.row_stride = 1;
    CHECK(plan_dual(q, dev).path == DualPath::kDecode, "transposed output");
    q = dense(4, 4096, 7168);
    q.activation = static_cast<nvfp4_activation_t>(7);
    CHECK(decode_dual_unsupported(q) != nullptr, "unknown activation");
  }
  // launch shapes of the target shapes on an H100 (printed for bench/NOTES.md)
  for (int64_t NK : {0, 1})
    for (int64_t M : {2, 4, 8, 16}) {
      const int64_t N = NK ? 14336 : 4096, K = NK ? 4096 : 7168;
      const DualGemmProblem p = dense(M, N, K);
      const int nt8 = decode_nt8(M);
      const DecodeDualLaunch d = decode_dual_launch(dual_decode_info(nt8), p, 132);
      CHECK(d.unsupported == nullptr && d.nt8 == nt8 && d.launch.ctas > 0, "launch %lldx%lld", (long long)N,
            (long long)K);
      if (M == 4 || M == 16)
        printf("dual decode %lldx%lldx%lld: nt8 %d, %d warps, cluster %d, %lld CTAs, %d stages per CTA, smem %zu (%zu)\n",
               (long long)M, (long long)N, (long long)K, d.nt8, d.launch.warps, d.launch.kc,
               (long long)d.launch.ctas, d.launch.stages_per_cta, d.launch.smem, d.launch.smem_launch);
    }
  // launch invariants
  for (int nt8 : {1, 2})
    for (int64_t N : {8LL, 200LL, 2048LL, 4096LL, 7000LL, 14336LL, 50000LL})
      for (int64_t K : {32LL, 96LL, 4096LL, 7168LL, 16384LL})
        for (int64_t L : {1LL, 3LL}) {
          const DualGemmProblem p = dense(nt8 == 1 ? 5 : 13, N, K, L, NVFP4_SF_BLOCKED);
          const DecodeDualLaunch d = decode_dual_launch(dual_decode_info(nt8), p, 132);
          static int kernels[3];  // stand-ins for the instances' addresses (the plan memo's key)
          for (int twice = 0; twice < 2; ++twice)  // the second call a memo hit: the same launch
            CHECK(decode_launch_equal(decode_dual_launch(dual_decode_info(nt8), p, 132, 0, &kernels[nt8]).launch,
                                      d.launch),
                  "dual memo nt8 %d %lldx%lldx%lld", nt8, (long long)N, (long long)K, (long long)L);
          const int64_t tasks = decode_dual_tasks(N);
          const int n_stages = static_cast<int>((K / 32 + kMmaSC - 1) / kMmaSC);
          const bool ok = d.unsupported == nullptr && d.launch.groups_per_batch * d.launch.warps >= tasks &&
                          (d.launch.groups_per_batch - 1) * d.launch.warps < tasks &&
                          d.launch.ctas == d.launch.groups_per_batch * L * d.launch.kc &&
                          d.launch.kc * d.launch.stages_per_cta >= n_stages &&
                          (d.launch.kc == 1 || d.launch.stages_per_cta >= kDecodeMinClusterStages) &&
                          d.launch.smem_launch >= d.launch.smem && tasks % 16 == 0 && tasks * 8 >= N &&
                          (tasks - 16) * 8 < N;
          CHECK(ok, "dual launch nt8 %d %lldx%lldx%lld", nt8, (long long)N, (long long)K, (long long)L);
        }
  // kernel parameters
  {
    DualGemmProblem p = dense(5, 300, 1024, 2, NVFP4_SF_BLOCKED);
    p.b2.row_stride = 528;
    p.sfb2.batch_stride = 123456;
    p.alpha1.value = 0.5f;
    p.alpha2.value = 0.25f;
    static const float dev_alpha = 2.0f;
    p.alpha2.device_ptr = &dev_alpha;
    p.activation = NVFP4_ACT_GELU_TANH;
    const DecodeDualArgs a = make_decode_dual_args(p);
    CHECK(a.d.N == 300 && a.d.M == 5 && a.d.tasks_per_batch == 48 && a.d.w == p.b1.data && a.d.sfw == p.sfb1.data &&
              a.d.w_row == 512 && a.e.w2 == p.b2.data && a.e.w2_row == 528 && a.e.w2_batch == p.b2.batch_stride &&
              a.e.sfw2 == p.sfb2.data && a.e.sfw2_batch == 123456 && a.d.sfw_blocked == 1 && a.d.alpha == 0.5f &&
              a.d.alpha_ptr == nullptr && a.e.alpha2 == 0.25f && a.e.alpha2_ptr == &dev_alpha &&
              a.e.act == NVFP4_ACT_GELU_TANH && a.d.c == p.c.data && a.d.c_row == 300 && a.d.c_batch == 1500,
          "dual decode args");
  }
}

// decode_kernel.cuh's dual task mapping, one stage (SC chunks of 32 K) of a 128-row band,
// emulated lane by lane (the formulas of decode_gemm with kDual, copied here: a change there
// must be mirrored).
static void test_dual_mapping() {
  constexpr int SC = kMmaSC, LPR = kMmaLPR, kRpi = 32 / LPR;
  static_assert(kRpi == 2, "the dual mapping assumes 2 rows per copy instruction");
  const int kStageA = mma_stage_a(SC), kRowBytes = 16 * SC, kA8 = 4 * 16 * SC;
  auto smem_row = [&](int m) { return (m & 1 ? mma_odd_rows(SC) : 0) + (m >> 1) * kRowBytes; };
  const int64_t K = 7168, tiles_k = (K / 16 + 3) / 4, tile_row_bytes = 512 * tiles_k, lin_row = K / 16;
  const int64_t N = 300;  // bands 0..2, band 2 with 44 rows
  for (int64_t blk = 0; blk < 3; ++blk) {
    std::vector<int> out_count(128, 0), copied(2 * 128, 0);
    for (int64_t task = 16 * blk; task < 16 * blk + 16; ++task) {
      const int64_t base = (task >> 4) * 128 + 2 * (task & 15);
      CHECK((base >> 7) == blk, "task %lld band", (long long)task);
      // weights: slot (matrix, row) per MMA row, from the copy lanes
      int64_t slot_row[16];
      int slot_mat[16];
      for (int i = 0; i < 16; ++i) slot_row[i] = -1;
      for (int lane = 0; lane < 32; ++lane) {
        const int cp_rs = lane / LPR;
        const int64_t cp_row0 = base + cp_rs;
        for (int k = 0; k < 16 / kRpi; ++k) {
          const int m = cp_rs + kRpi * k;
          const int64_t row = cp_row0 + 32 * (k & 3);
          const int mat = k >= 4;
          if (row >= N) continue;  // not copied (cp_rows)
          if (lane % LPR == 0) {
            slot_row[m] = row;
            slot_mat[m] = mat;
            copied[mat * 128 + (row - 128 * blk)]++;
          }
          CHECK(smem_row(m) == smem_row(cp_rs + kRpi * k), "copy destination");
        }
      }
      // blocked scale pieces: smem byte -> (matrix, offset in the batch)
      std::vector<int64_t> sfb(kStageA + 32 * SC, -1);
      std::vector<int> sfb_mat(kStageA + 32 * SC, -1);
      for (int lane = 0; lane < 32; ++lane) {
        const int kt = lane >> 2, ii = lane & 3;
        if (kt >= SC / 2) continue;
        const int64_t src = blk * tile_row_bytes + kt * 512 + ((base & 31) + (ii & 1)) * 16;
        for (int b = 0; b < 16; ++b) {
          sfb[kStageA + kt * 64 + ii * 16 + b] = src + b;
          sfb_mat[kStageA + kt * 64 + ii * 16 + b] = ii >> 1;
        }
      }
      // linear scale pieces
      std::vector<int64_t> sfl(kStageA + 32 * SC, -1);
      std::vector<int> sfl_mat(kStageA + 32 * SC, -1);
      for (int lane = 0; lane < 32; ++lane) {
        const int m = lane / (SC / 8), h = lane % (SC / 8);
        const int64_t row = base + (m & 1) + 32 * ((m >> 1) & 3);
        if (!(m < 16 && row < N)) continue;
        for (int b = 0; b < 16; ++b) {
          sfl[kStageA + m * 2 * SC + 16 * h + b] = row * lin_row + 16 * h + b;
          sfl_mat[kStageA + m * 2 * SC + 16 * h + b] = m >> 3;
        }
      }
      // consumers
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, t = lane & 3;
        const int64_t n = base + (g & 1) + 32 * (g >> 1);
        if (n >= N) continue;
        const int a_off = (g & 1 ? mma_odd_rows(SC) : 0) + (g >> 1) * kRowBytes + 16 * t;
        CHECK(a_off - 16 * t == smem_row(g) && smem_row(g) + kA8 == smem_row(g + 8), "rows g, g + 8");
        CHECK(slot_row[g] == n && slot_mat[g] == 0 && slot_row[g + 8] == n && slot_mat[g + 8] == 1,
              "task %lld lane %d: MMA rows g, g+8 hold B1 / B2 row %lld", (long long)task, lane, (long long)n);
        const int sf_b = kStageA + (t >> 1) * 64 + (t & 1) * 2 + (g & 1) * 16 + (g >> 1) * 4;
        const int sf_l = kStageA + g * 2 * SC + 2 * t;
        for (int u = 0; u < SC / 4; ++u) {
          const int c = 4 * u + t;  // the lane's chunk: scale columns 2c, 2c + 1
          for (int half = 0; half < 2; ++half)
            for (int e = 0; e < 2; ++e) {
              const int ab = sf_b + 128 * u + (half ? 32 : 0) + e;
              const int al = sf_l + 8 * u + (half ? 16 * SC : 0) + e;
              CHECK(sfb[ab] == blocked_sf_offset(n, 2 * c + e, K) && sfb_mat[ab] == half,
                    "blocked scale task %lld lane %d u %d", (long long)task, lane, u);
              CHECK(sfl[al] == n * lin_row + 2 * c + e && sfl_mat[al] == half, "linear scale task %lld lane %d u %d",
                    (long long)task, lane, u);
            }
        }
        // epilogue (kc == 1): D rows g, g + 8 of tokens 8j + 2t (+1) -> output column n
        out_count[n - 128 * blk]++;
        // cluster reduction item (warp, group, lane): the same column
        const int ig = lane >> 2;
        CHECK(base + (ig & 1) + 32 * (ig >> 1) == n, "reduction item column");
      }
    }
    for (int r = 0; r < 128; ++r) {
      const bool live = 128 * blk + r < N;
      CHECK(out_count[r] == (live ? 4 : 0) && copied[r] == (live ? 1 : 0) && copied[128 + r] == (live ? 1 : 0),
            "band %lld row %d: %d outputs (4 quad lanes), copied %d / %d", (long long)blk, r, out_count[r], copied[r],
            copied[128 + r]);
    }
  }
}

int main() {
  test_support();
  test_known_shapes();
  test_modes();
  test_invariants();
  test_decode_route();
  test_dual_mapping();
  return check_summary();
}
