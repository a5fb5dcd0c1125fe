// Host-side planning of the sm90a decode-regime GEMM (gemm with M = 2..kDecodeMaxTokens (32)
// tokens against the weights; kernel: decode_kernel.cuh, launcher: ../gemm_decode.cu):
// which problems it takes, the token group count NT8 (8 tokens per MMA column group), the
// launch shape (warp tasks per CTA, K split over a cluster) from an occupancy and balance
// model, and the kernel parameters. Plain C++ (no CUDA): tests/sm90_host/gemv_plan_test.cpp
// checks exactly this code on the CPU.
//
// Why a kernel of its own: the tiled GEMM decodes every weight element once per 128-token
// tile and runs 128-token MMAs whatever M is (24.5-31 µs = 2.5-3.0x SOL for 2..64 tokens on
// N = K = 7168, H100), while one token as a GEMV reads the weights at 1.44x SOL. This path
// keeps the GEMV's weight streaming (per-warp cp.async ring, 16-row warp tasks, the same
// copy geometry, plan.hpp, or half-size stages: kDecodeFineSC below) and multiplies each decoded
// weight fragment by up to 4 groups of 8 tokens held decoded in shared memory.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// Kernel parameters. "w" = the weights (gemm's b, N rows: the MMA's A operand), "x" = the
// tokens (gemm's a, M rows: the MMA's B operand); c[l, m, n] = alpha * sum_k x[l,m,k] w[l,n,k].
struct DecodeArgs {
  int64_t N, M;
  int32_t nchunks;           // K / 32
  int32_t tile_cap;          // token chunks per shared-memory tile (a multiple of the stage's chunks)
  int32_t tiles_k;           // ceil(K / 64): blocked-layout scale tiles per 128-row block
  int32_t cluster_k;         // CTAs of a cluster splitting each task's K
  int32_t stages_per_cta;    // K stages of one cluster rank
  int32_t pdl;               // programmatic dependent launch (1), + L2 prefetch of the first stage (2)
  int64_t groups_per_batch;  // CTAs per batch and cluster rank
  int64_t tasks_per_batch;   // 16-row warp tasks per batch: ceil(N / 128) * 8
  const uint8_t* w;
  int64_t w_row, w_batch;
  const uint8_t* sfw;
  int64_t sfw_row, sfw_batch, sfw_tile_row_bytes;
  const uint8_t* x;
  int64_t x_row, x_batch;
  const uint8_t* sfx;
  int64_t sfx_row, sfx_batch, sfx_tile_row_bytes;
  int32_t sfw_blocked, sfx_blocked;
  float alpha;
  const float* alpha_ptr;
  void* c;
  int32_t c_dtype;                 // DType
  int64_t c_row, c_col, c_batch;   // elements: per token m, per weight row n, per batch
};

