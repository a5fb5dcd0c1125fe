// Host-side planning of the decode-regime kernel's packed MoE route (grouped_gemm_packed with few
// rows per expert: ../packed_plan.hpp packed_decode_route takes it; launcher ../grouped_packed.cu,
// kernel decode_kernel.cuh gemm_decode_moe_kernel): its parameters and launch, on the dense plan's
// shape model (decode_plan.hpp). Plain C++ (no CUDA): tests/sm90_host/decode_moe_plan_test.cpp
// checks it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "decode_plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// ---------------------------------------------------------------------------------
// Packed MoE route (grouped_gemm_packed with few rows per expert; launcher
// ../grouped_packed.cu, kernel decode_kernel.cuh gemm_decode_moe_kernel, taken where
// ../packed_plan.hpp packed_decode_route says)
// ---------------------------------------------------------------------------------
// The experts are the batch (l = g: weights b[g], scales sfb[g]); the token rows of expert g
// are rows [offsets[g], offsets[g+1]) of the one token matrix, known only on the device. The
// grid is a host upper bound of chunks of 8 NT8 token rows; CTA slot j computes the j-th chunk
// of the non-empty experts in expert order (found from the offsets after griddepcontrol.wait),
// so an empty expert's weights are never read, and an expert of M_g rows streams its weights
// ceil(M_g / (8 NT8)) times (one CTA group per chunk: no CTA loops, so no long tail CTA).
struct DecodeMoeArgs {
  DecodeArgs d;  // M = total_M (token rows), batch = expert for w / sfw; x, sfx and c unbatched
  const int32_t* offsets;  // G + 1 entries, on the device
  const float* alphas;     // G entries on the device, or null (1)
  int32_t experts;         // G
};

// Expert g's token rows [b, e) from the raw table entries (offsets[g], offsets[g+1]), clamped as
// the tiled MoE kernel clamps them (b in [0, total], e in [b, total]): whatever the table holds,
// every row read and written is inside the operands. Its chunks of r rows: ceil((e - b) / r).
// (Shared by the kernel's chunk scan, decode_moe.cuh moe_find_chunk, and the CPU tests.)
NVFP4_HD void moe_clamp_span(int64_t b_raw, int64_t e_raw, int64_t total, int64_t& b, int64_t& e) {
  b = b_raw < 0 ? 0 : (b_raw > total ? total : b_raw);
  e = e_raw < b ? b : (e_raw > total ? total : e_raw);
}
NVFP4_HD int64_t moe_chunks(int64_t b, int64_t e, int r) { return (e - b + r - 1) / r; }

// The chunk scan walks ceil(G / 32) experts per lane: bounded so that it stays one short loop.
constexpr int64_t kDecodeMoeMaxExperts = 1024;
// No L2 prefetch of the first stage before griddepcontrol.wait: the CTA's expert is not known yet.
constexpr int kDecodeMoePdl = 1;

// Token groups: one group of 8 while the mean rows per expert is at most 2 (total_M <= 2 G; top-8
// routing of <= G / 4 tokens: most experts hold 0..3 rows, the few larger ones take extra chunks),
// two (16-row chunks: fewer re-reads of a popular expert's weights) up to a mean of 8, four
// (32-row chunks) above (packed_plan.hpp kPackedDecodeMeanRows: means up to 16; top-8 of 128
// tokens over 64 experts, 1024 rows: ~70 chunks of 32 for 62 used experts against 99 of 16).
// One group also keeps the CTA at 107 KB of shared memory (token tile 32 KB + 8 rings), so a
// second CTA fits on the SM beside a streaming one (the slots past the last chunk exit there);
// two groups need 139 KB.
inline int decode_moe_nt8(int64_t total_M, int64_t G) { return total_M <= 2 * G ? 1 : total_M <= 8 * G ? 2 : 4; }

// Upper bound of the chunks of r = 8 NT8 rows over any valid table: with U experts non-empty,
// sum_g ceil(M_g / r) = sum_g (1 + floor((M_g - 1) / r)) <= U + floor((total_M - U) / r), which
// grows with U <= min(G, total_M). A malformed table (clamped spans may overlap) can have more
// chunks: those past the bound are not computed (rows skipped, as the tiled MoE kernel skips them).
inline int64_t decode_moe_slots(int64_t total_M, int64_t G, int nt8) {
  if (total_M <= 0 || G <= 0) return 0;
  const int64_t u = total_M < G ? total_M : G;
  return u + (total_M - u) / (8 * nt8);
}

