// gemm_decode_kernel: the sm90a GEMM of the decode regime, c[l, m, n] = alpha * sum_k
// x[l, m, k] * w[l, n, k] for M = 2..32 tokens x against N weight rows w (decode_plan.hpp
// says which problems; the tiled GEMM takes the rest).
//
// Why: with a few tokens the work is reading the weights once. The MMA GEMV (mma_kernel.cuh)
// streams them at 1.2-1.5x the copy SOL; this kernel keeps its copy side (each warp streams
// 16 weight rows through its own 2-stage cp.async ring, 256 B of each row per stage, or 128 B
// with the dense route's fine stages, the blocked scales of a 64-element K tile as one 64-byte
// piece) and replaces the one-token math by fp16 tensor-core MMAs over up to 32 tokens (the
// route: decode_plan.hpp).
//
// The kernel is split by job: decode_mma.cuh holds the numerics, the MMA mapping, the token
// tile and one MMA step; decode_moe.cuh the packed MoE route's chunk scan and row store;
// decode_dual.cuh the dual route's output. This file: the copy side (the GEMV's rings), the
// stage loop, the K split's reduction and the three kernels.
//
// K split: cluster_k CTAs of a cluster take consecutive stage ranges of the same tasks;
// each stores its partials into its own (drained) ring memory, and after a cluster barrier
// rank r sums items r, r + kc, ... over all ranks in rank order 0..kc-1 through distributed
// shared memory (deterministic), then a second barrier keeps every CTA's memory alive until
// all reads are done. Programmatic dependent launch as in the GEMV: nothing that the
// preceding grid may write is read before griddepcontrol.wait.
//
// Packed MoE route (gemm_decode_moe_kernel, decode_moe.cuh) and dual route
// (dual_gemm_decode_kernel, decode_dual.cuh): the same body, selected by template flags.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "../collective/epilogue_dual.cuh"
#include "../ptx.cuh"
#include "common.cuh"
#include "decode_dual.cuh"
#include "decode_mma.cuh"
#include "decode_moe.cuh"
#include "decode_dual_plan.hpp"
#include "decode_moe_plan.hpp"
#include "decode_plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// ptx::cp_async_16_cg under a predicate (no branch around it).
__device__ __forceinline__ void cp_async_16_cg_if(uint32_t smem_dst, const void* gmem_src, bool pred) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n @p cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n}" ::"r"(
          smem_dst),
      "l"(gmem_src), "r"(static_cast<uint32_t>(pred))
      : "memory");
}
// ptx::fence_reg for a pointer: computed here, kept in registers (not rederived at each use).
__device__ __forceinline__ void fence_ptr(const uint8_t*& p) { asm volatile("" : "+l"(p)::"memory"); }

