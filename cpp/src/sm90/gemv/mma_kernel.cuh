// gemv_mma_kernel: the sm90a GEMV on the int8 tensor cores, c[l, m] = alpha * sum_k
// A[l, m, k] * b[l, k], for the large shapes (M >= 128 and M*L >= 4096 rows, or >= 1024
// where the register kernel would split K 4-8 ways; 16-byte aligned operands; linear
// scales need K % 256 == 0: plan.hpp).
//
// Why: the register kernel (reg_kernel.cuh) spends ~93 issue slots per 16-byte chunk and
// row (52 of them decoding e2m1 to fp16 pairs, 29 on fp16 products and the fp32
// block-scale chain) and is bound by instruction issue at ~2.5-2.9 TB/s. Here the
// products and their sums per scale block run on the tensor cores (IMMA m16n8k32, exact
// in int32) and the decode writes 4 values per register instead of 2: ~60 instructions
// per chunk and row.
//
// Numerics (exact up to the fp32 accumulation, docs/design.md "Numerics"):
//   2a = P - N for each A element a, P = 2|a| for a > 0 (else 0), N = 2|a| for a < 0
//   (else 0), both u8 0..12; b' = 2b (s8, -12..12). Per (row, 16-element scale block)
//   two MMAs accumulate sum P*b' and sum N*b' (exact int32); D = their difference
//   = 4 * sum a*b exactly.
//   acc += float(D) * (sa * sb)   (sa*sb exact in fp32: 4+4 significant bits; the
//   product D*(sa*sb) exact: <= 12+8 bits; one rounding per block in the FFMA).
//   c = acc * alpha / 4.
//
// Decode of A (7 integer ops per 8 values, prmt table lookups; decode_e2m1x8_pn):
//   prmt's default mode selects byte (nibble & 7) of an 8-byte table, or, when the
//   selector nibble's bit 3 is set (the e2m1 sign bit), the sign of that byte
//   replicated. With the table M[m] = v(m) = 2|e2m1(m)| in {0,1,2,3,4,6,8,12} (sign
//   bits clear), P = prmt(M, w) and N = prmt(M, w ^ 0x88888888). prmt reads the low 16
//   bits of the selector only: the high half of a word takes a shift. Twice the MMAs
//   of a single offset-coded operand (A' = 12 + 2a from two tables and ~(R & S): 9
//   ops, and a -12 * sum b' correction as the MMA's C), but 22% fewer integer ops,
//   which is what the SM is short of here: 1-4% faster on the benchmark shapes, H100
//   and H200 (bench/NOTES.md).
//
// MMA mapping (warp task = 16 rows; lane (g, t) = (lane / 4, lane % 4)):
//   MMA row m is matrix row base + (m & 3) + 32 * (m >> 2), so that in the blocked
//   scale layout the 16 rows' scales of one 64-element K tile are 64 contiguous bytes.
//   A step covers 4 consecutive chunks (16 B = 32 elements each); lane (g, t) works on
//   chunk c_t = 4 * step + t of rows g and g + 8, in 4 MMA pairs (P and N; jw = word
//   0..3 of the chunk):
//     A regs: a0/a2 = low/high 4 values of word jw of row g, a1/a3 the same of row g + 8.
//     B (32 x 8): column n = 2t + (jw >= 2) holds lane t's b values of word jw in the
//     k-slots of quad lane t, zero elsewhere. So D column 2t is block 0 of chunk c_t,
//     column 2t + 1 is block 1: every D element is one (row, block) partial.
//   B fragments: only lane (2t, t) (words 0,1) and lane (2t + 1, t) (words 2,3) are
//   non-zero; b is decoded once per CTA into shared memory (32 B of b' per chunk in
//   natural order, {sb0, sb1}), and the other lanes read a zero vector.
//   Lane (g, t) then holds D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]: exactly the
//   two blocks of its own chunk for its two rows, whose A scales it reads as 2-byte pairs.
//
// Memory: each warp streams its 16 rows through its own ring of D stages in shared
// memory, SC chunks (16*SC bytes) of each row per stage, filled with 16-byte cp.async
// (LPR lanes per row, so one copy instruction moves whole 128-byte lines of 32 / LPR
// rows; plus one 16-byte piece of scales per lane). Even and odd rows are laid out 64
// bytes apart modulo 128 so that the 16-byte reads of a quarter warp (rows g and g + 1)
// hit all 32 banks once. K may be split across the warps of a CTA (KS, stages
// interleaved), reduced through shared memory; b is decoded per CTA in tiles of 512
// chunks (CTA-wide barrier between tiles; the rings keep running across it). The
// geometry built (SC 16, D 2, LPR 16) and the shape choice: plan.hpp.
// Cluster split (cluster_k CTAs of a cluster take consecutive K ranges of the same
// tasks; rank 0 adds the others' partials, which they store into its shared memory, in
// rank order: deterministic): chosen only for grids that would leave SMs idle.
// Programmatic dependent launch: no global memory is read before griddepcontrol.wait;
// only L2 prefetches of the first stage (hints) are issued before it.
//
// Measured (H200, bench/NOTES.md "GEMV (sm90a)"): 1.2-1.7x the copy SOL on the benchmark
// shapes; the copies alone (no math) already take 1.1-1.35x, so the access side (A as
// 256-byte pieces of rows 8 KB apart, the scales as 64-byte pieces), not issue, is the
// limit.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "../ptx.cuh"
#include "common.cuh"
#include "plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// 8 e2m1 values of `w` -> the u8 magnitudes 2|value| of its positive values (p) and of
// its negative values (n), 0 elsewhere; lo = elements 0..3, hi = 4..7 (see the top of the file).
constexpr uint32_t kMagLo = 0x03020100u, kMagHi = 0x0C080604u;  // 2|v| for codes 0..7
__device__ __forceinline__ void decode_e2m1x8_pn(uint32_t w, uint32_t& plo, uint32_t& phi, uint32_t& nlo,
                                                 uint32_t& nhi) {
  asm("{\n\t"
      ".reg .b32 x, wh, xh;\n\t"
      "xor.b32 x, %4, 0x88888888;\n\t"
      "shr.u32 wh, %4, 16;\n\t"
      "shr.u32 xh, x, 16;\n\t"
      "prmt.b32 %0, %5, %6, %4;\n\t"
      "prmt.b32 %1, %5, %6, wh;\n\t"
      "prmt.b32 %2, %5, %6, x;\n\t"
      "prmt.b32 %3, %5, %6, xh;\n\t"
      "}"
      : "=r"(plo), "=r"(phi), "=r"(nlo), "=r"(nhi)
      : "r"(w), "r"(kMagLo), "r"(kMagHi));
}

