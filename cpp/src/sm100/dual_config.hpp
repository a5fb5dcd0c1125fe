// Types and host-side argument building of the sm100a dual GEMM kernel
// (dual_kernel.cuh). No kernel code: tests/sm100_host compiles this header as host
// code and checks the argument building (strides, scale layouts, CUTLASS's
// can_implement) on the CPU.
//
// Every mainloop type is taken from CUTLASS's own 1-SM NVFP4 block-scaled collective
// (CollectiveBuilder, 128x128x256 MMA tile, KernelTmaWarpSpecialized1SmNvf4Sm100);
// its host-side to_underlying_arguments builds the TMA descriptors, once for
// (A, B1, SFA, SFB1) and once for (A, B2, SFA, SFB2).
#pragma once

#include <stdint.h>

#include <initializer_list>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/pipeline/pipeline.hpp>

#include "kernels.hpp"
#include "scale_layout.hpp"

namespace nvfp4::sm100::dual {

using ElementFp4 = cutlass::nv_float4_t<cutlass::float_e2m1_t>;

// ---------------------------------------------------------------------------
// Configuration: CUTLASS's 1-SM NVFP4 collective supplies every mainloop type.
// ---------------------------------------------------------------------------
struct Config {
  using MmaTile = cute::Shape<cute::_128, cute::_128, cute::_256>;  // per accumulator
  using Cluster = cute::Shape<cute::_1, cute::_1, cute::_1>;
  // 4 stages of (A, B1, B2, SFA, SFB1, SFB2) = 4 x 54 KiB + an 8 KiB output buffer
  // fit the 227 KiB of shared memory a CTA may use.
  static constexpr int kStages = 4;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp,
      ElementFp4, cutlass::layout::RowMajor, 32,     // A: M x K, K-major
      ElementFp4, cutlass::layout::ColumnMajor, 32,  // B1, B2: N x K, K-major
      float, MmaTile, Cluster, cutlass::gemm::collective::StageCount<kStages>,
      cutlass::gemm::KernelTmaWarpSpecialized1SmNvf4Sm100>::CollectiveOp;

  using TiledMma = typename Mainloop::TiledMma;
  using TiledMmaSF = typename Mainloop::TiledMMA_SF;
  using TileShapeSF = typename Mainloop::TileShape_SF;
  using SmemLayoutA = typename Mainloop::SmemLayoutA;    // (MMA, MMA_M, MMA_K, PIPE)
  using SmemLayoutB = typename Mainloop::SmemLayoutB;    // (MMA, MMA_N, MMA_K, PIPE)
  using SmemLayoutSFA = typename Mainloop::SmemLayoutSFA;
  using SmemLayoutSFB = typename Mainloop::SmemLayoutSFB;
  using SmemLayoutAtomSFA = typename Mainloop::SmemLayoutAtomSFA;
  using SmemLayoutAtomSFB = typename Mainloop::SmemLayoutAtomSFB;
  using SmemTypeA = typename Mainloop::SmemAllocTypeA;
  using SmemTypeB = typename Mainloop::SmemAllocTypeB;
  using ElementSF = typename Mainloop::ElementSF;
  using MainloopPipeline = typename Mainloop::MainloopPipeline;
  using AccumulatorPipeline = cutlass::PipelineUmmaAsync<1>;  // one tile per CTA: one accumulator stage
  using StrideA = typename Mainloop::StrideA;
  using StrideB = typename Mainloop::StrideB;
  using LayoutSF = typename Mainloop::LayoutSFA;

  static_assert(cute::is_same_v<StrideA, cute::Stride<int64_t, cute::Int<1>, int64_t>>, "A is K-major (M,K,L)");
  static_assert(cute::is_same_v<StrideB, cute::Stride<int64_t, cute::Int<1>, int64_t>>, "B is K-major (N,K,L)");
  static_assert(cute::is_same_v<LayoutSF, ScaleLayout> && cute::is_same_v<typename Mainloop::LayoutSFB, ScaleLayout>,
                "the kernel reads the layout scale_layout.hpp builds (and tests/sm100_host checks)");
  static_assert(Mainloop::SFVecSize == 16, "NVFP4: one e4m3 scale per 16 elements");
  static_assert(cute::size(typename Mainloop::AtomThrShapeMNK{}) == 1, "1-SM MMA (cta_group::1)");

