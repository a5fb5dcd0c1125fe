// Output stores: a result rounded exactly once, to nearest even, to the output dtype
// (DType of problem.hpp) and written at element `index`. The GPU backends store fp32
// accumulators (hardware conversions); the CPU backend stores doubles (the bit-level
// conversions of half_convert.hpp, one rounding straight from double).
#pragma once

#include <stdint.h>

#include "../problem.hpp"
#include "half_convert.hpp"

#if defined(__CUDACC__)
#  include <cuda_bf16.h>
#  include <cuda_fp16.h>
#endif

namespace nvfp4 {

#if defined(__CUDACC__)
__device__ __forceinline__ void store_out(void* data, DType dtype, int64_t index, float v) {
  switch (dtype) {
    case DType::kFloat16: static_cast<__half*>(data)[index] = __float2half_rn(v); break;
    case DType::kBFloat16: static_cast<__nv_bfloat16*>(data)[index] = __float2bfloat16_rn(v); break;
    case DType::kFloat32: static_cast<float*>(data)[index] = v; break;
  }
}
#endif

// Host memory (the CPU backend). A float argument converts to double exactly, so it is
// still one rounding.
inline void store_out_host(void* data, DType dtype, int64_t index, double v) {
  switch (dtype) {
    case DType::kFloat16: static_cast<uint16_t*>(data)[index] = ref::double_to_fp16(v); break;
    case DType::kBFloat16: static_cast<uint16_t*>(data)[index] = ref::double_to_bf16(v); break;
    case DType::kFloat32: static_cast<float*>(data)[index] = static_cast<float>(v); break;
  }
}

}  // namespace nvfp4
