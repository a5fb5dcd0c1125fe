// sm100a grouped NVFP4 GEMM: one persistent launch over the tiles of all groups,
// CUTLASS's pointer-array block-scaled kernel (example 75's configuration:
// GroupProblemShape, KernelPtrArrayTmaWarpSpecialized1SmNvf4Sm100; the kernel
// rewrites its TMA descriptors per group on the device).
//
// The kernel reads per-group tables (problem shapes, pointers, strides, scale
// layouts, alpha pointers) from device memory. They are written into the caller's
// workspace by small kernels of ours, so nothing is copied from the host:
//   list API   - the group descriptors travel as kernel parameters (chunks of 64);
//   packed MoE - one block reads the device offsets, computes M_g and the prefix of
//                the swizzled-scale tiles, and fills the tables (no host sync).
// Epilogue: Store16Node (alpha of the tile's group, fp16 or bf16 bits).
// Linear scales (and blocked ones whose K % 64 != 0, plan.hpp) are copied to the
// blocked layout in the workspace first.
#include "gemm_cutlass.cuh"
#include "launchers.hpp"
#include "scale_map.hpp"

#include <cutlass/gemm/group_array_problem_shape.hpp>

#include <vector>

namespace nvfp4::sm100 {
namespace {

using GroupShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
using MmaTile = cute::Shape<cute::_128, cute::_128, cute::_256>;
using Cluster = cute::Shape<cute::_1, cute::_1, cute::_1>;

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp, MmaTile, Cluster,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    void, cutlass::layout::RowMajor*, 8,
    uint16_t, cutlass::layout::RowMajor*, 8,  // fp16 or bf16 bits (Store16Node)
    cutlass::epilogue::PtrArrayTmaWarpSpecialized1Sm, Store16Callbacks>::CollectiveOp;

using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp,
    ElementFp4, cutlass::layout::RowMajor*, kFp4Alignment,
    ElementFp4, cutlass::layout::ColumnMajor*, kFp4Alignment,
    float, MmaTile, Cluster,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    cutlass::gemm::KernelPtrArrayTmaWarpSpecialized1SmNvf4Sm100>::CollectiveOp;

using Kernel = cutlass::gemm::kernel::GemmUniversal<GroupShape, Mainloop, Epilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

using ProblemMNK = typename GroupShape::UnderlyingProblemShape;
using StrideA = typename Kernel::InternalStrideA;
using StrideB = typename Kernel::InternalStrideB;
using StrideD = typename Kernel::InternalStrideD;
using LayoutSFA = typename Mainloop::InternalLayoutSFA;
using LayoutSFB = typename Mainloop::InternalLayoutSFB;
using ScaleConfig = typename Mainloop::Sm1xxBlkScaledConfig;
using ElementA = typename Gemm::ElementA;
using ElementB = typename Gemm::ElementB;
using ElementSF = typename Mainloop::ElementSF;
using ElementD = uint16_t;

static_assert(cute::is_same_v<StrideA, cute::Stride<int64_t, cute::Int<1>, cute::Int<0>>>, "A K-major");
static_assert(cute::is_same_v<StrideB, cute::Stride<int64_t, cute::Int<1>, cute::Int<0>>>, "B K-major");
static_assert(cute::is_same_v<StrideD, cute::Stride<int64_t, cute::Int<1>, cute::Int<0>>>, "D row-major");
static_assert(cute::is_same_v<LayoutSFA, ScaleLayout> && cute::is_same_v<LayoutSFB, ScaleLayout>, "scale layouts");

constexpr int kThreads = 128;

// The tables, typed.
struct Tables {
  ProblemMNK* shapes;
  const ElementA** ptr_a;
  const ElementB** ptr_b;
  const ElementSF** ptr_sfa;
  const ElementSF** ptr_sfb;
  ElementD** ptr_d;
  StrideA* stride_a;
  StrideB* stride_b;
  StrideD* stride_d;
  LayoutSFA* layout_sfa;
  LayoutSFB* layout_sfb;
  float* alpha;
  const float** alpha_ptr;
};
Tables typed(const GroupTables& t) {
  return Tables{static_cast<ProblemMNK*>(t.problem_shapes), static_cast<const ElementA**>(t.ptr_a),
                static_cast<const ElementB**>(t.ptr_b),     static_cast<const ElementSF**>(t.ptr_sfa),
                static_cast<const ElementSF**>(t.ptr_sfb),  static_cast<ElementD**>(t.ptr_d),
                static_cast<StrideA*>(t.stride_a),          static_cast<StrideB*>(t.stride_b),
                static_cast<StrideD*>(t.stride_d),          static_cast<LayoutSFA*>(t.layout_sfa),
                static_cast<LayoutSFB*>(t.layout_sfb),      static_cast<float*>(t.alpha),
                static_cast<const float**>(t.alpha_ptr)};
}

// One group's entries. Strides in elements: fp4 2 per byte, D in halves.
__device__ void write_group(const Tables& t, int g, int M, int N, int K, const uint8_t* a, int64_t a_row,
                            const uint8_t* b, int64_t b_row, const uint8_t* sfa, const uint8_t* sfb, uint8_t* d,
                            int64_t d_row, float alpha) {
  using cute::Int;
  t.shapes[g] = ProblemMNK{M, N, K};
  t.ptr_a[g] = reinterpret_cast<const ElementA*>(a);
  t.ptr_b[g] = reinterpret_cast<const ElementB*>(b);
  t.ptr_sfa[g] = reinterpret_cast<const ElementSF*>(sfa);
  t.ptr_sfb[g] = reinterpret_cast<const ElementSF*>(sfb);
  t.ptr_d[g] = reinterpret_cast<ElementD*>(d);
  t.stride_a[g] = cute::make_stride(a_row * 2, Int<1>{}, Int<0>{});
  t.stride_b[g] = cute::make_stride(b_row * 2, Int<1>{}, Int<0>{});
  t.stride_d[g] = cute::make_stride(d_row, Int<1>{}, Int<0>{});
  t.layout_sfa[g] = scale_layout_a(M, N, K, 1, 0);
  t.layout_sfb[g] = scale_layout_b(M, N, K, 1, 0);
  t.alpha[g] = alpha;
  t.alpha_ptr[g] = t.alpha + g;
}

// ---------------------------------------------------------------------------
// List API: descriptors as kernel parameters
// ---------------------------------------------------------------------------
struct GroupDesc {
  int M, N, K;
  float alpha;
  const uint8_t* a;
  const uint8_t* b;
  const uint8_t* sfa;  // blocked (caller's or swizzled copy)
  const uint8_t* sfb;
  uint8_t* d;
  const float* alpha_ptr;
  int64_t a_row, b_row, d_row;  // bytes, bytes, elements
};
constexpr int kChunk = 64;
struct GroupChunk {
  int first = 0, count = 0;
  GroupDesc g[kChunk];
};

__global__ void __launch_bounds__(kThreads) fill_list_tables(const __grid_constant__ GroupChunk chunk, Tables t) {
  const int i = threadIdx.x;
  if (i >= chunk.count) return;
  const GroupDesc& d = chunk.g[i];
  const float alpha = d.alpha_ptr ? *d.alpha_ptr : d.alpha;
  write_group(t, chunk.first + i, d.M, d.N, d.K, d.a, d.a_row, d.b, d.b_row, d.sfa, d.sfb, d.d, d.d_row, alpha);
}

// ---------------------------------------------------------------------------
// Packed (MoE) API
// ---------------------------------------------------------------------------
struct PackedParams {
  const int32_t* offsets;
  const float* alphas;
  int32_t G;
  int64_t total_M, N, K;
  const uint8_t* a;
  int64_t a_row;
  const uint8_t* b;
  int64_t b_row, b_batch;
  uint8_t* c;
  int64_t c_row;         // elements
  int32_t* tile_base;    // [G+1]
  uint8_t* sfa;          // swizzled, tile_base-indexed
  uint8_t* sfb;          // (G, blocked(N, K))
  int64_t sfb_batch;     // blocked_sf_bytes(N, K)
  int64_t tiles_k;
};

// One block: thread 0 walks the groups once for the tile prefix (G is small: the
// number of experts), then all threads fill the tables (scale layouts included:
// the same CUTLASS layout function as the dense path, scale_layout.hpp).
__global__ void __launch_bounds__(kThreads) fill_packed_tables(const __grid_constant__ PackedParams p, Tables t) {
  if (threadIdx.x == 0) packed_tile_prefix(p.offsets, p.G, p.total_M, p.tiles_k, p.tile_base);
  __syncthreads();
  for (int32_t g = threadIdx.x; g < p.G; g += blockDim.x) {
    const int32_t start = clamped_offset(p.offsets, g, p.total_M);
    const int32_t rows = group_rows(p.offsets, g, p.total_M);
    const float alpha = p.alphas ? p.alphas[g] : 1.0f;
    write_group(t, g, rows, static_cast<int>(p.N), static_cast<int>(p.K), p.a + start * p.a_row, p.a_row,
                p.b + g * p.b_batch, p.b_row, p.sfa + static_cast<int64_t>(p.tile_base[g]) * 512,
                p.sfb + g * p.sfb_batch, p.c + start * p.c_row * 2, p.c_row, alpha);
  }
}

// Linear packed sfa -> per-group blocked tensors at tile_base[g] (after fill_packed_tables).
__global__ void __launch_bounds__(256) swizzle_packed_sfa(ScaleSource src, const int32_t* offsets,
                                                          const int32_t* tile_base, int32_t G, int64_t total_M,
                                                          int64_t K, uint32_t* dst, int64_t words_bound) {
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x; w < words_bound;
       w += static_cast<int64_t>(gridDim.x) * 256) {
    uint32_t v;
    if (!packed_sfa_word(src, offsets, tile_base, G, total_M, K, w, &v)) return;  // past the last tile
    dst[w] = v;
  }
}

// ---------------------------------------------------------------------------
// CUTLASS arguments
// ---------------------------------------------------------------------------
typename Gemm::Arguments make_arguments(int groups, const Tables& t, int out_bf16, int device, int sm_count) {
  typename Gemm::Arguments args;
  args.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  args.problem_shape = GroupShape{groups, t.shapes, nullptr};  // shapes live on the device only
  args.mainloop.ptr_A = t.ptr_a;
  args.mainloop.dA = t.stride_a;
  args.mainloop.ptr_B = t.ptr_b;
  args.mainloop.dB = t.stride_b;
  args.mainloop.ptr_SFA = t.ptr_sfa;
  args.mainloop.layout_SFA = t.layout_sfa;
  args.mainloop.ptr_SFB = t.ptr_sfb;
  args.mainloop.layout_SFB = t.layout_sfb;
  Store16Args node;
  node.alpha_ptr_array = t.alpha_ptr;  // one alpha per group (the tile's L coordinate)
  node.out_bf16 = out_bf16;
  args.epilogue.thread = {{}, node};
  args.epilogue.ptr_C = nullptr;
  args.epilogue.dC = t.stride_d;  // C is void (never read); a valid table anyway
  args.epilogue.ptr_D = t.ptr_d;
  args.epilogue.dD = t.stride_d;
  args.hw_info.device_id = device;
  args.hw_info.sm_count = sm_count;
  return args;
}

nvfp4_status_t run_gemm(const Tables& t, int groups, int out_bf16, const Exec& exec, void* cutlass_ws,
                        const char* what) {
  return run_cutlass_gemm<Gemm>(make_arguments(groups, t, out_bf16, exec.device, exec.sm_count), cutlass_ws,
                                cuda_stream(exec), what);
}

const char* check_gemm(int groups, int device, int sm_count) {
  const Tables none{};
  if (Gemm::can_implement(make_arguments(groups, none, 0, device, sm_count)) != cutlass::Status::kSuccess)
    return "CUTLASS can_implement rejected the grouped problem";
  return nullptr;
}

size_t required_or_zero(size_t required, const char* why) { return why ? 0 : required; }

}  // namespace

