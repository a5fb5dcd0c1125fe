// sm90a packed MoE GEMM: rows [offsets[g], offsets[g+1]) of A (tokens, all experts in
// one matrix) times expert g's weights B[g]^T, offsets and alphas on the device, no host
// synchronisation. One launch over all experts' tiles:
//   1. the tokens of every expert are decoded once into an fp16 workspace by the GEMM's
//      token pass (kernel/token_predecode.cuh; it does not need the offsets: one total_M x K
//      matrix);
//   2. one CTA per (weight tile, token-tile slot): the experts' 128-row token tiles are
//      numbered in expert order; a CTA finds its expert and tile from the offsets (warp 0
//      scans them 32 experts at a time) and computes it as the pre-decoded GEMM computes
//      a tile (kernel/predecoded_tile.cuh: its mainloop and lone-CTA epilogue) on
//      expert g's weights (batch g of the weight tensor maps) and token rows m_begin +
//      x0.., storing rows < M_g only. The grid has the upper bound of slots,
//      ceil((total_M + G * 127) / 128); CTAs past the last tile exit at once.
// No split-K (every CTA runs the whole K): the MoE shapes give several hundred tiles.
//
// Offsets and the token tiles: the CTA reads the offsets before griddepcontrol.wait.
// That is safe for the same reason as the weight loads of the pre-decoded GEMM
// (collective/mainloop_rs_predecoded.cuh): this kernel is a programmatic dependent of the pass,
// which triggers only after its own griddepcontrol.wait, i.e. once every earlier grid
// (which may have written the offsets) has completed.
//
// A table that is not non-decreasing within [0, total_M] is clamped like the portable
// kernel's (begin, end clamped to [0, total_M], end >= begin): no access leaves the
// operands; rows may then be skipped (tiles beyond the slot bound are not computed).
// Kept in its own translation unit: ptxas's schedule of gemm.cu's kernels moves with any
// kernel added there (bench/NOTES.md "stream-K tail for the persistent kernel").
//
// Decode route (few rows per expert: gemm_plan.hpp packed_decode_route): instead of the two
// kernels above, one launch of the decode-regime kernel with the experts as the batch
// (gemv/decode_kernel.cuh gemm_decode_moe_kernel, plan gemv/decode_plan.hpp "Packed MoE
// route"): no token pass, no workspace; each CTA finds its chunk of <= 16 token rows of one
// expert from the device offsets after griddepcontrol.wait, so empty experts' weights are
// never read. Same clamping of a malformed table; the linear scales the packed API takes.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>

#include "../common/cuda_check.hpp"
#include "../common/device_cache.hpp"
#include "collective/epilogue_cluster_reduce.cuh"
#include "collective/mainloop_rs_predecoded.cuh"
#include "gemm_parts.hpp"
#include "gemm_plan.hpp"
#include "gemv/decode_kernel.cuh"
#include "gemv/kernel_info.hpp"
#include "kernel/gemm_params.cuh"
#include "kernel/predecoded_tile.cuh"
#include "launch.hpp"
#include "launchers.hpp"
#include "tma.hpp"

