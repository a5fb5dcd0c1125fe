// Host-side pieces of the sm90a GEMM (gemm.cu) that the other launchers of the family
// reuse: operand row slicing (gemm()'s one-token GEMVs, the dual GEMM's row chunks) and the
// token pre-decode pass (the packed MoE launcher, grouped_packed.cu). Host code only.
#pragma once

#include "../backends.hpp"
#include "../common/formats.h"

namespace nvfp4::sm90 {

// Rows m, m+1, ... of an operand as an operand of their own. Scales: linear, from row m;
// blocked, row m's offset inside its 128-row band is a constant added to row 0's layout, so
// base + blocked_sf_offset(m, 0, K) is exactly row m read as a one-row blocked operand, and a
// blocked operand of rows m.. when m is a multiple of 128.
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

// The token pre-decode pass (kernel/token_predecode.cuh): decodes the rows x K tokens of L
// batches (a, sfa) into the fp16 workspace ws, [L][token_ws_rows(rows)][Kp] with Kp = K rounded up to 128
// (gemm_plan.hpp: token_workspace_bytes), as a programmatic dependent of the grid before it;
// the kernel launched after it may start early (PDL) and must wait for it before reading ws.
// It also zeroes zero[0 .. zero_words) (the stream-K GEMM's flags) once that grid completed.
nvfp4_status_t launch_token_predecode(const Fp4Operand& a, const ScaleOperand& sfa, int64_t rows, int64_t K,
                                      int64_t L, void* ws, const Exec& exec, uint32_t* zero = nullptr,
                                      int64_t zero_words = 0);

// Scale staging (kernel/scale_stage.cuh, scale_stage.cu): copies up to kScaleStageMaxOps
// scale operands (each rows x K/16 scales, L batches, any layout and alignment) to their dst
// as linear rows of staged_sf_cols(K) bytes, as a programmatic dependent of the grid before
// it (the token pass and the GEMM after it wait for it before reading dst). staged(): dst as
// the operand the GEMM reads.
struct StageRequest {
  ScaleOperand src;
  int64_t rows, K;
  void* dst;
  ScaleOperand staged() const;
};
constexpr int kScaleStageMaxOps = 64;  // the grouped GEMM's groups per chunk (kGroupedMaxGroups)
nvfp4_status_t launch_scale_stage(const StageRequest* ops, int count, int64_t L, const Exec& exec);

}  // namespace nvfp4::sm90
