// sm100a NVFP4 GEMV: c[l, m] = alpha * sum_k a[l, m, k] * b[l, k], on CUDA cores.
//
// Bandwidth-bound: A is read once with 16-byte loads (32 fp4 values = two scale
// blocks). The packed values are widened with the sm100 conversion instructions
//   cvt.rn.f16x2.e2m1x2  (one byte = two e2m1 -> two exact fp16)
//   cvt.rn.f16x2.e4m3x2  (two scale bytes -> two exact fp16)
// Exactness (docs/design.md, "Numerics"): a product of two e2m1 values is a multiple of 1/4 up to 36,
// so a chain of 8 HFMA2 products per fp16 lane (max 288 < 2048 quarter steps) is
// exact; each 16-element block's partial sum is then widened to fp32, multiplied by
// sfa*sfb (exact in fp32) and accumulated in fp32.
//
// Mapping: a group of T threads (T a power of two, 32..256, ~K/32) sweeps K for
// kRows rows at once, so each 16-byte chunk of b is converted once per kRows rows.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "../common/cuda_check.hpp"
#include "../common/formats.h"
#include "kernels.hpp"
#include "launchers.hpp"

namespace nvfp4::sm100 {
namespace {

constexpr int kThreads = 256;

struct GemvParams {
  const uint8_t* a;
  int64_t a_row, a_batch;
  const uint8_t* b;
  int64_t b_batch;
  const uint8_t* sfa;
  int64_t sfa_row, sfa_batch;
  const uint8_t* sfb;
  int64_t sfb_batch;
  void* c;
  int64_t c_row, c_batch;  // elements
  DType c_dtype;
  float alpha;
  const float* alpha_ptr;
  int64_t M, K, L;
  int64_t chunks;  // K / 32: 16-byte chunks per row
  int threads_per_row;
};

// Two e2m1 values (one byte, element 2i in the low nibble) -> fp16x2 (element 2i low).
__device__ __forceinline__ void e2m1x4_to_half2x4(uint32_t packed, uint32_t out[4]) {
  asm("{\n"
      ".reg .b8 b0, b1, b2, b3;\n"
      "mov.b32 {b0, b1, b2, b3}, %4;\n"
      "cvt.rn.f16x2.e2m1x2 %0, b0;\n"
      "cvt.rn.f16x2.e2m1x2 %1, b1;\n"
      "cvt.rn.f16x2.e2m1x2 %2, b2;\n"
      "cvt.rn.f16x2.e2m1x2 %3, b3;\n"
      "}\n"
      : "=r"(out[0]), "=r"(out[1]), "=r"(out[2]), "=r"(out[3])
      : "r"(packed));
}

// Two e4m3 scale bytes -> two fp32 (exact: every e4m3 value is an fp16 value).
__device__ __forceinline__ float2 e4m3x2_to_float2(uint16_t packed) {
  uint32_t h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h2) : "h"(packed));
  return __half22float2(*reinterpret_cast<const __half2*>(&h2));
}

__device__ __forceinline__ __half2 as_half2(uint32_t v) { return *reinterpret_cast<const __half2*>(&v); }

// The two scale bytes of columns (2j, 2j+1) of `row`: contiguous in both layouts.
template <bool kBlocked>
__device__ __forceinline__ uint16_t load_scale_pair(const uint8_t* base, int64_t row, int64_t row_stride,
                                                    int64_t col, int64_t K) {
  const int64_t off = kBlocked ? blocked_sf_offset(row, col, K) : row * row_stride + col;
  return __ldg(reinterpret_cast<const uint16_t*>(base + off));
}

__device__ __forceinline__ void store_out(void* c, DType dtype, int64_t index, float v) {
  switch (dtype) {
    case DType::kFloat16: static_cast<__half*>(c)[index] = __float2half_rn(v); break;
    case DType::kBFloat16: static_cast<__nv_bfloat16*>(c)[index] = __float2bfloat16_rn(v); break;
    default: static_cast<float*>(c)[index] = v; break;
  }
}

