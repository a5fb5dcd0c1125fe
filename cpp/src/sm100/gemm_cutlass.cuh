// CUTLASS 4.2 configuration of the dense NVFP4 GEMM on sm100a, shared by the
// translation units that instantiate it (gemm_1sm.cu, gemm_2sm.cu).
//
// Everything below is NVIDIA's tested SM100 block-scaled machinery, configured as in
// CUTLASS's example 72 (nvfp4 x nvfp4 GEMM): CollectiveBuilder with
// OpClassBlockScaledTensorOp, operands nv_float4_t<float_e2m1_t> (e2m1 data + ue4m3
// scale per 16 elements, tcgen05.mma kind::mxf4nvf4 block16), both operands K-major,
// accumulators in tensor memory, TMA loads of data and scales, TMA store of D.
// Only the arguments are ours: strides, the blocked scale layouts, alpha.
#pragma once

#include <cuda_runtime_api.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/gemm/kernel/tile_scheduler_params.h>

#include "../common/cuda_check.hpp"
#include "epilogue_nodes.cuh"
#include "kernels.hpp"
#include "scale_layout.hpp"

#if !defined(CUTLASS_ARCH_MMA_SM100_SUPPORTED) && defined(__CUDA_ARCH__)
#  error "cpp/src/sm100 must be compiled for sm_100a (CUTLASS_ARCH_MMA_SM100_SUPPORTED)"
#endif

namespace nvfp4::sm100 {

using ElementFp4 = cutlass::nv_float4_t<cutlass::float_e2m1_t>;
constexpr int kFp4Alignment = 32;  // elements: 16 bytes, the TMA granule

// D = alpha * acc as fp16 or bf16 bits (Store16Node; ElementD = uint16_t), no source
// tensor (ElementC = void disables the C load).
using Store16Callbacks = cutlass::epilogue::fusion::Sm90EVT<Store16Node, cutlass::epilogue::fusion::Sm90AccFetch>;

template <class MmaTile, class ClusterShape, class MainloopSchedule, class EpilogueSchedule, class TileScheduler,
          class ElementD = uint16_t, class FusionOpOrCallbacks = Store16Callbacks>
struct BlockScaledGemm {
  static constexpr int kAlignD = 16 / sizeof(ElementD);

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp, MmaTile, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, cutlass::layout::RowMajor, kAlignD,
      ElementD, cutlass::layout::RowMajor, kAlignD,
      EpilogueSchedule, FusionOpOrCallbacks>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp,
      ElementFp4, cutlass::layout::RowMajor, kFp4Alignment,     // A: M x K, K-major
      ElementFp4, cutlass::layout::ColumnMajor, kFp4Alignment,  // B: N x K, K-major
      float, MmaTile, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, TileScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

// Initializes and launches a CUTLASS GEMM kernel (dense or grouped), every status checked.
template <class Gemm>
nvfp4_status_t run_cutlass_gemm(const typename Gemm::Arguments& args, void* workspace, cudaStream_t stream,
                                const char* what) {
  Gemm gemm;
  cutlass::Status st = gemm.initialize(args, workspace, stream);
  if (st != cutlass::Status::kSuccess)
    return fail(NVFP4_ERROR_CUDA, "%s: CUTLASS initialize failed: %s (%s)", what, cutlassGetStatusString(st),
                cudaGetErrorString(cudaGetLastError()));
  st = gemm.run(stream);
  if (st != cutlass::Status::kSuccess)
    return fail(NVFP4_ERROR_CUDA, "%s: CUTLASS launch failed: %s (%s)", what, cutlassGetStatusString(st),
                cudaGetErrorString(cudaGetLastError()));
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
}

// Argument building and launch for one BlockScaledGemm instantiation.
template <class Config>
struct DenseGemmRunner {
  using Gemm = typename Config::Gemm;
  using Kernel = typename Config::Kernel;
  using Mainloop = typename Kernel::CollectiveMainloop;
  using StrideA = typename Kernel::StrideA;
  using StrideB = typename Kernel::StrideB;
  using StrideD = typename Kernel::StrideD;
  using LayoutSFA = typename Mainloop::LayoutSFA;
  using LayoutSFB = typename Mainloop::LayoutSFB;
  using ScaleConfig = typename Mainloop::Sm1xxBlkScaledConfig;
  using ElementA = typename Gemm::ElementA;
  using ElementB = typename Gemm::ElementB;
  using ElementSF = typename Mainloop::ElementSF;
  using ElementD = typename Gemm::ElementD;
  using Arguments = typename Gemm::Arguments;

