// Epilogue visitors (CUTLASS EVT nodes) of the sm100a kernels. Both write 16-bit
// patterns whose format (fp16 or bf16, RNE like every other backend) is chosen at
// run time, so one kernel instantiation serves both output dtypes.
//
// Store16Node (gemm, grouped): out = alpha * acc, alpha from a value, a device
// pointer, or (grouped) a per-group pointer array indexed by the tile's group.
//
// DualGluNode (dual gemm): the dual GEMM runs CUTLASS's block-scaled GEMM on B' =
// rows of b1 and b2 interleaved (row 2n = b1[n], row 2n+1 = b2[n]), so accumulator
// column 2n holds A.b1[n] and column 2n+1 holds A.b2[n]. Each epilogue thread owns one
// accumulator row and a run of consecutive columns (tcgen05.ld 32dp32b: lane = row;
// checked at compile time below), so both halves of every output element sit in the
// same thread, in adjacent registers:
//     out[m, n] = act(alpha1 * acc[m, 2n]) * (alpha2 * acc[m, 2n+1])
// The result is emitted as its two bytes, low byte at column 2n and high byte at
// 2n+1: with the kernel's output tensor declared as uint8 of shape (M, 2N) over the
// caller's output bytes (row stride = 2 * out row stride), the regular smem-staged
// TMA store writes exactly the (M, N) 16-bit output.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/numeric_conversion.h>
#include <cutlass/epilogue/fusion/sm90_visitor_tma_warpspecialized.hpp>

#include "kernels.hpp"

namespace nvfp4::sm100 {

CUTLASS_HOST_DEVICE float dual_activation(float x, int activation) {
  if (activation == NVFP4_ACT_GELU_TANH) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
  }
  return x / (1.0f + expf(-x));  // silu
}

// 16-bit pattern of the output value (RNE, like every other backend's stores).
CUTLASS_HOST_DEVICE uint16_t output_bits(float v, int out_bf16) {
#if defined(__CUDA_ARCH__)
  if (out_bf16) return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  return __half_as_ushort(__float2half_rn(v));
#else
  // host builds never run the epilogue; keep the function defined for the host pass
  (void)v;
  (void)out_bf16;
  return 0;
#endif
}

// Shared boilerplate of a node without workspace or shared memory.
template <class Args>
struct SimpleNodeBase : cutlass::epilogue::fusion::Sm90VisitorImpl<> {
  struct SharedStorage {};
  using Arguments = Args;
  using Params = Args;
  template <class ProblemShape>
  static constexpr Params to_underlying_arguments(ProblemShape const&, Arguments const& args, void*) {
    return args;
  }
  template <class ProblemShape>
  static size_t get_workspace_size(ProblemShape const&, Arguments const&) {
    return 0;
  }
  template <class ProblemShape>
  static cutlass::Status initialize_workspace(ProblemShape const&, Arguments const&, void*, cudaStream_t,
                                              cutlass::CudaHostAdapter* = nullptr) {
    return cutlass::Status::kSuccess;
  }
  CUTLASS_HOST_DEVICE SimpleNodeBase() : params() {}
  CUTLASS_HOST_DEVICE SimpleNodeBase(Params const& p, SharedStorage const&) : params(p) {}
  Params const params;
};

struct Store16Args {
  float alpha = 1.0f;
  const float* alpha_ptr = nullptr;              // read at kernel time when set
  const float* const* alpha_ptr_array = nullptr;  // grouped: one pointer per group
  int out_bf16 = 0;
};

struct Store16Node : SimpleNodeBase<Store16Args> {
  using SimpleNodeBase<Store16Args>::SimpleNodeBase;
  template <class ProblemShape>
  static bool can_implement(ProblemShape const&, Arguments const&) {
    return true;
  }

  struct ConsumerStoreCallbacks : cutlass::epilogue::fusion::EmptyConsumerStoreCallbacks {
    float alpha;
    int out_bf16;
    CUTLASS_DEVICE ConsumerStoreCallbacks(float alpha, int out_bf16) : alpha(alpha), out_bf16(out_bf16) {}

    template <typename ElementAccumulator, typename ElementInput, int FragmentSize>
    CUTLASS_DEVICE cutlass::Array<uint16_t, FragmentSize> visit(
        cutlass::Array<ElementAccumulator, FragmentSize> const&, int, int, int,
        cutlass::Array<ElementInput, FragmentSize> const& frg_in) {
      cutlass::Array<uint16_t, FragmentSize> out;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < FragmentSize; ++i) out[i] = output_bits(alpha * static_cast<float>(frg_in[i]), out_bf16);
      return out;
    }
  };

  template <bool ReferenceSrc, class... Args>
  CUTLASS_DEVICE auto get_consumer_store_callbacks(cutlass::epilogue::fusion::ConsumerStoreArgs<Args...> const& args) {
    // grouped kernels: the tile's L coordinate is its group
    const int l = static_cast<int>(cute::get<3>(args.tile_coord_mnkl));
    const float alpha = params.alpha_ptr_array ? *params.alpha_ptr_array[l]
                        : params.alpha_ptr     ? *params.alpha_ptr
                                               : params.alpha;
    return ConsumerStoreCallbacks(alpha, params.out_bf16);
  }
};

// tcgen05.ld .32x32b: 32 data paths, lane i of a warp reads row i of its
// sub-partition, its registers hold consecutive 32-bit columns.
template <class Op> struct is_tmem_load_32dp32b : cute::false_type {};
#define NVFP4_TMEM_32DP32B(n) \
  template <> struct is_tmem_load_32dp32b<cute::SM100::TMEM::LOAD::SM100_TMEM_LOAD_32dp32b##n##x> : cute::true_type {};
