// sm90a packed MoE GEMM: rows [offsets[g], offsets[g+1]) of A (tokens, all experts in
// one matrix) times expert g's weights B[g]^T, offsets and alphas on the device, no host
// synchronisation. Tiled route (two launches):
//   1. the tokens of every expert are decoded once into an fp16 workspace by the GEMM's
//      token pass (kernel/token_predecode.cuh; it does not need the offsets: one total_M x K
//      matrix);
//   2. nvfp4_sm90_moe_kernel (kernel/grouped_packed_gemm.cuh): the grouped GEMM's persistent
//      walk (kernel/grouped_walk.cuh, the list API's kernel body) over every expert's
//      128 x 128 tiles, min(SMs, bound) CTAs; each warp finds its tiles from the device
//      offsets (a forward cursor over windows of 32 experts), so the host plans only the
//      bound of tiles (packed_plan.hpp). No split-K: every tile runs the whole K.
// A table that is not non-decreasing within [0, total_M] is clamped per expert (no access
// leaves the operands; tiles past the bound are not computed).
// Kept in its own translation unit: ptxas's schedule of gemm.cu's kernels moves with any
// kernel added there (bench/NOTES.md "stream-K tail for the persistent kernel").
//
// Decode route (few rows per expert: packed_plan.hpp packed_decode_route): instead of the two
// kernels above, one launch of the decode-regime kernel with the experts as the batch
// (gemv/decode_kernel.cuh gemm_decode_moe_kernel, plan gemv/decode_moe_plan.hpp):
// no token pass, no workspace; each CTA finds its chunk of <= 16 token rows of one
// expert from the device offsets after griddepcontrol.wait, so empty experts' weights are
// never read. Same clamping of a malformed table; the linear scales the packed API takes.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>

#include "../common/cuda_check.hpp"
#include "gemm_parts.hpp"
#include "packed_plan.hpp"
#include "gemv/decode_kernel.cuh"
#include "gemv/kernel_info.hpp"
#include "kernel/grouped_packed_gemm.cuh"
#include "launch.hpp"
#include "launchers.hpp"
#include "tma.hpp"

namespace nvfp4::sm90 {

namespace {

using MainloopPre = MainloopRSPredecoded;
constexpr size_t kSmemBytes = dynamic_smem_bytes<MainloopPre::SharedStorage>();
static_assert(MainloopPre::kBlockW == kTileW && MainloopPre::kBlockX == kTileX && MainloopPre::kBlockK == kBlockK,
              "gemm_schedule.hpp's tile is the kernel's tile");

// Why grouped_gemm_packed(p) leaves p to the next backend (nullptr: it runs p); launches
// nothing. The plan, the weights' tensor maps and their scale-load mode are set on the way.
const char* packed_refusal(const PackedGroupedGemmProblem& p, const Exec& exec, PackedPlan* plan,
                           CUtensorMap* tmap_w, CUtensorMap* tmap_sfw) {
  if (exec.cc_major != 9 || exec.cc_minor != 0) return "sm90a grouped gemm packed: needs a CC 9.0 device";
  *plan = plan_packed(p);
  if (plan->unsupported != nullptr || plan->empty) return plan->unsupported;
  if (!encode_fp4_map(tmap_w, p.b, p.N, p.K, p.G)) return "sm90a grouped gemm packed: TMA cannot take the weights";
  *tmap_sfw = *tmap_w;  // placeholder unless kScaleTma (staged scales: encoded once the workspace is known)
  if (plan->sf_mode == kScaleTma && !plan->stage_w && !encode_linear_sf_map(tmap_sfw, p.sfb, p.N, p.K, p.G))
    plan->sf_mode = plan->sf_mode_without_tma;
  return nullptr;
}

// ---- decode route ----
using DecodeMoeKernelFn = void (*)(const gemv_detail::DecodeMoeArgs);
DecodeMoeKernelFn decode_moe_kernel(int nt8) {  // (decode_moe_nt8: 1, 2 or 4 token groups)
  return nt8 == 1   ? gemv_detail::gemm_decode_moe_kernel<1, false>
         : nt8 == 2 ? gemv_detail::gemm_decode_moe_kernel<2, false>
                    : gemv_detail::gemm_decode_moe_kernel<4, false>;
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
  MmaKernelInfo info;  // (kernel_info.hpp: queried once per device and instance)
  const void* kernel = reinterpret_cast<const void*>(decode_moe_kernel(nt8));
  const nvfp4_status_t st = decode_kernel_info(exec.device, kernel, &info);
  if (st != NVFP4_SUCCESS) return st;
  *dl = decode_moe_launch(info, p, sm_count, exec.device, kernel);
  // (the MoE instances have full stages only: decode_plan.hpp; the plan never picks others)
  *take = dl->unsupported == nullptr && dl->nt8 == nt8 && dl->launch.sc == kMmaSC;
  return NVFP4_SUCCESS;
}

nvfp4_status_t launch_decode_route(const PackedGroupedGemmProblem& p, const gemv_detail::DecodeMoeLaunch& dl,
                                   const Exec& exec) {
  using namespace gemv_detail;
  DecodeMoeArgs args = make_decode_moe_args(p);
  const LaunchShape ls = decode_launch_shape(dl.launch, &args.d);
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
  CUtensorMap tmap_w, tmap_sfw;
  if (const char* why = packed_refusal(p, exec, &plan, &tmap_w, &tmap_sfw))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s", why);
  if (plan.empty) return NVFP4_SUCCESS;
  if (exec.workspace == nullptr || exec.workspace_bytes < plan.workspace_bytes || !is_aligned(exec.workspace, 256))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a grouped gemm packed: needs a %zu-byte workspace (256-byte aligned)",
                plan.workspace_bytes);

