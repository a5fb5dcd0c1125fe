// sm90a (Hopper) NVFP4 GEMM launcher: C[l] = alpha * A[l] * B[l]^T, computed exactly on
// fp16 tensor cores (docs/design.md "Numerics", "Backends").
//
// gemm_plan.hpp decides, from the problem and device numbers, which kernel runs:
//   - 2..16 tokens on >= 4096 weight rows (17..32 on >= 7168, or >= 4096 at K >= 1536), aligned operands: the decode-regime kernel
//     (gemm_decode.cu);
//   - one or two tokens otherwise: one GEMV per token over the weights (gemv.cu);
//   - fused (kernel/gemm_fused.cuh): every CTA decodes its token tile; split-K over a
//     cluster; the instance without accumulator promotion where every CTA's K slice is short;
//   - pre-decoded (kernel/gemm_predecoded.cuh), when the CTAs' K slices would need promotion
//     (K >= 1024) or the fused tiles outnumber the SMs, and the caller gave the token workspace: the token pass
//     (kernel/token_predecode.cuh) decodes the tokens once into fp16, the GEMM decodes only
//     the weights; where every tile has one CTA and tiles outnumber SMs, its persistent form
//     (kernel/gemm_persistent.cuh), whose partial last round, where it is at most half the
//     SMs, runs after the whole rounds as a split-K tail kernel (gemm_schedule.hpp choose_tail;
//     e.g. 640 x 7168 x 7168: 2 rounds + 16 tiles over clusters of 8, -14% against a third
//     round). Both in two token-tile widths: 128, and 136 where that
//     needs fewer tiles for less work (gemm_schedule.hpp choose_token_tile: e.g. M = 129..136
//     in one tile instead of two); the split-K kernel also at 32, 64 and 96 tokens for M <= 32 / 64 / 96.
// Where B has few rows and A many, the roles swap (gemm_plan.hpp swap_roles: Cᵀ = B·Aᵀ).
// Scales that no TMA box can read (K % 256 != 0 in the linear layout, K % 128 != 0 blocked)
// are first staged into the workspace (kernel/scale_stage.cuh, scale_stage.cu).
// This file encodes the tensor maps (tma.hpp), fills the kernel parameters, and launches
// (launch.hpp): the token pass and the pre-decoded GEMM as programmatic dependents (PDL),
// the fused GEMM too. The kernels of this translation unit stay together: ptxas's schedule
// of a kernel can move with edits elsewhere in the unit (bench/NOTES.md "stream-K tail for
// the persistent kernel"), so adding a kernel here needs a SASS comparison of the others.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "../backends.hpp"
#include "../common/cuda_check.hpp"
#include "../problem.hpp"
#include "gemm_parts.hpp"
#include "gemm_plan.hpp"
#include "kernel/gemm_fused.cuh"
#include "kernel/gemm_predecoded.cuh"
#include "kernel/gemm_persistent.cuh"
#include "kernel/gemm_streamk.cuh"
#include "kernel/token_predecode.cuh"
#include "launch.hpp"
#include "launchers.hpp"
#include "tma.hpp"