GroupTableSizes group_table_sizes() {
  return GroupTableSizes{sizeof(ProblemMNK), sizeof(StrideA),   sizeof(StrideB),
                         sizeof(StrideD),    sizeof(LayoutSFA), sizeof(LayoutSFB)};
}

size_t grouped_cutlass_workspace(int groups, int sm_count, int device) {
  return Gemm::get_workspace_size(make_arguments(groups, Tables{}, 0, device, sm_count));
}

// ---------------------------------------------------------------------------
// List API
// ---------------------------------------------------------------------------
namespace {
const char* grouped_unsupported(const GroupedGemmProblem& p) {
  for (int32_t g = 0; g < p.count; ++g)
    if (const char* why = group_unsupported(p.groups[g])) return why;
  for (int32_t g = 1; g < p.count; ++g) {
    if (p.groups[g].sfa.layout != p.groups[0].sfa.layout) return "mixed scale layouts";
    if (p.groups[g].c.dtype != p.groups[0].c.dtype) return "groups with different output dtypes";
  }
  return nullptr;
}
}  // namespace

size_t grouped_gemm_workspace(const GroupedGemmProblem& p, const Exec& exec) {
  const char* why = grouped_unsupported(p);
  const size_t cutlass_ws = why ? 0 : grouped_cutlass_workspace(p.count, exec.sm_count, exec.device);
  return required_or_zero(carve_grouped_workspace(nullptr, p, group_table_sizes(), cutlass_ws).required, why);
}