// Stores v at the same shared-memory offset as `local` in the CTA of cluster rank `rank`.
__device__ __forceinline__ void st_cluster_f32(const void* local, uint32_t rank, float v) {
  ptx::st_dsmem_f32(ptx::map_to_rank(ptx::smem_u32(local), rank), v);
}

// b chunks [t0, t0 + tn) -> shared memory: s_bq[c] = the 32 bytes b' = 2b (s8, natural
// element order), s_bs[c] = the two block scales in fp32.
__device__ __forceinline__ void decode_b_tile_mma(uint4* s_bq, float2* s_bs, const uint8_t* b_base,
                                                  const uint8_t* sfb_base, bool sfb_blocked, int t0, int tn) {
  for (int c = threadIdx.x; c < tn; c += blockDim.x) {
    const int64_t cg = static_cast<int64_t>(t0) + c;
    const uint4 bw = __ldg(reinterpret_cast<const uint4*>(b_base + cg * 16));
    const uint32_t words[4] = {bw.x, bw.y, bw.z, bw.w};
    uint32_t o[8];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t plo, phi, nlo, nhi;
      decode_e2m1x8_pn(words[q], plo, phi, nlo, nhi);
      o[2 * q] = __vsub4(plo, nlo);  // 2b = P - N per byte (s8)
      o[2 * q + 1] = __vsub4(phi, nhi);
    }
    s_bq[2 * c] = make_uint4(o[0], o[1], o[2], o[3]);
    s_bq[2 * c + 1] = make_uint4(o[4], o[5], o[6], o[7]);
    const uint32_t two = ld_bytes2(sfb_base + sf_chunk_offset(cg, sfb_blocked));
    const __half2_raw sb = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
    s_bs[c] = __half22float2(__half2(sb));
  }
}

