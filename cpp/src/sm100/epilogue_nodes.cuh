// Epilogue pieces of the sm100a kernels. Outputs are 16-bit patterns whose format
// (fp16 or bf16, RNE like every other backend) is chosen at run time, so one kernel
// instantiation serves both output dtypes.
//
// Store16Node (gemm, grouped; a CUTLASS EVT node): out = alpha * acc, alpha from a
// value, a device pointer, or (grouped) a per-group pointer array indexed by the
// tile's group.
// dual_activation / output_bits are also used by the dual GEMM's own epilogue
// (dual_kernel.cuh): out = act(alpha1 * acc1) * (alpha2 * acc2).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/numeric_conversion.h>
#include <cutlass/epilogue/fusion/sm90_visitor_tma_warpspecialized.hpp>

#include "../common/activation.hpp"
#include "kernels.hpp"

namespace nvfp4::sm100 {

// The formulas of common/activation.hpp (every backend's), in the argument order of the
// epilogues here.
CUTLASS_HOST_DEVICE float dual_activation(float x, int activation) {
  return nvfp4::activation(static_cast<nvfp4_activation_t>(activation), x);
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

}  // namespace nvfp4::sm100
