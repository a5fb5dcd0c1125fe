// Device helpers shared by the portable kernels (any CC >= 8.0).
//
// Everything numeric here is either a formats.h helper or an equivalent that was
// checked bit-for-bit against it (see the comments, and the exhaustive checks of the
// portable test driver): the portable backend is the on-GPU oracle, so "faster but
// slightly different" is never acceptable.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "common/align.hpp"
#include "common/cuda_check.hpp"
#include "common/formats.h"
#include "common/store.hpp"
#include "problem.hpp"

namespace nvfp4 {
namespace portable {

// ---------------------------------------------------------------------------
// Host-side launch helpers
// ---------------------------------------------------------------------------

// Vector paths test their pointers and strides with aligned_to (common/align.hpp).

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kMaxGridX = 2147483647;  // gridDim.x limit (2^31 - 1)

// n / d and n % d for a runtime divisor with a multiply-high and a shift
// (Granlund-Montgomery). Valid for 1 <= d < 2^31 and n < 2^31.
struct FastDivmod {
  uint32_t divisor = 1;
  uint32_t mul = 0;
  uint32_t shr = 0;

  FastDivmod() = default;
  explicit FastDivmod(uint32_t d) : divisor(d) {
    if (d <= 1) return;
    uint32_t l = 0;
    while ((uint64_t(1) << l) < d) ++l;              // ceil(log2 d)
    const uint64_t p = 31 + l;
    mul = static_cast<uint32_t>(((uint64_t(1) << p) + d - 1) / d);
    shr = static_cast<uint32_t>(p - 32);
  }
  __device__ __forceinline__ void divmod(uint32_t n, uint32_t& q, uint32_t& r) const {
    q = divisor == 1 ? n : (__umulhi(n, mul) >> shr);
    r = n - q * divisor;
  }
};

// ---------------------------------------------------------------------------
// Operand access
// ---------------------------------------------------------------------------

// Byte offset of scale (batch l, row r, scale column c) of a rows x K operand.
__device__ __forceinline__ int64_t scale_offset(const ScaleOperand& s, int64_t l, int64_t r, int64_t c, int64_t K) {
  return l * s.batch_stride +
         (s.layout == NVFP4_SF_BLOCKED ? blocked_sf_offset(r, c, K) : r * s.row_stride + c);
}

// scale_offset's offsets with 32-bit row and column math and the layout known at compile
// time, for the row-walking kernels whose per-segment address work is a large share of their
// instructions. Valid for rows < 2^31 and a 128-row band of blocked scales
// (blocked_sf_cols(K) * 128 bytes) < 2^31: the launchers check both.
//   row(r, stride): offset of row r's column 0; stride = the row stride (linear) or the
//                   band size blocked_sf_cols(K) * 128 (blocked)
//   col(c):         offset of column c from it
template <bool kBlocked>
struct ScaleAddr32 {
  __device__ __forceinline__ static int64_t row(uint32_t r, int64_t stride) {
    return kBlocked ? int64_t(r >> 7) * stride + (((r & 31) << 4) | (((r >> 5) & 3) << 2)) : int64_t(r) * stride;
  }
  __device__ __forceinline__ static uint32_t col(uint32_t c) { return kBlocked ? ((c >> 2) << 9) | (c & 3) : c; }
  static constexpr uint32_t kStep4 = kBlocked ? 512 : 4;  // col(c + 4) - col(c)
};

__device__ __forceinline__ float read_alpha(const Alpha& a) { return a.device_ptr ? *a.device_ptr : a.value; }

// Outputs are written with store_out (common/store.hpp): fp32 rounded once to the dtype.

// ---------------------------------------------------------------------------
// Fast, bit-exact format conversions (the quantize / dequantize hot paths)
// ---------------------------------------------------------------------------

// max(a, b) where a NaN operand wins (PTX max.NaN, sm_80+). Used for block amax,
// whose NaN must reach the scale (0x7F) exactly like the CPU's nan_max_abs.
__device__ __forceinline__ float max_nan(float a, float b) {
#if defined(__CUDA_ARCH__)
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
#else  // host model of the instruction (host-side emulation tests)
  return (a != a || b != b) ? __uint_as_float(0x7FFFFFFFu) : (a > b ? a : b);
#endif
}

// e4m3 byte -> fp32, same value as formats.h e4m3_to_float (NaN payload aside):
// the 7 magnitude bits placed at fp32 bits 26..20 give value * 2^-120 for normal and
// subnormal e4m3 alike (subnormals land on fp32 subnormals), so one exact multiply
// by 2^120 rebiases. 0x7F / 0xFF are NaN.
__device__ __forceinline__ float e4m3_to_float_fast(uint32_t b) {
  const float v = __uint_as_float(((b & 0x7Fu) << 20) | ((b & 0x80u) << 24)) * 0x1p120f;
  return (b & 0x7Fu) == 0x7Fu ? __uint_as_float(0x7FFFFFFFu) : v;
}

// fp32 -> e4m3 (RNE, saturating to +-448, NaN -> 0x7F): formats.h float_to_e4m3,
// which is specified as the semantics of cvt.rn.satfinite.e4m3x2.f32. Where that
// instruction exists (sm_89+) use it, with NaN pinned to formats.h's 0x7F; the test
// driver compares both over all 2^32 inputs. Define NVFP4_PORTABLE_SOFT_E4M3 to
// force the software path.
__device__ __forceinline__ uint32_t float_to_e4m3_fast(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && !defined(NVFP4_PORTABLE_SOFT_E4M3)
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(f));
  return f != f ? 0x7Fu : (static_cast<uint32_t>(r) & 0xFFu);
#else
  return float_to_e4m3(f);
#endif
}

// e2m1 rounding without compares. The e2m1 grid has quantum 0.5 below 2, 1 on
// [2,4) and 2 above 4; for a = |v| >= 0 (not NaN)
//   code(a) = min(rne(2a), rne(a) + 2, rne(a/2) + 4, 7)
// because each term is the code on its own range and is >= it elsewhere (rne is
// monotone and rne(t) + 2k == rne(t + 2k)). Each rne(.) + const is one FMA / add
// against the magic 2^23 (where fp32 has quantum 1), so the result's float bits are
// 0x4B000000 + term and fminf on them is min on the terms. Returns those bits,
// 0x4B000000 + code. Without the clamp to 7 it is exact for a < 7 (the last term is
// then <= 7). Both forms were checked against float_to_e2m1 over every float
// (portable test driver, and on the host).
template <bool kClamp>
__device__ __forceinline__ uint32_t e2m1_code_magic(float a) {
  const float r2 = __fmaf_rn(a, 2.0f, 8388608.0f);     // 2^23 + rne(2a)
  const float r1 = __fadd_rn(a, 8388610.0f);           // 2^23 + rne(a) + 2
  const float rh = __fmaf_rn(a, 0.5f, 8388612.0f);     // 2^23 + rne(a/2) + 4
  float m = fminf(fminf(r2, r1), rh);
  if constexpr (kClamp) m = fminf(m, 8388615.0f);      // 2^23 + 7
  return __float_as_uint(m);
}

// Runtime copies of 16^i and 16 (kernel arguments). Multiplying by them keeps nibble
// packing and sign extraction on the FMA pipe as IMAD / IMAD.HI; with literal powers
// of two the compiler emits shifts and LEA on the integer/logic pipe, which the
// quantize inner loop already saturates with min/max (measured in SASS: ~30% fewer
// integer-pipe instructions per element this way).
struct NibblePack {
  uint32_t mul[8];
  uint32_t sixteen;
  static NibblePack make() {
    NibblePack k;
    for (int i = 0; i < 8; ++i) k.mul[i] = 1u << (4 * i);
    k.sixteen = 16u;
    return k;
  }
};

// Packs e2m1(x[i] * inv) for N values into q[i / 8], element i at nibble i % 8, for inv > 0 finite (so sign(x*inv) == sign(x), zeros included, and
// x*inv is never NaN: a NaN x would have made the block scale NaN and inv 0).
//   codes: sum_i (0x4B000000 + code_i) * 16^i = sum_i code_i * 16^i + 0xFB000000 (mod
//          2^32: the magic contributes 0x4B000000 at i=0, 0xB0000000 at i=1, 0 beyond)
//   signs: sum_i (x_i >> 28) * 16^i puts x_i's sign at bit 4i+3 with only x_i's own
//          exponent bits below it in the nibble (no carries), masked by 0x88888888.
template <bool kClamp, int N>
__device__ __forceinline__ void pack_fast(const float (&x)[N], float inv, const NibblePack& k, uint32_t (&q)[N / 8],
                                          const uint32_t* signs = nullptr) {
  uint32_t w[N / 8] = {}, sg[N / 8] = {};
#pragma unroll
  for (int i = 0; i < N; ++i) {
    w[i / 8] += e2m1_code_magic<kClamp>(__fmul_rn(fabsf(x[i]), inv)) * k.mul[i % 8];
    if (!signs) sg[i / 8] += __umulhi(__float_as_uint(x[i]), k.sixteen) * k.mul[i % 8];
  }
#pragma unroll
  for (int j = 0; j < N / 8; ++j) q[j] = (w[j] - 0xFB000000u) | ((signs ? signs[j] : sg[j]) & 0x88888888u);
}

// Per-kernel constants of the quantization recipe.
struct QuantScale {
  float gs;        // decode global scale
  float six_gs;    // 6 * gs (fp32, as in quant_block_scale)
  bool gs_normal;  // 2^-90 <= gs <= 2^90: block scale products stay normal fp32
};
__device__ __forceinline__ QuantScale make_quant_scale(float gs) {
  return QuantScale{gs, __fmul_rn(6.0f, gs), gs >= 0x1p-90f && gs <= 0x1p90f};
}

// A block's scale byte and inverse scale (formats.h quant_block_scale /
// quant_inv_scale) from its amax (NaN wins), and which packing its codes need.
struct BlockScale {
  uint32_t sf;
  float inv;
  int mode;  // 0: fast, no clamp; 1: fast with clamp to code 7; 2: reference conversion
};
// inv_lut (optional): quant_inv_of(sf, gs) for all 256 scale bytes, built per CTA by
// fill_inv_lut -- the same values, one shared-memory load instead of ~20 instructions.
__device__ __forceinline__ float quant_inv_of(uint32_t sf, float gs) {
  // quant_inv_scale: s = e4m3 * gs; 0 for s == 0 or NaN, else the IEEE 1/s.
  const float s = __fmul_rn(e4m3_to_float_fast(sf), gs);
  return (s == 0.0f || s != s) ? 0.0f : __frcp_rn(s);
}
__device__ __forceinline__ void fill_inv_lut(float* inv_lut, float gs) {
  for (int i = threadIdx.x; i < 256; i += blockDim.x) inv_lut[i] = quant_inv_of(static_cast<uint32_t>(i), gs);
}
template <bool kLut = false>
__device__ __forceinline__ BlockScale block_scale(float amax, const QuantScale& qs, const float* inv_lut = nullptr) {
  // quant_block_scale: e4m3(amax / (6 * gs)).
  const float quot = __fdiv_rn(amax, qs.six_gs);
  const uint32_t sf = float_to_e4m3_fast(quot);
  float inv;
  if constexpr (kLut) {
    inv = inv_lut[sf];
  } else {
    inv = quant_inv_of(sf, qs.gs);
  }
  // Normal, unsaturated scale: it is within 2^-4 of quot, so every |x| * inv is
  // <= 6 * 16/15 * (1 + 2^-20) < 7 and the clamp to code 7 is not needed. Saturated
  // or subnormal scales need the clamp. inv == 0 (zero or NaN scale), negative
  // (negative global scale) or inf (tiny global scale) take the reference conversion.
  const int mode = (qs.gs_normal && quot >= 0x1p-6f && quot <= 448.0f) ? 0
                   : (inv > 0.0f && inv <= 3.402823466e38f)            ? 1
                                                                        : 2;
  return BlockScale{sf, inv, mode};
}

// e2m1(x[i] * inv) of N values (N a multiple of 8) packed into N/8 words, element i
// at nibble i % 8 of word i / 8.
template <int N>
__device__ __forceinline__ void pack_codes(const float (&x)[N], const BlockScale& b, const NibblePack& k,
                                           uint32_t (&q)[N / 8], const uint32_t* signs = nullptr) {
  if (b.mode == 0) {
    pack_fast<false>(x, b.inv, k, q, signs);
  } else if (b.mode == 1) {
    pack_fast<true>(x, b.inv, k, q, signs);
  } else {
#pragma unroll
    for (int j = 0; j < N / 8; ++j) q[j] = 0u;
#pragma unroll
    for (int i = 0; i < N; ++i) q[i / 8] |= float_to_e2m1(__fmul_rn(x[i], b.inv)) << (4 * (i % 8));
  }
}

// Quantizes one 16-element block of fp32 values x with formats.h's recipe:
//   amax (NaN wins; given) -> scale byte -> inverse scale -> e2m1 codes.
// Writes the packed block (16 nibbles, element 2i low) to q0 (elements 0..7), q1;
// returns the scale byte.
// signs (optional): the elements' sign bits already at bit 4i+3 of word i / 8;
// kLut: the inverse scale comes from inv_lut (see block_scale).
template <bool kLut = false>
__device__ __forceinline__ uint32_t quantize_block16(const float (&x)[16], float amax, const QuantScale& qs,
                                                     const NibblePack& k, uint32_t& q0, uint32_t& q1,
                                                     const uint32_t* signs = nullptr, const float* inv_lut = nullptr) {
  const BlockScale b = block_scale<kLut>(amax, qs, inv_lut);
  uint32_t q[2];
  pack_codes<16>(x, b, k, q, signs);
  q0 = q[0];
  q1 = q[1];
  return b.sf;
}

// ---------------------------------------------------------------------------
// Input blocks: 16 consecutive fp32 / fp16 / bf16 elements as raw 32-bit words
// ---------------------------------------------------------------------------

// fp32: word i is element i. fp16 / bf16: word j holds elements 2j (low half) and
// 2j+1 (high half), as they lie in memory.
template <class T>
struct Raw16 {
  static constexpr int kWords = 4 * static_cast<int>(sizeof(T));
  uint32_t w[kWords];
};

// kVec: p is 16-byte aligned (LDG.128); otherwise element loads.
template <class T, bool kVec>
__device__ __forceinline__ void load_raw16(const T* p, Raw16<T>& r) {
  if constexpr (kVec) {
#pragma unroll
    for (int v = 0; v < Raw16<T>::kWords / 4; ++v) {
      const uint4 u = __ldg(reinterpret_cast<const uint4*>(p) + v);
      r.w[4 * v] = u.x;
      r.w[4 * v + 1] = u.y;
      r.w[4 * v + 2] = u.z;
      r.w[4 * v + 3] = u.w;
    }
  } else if constexpr (sizeof(T) == 4) {
    const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
#pragma unroll
    for (int i = 0; i < 16; ++i) r.w[i] = q[i];
  } else {
    const uint16_t* q = reinterpret_cast<const uint16_t*>(p);
#pragma unroll
    for (int j = 0; j < 8; ++j) r.w[j] = uint32_t(q[2 * j]) | (uint32_t(q[2 * j + 1]) << 16);
  }
}

// Element i as fp32 (exact).
template <class T>
__device__ __forceinline__ float raw_elem(const Raw16<T>& r, int i) {
  if constexpr (sizeof(T) == 4) {
    return __uint_as_float(r.w[i]);
  } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    const uint32_t w = r.w[i / 2];
    return __uint_as_float((i & 1) ? (w & 0xFFFF0000u) : (w << 16));
  } else {
    const uint32_t w = r.w[i / 2];
    return __half2float(__ushort_as_half(static_cast<unsigned short>((i & 1) ? (w >> 16) : (w & 0xFFFFu))));
  }
}