namespace nvfp4::sm90 {

namespace {

using Mainloop = MainloopRS;
using MainloopPre = MainloopRSPredecodedT<kTileX>;
using MainloopPreWide = MainloopRSPredecodedT<kTileXWide>;

static_assert(Mainloop::kBlockW == kTileW && Mainloop::kBlockX == kTileX && Mainloop::kBlockK == kBlockK &&
                  MainloopPre::kBlockW == kTileW && MainloopPre::kBlockX == kTileX && MainloopPre::kBlockK == kBlockK,
              "gemm_schedule.hpp's tile is the kernels' tile");
static_assert(kTileX == kTokenTile && kTileXWide == kTokenTileWide && MainloopPreWide::kBlockW == kTileW &&
                  MainloopPreWide::kBlockX == kTileXWide && MainloopPreWide::kBlockK == kBlockK,
              "gemm_schedule.hpp's wide tile is the wide kernels' tile");
// The split-only tiles (gemm_schedule.hpp kTileXSplit), smallest first.
template <int i>
using MainloopPreSplit = MainloopRSPredecodedT<kTileXSplit[i]>;
template <int i>
constexpr bool split_tile_matches() {
  using M = MainloopPreSplit<i>;
  return M::kBlockW == kTileW && M::kBlockX == kTileXSplit[i] && M::kBlockK == kBlockK &&
         M::kThreads == MainloopPre::kThreads && M::kStages == kPredecodedSplitStages[i];
}
static_assert(kSplitTiles == 3 && kTileXSplit[0] == kTokenTileTiny && kTileXSplit[1] == kTokenTileSmall &&
                  kTileXSplit[2] == kTokenTileMid && split_tile_matches<0>() && split_tile_matches<1>() &&
                  split_tile_matches<2>(),
              "gemm_schedule.hpp's split-only tiles are the kernels' tiles");
static_assert(Mainloop::kStages == kFusedStages && MainloopPre::kStages == kPredecodedStages &&
                  MainloopPreWide::kStages == kPredecodedStages,
              "ring stages");
static_assert(Mainloop::kPackedRow == kFp4BoxBytes && Mainloop::kSfTmaCols == kSfBoxCols, "TMA boxes (tma.cu)");

constexpr size_t kSmemFused = dynamic_smem_bytes<Mainloop::SharedStorage>();
constexpr size_t kSmemPre = dynamic_smem_bytes<MainloopPre::SharedStorage>();
constexpr size_t kSmemPreWide = dynamic_smem_bytes<MainloopPreWide::SharedStorage>();
// The split-only tiles run only as the split-K kernel (gemm_schedule.hpp choose_token_tile).
constexpr size_t kSmemPreSplit[kSplitTiles] = {dynamic_smem_bytes<MainloopPreSplit<0>::SharedStorage>(),
                                               dynamic_smem_bytes<MainloopPreSplit<1>::SharedStorage>(),
                                               dynamic_smem_bytes<MainloopPreSplit<2>::SharedStorage>()};
constexpr decltype(&nvfp4_sm90_gemm_predecoded_kernel<kTileX>) kPredecodedSplit[kSplitTiles] = {
    nvfp4_sm90_gemm_predecoded_kernel<kTileXSplit[0]>, nvfp4_sm90_gemm_predecoded_kernel<kTileXSplit[1]>,
    nvfp4_sm90_gemm_predecoded_kernel<kTileXSplit[2]>};

// The pre-decoded kernels of one token-tile width.
struct PredecodedKernels {
  const void* tiled;       // kernel/gemm_predecoded.cuh
  const void* persistent;  // kernel/gemm_persistent.cuh
  size_t smem;
};
template <int kTileXT>
PredecodedKernels predecoded_kernels() {
  return {reinterpret_cast<const void*>(nvfp4_sm90_gemm_predecoded_kernel<kTileXT>),
          reinterpret_cast<const void*>(nvfp4_sm90_gemm_persistent_kernel<kTileXT>),
          dynamic_smem_bytes<typename MainloopRSPredecodedT<kTileXT>::SharedStorage>()};
}

using FusedKernelFn = void (*)(CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap, GemmParams);
constexpr FusedKernelFn kFusedPromoted = nvfp4_sm90_gemm_kernel<AccumulatorPromotion::kBlocks>;
constexpr FusedKernelFn kFusedShortChain = nvfp4_sm90_gemm_kernel<0>;

// ---- device numbers of the plan ----------------------------------------------------------

enum ClusterKernel {
  kClusterFused = 0,
  kClusterPredecoded = 1,
  kClusterPredecodedWide = 2,
  kClusterPredecodedSplit = 3,  // + the index in kTileXSplit
  kClusterKernels = kClusterPredecodedSplit + kSplitTiles
};

// Clusters of `splits` CTAs of that kernel that can be resident at once (cached per
// device; a failed query counts as "no limit"). The kernels' shared-memory limits must be
// raised first (opt_in_gemm_smem).
int cluster_capacity(ClusterKernel kernel_id, int splits, int device) {
  static std::atomic<int> cache[kClusterKernels][kMaxSplits + 1][16];  // 0 = not queried yet, else value + 1
  const bool cacheable = device >= 0 && device < 16;
  if (cacheable) {
    const int v = cache[kernel_id][splits][device].load(std::memory_order_relaxed);
    if (v > 0) return v - 1;
  }
  const bool fused = kernel_id == kClusterFused;
  // (both fused instances have the same threads, shared memory and register cap)
  PredecodedKernels pre =
      kernel_id == kClusterPredecodedWide ? predecoded_kernels<kTileXWide>() : predecoded_kernels<kTileX>();
  if (kernel_id >= kClusterPredecodedSplit) {
    const int i = kernel_id - kClusterPredecodedSplit;
    pre = {reinterpret_cast<const void*>(kPredecodedSplit[i]), nullptr, kSmemPreSplit[i]};
  }
  const void* kernel = fused ? reinterpret_cast<const void*>(kFusedPromoted) : pre.tiled;
  const int n = max_active_clusters(kernel, static_cast<unsigned>(fused ? Mainloop::kThreads : MainloopPre::kThreads),
                                    fused ? kSmemFused : pre.smem, splits);
  if (cacheable) cache[kernel_id][splits][device].store(n + 1, std::memory_order_relaxed);
  return n;
}

nvfp4_status_t opt_in_gemm_smem(int device) {
  static SmemOptInDone done;
  return opt_in_smem(done, device,
                     {{reinterpret_cast<const void*>(kFusedPromoted), kSmemFused},
                      {reinterpret_cast<const void*>(kFusedShortChain), kSmemFused},
                      {predecoded_kernels<kTileX>().tiled, kSmemPre},
                      {predecoded_kernels<kTileX>().persistent, kSmemPre},
                      {predecoded_kernels<kTileXWide>().tiled, kSmemPreWide},
                      {predecoded_kernels<kTileXWide>().persistent, kSmemPreWide},
                      {reinterpret_cast<const void*>(kPredecodedSplit[0]), kSmemPreSplit[0]},
                      {reinterpret_cast<const void*>(kPredecodedSplit[1]), kSmemPreSplit[1]},
                      {reinterpret_cast<const void*>(kPredecodedSplit[2]), kSmemPreSplit[2]},
                      {reinterpret_cast<const void*>(nvfp4_sm90_gemm_tail_kernel<kTileX>), kSmemPre},
                      {reinterpret_cast<const void*>(nvfp4_sm90_gemm_tail_kernel<kTileXWide>), kSmemPreWide},
                      {reinterpret_cast<const void*>(nvfp4_sm90_gemm_streamk_kernel<kTileX>), kSmemPre},
                      {reinterpret_cast<const void*>(nvfp4_sm90_gemm_streamk_kernel<kTileXWide>), kSmemPreWide}});
}

nvfp4_status_t device_numbers(const Exec& exec, GemmDeviceNumbers* d) {
  d->sm_count = exec.sm_count;
  if (d->sm_count <= 0)
    NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&d->sm_count, cudaDevAttrMultiProcessorCount, exec.device));
  const nvfp4_status_t st = opt_in_gemm_smem(exec.device);
  if (st != NVFP4_SUCCESS) return st;
  for (int s = 0; s <= kMaxSplits; ++s) {
    d->fused_clusters[s] = s < 2 ? kNoClusterLimit : cluster_capacity(kClusterFused, s, exec.device);
    d->predecoded_clusters[s] = s < 2 ? kNoClusterLimit : cluster_capacity(kClusterPredecoded, s, exec.device);
    d->predecoded_wide_clusters[s] =
        s < 2 ? kNoClusterLimit : cluster_capacity(kClusterPredecodedWide, s, exec.device);
    for (int i = 0; i < kSplitTiles; ++i)
      d->predecoded_split_clusters[i][s] =
          s < 2 ? kNoClusterLimit
                : cluster_capacity(static_cast<ClusterKernel>(kClusterPredecodedSplit + i), s, exec.device);
  }
  return NVFP4_SUCCESS;
}

