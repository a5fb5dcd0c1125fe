// sm90a dual GEMM  c = act(alpha1 * A * B1^T) * (alpha2 * A * B2^T).
//
// Fused path (dual_plan.hpp decides; every problem with M >= 3 whose operands TMA can read):
// the GEMM's token pass decodes A once into the fp16 workspace, then one kernel
// (kernel/dual_gemm.cuh) computes both products per CTA (a weight tile of 64 rows of B1 and
// the same 64 rows of B2), applies act * mul to the fully reduced fp32 sums and writes the
// output with TMA stores (collective/epilogue_dual.cuh). Two launches, no product in global
// memory. Same numerics as the composed path: each accumulator scaled by its alpha in fp32,
// the activation in fp32, one rounding at the end.
//
// Decode route (dual_plan.hpp dual_decode_route: 2..16 tokens on >= 2048 output columns, 17..32 on
// >= 8192, operands the decode kernel takes): one launch of the decode kernel's dual instance
// (gemv/decode_kernel.cuh dual_gemm_decode_kernel): the weights streamed once, each warp task
// 8 rows of B1 and the same 8 rows of B2, act * mul on the complete sums in registers. No
// workspace, no token pass.
//
// Composed path (one or two tokens, whose GEMM runs as GEMVs; token workspace over 1 GiB):
// two sm90a GEMMs with fp32 outputs in the caller's workspace, then one elementwise pass
// (act, product, one rounding to the output dtype). The second GEMM reads the tokens the
// first one pre-decoded (gemm_same_tokens). Scratch: two fp32 products of at most
// kScratchBudget bytes together; larger problems run in row chunks of a multiple of 128 rows
// (scales_from_row: a blocked-scale operand sliced at such a row is again a blocked operand),
// then the GEMM's own workspace (pre-decoded tokens).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <cuda.h>

#include "../common/activation.hpp"
#include "../common/cuda_check.hpp"
#include "../common/device_cache.hpp"
#include "dual_plan.hpp"
#include "gemm_parts.hpp"
#include "gemv/decode_kernel.cuh"
#include "gemv/decode_dual_plan.hpp"
#include "gemv/kernel_info.hpp"
#include "kernel/dual_gemm.cuh"
#include "launch.hpp"
#include "launchers.hpp"
#include "tma.hpp"

