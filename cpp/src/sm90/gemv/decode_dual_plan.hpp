// Host-side planning of the decode-regime kernel's dual route (dual_gemm with 2..32 tokens:
// ../dual_plan.hpp dual_decode_route takes it; launcher ../dual_gemm.cu, kernel
// decode_kernel.cuh dual_gemm_decode_kernel): its parameters and launch, on the dense plan's
// shape model (decode_plan.hpp). Plain C++ (no CUDA): tests/sm90_host/dual_plan_test.cpp checks it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "decode_plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// ---------------------------------------------------------------------------------
// Dual route (dual_gemm with few tokens; launcher ../dual_gemm.cu, kernel decode_kernel.cuh
// dual_gemm_decode_kernel, taken where ../dual_plan.hpp dual_decode_route says)
// ---------------------------------------------------------------------------------
// c[l, m, n] = act(alpha1 * sum_k x w1[n]) * (alpha2 * sum_k x w2[n]). A warp task keeps 16
// MMA rows, now 8 rows of B1 (MMA rows 0..7) and the same 8 rows n of B2 (MMA rows 8..15), so
// that lane (g, t)'s D rows g and g + 8 are the two products of the same outputs (m, n): the
// activation runs in registers on the complete sums (after the cluster reduction, if any).
// Task rows: MMA row i < 8 is B1 row base + (i & 1) + 32 (i >> 1), row i + 8 the same row of
// B2, base = 128 (task / 16) + 2 (task % 16): 16 tasks per 128-row band. Why this pairing and
// not the dense kernel's rows (base + (i & 3) + 32 (i >> 2) for i < 8: rows 0..3 of two 32-row
// groups): a blocked scale line (16 bytes: row r % 32 of the 4 row groups x the 4 scale columns
// of a 64-K tile) then holds rows of 2 tasks per matrix, while with rows {r, r + 1} x 4 groups
// a task's scales of one matrix are 2 whole lines (32 contiguous bytes): per 64-K tile the
// task's 64 scale bytes are B1's 2 lines + B2's 2 lines, one 16-byte cp.async per lane as in
// the dense kernel. Linear scales take any row order. So both layouts, with B1 and B2 in the
// same layout (each with its own strides).
struct DecodeDualExt {
  const uint8_t* w2;  // B2, rows and batches as B1 (args.w) but with its own strides
  int64_t w2_row, w2_batch;
  const uint8_t* sfw2;
  int64_t sfw2_row, sfw2_batch;
  float alpha2;
  const float* alpha2_ptr;
  int32_t act;  // nvfp4_activation_t
};
struct DecodeDualArgs {
  DecodeArgs d;  // w / sfw / alpha: B1's; N = output columns; c = the output
  DecodeDualExt e;
};

// 16-row warp tasks per batch: 8 output columns each.
inline int64_t decode_dual_tasks(int64_t N) { return (N + 127) / 128 * 16; }

// The GEMM of A against one of the two weight operands (the operand checks of the dense kernel).
inline GemmProblem decode_dual_half(const DualGemmProblem& p, bool second) {
  GemmProblem g;
  g.L = p.L;
  g.M = p.M;
  g.N = p.N;
  g.K = p.K;
  g.a = p.a;
  g.sfa = p.sfa;
  g.b = second ? p.b2 : p.b1;
  g.sfb = second ? p.sfb2 : p.sfb1;
  g.alpha = second ? p.alpha2 : p.alpha1;
  g.c = p.c;
  return g;
}

// Why the dual decode kernel cannot take p (nullptr: it can): the dense kernel's rules for
// each of (A, B1) and (A, B2), and B1's and B2's scales in the same layout.
inline const char* decode_dual_unsupported(const DualGemmProblem& p) {
  if (const char* why = decode_unsupported(decode_dual_half(p, false))) return why;
  if (const char* why = decode_unsupported(decode_dual_half(p, true))) return why;
  if (p.M > kDecodeDualMaxTokens) return "sm90a decode dual gemm: M out of range";
  if (p.sfb1.layout != p.sfb2.layout) return "sm90a decode dual gemm: B1 and B2 scales in different layouts";
  if (p.activation != NVFP4_ACT_SILU && p.activation != NVFP4_ACT_GELU_TANH)
    return "sm90a decode dual gemm: unknown activation";
  if (decode_dual_tasks(p.N) * p.L > (int64_t{1} << 40)) return "sm90a decode dual gemm: grid too large";
  return nullptr;
}

// Kernel parameters (decode_launch fills in the shape-dependent fields, as for the dense kernel).
inline DecodeDualArgs make_decode_dual_args(const DualGemmProblem& p) {
  DecodeDualArgs r{};
  r.d = make_decode_args(decode_dual_half(p, false));
  r.d.tasks_per_batch = decode_dual_tasks(p.N);
  r.e.w2 = p.b2.data;
  r.e.w2_row = p.b2.row_stride;
  r.e.w2_batch = p.b2.batch_stride;
  r.e.sfw2 = p.sfb2.data;
  r.e.sfw2_row = p.sfb2.row_stride;
  r.e.sfw2_batch = p.sfb2.batch_stride;
  r.e.alpha2 = p.alpha2.value;
  r.e.alpha2_ptr = p.alpha2.device_ptr;
  r.e.act = static_cast<int32_t>(p.activation);
  return r;
}

// Launch of the dual route: the dense kernel's model (decode_plan_launch, full stages) on its 16
// tasks per 128 output columns, i.e. the dense problem of 2 N weight rows.
struct DecodeDualLaunch {
  const char* unsupported = nullptr;
  int nt8 = 0;
  DecodeLaunch launch;
};
// device, kernel: the instance info describes, for the plan memo (decode_plan_launch_memo; -1: none).
inline DecodeDualLaunch decode_dual_launch(const MmaKernelInfo& info, const DualGemmProblem& p, int sm_count,
                                           int device = -1, const void* kernel = nullptr) {
  DecodeDualLaunch r;
  if (const char* why = decode_dual_unsupported(p)) {
    r.unsupported = why;
    return r;
  }
  r.nt8 = decode_nt8(p.M);
  const int nchunks = static_cast<int>(p.K / 32);
  const int64_t tasks = decode_dual_tasks(p.N);
  r.launch = decode_plan_launch_memo(device, kernel, info, nullptr, r.nt8, nchunks, tasks, p.L, sm_count);
  r.unsupported = r.launch.unsupported;
  return r;
}

}  // namespace nvfp4::sm90::gemv_detail