// Tokens taken: 2..32 (NT8 = 1, 2, 3 or 4 groups of 8). One token stays a GEMV (gemv.cu).
// The per-warp token fragments cost shared-memory bandwidth: 4 LDS.128 per word and group,
// (1 + 2 NT8) KB per warp step of 2048 weight elements, and each group adds 32 HMMA per
// warp stage (~8 cycles each on an SM sub-partition).
//
// Measured (H100, graph replay, against the tiled GEMM in the same run; bench/NOTES.md
// "Decode-regime GEMM: first GPU runs"): 4..16 tokens on N >= 4096 rows gain up to 1.45x
// (7168^2 M=4: 27.9 -> 19.3 µs; 14336x4096 M=16: 31.4 -> 21.8; 4096x14336 M=4: 33.4 -> 27.0);
// fewer than 4096 weight rows per launch lose (2048x7168 M=8: 15.4 vs 19.2): too few 16-row
// tasks to keep 132 SMs streaming. Session 10's 4- and 8-group instances (one 8-warp CTA per
// SM, the pre-ISA instruction count) broke even at 32 tokens on 7168^2 (28.4 vs 29.3) and lost
// at 48 / 64 (47.2 vs 30.5). 17..32 tokens come back with NT8 = 4 at two 8-warp CTAs per SM
// (__launch_bounds__ min 2 blocks: 124-126 registers, no spills) and the instruction-count
// variant's SASS (830 per warp stage against 1,006). Measured (H100, session 12, same call):
// 14336x4096 M=32 25.5 µs against the tiled GEMM's 31.4 (1.23x), 7168^2 M=17 / 32 27.0 / 26.9
// against 28.5 / 28.1 (1.04-1.06x; predicted 23-25: bench/NOTES.md "32/64-token decode instances").
// 17..32 tokens need >= kDecodeWideMinRows weight rows (N·L), or >= kDecodeMinRows where K >=
// kDecodeWideMinK: with clusters of up to 8 (decode_waves) 4096 rows get 8-warp CTAs at K >= 4096
// and beat the tiled GEMM (H100, session 22, graph µs, tiled -> decode: 4096x14336 M = 17 / 24 / 32
// 34.1 / 33.9 / 34.3 -> 25.1 / 25.1 / 31.5, 4096x7168 M = 17 / 24 / 32 21.5 / 20.7 / 21.8 -> 16.3 /
// 16.0 / 19.1, 4096^2 M = 24 / 32 16.2 / 16.5 -> 12.7 / 15.3, 6144x4096 M = 24 19.5 -> 16.6, 5120^2 M
// = 32 22.0 -> 17.9), then with fine stages (256 K, session 23) down to K = 1536 (tiled -> decode, graph
// µs: 4096x1536 M = 17 / 32 9.1 / 9.4 -> 7.8 / 8.8, 4096x2048 11.1 / 11.3 -> 8.2 / 10.4, 4096x3072
// 13.7 / 13.8 -> 9.3 / 12.3, 5120x2048 13.3 / 13.4 -> 9.8 / 12.4, 6144x1536 11.2 / 11.4 -> 8.4 / 9.9,
// 6144x3072 17.0 / 17.4 -> 11.0 / 13.2), not at K = 1024 (4096x1024 M = 17 / 24 / 32 8.5 / 8.0 / 8.0 ->
// 9.9 / 10.8 / 11.1: 2 full or 4 fine stages per task, too few per warp).
// 33..64 tokens (NT8 = 8: 171 registers, at most 10 warps per SM, 2x the HMMA and token
// fragments) stay on the tiled GEMM: the model puts them at 41-54 µs against its 30.7-36.1.
constexpr int64_t kDecodeMinTokens = 2;
constexpr int64_t kDecodeMaxTokens = 32;
constexpr int64_t kDecodeWideTokens = 16;  // above: NT8 = 3 / 4, the wide-rows bound
constexpr int64_t kDecodeWideMinRows = 7168;
constexpr int64_t kDecodeWideMinK = 1536;
// The dual route's bounds (dual_plan.hpp): 1..4 token groups, as the dense kernel; 17..32 tokens
// only on at least kDecodeDualWideMinRows weight rows (2 N L). H100, session 25, graph µs, the fused
// 32-token tile -> the decode route at M = 17 / 24 / 32: 4096x7168 (8192 rows) 25.3 / 25.0 / 25.4 ->
// 27.5 / 27.2 / 30.1 (slower), 14336x4096 (28672 rows) 50.3 / 49.0 / 48.7 -> 38.1 / 39.4 / 45.8. The
// bound lies between the two measured row counts (not measured in between).
constexpr int64_t kDecodeDualMaxTokens = 32;
constexpr int64_t kDecodeDualWideMinRows = 16384;
constexpr int64_t kDecodeMinRows = 4096;
// Weight rows (N·L) the route needs for M tokens of K elements.
inline int64_t decode_min_rows(int64_t M, int64_t K) {
  return M > kDecodeWideTokens && K < kDecodeWideMinK ? kDecodeWideMinRows : kDecodeMinRows;
}
// Above 16 tokens the decode kernel's time grows with the weights times the token groups while
// the tiled GEMM's 32-token tile is flat in M, so many weights go back to the tiled GEMM: 17..24
// tokens above kDecode3MaxWeights weight elements (N·L·K), 25..32 above kDecode4MaxWeights or at
// K > kDecode4MaxK. H100, session 26 sweep (N 2048..14336 x K 1024..14336 x M 4..32, graph µs,
// decode / 32-token tile before its byte-wise decode, bench/NOTES.md "Session 26"): tile faster at
// 14336^2 M = 17 / 24 / 32 (65.0 / 66.4 / 77.9 against 61.8 / 61.6 / 62.0), 4096x14336 M = 32 (31.7
// against 28.5), 7168x14336 and 14336x7168 M = 32 (42.1 / 41.1 against 37.3 / 36.7); the byte-wise
// decode then took 5-10% off the tile (7168^2 M = 32 24.0 -> 22.1, 14336x4096 25.4 -> 24.0, against
// the decode kernel's 23.7 / 25.7), which moves the bounds to 2^26 and 2^25 / K <= 4096 (the sweep's
// tiled times x 0.92: 7168x4096 M = 32 decode 15.8 against ~17.3, 4096x7168 19.7 against ~17.9,
// 14336x7168 M = 24 35.0 against ~33.4); checked in the same session on 32 boundary shapes (M 17 /
// 24 / 25 / 32 x 8 (N, K)): the route within 0.96-1.01 of the faster of the two.
constexpr int64_t kDecode3MaxWeights = int64_t{1} << 26;
constexpr int64_t kDecode4MaxWeights = int64_t{1} << 25;
constexpr int64_t kDecode4MaxK = 4096;
inline bool decode_weights_fit(int64_t M, int64_t NL, int64_t K) {
  if (M <= kDecodeWideTokens) return true;
  if (M <= 24) return NL * K <= kDecode3MaxWeights;  // (3 token groups: decode_nt8)
  return NL * K <= kDecode4MaxWeights && K <= kDecode4MaxK;
}
inline int decode_nt8(int64_t M) { return M <= 8 ? 1 : M <= 16 ? 2 : M <= 24 ? 3 : 4; }
// Token chunks (32 K elements, 64 bytes decoded per token) per shared-memory tile, a whole number
// of stages of sc chunks (kMmaSC or kDecodeFineSC, below). Full stages: at most 32 KB, i.e. 64
// chunks (2048 K) for 8 tokens, 32 for 16, 16 (one stage) for 24 (24 KB) and 32, so that two 8-warp
// CTAs (32 KB + 73 KB of rings + 1 KB each) fit on an SM for every token count (bench/NOTES.md
// "Decode kernel streaming"). Fine stages halve the rings (37 KB per 8 warps), which leaves room
// for 64 KB: 64 chunks for 8 and 16 tokens, 32 for 24 and 32, i.e. half the token-tile rounds
// (decode + two CTA barriers each) of 9..32 tokens. H100, session 23, same call, graph µs: 7168^2
// M = 17 / 24 21.0 / 21.7 -> 20.6 / 20.3, 4096x7168 M = 24 16.2 -> 15.9, 4096x2048 M = 32 10.4 ->
// 10.0; the other rows within 1% (bench/NOTES.md "Fine decode stages: 64 KB token tiles").
inline int decode_tile_chunks(int nt8, int sc) {
  if (sc != kMmaSC) return nt8 <= 2 ? 64 : 32;
  return nt8 == 1 ? 64 : nt8 == 2 ? 32 : 16;
}
constexpr int kDecodeMaxWarps = 8;
// Cluster split of K: up to 8 CTAs (the portable cluster size), each rank >=
// kDecodeMinClusterStages stages and none empty; the waves of a clustered grid come from the
// device's cluster table (decode_waves below).
constexpr int kDecodeMaxCluster = 8;
constexpr int kDecodeMinClusterStages = 3;

