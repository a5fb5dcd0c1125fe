// The dual GEMM's activations, one definition for every backend (nvfp4_activation_t):
//   silu(x)      = x / (1 + exp(-x))
//   gelu_tanh(x) = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
// The fp32 form is what the GPU epilogues apply to alpha1 * acc1 before the product with
// alpha2 * acc2; the double form is the CPU reference's.
#pragma once

#include <math.h>

#include <cmath>

#include "formats.h"  // NVFP4_HD
#include "nvfp4/nvfp4.h"

namespace nvfp4 {

constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;

NVFP4_HD float activation(nvfp4_activation_t act, float x) {
  if (act == NVFP4_ACT_GELU_TANH)
    return 0.5f * x * (1.0f + tanhf(static_cast<float>(kSqrt2OverPi) * (x + 0.044715f * x * x * x)));
  return x / (1.0f + expf(-x));  // silu
}

// Host only (the CPU backend).
inline double activation(nvfp4_activation_t act, double x) {
  if (act == NVFP4_ACT_GELU_TANH) return 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
  return x / (1.0 + std::exp(-x));  // silu
}

}  // namespace nvfp4