// Bytes of exec's workspace the pre-decoded path may use (it wants 256-byte alignment).
size_t usable_workspace(const Exec& exec) {
  return exec.workspace != nullptr && is_aligned(exec.workspace, 256) ? exec.workspace_bytes : 0;
}

// ---- checks ------------------------------------------------------------------------------

// Why gemm(p) leaves p to the next backend (nullptr: it runs p); launches nothing. With
// `w` / `x` (tiled paths) the operands' tensor maps are encoded there.
const char* gemm_refusal(const GemmProblem& p, const Exec& exec, CUtensorMap* w, CUtensorMap* x) {
  if (exec.cc_major != 9 || exec.cc_minor != 0) return "sm90a gemm: needs a CC 9.0 device";
  if (const char* why = gemm_unsupported(p)) return why;
  if (p.M <= 0 || p.N <= 0 || p.L <= 0 || p.M <= kGemvMaxTokens || decode_route(p)) return nullptr;
  CUtensorMap scratch_w, scratch_x;
  if (!encode_fp4_map(w ? w : &scratch_w, p.b, p.N, p.K, p.L) ||
      !encode_fp4_map(x ? x : &scratch_x, p.a, p.M, p.K, p.L, static_cast<uint32_t>(token_box_rows(p.M))))
    return "sm90a gemm: cuTensorMapEncodeTiled unavailable or rejected the operands";
  return nullptr;
}