  static_assert(cute::is_same_v<StrideA, cute::Stride<int64_t, cute::Int<1>, int64_t>>, "A is K-major (M,K,L)");
  static_assert(cute::is_same_v<StrideB, cute::Stride<int64_t, cute::Int<1>, int64_t>>, "B is K-major (N,K,L)");
  static_assert(cute::is_same_v<StrideD, cute::Stride<int64_t, cute::Int<1>, int64_t>>, "D is row-major (M,N,L)");
  static_assert(ScaleConfig::SFVecSize == 16, "NVFP4: one e4m3 scale per 16 elements");
  static_assert(cute::is_same_v<LayoutSFA, ScaleLayout> && cute::is_same_v<LayoutSFB, ScaleLayout>,
                "the kernel reads the layout scale_layout.hpp builds (and tests/sm100_host checks)");

  // Default customization: the Store16Node epilogue (alpha, alpha_ptr, fp16/bf16).
  struct DefaultCustomize {
    const DenseGemmArgs& g;
    void operator()(Arguments& args) const {
      Store16Args node;
      node.alpha = g.alpha;
      node.alpha_ptr = g.alpha_ptr;
      node.out_bf16 = g.out_bf16;
      args.epilogue.thread = {{}, node};  // (Sm90AccFetch child, node)
    }
  };

  // `reference_scale_layouts`: CUTLASS's can_implement compares the scale layouts with
  // the dense ones it would build; the check runs on those (the real batch stride
  // only changes the L-mode stride of the TMA descriptor).
  // `customize(args)` sets the epilogue (fusion) and scheduler arguments.
  template <class Customize>
  static Arguments make_arguments(const DenseGemmArgs& g, Customize&& customize, bool reference_scale_layouts) {
    using cute::Int;
    const auto shape = cute::make_shape(g.M, g.N, g.K, g.L);
    // fp4 strides count elements: 2 per byte.
    // With L == 1 the batch stride is never used; give TMA the packed value CUTLASS's
    // own examples use rather than 0.
    const int64_t a_batch = g.L > 1 ? g.a_batch : g.a_row * g.M;
    const int64_t b_batch = g.L > 1 ? g.b_batch : g.b_row * g.N;
    const int64_t d_batch = g.L > 1 ? g.d_batch : g.d_row * g.M;
    StrideA sa = cute::make_stride(g.a_row * 2, Int<1>{}, a_batch * 2);
    StrideB sb = cute::make_stride(g.b_row * 2, Int<1>{}, b_batch * 2);
    StrideD sd = cute::make_stride(g.d_row, Int<1>{}, d_batch);
    // CUTLASS's blocked scale layouts (== blocked_sf_offset, scale_layout.hpp) with
    // the caller's batch strides; can_implement compares against the dense ones.
    LayoutSFA lsfa = ScaleConfig::tile_atom_to_shape_SFA(shape);
    LayoutSFB lsfb = ScaleConfig::tile_atom_to_shape_SFB(shape);
    if (!reference_scale_layouts) {
      lsfa = scale_layout_a(g.M, g.N, g.K, g.L, g.sfa_batch);
      lsfb = scale_layout_b(g.M, g.N, g.K, g.L, g.sfb_batch);
    }

    Arguments args;
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = shape;
    args.mainloop.ptr_A = reinterpret_cast<decltype(args.mainloop.ptr_A)>(g.a);
    args.mainloop.dA = sa;
    args.mainloop.ptr_B = reinterpret_cast<decltype(args.mainloop.ptr_B)>(g.b);
    args.mainloop.dB = sb;
    args.mainloop.ptr_SFA = reinterpret_cast<const ElementSF*>(g.sfa);
    args.mainloop.layout_SFA = lsfa;
    args.mainloop.ptr_SFB = reinterpret_cast<const ElementSF*>(g.sfb);
    args.mainloop.layout_SFB = lsfb;
    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = sd;
    args.epilogue.ptr_D = reinterpret_cast<ElementD*>(g.d);
    args.epilogue.dD = sd;
    args.hw_info.device_id = g.device;
    args.hw_info.sm_count = g.sm_count;
    customize(args);
    return args;
  }

  template <class Customize>
  static const char* check(const DenseGemmArgs& g, Customize&& customize) {
    if (g.L > 1 && (g.sfa_batch % 16 != 0 || g.sfb_batch % 16 != 0)) return "scale batch stride not 16-byte aligned";
    Arguments args = make_arguments(g, customize, /*reference_scale_layouts=*/true);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) return "CUTLASS can_implement rejected the problem";
    return nullptr;
  }

  template <class Customize>
  static size_t workspace(const DenseGemmArgs& g, Customize&& customize) {
    return Gemm::get_workspace_size(make_arguments(g, customize, true));
  }

  template <class Customize>
  static nvfp4_status_t run(const DenseGemmArgs& g, Customize&& customize, void* workspace, cudaStream_t stream,
                            const char* what) {
    return run_cutlass_gemm<Gemm>(make_arguments(g, customize, /*reference_scale_layouts=*/false), workspace,
                                  stream, what);
  }
};

}  // namespace nvfp4::sm100