// Two-lane max of 16-bit magnitudes where NaN wins (PTX max.NaN.{bf16x2,f16x2}, sm_80+).
#if !defined(__CUDA_ARCH__)
// Host model of max.NaN on two 16-bit lanes of non-negative values (host-side
// emulation tests): a NaN lane wins, else the larger one.
template <bool kBf16>
__host__ __device__ inline uint32_t max_nan_16x2_host(uint32_t a, uint32_t b) {
  uint32_t d = 0;
  for (int lane = 0; lane < 2; ++lane) {
    const uint32_t x = (a >> (16 * lane)) & 0xFFFFu, y = (b >> (16 * lane)) & 0xFFFFu;
    const uint32_t exp_mask = kBf16 ? 0x7F80u : 0x7C00u, man_mask = kBf16 ? 0x007Fu : 0x03FFu;
    const bool xn = (x & exp_mask) == exp_mask && (x & man_mask), yn = (y & exp_mask) == exp_mask && (y & man_mask);
    const uint32_t r = (xn || yn) ? 0x7FFFu : (x > y ? x : y);  // sign bits are clear
    d |= r << (16 * lane);
  }
  return d;
}
#endif
template <bool kBf16>
__device__ __forceinline__ uint32_t max_nan_16x2(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  if constexpr (kBf16) {
    asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  } else {
    asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  }
  return d;
#else
  return max_nan_16x2_host<kBf16>(a, b);
#endif
}

