// Normalized, already-validated problem descriptions handed from api.cpp to the
// backends. Every backend implements the same launcher signatures (backends.hpp);
// kernels never validate: everything here is guaranteed consistent by api.cpp.
//
// Units: fp4 and scale strides are in bytes; output strides are in elements.
// Every operand has a batch dimension (L = 1 when the caller gave none; then the
// batch strides are 0).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "nvfp4/nvfp4.h"

namespace nvfp4 {

enum class DType : int32_t {
  kFloat16 = NVFP4_DTYPE_FLOAT16,
  kBFloat16 = NVFP4_DTYPE_BFLOAT16,
  kFloat32 = NVFP4_DTYPE_FLOAT32,
};

// Packed e2m1 matrix, `rows` x K values per batch; K-contiguous.
struct Fp4Operand {
  const uint8_t* data = nullptr;
  int64_t row_stride = 0;    // bytes between rows (>= K/2)
  int64_t batch_stride = 0;  // bytes between batches
};

// e4m3 block scales of a (rows x K) operand.
//   linear:  byte (l, r, c) at data + l*batch_stride + r*row_stride + c   (c < K/16)
//   blocked: byte (l, r, c) at data + l*batch_stride + blocked_sf_offset(r, c, K)
struct ScaleOperand {
  const uint8_t* data = nullptr;
  nvfp4_sf_layout_t layout = NVFP4_SF_LINEAR;
  int64_t row_stride = 0;    // linear only
  int64_t batch_stride = 0;
};

struct Alpha {
  float value = 1.0f;
  const float* device_ptr = nullptr;  // read at kernel time when non-null
};

// Output element (l, m, n) at data + l*batch_stride + m*row_stride + n*col_stride.
struct OutOperand {
  void* data = nullptr;
  DType dtype = DType::kFloat16;
  int64_t row_stride = 0;
  int64_t col_stride = 1;
  int64_t batch_stride = 0;
};

// C[l] = alpha * A[l] (MxK) * B[l]^T (NxK). GEMV is the N == 1 case (b has one row
// per batch, c has col_stride irrelevant).
struct GemmProblem {
  int64_t L = 1, M = 0, N = 0, K = 0;
  Fp4Operand a, b;
  ScaleOperand sfa, sfb;
  Alpha alpha;
  OutOperand c;
};

struct DualGemmProblem {
  int64_t L = 1, M = 0, N = 0, K = 0;
  Fp4Operand a, b1, b2;
  ScaleOperand sfa, sfb1, sfb2;
  Alpha alpha1, alpha2;
  nvfp4_activation_t activation = NVFP4_ACT_SILU;
  OutOperand c;
};

// G independent problems (each with L == 1), given as a host array.
struct GroupedGemmProblem {
  int32_t count = 0;
  const GemmProblem* groups = nullptr;
};

// MoE layout: rows [offsets[g], offsets[g+1]) of A and C belong to expert g.
// offsets (G+1 int32) and alphas (G fp32 or null) live on the device (host for CPU).
// Scales are linear; sfa row stride / sfb row+batch strides as in ScaleOperand.
struct PackedGroupedGemmProblem {
  int32_t G = 0;
  int64_t total_M = 0, N = 0, K = 0;
  Fp4Operand a;          // batch_stride unused
  Fp4Operand b;          // batch_stride = between experts
  ScaleOperand sfa, sfb;
  const int32_t* offsets = nullptr;
  const float* alphas = nullptr;
  OutOperand c;          // batch_stride unused
};

struct QuantizeProblem {
  int64_t L = 1, rows = 0, K = 0;
  const void* x = nullptr;
  DType x_dtype = DType::kFloat32;
  int64_t x_row_stride = 0, x_batch_stride = 0;   // elements; unit inner stride
  uint8_t* q = nullptr;
  int64_t q_row_stride = 0, q_batch_stride = 0;   // bytes
  uint8_t* sf = nullptr;
  nvfp4_sf_layout_t sf_layout = NVFP4_SF_LINEAR;
  int64_t sf_row_stride = 0, sf_batch_stride = 0; // bytes
  float* global_scale = nullptr;      // one fp32 on x's device
  bool compute_global_scale = false;  // write amax/(6*448) there first, then use it
};

struct DequantizeProblem {
  int64_t L = 1, rows = 0, K = 0;
  const uint8_t* q = nullptr;
  int64_t q_row_stride = 0, q_batch_stride = 0;
  ScaleOperand sf;
  Alpha global_scale;
  void* out = nullptr;
  DType out_dtype = DType::kFloat32;
  int64_t out_row_stride = 0, out_batch_stride = 0;  // elements
};

// Linear <-> blocked. `linear` strides in bytes, blocked batches dense with
// batch stride `blocked_batch_stride`.
struct SwizzleProblem {
  int64_t L = 1, rows = 0, K = 0;
  const uint8_t* src = nullptr;
  uint8_t* dst = nullptr;
  int64_t linear_row_stride = 0, linear_batch_stride = 0;
  int64_t blocked_batch_stride = 0;
};

}  // namespace nvfp4