  // the weights' scales as the GEMM reads them: staged into the workspace where the plan says so
  const StageRequest stage{p.sfb, p.N, p.K, static_cast<uint8_t*>(exec.workspace) + plan.stage_offset};
  ScaleOperand sfw = p.sfb;
  if (plan.stage_w) {
    sfw = stage.staged();
    if (!encode_linear_sf_map(&tmap_sfw, sfw, p.N, p.K, p.G)) plan.sf_mode = plan.sf_mode_without_tma;
  }

  int sm_count = exec.sm_count;
  if (sm_count <= 0) NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, exec.device));

  PackedGemmParams kp{};
  kp.w = tmap_w;
  kp.sfw = tmap_sfw;
  GemmParams& b = kp.base;
  b.M = p.total_M;  // per tile: M_g (the kernel)
  b.N = p.N;
  b.K = p.K;
  b.L = 1;
  b.num_kb = plan.num_kb;
  b.splits = 1;
  b.sf_blocked = 0;
  b.sf_mode = plan.sf_mode;
  b.x_box_rows = plan.x_box_rows;
  b.sf_w = ScaleSrc{sfw.data, sfw.row_stride, sfw.batch_stride, p.N};
  b.sf_x = ScaleSrc{p.sfa.data, p.sfa.row_stride, 0, p.total_M};
  b.alpha = 1.0f;
  b.alpha_ptr = nullptr;
  b.c = p.c.data;
  b.c_dtype = static_cast<int32_t>(p.c.dtype);
  b.c_vec4 = plan.c_vec4;
  b.c_row_stride = p.c.row_stride;
  b.c_col_stride = p.c.col_stride;
  b.c_batch_stride = 0;
  kp.offsets = p.offsets;
  kp.alphas = p.alphas;
  kp.tiles = plan.tiles;
  kp.total_M = p.total_M;
  kp.G = p.G;
  kp.tiles_w = static_cast<int32_t>(plan.tiles_w);

  static SmemOptInDone smem_opt_in;
  nvfp4_status_t st =
      opt_in_smem(smem_opt_in, exec.device, {{reinterpret_cast<const void*>(nvfp4_sm90_moe_kernel), kSmemBytes}});
  if (st != NVFP4_SUCCESS) return st;

  if (!encode_token_map(&kp.xh, exec.workspace, offset_ws_rows(p.total_M, plan.x_box_rows),
                        static_cast<int64_t>(plan.num_kb) * kBlockK, 1, static_cast<uint32_t>(plan.x_box_rows)))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a grouped gemm packed: cuTensorMapEncodeTiled rejected the workspace");
  if (plan.stage_w) {
    st = launch_scale_stage(&stage, 1, p.G, exec);  // in front of the pass, which waits for it
    if (st != NVFP4_SUCCESS) return st;
  }
  st = launch_token_predecode(p.a, p.sfa, p.total_M, p.K, 1, exec.workspace, exec);
  if (st != NVFP4_SUCCESS) return st;

  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(packed_grid(plan, sm_count)), 1, 1);
  shape.block = dim3(MainloopPre::kThreads, 1, 1);
  shape.smem = kSmemBytes;
  shape.pdl = true;
  return launch(nvfp4_sm90_moe_kernel, shape, cuda_stream(exec), kp);
}

}  // namespace nvfp4::sm90