// max |x_i| over the block, NaN if any x_i is NaN (the CPU's nan_max_abs fold; max is
// exact, so only NaN-ness and the value matter, not the order). 16-bit inputs take
// the max two lanes at a time in their own format (exact too), half the work.
template <class T>
__device__ __forceinline__ float raw_amax(const Raw16<T>& r) {
  if constexpr (sizeof(T) == 4) {
    float m = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i) m = max_nan(m, fabsf(__uint_as_float(r.w[i])));
    return m;
  } else {
    uint32_t m = r.w[0] & 0x7FFF7FFFu;  // clear both sign bits: |lo|, |hi|
#pragma unroll
    for (int j = 1; j < 8; ++j) {
      const uint32_t a = r.w[j] & 0x7FFF7FFFu;
      m = max_nan_16x2<std::is_same<T, __nv_bfloat16>::value>(m, a);
    }
    Raw16<T> t;
    t.w[0] = m;
    return max_nan(raw_elem(t, 0), raw_elem(t, 1));
  }
}

// Sign bits of 8 consecutive 16-bit elements (4 words as they lie in memory) moved to
// bit 4i+3 for element i: the high byte of each half holds its sign at bit 7; gather
// the odd elements' high bytes (targets 7, 15, 23, 31 exactly) and the even ones'
// (targets 3, 11, 19, 27: shift by 4). 4 PRMT + 3 ops for 8 elements instead of 16.
__device__ __forceinline__ uint32_t signs_16bit_x8(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3) {
  const uint32_t a = __byte_perm(w0, w1, 0x5173);    // [w0.b3, w1.b3, w0.b1, w1.b1] = e1 e3 e0 e2
  const uint32_t c = __byte_perm(w2, w3, 0x5173);    // [w2.b3, w3.b3, w2.b1, w3.b1] = e5 e7 e4 e6
  const uint32_t odd = __byte_perm(a, c, 0x5410);    // [a0, a1, c0, c1] = e1 e3 e5 e7
  const uint32_t even = __byte_perm(a, c, 0x7632);   // [a2, a3, c2, c3] = e0 e2 e4 e6
  return (odd & 0x80808080u) | ((even >> 4) & 0x08080808u);
}

// Quantizes one 16-element input block (see quantize_block16).
template <class T, bool kLut = false>
__device__ __forceinline__ uint32_t quantize_raw16(const Raw16<T>& r, const QuantScale& qs, const NibblePack& k,
                                                   uint32_t& q0, uint32_t& q1, const float* inv_lut = nullptr) {
  float x[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) x[i] = raw_elem(r, i);
  if constexpr (sizeof(T) == 2) {
    const uint32_t signs[2] = {signs_16bit_x8(r.w[0], r.w[1], r.w[2], r.w[3]),
                               signs_16bit_x8(r.w[4], r.w[5], r.w[6], r.w[7])};
    return quantize_block16<kLut>(x, raw_amax(r), qs, k, q0, q1, signs, inv_lut);
  } else {
    return quantize_block16<kLut>(x, raw_amax(r), qs, k, q0, q1, nullptr, inv_lut);
  }
}

}  // namespace portable
}  // namespace nvfp4