// c[l, m, n] = v * 2^28 * alpha (the 2^-14 of each decoded operand).
__device__ __forceinline__ void decode_store(const DecodeArgs& a, int64_t l, int64_t m, int64_t n, float v) {
  const float s = v * 268435456.0f * (a.alpha_ptr ? *a.alpha_ptr : a.alpha);
  const int64_t off = l * a.c_batch + m * a.c_row + n * a.c_col;
  store_value(a.c, a.c_dtype, off, s);
}
// CTA = Wt warp tasks (blockDim = 32 Wt), each warp one task over this rank's K stages.
// kGrouped: the packed MoE route (gemm_decode_moe_kernel below); dense: offsets, alphas,
// experts unused. kDual: the dual route (dual_gemm_decode_kernel below; `dual` its B2 and
// epilogue; null otherwise: a default argument, since an unused reference to a temporary
// moved the dense instances' schedule).
// SC: chunks (32 K) per ring stage, also the lanes copying one row (kMmaSC, or kDecodeFineSC for
// the dense route's fine stages: decode_plan.hpp).
template <int NT8, bool kBlocked, bool kGrouped, bool kDual = false, int SC = kMmaSC>
__device__ __forceinline__ void decode_gemm(const DecodeArgs& args, const int32_t* offsets, const float* alphas,
                                            int32_t experts, const DecodeDualExt* dual = nullptr) {
  static_assert(!(kGrouped && kDual), "the dual route is dense");
  static_assert(SC == kMmaSC || (SC == kDecodeFineSC && !kDual), "stage geometries: decode_plan.hpp");
  constexpr int D = kMmaDepth, LPR = SC;  // (the MMA GEMV's: kMmaLPR == kMmaSC)
  constexpr int kStageA = mma_stage_a(SC);
  constexpr int kStageBytes = mma_stage_bytes(SC);
  constexpr int kRowBytes = 16 * SC;

  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int wt = blockDim.x >> 5;
  const int kc = args.cluster_k;
  const uint32_t crank = kc > 1 ? ptx::cluster_ctarank() : 0u;
  const int64_t group = static_cast<int64_t>(blockIdx.x / static_cast<unsigned>(kc));
  int64_t l, task0;  // batch (MoE: expert), the CTA's first task
  int64_t row0 = 0, rows = 0;  // MoE: the chunk's token rows
  float alpha_g = 1.0f;        // MoE: the expert's alpha
  if constexpr (kGrouped) {
    // The offsets and alphas may be written by the preceding grid: read after the wait.
    if (args.pdl != 0) {
      ptx::pdl_wait_primary();
      ptx::pdl_launch_dependents();
    }
    const int64_t slot = group / args.groups_per_batch;
    task0 = (group - slot * args.groups_per_batch) * wt;
    // Warp 0 finds the chunk and the expert's alpha, the CTA reads them from here (every CTA
    // reads the same table: one request per CTA, not per warp; moe_find_chunk).
    __shared__ MoeChunkShared s_chunk;
    if (warp == 0) {
      int64_t x = 0, r = 0, c = 0;
      if (!moe_find_chunk<8 * NT8>(offsets, experts, args.M, slot, x, r, c)) c = 0;  // (a chunk has rows)
      if (lane == 0) {
        s_chunk.expert = x;
        s_chunk.row0 = r;
        s_chunk.rows = c;
        s_chunk.alpha = c > 0 && alphas != nullptr ? __ldcg(alphas + x) : 1.0f;
      }
    }
    __syncthreads();
    l = s_chunk.expert;
    row0 = s_chunk.row0;
    rows = s_chunk.rows;
    alpha_g = s_chunk.alpha;
    if (rows == 0) return;  // (uniform) slot j past the last chunk
  } else {
    l = group / args.groups_per_batch;
    task0 = (group - l * args.groups_per_batch) * wt;
  }
  const int64_t task = task0 + warp;
  // Dense: 8 tasks per 128-row band, rows base + i + 32 q (i < 4); dual: 16, B1 and B2 rows
  // base + i + 32 q (i < 2).
  const int64_t blk = kDual ? task >> 4 : task >> 3;
  const int64_t base = kDual ? blk * 128 + 2 * (task & 15) : blk * 128 + 4 * (task & 7);
  const bool task_ok = task < args.tasks_per_batch && base < args.N;

  const int nchunks = args.nchunks;
  const int tile_cap = args.tile_cap;
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t s_tok = smem_base;
  const uint32_t rings = smem_base + static_cast<uint32_t>(decode_token_tile_bytes(tile_cap, NT8));
  const uint32_t ring = rings + static_cast<uint32_t>(warp * D * kStageBytes);

  // ---- copy side: the MMA GEMV's (mma_kernel.cuh), LPR lanes per row ----
  constexpr int kRpi = 32 / LPR;
  constexpr int kRowsPerLane = 16 / kRpi;
  const int cp_rs = lane / LPR, cp_p = lane % LPR;
  // Dual (kRpi = 2): copy k of lane group cp_rs is MMA row cp_rs + 2k, i.e. row
  // base + cp_rs + 32 (k & 3) of B1 (k < 4) or B2 (k >= 4).
  static_assert(!kDual || kRpi == 2, "the dual copy mapping assumes 2 rows per copy instruction");
  auto cp_rowoff = [](int k) {
    if constexpr (kDual) return 32 * (k & 3);
    else return kRpi == 4 ? 32 * k : kRpi == 2 ? 2 * (k & 1) + 32 * (k >> 1) : 0;
  };
  const int64_t cp_row0 = kDual ? base + cp_rs : base + (cp_rs & 3) + 32 * (cp_rs >> 2);
  uint32_t cp_rows = 0;
#pragma unroll
  for (int k = 0; k < kRowsPerLane; ++k)
    if (cp_row0 + cp_rowoff(k) < args.N) cp_rows |= 1u << k;
  const uint8_t* cp_src = args.w + l * args.w_batch + (cp_rows & 1 ? cp_row0 : 0) * args.w_row + 16 * cp_p;
  const int64_t cp_wrow = args.w_row;
  const uint8_t* cp_src2 = nullptr;  // dual: B2's rows
  int64_t cp_wrow2 = 0;
  if constexpr (kDual) {
    cp_src2 = dual->w2 + l * dual->w2_batch + (cp_rows & 1 ? cp_row0 : 0) * dual->w2_row + 16 * cp_p;
    cp_wrow2 = dual->w2_row;
  }
  auto cp_smem_row = [](int m) { return (m & 1 ? mma_odd_rows(SC) : 0) + (m >> 1) * kRowBytes; };
  const uint32_t cp_dst = ring + 16 * cp_p;
  const uint8_t* sf_src;
  int64_t sf_step;
  uint32_t sf_dst;
  int sf_lim, sf_gstep;
  bool sf_lane;
  if constexpr (kBlocked) {
    const int kt = lane >> 2, ii = lane & 3;
    sf_lane = kt < SC / 2;
    if constexpr (kDual) {  // piece ii of a tile: line (base & 31) + (ii & 1) of B1 (ii < 2) or B2
      const uint8_t* sfm = ii >> 1 ? dual->sfw2 + l * dual->sfw2_batch : args.sfw + l * args.sfw_batch;
      sf_src = sfm + blk * args.sfw_tile_row_bytes + kt * 512 + ((base & 31) + (ii & 1)) * 16;
    } else {
      sf_src = args.sfw + l * args.sfw_batch + blk * args.sfw_tile_row_bytes + kt * 512 + ((base & 31) + ii) * 16;
    }
    sf_step = (SC / 2) * 512;
    sf_dst = ring + kStageA + kt * 64 + ii * 16;
    sf_lim = args.tiles_k - kt;
    sf_gstep = SC / 2;
  } else {
    constexpr int kPieces = SC / 8;
    const int m = lane / kPieces, h = lane % kPieces;
    if constexpr (kDual) {  // MMA row m: B1 (m < 8) or B2 row base + (m & 1) + 32 ((m >> 1) & 3)
      const int64_t row = base + (m & 1) + 32 * ((m >> 1) & 3);
      sf_lane = m < 16 && row < args.N;
      const int64_t rr = sf_lane ? row : 0;
      sf_src = (m >= 8 ? dual->sfw2 + l * dual->sfw2_batch + rr * dual->sfw2_row
                       : args.sfw + l * args.sfw_batch + rr * args.sfw_row) +
               16 * h;
    } else {
      const int64_t row = base + (m & 3) + 32 * (m >> 2);
      sf_lane = m < 16 && row < args.N;
      sf_src = args.sfw + l * args.sfw_batch + (sf_lane ? row : 0) * args.sfw_row + 16 * h;
    }
    sf_step = 2 * SC;
    sf_dst = ring + kStageA + m * 2 * SC + 16 * h;
    sf_lim = nchunks - 8 * h;
    sf_gstep = SC;
  }

  const int n_stages = (nchunks + SC - 1) / SC;
  const int s_begin = min(n_stages, static_cast<int>(crank) * args.stages_per_cta);
  const int s_end = min(n_stages, s_begin + args.stages_per_cta);
  const int c_begin = SC * s_begin, c_end = min(nchunks, SC * s_end);
  const int n_mine = task_ok ? s_end - s_begin : 0;

  // The copies of one stage: per lane kRowsPerLane row copies + one scale piece. Everything
  // but the stage's source offset and ring slot is computed once here and made opaque to the
  // compiler (ptx::fence_reg): without that it re-derived the row checks (64-bit compares),
  // the ring address (shared window, warp offset) and the row offsets inside every copy's
  // branch, ~35 instructions per 16-byte copy: 27% of the 8-token kernel's instructions in the profile
  // (bench/NOTES.md "Decode kernel instruction count"). Copies are predicated, not branched.
  uint32_t cp_ok = cp_rows, cp_dst_r = cp_dst, sf_dst_r = sf_dst;
  const uint8_t *cp_src_r = cp_src, *cp_src2_r = cp_src2, *sf_src_r = sf_src;
  ptx::fence_reg(cp_ok);
  ptx::fence_reg(cp_dst_r);
  ptx::fence_reg(sf_dst_r);
  fence_ptr(cp_src_r);
  if constexpr (kDual) fence_ptr(cp_src2_r);
  fence_ptr(sf_src_r);
  auto issue = [&](int slot, int jj) {
    const int gs = s_begin + jj;
    const int nc = min(SC, nchunks - SC * gs);
    const uint32_t so = slot * kStageBytes;
    const int64_t gofs = static_cast<int64_t>(gs) * kRowBytes;
    const uint8_t* src = cp_src_r + gofs;
#pragma unroll
    for (int k = 0; k < kRowsPerLane; ++k) {
      const uint8_t* row_src;
      if constexpr (kDual)  // copies 4..7: B2's rows
        row_src = k >= 4 ? cp_src2_r + gofs + cp_rowoff(k) * cp_wrow2 : src + cp_rowoff(k) * cp_wrow;
      else
        row_src = src + cp_rowoff(k) * cp_wrow;
      const uint32_t row_dst = cp_dst_r + so + cp_smem_row(cp_rs + kRpi * k);
#pragma unroll
      for (int c = 0; c < SC / LPR; ++c)
        cp_async_16_cg_if(row_dst + 16 * LPR * c, row_src + 16 * LPR * c,
                               (cp_ok & (1u << k)) != 0 && (nc == SC || cp_p + LPR * c < nc));
    }
    cp_async_16_cg_if(sf_dst_r + so, sf_src_r + gs * sf_step, sf_lane && gs * sf_gstep < sf_lim);
  };

  // ---- consumer constants ----
  const int g = lane >> 2, t = lane & 3;
  const uint32_t a_off = (g & 1 ? mma_odd_rows(SC) : 0) + (g >> 1) * kRowBytes + 16 * t;
  const uint32_t sf_off =
      kBlocked ? (kDual ? kStageA + (t >> 1) * 64 + (t & 1) * 2 + (g & 1) * 16 + (g >> 1) * 4
                        : kStageA + (t >> 1) * 64 + (t & 1) * 2 + (g & 3) * 16 + (g >> 2) * 4)
               : kStageA + g * 2 * SC + 2 * t;
  const uint32_t tok = s_tok + static_cast<uint32_t>(g * 64);  // token g of group 0
  // Token fragment of word jw, stage chunk c0: tok_w[jw] + c0 * kTokChunk (+ step and group
  // offsets, immediates): chunk t of the step, 16-byte slot jw ^ t (decode_mma.cuh).
  constexpr uint32_t kTokChunk = 8 * NT8 * 64;
  uint32_t a_off_r = a_off, sf_off_r = sf_off, tok_w[4];
#pragma unroll
  for (int jw = 0; jw < 4; ++jw) {
    tok_w[jw] = tok + static_cast<uint32_t>(t) * kTokChunk + 16u * static_cast<uint32_t>(jw ^ t);
    ptx::fence_reg(tok_w[jw]);
  }
  ptx::fence_reg(a_off_r);
  ptx::fence_reg(sf_off_r);

  float sum[NT8][4], acc[NT8][4];
#pragma unroll
  for (int j = 0; j < NT8; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) sum[j][i] = acc[j][i] = 0.0f;

  if (!kGrouped && args.pdl != 0) {
    if (args.pdl >= 2 && n_mine > 0 && cp_p < nchunks - SC * s_begin) {
      const uint8_t* src = cp_src + static_cast<int64_t>(s_begin) * kRowBytes;
#pragma unroll
      for (int k = 0; k < kRowsPerLane; ++k) {
        if constexpr (kDual) {
          if (cp_rows & (1u << k))
            ptx::prefetch_l2(k >= 4 ? cp_src2 + static_cast<int64_t>(s_begin) * kRowBytes + cp_rowoff(k) * cp_wrow2
                                    : src + cp_rowoff(k) * cp_wrow);
        } else {
          if (cp_rows & (1u << k)) ptx::prefetch_l2(src + cp_rowoff(k) * cp_wrow);
        }
      }
    }
    ptx::pdl_wait_primary();
    ptx::pdl_launch_dependents();
  }

#pragma unroll
  for (int i = 0; i < D - 1; ++i) {
    if (i < n_mine) issue(i, i);
    ptx::cp_async_commit();
  }

  int j = 0, slot = 0;
  for (int t0 = c_begin; t0 < c_end; t0 += tile_cap) {
    const int tn = min(tile_cap, c_end - t0);
    if (t0 > c_begin) __syncthreads();  // every warp is done with the previous token tile
    decode_token_tile<NT8, kGrouped>(s_tok, args, l, t0, tn, row0, rows);
    __syncthreads();
#pragma unroll 1
    for (; j < n_mine && SC * (s_begin + j) < t0 + tn; ++j) {
      __syncwarp();
      if (j + D - 1 < n_mine) issue(slot == 0 ? D - 1 : slot - 1, j + D - 1);
      ptx::cp_async_commit();
      ptx::cp_async_wait<D - 1>();
      __syncwarp();

      const int gs = s_begin + j;
      const int c0 = SC * gs - t0;
      const int nc = min(SC, nchunks - SC * gs);
      const uint32_t st = ring + slot * kStageBytes;
      const uint32_t tst[4] = {tok_w[0] + c0 * kTokChunk, tok_w[1] + c0 * kTokChunk, tok_w[2] + c0 * kTokChunk,
                               tok_w[3] + c0 * kTokChunk};
      if (nc == SC) {
#pragma unroll
        for (int u = 0; u < SC / 4; ++u)
          decode_step<NT8, kBlocked, false, kDual, SC>(st + a_off_r, st + sf_off_r, tst, u, t, nc, acc);
      } else {
#pragma unroll
        for (int u = 0; u < SC / 4; ++u)
          if (4 * u < nc) decode_step<NT8, kBlocked, true, kDual, SC>(st + a_off_r, st + sf_off_r, tst, u, t, nc, acc);
      }
      // The stage's chain (512 or 256 K) into the round-to-nearest sum.
#pragma unroll
      for (int jj = 0; jj < NT8; ++jj)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          sum[jj][i] += acc[jj][i];
          acc[jj][i] = 0.0f;
        }
      slot = slot + 1 == D ? 0 : slot + 1;
    }
  }
  ptx::cp_async_wait<0>();

  // Output (m, n) of this CTA's tokens (dense: token m of batch l; MoE: row row0 + m).
  auto put = [&](int64_t m, int64_t n, float v) {
    if constexpr (kGrouped) {
      if (m < rows && n < args.N) decode_store_row(args, row0 + m, n, v, alpha_g);
    } else {
      if (m < args.M && n < args.N) decode_store(args, l, m, n, v);
    }
  };
  // Dual: outputs (m, n) from B1's sum d1 and B2's sum d2, act(alpha1 2^28 d1) (alpha2 2^28 d2)
  // (the alphas may come from the preceding grid: read after griddepcontrol.wait, above).
  float alpha1 = 0.0f, alpha2 = 0.0f;
  if constexpr (kDual) {
    alpha1 = args.alpha_ptr ? *args.alpha_ptr : args.alpha;
    alpha2 = dual->alpha2_ptr ? *dual->alpha2_ptr : dual->alpha2;
  }
  auto put2 = [&](int64_t m, int64_t n, float d1, float d2) {
    if (m < args.M && n < args.N)
      decode_store_final(args, l, m, n, EpilogueDual::out_value(dual->act, d1, d2, alpha1, alpha2));
  };
  if constexpr (kDual) {
    if (kc == 1) {
      if (!task_ok) return;
      // Lane (g, t): MMA rows g (B1) and g + 8 (B2) = output column n; tokens 8j + 2t (+1).
      const int64_t n = base + (g & 1) + 32 * (g >> 1);
#pragma unroll
      for (int jj = 0; jj < NT8; ++jj) {
        const int64_t m0 = 8 * jj + 2 * t;
        put2(m0, n, sum[jj][0], sum[jj][2]);
        put2(m0 + 1, n, sum[jj][1], sum[jj][3]);
      }
      return;
    }
  }
  // Lane (g, t): rows r0 = MMA row g, r1 = MMA row g + 8 (= r0 + 64); tokens 8j + 2t (+1).
  const int64_t r0 = base + (g & 3) + 32 * (g >> 2), r1 = r0 + 64;
  if (!kDual && kc == 1) {
    if (!task_ok) return;
#pragma unroll
    for (int jj = 0; jj < NT8; ++jj) {
      const int64_t m0 = 8 * jj + 2 * t;
      put(m0, r0, sum[jj][0]);
      put(m0 + 1, r0, sum[jj][1]);
      put(m0, r1, sum[jj][2]);
      put(m0 + 1, r1, sum[jj][3]);
    }
    return;
  }

  // Cluster split: partials -> own rings (drained: every copy of this thread has landed,
  // and the barrier orders the other lanes'), item (warp, group, lane) = one float4.
  __syncthreads();
  const uint32_t part = rings;