// K the decode kernels take: a multiple of 32, with K / 32 + a 64-chunk token tile (decode_tile_chunks'
// largest) still an int (the kernel's tile loop).
inline bool decode_k_supported(int64_t K) { return K > 0 && K % 32 == 0 && K / 32 <= 0x7FFFFFFF - 64; }

// Why the decode kernel cannot take p (nullptr: it can). Same operand rules as the MMA
// GEMV (gemv_alignment): 16-byte aligned weight and token rows, weight scales as 16-byte
// pieces (blocked tiles, or linear rows with K % 256 == 0); any token scale layout.
inline const char* decode_unsupported(const GemmProblem& p) {
  if (p.M < kDecodeMinTokens || p.M > kDecodeMaxTokens) return "sm90a decode gemm: M out of range";
  if (p.N <= 0 || p.L <= 0 || !decode_k_supported(p.K))
    return "sm90a decode gemm: empty problem or K not a multiple of 32";
  if (p.c.dtype != DType::kFloat16 && p.c.dtype != DType::kBFloat16 && p.c.dtype != DType::kFloat32)
    return "sm90a decode gemm: unsupported output dtype";
  const bool multi_batch = p.L > 1;
  const bool w16 = is_aligned(p.b.data, 16) && (p.N == 1 || p.b.row_stride % 16 == 0) &&
                   (!multi_batch || p.b.batch_stride % 16 == 0);
  const bool x16 = is_aligned(p.a.data, 16) && p.a.row_stride % 16 == 0 && (!multi_batch || p.a.batch_stride % 16 == 0);
  const bool wblocked = p.sfb.layout == NVFP4_SF_BLOCKED;
  const bool sfw16 = is_aligned(p.sfb.data, 16) && (!multi_batch || p.sfb.batch_stride % 16 == 0) &&
                     (wblocked || ((p.N == 1 || p.sfb.row_stride % 16 == 0) && (p.K / 32) % 8 == 0));
  if (!w16 || !x16) return "sm90a decode gemm: fp4 operands need 16-byte aligned rows";
  if (!sfw16) return "sm90a decode gemm: weight scales need 16-byte pieces (blocked, or linear with K % 256 == 0)";
  if ((p.N + 127) / 128 * 8 * p.L > (int64_t{1} << 40)) return "sm90a decode gemm: grid too large";
  return nullptr;
}