namespace nvfp4::sm90 {

namespace {

constexpr size_t kScratchBudget = size_t{256} << 20;  // the two fp32 products
constexpr size_t kAlign = 256;

size_t round_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

struct CombineArgs {
  const float* h1;  // [L][rows][N] fp32, alpha1 applied
  const float* h2;  // same, alpha2 applied
  int64_t L, rows, N;
  nvfp4_activation_t act;
  void* c;          // output row 0 of this chunk
  int32_t c_dtype;  // DType
  int64_t c_row, c_col, c_batch;  // elements
  int32_t vec4;     // N % 4 == 0, c_col == 1, rows and batches 4-element aligned
};

__device__ __forceinline__ void store_out(const CombineArgs& g, int64_t off, float v) {
  if (g.c_dtype == static_cast<int32_t>(DType::kFloat16))
    static_cast<__half*>(g.c)[off] = __float2half_rn(v);
  else if (g.c_dtype == static_cast<int32_t>(DType::kBFloat16))
    static_cast<__nv_bfloat16*>(g.c)[off] = __float2bfloat16_rn(v);
  else
    static_cast<float*>(g.c)[off] = v;
}

__device__ __forceinline__ void store_out4(const CombineArgs& g, int64_t off, const float (&v)[4]) {
  if (g.c_dtype == static_cast<int32_t>(DType::kFloat16)) {
    const __half2 lo = __floats2half2_rn(v[0], v[1]), hi = __floats2half2_rn(v[2], v[3]);
    uint2 u;
    u.x = *reinterpret_cast<const uint32_t*>(&lo);
    u.y = *reinterpret_cast<const uint32_t*>(&hi);
    *reinterpret_cast<uint2*>(static_cast<__half*>(g.c) + off) = u;
  } else if (g.c_dtype == static_cast<int32_t>(DType::kBFloat16)) {
    const __nv_bfloat162 lo = __floats2bfloat162_rn(v[0], v[1]), hi = __floats2bfloat162_rn(v[2], v[3]);
    uint2 u;
    u.x = *reinterpret_cast<const uint32_t*>(&lo);
    u.y = *reinterpret_cast<const uint32_t*>(&hi);
    *reinterpret_cast<uint2*>(static_cast<__nv_bfloat16*>(g.c) + off) = u;
  } else {
    *reinterpret_cast<float4*>(static_cast<float*>(g.c) + off) = make_float4(v[0], v[1], v[2], v[3]);
  }
}

// act(h1) * h2 -> c. A programmatic dependent of the second GEMM: it waits for that grid
// (and so for both products) before reading anything.
__global__ void __launch_bounds__(256) dual_combine_kernel(const CombineArgs g) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int64_t per_row = g.vec4 ? g.N / 4 : g.N;
  const int64_t units = g.L * g.rows * per_row;
  for (int64_t u = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; u < units; u += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = u / per_row;  // l * rows + r
    const int64_t l = row / g.rows, r = row - l * g.rows;
    const int64_t out_row = l * g.c_batch + r * g.c_row;
    if (g.vec4) {
      const int64_t n = (u - row * per_row) * 4;
      const float4 x = __ldcs(reinterpret_cast<const float4*>(g.h1 + row * g.N + n));
      const float4 y = __ldcs(reinterpret_cast<const float4*>(g.h2 + row * g.N + n));
      const float v[4] = {activation(g.act, x.x) * y.x, activation(g.act, x.y) * y.y, activation(g.act, x.z) * y.z,
                          activation(g.act, x.w) * y.w};
      store_out4(g, out_row + n, v);
    } else {
      const int64_t n = u - row * per_row;
      const float x = __ldcs(g.h1 + row * g.N + n), y = __ldcs(g.h2 + row * g.N + n);
      store_out(g, out_row + n * g.c_col, activation(g.act, x) * y);
    }
  }
}

// Rows per chunk: all M when both products fit the budget, else a multiple of 128.
int64_t chunk_rows(const DualGemmProblem& p) {
  const size_t per_row = static_cast<size_t>(p.L) * static_cast<size_t>(p.N) * 2 * sizeof(float);
  if (per_row * static_cast<size_t>(p.M) <= kScratchBudget) return p.M;
  const int64_t rows = static_cast<int64_t>(kScratchBudget / per_row) / 128 * 128;
  return rows < 128 ? 128 : rows;
}

// The GEMM of rows [m0, m0 + rows) of A against `b` into the fp32 product `h`.
GemmProblem product(const DualGemmProblem& p, int64_t m0, int64_t rows, const Fp4Operand& b,
                    const ScaleOperand& sfb, const Alpha& alpha, float* h) {
  GemmProblem g;
  g.L = p.L;
  g.M = rows;
  g.N = p.N;
  g.K = p.K;
  g.a = fp4_from_row(p.a, m0);
  g.sfa = scales_from_row(p.sfa, m0, p.K);  // m0: a multiple of 128 (chunk_rows)
  g.b = b;
  g.sfb = sfb;
  g.alpha = alpha;
  g.c.data = h;
  g.c.dtype = DType::kFloat32;
  g.c.row_stride = p.N;
  g.c.col_stride = 1;
  g.c.batch_stride = rows * p.N;
  return g;
}

// ---- composed path ------------------------------------------------------------------

struct ComposedPlan {
  int64_t rows = 0;          // per chunk
  size_t product_bytes = 0;  // one fp32 product of a full chunk (rounded to kAlign)
  size_t gemm_bytes = 0;     // the GEMMs' own workspace
  size_t total() const { return 2 * product_bytes + gemm_bytes; }
};

// NOT_SUPPORTED (nothing launched) when a GEMM of the first or the last chunk would refuse:
// every chunk has the same operands, strides and layouts and starts at a multiple of 128
// rows (the same alignment); all but the last have the first's rows.
nvfp4_status_t plan_composed(const DualGemmProblem& p, const Exec& exec, ComposedPlan* plan) {
  plan->rows = chunk_rows(p);
  plan->product_bytes = round_up(static_cast<size_t>(p.L * plan->rows * p.N) * sizeof(float));
  // The first chunk and the last (the only other row count): a GEMM's roles and route depend
  // on its rows (gemm_plan.hpp swap_roles), so the last chunk may take another path and refuse
  // where the first did not; checked before anything runs. g2 has g1's A, M, N, K, L, but its
  // own weights' scales may need staging where g1's do not: the largest of the queries.
  const int64_t last_m0 = (p.M - 1) / plan->rows * plan->rows;
  size_t bytes = 0;
  for (int64_t m0 : {int64_t{0}, last_m0}) {
    const int64_t rows = p.M - m0 < plan->rows ? p.M - m0 : plan->rows;
    for (int w = 0; w < 2; ++w) {
      const GemmProblem g = w == 0 ? product(p, m0, rows, p.b1, p.sfb1, p.alpha1, nullptr)
                                   : product(p, m0, rows, p.b2, p.sfb2, p.alpha2, nullptr);
      size_t b = 0;
      const nvfp4_status_t st = gemm_supported(g, exec, &b);
      if (st != NVFP4_SUCCESS) return st;
      if (b > bytes) bytes = b;
    }
  }
  plan->gemm_bytes = round_up(bytes);
  return NVFP4_SUCCESS;
}

nvfp4_status_t run_composed(const DualGemmProblem& p, const Exec& exec) {
  ComposedPlan plan;
  const nvfp4_status_t st = plan_composed(p, exec, &plan);
  if (st != NVFP4_SUCCESS) return st;
  if (exec.workspace == nullptr || exec.workspace_bytes < plan.total() ||
      reinterpret_cast<uintptr_t>(exec.workspace) % kAlign != 0)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a dual gemm: needs a %zu-byte workspace (256-byte aligned)",
                plan.total());
  uint8_t* ws = static_cast<uint8_t*>(exec.workspace);
  float* h1 = reinterpret_cast<float*>(ws);
  float* h2 = reinterpret_cast<float*>(ws + plan.product_bytes);
  Exec gemm_exec = exec;
  gemm_exec.workspace = plan.gemm_bytes > 0 ? ws + 2 * plan.product_bytes : nullptr;
  gemm_exec.workspace_bytes = plan.gemm_bytes;