#pragma unroll
  for (int jj = 0; jj < NT8; ++jj)
    ptx::sts128(part + static_cast<uint32_t>(((warp * NT8 + jj) * 32 + lane) * 16),
                make_uint4(__float_as_uint(sum[jj][0]), __float_as_uint(sum[jj][1]), __float_as_uint(sum[jj][2]),
                           __float_as_uint(sum[jj][3])));
  ptx::cluster_arrive_release();
  ptx::cluster_wait_acquire();
  const int items = wt * NT8 * 32;
  for (int it = static_cast<int>(crank) + kc * static_cast<int>(threadIdx.x); it < items;
       it += kc * static_cast<int>(blockDim.x)) {
    const int iw = it / (NT8 * 32), ij = (it / 32) % NT8, il = it % 32;
    const int64_t itask = task0 + iw;
    const int64_t ibase = kDual ? (itask >> 4) * 128 + 2 * (itask & 15) : (itask >> 3) * 128 + 4 * (itask & 7);
    if (itask >= args.tasks_per_batch || ibase >= args.N) continue;
    float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int q = 0; q < kc; ++q) {  // rank order: deterministic
      const float4 v = ptx::ld_dsmem_f4(ptx::map_to_rank(part + static_cast<uint32_t>(it * 16), q));
      s.x += v.x;
      s.y += v.y;
      s.z += v.z;
      s.w += v.w;
    }
    const int ig = il >> 2, itq = il & 3;
    if constexpr (kDual) {  // the complete sums of B1 (x, y) and B2 (z, w)
      const int64_t qn = ibase + (ig & 1) + 32 * (ig >> 1);
      const int64_t m0 = 8 * ij + 2 * itq;
      put2(m0, qn, s.x, s.z);
      put2(m0 + 1, qn, s.y, s.w);
    } else {
      const int64_t q0 = ibase + (ig & 3) + 32 * (ig >> 2), q1 = q0 + 64;
      const int64_t m0 = 8 * ij + 2 * itq;
      put(m0, q0, s.x);
      put(m0 + 1, q0, s.y);
      put(m0, q1, s.z);
      put(m0 + 1, q1, s.w);
    }
  }
  ptx::cluster_sync_relaxed();  // no CTA leaves while another still reads its partials
}