// Launch shape: wt warp tasks (16 weight rows each) per CTA, kc CTAs of a cluster splitting
// each task's K (consecutive stage ranges; partials summed through distributed shared
// memory in rank order), sc chunks per ring stage (the kernel instance's stage geometry).
struct DecodeShape {
  int wt = 0, kc = 0, sc = kMmaSC;
};

// Stage geometries. The MMA GEMV's stage (kMmaSC = 16 chunks = 512 K, 16 lanes per copied row)
// for every route, and for the dense route also fine stages of kDecodeFineSC = 8 chunks (256 K, 8
// lanes per row): a cluster split of K is then balanced in steps of 256 K. 7168 K is 14 stages of
// 512, so clusters of 4 ran ranks of 4, 4, 4, 2 stages; fine ones run 7 each. H100, session 23,
// same call, graph µs, 16 -> 8 chunks at the same launch shape: 7168^2 M = 2 / 8 / 16 / 32 15.6 /
// 15.5 / 18.6 / 27.0 -> 14.4 / 14.8 / 17.3 / 24.0; where 512-K stages already divide evenly, fine
// ones cost 1-4% (4096x14336 in clusters of 7, 14336x4096 of 2: M = 4 / 16 16.7 / 20.4 -> 16.8 /
// 21.3, 15.7 / 18.9 -> 15.9 / 19.3): the shape model charges a fine stage kDecodeFineCost more
// than half a full one. Deeper fine rings (3 or 4 stages, the same bytes in flight as 2 full
// ones) were slower on every row (bench/NOTES.md "Fine decode stages").
constexpr int kDecodeFineSC = 8;
constexpr double kDecodeFineCost = 0.06;
inline double decode_stage_cost(int sc) { return sc == kMmaSC ? 1.0 : 0.5 * (1.0 + kDecodeFineCost); }

// Shared memory: the token tile (tile_cap chunks x 8 NT8 tokens x 64 B), then one ring of
// kMmaDepth stages of sc chunks per warp. The cluster partials (wt x 16 rows x 8
// NT8 tokens fp32) reuse the rings once they are drained.
NVFP4_HD size_t decode_token_tile_bytes(int tile_cap, int nt8) { return static_cast<size_t>(tile_cap) * nt8 * 8 * 64; }
inline size_t decode_smem_bytes(int tile_cap, int nt8, int wt, int sc = kMmaSC) {
  return decode_token_tile_bytes(tile_cap, nt8) + static_cast<size_t>(wt) * kMmaDepth * mma_stage_bytes(sc);
}
inline int decode_tile_cap(int nt8, int stages_per_cta, int sc = kMmaSC) {
  const int need = stages_per_cta * sc;  // the CTA's K range in whole stages
  return need < decode_tile_chunks(nt8, sc) ? need : decode_tile_chunks(nt8, sc);
}