// Per-lane shared-memory addresses of the consumer side (see the mapping above).
struct MmaLaneAddrs {
  uint32_t a;        // row g, chunk t of a stage (row g + 8: + 4 rows)
  uint32_t sf;       // scale pair of row g, chunk t (row g + 8: + sf_r8)
  uint32_t b1, b2;   // b' words 0,1 / 2,3 of chunk t of the tile, or the zero vector
  uint32_t b1_step, b2_step;  // per chunk (0 for the zero vector)
  uint32_t bs;       // {sb0, sb1} of chunk t of the tile
};

// One step: chunks cs + t (tile-relative) of rows g, g + 8 from stage `st`, whose A scale
// pairs of rows g / g + 8 lie at st + ad.sf + kSfU * u (+ kSfR8).
// kCheck: the stage is partial (only chunks < nc of it exist).
template <int SC, bool kBlocked, bool kCheck>
__device__ __forceinline__ void mma_step(const MmaLaneAddrs& ad, uint32_t st, int u, int cs, int t, int nc,
                                         float& acc0, float& acc1) {
  constexpr uint32_t kSfU = kBlocked ? 128u : 8u, kSfR8 = kBlocked ? 8u : 16u * SC;  // per step / row g -> g + 8
  constexpr uint32_t kA8 = 4 * 16 * SC;  // row g -> row g + 8 in a stage
  const uint4 x = ptx::lds128(st + ad.a + 64 * u);
  const uint4 y = ptx::lds128(st + ad.a + kA8 + 64 * u);
  const uint4 p = ptx::lds128(ad.b1 + cs * ad.b1_step);
  const uint4 q = ptx::lds128(ad.b2 + cs * ad.b2_step);
  uint4 d = make_uint4(0u, 0u, 0u, 0u), e = make_uint4(0u, 0u, 0u, 0u);  // P and N sums
  const uint32_t xw[4] = {x.x, x.y, x.z, x.w}, yw[4] = {y.x, y.y, y.z, y.w};
  const uint32_t bw[8] = {p.x, p.y, p.z, p.w, q.x, q.y, q.z, q.w};
#pragma unroll
  for (int jw = 0; jw < 4; ++jw) {
    uint32_t pa[4], na[4];
    decode_e2m1x8_pn(xw[jw], pa[0], pa[2], na[0], na[2]);
    decode_e2m1x8_pn(yw[jw], pa[1], pa[3], na[1], na[3]);
    ptx::mma_m16n8k32_u8s8(d, pa, bw[2 * jw], bw[2 * jw + 1]);
    ptx::mma_m16n8k32_u8s8(e, na, bw[2 * jw], bw[2 * jw + 1]);
  }
  d.x -= e.x;
  d.y -= e.y;
  d.z -= e.z;
  d.w -= e.w;
  const uint32_t sp0 = ptx::lds_u16(st + ad.sf + kSfU * u);
  const uint32_t sp1 = ptx::lds_u16(st + ad.sf + kSfR8 + kSfU * u);
  const float2 sb = ptx::lds_f32x2(ad.bs + 8 * cs);
  const float2 sa0 =
      __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(sp0), __NV_E4M3)));
  const float2 sa1 =
      __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(sp1), __NV_E4M3)));
  float s00 = sa0.x * sb.x, s01 = sa0.y * sb.y, s10 = sa1.x * sb.x, s11 = sa1.y * sb.y;
  if (kCheck && 4 * u + t >= nc) s00 = s01 = s10 = s11 = 0.0f;  // chunk past K: stale data, maybe NaN scales
  acc0 = fmaf(static_cast<float>(static_cast<int>(d.x)), s00, acc0);
  acc0 = fmaf(static_cast<float>(static_cast<int>(d.y)), s01, acc0);
  acc1 = fmaf(static_cast<float>(static_cast<int>(d.z)), s10, acc1);
  acc1 = fmaf(static_cast<float>(static_cast<int>(d.w)), s11, acc1);
}

