// cutlass_ss.cu -- session 29 prototype (issue 23), NOT library code: the compute-bound GEMM on operands
// that were decoded to fp16 beforehand (tokens by the existing token pass, weights by the same pass run
// on B), i.e. a plain SS wgmma GEMM with the library's numerics: fp32 accumulation promoted every
// `interval` MMA k-blocks into a second fp32 sum (CUTLASS's FP8 mainloop, GmmaFP8Accumulation, used
// here on half_t operands). ssx_energy.cu measured such a loop (SS m64n192, promotion every 512 K) at
// 97.1% tensor-pipe activity against 97.7% for the cuBLAS-like m64n256 loop, where both RS and
// shared-memory-transform designs of the exact in-kernel decode stop at ~88%.
// Built as a shared library with one C entry point, timed from Python (ctypes + torch) beside cuBLAS.
//   variant 0: 128x192x64 cooperative, cluster 2x1x1, promotion (interval in k-blocks of 64)
//   variant 1: 128x192x64 cooperative, cluster 1x1x1, promotion
//   variant 2: 128x256x64 cooperative, cluster 2x1x1, no promotion (CUTLASS's fp16 mainloop: a ceiling)
// D (M x N, row-major, fp16) = alpha * A (M x K, K-major) * B (N x K, K-major)^T.
#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

using namespace cute;

namespace {

using ElementA = cutlass::half_t;
using ElementB = cutlass::half_t;
using ElementD = cutlass::half_t;
using LayoutA = cutlass::layout::RowMajor;     // M x K, K contiguous
using LayoutB = cutlass::layout::ColumnMajor;  // K x N column-major = N x K with K contiguous
using LayoutD = cutlass::layout::RowMajor;

template <class TileShape, class ClusterShape, bool kPromote>
struct Config {
  using Schedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, 8, ElementD, LayoutD, 8,
      EpilogueSchedule>::CollectiveOp;
  using Base = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, 8, ElementB, LayoutB, 8, float,
      TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      Schedule>::CollectiveOp;
  // The builder picks the FP8 (promoting) mainloop only for fp8 inputs: the same pieces, its policy.
  using Promoting = cutlass::gemm::collective::CollectiveMma<
      cutlass::gemm::MainloopSm90TmaGmmaWarpSpecializedFP8<Base::DispatchPolicy::Stages, ClusterShape, Schedule>,
      TileShape, ElementA, typename Base::StrideA, ElementB, typename Base::StrideB, typename Base::TiledMma,
      typename Base::GmemTiledCopyA, typename Base::SmemLayoutAtomA, typename Base::SmemCopyAtomA,
      typename Base::TransformA, typename Base::GmemTiledCopyB, typename Base::SmemLayoutAtomB,
      typename Base::SmemCopyAtomB, typename Base::TransformB>;
  using Mainloop = cute::conditional_t<kPromote, Promoting, Base>;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

using V0 = Config<Shape<_128, _192, _64>, Shape<_2, _1, _1>, true>;
using V1 = Config<Shape<_128, _192, _64>, Shape<_1, _1, _1>, true>;
using V2 = Config<Shape<_128, _256, _64>, Shape<_2, _1, _1>, false>;

void* g_ws = nullptr;
size_t g_ws_bytes = 0;

template <class C, bool kPromote>
int run(const void* a, const void* b, void* d, int M, int N, int K, float alpha, int interval, cudaStream_t s) {
  using Gemm = typename C::Gemm;
  using StrideA = typename Gemm::GemmKernel::StrideA;
  using StrideB = typename Gemm::GemmKernel::StrideB;
  using StrideD = typename Gemm::GemmKernel::StrideD;
  StrideA sa = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(M, K, 1));
  StrideB sb = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(N, K, 1));
  StrideD sd = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(M, N, 1));
  typename Gemm::Arguments args;
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {M, N, K, 1};
  if constexpr (kPromote) {
    args.mainloop = {static_cast<const ElementA*>(a), sa, static_cast<const ElementB*>(b), sb,
                     static_cast<uint32_t>(interval)};
  } else {
    args.mainloop = {static_cast<const ElementA*>(a), sa, static_cast<const ElementB*>(b), sb};
  }
  args.epilogue.thread.alpha = alpha;
  args.epilogue.thread.beta = 0.0f;
  args.epilogue.ptr_C = nullptr;
  args.epilogue.dC = sd;
  args.epilogue.ptr_D = static_cast<ElementD*>(d);
  args.epilogue.dD = sd;
  Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) return 2;
  const size_t ws = Gemm::get_workspace_size(args);
  if (ws > g_ws_bytes) {
    if (g_ws) cudaFree(g_ws);
    if (cudaMalloc(&g_ws, ws) != cudaSuccess) return 3;
    g_ws_bytes = ws;
  }
  if (gemm.initialize(args, g_ws, s) != cutlass::Status::kSuccess) return 4;
  if (gemm.run(s) != cutlass::Status::kSuccess) return 5;
  return cudaGetLastError() == cudaSuccess ? 0 : 6;
}

}  // namespace

extern "C" int ss_gemm(int variant, const void* a, const void* b, void* d, int M, int N, int K, float alpha,
                       int interval, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (variant) {
    case 0: return run<V0, true>(a, b, d, M, N, K, alpha, interval, s);
    case 1: return run<V1, true>(a, b, d, M, N, K, alpha, interval, s);
    case 2: return run<V2, false>(a, b, d, M, N, K, alpha, interval, s);
  }
  return 1;
}
