// Device pieces both GEMV kernels use: byte-wise loads for operands whose base or
// strides are not aligned, where a row's scales lie in either scale layout, and the
// output store.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// Byte-wise fallbacks for operands whose base or strides are not aligned.
__device__ __forceinline__ uint32_t ld_bytes4(const uint8_t* p) {
  return static_cast<uint32_t>(__ldg(p)) | (static_cast<uint32_t>(__ldg(p + 1)) << 8) |
         (static_cast<uint32_t>(__ldg(p + 2)) << 16) | (static_cast<uint32_t>(__ldg(p + 3)) << 24);
}
__device__ __forceinline__ uint4 ld_bytes16(const uint8_t* p) {
  return make_uint4(ld_bytes4(p), ld_bytes4(p + 4), ld_bytes4(p + 8), ld_bytes4(p + 12));
}
__device__ __forceinline__ uint32_t ld_bytes2(const uint8_t* p) {
  return static_cast<uint32_t>(__ldg(p)) | (static_cast<uint32_t>(__ldg(p + 1)) << 8);
}

// Byte offset of the scale pair of chunk `chunk` (scale columns 2*chunk, 2*chunk+1)
// relative to the row's base: linear 2*chunk; blocked (chunk/2)*512 + (chunk%2)*2
// (the blocked layout: docs/design.md "Formats and layouts").
__device__ __forceinline__ int64_t sf_chunk_offset(int64_t chunk, bool blocked) {
  return blocked ? (chunk >> 1) * 512 + (chunk & 1) * 2 : chunk * 2;
}
// Byte offset of row r's scales (column 0) inside one batch.
__device__ __forceinline__ int64_t sf_row_offset(int64_t r, bool blocked, int64_t row_stride,
                                                 int64_t tile_row_bytes) {
  return blocked ? (r >> 7) * tile_row_bytes + (r & 31) * 16 + ((r & 127) >> 5) * 4 : r * row_stride;
}

// c[off] = v in the output dtype (fp16 / bf16 round to nearest, else fp32): the decode-regime
// kernels' element store (gemm, dual and MoE routes).
__device__ __forceinline__ void store_value(void* c, int32_t c_dtype, int64_t off, float v) {
  switch (c_dtype) {
    case static_cast<int32_t>(DType::kFloat16):
      static_cast<__half*>(c)[off] = __float2half_rn(v);
      break;
    case static_cast<int32_t>(DType::kBFloat16):
      static_cast<__nv_bfloat16*>(c)[off] = __float2bfloat16_rn(v);
      break;
    default:
      static_cast<float*>(c)[off] = v;
      break;
  }
}

// c = acc * factor * alpha (factor: the kernel's fixed scaling of its sums).
__device__ __forceinline__ void store_out(const Args& args, int64_t l, int64_t row, float acc, float factor) {
  // store_value's switch written out: with the call, ptxas schedules the GEMV kernels
  // differently (the CUDA-core kernel's decode too), which has not been timed.
  const float v = acc * factor * (args.alpha_ptr ? *args.alpha_ptr : args.alpha);
  const int64_t off = l * args.c_batch + row * args.c_row;
  switch (args.c_dtype) {
    case static_cast<int32_t>(DType::kFloat16):
      static_cast<__half*>(args.c)[off] = __float2half_rn(v);
      break;
    case static_cast<int32_t>(DType::kBFloat16):
      static_cast<__nv_bfloat16*>(args.c)[off] = __float2bfloat16_rn(v);
      break;
    default:
      static_cast<float*>(args.c)[off] = v;
      break;
  }
}

}  // namespace nvfp4::sm90::gemv_detail