nvfp4_status_t grouped_gemm(const GroupedGemmProblem& p, const Exec& exec) {
  if (const char* why = grouped_unsupported(p)) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a grouped gemm: %s", why);
  const size_t cutlass_ws = grouped_cutlass_workspace(p.count, exec.sm_count, exec.device);
  const GroupedWorkspace w = carve_grouped_workspace(exec.workspace, p, group_table_sizes(), cutlass_ws);
  if (!exec.workspace || exec.workspace_bytes < w.required)
    return fail(NVFP4_ERROR_NOT_SUPPORTED,
                "sm100a grouped gemm: needs a workspace of %zu bytes (got %zu); see grouped_workspace_size",
                w.required, exec.workspace ? exec.workspace_bytes : size_t(0));
  if (const char* why = check_gemm(p.count, exec.device, exec.sm_count))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a grouped gemm: %s", why);

  const cudaStream_t stream = cuda_stream(exec);
  const Tables t = typed(w.tables);
  uint8_t* scales = static_cast<uint8_t*>(w.scales);
  SwizzleBatch jobs;
  GroupChunk chunk;
  for (int32_t g = 0; g < p.count; ++g) {
    const GemmProblem& q = p.groups[g];
    GroupDesc& d = chunk.g[chunk.count++];
    d.M = static_cast<int>(q.M);
    d.N = static_cast<int>(q.N);
    d.K = static_cast<int>(q.K);
    d.alpha = q.alpha.value;
    d.alpha_ptr = q.alpha.device_ptr;
    d.a = q.a.data;
    d.b = q.b.data;
    d.d = static_cast<uint8_t*>(q.c.data);
    d.a_row = q.a.row_stride;
    d.b_row = q.b.row_stride;
    d.d_row = q.c.row_stride;
    if (scales_copied(q.sfa.layout, q.K)) {
      // the same region arithmetic as grouped_scale_bytes()
      uint8_t* sfa = scales;
      uint8_t* sfb = scales + align_up(blocked_bytes(q.M, q.K), kRegionAlign);
      scales += grouped_scale_bytes(q);
      d.sfa = sfa;
      d.sfb = sfb;
      SwizzleJob& ja = jobs.jobs[jobs.count++];
      ja.dst = sfa; ja.rows = q.M; ja.K = q.K; ja.L = 1;
      ja.src[0] = ScaleSource{q.sfa.data, q.sfa.layout, q.sfa.row_stride, 0};
      SwizzleJob& jb = jobs.jobs[jobs.count++];
      jb.dst = sfb; jb.rows = q.N; jb.K = q.K; jb.L = 1;
      jb.src[0] = ScaleSource{q.sfb.data, q.sfb.layout, q.sfb.row_stride, 0};
      if (jobs.count + 2 > kMaxSwizzleJobs) {
        const nvfp4_status_t st = launch_swizzle(jobs, stream);
        if (st != NVFP4_SUCCESS) return st;
        jobs.count = 0;
      }
    } else {
      d.sfa = q.sfa.data;
      d.sfb = q.sfb.data;
    }
    if (chunk.count == kChunk || g + 1 == p.count) {
      fill_list_tables<<<1, kThreads, 0, stream>>>(chunk, t);
      NVFP4_CHECK_LAUNCH();
      chunk.first = g + 1;
      chunk.count = 0;
    }
  }
  const nvfp4_status_t st = launch_swizzle(jobs, stream);
  if (st != NVFP4_SUCCESS) return st;
  return run_gemm(t, p.count, p.groups[0].c.dtype == DType::kBFloat16, exec, w.cutlass, "sm100a grouped gemm");
}