  const int esize = p.c.dtype == DType::kFloat32 ? 4 : 2;
  int sm_count = exec.sm_count;
  if (sm_count <= 0) NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, exec.device));
  for (int64_t m0 = 0; m0 < p.M; m0 += plan.rows) {
    const int64_t rows = p.M - m0 < plan.rows ? p.M - m0 : plan.rows;
    nvfp4_status_t s = gemm(product(p, m0, rows, p.b1, p.sfb1, p.alpha1, h1), gemm_exec);
    if (s == NVFP4_SUCCESS) s = gemm_same_tokens(product(p, m0, rows, p.b2, p.sfb2, p.alpha2, h2), gemm_exec);
    if (s != NVFP4_SUCCESS) return s;

    CombineArgs g;
    g.h1 = h1;
    g.h2 = h2;
    g.L = p.L;
    g.rows = rows;
    g.N = p.N;
    g.act = p.activation;
    g.c = static_cast<uint8_t*>(p.c.data) + m0 * p.c.row_stride * esize;
    g.c_dtype = static_cast<int32_t>(p.c.dtype);
    g.c_row = p.c.row_stride;
    g.c_col = p.c.col_stride;
    g.c_batch = p.c.batch_stride;
    g.vec4 = (p.N % 4 == 0 && p.c.col_stride == 1 && p.c.row_stride % 4 == 0 &&
              (p.L == 1 || p.c.batch_stride % 4 == 0) &&
              reinterpret_cast<uintptr_t>(g.c) % (4 * static_cast<uintptr_t>(esize)) == 0)
                 ? 1
                 : 0;
    const int64_t units = p.L * rows * (g.vec4 ? p.N / 4 : p.N);
    const int64_t blocks_needed = (units + 255) / 256;
    const int64_t blocks_cap = static_cast<int64_t>(sm_count) * 8;
    LaunchShape shape;
    shape.grid = dim3(static_cast<unsigned>(blocks_needed < blocks_cap ? blocks_needed : blocks_cap), 1, 1);
    shape.block = dim3(256, 1, 1);
    shape.pdl = true;  // a programmatic dependent of the second GEMM (the kernel waits for it first)
    const nvfp4_status_t launched = launch(dual_combine_kernel, shape, cuda_stream(exec), g);
    if (launched != NVFP4_SUCCESS) return launched;
  }
  return NVFP4_SUCCESS;
}