  // Per stage the TMA writes A, B1, SFA, SFB1 (the collective's count) plus B2, SFB2.
  static constexpr uint32_t kBytesB =
      cutlass::bits_to_bytes(cute::cosize(cute::take<0, 3>(SmemLayoutB{})) * cute::sizeof_bits_v<typename Mainloop::ElementB>);
  static constexpr uint32_t kBytesSFB =
      cutlass::bits_to_bytes(cute::cosize(cute::take<0, 3>(SmemLayoutSFB{})) * cute::sizeof_bits_v<ElementSF>);
  static constexpr uint32_t kStageTxBytes = Mainloop::TmaTransactionBytes + kBytesB + kBytesSFB;

  // Epilogue: 4 subtiles of 128 rows x 32 columns, 16-bit, 64-byte swizzle (TMA store box).
  using EpiTile = cute::Shape<cute::_128, cute::_32>;
  using SmemLayoutOut = decltype(cute::tile_to_shape(cute::UMMA::Layout_K_SW64_Atom<uint16_t>{}, EpiTile{}));
  using StrideOut = cute::Stride<int64_t, cute::Int<1>, int64_t>;  // row-major (M,N,L), elements
  using TmaStore = decltype(cute::make_tma_atom(
      cute::SM90_TMA_STORE{},
      cute::make_tensor(cute::make_gmem_ptr(static_cast<uint16_t*>(nullptr)),
                        cute::make_layout(cute::make_shape(0, 0, 0), StrideOut{})),
      SmemLayoutOut{}, EpiTile{}));