// ---------------------------------------------------------------------------
// Packed (MoE) API
// ---------------------------------------------------------------------------
size_t grouped_gemm_packed_workspace(const PackedGroupedGemmProblem& p, const Exec& exec) {
  const char* why = packed_unsupported(p);
  const size_t cutlass_ws = why ? 0 : grouped_cutlass_workspace(p.G, exec.sm_count, exec.device);
  return required_or_zero(carve_packed_workspace(nullptr, p, group_table_sizes(), cutlass_ws).required, why);
}

nvfp4_status_t grouped_gemm_packed(const PackedGroupedGemmProblem& p, const Exec& exec) {
  if (const char* why = packed_unsupported(p)) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a grouped gemm (packed): %s", why);
  const size_t cutlass_ws = grouped_cutlass_workspace(p.G, exec.sm_count, exec.device);
  const PackedWorkspace w = carve_packed_workspace(exec.workspace, p, group_table_sizes(), cutlass_ws);
  if (!exec.workspace || exec.workspace_bytes < w.required)
    return fail(NVFP4_ERROR_NOT_SUPPORTED,
                "sm100a grouped gemm (packed): needs a workspace of %zu bytes (got %zu); see "
                "grouped_packed_workspace_size",
                w.required, exec.workspace ? exec.workspace_bytes : size_t(0));
  if (const char* why = check_gemm(p.G, exec.device, exec.sm_count))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a grouped gemm (packed): %s", why);

  const cudaStream_t stream = cuda_stream(exec);
  const Tables t = typed(w.tables);
  PackedParams pp;
  pp.offsets = p.offsets;
  pp.alphas = p.alphas;
  pp.G = p.G;
  pp.total_M = p.total_M;
  pp.N = p.N;
  pp.K = p.K;
  pp.a = p.a.data;
  pp.a_row = p.a.row_stride;
  pp.b = p.b.data;
  pp.b_row = p.b.row_stride;
  pp.b_batch = p.b.batch_stride;
  pp.c = static_cast<uint8_t*>(p.c.data);
  pp.c_row = p.c.row_stride;
  pp.tile_base = static_cast<int32_t*>(w.sfa_tile_base);
  pp.sfa = static_cast<uint8_t*>(w.sfa);
  pp.sfb = static_cast<uint8_t*>(w.sfb);
  pp.sfb_batch = blocked_sf_bytes(p.N, p.K);
  pp.tiles_k = blocked_sf_cols(p.K) / 4;
  fill_packed_tables<<<1, kThreads, 0, stream>>>(pp, t);
  NVFP4_CHECK_LAUNCH();

  const int64_t words_bound = packed_sfa_tiles_bound(p.total_M, p.G) * pp.tiles_k * 128;
  const int64_t blocks = (words_bound + 255) / 256;
  swizzle_packed_sfa<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), 256, 0, stream>>>(
      ScaleSource{p.sfa.data, NVFP4_SF_LINEAR, p.sfa.row_stride, 0}, p.offsets, pp.tile_base, p.G, p.total_M, p.K,
      static_cast<uint32_t*>(w.sfa), words_bound);
  NVFP4_CHECK_LAUNCH();

  SwizzleBatch jobs;
  SwizzleJob& jb = jobs.jobs[jobs.count++];
  jb.dst = pp.sfb;
  jb.rows = p.N;
  jb.K = p.K;
  jb.L = p.G;
  jb.src[0] = ScaleSource{p.sfb.data, NVFP4_SF_LINEAR, p.sfb.row_stride, p.sfb.batch_stride};
  const nvfp4_status_t st = launch_swizzle(jobs, stream);
  if (st != NVFP4_SUCCESS) return st;
  return run_gemm(t, p.G, p.c.dtype == DType::kBFloat16, exec, w.cutlass, "sm100a grouped gemm (packed)");
}

}  // namespace nvfp4::sm100
