// sm90a grouped GEMM (G independent problems given as a host array, any M_g, N_g, K_g):
// one token pass + one persistent GEMM launch per kGroupedMaxGroups groups
// (kernel/grouped_gemm.cuh; plan: grouped_plan.hpp). Host work per group: the table entry
// (plain stores) and one or two cuTensorMapEncodeTiled (60-76 ns each): no per-group launch,
// query or attribute call, no host synchronisation, no host->device copy.
//
// Where the one-launch kernel does not take a chunk of groups (alignment of a group's fp4
// operands, mixed scale layouts, a token workspace over 1 GiB or not given: grouped_plan.hpp
// sets `fallback`), every group of the call runs as one sm90a GEMM (two launches per group, in
// group order on the caller's stream, sharing one workspace: the largest any group needs; each
// GEMM waits for the grid before it before touching memory, PDL included).
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "../common/cuda_check.hpp"
#include "../common/device_cache.hpp"
#include "gemm_parts.hpp"
#include "grouped_plan.hpp"
#include "kernel/grouped_gemm.cuh"
#include "launch.hpp"
#include "launchers.hpp"
#include "tma.hpp"

namespace nvfp4::sm90 {

namespace {

using MainloopPre = MainloopRSPredecoded;
constexpr size_t kSmem = dynamic_smem_bytes<MainloopPre::SharedStorage>();
static_assert(kScaleStageMaxOps >= kGroupedMaxGroups, "one staging launch per chunk");
static_assert(MainloopPre::kBlockW == kTileW && MainloopPre::kBlockX == kTileX && MainloopPre::kBlockK == kBlockK,
              "gemm_schedule.hpp's tile is the kernel's tile");
constexpr auto kPersistent = nvfp4_sm90_grouped_gemm_kernel<false>;
constexpr auto kSplit = nvfp4_sm90_grouped_gemm_kernel<true>;

// ---- the per-group loop (the fallback) ------------------------------------------------------

// NOT_SUPPORTED (nothing launched) when any group's GEMM would refuse; `workspace` (if
// given): the largest group's gemm_workspace.
nvfp4_status_t check_groups(const GroupedGemmProblem& p, const Exec& exec, size_t* workspace = nullptr) {
  if (workspace != nullptr) *workspace = 0;
  for (int32_t i = 0; i < p.count; ++i) {
    size_t bytes = 0;
    const nvfp4_status_t st = gemm_supported(p.groups[i], exec, workspace != nullptr ? &bytes : nullptr);
    if (st != NVFP4_SUCCESS) return st;
    if (workspace != nullptr && bytes > *workspace) *workspace = bytes;
  }
  return NVFP4_SUCCESS;
}

nvfp4_status_t run_loop(const GroupedGemmProblem& p, const Exec& exec) {
  const nvfp4_status_t supported = check_groups(p, exec);
  if (supported != NVFP4_SUCCESS) return supported;
  for (int32_t i = 0; i < p.count; ++i) {
    const nvfp4_status_t st = gemm(p.groups[i], exec);
    if (st != NVFP4_SUCCESS) return st;
  }
  return NVFP4_SUCCESS;
}

// ---- the one-launch kernel --------------------------------------------------------------------

// SM count, the kernels' shared-memory opt-in and the split kernel's cluster capacities, once
// per device.
PerDeviceCache<GroupedDeviceNumbers> g_device_numbers;
nvfp4_status_t device_numbers(const Exec& exec, GroupedDeviceNumbers* out) {
  return g_device_numbers.get(exec.device, [&](GroupedDeviceNumbers& d) -> nvfp4_status_t {
    d.sm_count = exec.sm_count;
    if (d.sm_count <= 0)
      NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&d.sm_count, cudaDevAttrMultiProcessorCount, exec.device));
    NVFP4_CUDA_TRY(cudaFuncSetAttribute(reinterpret_cast<const void*>(kPersistent),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem)));
    NVFP4_CUDA_TRY(cudaFuncSetAttribute(reinterpret_cast<const void*>(kSplit),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem)));
    for (int s = 0; s <= kMaxSplits; ++s)
      d.clusters[s] = s < 2 ? kNoClusterLimit
                            : max_active_clusters(reinterpret_cast<const void*>(kSplit), MainloopPre::kThreads, kSmem, s);
    return NVFP4_SUCCESS;
  }, out);
}

size_t usable_workspace(const Exec& exec) {
  return exec.workspace != nullptr && is_aligned(exec.workspace, 256) ? exec.workspace_bytes : 0;
}

// Whether every chunk of kGroupedMaxGroups groups runs on the one-launch kernel with
// `workspace` bytes, and the largest token workspace of a chunk. `plan`: scratch.
bool kernel_takes(const GroupedGemmProblem& p, const GroupedDeviceNumbers& dev, size_t workspace, GroupedPlan* plan,
                  size_t* bytes) {
  *bytes = 0;
  for (int32_t first = 0; first < p.count; first += kGroupedMaxGroups) {
    const int32_t n = p.count - first < kGroupedMaxGroups ? p.count - first : kGroupedMaxGroups;
    plan_grouped(p.groups, first, n, dev, workspace, plan);
    if (plan->fallback != nullptr) return false;
    if (plan->workspace_bytes > *bytes) *bytes = plan->workspace_bytes;
  }
  return true;
}

