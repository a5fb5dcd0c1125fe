// Host-side, bit-level fp16 / bf16 conversions for the CPU reference and tests.
//
// Why not (half)(float)x: rounding a double to float first and then to fp16 rounds
// twice and can land one ulp off (a double just above an fp16 tie becomes the tie
// in float, which then rounds to even). These convert from double straight to the
// 16-bit format with one round-to-nearest-even, handling subnormals, overflow to
// infinity and NaN, independent of the FPU rounding mode.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace nvfp4 {
namespace ref {

// Magnitude bits (no sign) of finite a >= 0 rounded RNE onto a binary format with
// `man_bits` stored mantissa bits and `exp_bits` exponent bits (IEEE-style, with
// subnormals and infinity).
inline uint32_t round_magnitude_rne(double a, int man_bits, int exp_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int emin = 1 - bias;                        // exponent of the smallest normal
  const uint32_t inf_bits = ((1u << exp_bits) - 1u) << man_bits;
  int frexp_exp;
  std::frexp(a, &frexp_exp);                        // a = m * 2^frexp_exp, m in [0.5, 1)
  int e = frexp_exp - 1;                            // floor(log2 a) for a > 0
  if (e < emin) e = emin;                           // subnormal range shares emin's quantum
  if (e > bias + 1) return inf_bits;                // far beyond the largest finite value
  // a / quantum, quantum = 2^(e - man_bits): a power-of-two scaling, exact.
  const double scaled = std::ldexp(a, man_bits - e);
  double t = std::floor(scaled);
  const double rem = scaled - t;                    // exact: scaled < 2^(man_bits+1)
  if (rem > 0.5 || (rem == 0.5 && std::fmod(t, 2.0) == 1.0)) t += 1.0;
  uint32_t mant = static_cast<uint32_t>(t);         // <= 2^(man_bits+1)
  if (mant < (1u << man_bits)) return mant;         // subnormal or zero (e == emin)
  if (mant == (2u << man_bits)) { mant >>= 1; e += 1; }  // rounded up to next binade
  const int field = e + bias;
  if (field >= (1 << exp_bits) - 1) return inf_bits;
  return (static_cast<uint32_t>(field) << man_bits) | (mant - (1u << man_bits));
}

inline uint16_t double_to_small_float(double v, int man_bits, int exp_bits) {
  const uint32_t sign = std::signbit(v) ? (1u << (man_bits + exp_bits)) : 0u;
  const uint32_t inf_bits = ((1u << exp_bits) - 1u) << man_bits;
  if (std::isnan(v)) return static_cast<uint16_t>(sign | inf_bits | (1u << (man_bits - 1)));
  if (std::isinf(v)) return static_cast<uint16_t>(sign | inf_bits);
  return static_cast<uint16_t>(sign | round_magnitude_rne(std::fabs(v), man_bits, exp_bits));
}

// double -> IEEE binary16 / bfloat16, one RNE rounding.
inline uint16_t double_to_fp16(double v) { return double_to_small_float(v, 10, 5); }
inline uint16_t double_to_bf16(double v) { return double_to_small_float(v, 7, 8); }
// float -> 16 bits: float -> double is exact, so this is still one rounding.
inline uint16_t float_to_fp16(float v) { return double_to_fp16(static_cast<double>(v)); }
inline uint16_t float_to_bf16(float v) { return double_to_bf16(static_cast<double>(v)); }

inline float float_from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// 16 bits -> float, exact (every fp16 and bf16 value is a float).
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0) {                                   // zero / subnormal: man * 2^-24
    const float v = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return float_from_bits(sign | 0x7F800000u | (man << 13));  // inf / NaN
  return float_from_bits(sign | ((exp + 112u) << 23) | (man << 13));        // rebias 15 -> 127
}
inline float bf16_to_float(uint16_t h) { return float_from_bits(static_cast<uint32_t>(h) << 16); }

}  // namespace ref
}  // namespace nvfp4