// CTA = Wt warp tasks (16 rows each) x KS K-parts; warp part kp takes the stages kp,
// kp + KS, ... of its task. blockDim = 32 * Wt * KS.
template <int SC, int D, bool kBlocked, int LPR>
__global__ void __launch_bounds__(kMmaMaxWarps * 32, 2) gemv_mma_kernel(const Args args, int ks_split) {
  static_assert(SC % 4 == 0 && kMmaTileChunks % SC == 0, "stage geometry");
  static_assert((LPR == 2 || LPR == 8 || LPR == 16) && SC % LPR == 0, "copy geometry");
  static_assert(D >= 2, "ring depth");
  constexpr int kStageA = mma_stage_a(SC);
  constexpr int kStageBytes = mma_stage_bytes(SC);
  constexpr int kRowBytes = 16 * SC;  // bytes of one row per stage

  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ float s_red[kMmaMaxWarps][kMmaRows];
  __shared__ float s_cred[kMmaMaxCluster - 1][kMmaMaxWarps][kMmaRows];  // cluster partials (rank 0)

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int wt = (blockDim.x >> 5) / ks_split;
  const int task_local = warp % wt;
  const int kp = warp / wt;
  // Cluster split: the cluster_k CTAs of a cluster (consecutive blockIdx.x) take the same
  // tasks and consecutive ranges of stages_per_cta K stages each; rank 0 sums their partials.
  const int kc = args.cluster_k;
  const uint32_t crank = kc > 1 ? ptx::cluster_ctarank() : 0u;
  if (kc > 1) ptx::cluster_arrive_relaxed();  // matched before the DSMEM stores: every CTA has started
  const int64_t group = static_cast<int64_t>(blockIdx.x / static_cast<unsigned>(kc));
  const int64_t l = group / args.groups_per_batch;
  const int64_t task = (group - l * args.groups_per_batch) * wt + task_local;
  const int64_t blk = task >> 3;                    // 128-row block
  const int64_t base = blk * 128 + 4 * (task & 7);  // rows base + i + 32 q
  const bool task_ok = task < args.tasks_per_batch && base < args.M;

  const int nchunks = args.nchunks;
  const int tile_cap = args.tile_cap;
  uint4* s_bq = reinterpret_cast<uint4*>(smem_raw);
  float2* s_bs = reinterpret_cast<float2*>(smem_raw + 32 * static_cast<size_t>(tile_cap));
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t zero16 = smem_base + mma_zero_offset(tile_cap);
  const uint32_t ring = smem_base + static_cast<uint32_t>(mma_b_region_bytes(tile_cap)) +
                        static_cast<uint32_t>(warp * D * kStageBytes);
  if (threadIdx.x < 4) reinterpret_cast<uint32_t*>(smem_raw + mma_zero_offset(tile_cap))[threadIdx.x] = 0u;

  // ---- copy side: LPR lanes per row, 32 / LPR rows per copy instruction. Lane L takes
  // row slot rs = L / LPR, i.e. rows m = rs + (32 / LPR) k of the task, and in each the
  // 16-byte pieces p + LPR c (p = L % LPR) of the stage. ----
  constexpr int kRpi = 32 / LPR;          // rows per copy instruction
  constexpr int kRowsPerLane = 16 / kRpi;
  const int cp_rs = lane / LPR, cp_p = lane % LPR;
  // MMA row m -> matrix row base + (m & 3) + 32 (m >> 2); relative to the lane's first row:
  auto cp_rowoff = [](int k) { return kRpi == 4 ? 32 * k : kRpi == 2 ? 2 * (k & 1) + 32 * (k >> 1) : 0; };
  const int64_t cp_row0 = base + (cp_rs & 3) + 32 * (cp_rs >> 2);
  uint32_t cp_rows = 0;  // bit k: the lane's k-th row exists
#pragma unroll
  for (int k = 0; k < kRowsPerLane; ++k)
    if (cp_row0 + cp_rowoff(k) < args.M) cp_rows |= 1u << k;
  const uint8_t* cp_src = args.a + l * args.a_batch + (cp_rows & 1 ? cp_row0 : 0) * args.a_row + 16 * cp_p;
  const int64_t cp_arow = args.a_row;
  auto cp_smem_row = [](int m) { return (m & 1 ? mma_odd_rows(SC) : 0) + (m >> 1) * kRowBytes; };
  const uint32_t cp_dst = ring + 16 * cp_p;
  // scales: one 16-byte piece per lane and stage
  const uint8_t* sf_src;
  int64_t sf_step;
  uint32_t sf_dst;
  int sf_lim;  // the piece exists in stage g while g * sf_gstep < sf_lim (after the lane check)
  int sf_gstep;
  bool sf_lane;
  if constexpr (kBlocked) {
    // lane -> K tile kt = lane / 4 of the stage, rows base + (lane % 4) (all 4 row groups)
    const int kt = lane >> 2, ii = lane & 3;
    sf_lane = kt < SC / 2;
    sf_src = args.sfa + l * args.sfa_batch + blk * args.sfa_tile_row_bytes + kt * 512 + ((base & 31) + ii) * 16;
    sf_step = (SC / 2) * 512;
    sf_dst = ring + kStageA + kt * 64 + ii * 16;
    sf_lim = args.tiles_k - kt;  // tile (SC/2) g + kt < tiles_k
    sf_gstep = SC / 2;
  } else {
    // lane -> row m = lane / (SC/8), 16-byte piece h = lane % (SC/8) of its 2*SC bytes
    constexpr int kPieces = SC / 8;
    const int m = lane / kPieces, h = lane % kPieces;
    const int64_t row = base + (m & 3) + 32 * (m >> 2);
    sf_lane = m < 16 && row < args.M;
    sf_src = args.sfa + l * args.sfa_batch + (sf_lane ? row : 0) * args.sfa_row + 16 * h;
    sf_step = 2 * SC;
    sf_dst = ring + kStageA + m * 2 * SC + 16 * h;
    sf_lim = nchunks - 8 * h;  // bytes [16h, 16h + 16) of the stage's 2 * nc exist: 8 h < nc
    sf_gstep = SC;
  }

  const int n_stages = (nchunks + SC - 1) / SC;
  const int s_begin = min(n_stages, static_cast<int>(crank) * args.stages_per_cta);
  const int s_end = min(n_stages, s_begin + args.stages_per_cta);
  const int c_begin = SC * s_begin, c_end = min(nchunks, SC * s_end);
  const int n_mine = task_ok && s_begin + kp < s_end ? (s_end - s_begin - kp + ks_split - 1) / ks_split : 0;

  auto issue = [&](int slot, int jj) {
    const int gs = s_begin + kp + ks_split * jj;
    const int nc = min(SC, nchunks - SC * gs);
    const uint32_t so = slot * kStageBytes;
    const uint8_t* src = cp_src + static_cast<int64_t>(gs) * kRowBytes;
#pragma unroll
    for (int k = 0; k < kRowsPerLane; ++k) {
      if (!(cp_rows & (1u << k))) continue;
      const uint8_t* row_src = src + cp_rowoff(k) * cp_arow;
      const uint32_t row_dst = cp_dst + so + cp_smem_row(cp_rs + kRpi * k);
#pragma unroll
      for (int c = 0; c < SC / LPR; ++c)
        if (nc == SC || cp_p + LPR * c < nc) ptx::cp_async_16_cg(row_dst + 16 * LPR * c, row_src + 16 * LPR * c);
    }
    if (sf_lane && gs * sf_gstep < sf_lim) ptx::cp_async_16_cg(sf_dst + so, sf_src + gs * sf_step);
  };

  // ---- consumer constants ----
  const int g = lane >> 2, t = lane & 3;
  MmaLaneAddrs ad;
  ad.a = (g & 1 ? mma_odd_rows(SC) : 0) + (g >> 1) * kRowBytes + 16 * t;
  ad.sf = kBlocked ? kStageA + (t >> 1) * 64 + (t & 1) * 2 + (g & 3) * 16 + (g >> 2) * 4 : kStageA + g * 2 * SC + 2 * t;
  const bool b_act = (g >> 1) == t;
  ad.b1 = b_act && !(g & 1) ? smem_base + 32 * t : zero16;
  ad.b2 = b_act && (g & 1) ? smem_base + 32 * t + 16 : zero16;
  ad.b1_step = b_act && !(g & 1) ? 32 : 0;
  ad.b2_step = b_act && (g & 1) ? 32 : 0;
  ad.bs = smem_base + 32 * tile_cap + 8 * t;

  float acc0 = 0.0f, acc1 = 0.0f;  // rows g, g + 8

  // L2 prefetch of the stages after the ring (more bytes in flight than the ring holds):
  // lane L touches the 128-byte line L % 2 (+ 2c) of row m = L / 2 of a stage. Off
  // (prefetch_stages = 0) in every plan: measured slower (plan.hpp, GemvConfig).
  const int pf = args.prefetch_stages;
  const int64_t pf_row = base + ((lane >> 1) & 3) + 32 * (lane >> 3);
  const bool pf_ok = pf > 0 && pf_row < args.M;
  const uint8_t* pf_src = args.a + l * args.a_batch + (pf_ok ? pf_row : 0) * args.a_row + 128 * (lane & 1);
  auto prefetch = [&](int jj) {
    const int gs = s_begin + kp + ks_split * jj;
    const int nbytes = 16 * min(SC, nchunks - SC * gs);  // of each row in this stage
#pragma unroll
    for (int c = 0; c < (SC + 15) / 16; ++c)
      if (128 * ((lane & 1) + 2 * c) < nbytes)
        ptx::prefetch_l2(pf_src + static_cast<int64_t>(gs) * kRowBytes + 256 * c);
  };

  // Programmatic dependent launch: nothing that the preceding grid may write is read
  // before griddepcontrol.wait. L2 prefetches are hints (L2 is the point of coherence,
  // so a line that grid still writes is updated there): with pdl == 2 the first stages
  // of A are prefetched while the preceding grid drains.
  if (args.pdl != 0) {
    if (args.pdl >= 2) {
      for (int i = 0; i < args.pdl - 1 && i < n_mine; ++i) {
        const int gs = s_begin + kp + ks_split * i;
        if (cp_p >= nchunks - SC * gs) continue;  // this lane's first piece is past K
        const uint8_t* src = cp_src + static_cast<int64_t>(gs) * kRowBytes;
#pragma unroll
        for (int k = 0; k < kRowsPerLane; ++k)
          if (cp_rows & (1u << k)) ptx::prefetch_l2(src + cp_rowoff(k) * cp_arow);
      }
    }
    ptx::pdl_wait_primary();
    ptx::pdl_launch_dependents();
  }

  // Prologue (before the first b decode, so that these copies overlap it).
#pragma unroll
  for (int i = 0; i < D - 1; ++i) {
    if (i < n_mine) issue(i, i);
    ptx::cp_async_commit();
  }
  if (pf_ok)
    for (int i = D - 1; i < D - 1 + pf && i < n_mine; ++i) prefetch(i);

  int j = 0, slot = 0;
  for (int t0 = c_begin; t0 < c_end; t0 += tile_cap) {
    const int tn = min(tile_cap, c_end - t0);
    if (t0 > c_begin) __syncthreads();  // every warp is done with the previous b tile
    decode_b_tile_mma(s_bq, s_bs, args.b + l * args.b_batch, args.sfb + l * args.sfb_batch,
                      args.sfb_blocked != 0, t0, tn);
    __syncthreads();
#pragma unroll 1
    for (; j < n_mine && SC * (s_begin + kp + ks_split * j) < t0 + tn; ++j) {
      __syncwarp();  // every lane is done reading the slot refilled now
      if (j + D - 1 < n_mine) issue(slot == 0 ? D - 1 : slot - 1, j + D - 1);
      ptx::cp_async_commit();
      if (pf_ok && j + D - 1 + pf < n_mine) prefetch(j + D - 1 + pf);
      ptx::cp_async_wait<D - 1>();  // this lane's copies of stage j have landed
      __syncwarp();                 // ... and those of the other lanes

      const int gs = s_begin + kp + ks_split * j;
      const int c0 = SC * gs - t0;                // tile-relative chunk of the stage's first chunk
      const int nc = min(SC, nchunks - SC * gs);  // chunks in this stage
      const uint32_t st = ring + slot * kStageBytes;
      if (nc == SC) {
#pragma unroll
        for (int u = 0; u < SC / 4; ++u) mma_step<SC, kBlocked, false>(ad, st, u, c0 + 4 * u, t, nc, acc0, acc1);
      } else {
#pragma unroll
        for (int u = 0; u < SC / 4; ++u)
          if (4 * u < nc && nc < SC) mma_step<SC, kBlocked, true>(ad, st, u, c0 + 4 * u, t, nc, acc0, acc1);
      }
      slot = slot + 1 == D ? 0 : slot + 1;
    }
  }
  ptx::cp_async_wait<0>();

  // Sum over the quad (the 4 chunks of a step), then over the KS warps of the task.
  acc0 += __shfl_xor_sync(0xFFFFFFFFu, acc0, 1);
  acc1 += __shfl_xor_sync(0xFFFFFFFFu, acc1, 1);
  acc0 += __shfl_xor_sync(0xFFFFFFFFu, acc0, 2);
  acc1 += __shfl_xor_sync(0xFFFFFFFFu, acc1, 2);
  if (ks_split > 1) {
    if (kp != 0 && t == 0) {
      s_red[warp][g] = acc0;
      s_red[warp][g + 8] = acc1;
    }
    __syncthreads();
    if (kp == 0) {
      for (int pp = 1; pp < ks_split; ++pp) {
        acc0 += s_red[warp + pp * wt][g];
        acc1 += s_red[warp + pp * wt][g + 8];
      }
    }
  }
  if (kc > 1) {
    // Ranks 1.. store their partials into rank 0's s_cred; rank 0 adds them in rank
    // order (deterministic). Every thread of every CTA passes both cluster barriers.
    ptx::cluster_wait_acquire();  // (the arrive at the start) every CTA of the cluster runs
    if (crank != 0 && kp == 0 && t == 0 && task_ok) {
      st_cluster_f32(&s_cred[crank - 1][task_local][g], 0, acc0);
      st_cluster_f32(&s_cred[crank - 1][task_local][g + 8], 0, acc1);
    }
    ptx::cluster_arrive_release();
    ptx::cluster_wait_acquire();
    if (crank != 0) return;
    if (kp == 0 && t == 0 && task_ok) {
      for (int r = 1; r < kc; ++r) {
        acc0 += s_cred[r - 1][task_local][g];
        acc1 += s_cred[r - 1][task_local][g + 8];
      }
    }
  }
  if (kp != 0 || t != 0 || !task_ok) return;
  const int64_t r0 = base + (g & 3) + 32 * (g >> 2), r1 = r0 + 64;
  if (r0 < args.M) store_out(args, l, r0, acc0, 0.25f);
  if (r1 < args.M) store_out(args, l, r1, acc1, 0.25f);
}

}  // namespace nvfp4::sm90::gemv_detail