namespace nvfp4::sm90 {

namespace {

using MainloopPre = MainloopRSPredecoded;
using Epilogue = EpilogueClusterReduce;
constexpr size_t kSmemBytes = dynamic_smem_bytes<MainloopPre::SharedStorage>();
static_assert(Epilogue::kSmemBytes <= sizeof(MainloopPre::Stage) * MainloopPre::kStages,
              "the epilogue tile reuses the stage ring");
static_assert(MainloopPre::kBlockW == kTileW && MainloopPre::kBlockX == kTileX && MainloopPre::kBlockK == kBlockK,
              "gemm_plan.hpp's tile is the kernel's tile");

struct MoeArgs {
  const int32_t* offsets;  // G + 1
  const float* alphas;     // G, or null (1)
  int32_t G;
  int64_t total_M;
};

struct MoeTile {
  int32_t g;        // expert
  int32_t found;    // 0: no tile for this slot
  int64_t m_begin;  // first token row of the expert
  int64_t rows;     // M_g
  int64_t x0;       // first row of the tile inside the expert
};

// Warp 0: the expert and tile of token-tile slot j; lane `src` writes *out.
__device__ __forceinline__ void find_tile(const MoeArgs& m, int64_t j, MoeTile* out) {
  const int lane = threadIdx.x & 31;
  int64_t start = 0;  // tiles of the experts before this group of 32
  for (int32_t base = 0; base < m.G; base += 32) {
    const int32_t g = base + lane;
    int64_t b = 0, e = 0;
    if (g < m.G) {
      b = m.offsets[g];
      e = m.offsets[g + 1];
      b = b < 0 ? 0 : (b > m.total_M ? m.total_M : b);
      e = e < b ? b : (e > m.total_M ? m.total_M : e);
    }
    const int64_t n = (e - b + 127) / 128;
    int64_t inc = n;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int64_t v = __shfl_up_sync(0xFFFFFFFFu, inc, d);
      if (lane >= d) inc += v;
    }
    const int64_t first = start + inc - n;
    const bool mine = n > 0 && j >= first && j < start + inc;
    const unsigned hit = __ballot_sync(0xFFFFFFFFu, mine);
    if (hit != 0) {
      if (lane == __ffs(hit) - 1) {
        out->g = g;
        out->found = 1;
        out->m_begin = b;
        out->rows = e - b;
        out->x0 = (j - first) * 128;
      }
      return;
    }
    start += __shfl_sync(0xFFFFFFFFu, inc, 31);
  }
  if (lane == 0) out->found = 0;
}

__global__ void __launch_bounds__(MainloopPre::kThreads, 1)
    nvfp4_sm90_moe_kernel(const __grid_constant__ CUtensorMap tmap_w, const __grid_constant__ CUtensorMap tmap_xh,
                          const __grid_constant__ CUtensorMap tmap_sfw, const GemmParams p, const MoeArgs moe) {
  extern __shared__ uint8_t smem_raw[];
  const uintptr_t base = (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~static_cast<uintptr_t>(1023);
  MainloopPre::SharedStorage& s = *reinterpret_cast<MainloopPre::SharedStorage*>(base);
  __shared__ MoeTile tile_info;

  if (threadIdx.x < 32) find_tile(moe, blockIdx.y, &tile_info);
  if (threadIdx.x == 0) {
    MainloopPre::init_barriers(s, p);
    ptx::tma_prefetch_desc(&tmap_w);
    ptx::tma_prefetch_desc(&tmap_xh);
  }
  __syncthreads();
  const MoeTile t = tile_info;
  if (!t.found) return;  // (uniform over the CTA)

  // This expert's problem: M_g rows, C from row m_begin, alpha from the expert's slot.
  GemmParams q = p;
  q.M = t.rows;
  q.c = static_cast<uint8_t*>(p.c) + t.m_begin * p.c_row_stride * (p.c_dtype == static_cast<int32_t>(DType::kFloat32) ? 4 : 2);
  q.alpha = 1.0f;
  q.alpha_ptr = moe.alphas != nullptr ? moe.alphas + t.g : nullptr;
  const int64_t w0 = static_cast<int64_t>(blockIdx.x) * MainloopPre::kBlockW;

  const MainloopPre::TmaDescs tm{&tmap_w, &tmap_xh, &tmap_sfw};
  predecoded_tile(s, tm, q, PredecodedTileOrigin{w0, t.x0, t.m_begin + t.x0, t.g, 0, 0, 0, q.num_kb, 1, 0});
}

// Why grouped_gemm_packed(p) leaves p to the next backend (nullptr: it runs p); launches
// nothing. The plan, the weights' tensor maps and their scale-load mode are set on the way.
const char* packed_refusal(const PackedGroupedGemmProblem& p, const Exec& exec, PackedPlan* plan,
                           CUtensorMap* tmap_w, CUtensorMap* tmap_sfw) {
  if (exec.cc_major != 9 || exec.cc_minor != 0) return "sm90a grouped gemm packed: needs a CC 9.0 device";
  *plan = plan_packed(p);
  if (plan->unsupported != nullptr || plan->empty) return plan->unsupported;
  if (!encode_fp4_map(tmap_w, p.b, p.N, p.K, p.G)) return "sm90a grouped gemm packed: TMA cannot take the weights";
  *tmap_sfw = *tmap_w;  // placeholder unless kScaleTma
  if (plan->sf_mode == kScaleTma && !encode_linear_sf_map(tmap_sfw, p.sfb, p.N, p.K, p.G))
    plan->sf_mode = plan->sf_mode_without_tma;
  return nullptr;
}

// ---- decode route ----
using DecodeMoeKernelFn = void (*)(const gemv_detail::DecodeMoeArgs);
DecodeMoeKernelFn decode_moe_kernel(int nt8) {
  return nt8 == 1 ? gemv_detail::gemm_decode_moe_kernel<1, false> : gemv_detail::gemm_decode_moe_kernel<2, false>;
}

// The decode route's launch on this device (take = false: the tiled kernel runs p). The
// workspace query and the run decide alike (the same problem, the same cached kernel facts).
nvfp4_status_t moe_decode_route(const PackedGroupedGemmProblem& p, const Exec& exec, gemv_detail::DecodeMoeLaunch* dl,
                                bool* take) {
  using namespace gemv_detail;
  *take = false;
  if (exec.cc_major != 9 || exec.cc_minor != 0 || !packed_decode_route(p)) return NVFP4_SUCCESS;
  int sm_count = exec.sm_count;
  if (sm_count <= 0) NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, exec.device));
  const int nt8 = decode_moe_nt8(p.total_M, p.G);
  static PerDeviceCache<MmaKernelInfo> cache[2];
  MmaKernelInfo info;
  const DecodeMoeKernelFn kernel = decode_moe_kernel(nt8);
  const nvfp4_status_t st = cache[nt8 - 1].get(exec.device, [&exec, kernel](MmaKernelInfo& v) {
    return query_kernel_info(exec.device, reinterpret_cast<const void*>(kernel), v);
  }, &info);
  if (st != NVFP4_SUCCESS) return st;
  *dl = decode_moe_launch(info, p, sm_count);
  *take = dl->unsupported == nullptr && dl->nt8 == nt8;
  return NVFP4_SUCCESS;
}

