// Bit-exact definitions of the NVFP4 formats, shared by the CPU implementations and
// every GPU kernel (host + device), so that quantize/dequantize are bit-identical on
// all backends. Plain C++ with NVFP4_HD annotations; no CUDA headers needed on host.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#  define NVFP4_HD __host__ __device__ __forceinline__
#else
#  define NVFP4_HD inline
#endif

namespace nvfp4 {

constexpr int kSfVec = 16;                  // elements per block scale
constexpr float kE2m1Max = 6.0f;
constexpr float kE4m3Max = 448.0f;
constexpr float kFp4QuantRange = 6.0f * 448.0f;   // amax maps to this

NVFP4_HD float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f; __builtin_memcpy(&f, &u, 4); return f;
#endif
}
NVFP4_HD uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u; __builtin_memcpy(&u, &f, 4); return u;
#endif
}

// e2m1 magnitudes by code 0..7; bit 3 is the sign.
NVFP4_HD float e2m1_to_float(uint32_t code) {
  const uint32_t mag = code & 7u;
  // 0, 0.5, 1, 1.5, 2, 3, 4, 6 == (mag<2 ? mag*0.5 : (2 + (mag&1)) * 2^((mag>>1)-1))
  float v = (mag < 2u) ? 0.5f * static_cast<float>(mag)
                       : static_cast<float>(2u + (mag & 1u)) * static_cast<float>(1u << ((mag >> 1) - 1u)) * 0.5f;
  return (code & 8u) ? -v : v;
}

// float8_e4m3fn: bias 7, no infinities, 0x7F/0xFF are NaN, max 448.
NVFP4_HD float e4m3_to_float(uint32_t byte) {
  const uint32_t sign = (byte >> 7) & 1u;
  const uint32_t exp = (byte >> 3) & 0xFu;
  const uint32_t man = byte & 7u;
  float v;
  if (exp == 0xFu && man == 7u) {
    v = bits_to_float(0x7FC00000u);
  } else if (exp == 0) {
    v = static_cast<float>(man) * 0.001953125f;               // man/8 * 2^-6
  } else {
    v = bits_to_float(((exp + 120u) << 23) | (man << 20));    // 2^(exp-7) * (1+man/8)
  }
  return sign ? -v : v;
}

// fp32 -> e4m3 with round-to-nearest-even, saturating to +-448 (NaN -> 0x7F),
// the semantics of PTX cvt.rn.satfinite.e4m3x2.f32.
NVFP4_HD uint32_t float_to_e4m3(float f) {
  const uint32_t u = float_to_bits(f);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return 0x7Fu;                       // NaN
  if (abs >= 0x43E00000u) return sign | 0x7Eu;               // >= 448 (and inf): saturate
  const int exp = static_cast<int>(abs >> 23) - 127;
  uint32_t out;
  if (exp < -6) {
    // subnormal range: quantum 2^-9. value/2^-9 rounded to nearest even.
    const float scaled = bits_to_float(abs) * 512.0f;      // exact (power of two)
    // round half to even without relying on the FPU rounding mode
    uint32_t q = static_cast<uint32_t>(scaled);
    const float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) q += 1u;
    out = q;  // q <= 8: q == 8 is the smallest normal (exp field 1, man 0), still correct
  } else {
    // normal: keep 3 mantissa bits, RNE on the 20 dropped bits
    uint32_t man = abs & 0x7FFFFFu;
    uint32_t e = static_cast<uint32_t>(exp + 7);
    uint32_t keep = man >> 20;
    const uint32_t dropped = man & 0xFFFFFu;
    if (dropped > 0x80000u || (dropped == 0x80000u && (keep & 1u))) {
      keep += 1u;
      if (keep == 8u) { keep = 0u; e += 1u; }
    }
    out = (e << 3) | keep;
    if (out > 0x7Eu) out = 0x7Eu;  // 464 rounds down to 448 by saturation
  }
  return sign | out;
}

// fp32 -> e2m1 code, round-to-nearest-even onto {0,.5,1,1.5,2,3,4,6}, saturating
// to 6; the sign bit is kept (so -0.1 -> code 8, -0). NaN -> code 0.
NVFP4_HD uint32_t float_to_e2m1(float f) {
  const uint32_t sign = (float_to_bits(f) >> 28) & 8u;
  const float a = f < 0.0f ? -f : f;
  uint32_t mag;
  if (!(a > 0.25f)) mag = 0u;            // NaN lands here too
  else if (a < 0.75f) mag = 1u;
  else if (a <= 1.25f) mag = 2u;
  else if (a < 1.75f) mag = 3u;
  else if (a <= 2.5f) mag = 4u;
  else if (a < 3.5f) mag = 5u;
  else if (a <= 5.0f) mag = 6u;
  else mag = 7u;
  if (f != f) return 0u;
  return sign | mag;
}

// Blocked ("128x4") scale layout (docs/design.md, "Formats and layouts").
NVFP4_HD int64_t blocked_sf_cols(int64_t k) { return (k / kSfVec + 3) / 4 * 4; }
NVFP4_HD int64_t blocked_sf_rows(int64_t rows) { return (rows + 127) / 128 * 128; }
NVFP4_HD int64_t blocked_sf_bytes(int64_t rows, int64_t k) {
  return blocked_sf_rows(rows) * blocked_sf_cols(k);
}
// k = number of K elements (so K/16 scale columns).
NVFP4_HD int64_t blocked_sf_offset(int64_t r, int64_t c, int64_t k) {
  const int64_t tiles_k = (k / kSfVec + 3) / 4;
  const int64_t tile = (r / 128) * tiles_k + (c / 4);
  return tile * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4);
}

// The quantization recipe (docs/design.md, "Formats and layouts"), in fp32, identical on every backend:
//   s      = e4m3(block_amax / (6 * gs))               (RNE, saturating)
//   q_i    = e2m1(x_i * (1 / (float(s) * gs)))          (RNE, saturating)
// A block whose scale decodes to 0 stores zeros. NaN in a block gives scale 0x7F.
NVFP4_HD uint32_t quant_block_scale(float block_amax, float global_scale) {
  return float_to_e4m3(block_amax / (6.0f * global_scale));
}
NVFP4_HD float quant_inv_scale(uint32_t sf_byte, float global_scale) {
  const float s = e4m3_to_float(sf_byte) * global_scale;
  return (s == 0.0f || s != s) ? 0.0f : 1.0f / s;
}
// Decode global scale from a tensor amax (1.0 when amax is 0, so zeros round-trip).
NVFP4_HD float global_scale_from_amax(float amax) {
  return amax > 0.0f ? amax / kFp4QuantRange : 1.0f;
}

}  // namespace nvfp4
