// Host-side pieces of the sm90a GEMM (gemm.cu) that the packed MoE launcher
// (grouped_packed.cu) reuses: the weights' tensor maps and scale-load mode, and the
// token pre-decode pass into an fp16 workspace. Host code only.
#pragma once

#include <cuda.h>

#include "../backends.hpp"
#include "../common/formats.h"

namespace nvfp4::sm90 {

// Rows m, m+1, ... of an operand as an operand of their own (gemm()'s one-token GEMVs,
// the dual GEMM's row chunks). Scales: linear, from row m; blocked, row m's offset inside
// its 128-row band is a constant added to row 0's layout, so base + blocked_sf_offset(m,
// 0, K) is exactly row m read as a one-row blocked operand, and a blocked operand of
// rows m.. when m is a multiple of 128.
inline Fp4Operand fp4_from_row(const Fp4Operand& op, int64_t m) {
  Fp4Operand r = op;
  r.data = op.data + m * op.row_stride;
  return r;
}
inline ScaleOperand scales_from_row(const ScaleOperand& sf, int64_t m, int64_t K) {
  ScaleOperand r = sf;
  r.data = sf.data + (sf.layout == NVFP4_SF_BLOCKED ? blocked_sf_offset(m, 0, K) : m * sf.row_stride);
  return r;
}

// The token matrix's alignment and strides suit the pass and TMA (as gemm() requires).
bool moe_tokens_supported(const Fp4Operand& a, int64_t rows);
// Tensor maps of G weight matrices (N x K, batch stride b.batch_stride) and of their
// linear scales; *sf_mode = how the producer loads the scales (gemm_params.cuh
// ScaleLoad). false when TMA cannot take the weights.
bool moe_weight_maps(const Fp4Operand& b, const ScaleOperand& sfb, int64_t N, int64_t K, int64_t G, CUtensorMap* w,
                     CUtensorMap* sfw, int32_t* sf_mode);
// Bytes of the fp16 token workspace for `rows` tokens of K elements (K padded to 128).
size_t moe_token_bytes(int64_t rows, int64_t K);
// Decodes the rows x K tokens into ws (as gemm()'s pass, programmatic dependent launch
// included) and encodes its tensor map (boxes of 64 x box_rows).
nvfp4_status_t moe_predecode_tokens(const Fp4Operand& a, const ScaleOperand& sfa, int64_t rows, int64_t K,
                                    uint32_t box_rows, void* ws, CUtensorMap* xh_map, const Exec& exec);

}  // namespace nvfp4::sm90