// The workspace of an accepted problem: the token workspace where the plan, given enough
// workspace, takes a pre-decoded path, plus the staged scales where it stages them; 0 where
// it runs the fused kernel on directly readable scales or the GEMV route.
size_t accepted_gemm_workspace(const GemmProblem& p, const Exec& exec) {
  if (p.M <= kGemvMaxTokens || decode_route(p) || p.N <= 0 || p.L <= 0) return 0;
  GemmDeviceNumbers dev;
  if (device_numbers(exec, &dev) != NVFP4_SUCCESS) return 0;  // (gemm() then fails the same way)
  return plan_gemm(p, dev, SIZE_MAX).workspace_bytes;
}

// ---- launch ------------------------------------------------------------------------------

// Token m of p as a GEMV over the weights: out[l, n] = sum_k b[l, n, k] a[l, m, k], row m's
// scales as a one-row operand (scales_from_row).
GemmProblem token_gemv(const GemmProblem& p, int64_t m) {
  GemmProblem g = p;
  g.M = p.N;
  g.N = 1;
  g.a = p.b;
  g.sfa = p.sfb;
  g.b = fp4_from_row(p.a, m);
  g.sfb = scales_from_row(p.sfa, m, p.K);
  const int64_t esize = p.c.dtype == DType::kFloat32 ? 4 : 2;
  g.c.data = static_cast<uint8_t*>(p.c.data) + m * p.c.row_stride * esize;
  g.c.row_stride = p.c.col_stride;  // out[l, n] = c[l, m, n]
  g.c.col_stride = 1;               // (one column)
  return g;
}

GemmParams gemm_params(const GemmProblem& p, const GemmPlan& plan) {
  return gemm_params_of(p, plan.num_kb, plan.splits, plan.sf_mode, plan.x_box_rows, plan.tiles_w, plan.tiles_x,
                        plan.c_vec4);
}