// Waves of a decode launch: `ctas` CTAs in clusters of kc, p of which fit on an SM. A cluster
// must fit in one GPC, so a wave holds info.cluster_ctas[p][kc] CTAs (queried from the device),
// not p x SMs (H100, 8-warp CTAs at 2 per SM: 248 CTAs in clusters of 4, 224 of 7; session 10
// ran 128 CTAs in clusters of 4 at 1 per SM, where 120 fit: two waves, 36.8 µs against 27.0).
// Where fewer than p CTAs per SM suffice and still fit in one wave, decode_launch caps the
// residency at that share (the even spread: the block scheduler cannot stack CTAs on some SMs
// while others idle); otherwise the busiest SM holds p per wave.
struct DecodeWaves {
  int64_t share = 0;   // CTAs on the busiest SM per wave
  int64_t waves = 0;   // 0: cannot launch (no cluster table for kc > 1)
  bool spread = false;  // decode_launch caps the residency at `share`
};
inline DecodeWaves decode_waves(const MmaKernelInfo& info, int64_t ctas, int kc, int per_sm, int sm_count) {
  DecodeWaves w;
  if (per_sm <= 0 || sm_count <= 0 || ctas <= 0) return w;
  const int64_t share0 = (ctas + sm_count - 1) / sm_count;
  if (kc <= 1) {
    const int64_t slots = static_cast<int64_t>(sm_count) * per_sm;
    w.waves = (ctas + slots - 1) / slots;
    w.share = share0 < per_sm ? share0 : per_sm;
    w.spread = share0 < per_sm;
    return w;
  }
  auto cap = [&](int64_t p) {  // CTAs of one wave at p per SM (the table's last row for more)
    return kc <= kClusterTableSize ? info.cluster_ctas[p < kClusterTablePerSm ? p : kClusterTablePerSm][kc] : 0;
  };
  if (share0 < per_sm && ctas <= cap(share0)) {
    w.waves = 1;
    w.share = share0;
    w.spread = true;
  } else if (cap(per_sm) > 0) {
    w.waves = (ctas + cap(per_sm) - 1) / cap(per_sm);
    w.share = per_sm;
  }
  return w;
}

