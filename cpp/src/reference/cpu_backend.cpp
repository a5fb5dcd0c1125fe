// CPU backend: plain C++ implementations of every op on host memory. They are the
// numerical reference for all GPU paths, so they favour obvious correctness:
//   - every fp4 element is decoded to its exact value e2m1 * e4m3 (exact in fp32:
//     at most 6 significant bits), products and sums are taken in double (exact for
//     any realistic K), and the result is rounded exactly once to the output dtype;
//   - quantize / dequantize follow formats.h step by step in fp32, so they are
//     bit-identical to the GPU kernels that use the same helpers.
// Exec is ignored; every pointer (alpha / global-scale pointers and MoE offsets
// included) is a host pointer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backends.hpp"
#include "common/activation.hpp"
#include "common/formats.h"
#include "common/half_convert.hpp"
#include "common/store.hpp"

namespace nvfp4 {
namespace {

// ---------------------------------------------------------------------------
// Element access
// ---------------------------------------------------------------------------

double read_alpha(const Alpha& a) { return a.device_ptr ? *a.device_ptr : a.value; }

// Scale byte of (batch l, row r, scale column c) of a rows x K operand.
uint8_t scale_byte(const ScaleOperand& s, int64_t l, int64_t r, int64_t c, int64_t K) {
  const uint8_t* base = s.data + l * s.batch_stride;
  return s.layout == NVFP4_SF_BLOCKED ? base[blocked_sf_offset(r, c, K)] : base[r * s.row_stride + c];
}

// One quantized matrix viewed as rows: batch `l`, logical row i is storage row row0 + i.
struct RowSource {
  Fp4Operand q;
  ScaleOperand sf;
  int64_t l = 0;
  int64_t row0 = 0;
};

// Exact values of rows [first, first + count) into dst (count x K, row-major).
void decode_rows(const RowSource& src, int64_t first, int64_t count, int64_t K, float* dst) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r = src.row0 + first + i;
    const uint8_t* row = src.q.data + src.l * src.q.batch_stride + r * src.q.row_stride;
    for (int64_t k = 0; k < K; ++k) {
      const uint32_t byte = row[k / 2];
      const uint32_t nibble = (k & 1) ? (byte >> 4) : (byte & 0xFu);   // even k: low nibble
      const float scale = e4m3_to_float(scale_byte(src.sf, src.l, r, k / kSfVec, K));
      dst[i * K + k] = e2m1_to_float(nibble) * scale;                  // exact (or NaN)
    }
  }
}

// Calls emit(m, n, acc) for every m < M, n < N, where acc[j] = sum_k A[m,k] * Bj[n,k]
// in double for each of the `nb` B operands (1 for gemm, 2 for dual gemm). Rows are
// decoded in tiles so memory stays O(tile * K) and each element is decoded
// M/tile or N/tile times rather than M*N times.
template <int nb, class Emit>
void for_each_dot(const RowSource& a, int64_t M, const RowSource (&b)[nb], int64_t N, int64_t K,
                  Emit&& emit) {
  constexpr int64_t kTile = 32;
  std::vector<float> a_tile(static_cast<size_t>(std::min(M, kTile) * K));
  std::vector<float> b_tile[nb];
  for (auto& t : b_tile) t.resize(static_cast<size_t>(std::min(N, kTile) * K));
  for (int64_t m0 = 0; m0 < M; m0 += kTile) {
    const int64_t mt = std::min(kTile, M - m0);
    decode_rows(a, m0, mt, K, a_tile.data());
    for (int64_t n0 = 0; n0 < N; n0 += kTile) {
      const int64_t nt = std::min(kTile, N - n0);
      for (int j = 0; j < nb; ++j) decode_rows(b[j], n0, nt, K, b_tile[j].data());
      for (int64_t i = 0; i < mt; ++i) {
        const float* ar = a_tile.data() + i * K;
        for (int64_t jn = 0; jn < nt; ++jn) {
          double acc[nb];
          for (int j = 0; j < nb; ++j) {
            const float* br = b_tile[j].data() + jn * K;
            double s = 0.0;
            for (int64_t k = 0; k < K; ++k) s += static_cast<double>(ar[k]) * static_cast<double>(br[k]);
            acc[j] = s;
          }
          emit(m0 + i, n0 + jn, acc);
        }
      }
    }
  }
}

// Rounds v once to the output dtype and stores it at element offset `index`.
void store(const OutOperand& c, int64_t index, double v) { store_out_host(c.data, c.dtype, index, v); }