// ---- decode route ------------------------------------------------------------------------

using DualDecodeKernelFn = void (*)(const gemv_detail::DecodeDualArgs);

DualDecodeKernelFn dual_decode_kernel(int nt8, bool blocked) {
  using namespace gemv_detail;
  switch (nt8) {
    case 1: return blocked ? dual_gemm_decode_kernel<1, true> : dual_gemm_decode_kernel<1, false>;
    case 2: return blocked ? dual_gemm_decode_kernel<2, true> : dual_gemm_decode_kernel<2, false>;
    case 3: return blocked ? dual_gemm_decode_kernel<3, true> : dual_gemm_decode_kernel<3, false>;
    case 4: return blocked ? dual_gemm_decode_kernel<4, true> : dual_gemm_decode_kernel<4, false>;
    default: return nullptr;
  }
}

// The decode route's launch plan; NOT_SUPPORTED (nothing launched) where it cannot run.
nvfp4_status_t plan_decode(const DualGemmProblem& p, const Exec& exec, gemv_detail::DecodeDualLaunch* dl) {
  using namespace gemv_detail;
  int sm_count = exec.sm_count;
  if (sm_count <= 0) NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, exec.device));
  const int nt8 = decode_nt8(p.M);
  const void* kernel = reinterpret_cast<const void*>(dual_decode_kernel(nt8, p.sfb1.layout == NVFP4_SF_BLOCKED));
  if (kernel == nullptr) return fail(NVFP4_ERROR_INTERNAL, "sm90a decode dual gemm: no kernel for %d token groups", nt8);
  MmaKernelInfo info;  // (kernel_info.hpp: queried once per device and instance)
  const nvfp4_status_t st = decode_kernel_info(exec.device, kernel, &info);
  if (st != NVFP4_SUCCESS) return st;
  *dl = decode_dual_launch(info, p, sm_count, exec.device, kernel);
  if (dl->unsupported) return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s", dl->unsupported);
  if (dl->launch.sc != kMmaSC)  // the dual instances have full stages only (decode_plan.hpp)
    return fail(NVFP4_ERROR_INTERNAL, "sm90a decode dual gemm: planned stages of %d chunks", dl->launch.sc);
  return NVFP4_SUCCESS;
}

nvfp4_status_t run_decode(const DualGemmProblem& p, const Exec& exec, const gemv_detail::DecodeDualLaunch& dl) {
  using namespace gemv_detail;
  DecodeDualArgs args = make_decode_dual_args(p);
  const LaunchShape ls = decode_launch_shape(dl.launch, &args.d);
  return launch(dual_decode_kernel(dl.nt8, p.sfb1.layout == NVFP4_SF_BLOCKED), ls, cuda_stream(exec), args);
}

// ---- fused path -------------------------------------------------------------------------

// The fused kernel's instances, one per token tile (dual_plan.hpp dual_token_tile): the GEMM's
// split-only tiles (gemm_schedule.hpp kTileXSplit), then 128.
constexpr int kDualTiles = kSplitTiles + 1;
static_assert(kSplitTiles == 3, "one instance per split-only tile");
struct DualInstance {
  int32_t tile_x;
  decltype(&nvfp4_sm90_dual_gemm_kernel<kTileX>) kernel;
  size_t smem;
};
template <int kTileXT>
constexpr DualInstance dual_instance() {
  return {kTileXT, nvfp4_sm90_dual_gemm_kernel<kTileXT>,
          dynamic_smem_bytes<typename DualMainloopT<kTileXT>::SharedStorage>()};
}
constexpr DualInstance kDualInstances[kDualTiles] = {dual_instance<kTileXSplit[0]>(), dual_instance<kTileXSplit[1]>(),
                                                     dual_instance<kTileXSplit[2]>(), dual_instance<kTileX>()};

// Clusters of s fused dual CTAs resident at once (a failed query counts as "no limit"), of the
// 128-token instance: the others have less shared memory and the same one CTA per SM (384
// threads at 168 registers), so at least as many fit. Every instance's shared-memory limit is
// raised first.
nvfp4_status_t query_device(int device, int sm_count_hint, DualDeviceNumbers* d) {
  d->sm_count = sm_count_hint;
  if (d->sm_count <= 0) NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&d->sm_count, cudaDevAttrMultiProcessorCount, device));
  for (const DualInstance& k : kDualInstances)
    NVFP4_CUDA_TRY(
        cudaFuncSetAttribute(k.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(k.smem)));
  const DualInstance& wide = kDualInstances[kDualTiles - 1];
  for (int s = 0; s <= kMaxSplits; ++s)
    d->clusters[s] = s < 2 ? kNoClusterLimit
                           : max_active_clusters(reinterpret_cast<const void*>(wide.kernel), DualMainloop::kThreads,
                                                 wide.smem, s);
  return NVFP4_SUCCESS;
}