// The dense decode-regime GEMM (gemm_decode.cu). NT8 = 3 and 4 (17..24, 25..32 tokens) are held to
// 128 registers (NT8 = 4: 124-126 used, no spills; 131 unbounded), so that two 8-warp CTAs fit on
// an SM as for 1 and 2 groups (the shape model, decode_plan.hpp); 1 and 2 groups (77 / 106) are
// unchanged by the bound. SC: the stage geometry (kMmaSC or kDecodeFineSC, decode_plan.hpp); the
// fine instances use 77-79 / 93 / 109-110 / 121-123 registers for 1..4 groups, no spills.
template <int NT8, bool kBlocked, int SC>
__global__ void __launch_bounds__(kDecodeMaxWarps * 32, NT8 >= 3 ? 2 : 1) gemm_decode_kernel(const DecodeArgs args) {
  decode_gemm<NT8, kBlocked, false, false, SC>(args, nullptr, nullptr, 0);
}

// The packed MoE route (grouped_packed.cu): experts are the batch. CTA slot j (groups_per_batch
// CTAs, times cluster_k, per slot) computes chunk j of kRows = 8 NT8 token rows, the chunks of
// the non-empty experts numbered in expert order (moe_find_chunk): an expert of M_g rows takes
// ceil(M_g / kRows) slots, each streaming its weights once; an empty expert takes none, so its
// weights are never read. The grid has the host's upper bound of chunks (decode_plan.hpp
// decode_moe_slots); CTAs past the last chunk exit after the offsets' scan. Nothing the
// preceding grid may write (offsets, alphas, tokens) is read before griddepcontrol.wait, and
// no weight byte is prefetched before it (the expert is not known yet).
// NT8 = 4 (32-row chunks) held to 128 registers as the dense kernel's (two 8-warp CTAs per SM).
template <int NT8, bool kBlocked>
__global__ void __launch_bounds__(kDecodeMaxWarps * 32, NT8 >= 3 ? 2 : 1) gemm_decode_moe_kernel(
    const DecodeMoeArgs args) {
  decode_gemm<NT8, kBlocked, true>(args.d, args.offsets, args.alphas, args.experts);
}

// The dual route (dual_gemm.cu): c = act(alpha1 A B1^T) * (alpha2 A B2^T) for 2..32 tokens, each
// warp task 8 rows of B1 and the same 8 rows of B2 (decode_dual_plan.hpp). NT8 = 3 and 4 held to
// 128 registers as the dense kernel's (two 8-warp CTAs per SM in the shape model).
template <int NT8, bool kBlocked>
__global__ void __launch_bounds__(kDecodeMaxWarps * 32, NT8 >= 3 ? 2 : 1) dual_gemm_decode_kernel(
    const DecodeDualArgs args) {
  decode_gemm<NT8, kBlocked, false, true>(args.d, nullptr, nullptr, 0, &args.e);
}

}  // namespace nvfp4::sm90::gemv_detail