float load_input(const void* x, DType dtype, int64_t index) {
  switch (dtype) {
    case DType::kFloat16: return ref::fp16_to_float(static_cast<const uint16_t*>(x)[index]);
    case DType::kBFloat16: return ref::bf16_to_float(static_cast<const uint16_t*>(x)[index]);
    case DType::kFloat32: break;
  }
  return static_cast<const float*>(x)[index];
}

// max(m, |v|) where NaN wins.
float nan_max_abs(float m, float v) {
  const float a = std::fabs(v);
  if (m != m || a != a) return std::numeric_limits<float>::quiet_NaN();
  return a > m ? a : m;
}

// ---------------------------------------------------------------------------
// GEMM family
// ---------------------------------------------------------------------------

nvfp4_status_t cpu_gemm(const GemmProblem& p, const Exec&) {
  const double alpha = read_alpha(p.alpha);
  for (int64_t l = 0; l < p.L; ++l) {
    const RowSource a{p.a, p.sfa, l, 0};
    const RowSource b[1] = {{p.b, p.sfb, l, 0}};
    for_each_dot<1>(a, p.M, b, p.N, p.K, [&](int64_t m, int64_t n, const double* acc) {
      store(p.c, l * p.c.batch_stride + m * p.c.row_stride + n * p.c.col_stride, alpha * acc[0]);
    });
  }
  return NVFP4_SUCCESS;
}

// GEMV is the N == 1 gemm: b holds one row per batch, c column 0 only.
nvfp4_status_t cpu_gemv(const GemmProblem& p, const Exec& exec) { return cpu_gemm(p, exec); }

size_t cpu_gemm_workspace(const GemmProblem&, const Exec&) { return 0; }

nvfp4_status_t cpu_dual_gemm(const DualGemmProblem& p, const Exec&) {
  const double alpha1 = read_alpha(p.alpha1), alpha2 = read_alpha(p.alpha2);
  for (int64_t l = 0; l < p.L; ++l) {
    const RowSource a{p.a, p.sfa, l, 0};
    const RowSource b[2] = {{p.b1, p.sfb1, l, 0}, {p.b2, p.sfb2, l, 0}};
    for_each_dot<2>(a, p.M, b, p.N, p.K, [&](int64_t m, int64_t n, const double* acc) {
      const double v = activation(p.activation, alpha1 * acc[0]) * (alpha2 * acc[1]);
      store(p.c, l * p.c.batch_stride + m * p.c.row_stride + n * p.c.col_stride, v);
    });
  }
  return NVFP4_SUCCESS;
}

nvfp4_status_t cpu_grouped_gemm(const GroupedGemmProblem& p, const Exec& exec) {
  for (int32_t g = 0; g < p.count; ++g) cpu_gemm(p.groups[g], exec);
  return NVFP4_SUCCESS;
}

nvfp4_status_t cpu_grouped_gemm_packed(const PackedGroupedGemmProblem& p, const Exec&) {
  for (int32_t g = 0; g < p.G; ++g) {
    // Offsets come from user data the validator may not see; clamp so a bad table
    // can only skip rows, never index outside A or C.
    const int64_t begin = std::clamp<int64_t>(p.offsets[g], 0, p.total_M);
    const int64_t end = std::clamp<int64_t>(p.offsets[g + 1], begin, p.total_M);
    const double alpha = p.alphas ? static_cast<double>(p.alphas[g]) : 1.0;
    const RowSource a{p.a, p.sfa, 0, begin};   // A rows are global rows of the packed tensor
    const RowSource b[1] = {{p.b, p.sfb, g, 0}};  // expert g = batch g of B
    for_each_dot<1>(a, end - begin, b, p.N, p.K, [&](int64_t m, int64_t n, const double* acc) {
      store(p.c, (begin + m) * p.c.row_stride + n * p.c.col_stride, alpha * acc[0]);
    });
  }
  return NVFP4_SUCCESS;
}

// ---------------------------------------------------------------------------
// Quantize / dequantize (the fp32 recipe of formats.h)
// ---------------------------------------------------------------------------