// Picks (wt, kc) by a time model of the busiest SM (bench/NOTES.md "Decode kernel streaming
// (issue 22, session 11)"). The kernel is issue-bound, not copy-bound: NCU on 7168^2 M = 4
// (8 warps per SM) shows 34% DRAM throughput, 0.52 warp instructions per scheduler cycle and
// the stalls on fixed-latency dependencies (decode chains), not on the cp.async waits. So an
// SM's time = its warp stages (16 rows x 512 K each, ~1.2k instructions) / the issue
// efficiency of its resident warps, w / (w + kDecodeLatencyWarps) (4 warps per SM ran 1.4x
// slower than 8 on the same warp stages: 4096x14336 against 7168^2). Every CTA also decodes
// its tokens for its K range (~kDecodeTokenCost warp stages per stage and token group).
// Candidates: Wt = 2..8 tasks per CTA (any count: 7 x 64 = 448 tasks of 7168 rows), K split
// over kc = 1..8 CTAs of a cluster, waves as decode_waves says. A split only for a clear gain:
// a candidate with kc > 1 must beat the best so far (split or not, either geometry) by 3% (the MoE
// route: a tie suffices for kc 2 over kc 1, choose_decode_shape's split_ties). The
// constants are first guesses; the cluster sizes past 4 were measured on one shape (bench/NOTES.md "Decode K split over clusters of up to 8": 4096x14336 at kc = 7). Fine stages
// (sc = kDecodeFineSC, the dense route only) count decode_stage_cost each, and a cluster rank
// needs kDecodeMinClusterStages of its own stages.
constexpr double kDecodeLatencyWarps = 6.0;
constexpr double kDecodeTokenCost = 0.3;
inline double decode_issue_eff(int warps) { return warps / (warps + kDecodeLatencyWarps); }
// Model time (warp stages / efficiency) of one shape; < 0 where it cannot launch.
// info: the resources of the instance with stages of sc chunks.
inline double decode_shape_time(const MmaKernelInfo& info, int nt8, int nchunks, int64_t tasks_per_batch, int64_t L,
                                int sm_count, DecodeShape s) {
  const int n_stages = (nchunks + s.sc - 1) / s.sc;
  const int spc = mma_stages_per_cta(n_stages, s.kc);
  if (s.kc > 1 && (spc < kDecodeMinClusterStages || (s.kc - 1) * spc >= n_stages)) return -1.0;
  const int per_sm = mma_ctas_per_sm(info, s.wt, decode_smem_bytes(decode_tile_cap(nt8, spc, s.sc), nt8, s.wt, s.sc));
  const int64_t ctas = L * ((tasks_per_batch + s.wt - 1) / s.wt) * s.kc;
  const DecodeWaves w = decode_waves(info, ctas, s.kc, per_sm, sm_count);
  if (w.waves <= 0) return -1.0;
  const double k_range = static_cast<double>(spc) * s.sc / kMmaSC;  // in full stages
  const double work =
      static_cast<double>(w.share) * (s.wt * spc * decode_stage_cost(s.sc) + kDecodeTokenCost * nt8 * k_range);
  return static_cast<double>(w.waves) * work / decode_issue_eff(static_cast<int>(w.share) * s.wt);
}
// info: the kMmaSC instance's resources; fine: the kDecodeFineSC instance's (the dense route),
// or null where the route has full stages only (dual, MoE). split_ties (the MoE route): a K split of
// 2 wins over an unsplit best on an equal model time instead of needing 3% less. Why: the MoE plan's
// L is the bound of chunk slots, and the slots the table leaves empty exit at once, so the live CTAs
// are fewer than modelled; the half-length CTAs of the split spread them over more SMs (64 experts,
// top-8 of 4 tokens on 2048 x 7168: 32 slots, 22 live; kc 1 and 2 tie at 32, the model gives kc 2
// 25% less time at 22; measured 96.4 -> 85.3 µs, bench/NOTES.md "Session 27"). Only 1 -> 2, the
// change measured: wider splits that tie in the model (kc 4 and 8 on 7168 x 16384) were not.
inline DecodeShape choose_decode_shape(const MmaKernelInfo& info, int nt8, int nchunks, int64_t tasks_per_batch,
                                       int64_t L, int sm_count, const MmaKernelInfo* fine = nullptr,
                                       bool split_ties = false) {
  DecodeShape best_shape;
  double best = -1.0;
  for (const int sc : {kMmaSC, kDecodeFineSC}) {
    if (sc != kMmaSC && fine == nullptr) continue;
    for (int kc = 1; kc <= kDecodeMaxCluster; ++kc) {
      for (int w = kDecodeMaxWarps; w >= 2; --w) {
        const DecodeShape s{w, kc, sc};
        const double t = decode_shape_time(sc == kMmaSC ? info : *fine, nt8, nchunks, tasks_per_batch, L, sm_count, s);
        if (t < 0.0) continue;
        const bool tie_wins = split_ties && kc == 2 && best_shape.kc == 1 && t <= best * (1.0 + 1e-9);
        if (best < 0.0 || tie_wins || t < (kc > 1 ? best * 0.97 : best * (1.0 - 1e-9))) {
          best = t;
          best_shape = s;
        }
      }
    }
  }
  return best_shape;
}