// The launch pair of one planned chunk. `kp`, `pp`: the parameter blocks to fill (only
// plan.count groups' entries and maps are written; a launch copies its parameters).
nvfp4_status_t launch_chunk(const GroupedGemmProblem& p, const GroupedPlan& plan, const Exec& exec,
                            GroupedParams* kp, GroupedPassParams* pp) {
  if (plan.count == 0) return NVFP4_SUCCESS;
  GemmParams& b = kp->base;
  b = GemmParams{};
  b.L = 1;
  b.splits = plan.splits;
  b.sf_blocked = plan.stage_w ? 0 : plan.sf_blocked;  // staged copies are linear (the pass keeps A's layout)
  b.sf_mode = plan.sf_mode;
  b.x_box_rows = plan.x_box_rows;
  kp->tiles = plan.tiles;
  kp->count = plan.count;
  pp->ws = static_cast<uint16_t*>(exec.workspace);
  pp->kpad = plan.kpad;
  pp->count = plan.count;
  pp->sf_blocked = plan.sf_blocked;
  static thread_local StageRequest stage[kGroupedMaxGroups];
  for (int32_t i = 0; i < plan.count; ++i) {
    const GroupedEntry& e = plan.entry[i];
    kp->g[i] = e;
    pp->g[i] = plan.pass[i];
    const GemmProblem& g = p.groups[e.problem];
    if (!encode_fp4_map(&kp->w[i], g.b, g.N, g.K, 1))
      return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a grouped gemm: cuTensorMapEncodeTiled rejected group %d's weights",
                  e.problem);
    ScaleOperand sfb = g.sfb;  // the weights' scales as the GEMM reads them (staged where planned)
    if (plan.stage_w) {
      stage[i] = StageRequest{g.sfb, g.N, g.K, static_cast<uint8_t*>(exec.workspace) + plan.stage_offset[i]};
      sfb = stage[i].staged();
      kp->g[i].sfb = sfb.data;
      kp->g[i].sfb_row_stride = sfb.row_stride;
    }
    if (b.sf_mode == kScaleTma && !encode_linear_sf_map(&kp->sfw[i], sfb, g.N, g.K, 1))
      b.sf_mode = plan.sf_mode_without_tma;  // (the maps encoded so far are then unused)
  }
  if (!encode_token_map(&kp->xh, exec.workspace, offset_ws_rows(plan.rows, plan.x_box_rows), plan.kpad, 1,
                        static_cast<uint32_t>(plan.x_box_rows)))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a grouped gemm: cuTensorMapEncodeTiled rejected the workspace");

  const cudaStream_t stream = cuda_stream(exec);
  if (plan.stage_w) {
    const nvfp4_status_t st = launch_scale_stage(stage, plan.count, 1, exec);  // the pass waits for it
    if (st != NVFP4_SUCCESS) return st;
  }
  LaunchShape pass;
  pass.grid = dim3(static_cast<unsigned>(plan.rows), static_cast<unsigned>(plan.max_pieces), 1);
  pass.block = dim3(kPredecodeThreads, 1, 1);
  pass.pdl = true;
  nvfp4_status_t st = launch_params(nvfp4_sm90_grouped_token_pass_kernel, pass, stream, pp);
  if (st != NVFP4_SUCCESS) return st;
  LaunchShape gemm_shape;
  gemm_shape.grid = dim3(plan.grid, 1, 1);
  gemm_shape.block = dim3(MainloopPre::kThreads, 1, 1);
  gemm_shape.smem = kSmem;
  gemm_shape.pdl = true;
  if (plan.splits > 1) {
    gemm_shape.cluster_x = static_cast<unsigned>(plan.splits);
    return launch_params(kSplit, gemm_shape, stream, kp);
  }
  return launch_params(kPersistent, gemm_shape, stream, kp);
}

}  // namespace

size_t grouped_gemm_workspace(const GroupedGemmProblem& p, const Exec& exec) {
  if (exec.cc_major != 9 || exec.cc_minor != 0) return 0;
  GroupedDeviceNumbers dev;
  if (device_numbers(exec, &dev) != NVFP4_SUCCESS) return 0;
  static thread_local GroupedPlan plan;  // (11 KB: see grouped_gemm)
  size_t bytes = 0;
  if (tensor_maps_available() && kernel_takes(p, dev, SIZE_MAX, &plan, &bytes)) return bytes;
  if (check_groups(p, exec, &bytes) != NVFP4_SUCCESS) return 0;  // the portable loop runs it: no scratch
  return bytes;
}

nvfp4_status_t grouped_gemm(const GroupedGemmProblem& p, const Exec& exec) {
  if (exec.cc_major != 9 || exec.cc_minor != 0)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a grouped gemm: needs a CC 9.0 device");
  GroupedDeviceNumbers dev;
  nvfp4_status_t st = device_numbers(exec, &dev);
  if (st != NVFP4_SUCCESS) return st;
  const size_t workspace = usable_workspace(exec);
  // The plan (11 KB) and the kernel parameters (27.5 KB) per thread, not on the caller's stack
  // (XLA's and other runtimes' threads may have small ones).
  static thread_local GroupedPlan plan;
  static thread_local GroupedParams kp;
  static thread_local GroupedPassParams pp;
  if (!tensor_maps_available()) return run_loop(p, exec);  // (which then refuses)
  if (p.count > kGroupedMaxGroups) {
    // Every chunk must take the kernel before the first one launches (a refusal may not
    // follow a write); each is planned again right before its launch.
    size_t bytes = 0;
    if (!kernel_takes(p, dev, workspace, &plan, &bytes)) return run_loop(p, exec);
  }
  for (int32_t first = 0; first < p.count; first += kGroupedMaxGroups) {
    const int32_t n = p.count - first < kGroupedMaxGroups ? p.count - first : kGroupedMaxGroups;
    plan_grouped(p.groups, first, n, dev, workspace, &plan);
    if (plan.fallback != nullptr) return run_loop(p, exec);  // (only the first chunk gets here)
    st = launch_chunk(p, plan, exec, &kp, &pp);
    if (st != NVFP4_SUCCESS) return st;
  }
  return NVFP4_SUCCESS;
}

}  // namespace nvfp4::sm90