  static constexpr int kEpilogueThreads = 128;
  static constexpr int kMmaWarp = 4;
  static constexpr int kLoadWarp = 5;
  static constexpr int kThreads = 192;
};

struct SharedStorage {
  using C = Config;
  // 1024-byte alignment: the 128-byte swizzle pattern of the UMMA/TMA layouts repeats
  // every 1024 bytes and the descriptors assume tiles start on that boundary.
  struct alignas(1024) Tensors {
    cute::ArrayEngine<C::SmemTypeA, cute::cosize_v<C::SmemLayoutA>> a;
    cute::ArrayEngine<C::SmemTypeB, cute::cosize_v<C::SmemLayoutB>> b1;
    cute::ArrayEngine<C::SmemTypeB, cute::cosize_v<C::SmemLayoutB>> b2;
    cute::ArrayEngine<C::ElementSF, cute::cosize_v<C::SmemLayoutSFA>> sfa;
    cute::ArrayEngine<C::ElementSF, cute::cosize_v<C::SmemLayoutSFB>> sfb1;
    cute::ArrayEngine<C::ElementSF, cute::cosize_v<C::SmemLayoutSFB>> sfb2;
  } tensors;
  alignas(1024) cute::ArrayEngine<uint16_t, cute::cosize_v<C::SmemLayoutOut>> out;
  alignas(16) typename C::MainloopPipeline::SharedStorage mainloop_pipe;
  alignas(16) typename C::AccumulatorPipeline::SharedStorage acc_pipe;
  alignas(16) uint32_t tmem_base;
};
// 227 KiB: the opt-in maximum of dynamic shared memory per block on sm_100.
static_assert(sizeof(SharedStorage) <= 232448, "dual kernel shared memory above 227 KiB");

// Kernel parameters (passed as __grid_constant__; TMA descriptors inside). The TMA
// atoms are those CUTLASS's mainloop builds (to_underlying_arguments) for
// (A, B1, SFA, SFB1) and for (A, B2, SFA, SFB2); only the six the kernel uses are kept.
struct Params {
  using MainloopParams = typename Config::Mainloop::Params;
  typename MainloopParams::TMA_A tma_a;
  typename MainloopParams::TMA_B tma_b1, tma_b2;
  typename MainloopParams::TMA_SFA tma_sfa;
  typename MainloopParams::TMA_SFB tma_sfb1, tma_sfb2;
  typename Config::LayoutSF layout_sfa, layout_sfb1, layout_sfb2;
  typename Config::TmaStore tma_out;
  int M = 0, N = 0, K = 0, L = 1;
  int tiles_m = 1;
  float alpha1 = 1.0f, alpha2 = 1.0f;
  const float* alpha1_ptr = nullptr;
  const float* alpha2_ptr = nullptr;
  int activation = 0;  // nvfp4_activation_t
  int out_bf16 = 0;
};

// ---------------------------------------------------------------------------
// Host-side argument building
// ---------------------------------------------------------------------------
using Mainloop = Config::Mainloop;
constexpr int kTileM = cute::size<0>(Config::MmaTile{});
constexpr int kTileN = cute::size<1>(Config::MmaTile{});
static_assert(kTileM == kDualTileM && kTileN == kDualTileN, "plan.hpp's tile counts match the kernel's");

inline int64_t tiles_m(const DualGemmArgs& g) { return (g.M + kTileM - 1) / kTileM; }
inline int64_t tiles_n(const DualGemmArgs& g) { return (g.N + kTileN - 1) / kTileN; }

// CUTLASS mainloop arguments of one of the two products (which = 1: B1, 2: B2).
// `reference_scale_layouts`: CUTLASS's can_implement compares the scale layouts with
// the dense ones it would build; the check runs on those (the real batch stride only
// changes the L-mode stride of the TMA descriptor).
inline Mainloop::Arguments mainloop_args(const DualGemmArgs& g, int which, bool reference_scale_layouts) {
  using cute::Int;
  const void* b = which == 1 ? g.b1 : g.b2;
  const int64_t b_row = which == 1 ? g.b1_row : g.b2_row;
  const int64_t b_batch = which == 1 ? g.b1_batch : g.b2_batch;
  const void* sfb = which == 1 ? g.sfb1 : g.sfb2;
  const int64_t sfb_batch = which == 1 ? g.sfb1_batch : g.sfb2_batch;
  const auto shape = cute::make_shape(g.M, g.N, g.K, g.L);
  // fp4 strides count elements: 2 per byte. With L == 1 the batch stride is never
  // used; give TMA the packed value CUTLASS's own examples use rather than 0.
  const int64_t a_batch = g.L > 1 ? g.a_batch : g.a_row * g.M;
  const int64_t bb = g.L > 1 ? b_batch : b_row * g.N;
  Mainloop::Arguments a;
  a.ptr_A = reinterpret_cast<decltype(a.ptr_A)>(g.a);
  a.dA = cute::make_stride(g.a_row * 2, Int<1>{}, a_batch * 2);
  a.ptr_B = reinterpret_cast<decltype(a.ptr_B)>(b);
  a.dB = cute::make_stride(b_row * 2, Int<1>{}, bb * 2);
  a.ptr_SFA = reinterpret_cast<const Config::ElementSF*>(g.sfa);
  a.ptr_SFB = reinterpret_cast<const Config::ElementSF*>(sfb);
  if (reference_scale_layouts) {
    a.layout_SFA = Mainloop::Sm1xxBlkScaledConfig::tile_atom_to_shape_SFA(shape);
    a.layout_SFB = Mainloop::Sm1xxBlkScaledConfig::tile_atom_to_shape_SFB(shape);
  } else {
    a.layout_SFA = scale_layout_a(g.M, g.N, g.K, g.L, g.sfa_batch);
    a.layout_SFB = scale_layout_b(g.M, g.N, g.K, g.L, sfb_batch);
  }
  return a;
}

// Why the kernel cannot take these arguments (nullptr: it can). Touches no memory.
inline const char* check_args(const DualGemmArgs& g) {
  // TMA: 16-byte row and batch strides. (CUTLASS's can_implement tests the alignment
  // of its default-constructed strides, not of the ones passed, so check them here.)
  for (int64_t s : {g.a_row, g.b1_row, g.b2_row})
    if (s % 16 != 0) return "fp4 row stride not a multiple of 16 bytes";
  if (g.L > 1 && (g.a_batch % 16 != 0 || g.b1_batch % 16 != 0 || g.b2_batch % 16 != 0))
    return "fp4 batch stride not a multiple of 16 bytes";
  if (g.L > 1 && (g.sfa_batch % 16 != 0 || g.sfb1_batch % 16 != 0 || g.sfb2_batch % 16 != 0))
    return "scale batch stride not 16-byte aligned";
  if (tiles_m(g) * tiles_n(g) > INT32_MAX || g.L > 65535) return "too many output tiles for the grid";
  const auto shape = cute::make_shape(g.M, g.N, g.K, g.L);
  if (!Mainloop::can_implement(shape, mainloop_args(g, 1, true)) ||
      !Mainloop::can_implement(shape, mainloop_args(g, 2, true)))
    return "CUTLASS can_implement rejected the problem";
  return nullptr;
}

}  // namespace nvfp4::sm100::dual