NVFP4_TMEM_32DP32B(1)
NVFP4_TMEM_32DP32B(2)
NVFP4_TMEM_32DP32B(4)
NVFP4_TMEM_32DP32B(8)
NVFP4_TMEM_32DP32B(16)
NVFP4_TMEM_32DP32B(32)
NVFP4_TMEM_32DP32B(64)
NVFP4_TMEM_32DP32B(128)
#undef NVFP4_TMEM_32DP32B
template <class TiledCopy> struct tiled_copy_op;
template <class Op, class T, class... Rest>
struct tiled_copy_op<cute::TiledCopy<cute::Copy_Atom<Op, T>, Rest...>> {
  using type = Op;
};

// True when every stride along N of the (flattened) layout other than the first
// mode is even: then each register's column has the parity of its index in the run.
template <class Stride>
constexpr bool n_stride_even() {
  if constexpr (cute::is_same_v<Stride, cute::C<0>> || cute::is_same_v<Stride, cute::Int<0>>) return true;
  else if constexpr (cute::is_scaled_basis<Stride>::value) {
    if constexpr (Stride::mode() == 1) return (decltype(Stride{}.value())::value % 2) == 0;
    else return true;  // along M
  } else return false;
}
template <class Layout, int... I>
constexpr bool rest_strides_even(cute::integer_sequence<int, I...>) {
  return (n_stride_even<cute::remove_cvref_t<decltype(cute::stride<I + 1>(Layout{}))>>() && ...);
}

struct DualArgs {
  float alpha1 = 1.0f, alpha2 = 1.0f;
  const float* alpha1_ptr = nullptr;
  const float* alpha2_ptr = nullptr;
  int activation = 0;  // nvfp4_activation_t
  int out_bf16 = 0;
};

struct DualGluNode : SimpleNodeBase<DualArgs> {
  using SimpleNodeBase<DualArgs>::SimpleNodeBase;
  template <class ProblemShape>
  static bool can_implement(ProblemShape const& problem_shape, Arguments const&) {
    // the (M, 2N) byte view must hold whole 16-bit values
    return cute::get<1>(problem_shape) % 2 == 0;
  }

  struct ConsumerStoreCallbacks : cutlass::epilogue::fusion::EmptyConsumerStoreCallbacks {
    float alpha1, alpha2;
    int activation, out_bf16;

    CUTLASS_DEVICE ConsumerStoreCallbacks(Params const& p)
        : alpha1(p.alpha1_ptr ? *p.alpha1_ptr : p.alpha1),
          alpha2(p.alpha2_ptr ? *p.alpha2_ptr : p.alpha2),
          activation(p.activation),
          out_bf16(p.out_bf16) {}

    // frg_acc is passed through by the Sm90AccFetch child as frg_in.
    template <typename ElementAccumulator, typename ElementInput, int FragmentSize>
    CUTLASS_DEVICE cutlass::Array<uint8_t, FragmentSize> visit(
        cutlass::Array<ElementAccumulator, FragmentSize> const&, int, int, int,
        cutlass::Array<ElementInput, FragmentSize> const& frg_in) {
      static_assert(FragmentSize % 2 == 0, "pairs of accumulator columns");
      cutlass::Array<uint8_t, FragmentSize> out;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < FragmentSize; i += 2) {
        const float gate = alpha1 * static_cast<float>(frg_in[i]);
        const float up = alpha2 * static_cast<float>(frg_in[i + 1]);
        const uint16_t bits = output_bits(dual_activation(gate, activation) * up, out_bf16);
        out[i] = static_cast<uint8_t>(bits & 0xFFu);
        out[i + 1] = static_cast<uint8_t>(bits >> 8);
      }
      return out;
    }
  };

  template <bool ReferenceSrc, class... Args>
  CUTLASS_DEVICE auto get_consumer_store_callbacks(cutlass::epilogue::fusion::ConsumerStoreArgs<Args...> const& args) {
    // The pairing needs: inside one thread, register i and i+1 (i even) are columns
    // n and n+1 (n even) of one row. The thread's coordinate tensor (T2R, T2R_M,
    // T2R_N, EPI_M, EPI_N) must start with a mode of unit column stride and even
    // length (the tcgen05.ld 32dp32b pattern: one row per thread, consecutive
    // columns); with the subtile origin a multiple of that length, n is even.
    using namespace cute;
    using CopyOp = typename tiled_copy_op<remove_cvref_t<decltype(args.tiled_copy)>>::type;
    static_assert(is_tmem_load_32dp32b<CopyOp>::value, "epilogue must load TMEM with tcgen05.ld.32x32b (lane = row)");
    auto values = coalesce(layout<0>(args.tCcD.layout()));  // e.g. (_32):(E<1>) for 32dp32b32x
    using ValueShape = decltype(shape(values));
    using ValueStride = decltype(stride(values));
    static_assert(is_static_v<ValueShape> && is_static_v<ValueStride>, "static thread value layout");
    static_assert(is_integral<ValueShape>::value, "thread values form a single run");
    static_assert(is_same_v<ValueStride, ScaledBasis<C<1>, 1>>, "thread values must run along N with unit stride");
    static_assert(ValueShape::value % 2 == 0, "even number of consecutive columns per thread");
    using Flat = decltype(flatten(args.tCcD.layout()));
    static_assert(rest_strides_even<Flat>(make_integer_sequence<int, decltype(rank(Flat{}))::value - 1>{}),
                  "subtile / repeat origins must be even columns");
    return ConsumerStoreCallbacks(params);
  }
};

}  // namespace nvfp4::sm100