// tokens_decoded: the workspace already holds p's tokens pre-decoded (gemm_same_tokens).
nvfp4_status_t run_gemm(const GemmProblem& p, const Exec& exec, bool tokens_decoded) {
  CUtensorMap tmap_w, tmap_x;
  if (const char* why = gemm_refusal(p, exec, &tmap_w, &tmap_x)) return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s", why);
  if (p.M <= 0 || p.N <= 0 || p.L <= 0) return NVFP4_SUCCESS;
  if (decode_route(p)) return gemm_decode(p, exec);
  if (p.M <= kGemvMaxTokens) {
    for (int64_t m = 0; m < p.M; ++m) {
      const nvfp4_status_t st = gemv(token_gemv(p, m), exec);
      if (st != NVFP4_SUCCESS) return st;  // the checks are the same for every token: only the first can refuse
    }
    return NVFP4_SUCCESS;
  }
  GemmDeviceNumbers dev;
  nvfp4_status_t st = device_numbers(exec, &dev);
  if (st != NVFP4_SUCCESS) return st;
  const GemmPlan plan = plan_gemm(p, dev, usable_workspace(exec));
  const int split_i = split_tile_index(plan.tile_x);
  if ((split_i >= 0 && plan.path != GemmPath::kPredecoded) ||
      (plan.path != GemmPath::kFused && plan.x_box_rows > plan.tile_x))  // (the kernels' smem tile holds the box)
    return fail(NVFP4_ERROR_INTERNAL, "sm90a gemm: a %d-token tile planned on a path without its kernel or box",
                plan.tile_x);
  // q: p with the GEMM's scales, staged into the workspace where the plan says so (the
  // token pass reads p's)
  GemmProblem q = p;
  if (plan.stage_w || plan.stage_x) {
    uint8_t* ws = static_cast<uint8_t*>(exec.workspace);
    StageRequest req[2];
    int n = 0;
    if (plan.stage_w) {
      req[n] = StageRequest{p.sfb, p.N, p.K, ws + plan.stage_w_offset};
      q.sfb = req[n++].staged();
    }
    if (plan.stage_x) {
      req[n] = StageRequest{p.sfa, p.M, p.K, ws + plan.stage_x_offset};
      q.sfa = req[n++].staged();
    }
    st = launch_scale_stage(req, n, p.L, exec);
    if (st != NVFP4_SUCCESS) return st;
  }
  GemmParams kp = gemm_params(q, plan);
  // kScaleTma maps: the weights' for every tiled path, the tokens' for the fused kernel only
  // (the pre-decoded paths read pre-decoded tokens; their pass reads the token scales itself)
  const bool fused = plan.path == GemmPath::kFused;
  CUtensorMap tmap_sfw = tmap_w, tmap_sfx = tmap_x;  // placeholders unless kScaleTma
  if (plan.sf_mode == kScaleTma &&
      !(encode_linear_sf_map(&tmap_sfw, q.sfb, p.N, p.K, p.L) &&
        (!fused || encode_linear_sf_map(&tmap_sfx, q.sfa, p.M, p.K, p.L, static_cast<uint32_t>(plan.x_box_rows)))))
    kp.sf_mode = plan.sf_mode_without_tma;

  LaunchShape shape;
  shape.grid = dim3(plan.grid[0], plan.grid[1], plan.grid[2]);
  shape.cluster_x = static_cast<unsigned>(plan.splits);
  shape.pdl = true;
  const cudaStream_t stream = cuda_stream(exec);
  if (fused) {
    shape.block = dim3(Mainloop::kThreads, 1, 1);
    shape.smem = kSmemFused;
    return launch(plan.short_chain ? kFusedShortChain : kFusedPromoted, shape, stream, tmap_w, tmap_x, tmap_sfw,
                  tmap_sfx, kp);
  }
  // pre-decoded paths
  CUtensorMap tmap_xh;
  if (!encode_token_map(&tmap_xh, exec.workspace, p.M, static_cast<int64_t>(plan.num_kb) * kBlockK, p.L,
                        static_cast<uint32_t>(plan.x_box_rows)))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemm: cuTensorMapEncodeTiled rejected the workspace");
  const bool streamk = plan.path == GemmPath::kStreamK;
  uint8_t* const ws = static_cast<uint8_t*>(exec.workspace);
  const int64_t sk_flag_words = streamk ? static_cast<int64_t>(plan.grid[0]) : 0;
  uint32_t* const sk_flags = streamk ? reinterpret_cast<uint32_t*>(ws + plan.sk_flags_offset) : nullptr;
  if (tokens_decoded) {
    // No pass in front: plain stream order behind the GEMM that decoded them (its
    // programmatic launch would let this one load weights before the grids in front of
    // that GEMM had completed). Stream-K's flags are zeroed here instead of by the pass.
    shape.pdl = false;
    if (streamk) NVFP4_CUDA_TRY(cudaMemsetAsync(sk_flags, 0, static_cast<size_t>(sk_flag_words) * 4, stream));
  } else {
    st = launch_token_predecode(p.a, p.sfa, p.M, p.K, p.L, exec.workspace, exec, sk_flags, sk_flag_words);
    if (st != NVFP4_SUCCESS) return st;
  }
  static_assert(MainloopPre::kThreads == MainloopPreWide::kThreads, "one block shape");
  shape.block = dim3(MainloopPre::kThreads, 1, 1);
  const bool wide = plan.tile_x == kTileXWide;
  shape.smem = wide ? kSmemPreWide : kSmemPre;
  if (split_i >= 0) {  // (split-K only: checked before anything was launched)
    shape.smem = kSmemPreSplit[split_i];
    return launch(kPredecodedSplit[split_i], shape, stream, tmap_w, tmap_xh, tmap_sfw, kp);
  }
  if (streamk) {
    const StreamKParams sk{reinterpret_cast<float*>(ws + plan.sk_partials_offset), sk_flags,
                           static_cast<int32_t>(plan.sk_units), static_cast<int32_t>(plan.tiles * plan.num_kb)};
    return launch(wide ? nvfp4_sm90_gemm_streamk_kernel<kTileXWide> : nvfp4_sm90_gemm_streamk_kernel<kTileX>, shape,
                  stream, tmap_w, tmap_xh, tmap_sfw, kp, sk);
  }
  if (plan.path != GemmPath::kPersistent)
    return launch(wide ? nvfp4_sm90_gemm_predecoded_kernel<kTileXWide> : nvfp4_sm90_gemm_predecoded_kernel<kTileX>,
                  shape, stream, tmap_w, tmap_xh, tmap_sfw, kp);
  // persistent: the whole rounds, then the tail (if any) split over clusters
  const int64_t rounds_tiles = plan.tiles - plan.tail_tiles;
  st = launch(wide ? nvfp4_sm90_gemm_persistent_kernel<kTileXWide> : nvfp4_sm90_gemm_persistent_kernel<kTileX>,
              shape, stream, tmap_w, tmap_xh, tmap_sfw, kp, rounds_tiles);
  if (st != NVFP4_SUCCESS || plan.tail_tiles == 0) return st;
  GemmParams tp = kp;
  tp.splits = plan.tail_splits;
  LaunchShape tail = shape;
  tail.grid = dim3(static_cast<unsigned>(plan.tail_tiles * plan.tail_splits), 1, 1);
  tail.cluster_x = static_cast<unsigned>(plan.tail_splits);
  tail.pdl = true;
  return launch(wide ? nvfp4_sm90_gemm_tail_kernel<kTileXWide> : nvfp4_sm90_gemm_tail_kernel<kTileX>, tail, stream,
                tmap_w, tmap_xh, tmap_sfw, tp, rounds_tiles);
}