nvfp4_status_t device_numbers(const Exec& exec, DualDeviceNumbers* d) {
  static PerDeviceCache<DualDeviceNumbers> cache;
  return cache.get(exec.device, [&](DualDeviceNumbers& v) { return query_device(exec.device, exec.sm_count, &v); },
                   d);
}

// The plan of p on exec's device (kEmpty for an empty problem). NOT_SUPPORTED only for a
// device other than CC 9.0 or a failed device query. The decode route comes with its launch
// plan (`decode`); where that cannot launch (no shape fits the SM: not on a Hopper GPU), the
// problem takes the plan without the route.
nvfp4_status_t plan_for(const DualGemmProblem& p, const Exec& exec, DualPlan* plan,
                        gemv_detail::DecodeDualLaunch* decode) {
  if (exec.cc_major != 9 || exec.cc_minor != 0)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a dual gemm: needs a CC 9.0 device");
  *plan = DualPlan{};
  if (p.L <= 0 || p.M <= 0 || p.N <= 0) return NVFP4_SUCCESS;
  DualDeviceNumbers dev;
  const nvfp4_status_t st = device_numbers(exec, &dev);
  if (st != NVFP4_SUCCESS) return st;
  *plan = plan_dual(p, dev);
  if (plan->path == DualPath::kDecode) {
    const nvfp4_status_t ds = plan_decode(p, exec, decode);
    if (ds == NVFP4_ERROR_NOT_SUPPORTED) *plan = plan_dual(p, dev, false);
    else if (ds != NVFP4_SUCCESS) return ds;
  }
  return NVFP4_SUCCESS;
}

DualParams dual_params(const DualGemmProblem& p, const DualPlan& plan) {
  DualParams kp{};
  // the A·B1ᵀ GEMM's parameters (its weights, scales and alpha1), then B2's
  kp.g = gemm_params_of(gemv_detail::decode_dual_half(p, false), plan.num_kb, plan.splits, plan.sf_mode,
                        plan.x_box_rows, plan.tiles_n, plan.tiles_x, plan.c_vec4);
  kp.sf_w2 = ScaleSrc{p.sfb2.data, p.sfb2.row_stride, p.sfb2.batch_stride, p.N};
  kp.alpha2 = p.alpha2.value;
  kp.alpha2_ptr = p.alpha2.device_ptr;
  kp.act = static_cast<int32_t>(p.activation);
  kp.store = plan.store;
  kp.c_box_rows = plan.c_box_rows;
  return kp;
}

// The fused kernel's tensor maps; false (nothing launched) where the weights' cannot be encoded.
// The scale maps fall back to the plan's other scale load, the output map to plain stores.
bool encode_fused_maps(const DualGemmProblem& p, DualParams& kp, const DualPlan& plan, CUtensorMap (&maps)[6]) {
  CUtensorMap& w1 = maps[0];
  CUtensorMap& w2 = maps[1];
  CUtensorMap& sf1 = maps[3];
  CUtensorMap& sf2 = maps[4];
  CUtensorMap& c = maps[5];
  constexpr uint32_t kHalf = static_cast<uint32_t>(kDualTileN);
  if (!encode_fp4_map(&w1, p.b1, p.N, p.K, p.L, kHalf) || !encode_fp4_map(&w2, p.b2, p.N, p.K, p.L, kHalf))
    return false;
  sf1 = sf2 = c = w1;  // placeholders where unused
  if (plan.sf_mode == kScaleTma && !(encode_linear_sf_map(&sf1, p.sfb1, p.N, p.K, p.L, kHalf) &&
                                     encode_linear_sf_map(&sf2, p.sfb2, p.N, p.K, p.L, kHalf)))
    kp.g.sf_mode = plan.sf_mode_without_tma;
  if (plan.store == kDualStoreTma &&
      !encode_out_map(&c, p.c, p.M, p.N, p.L, kHalf, static_cast<uint32_t>(plan.c_box_rows)))
    kp.store = kDualStorePlain;
  return true;
}