template <bool kBlocked, int kRows>
__global__ void __launch_bounds__(kThreads, 3) gemv_kernel(const __grid_constant__ GemvParams p) {
  const int T = p.threads_per_row;
  const int group = threadIdx.x / T;
  const int lane_g = threadIdx.x % T;
  const int groups = kThreads / T;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * groups + group) * kRows;
  const float alpha = p.alpha_ptr != nullptr ? __ldg(p.alpha_ptr) : p.alpha;
  __shared__ float partial[kThreads / 32][kRows];

  for (int64_t l = blockIdx.y; l < p.L; l += gridDim.y) {
    const uint8_t* b = p.b + l * p.b_batch;
    const uint8_t* sfb = p.sfb + l * p.sfb_batch;
    const uint8_t* a = p.a + l * p.a_batch;
    const uint8_t* sfa = p.sfa + l * p.sfa_batch;
    float acc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;

    for (int64_t j = lane_g; j < p.chunks; j += T) {
      // b: 32 values, converted once for all kRows rows.
      const uint4 bq = __ldg(reinterpret_cast<const uint4*>(b) + j);
      uint32_t bh[16];
      e2m1x4_to_half2x4(bq.x, bh + 0);
      e2m1x4_to_half2x4(bq.y, bh + 4);
      e2m1x4_to_half2x4(bq.z, bh + 8);
      e2m1x4_to_half2x4(bq.w, bh + 12);
      const float2 sb = e4m3x2_to_float2(load_scale_pair<kBlocked>(sfb, 0, 0, 2 * j, p.K));
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t row = row0 + r;
        if (row >= p.M) break;
        const uint4 aq = __ldg(reinterpret_cast<const uint4*>(a + row * p.a_row) + j);
        const float2 sa = e4m3x2_to_float2(load_scale_pair<kBlocked>(sfa, row, p.sfa_row, 2 * j, p.K));
        uint32_t ah[16];
        e2m1x4_to_half2x4(aq.x, ah + 0);
        e2m1x4_to_half2x4(aq.y, ah + 4);
        e2m1x4_to_half2x4(aq.z, ah + 8);
        e2m1x4_to_half2x4(aq.w, ah + 12);
        __half2 s0 = __float2half2_rn(0.0f), s1 = __float2half2_rn(0.0f);
#pragma unroll
        for (int i = 0; i < 8; ++i) s0 = __hfma2(as_half2(ah[i]), as_half2(bh[i]), s0);      // block 2j
#pragma unroll
        for (int i = 8; i < 16; ++i) s1 = __hfma2(as_half2(ah[i]), as_half2(bh[i]), s1);     // block 2j+1
        const float2 f0 = __half22float2(s0), f1 = __half22float2(s1);
        acc[r] = fmaf(f0.x + f0.y, sa.x * sb.x, acc[r]);
        acc[r] = fmaf(f1.x + f1.y, sa.y * sb.y, acc[r]);
      }
    }

    // Reduce over the T threads of the group: shuffles inside each warp, then the
    // group's warps through shared memory.
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], off);
    const int warp = threadIdx.x / 32;
    if (T > 32) {
      __syncthreads();  // previous batch's readers are done with `partial`
      if ((threadIdx.x & 31) == 0)
#pragma unroll
        for (int r = 0; r < kRows; ++r) partial[warp][r] = acc[r];
      __syncthreads();
      if (lane_g == 0) {
        const int first = group * (T / 32);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          float s = 0.0f;
          for (int w = 0; w < T / 32; ++w) s += partial[first + w][r];
          acc[r] = s;
        }
      }
    }
    if (lane_g == 0) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int64_t row = row0 + r;
        if (row < p.M) store_out(p.c, p.c_dtype, l * p.c_batch + row * p.c_row, alpha * acc[r]);
      }
    }
  }
}

template <bool kBlocked, int kRows>
nvfp4_status_t launch(const GemvParams& p, cudaStream_t stream) {
  const int groups = kThreads / p.threads_per_row;
  const int64_t rows_per_cta = static_cast<int64_t>(groups) * kRows;
  const int64_t blocks_x = (p.M + rows_per_cta - 1) / rows_per_cta;
  if (blocks_x > INT32_MAX) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a gemv: M too large");
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(p.L < 65535 ? p.L : 65535));
  gemv_kernel<kBlocked, kRows><<<grid, kThreads, 0, stream>>>(p);
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
}

}  // namespace

nvfp4_status_t gemv(const GemmProblem& prob, const Exec& exec) {
  if (const char* why = gemv_unsupported(prob)) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a gemv: %s", why);
  if (prob.sfa.layout != prob.sfb.layout) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm100a gemv: mixed scale layouts");
  GemvParams p;
  p.a = prob.a.data;
  p.a_row = prob.a.row_stride;
  p.a_batch = prob.a.batch_stride;
  p.b = prob.b.data;
  p.b_batch = prob.b.batch_stride;
  p.sfa = prob.sfa.data;
  p.sfa_row = prob.sfa.row_stride;
  p.sfa_batch = prob.sfa.batch_stride;
  p.sfb = prob.sfb.data;
  p.sfb_batch = prob.sfb.batch_stride;
  p.c = prob.c.data;
  p.c_row = prob.c.row_stride;
  p.c_batch = prob.c.batch_stride;
  p.c_dtype = prob.c.dtype;
  p.alpha = prob.alpha.value;
  p.alpha_ptr = prob.alpha.device_ptr;
  p.M = prob.M;
  p.K = prob.K;
  p.L = prob.L;
  p.chunks = prob.K / 32;
  int t = 32;
  while (t < kThreads && t < p.chunks) t *= 2;
  p.threads_per_row = t;

  // 4 rows per thread amortize the b conversion; fall back to 1 when that would
  // leave SMs idle (small M * L).
  const int64_t ctas_at_4 = (p.M + (kThreads / t) * 4 - 1) / ((kThreads / t) * 4) * p.L;
  const bool few_rows = ctas_at_4 < 2 * static_cast<int64_t>(exec.sm_count > 0 ? exec.sm_count : 148);
  const cudaStream_t stream = cuda_stream(exec);
  const bool blocked = prob.sfa.layout == NVFP4_SF_BLOCKED;
  if (blocked) return few_rows ? launch<true, 1>(p, stream) : launch<true, 4>(p, stream);
  return few_rows ? launch<false, 1>(p, stream) : launch<false, 4>(p, stream);
}

}  // namespace nvfp4::sm100