// Pass parameters for one fp4 operand (rows x K, L batches) -> fp16 [L][token_ws_rows(rows)][kpad] at out.
XPredecodeParams predecode_params(const Fp4Operand& a, const ScaleOperand& sf, int64_t rows, int64_t K, int64_t L,
                                  int32_t num_kb, void* out, int64_t kpad) {
  XPredecodeParams xp{};
  xp.a = a.data;
  xp.a_row_stride = a.row_stride;
  xp.a_batch_stride = a.batch_stride;
  xp.sf = sf.data;
  xp.sf_row_stride = sf.row_stride;
  xp.sf_batch_stride = sf.batch_stride;
  xp.sf_blocked = sf.layout == NVFP4_SF_BLOCKED ? 1 : 0;
  xp.sf_words = xp.sf_blocked && is_aligned(sf.data, 4) && (L == 1 || sf.batch_stride % 4 == 0) ? 1 : 0;
  xp.M = rows;
  xp.K = K;
  xp.L = static_cast<int32_t>(L);
  xp.num_kb = num_kb;
  xp.out = static_cast<uint16_t*>(out);
  xp.out_row_stride = kpad;
  xp.out_batch_stride = token_ws_rows(rows) * kpad;
  return xp;
}

}  // namespace

nvfp4_status_t launch_token_predecode(const Fp4Operand& a, const ScaleOperand& sfa, int64_t rows, int64_t K,
                                      int64_t L, void* ws, const Exec& exec, uint32_t* zero, int64_t zero_words) {
  const int32_t num_kb = k_blocks(K);
  XPredecodeParams xp = predecode_params(a, sfa, rows, K, L, num_kb, ws, static_cast<int64_t>(num_kb) * kBlockK);
  xp.zero = zero;
  xp.zero_words = zero_words;
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(rows), static_cast<unsigned>(predecode_pieces(num_kb)),
                    static_cast<unsigned>(L));
  shape.block = dim3(kPredecodeThreads, 1, 1);
  shape.pdl = true;
  return launch(nvfp4_sm90_x_predecode_kernel, shape, cuda_stream(exec), xp);
}

nvfp4_status_t gemm_supported(const GemmProblem& p0, const Exec& exec, size_t* workspace) {
  const GemmProblem p = gemm_roles(p0);
  if (workspace != nullptr) *workspace = 0;
  if (const char* why = gemm_refusal(p, exec, nullptr, nullptr)) return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s", why);
  if (workspace != nullptr) *workspace = accepted_gemm_workspace(p, exec);
  return NVFP4_SUCCESS;
}

// Scratch of the pre-decoded paths (the fp16 token workspace) and of staged scales, exactly
// where gemm() would take them given it; 0 where another backend, or the fused kernel on
// directly readable scales, runs the problem. Nothing in it needs to be zeroed.
size_t gemm_workspace(const GemmProblem& p0, const Exec& exec) {
  const GemmProblem p = gemm_roles(p0);
  if (gemm_refusal(p, exec, nullptr, nullptr) != nullptr) return 0;  // the next backend runs it: no scratch
  return accepted_gemm_workspace(p, exec);
}

// Both run gemm_roles(p) (B's few rows as the tokens where swap_roles). A swapped problem's
// "tokens" are B, not the A the caller shares, so gemm_same_tokens decodes them itself.
nvfp4_status_t gemm(const GemmProblem& p, const Exec& exec) { return run_gemm(gemm_roles(p), exec, false); }
nvfp4_status_t gemm_same_tokens(const GemmProblem& p, const Exec& exec) {
  return swap_roles(p) ? run_gemm(swapped_roles(p), exec, false) : run_gemm(p, exec, true);
}

}  // namespace nvfp4::sm90