nvfp4_status_t run_fused(const DualGemmProblem& p, const Exec& exec, const DualPlan& plan) {
  if (exec.workspace == nullptr || exec.workspace_bytes < plan.workspace_bytes || !is_aligned(exec.workspace, 256))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a dual gemm: needs a %zu-byte workspace (256-byte aligned)",
                plan.workspace_bytes);
  // q: p with the weights' scales staged into the workspace where the plan says so
  uint8_t* ws = static_cast<uint8_t*>(exec.workspace);
  DualGemmProblem q = p;
  StageRequest req[2];
  if (plan.stage_w) {
    req[0] = StageRequest{p.sfb1, p.N, p.K, ws + plan.stage_offset};
    req[1] = StageRequest{p.sfb2, p.N, p.K, ws + plan.stage_offset + staged_sf_bytes(p.N, p.K, p.L)};
    q.sfb1 = req[0].staged();
    q.sfb2 = req[1].staged();
  }
  DualParams kp = dual_params(q, plan);
  CUtensorMap maps[6];
  if (!encode_fused_maps(q, kp, plan, maps))
    return fail(NVFP4_ERROR_NOT_SUPPORTED,
                "sm90a dual gemm: cuTensorMapEncodeTiled unavailable or rejected the weights");
  if (!encode_token_map(&maps[2], exec.workspace, p.M, static_cast<int64_t>(plan.num_kb) * kBlockK, p.L,
                        static_cast<uint32_t>(plan.x_box_rows)))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a dual gemm: cuTensorMapEncodeTiled rejected the workspace");
  nvfp4_status_t st = NVFP4_SUCCESS;
  if (plan.stage_w) {
    st = launch_scale_stage(req, 2, p.L, exec);  // in front of the pass, which waits for it
    if (st != NVFP4_SUCCESS) return st;
  }
  st = launch_token_predecode(p.a, p.sfa, p.M, p.K, p.L, exec.workspace, exec);
  if (st != NVFP4_SUCCESS) return st;
  const DualInstance* k = nullptr;
  for (const DualInstance& i : kDualInstances)
    if (i.tile_x == plan.tile_x) k = &i;
  if (k == nullptr) return fail(NVFP4_ERROR_INTERNAL, "sm90a dual gemm: no kernel for a %d-token tile", plan.tile_x);
  LaunchShape shape;
  shape.grid = dim3(plan.grid[0], plan.grid[1], plan.grid[2]);
  shape.block = dim3(DualMainloop::kThreads, 1, 1);
  shape.smem = k->smem;
  shape.cluster_x = static_cast<unsigned>(plan.splits);
  shape.pdl = true;  // a programmatic dependent of the token pass (dual_gemm.cuh)
  return launch(k->kernel, shape, cuda_stream(exec), maps[0], maps[1], maps[2], maps[3], maps[4], maps[5], kp);
}

}  // namespace

size_t dual_gemm_workspace(const DualGemmProblem& p, const Exec& exec) {
  DualPlan plan;
  gemv_detail::DecodeDualLaunch decode;
  if (plan_for(p, exec, &plan, &decode) != NVFP4_SUCCESS || plan.path == DualPath::kEmpty) return 0;
  if (plan.path == DualPath::kDecode) return 0;
  if (plan.path == DualPath::kFused) return plan.workspace_bytes;
  ComposedPlan composed;
  if (plan_composed(p, exec, &composed) != NVFP4_SUCCESS) return 0;  // the portable kernel runs it: no scratch
  return composed.total();
}

nvfp4_status_t dual_gemm(const DualGemmProblem& p, const Exec& exec) {
  DualPlan plan;
  gemv_detail::DecodeDualLaunch decode;
  const nvfp4_status_t st = plan_for(p, exec, &plan, &decode);
  if (st != NVFP4_SUCCESS) return st;
  if (plan.path == DualPath::kEmpty) return NVFP4_SUCCESS;
  if (plan.path == DualPath::kDecode) return run_decode(p, exec, decode);
  if (plan.path == DualPath::kFused) return run_fused(p, exec, plan);
  return run_composed(p, exec);
}

}  // namespace nvfp4::sm90