nvfp4_status_t cpu_quantize(const QuantizeProblem& p, const Exec&) {
  auto x_at = [&](int64_t l, int64_t r, int64_t k) {
    return load_input(p.x, p.x_dtype, l * p.x_batch_stride + r * p.x_row_stride + k);
  };
  float gs;
  if (p.compute_global_scale) {
    float amax = 0.0f;
    for (int64_t l = 0; l < p.L; ++l)
      for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t k = 0; k < p.K; ++k) amax = nan_max_abs(amax, x_at(l, r, k));
    gs = global_scale_from_amax(amax);
    *p.global_scale = gs;
  } else {
    gs = *p.global_scale;
  }
  const bool blocked = p.sf_layout == NVFP4_SF_BLOCKED;
  for (int64_t l = 0; l < p.L; ++l) {
    uint8_t* sf_batch = p.sf + l * p.sf_batch_stride;
    if (blocked) std::memset(sf_batch, 0, static_cast<size_t>(blocked_sf_bytes(p.rows, p.K)));
    for (int64_t r = 0; r < p.rows; ++r) {
      uint8_t* q_row = p.q + l * p.q_batch_stride + r * p.q_row_stride;
      for (int64_t c = 0; c < p.K / kSfVec; ++c) {
        float x[kSfVec];
        float block_amax = 0.0f;
        for (int i = 0; i < kSfVec; ++i) {
          x[i] = x_at(l, r, c * kSfVec + i);
          block_amax = nan_max_abs(block_amax, x[i]);
        }
        const uint32_t sf = quant_block_scale(block_amax, gs);
        const float inv = quant_inv_scale(sf, gs);
        sf_batch[blocked ? blocked_sf_offset(r, c, p.K) : r * p.sf_row_stride + c] = static_cast<uint8_t>(sf);
        for (int i = 0; i < kSfVec; i += 2) {
          const uint32_t lo = float_to_e2m1(x[i] * inv);       // fp32 multiply
          const uint32_t hi = float_to_e2m1(x[i + 1] * inv);
          q_row[(c * kSfVec + i) / 2] = static_cast<uint8_t>(lo | (hi << 4));
        }
      }
    }
  }
  return NVFP4_SUCCESS;
}

nvfp4_status_t cpu_dequantize(const DequantizeProblem& p, const Exec&) {
  const float gs = p.global_scale.device_ptr ? *p.global_scale.device_ptr : p.global_scale.value;
  for (int64_t l = 0; l < p.L; ++l) {
    for (int64_t r = 0; r < p.rows; ++r) {
      const uint8_t* q_row = p.q + l * p.q_batch_stride + r * p.q_row_stride;
      const int64_t out_row = l * p.out_batch_stride + r * p.out_row_stride;
      for (int64_t k = 0; k < p.K; ++k) {
        const uint32_t byte = q_row[k / 2];
        const uint32_t nibble = (k & 1) ? (byte >> 4) : (byte & 0xFu);
        const float scale = e4m3_to_float(scale_byte(p.sf, l, r, k / kSfVec, p.K));
        const float v = (e2m1_to_float(nibble) * scale) * gs;   // exact product, one fp32 rounding
        store_out_host(p.out, p.out_dtype, out_row + k, v);
      }
    }
  }
  return NVFP4_SUCCESS;
}

// ---------------------------------------------------------------------------
// Scale layout conversion (exact byte permutation)
// ---------------------------------------------------------------------------

nvfp4_status_t cpu_swizzle_scales(const SwizzleProblem& p, const Exec&) {
  for (int64_t l = 0; l < p.L; ++l) {
    uint8_t* dst = p.dst + l * p.blocked_batch_stride;
    std::memset(dst, 0, static_cast<size_t>(blocked_sf_bytes(p.rows, p.K)));   // padding = 0
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t c = 0; c < p.K / kSfVec; ++c)
        dst[blocked_sf_offset(r, c, p.K)] = p.src[l * p.linear_batch_stride + r * p.linear_row_stride + c];
  }
  return NVFP4_SUCCESS;
}

nvfp4_status_t cpu_unswizzle_scales(const SwizzleProblem& p, const Exec&) {
  for (int64_t l = 0; l < p.L; ++l) {
    const uint8_t* src = p.src + l * p.blocked_batch_stride;
    for (int64_t r = 0; r < p.rows; ++r)
      for (int64_t c = 0; c < p.K / kSfVec; ++c)
        p.dst[l * p.linear_batch_stride + r * p.linear_row_stride + c] = src[blocked_sf_offset(r, c, p.K)];
  }
  return NVFP4_SUCCESS;
}

}  // namespace

const BackendOps* cpu_backend() {
  static const BackendOps ops = [] {
    BackendOps o;
    o.id = NVFP4_BACKEND_CPU;
    o.gemv = cpu_gemv;
    o.gemm = cpu_gemm;
    o.gemm_workspace = cpu_gemm_workspace;
    o.dual_gemm = cpu_dual_gemm;
    o.grouped_gemm = cpu_grouped_gemm;
    o.grouped_gemm_packed = cpu_grouped_gemm_packed;
    o.quantize = cpu_quantize;
    o.dequantize = cpu_dequantize;
    o.swizzle_scales = cpu_swizzle_scales;
    o.unswizzle_scales = cpu_unswizzle_scales;
    return o;
  }();
  return &ops;
}

}  // namespace nvfp4
