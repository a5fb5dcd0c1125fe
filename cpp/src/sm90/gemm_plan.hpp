// Host-side planning of the sm90a GEMM family: which problems the Hopper kernels take,
// which kernel runs a problem (the GEMV and decode routes, the operand roles, the fused
// kernel, the pre-decoded kernel or its persistent / stream-K forms), its TMA box and
// scale-load mode, and the workspace it needs (the tiles' spread over the SMs:
// gemm_schedule.hpp). Pure functions of the problem (shape, layouts, pointer and
// stride alignment) and of device numbers the caller passes in (SM count, the cached
// cluster-occupancy answers): no CUDA, so that the CPU tests (tests/sm90_host/
// gemm_plan_test.cpp, gemm_schedule_test.cpp) check exactly the code the backend runs. gemm.cu
// turns a plan into tensor maps, kernel parameters and launches; packed_plan.hpp plans the
// packed MoE GEMM on the same pieces.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "../common/align.hpp"
#include "../problem.hpp"
#include "gemm_schedule.hpp"
#include "gemv/decode_plan.hpp"

namespace nvfp4::sm90 {

// A few tokens: the tiled GEMM costs about the same for M = 1 as for M = 128 (every weight
// element is decoded once per CTA, the 128-token tile mostly empty), while the GEMV kernel
// streams the weights at near memory speed. So M <= kGemvMaxTokens runs as M GEMVs over
// the weights, one per token. H200, N = K = 7168 (bench/NOTES.md "gemm via gemv"): M = 1
// 44.7 -> 12.5 µs, M = 2 41.6 -> 24.2 µs; the GEMM took 30-50 µs at M = 4 in two runs, so
// three GEMVs (~37 µs) are not a sure win at M = 3.
constexpr int64_t kGemvMaxTokens = 2;

// The decode regime: 2..kDecodeMaxTokens (32) tokens on at least decode_min_rows(M, K) weight rows
// (N·L: 4096, but 7168 for 17..32 tokens at K < 1536; 17..32 tokens on many weights or long K
// stay tiled: decode_weights_fit), with the operands the decode kernel takes (gemv/decode_plan.hpp: 16-byte
// aligned rows, weight scales as 16-byte pieces), run on gemm_decode.cu's kernel, which
// streams the weights like the MMA GEMV and multiplies each decoded weight fragment by all
// tokens (H100: 7168^2 at M = 4 19.3 µs against the tiled GEMM's 27.9; the bounds and the
// shapes where it lost: decode_plan.hpp). Other problems keep the routes below (M <= 2:
// GEMVs; M >= 3: the tiled GEMM).
inline bool decode_route(const GemmProblem& p) {
  return p.M >= gemv_detail::kDecodeMinTokens && p.M <= gemv_detail::kDecodeMaxTokens && p.N > 0 && p.L > 0 &&
         p.N * p.L >= gemv_detail::decode_min_rows(p.M, p.K) && gemv_detail::decode_weights_fit(p.M, p.N * p.L, p.K) &&
         gemv_detail::decode_unsupported(p) == nullptr;
}

// Operand roles. The kernels treat A's rows as tokens (decoded once by the pass into fp16, or
// per weight tile by the fused kernel; 128 / 136 per tile) and B's as weights (decoded per
// token tile in the main loop, 128 per tile). Where B has few rows (N <= kSwapMaxN), A many
// (M >= kSwapMinRatio * N), the pass's fp16 tokens would not stay in L2 (M·K·L·2 bytes >=
// kSwapMinTokenBytes) and B's would (N·K·L·2 <= kSwapMaxSmallBytes), gemm() runs Cᵀ = B·Aᵀ
// instead: B's few rows become the tokens (a small pass, or the decode / GEMV routes for
// 3..16 / 1..2 of them) and A's many rows the weights, streamed as fp4 instead of written and
// read back as fp16. H100 graph µs, kept roles -> swapped (bench/NOTES.md sessions 17, 18):
// the kept roles step where the tokens pass 16 MB (N = 128: 4096x128x2048 12.1, 4096x128x4096
// 32.1), and swapping pays from there: 4096x128x4096 32.1 -> 21.4, 8192x128x7168 112.1 ->
// 34.7, 4096x16x7168 60.2 -> 16.0, 8192x256x7168 123.1 -> 54.5, 8192x384x7168 198.2 -> 92.9,
// 8192x512x7168 158.9 -> 110.5, 6144x640x7168 142.3 -> 116.8, 8192x1024x7168 239.3 -> 210.3,
// 16384x1024x2048 195.1 -> 171.6 (every probed N in 129..1024 faster swapped, 5-53%); below
// the token bytes the kept roles win (8192x128x512 9.1 -> 26.0, 2048x128x4096 13.4 -> 17.3,
// 1000x100x7168 13.6 -> 15.2). B's fp16 up to 32 MiB (bench/NOTES.md session 19):
// 8192x1024x10240 351.4 -> 303.7, 8192x1024x14336 476.2 -> 414.7, 8192x1024x16384 559.4 ->
// 458.8 (the largest probed). Past 1024 rows the swap is mixed (8192x1280x7168 290.3 -> 272.5,
// 8192x1536x7168 343.5 -> 325.3, but 8192x1536x4096 196.2 -> 210.1) and from 1792 rows slower
// (8192x1792x7168 376.6 -> 391.4, 8192x2048x2048 148.9 -> 180.1, 16384x4096x4096 943.9 ->
// 1047.4): the roles stay there. The output's row and column strides swap with the roles (its
// stores then go by C's columns: EpilogueClusterReduceT::reduce_rows walks tokens fastest for
// them).
constexpr int64_t kSwapMaxN = 1024;
constexpr int64_t kSwapMinRatio = 4;
constexpr int64_t kSwapMinTokenBytes = int64_t(24) << 20;
constexpr int64_t kSwapMaxSmallBytes = int64_t(32) << 20;
// (Not where p already takes the decode route: its preconditions are on the weights' side.)
inline bool swap_roles(const GemmProblem& p) {
  return p.N > 0 && p.N <= kSwapMaxN && p.M >= kSwapMinRatio * p.N && 2 * p.M * p.K * p.L >= kSwapMinTokenBytes &&
         2 * p.N * p.K * p.L <= kSwapMaxSmallBytes && !decode_route(p);
}
inline GemmProblem swapped_roles(const GemmProblem& p) {
  GemmProblem q = p;
  q.M = p.N;
  q.N = p.M;
  q.a = p.b;
  q.sfa = p.sfb;
  q.b = p.a;
  q.sfb = p.sfa;
  q.c.row_stride = p.c.col_stride;  // C'[l, n, m] = C[l, m, n]
  q.c.col_stride = p.c.row_stride;
  return q;
}
// The problem gemm() runs for p.
inline GemmProblem gemm_roles(const GemmProblem& p) { return swap_roles(p) ? swapped_roles(p) : p; }

// Pre-decoded path: the tokens decoded once into an fp16 workspace (kernel/token_predecode.cuh)
// when K >= kPredecodeMinK, the workspace fits kTokenWorkspaceMaxBytes, and the fused kernel
// would give a CTA more than kShortChainBlocks K blocks (i.e. would need accumulator
// promotion). Model from an H200 run (graph replay, M = 128): fused with promotion ~6.4 µs
// + 1.25 µs per block of a CTA, pre-decoded ~10.6 µs + 0.84 µs per block: equal at ~10
// blocks; the fused kernel without promotion (<= 8 blocks) beats both (128x7168x2048: 15.6
// fused vs 17.4 pre-decoded; 128x4096x7168, 19 blocks: 26.4 pre-decoded vs 30.3 fused).
// Large M too (H200: 1024..8192 tokens 14-27% faster than fused, e.g. 8192^3 2.0 vs 2.7 ms:
// decoding each token once instead of once per weight tile outweighs reading it as fp16).
// 1024 rather than 2048 (H100, session 16, graph µs 2048 -> 1024: 1536^3 38.6 -> 30.0,
// 2048x2048x1536 37.9 -> 31.7, 3000x5000x1536 155.0 -> 104.7; it changes only K = 1152..1984
// with promoted fused slices). Short slices keep the unpromoted fused kernel (128x7168x1024 /
// 1536) unless the fused tiles outnumber the SMs (plan_gemm: many_tiles, any K).
constexpr int64_t kPredecodeMinK = 1024;
// Cap on the token workspace (2 bytes per token element): 1 GiB, e.g. 32768 tokens x K 16384.
constexpr size_t kTokenWorkspaceMaxBytes = size_t(1) << 30;
// Longest per-CTA K slice (in K blocks) that the fused kernel runs as one unpromoted
// wgmma chain (collective/accumulator_promotion.cuh: chains of 8 blocks keep the error at
// <= 0.28 of the tolerance; the unpromoted instance frees 64 registers per consumer thread,
// 128x7168x2048: 17.4 -> 16.5 µs).
constexpr int kShortChainBlocks = 8;

// How the block scales reach shared memory (GemmParams::sf_mode).
enum ScaleLoad : int32_t {
  kScaleSync = 0,     // plain byte loads by the producer warp (any alignment)
  kScaleCpAsync = 1,  // 4-byte cp.async with zero-fill, smem [row][8] (4-byte aligned rows)
  kScaleBulk = 2,     // blocked layout, K % 128 == 0: the stage's 128-row x 8-column scales are
                      // 1 KB contiguous in global memory -> one bulk copy, smem keeps the blocked order
  kScaleTma = 3,      // linear layout with 16-byte aligned rows: a TMA box of 16 columns x 128
                      // rows per stage (the first 8 columns are the stage's), smem [row][16]
};

// ---------------------------------------------------------------------------
// Alignment predicates
// ---------------------------------------------------------------------------

// TMA can read the packed operand: 16-byte aligned base, row and batch strides, strides
// below 2^40 (cuTensorMapEncodeTiled's limits).
inline bool tma_compatible(const Fp4Operand& op, int64_t rows, int64_t L) {
  if (!is_aligned(op.data, 16) || op.row_stride % 16 != 0 || op.row_stride <= 0) return false;
  if (L > 1 && (op.batch_stride % 16 != 0 || op.batch_stride <= 0)) return false;
  if (rows > (int64_t{1} << 31) - 1) return false;
  if (op.row_stride >= (int64_t{1} << 40) || op.batch_stride >= (int64_t{1} << 40)) return false;
  return true;
}
// kScaleBulk: K % 128, so that every stage holds 8 real scale columns (no stale smem bytes
// in a K tail).
inline bool scales_bulk(const ScaleOperand& s, int64_t K, int64_t L) {
  return s.layout == NVFP4_SF_BLOCKED && K % 128 == 0 && is_aligned(s.data, 16) &&
         (L == 1 || s.batch_stride % 16 == 0);
}
inline bool scales_tma(const ScaleOperand& s, int64_t L) {
  return s.layout == NVFP4_SF_LINEAR && is_aligned(s.data, 16) && s.row_stride % 16 == 0 && s.row_stride > 0 &&
         (L == 1 || (s.batch_stride % 16 == 0 && s.batch_stride > 0));
}
inline bool scales_async(const ScaleOperand& s, int64_t L) {
  if (!is_aligned(s.data, 4)) return false;
  if (L > 1 && s.batch_stride % 4 != 0) return false;
  if (s.layout == NVFP4_SF_LINEAR && s.row_stride % 4 != 0) return false;
  return true;
}
// The mode for both operands' scales when TMA is not used for them.
inline int32_t scale_load_without_tma(const ScaleOperand& a, const ScaleOperand& b, int64_t L) {
  return scales_async(a, L) && scales_async(b, L) ? kScaleCpAsync : kScaleSync;
}
// Output stores by 4 consecutive n: contiguous rows, 4-element aligned base and strides.
inline int32_t out_vec4(const OutOperand& c, int64_t L) {
  const uintptr_t esize = c.dtype == DType::kFloat32 ? 4 : 2;
  return (c.col_stride == 1 && is_aligned(c.data, 4 * esize) && c.row_stride % 4 == 0 &&
          (L == 1 || c.batch_stride % 4 == 0))
             ? 1
             : 0;
}

// ---------------------------------------------------------------------------
// Staged scales (kernel/scale_stage.cuh): scales that no TMA box can read (linear rows
// not 16-byte aligned, i.e. K % 256 != 0; blocked with K % 128 != 0; misaligned bases)
// copied into the workspace as [L][rows][staged_sf_cols(K)] bytes, 256-byte aligned.
// ---------------------------------------------------------------------------
inline int64_t staged_sf_cols(int64_t K) { return (K / 16 + 15) / 16 * 16; }
inline size_t staged_sf_bytes(int64_t rows, int64_t K, int64_t L) {
  return static_cast<size_t>((L * rows * staged_sf_cols(K) + 255) / 256 * 256);
}
// Every plan's staging step: where `have` bytes of workspace hold `extra` bytes of staged
// copies after the *bytes already planned, they go there (*bytes grows) and the kernel reads
// them with kScaleTma, or with 4-byte cp.async if a tensor map cannot be encoded (staged rows
// are 16-byte aligned). False, and nothing changed, where they do not fit.
inline bool take_staging(size_t have, size_t extra, size_t* bytes, int32_t* sf_mode, int32_t* sf_mode_without_tma) {
  if (have < *bytes + extra) return false;
  *bytes += extra;
  *sf_mode = kScaleTma;
  *sf_mode_without_tma = kScaleCpAsync;
  return true;
}

// ---------------------------------------------------------------------------
// The fp16 token workspace of the pre-decoded paths: [L][token_ws_rows(rows)][Kp], Kp = K rounded up to 128
// ---------------------------------------------------------------------------
inline int32_t k_blocks(int64_t K) { return static_cast<int32_t>((K + kBlockK - 1) / kBlockK); }
// Rows of each batch's workspace: the token rows rounded up so that no TMA box of the kernels
// reading it reaches past the tensor (token_box_rows: an 8-row multiple below 128 tokens, the
// 128-row tile above, or the 136-row one where it needs fewer tiles, the only place
// choose_token_tile may take it). The pass writes the first `rows`; the padding rows hold
// whatever the buffer held and reach only output rows >= M, which are never stored. Why: a box
// mostly out of bounds loads slowly (below); H100, N = K = 7168: M = 137 69.2 -> 50.3 µs
// (M = 256 on the same 112 tiles: 51.5), M = 385 117.8 -> 97.3 (bench/NOTES.md session 14).
inline int64_t token_ws_rows(int64_t rows) {
  if (rows < kTileX) return (rows + 7) / 8 * 8;
  const int64_t narrow = (rows + kTileX - 1) / kTileX * kTileX;
  const int64_t wide = (rows + kTileXWide - 1) / kTileXWide * kTileXWide;
  return wide / kTileXWide < narrow / kTileX && wide > narrow ? wide : narrow;
}
// The grouped list and packed MoE kernels read one workspace of every group's (expert's) rows
// back to back, and a group's token tiles start at its first row, anywhere: box_rows - 1 rows
// past the last token keep every box inside (the next group's rows, or these). H100, packed
// MoE of 8 experts x 4096 x 7168: 128 and 256 tokens ran 126.6 / 125.4 µs against 111.7 for
// 512, nearly every tile's box reaching past the tokens at 128 (bench/NOTES.md session 14).
inline int64_t offset_ws_rows(int64_t rows, int32_t box_rows) { return rows + box_rows - 1; }
inline size_t token_workspace_bytes(int64_t rows, int64_t K, int64_t L) {
  const int64_t kpad = static_cast<int64_t>(k_blocks(K)) * kBlockK;
  return static_cast<size_t>((L * token_ws_rows(rows) * kpad * 2 + 255) / 256 * 256);
}
// Token rows per TMA box: for fewer than 128 tokens only the rows that exist, rounded up to
// the 8-row swizzle atom. A 128-row box that is mostly out of bounds made the loads slow
// (H200, N = K = 7168: M = 8 40.5 -> 29.3 µs, M = 32 38.3 -> 30.6 µs with the fitted box;
// bench/NOTES.md "token TMA box fitted to M"). The rest of the smem tile keeps stale data,
// which only reaches the output columns of tokens >= M, never stored.
// `tile_x`: the kernel's token tile (kTileX, kTileXWide: M = 129..136 -> a 136-row box, or kTileXSplit's).
inline int32_t token_box_rows(int64_t rows, int32_t tile_x = kTileX) {
  return rows < tile_x ? static_cast<int32_t>((rows + 7) / 8 * 8) : tile_x;
}

// ---------------------------------------------------------------------------
// Dense GEMM
// ---------------------------------------------------------------------------

enum class GemmPath : int32_t {
  kEmpty = 0,       // nothing to compute (M, N or L is 0)
  kGemvRoute = 1,   // M <= kGemvMaxTokens: one GEMV per token (gemv.cu)
  kFused = 2,       // every CTA decodes its token tile (kernel/gemm_fused.cuh)
  kPredecoded = 3,  // token pass + pre-decoded kernel, one CTA per (tile, split) (kernel/gemm_predecoded.cuh)
  kPersistent = 4,  // token pass + persistent pre-decoded kernel (kernel/gemm_persistent.cuh)
  kDecode = 5,      // decode_route(p): the decode-regime kernel (gemm_decode.cu)
  kStreamK = 6,     // token pass + stream-K pre-decoded kernel (kernel/gemm_streamk.cuh; choose_streamk)
};

struct GemmPlan {
  const char* unsupported = nullptr;  // why the sm90a backend leaves the problem (NOT_SUPPORTED)
  GemmPath path = GemmPath::kEmpty;
  int64_t tiles_w = 0, tiles_x = 0;   // output tiles per batch along N and M
  int32_t tile_x = kTileX;            // tokens per tile: kTileX, kTileXWide or kTileXSplit's (pre-decoded)
  int64_t tiles = 0;                  // tiles_w * tiles_x * L
  int32_t num_kb = 0;                 // K blocks
  int splits = 1;                     // CTAs per output tile (split-K over a cluster of `splits` x 1 x 1)
  bool short_chain = false;           // fused: the instance without accumulator promotion
  int stages = 0;                     // ring stages of the kernel that runs
  int32_t x_box_rows = 0;             // token rows per TMA box (pre-decoded: fp16 workspace; fused: fp4 tokens)
  int32_t sf_mode = kScaleSync;       // ScaleLoad
  int32_t sf_mode_without_tma = kScaleSync;  // if the scale tensor maps cannot be encoded (kScaleTma)
  int32_t c_vec4 = 0;
  size_t workspace_bytes = 0;         // the token workspace the path reads (pre-decoded paths only)
  uint32_t grid[3] = {0, 0, 0};       // the GEMM kernel's grid (the token pass's: kernel/token_predecode.cuh)
  // Persistent path: the last tail_tiles tiles (a partial round, <= half the SMs) run after the
  // whole rounds as a split-K tail kernel, tail_splits CTAs per tile (choose_tail; 0: none).
  int64_t tail_tiles = 0;
  int tail_splits = 1;
  // Stream-K path: grid[0] CTAs of sk_units consecutive (tile, K block) units each; the fp32
  // partials of the CTAs whose range starts inside a tile at sk_partials_offset (one
  // streamk_partial_bytes(tile_x) slot per CTA), their ready flags (one 32-bit word per CTA,
  // zeroed by the token pass) at sk_flags_offset.
  int64_t sk_units = 0;
  size_t sk_partials_offset = 0, sk_flags_offset = 0;
  // Scale staging (kernel/scale_stage.cuh): the weights' / tokens' scales copied into the
  // workspace at these byte offsets as linear rows of staged_sf_cols(K) bytes, read with kScaleTma.
  bool stage_w = false, stage_x = false;
  size_t stage_w_offset = 0, stage_x_offset = 0;
};

// Why sm90a leaves a (non-empty) problem to the next backend; nullptr when it takes it.
// Shape, layout and alignment only (no device numbers).
inline const char* gemm_unsupported(const GemmProblem& p) {
  if (p.M <= 0 || p.N <= 0 || p.L <= 0) return nullptr;
  if (p.K <= 0 || p.K % 32 != 0) return "sm90a gemm: K must be a multiple of 32";
  if (p.M <= kGemvMaxTokens) return nullptr;  // the GEMV route takes any layout and alignment
  if (decode_route(p)) return nullptr;        // (mixed scale layouts included)
  if (!tma_compatible(p.a, p.M, p.L) || !tma_compatible(p.b, p.N, p.L))
    return "sm90a gemm: fp4 operands need 16-byte aligned bases and strides";
  const int64_t tiles_w = (p.N + kTileW - 1) / kTileW;
  const int64_t tiles_x = (p.M + kTileX - 1) / kTileX;
  if (tiles_x > 65535 || p.L > 65535 || tiles_w * kMaxSplits > 0x7FFFFFFF) return "sm90a gemm: grid too large";
  if (p.sfa.layout != p.sfb.layout) return "sm90a gemm: mixed scale layouts";
  return nullptr;
}

// The plan of gemm(p). `workspace` = bytes of 256-byte aligned workspace the call has
// (0: none; the workspace query passes SIZE_MAX and reads plan.workspace_bytes).
inline GemmPlan plan_gemm(const GemmProblem& p, const GemmDeviceNumbers& dev, size_t workspace) {
  GemmPlan g;
  if (p.M <= 0 || p.N <= 0 || p.L <= 0) return g;
  g.unsupported = gemm_unsupported(p);
  if (g.unsupported != nullptr) return g;
  if (decode_route(p)) {
    g.path = GemmPath::kDecode;
    return g;
  }
  if (p.M <= kGemvMaxTokens) {
    g.path = GemmPath::kGemvRoute;
    return g;
  }
  g.tiles_w = (p.N + kTileW - 1) / kTileW;
  g.tiles_x = (p.M + kTileX - 1) / kTileX;
  g.tiles = g.tiles_w * g.tiles_x * p.L;
  g.num_kb = k_blocks(p.K);

  g.sf_mode_without_tma = scale_load_without_tma(p.sfa, p.sfb, p.L);
  if (scales_bulk(p.sfa, p.K, p.L) && scales_bulk(p.sfb, p.K, p.L))
    g.sf_mode = kScaleBulk;
  else if (scales_tma(p.sfa, p.L) && scales_tma(p.sfb, p.L))
    g.sf_mode = kScaleTma;
  else
    g.sf_mode = g.sf_mode_without_tma;
  g.c_vec4 = out_vec4(p.c, p.L);

  // The fused kernel's split (both of its instances have the same threads, shared memory and
  // register cap, hence the same occupancy), and whether its CTAs' K slices (at most
  // ceil(num_kb / splits) blocks, tile_scheduler.cuh) fit one unpromoted chain.
  const int fused_splits = choose_splits_fitting(dev.fused_clusters, g.tiles, g.num_kb, dev.sm_count);
  const bool fused_short = (g.num_kb + fused_splits - 1) / fused_splits <= kShortChainBlocks;
  // More tiles than SMs: the fused kernel would decode every token tile once per weight tile,
  // round after round, however short its slices (4096x4096x1024: 108 µs, 1.74 µs per block
  // against the pre-decoded kernel's ~0.84): the persistent pre-decoded kernel takes them.
  const bool many_tiles = g.tiles > dev.sm_count;
  const size_t token_bytes =
      p.K >= kPredecodeMinK || many_tiles ? token_workspace_bytes(p.M, p.K, p.L) : 0;
  const bool predecode = token_bytes > 0 && token_bytes <= kTokenWorkspaceMaxBytes &&
                         (!fused_short || many_tiles) && workspace >= token_bytes;
  if (!predecode) {
    g.path = GemmPath::kFused;
    g.short_chain = fused_short;
    g.splits = fused_splits;
    g.stages = kFusedStages;
    g.x_box_rows = token_box_rows(p.M);  // the fp4 tokens' box (and their kScaleTma box): fitted below 128
  } else {
    TokenTiling t = choose_token_tile(p, g.tiles_w, g.num_kb, dev);
    // A split-only plan of one CTA per tile (SMs left idle) against the 128-token tile's
    // stream-K plan over every SM: a smaller tile's K block costs less than a 128-token one, so
    // the 128-token stream-K plan where the small plan's busiest SM would do more than
    // kSplitTileMaxBlockRatio of its blocks (NOTES "Session 25": the rule against the lone-CTA
    // plan on four shapes, 2 faster, 1 slower, 1 level).
    const int split_i = split_tile_index(t.tile_x);
    if (split_i >= 0 && t.splits == 1) {
      const TokenTiling n = token_tiling(p, g.tiles_w, g.num_kb, dev.predecoded_clusters, dev.sm_count, kTileX);
      const StreamKChoice nsk = choose_streamk(n, g.num_kb, dev.sm_count);
      if (nsk.units > 0 && workspace >= token_bytes + streamk_workspace_bytes(nsk, kTileX) &&
          kSplitTileMaxBlockRatio[split_i][1] * static_cast<int64_t>(g.num_kb) >
              kSplitTileMaxBlockRatio[split_i][0] * (nsk.units + kStreamKFixupBlocks))
        t = n;
    }
    g.tile_x = t.tile_x;
    g.tiles_x = t.tiles_x;
    g.tiles = t.tiles;
    g.splits = t.splits;
    g.path = t.persistent ? GemmPath::kPersistent : GemmPath::kPredecoded;
    const int split_t = split_tile_index(t.tile_x);  // (t may be the fallback's 128-token tiling)
    g.stages = split_t >= 0 ? kPredecodedSplitStages[split_t] : kPredecodedStages;
    g.x_box_rows = token_box_rows(p.M, t.tile_x);
    g.workspace_bytes = token_bytes;
    // (the split-only tiles have no stream-K instance)
    const StreamKChoice sk = split_t >= 0 ? StreamKChoice{} : choose_streamk(t, g.num_kb, dev.sm_count);
    const size_t sk_bytes = sk.units > 0 ? streamk_workspace_bytes(sk, t.tile_x) : 0;
    if (sk.units > 0 && workspace >= token_bytes + sk_bytes) {
      g.path = GemmPath::kStreamK;
      g.splits = 1;
      g.sk_units = sk.units;
      g.sk_partials_offset = token_bytes;
      g.sk_flags_offset = token_bytes + static_cast<size_t>(sk.ctas) * streamk_partial_bytes(t.tile_x);
      g.workspace_bytes = token_bytes + sk_bytes;
    }
  }
  if (g.path != GemmPath::kFused) {
    // only the weights' scales reach the pre-decoded GEMMs (the pass reads the tokens')
    g.sf_mode_without_tma = scales_async(p.sfb, p.L) ? kScaleCpAsync : kScaleSync;
    g.sf_mode = scales_bulk(p.sfb, p.K, p.L) ? kScaleBulk : scales_tma(p.sfb, p.L) ? kScaleTma : g.sf_mode_without_tma;
  }
  // Scale staging where the GEMM would otherwise load scales without TMA and the workspace
  // has room (the workspace query asks for it): one small copy instead of a 2.5-6x slower
  // GEMM (kernel/scale_stage.cuh). The fused kernel loads both operands' scales in one mode.
  if (g.sf_mode != kScaleBulk && g.sf_mode != kScaleTma) {
    const bool fused = g.path == GemmPath::kFused;
    const size_t wb = !scales_tma(p.sfb, p.L) ? staged_sf_bytes(p.N, p.K, p.L) : 0;
    const size_t xb = fused && !scales_tma(p.sfa, p.L) ? staged_sf_bytes(p.M, p.K, p.L) : 0;
    const size_t at = g.workspace_bytes;
    if (take_staging(workspace, wb + xb, &g.workspace_bytes, &g.sf_mode, &g.sf_mode_without_tma)) {
      g.stage_w = wb > 0;
      g.stage_x = xb > 0;
      g.stage_w_offset = at;
      g.stage_x_offset = at + wb;
    }
  }
  if (g.path == GemmPath::kStreamK) {
    g.grid[0] = static_cast<uint32_t>((g.tiles * g.num_kb + g.sk_units - 1) / g.sk_units);
    g.grid[1] = g.grid[2] = 1;
  } else if (g.path == GemmPath::kPersistent) {
    const TailChoice tail = choose_tail(g.tile_x == kTileXWide ? dev.predecoded_wide_clusters : dev.predecoded_clusters,
                                        g.tiles, g.num_kb, dev.sm_count);
    g.tail_tiles = tail.tiles;
    g.tail_splits = tail.splits;
    g.grid[0] = static_cast<uint32_t>(dev.sm_count);
    g.grid[1] = g.grid[2] = 1;
  } else {
    g.grid[0] = static_cast<uint32_t>(g.tiles_w * g.splits);
    g.grid[1] = static_cast<uint32_t>(g.tiles_x);
    g.grid[2] = static_cast<uint32_t>(p.L);
  }
  return g;
}

}  // namespace nvfp4::sm90
