// Host-side plan of the sm90a grouped GEMM (the list API: G independent problems, any M_g,
// N_g, K_g) run by ONE persistent kernel launch (kernel/grouped_gemm.cuh) after one token pass.
// Pure functions of the problem and of device numbers the caller passes in (no CUDA), so that
// tests/sm90_host/grouped_plan_test.cpp checks exactly the code the backend runs; the plan
// fills the kernel's problem table itself (GroupedEntry: plain pointers and integers), so the
// launcher adds only the tensor maps.
//
// One launch takes up to kGroupedMaxGroups groups (the table travels in the kernel parameters,
// 32 KB on sm90 with CUDA >= 12.1); a call with more groups runs one token pass + one GEMM
// launch per kGroupedMaxGroups groups (grouped_gemm.cu), each chunk planned on its own.
//
// Schedule: tiles of 128 weight rows x 128 tokens, numbered group by group in the table's
// order, which is largest first (most K blocks per tile first: a CTA that draws a long tile
// early does not finish last), weight tile fastest inside a group (neighbouring CTAs share a
// token tile in L2). Split-K over a cluster (as the GEMM: choose_splits_fitting) when the
// tiles cannot fill the SMs; then every CTA of the one wave computes one K slice of one tile.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "gemm_plan.hpp"

namespace nvfp4::sm90 {

// Groups per launch. The GEMM kernel's parameters hold, per group, one 112-byte table entry and
// two 128-byte tensor maps (weights, their linear scales): 64 groups = 23.9 KB of the 32764 bytes
// a kernel may take (static_assert in kernel/grouped_gemm.cuh). The token pass gets its own
// 56-byte entries: 3.6 KB, under the classic 4 KB of parameters.
constexpr int kGroupedMaxGroups = 64;

// One group of the GEMM launch, in schedule order (plain data: the kernel reads it from its
// parameters). Strides in bytes for the scale operand, in elements for c.
struct GroupedEntry {
  const uint8_t* sfb;  // the weights' scales (the producer; the weights come by TMA)
  int64_t sfb_row_stride;
  void* c;
  int64_t c_row_stride, c_col_stride;
  const float* alpha_ptr;  // read at kernel time when non-null
  int64_t M, N, K;
  int64_t x_row;       // first row of the group's tokens in the fp16 token workspace
  int64_t tile_begin;  // first tile of the group in the launch's numbering
  float alpha;
  int32_t num_kb;   // K blocks of 128
  int32_t tiles_w;  // weight tiles (N_g / 128 rounded up)
  int32_t c_dtype;  // DType
  int32_t c_vec4;   // 1: 4 consecutive n are contiguous and aligned (out_vec4)
  int32_t problem;  // index of the group in the caller's problem (host only: the tensor maps)
};

// The same group for the token pass (same order; rows < 2^31 in all: the plan's grid check).
struct GroupedPassEntry {
  const uint8_t* a;
  const uint8_t* sfa;
  int64_t a_row_stride;
  int64_t sfa_row_stride;  // linear only
  int64_t K;
  int32_t x_row;      // first workspace row
  int32_t M;
  int32_t num_kb;
  int32_t sfa_words;  // blocked scales of A 4-byte aligned: 32-bit scale loads
};

// Token-pass CTAs per row for num_kb K blocks: 16 chunks of 8 fp16 per block, 512 chunks per
// CTA (kernel/token_predecode.cuh: predecode_pieces, static_assert'ed equal in
// kernel/grouped_gemm.cuh; that header is device code, this one stays plain C++).
constexpr int32_t kGroupedPassChunksPerCta = 512;
inline int32_t grouped_pass_pieces(int32_t num_kb) {
  return (num_kb * 16 + kGroupedPassChunksPerCta - 1) / kGroupedPassChunksPerCta;
}

struct GroupedDeviceNumbers {
  int sm_count = 1;
  int clusters[kMaxSplits + 1] = {};  // resident clusters of s grouped-kernel CTAs (a failed query: no limit)
};

struct GroupedPlan {
  const char* fallback = nullptr;  // why the one-launch kernel leaves this chunk to the per-group loop
  int32_t count = 0;               // groups in the table (M_g = 0 or N_g = 0 groups left out)
  GroupedEntry entry[kGroupedMaxGroups];
  GroupedPassEntry pass[kGroupedMaxGroups];
  int64_t tiles = 0;     // all groups' tiles
  int64_t rows = 0;      // sum M_g: token rows (the workspace has offset_ws_rows of them)
  int64_t kpad = 0;      // its row length: the largest K_g rounded up to 128
  int32_t min_kb = 0;    // fewest K blocks of a group (bounds the split)
  int32_t max_pieces = 0;  // token-pass CTAs per row: predecode_pieces of the longest K
  int splits = 1;
  int32_t x_box_rows = 0;  // token rows per TMA box: fitted to the largest M_g (token_box_rows)
  int32_t sf_blocked = 0;
  int32_t sf_mode = kScaleSync;              // ScaleLoad of the weights' scales, the same for every group
  int32_t sf_mode_without_tma = kScaleSync;  // if a group's scale tensor map cannot be encoded
  size_t workspace_bytes = 0;                // the fp16 token workspace (+ the staged scales)
  uint32_t grid = 0;                         // GEMM CTAs: min(tiles, SMs) (splits 1) or tiles * splits
  // Scale staging (kernel/scale_stage.cuh): entry i's weight scales copied to workspace byte
  // stage_offset[i] as staged_sf_cols(K_i)-byte rows (host only: not in the kernel's entries).
  bool stage_w = false;
  size_t stage_offset[kGroupedMaxGroups] = {};
};

// Plan of groups[first .. first + n) (n <= kGroupedMaxGroups). `workspace`: bytes of 256-byte
// aligned workspace the call has (SIZE_MAX for the size query). A chunk the kernel cannot run
// gets `fallback` set; its caller then runs every group with the sm90a GEMM (today's loop).
inline void plan_grouped(const GemmProblem* groups, int32_t first, int32_t n, const GroupedDeviceNumbers& dev,
                         size_t workspace, GroupedPlan* g) {
  g->fallback = nullptr;
  g->count = 0;
  g->tiles = g->rows = g->kpad = 0;
  g->min_kb = 0x7FFFFFFF;
  g->max_pieces = 0;
  g->splits = 1;
  g->x_box_rows = 0;
  g->sf_blocked = 0;
  g->sf_mode = g->sf_mode_without_tma = kScaleSync;
  g->workspace_bytes = 0;
  g->stage_w = false;
  g->grid = 0;
  bool bulk = true, tma = true, async = true;
  int64_t max_m = 0;
  for (int32_t i = first; i < first + n; ++i) {
    const GemmProblem& p = groups[i];
    if (p.M <= 0 || p.N <= 0) continue;  // nothing to compute or store
    if (p.L != 1 || p.K <= 0 || p.K % 32 != 0) {
      g->fallback = "sm90a grouped gemm: a group with L != 1 or K not a multiple of 32";
      return;
    }
    if (!tma_compatible(p.a, p.M, 1) || !tma_compatible(p.b, p.N, 1)) {
      g->fallback = "sm90a grouped gemm: fp4 operands need 16-byte aligned bases and rows";
      return;
    }
    if (p.sfa.layout != p.sfb.layout || (g->count > 0 && (p.sfb.layout == NVFP4_SF_BLOCKED) != (g->sf_blocked != 0))) {
      g->fallback = "sm90a grouped gemm: mixed scale layouts";
      return;
    }
    GroupedEntry& e = g->entry[g->count];
    e.sfb = p.sfb.data;
    e.sfb_row_stride = p.sfb.row_stride;
    e.c = p.c.data;
    e.c_row_stride = p.c.row_stride;
    e.c_col_stride = p.c.col_stride;
    e.alpha_ptr = p.alpha.device_ptr;
    e.alpha = p.alpha.value;
    e.M = p.M;
    e.N = p.N;
    e.K = p.K;
    e.num_kb = k_blocks(p.K);
    e.tiles_w = static_cast<int32_t>((p.N + kTileW - 1) / kTileW);
    e.c_dtype = static_cast<int32_t>(p.c.dtype);
    e.c_vec4 = out_vec4(p.c, 1);
    e.problem = i;
    g->sf_blocked = p.sfb.layout == NVFP4_SF_BLOCKED ? 1 : 0;
    bulk = bulk && scales_bulk(p.sfb, p.K, 1);
    tma = tma && scales_tma(p.sfb, 1);
    async = async && scales_async(p.sfb, 1);
    if (p.M > max_m) max_m = p.M;
    ++g->count;
  }
  if (g->count == 0) return;  // nothing to launch

  // Largest first: a stable insertion sort by K blocks, descending (G <= 64; already sorted,
  // as every benchmark case is, it costs G compares).
  for (int32_t i = 1; i < g->count; ++i) {
    const GroupedEntry e = g->entry[i];
    int32_t j = i;
    for (; j > 0 && g->entry[j - 1].num_kb < e.num_kb; --j) g->entry[j] = g->entry[j - 1];
    g->entry[j] = e;
  }
  for (int32_t i = 0; i < g->count; ++i) {
    GroupedEntry& e = g->entry[i];
    const int64_t tiles_x = (e.M + kTileX - 1) / kTileX;
    e.x_row = g->rows;
    e.tile_begin = g->tiles;
    g->rows += e.M;
    g->tiles += tiles_x * e.tiles_w;
    const int64_t kpad = static_cast<int64_t>(e.num_kb) * kBlockK;
    if (kpad > g->kpad) g->kpad = kpad;
    if (e.num_kb < g->min_kb) g->min_kb = e.num_kb;
  }
  if (g->tiles * kMaxSplits > 0x7FFFFFFF || g->rows > 0x7FFFFFFF) {
    g->fallback = "sm90a grouped gemm: grid too large";
    return;
  }
  for (int32_t i = 0; i < g->count; ++i) {
    const GroupedEntry& e = g->entry[i];
    const GemmProblem& p = groups[e.problem];
    GroupedPassEntry& t = g->pass[i];
    t.a = p.a.data;
    t.sfa = p.sfa.data;
    t.a_row_stride = p.a.row_stride;
    t.sfa_row_stride = p.sfa.row_stride;
    t.K = p.K;
    t.x_row = static_cast<int32_t>(e.x_row);
    t.M = static_cast<int32_t>(e.M);
    t.num_kb = e.num_kb;
    t.sfa_words = p.sfa.layout == NVFP4_SF_BLOCKED && is_aligned(p.sfa.data, 4) ? 1 : 0;
  }
  g->max_pieces = grouped_pass_pieces(static_cast<int32_t>(g->kpad / kBlockK));
  g->x_box_rows = token_box_rows(max_m);
  g->workspace_bytes = token_workspace_bytes(offset_ws_rows(g->rows, g->x_box_rows), g->kpad, 1);
  if (g->workspace_bytes > kTokenWorkspaceMaxBytes) {
    g->fallback = "sm90a grouped gemm: token workspace over 1 GiB";
    return;
  }
  if (workspace < g->workspace_bytes) {
    g->fallback = "sm90a grouped gemm: no token workspace";
    return;
  }
  g->sf_mode_without_tma = async ? kScaleCpAsync : kScaleSync;
  g->sf_mode = bulk ? kScaleBulk : tma ? kScaleTma : g->sf_mode_without_tma;
  if (!bulk && !tma) {
    // every group's weight scales staged after the token workspace, in entry order, where the
    // workspace has room (the size query asks for it), as the GEMM's (gemm_plan.hpp plan_gemm)
    size_t end = g->workspace_bytes;
    for (int32_t i = 0; i < g->count; ++i) {
      g->stage_offset[i] = end;
      end += staged_sf_bytes(g->entry[i].N, g->entry[i].K, 1);
    }
    g->stage_w = take_staging(workspace, end - g->workspace_bytes, &g->workspace_bytes, &g->sf_mode,
                              &g->sf_mode_without_tma);
  }
  g->splits = choose_splits_fitting(dev.clusters, g->tiles, g->min_kb, dev.sm_count);
  if (g->splits > 1)
    g->grid = static_cast<uint32_t>(g->tiles * g->splits);  // <= SMs (choose_splits): one wave
  else
    g->grid = static_cast<uint32_t>(g->tiles < dev.sm_count ? g->tiles : dev.sm_count);
}

}  // namespace nvfp4::sm90