struct DecodeLaunch {
  const char* unsupported = nullptr;  // why it cannot launch (then the rest is unset)
  int nt8 = 0, kc = 1, sc = kMmaSC, stages_per_cta = 0, tile_cap = 0, warps = 0;
  int64_t groups_per_batch = 0, ctas = 0;
  size_t smem = 0;         // dynamic shared memory the kernel uses
  size_t smem_launch = 0;  // requested at launch (>= smem: the even-spread cap)
};
// info: the resources of the instance with stages of shape.sc chunks.
inline DecodeLaunch decode_launch(const MmaKernelInfo& info, DecodeShape shape, int nt8, int nchunks,
                                  int64_t tasks_per_batch, int64_t L, int sm_count) {
  DecodeLaunch r;
  r.nt8 = nt8;
  r.kc = shape.kc > 0 ? shape.kc : 1;
  r.sc = shape.sc;
  r.warps = shape.wt;
  if (r.sc != kMmaSC && r.sc != kDecodeFineSC) {
    r.unsupported = "sm90a decode gemm: no such stage geometry";
    return r;
  }
  const int n_stages = (nchunks + r.sc - 1) / r.sc;
  r.stages_per_cta = mma_stages_per_cta(n_stages, r.kc);
  r.tile_cap = decode_tile_cap(nt8, r.stages_per_cta, r.sc);
  r.smem = decode_smem_bytes(r.tile_cap, nt8, r.warps, r.sc);
  if (r.warps <= 0 || r.warps > kDecodeMaxWarps || r.kc > kDecodeMaxCluster ||
      mma_ctas_per_sm(info, r.warps, r.smem) <= 0) {
    r.unsupported = "sm90a decode gemm: shared memory too small";
    return r;
  }
  r.groups_per_batch = (tasks_per_batch + r.warps - 1) / r.warps;
  r.ctas = r.groups_per_batch * L * r.kc;
  if (r.ctas > 0x7FFFFFFF) r.unsupported = "sm90a decode gemm: grid too large";
  // Even spread (the MMA GEMV's cap, plan.hpp mma_launch): where more CTAs fit on an SM than
  // the grid's per-SM share (e.g. 2 fit, 128 CTAs need 1) and the clusters still fit in one wave
  // at that share (decode_waves), extra shared memory caps them at the share, so that the block
  // scheduler cannot stack CTAs on one SM while others idle (the shape model assumes this).
  const DecodeWaves w = decode_waves(info, r.ctas, r.kc, mma_ctas_per_sm(info, r.warps, r.smem), sm_count);
  r.smem_launch = w.spread ? even_spread_smem(info, r.warps, r.smem, r.ctas, sm_count) : r.smem;
  return r;
}
// The shape model's pick (choose_decode_shape) and its launch (decode_launch), as every decode
// route plans: info is the full-stage instance's resources, fine the fine-stage one's (the dense
// route) or null (full stages only: the dual and MoE routes).
inline DecodeLaunch decode_plan_launch(const MmaKernelInfo& info, const MmaKernelInfo* fine, int nt8, int nchunks,
                                       int64_t tasks_per_batch, int64_t L, int sm_count, bool split_ties = false) {
  const DecodeShape s = choose_decode_shape(info, nt8, nchunks, tasks_per_batch, L, sm_count, fine, split_ties);
  return decode_launch(s.sc == kMmaSC ? info : *fine, s, nt8, nchunks, tasks_per_batch, L, sm_count);
}