nvfp4_status_t launch_decode_route(const PackedGroupedGemmProblem& p, const gemv_detail::DecodeMoeLaunch& dl,
                                   const Exec& exec) {
  using namespace gemv_detail;
  DecodeMoeArgs args = make_decode_moe_args(p);
  args.d.tile_cap = dl.launch.tile_cap;
  args.d.cluster_k = dl.launch.kc;
  args.d.stages_per_cta = dl.launch.stages_per_cta;
  args.d.groups_per_batch = dl.launch.groups_per_batch;
  LaunchShape ls;
  ls.grid = dim3(static_cast<unsigned>(dl.launch.ctas), 1, 1);
  ls.block = dim3(static_cast<unsigned>(32 * dl.launch.warps), 1, 1);
  ls.smem = dl.launch.smem_launch;
  ls.cluster_x = dl.launch.kc > 1 ? static_cast<unsigned>(dl.launch.kc) : 0u;
  ls.pdl = args.d.pdl != 0;
  return launch(decode_moe_kernel(dl.nt8), ls, cuda_stream(exec), args);
}

}  // namespace

size_t grouped_gemm_packed_workspace(const PackedGroupedGemmProblem& p, const Exec& exec) {
  gemv_detail::DecodeMoeLaunch dl;
  bool decode = false;
  if (moe_decode_route(p, exec, &dl, &decode) == NVFP4_SUCCESS && decode) return 0;  // no token workspace
  PackedPlan plan;
  CUtensorMap w, sfw;
  if (packed_refusal(p, exec, &plan, &w, &sfw) != nullptr) return 0;  // the next backend runs it: no scratch
  return plan.empty ? 0 : plan.workspace_bytes;
}

nvfp4_status_t grouped_gemm_packed(const PackedGroupedGemmProblem& p, const Exec& exec) {
  {
    gemv_detail::DecodeMoeLaunch dl;
    bool decode = false;
    const nvfp4_status_t st = moe_decode_route(p, exec, &dl, &decode);
    if (st != NVFP4_SUCCESS) return st;
    if (decode) return launch_decode_route(p, dl, exec);
  }
  PackedPlan plan;
  CUtensorMap tmap_w, tmap_sfw, tmap_xh;
  if (const char* why = packed_refusal(p, exec, &plan, &tmap_w, &tmap_sfw))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s", why);
  if (plan.empty) return NVFP4_SUCCESS;
  if (exec.workspace == nullptr || exec.workspace_bytes < plan.workspace_bytes || !is_aligned(exec.workspace, 256))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a grouped gemm packed: needs a %zu-byte workspace (256-byte aligned)",
                plan.workspace_bytes);

  GemmParams kp{};
  kp.M = p.total_M;  // per CTA: M_g (the kernel)
  kp.N = p.N;
  kp.K = p.K;
  kp.L = 1;
  kp.num_kb = plan.num_kb;
  kp.splits = 1;
  kp.sf_blocked = 0;
  kp.sf_mode = plan.sf_mode;
  kp.x_box_rows = plan.x_box_rows;
  kp.sf_w = ScaleSrc{p.sfb.data, p.sfb.row_stride, p.sfb.batch_stride, p.N};
  kp.sf_x = ScaleSrc{p.sfa.data, p.sfa.row_stride, 0, p.total_M};
  kp.alpha = 1.0f;
  kp.alpha_ptr = nullptr;
  kp.c = p.c.data;
  kp.c_dtype = static_cast<int32_t>(p.c.dtype);
  kp.c_vec4 = plan.c_vec4;
  kp.c_row_stride = p.c.row_stride;
  kp.c_col_stride = p.c.col_stride;
  kp.c_batch_stride = 0;

  static SmemOptInDone smem_opt_in;
  nvfp4_status_t st =
      opt_in_smem(smem_opt_in, exec.device, {{reinterpret_cast<const void*>(nvfp4_sm90_moe_kernel), kSmemBytes}});
  if (st != NVFP4_SUCCESS) return st;

  if (!encode_token_map(&tmap_xh, exec.workspace, p.total_M, static_cast<int64_t>(plan.num_kb) * kBlockK, 1,
                        static_cast<uint32_t>(plan.x_box_rows)))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a grouped gemm packed: cuTensorMapEncodeTiled rejected the workspace");
  st = launch_token_predecode(p.a, p.sfa, p.total_M, p.K, 1, exec.workspace, exec);
  if (st != NVFP4_SUCCESS) return st;

  MoeArgs moe;
  moe.offsets = p.offsets;
  moe.alphas = p.alphas;
  moe.G = p.G;
  moe.total_M = p.total_M;
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(plan.tiles_w), static_cast<unsigned>(plan.slots), 1);
  shape.block = dim3(MainloopPre::kThreads, 1, 1);
  shape.smem = kSmemBytes;
  shape.pdl = true;
  return launch(nvfp4_sm90_moe_kernel, shape, cuda_stream(exec), tmap_w, tmap_xh, tmap_sfw, kp, moe);
}

}  // namespace nvfp4::sm90