// Why the MoE decode kernel cannot take p (nullptr: it can). The dense kernel's operand rules
// (decode_unsupported) with the expert as the batch; linear scales, as the packed API takes.
inline const char* decode_moe_unsupported(const PackedGroupedGemmProblem& p) {
  if (p.G <= 0 || p.total_M <= 0 || p.N <= 0 || !decode_k_supported(p.K))
    return "sm90a decode moe: empty problem or K not a multiple of 32";
  if (p.G > kDecodeMoeMaxExperts) return "sm90a decode moe: more than 1024 experts";
  if (p.c.dtype != DType::kFloat16 && p.c.dtype != DType::kBFloat16 && p.c.dtype != DType::kFloat32)
    return "sm90a decode moe: unsupported output dtype";
  if (p.sfa.layout != NVFP4_SF_LINEAR || p.sfb.layout != NVFP4_SF_LINEAR)
    return "sm90a decode moe: linear scales only (the packed API's)";
  const bool w16 = is_aligned(p.b.data, 16) && (p.N == 1 || p.b.row_stride % 16 == 0) &&
                   (p.G == 1 || p.b.batch_stride % 16 == 0);
  const bool x16 = is_aligned(p.a.data, 16) && p.a.row_stride % 16 == 0;
  const bool sfw16 = is_aligned(p.sfb.data, 16) && (p.N == 1 || p.sfb.row_stride % 16 == 0) &&
                     (p.G == 1 || p.sfb.batch_stride % 16 == 0) && (p.K / 32) % 8 == 0;
  if (!w16 || !x16) return "sm90a decode moe: fp4 operands need 16-byte aligned rows";
  if (!sfw16) return "sm90a decode moe: weight scales need 16-byte pieces (linear with K % 256 == 0)";
  if ((p.N + 127) / 128 * 8 * decode_moe_slots(p.total_M, p.G, decode_moe_nt8(p.total_M, p.G)) > (int64_t{1} << 40))
    return "sm90a decode moe: grid too large";
  return nullptr;
}

// The MoE problem as the dense kernel sees it: the experts are the batch (weights b[g]); the
// tokens and outputs are one matrix each (no batch stride), whose rows the kernel takes from
// the offsets; alphas come per expert (DecodeMoeArgs), not from the dense alpha.
inline GemmProblem decode_moe_dense(const PackedGroupedGemmProblem& p) {
  GemmProblem g;
  g.L = p.G;
  g.M = p.total_M;
  g.N = p.N;
  g.K = p.K;
  g.a = p.a;
  g.a.batch_stride = 0;
  g.sfa = p.sfa;
  g.sfa.batch_stride = 0;
  g.b = p.b;
  g.sfb = p.sfb;
  g.c = p.c;
  g.c.batch_stride = 0;
  return g;
}

// Kernel parameters from the problem (the launch fills in the shape-dependent fields).
inline DecodeMoeArgs make_decode_moe_args(const PackedGroupedGemmProblem& p) {
  DecodeMoeArgs m{};
  m.d = make_decode_args(decode_moe_dense(p));
  m.d.pdl = kDecodeMoePdl;
  m.offsets = p.offsets;
  m.alphas = p.alphas;
  m.experts = p.G;
  return m;
}

// Launch of the MoE route: token groups, slots, and the dense kernel's shape model
// (decode_plan_launch, full stages) with the slots as the batch. Most slots are live on the
// target tables (top-8 of 1 token over 64 experts: 8 slots, 8 live), so the model sees about the
// grid that streams; the even-spread cap applies as for the dense kernel.
struct DecodeMoeLaunch {
  const char* unsupported = nullptr;
  int nt8 = 0;
  int64_t slots = 0;
  DecodeLaunch launch;
};
// device, kernel: the instance info describes, for the plan memo (decode_plan_launch_memo; -1: none).
inline DecodeMoeLaunch decode_moe_launch(const MmaKernelInfo& info, const PackedGroupedGemmProblem& p, int sm_count,
                                         int device = -1, const void* kernel = nullptr) {
  DecodeMoeLaunch r;
  if (const char* why = decode_moe_unsupported(p)) {
    r.unsupported = why;
    return r;
  }
  r.nt8 = decode_moe_nt8(p.total_M, p.G);
  r.slots = decode_moe_slots(p.total_M, p.G, r.nt8);
  const int nchunks = static_cast<int>(p.K / 32);
  const int64_t tasks = (p.N + 127) / 128 * 8;
  // One token group: ties go to the larger K split (choose_decode_shape split_ties). Its slot bound counts
  // a chunk for each expert that can have a row (min(total_M, G)), and top-8 routing leaves many of them
  // empty (4 tokens over 64 experts: 32 slots, 22 live): H100, 2048 x 7168, 96.4 -> 85.3 µs (128 experts,
  // 27 live: 105.1 -> 106.5). With two and four token groups (64 / 128 tokens) it measured 3-4% slower
  // (across machines), so they keep the 3% rule.
  r.launch = decode_plan_launch_memo(device, kernel, info, nullptr, r.nt8, nchunks, tasks, r.slots, sm_count,
                                     r.nt8 == 1);
  r.unsupported = r.launch.unsupported;
  return r;
}

}  // namespace nvfp4::sm90::gemv_detail