// A thread's last kDecodePlanMemo plans of the decode routes (dense, dual, MoE), so that a repeated
// problem skips the model: choose_decode_shape weighs up to 2 x 56 launch shapes on the eager path
// of every call (~1 µs of host CPU on the 2-core CI host at -O3; ~5 µs of an H100 host's eager call,
// bench/NOTES.md session 24). The key is everything the plan reads: the device and the full-stage
// kernel stand for the instances' resources (kernel_info.hpp's per-device table: fixed once
// queried), the rest are decode_plan_launch's arguments, in that order. Empty slots hold device -1
// and match nothing.
struct DecodePlanKey {
  int device = -1;
  const void* kernel = nullptr;
  int nt8 = 0, nchunks = 0, sm_count = 0;
  int64_t tasks_per_batch = 0, L = 0;
  bool split_ties = false;
  bool operator==(const DecodePlanKey& o) const {
    return device == o.device && kernel == o.kernel && nt8 == o.nt8 && nchunks == o.nchunks &&
           sm_count == o.sm_count && tasks_per_batch == o.tasks_per_batch && L == o.L && split_ties == o.split_ties;
  }
};
constexpr int kDecodePlanMemo = 8;
struct DecodePlanMemo {
  DecodePlanKey keys[kDecodePlanMemo];
  DecodeLaunch plans[kDecodePlanMemo];
  int next = 0;
};
// The calling thread's memo (one per thread, not per instantiation of decode_plan_memo below).
inline DecodePlanMemo& decode_plan_memo_table() {
  thread_local DecodePlanMemo memo;
  return memo;
}
// plan(DecodeLaunch*) -> bool: the plan on a miss (false: failed, not remembered; nor is a plan
// that cannot launch). Returns plan's verdict, or true on a hit.
template <class Plan>
inline bool decode_plan_memo(const DecodePlanKey& key, DecodeLaunch* out, Plan&& plan) {
  DecodePlanMemo& m = decode_plan_memo_table();
  for (int i = 0; i < kDecodePlanMemo; ++i)
    if (m.keys[i] == key) {
      *out = m.plans[i];
      return true;
    }
  if (!plan(out)) return false;
  if (out->unsupported == nullptr) {
    m.keys[m.next] = key;
    m.plans[m.next] = *out;
    m.next = m.next + 1 == kDecodePlanMemo ? 0 : m.next + 1;
  }
  return true;
}

// decode_plan_launch through the memo, for a launcher that holds its instances' resources: device
// and kernel (the full-stage instance) must be the ones info and fine describe; device < 0 plans
// directly (the host plan tests).
inline DecodeLaunch decode_plan_launch_memo(int device, const void* kernel, const MmaKernelInfo& info,
                                            const MmaKernelInfo* fine, int nt8, int nchunks, int64_t tasks_per_batch,
                                            int64_t L, int sm_count, bool split_ties = false) {
  auto plan = [&](DecodeLaunch* out) {
    *out = decode_plan_launch(info, fine, nt8, nchunks, tasks_per_batch, L, sm_count, split_ties);
    return true;
  };
  DecodeLaunch r;
  if (device < 0) {
    plan(&r);
    return r;
  }
  decode_plan_memo(DecodePlanKey{device, kernel, nt8, nchunks, sm_count, tasks_per_batch, L, split_ties}, &r, plan);
  return r;
}

// Kernel parameters from the problem (decode_launch fills in the shape-dependent fields).
inline DecodeArgs make_decode_args(const GemmProblem& p) {
  DecodeArgs a{};
  a.N = p.N;
  a.M = p.M;
  a.nchunks = static_cast<int32_t>(p.K / 32);
  a.tiles_k = static_cast<int32_t>((p.K / kSfVec + 3) / 4);
  a.cluster_k = 1;
  a.pdl = kPdl;
  a.tasks_per_batch = (p.N + 127) / 128 * 8;
  a.w = p.b.data;
  a.w_row = p.b.row_stride;
  a.w_batch = p.b.batch_stride;
  a.sfw = p.sfb.data;
  a.sfw_row = p.sfb.row_stride;
  a.sfw_batch = p.sfb.batch_stride;
  a.sfw_tile_row_bytes = 512 * static_cast<int64_t>(a.tiles_k);
  a.x = p.a.data;
  a.x_row = p.a.row_stride;
  a.x_batch = p.a.batch_stride;
  a.sfx = p.sfa.data;
  a.sfx_row = p.sfa.row_stride;
  a.sfx_batch = p.sfa.batch_stride;
  a.sfx_tile_row_bytes = a.sfw_tile_row_bytes;
  a.sfw_blocked = p.sfb.layout == NVFP4_SF_BLOCKED ? 1 : 0;
  a.sfx_blocked = p.sfa.layout == NVFP4_SF_BLOCKED ? 1 : 0;
  a.alpha = p.alpha.value;
  a.alpha_ptr = p.alpha.device_ptr;
  a.c = p.c.data;
  a.c_dtype = static_cast<int32_t>(p.c.dtype);
  a.c_row = p.c.row_stride;
  a.c_col = p.c.col_stride;
  a.c_batch = p.c.batch_stride;
  return a;
}

}  // namespace nvfp4::sm90::gemv_detail
