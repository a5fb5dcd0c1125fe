// Mainloop collective of the sm90a NVFP4 GEMM: TMA producer + activation-decode
// warpgroups + RS-wgmma consumer warpgroups (CUTLASS-collective-like roles).
//
// CTA = 4 warpgroups (512 threads):
//   WG0, WG1 "transform" (setmaxnreg 48; 80 without promotion): warp 0 lane 0 issues
//       the TMA loads of the packed fp4 tiles and of the block scales (TMA / bulk copy;
//       cp.async or plain loads by warp 0's lanes where alignment forbids TMA); all 256 threads then
//       decode the activation tile (one token row x 64 K each) into fp16 shared memory
//       (128-byte-swizzled, K-major: the wgmma B operand).
//   WG2, WG3 "consumers" (setmaxnreg 208; 176 without promotion): 64 weight rows each;
//       every thread decodes its own rows of the weight tile straight into the wgmma A
//       register fragments (RS wgmma), m64n128k16, fp32 accumulators in registers,
//       promoted every few K blocks into a round-to-nearest fp32 sum
//       (accumulator_promotion.cuh).
// Tile: 128 weight rows (problem N) x 128 tokens (problem M) x 128 K per stage.
// Barriers: full/empty per ring stage (TMA + scales -> readers), dfull/dempty per
// decoded fp16 activation buffer (transform -> consumers; 3 buffers so the transform
// runs up to two blocks ahead). Decoding of K block i+1 overlaps the wgmma of block i
// on both sides. Every shared-memory access is an explicit ld/st.shared (generic
// accesses were queued behind global misses in L1TEX: 5x slower). Two transform
// warpgroups because one (a single warp per scheduler) could not issue the
// activation decode fast enough to keep up with the tensor cores (2.4k cycles per
// 128-K block against 1k of wgmma).
//
// The weight decode happens exactly once per element per CTA; the activation tile
// is decoded once per CTA and reused by both consumer warpgroups.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "../../common/formats.h"
#include "accumulator_promotion.cuh"
#include "fp4_decode.cuh"
#include "../kernel/gemm_params.cuh"
#include "../ptx.cuh"

namespace nvfp4::sm90 {

struct MainloopRS {
  static constexpr int kBlockW = 128;        // weight rows per CTA (2 consumer WGs x 64)
  static constexpr int kBlockX = 128;        // tokens per CTA (wgmma N)
  static constexpr int kBlockK = 128;        // K elements per stage
  static constexpr int kPackedRow = kBlockK / 2;   // 64 bytes of fp4 per row per stage
  static constexpr int kSfRow = kBlockK / 16;      // 8 scale bytes per row per stage
  static constexpr int kStages = 5;
  static constexpr int kXBuf = 3;            // decoded activation buffers
  static constexpr int kTransformThreads = 256;
  static constexpr int kConsumerThreads = 256;
  static constexpr int kThreads = kTransformThreads + kConsumerThreads;
  // setmaxnreg: 256 * (T + C) = 65536. With promotion (accumulator_promotion.cuh) the
  // consumers hold the wgmma accumulator, the promoted sum and two fragment sets (3 x 64
  // registers, ~205 in all), so the transform warpgroups get 48 (no spills at 48, 40
  // spilled). Measured cost (H200, 2304x4608x7168): the 48-register cap alone makes the
  // fused path ~14% slower (375 vs 328 µs without promotion); half-block fragment sets
  // (2 x 16 registers, transform kept at 80) were no better (366 µs without promotion,
  // 386-401 µs with it) and were dropped.
  // The kernel is instantiated per promotion interval P (accumulator_promotion.cuh):
  // P = 0 (short K slices only) gets the 80 / 176 split.
  template <int P>
  static constexpr int transform_regs() { return P > 0 ? 48 : 80; }
  template <int P>
  static constexpr int consumer_regs() { return P > 0 ? 208 : 176; }
  static constexpr int kXAtomBytes = kBlockX * 128;  // one 64-K atom of decoded tokens
  static constexpr int kSfTmaCols = 16;      // kScaleTma box width (bytes)

  struct alignas(1024) Stage {
    uint8_t w[kBlockW * kPackedRow];   // TMA, 64-byte swizzle
    uint8_t x[kBlockX * kPackedRow];   // TMA, 64-byte swizzle
    uint8_t wsf[kBlockW * kSfTmaCols];  // layout depends on the ScaleLoad mode (sf_offset)
    uint8_t xsf[kBlockX * kSfTmaCols];
  };
  // Decoded activations: 2 atoms of 64 K (128 B rows, 128-byte swizzle) x 128 tokens.
  struct alignas(1024) XDecoded {
    uint8_t atom[2][kXAtomBytes];
  };
  struct alignas(1024) SharedStorage {
    using StageType = Stage;
    static constexpr int kRingStages = kStages;
    Stage ring[kStages];
    XDecoded xdec[kXBuf];
    uint64_t full[kStages];
    uint64_t empty[kStages];
    uint64_t dfull[kXBuf];
    uint64_t dempty[kXBuf];
  };

  // Byte offset of 16-byte chunk `chunk` (0..3) of row `row` in a 64-byte-row tile
  // written by TMA with CU_TENSOR_MAP_SWIZZLE_64B (chunk bits 4..5 ^= address bits 7..8).
  __device__ static __forceinline__ uint32_t sw64_offset(uint32_t row, uint32_t chunk) {
    return row * 64u + ((chunk ^ ((row >> 1) & 3u)) << 4);
  }
  // Byte offset of logical 16-byte chunk c (0..15, 8 K elements each) of token row r
  // in the decoded activation buffer (128-byte swizzle inside each 64-K atom).
  __device__ static __forceinline__ uint32_t xdec_offset(uint32_t r, uint32_t c) {
    return (c >> 3) * kXAtomBytes + r * 128u + (((c & 7u) ^ (r & 7u)) << 4);
  }
  // Byte offset of the stage's scale column c (0..7) of tile row r, for global K block
  // kb (kScaleTma boxes start at a 16-byte aligned column: block kb sits at 8*(kb&1)).
  __device__ static __forceinline__ uint32_t sf_offset(int mode, uint32_t r, uint32_t c, int32_t kb) {
    if (mode == kScaleBulk) return (c >> 2) * 512u + (r & 31u) * 16u + (r >> 5) * 4u + (c & 3u);
    if (mode == kScaleTma) return r * kSfTmaCols + c + 8u * static_cast<uint32_t>(kb & 1);
    return r * kSfRow + c;
  }

  static __device__ __forceinline__ void init_barriers(SharedStorage& s, const GemmParams& p) {
    const bool tx_only = p.sf_mode == kScaleBulk || p.sf_mode == kScaleTma;
    const uint32_t full_count = tx_only ? 1 : 1 + 32;  // + 32 scale-loading lanes
    for (int i = 0; i < kStages; ++i) {
      ptx::mbar_init(&s.full[i], full_count);
      ptx::mbar_init(&s.empty[i], kTransformThreads + kConsumerThreads);  // every reading lane (mainloop_rs_predecoded.cuh: kReleaseLanes)
    }
    for (int i = 0; i < kXBuf; ++i) {
      ptx::mbar_init(&s.dfull[i], kTransformThreads);  // every transform thread
      ptx::mbar_init(&s.dempty[i], kConsumerThreads);  // every consumer lane
    }
    ptx::mbar_init_fence();
  }

  // ---- producer (warp 0 of the transform WGs) ---------------------------------------
  // Row-major [row][8] scales of one stage, two 4-byte groups per row, zero-filled
  // outside the matrix so that TMA's zero-filled fp4 never meets a garbage (NaN) scale.
  static __device__ __forceinline__ void load_scales_rows(uint8_t* dst, const ScaleSrc& src, const GemmParams& p,
                                                          int64_t row0, int32_t l, int32_t kb, int lane) {
    const int64_t kcols = p.K / 16;
    const uint8_t* base = src.data + static_cast<int64_t>(l) * src.batch_stride;
    // not unrolled: this runs in the transform warpgroups' small register budget (unrolling
    // the 4-byte groups spills in the promoted fused and grouped instances)
#pragma unroll 1
    for (int j = 0; j < 4; ++j) {
      const int r = lane + 32 * j;
      const int64_t row = row0 + r;
#pragma unroll 1
      for (int g = 0; g < 2; ++g) {
        const int64_t c0 = static_cast<int64_t>(kb) * kSfRow + g * 4;
        int64_t nvalid = kcols - c0;
        nvalid = nvalid < 0 ? 0 : (nvalid > 4 ? 4 : nvalid);
        if (row >= src.rows) nvalid = 0;
        const uint8_t* gp = base;
        if (nvalid > 0)
          gp = base + (p.sf_blocked ? blocked_sf_offset(row, c0, p.K) : row * src.row_stride + c0);
        uint8_t* sp = dst + r * kSfRow + g * 4;
        if (p.sf_mode == kScaleCpAsync) {
          ptx::cp_async_4_zfill(sp, gp, static_cast<uint32_t>(nvalid));
        } else {
          ptx::sts32(ptx::smem_u32(sp), ptx::ldg_bytes4(gp, nvalid));
        }
      }
    }
  }

  struct TmaDescs {
    const void* w;
    const void* x;
    const void* sfw;  // kScaleTma only
    const void* sfx;
  };

  static __device__ __forceinline__ void produce(SharedStorage& s, const TmaDescs& tm, const GemmParams& p,
                                                 int stage, int32_t kb, int64_t w0, int64_t x0, int32_t l,
                                                 int lane) {
    Stage& st = s.ring[stage];
    // the token box holds p.x_box_rows rows (fitted below 128 tokens, token_box_rows); the rest
    // of st.x keeps stale data that reaches only output rows >= M, never stored
    const uint32_t tma_bytes = (kBlockW + static_cast<uint32_t>(p.x_box_rows)) * kPackedRow;
    if (p.sf_mode == kScaleBulk || p.sf_mode == kScaleTma) {
      if (lane == 0) {
        const uint32_t sf_bytes = p.sf_mode == kScaleBulk
                                      ? 2048u
                                      : (128u + static_cast<uint32_t>(p.x_box_rows)) * kSfTmaCols;
        ptx::mbar_arrive_expect_tx(&s.full[stage], tma_bytes + sf_bytes);
        ptx::tma_load_3d(st.w, tm.w, &s.full[stage], kb * kPackedRow, static_cast<int32_t>(w0), l);
        ptx::tma_load_3d(st.x, tm.x, &s.full[stage], kb * kPackedRow, static_cast<int32_t>(x0), l);
        if (p.sf_mode == kScaleBulk) {
          // blocked: 512-byte tiles ordered (row block, 4-column group); this stage = 2 groups
          const int64_t tiles_k = p.K / 64;  // K % 128 == 0 in this mode
          const uint8_t* gw = p.sf_w.data + static_cast<int64_t>(l) * p.sf_w.batch_stride +
                              ((w0 / 128) * tiles_k + 2 * static_cast<int64_t>(kb)) * 512;
          const uint8_t* gx = p.sf_x.data + static_cast<int64_t>(l) * p.sf_x.batch_stride +
                              ((x0 / 128) * tiles_k + 2 * static_cast<int64_t>(kb)) * 512;
          ptx::bulk_load(st.wsf, gw, 1024u, &s.full[stage]);
          ptx::bulk_load(st.xsf, gx, 1024u, &s.full[stage]);
        } else {
          // the box's inner start must be 16-byte aligned (an 8-byte start faults)
          ptx::tma_load_3d(st.wsf, tm.sfw, &s.full[stage], (kb >> 1) * kSfTmaCols, static_cast<int32_t>(w0), l);
          ptx::tma_load_3d(st.xsf, tm.sfx, &s.full[stage], (kb >> 1) * kSfTmaCols, static_cast<int32_t>(x0), l);
        }
      }
      return;
    }
    if (lane == 0) {
      ptx::mbar_arrive_expect_tx(&s.full[stage], tma_bytes);
      ptx::tma_load_3d(st.w, tm.w, &s.full[stage], kb * kPackedRow, static_cast<int32_t>(w0), l);
      ptx::tma_load_3d(st.x, tm.x, &s.full[stage], kb * kPackedRow, static_cast<int32_t>(x0), l);
    }
    load_scales_rows(st.wsf, p.sf_w, p, w0, l, kb, lane);
    load_scales_rows(st.xsf, p.sf_x, p, x0, l, kb, lane);
    if (p.sf_mode == kScaleCpAsync)
      ptx::cp_async_mbar_arrive_noinc(&s.full[stage]);
    else
      ptx::mbar_arrive(&s.full[stage]);
  }

  // ---- transform warpgroups: producer + activation decode ----------------------------
  // Thread (r, h): token row r of the tile, K half h (words 2h, 2h+1 of each 16-byte
  // chunk t -> logical chunks 8h..8h+7 = decoded atom h).
  static __device__ __forceinline__ void run_transform(SharedStorage& s, const TmaDescs& tm, const GemmParams& p,
                                                       int64_t w0, int64_t x0, int32_t l, int32_t kb0,
                                                       int32_t nkb) {
    const int tid = threadIdx.x;  // 0..255
    const int warp = tid >> 5, lane = tid & 31;
    const int mode = p.sf_mode;
    if (warp == 0) {
      const int pre = nkb < kStages - 1 ? nkb : kStages - 1;
      for (int i = 0; i < pre; ++i) produce(s, tm, p, i, kb0 + i, w0, x0, l, lane);
    }
    const uint32_t r = static_cast<uint32_t>(tid & 127);
    const uint32_t h = static_cast<uint32_t>(tid >> 7);
    const uint32_t sf_sel = h ? 0x7531u : 0x6420u;  // scale columns 2t + h, t = 0..3
    const uint32_t ring0 = ptx::smem_u32(&s.ring[0]);
    const uint32_t xdec0 = ptx::smem_u32(&s.xdec[0]);
    int stage = 0, sphase = 0, d = 0, dphase = 0;
    for (int i = 0; i < nkb; ++i) {
      if (warp == 0) {
        const int j = i + kStages - 1;  // refill the stage released by block i-1
        if (j < nkb) {
          const int js = j % kStages;
          if (j >= kStages) ptx::mbar_wait(&s.empty[js], ((j / kStages) - 1) & 1);
          produce(s, tm, p, js, kb0 + j, w0, x0, l, lane);
        }
      }
      ptx::mbar_wait(&s.full[stage], sphase);
      const uint32_t st = ring0 + stage * static_cast<uint32_t>(sizeof(Stage));
      uint32_t q[4][2];
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const uint2 v = ptx::lds64(st + offsetof(Stage, x) + sw64_offset(r, t) + 8 * h);
        q[t][0] = v.x; q[t][1] = v.y;
      }
      const uint32_t sf_lo = ptx::lds32(st + offsetof(Stage, xsf) + sf_offset(mode, r, 0, kb0 + i));
      const uint32_t sf_hi = ptx::lds32(st + offsetof(Stage, xsf) + sf_offset(mode, r, 4, kb0 + i));
      __syncwarp();
      ptx::mbar_arrive(&s.empty[stage]);

      const uint32_t sf4 = __byte_perm(sf_lo, sf_hi, sf_sel);  // bytes: scale of t = 0..3
      const uint32_t h01 = e4m3x2_to_f16x2(sf4), h23 = e4m3x2_to_f16x2(sf4 >> 16);
      const uint32_t sc2[4] = {bcast_lo(h01), bcast_hi(h01), bcast_lo(h23), bcast_hi(h23)};
      if (i >= kXBuf) ptx::mbar_wait(&s.dempty[d], dphase ^ 1);
      const uint32_t out = xdec0 + d * static_cast<uint32_t>(sizeof(XDecoded)) + h * kXAtomBytes + r * 128u;
      uint4 o[8];
      decode_x_half(q, sc2, o);
#pragma unroll
      for (int j = 0; j < 8; ++j) ptx::sts128(out + ((static_cast<uint32_t>(j) ^ (r & 7u)) << 4), o[j]);
      ptx::fence_proxy_async_smem();
      ptx::mbar_arrive(&s.dfull[d]);
      if (++stage == kStages) { stage = 0; sphase ^= 1; }
      if (++d == kXBuf) { d = 0; dphase ^= 1; }
    }
  }

  // ---- consumer warpgroups ---------------------------------------------------------
  // A consumer thread's cursor over the weight tiles of a ring (this mainloop's and the
  // pre-decoded one's, whose stages hold the packed weights and their scales the same way).
  struct WCursor {
    uint32_t r0, t;   // fragment rows r0, r0 + 8 of the tile; quad index
    int lane;
    int sf_mode;
    uint32_t ring0;
    int32_t kb;         // global K block of the next block to load
    int stage, sphase;  // ring position of the next block to load
    uint32_t woff0, woff1, sfoff0, sfoff1, sf_odd;  // in-stage offsets (set_offsets)
  };
  struct ConsumerState : WCursor {
    uint32_t xdec0;
    int d, dphase;      // decoded buffer of the next block to multiply
  };

  // This thread's packed weight bytes (chunk t of rows r0, r0 + 8) and their two scales
  // of one ring block, read from shared memory (the decode comes later: consumer_step).
  struct WRaw {
    uint4 a, b;
    uint32_t sa, sb;
  };
  // ctid: the thread's index among the 256 consumer threads.
  template <class StageT>
  static __device__ __forceinline__ void init_cursor(WCursor& c, int ctid, const GemmParams& p, uint32_t ring0) {
    const int cw = ctid >> 5;
    c.lane = ctid & 31;
    c.r0 = static_cast<uint32_t>((cw >> 2) * 64 + (cw & 3) * 16 + (c.lane >> 2));
    c.t = static_cast<uint32_t>(c.lane & 3);
    c.sf_mode = p.sf_mode;
    c.ring0 = ring0;
    set_offsets<StageT>(c);
  }
  // This thread's in-stage offsets of its weight bytes (rows r0, r0 + 8, chunk t) and
  // scales (the kScaleTma box holds two K blocks: +8 bytes for odd ones), computed once
  // instead of per block from the thread index and scale mode (part of the consumer-loop
  // changes measured together below, mma_block).
  template <class StageT>
  static __device__ __forceinline__ void set_offsets(WCursor& c) {
    const uint32_t r1 = c.r0 + 8;
    c.woff0 = static_cast<uint32_t>(offsetof(StageT, w)) + sw64_offset(c.r0, c.t);
    c.woff1 = static_cast<uint32_t>(offsetof(StageT, w)) + sw64_offset(r1, c.t);
    c.sfoff0 = static_cast<uint32_t>(offsetof(StageT, wsf)) + sf_offset(c.sf_mode, c.r0, 2 * c.t, 0);
    c.sfoff1 = static_cast<uint32_t>(offsetof(StageT, wsf)) + sf_offset(c.sf_mode, r1, 2 * c.t, 0);
    c.sf_odd = c.sf_mode == kScaleTma ? 8u : 0u;
  }

  // Reads the next ring block's weight bytes and scales of ring storage `s` (kRelease:
  // and releases the stage; else its wgmma releases it later) and advances the cursor.
  template <bool kRelease, class Storage>
  static __device__ __forceinline__ WRaw fetch_w_from(Storage& s, WCursor& c) {
    using StageT = typename Storage::StageType;
    ptx::mbar_wait(&s.full[c.stage], c.sphase);
    const uint32_t st = c.ring0 + c.stage * static_cast<uint32_t>(sizeof(StageT));
    WRaw w;
    const uint32_t sf_kb = (static_cast<uint32_t>(c.kb) & 1u) * c.sf_odd;
    w.a = ptx::lds128(st + c.woff0);
    w.b = ptx::lds128(st + c.woff1);
    w.sa = ptx::lds_u16(st + c.sfoff0 + sf_kb);
    w.sb = ptx::lds_u16(st + c.sfoff1 + sf_kb);
    ++c.kb;
    if (kRelease) {
      __syncwarp();
      ptx::mbar_arrive(&s.empty[c.stage]);  // every lane: its own reads (racecheck)
    }
    if (++c.stage == Storage::kRingStages) { c.stage = 0; c.sphase ^= 1; }
    return w;
  }
  // Here the stage is released right away (the wgmma reads the decoded tokens, not it).
  static __device__ __forceinline__ WRaw fetch_w(SharedStorage& s, ConsumerState& c) {
    return fetch_w_from<true>(s, c);
  }

  // Decodes this thread's weight fragments of the next ring block (32 registers: 8
  // k-steps x 4) and releases the ring stage.
  static __device__ __forceinline__ void load_w_fragments(SharedStorage& s, ConsumerState& c, uint32_t (&f)[32]) {
    const WRaw w = fetch_w(s, c);
    decode_w_fragments(w.a, w.b, w.sa, w.sb, f);
  }

  // The 8 wgmma of one block: A = fragments f (registers), B = the decoded token buffer
  // at xbase (two 64-K atoms of 128-byte rows; k-step ks at atom ks/4, byte 32 (ks%4)).
  // The 8 B descriptors are the first one plus a constant (a 32-bit add on the low word)
  // instead of being rebuilt from the address (5 uniform instructions each). With the
  // early weight reads (consumer_step) and the hoisted offsets (set_offsets): -0.9..-1.5%
  // on the three gpu-mode shapes (H200, same call), both mainloops. kRegs: the accumulator's
  // floats per thread (N / 2: this mainloop's 128 tokens, or the pre-decoded one's token tiles).
  template <int kAtomBytes, int kRegs>
  static __device__ __forceinline__ void mma_block(float (&acc)[kRegs], const uint32_t (&f)[32], uint32_t xbase,
                                                   bool fresh) {
    const uint64_t desc0 = ptx::smem_desc_sw128(xbase);
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      const uint32_t off = (ks >> 2) * kAtomBytes + (ks & 3) * 32;
      const uint64_t desc = ptx::smem_desc_advance(desc0, off);
      ptx::wgmma_m64k16_rs(acc, f[4 * ks + 0], f[4 * ks + 1], f[4 * ks + 2], f[4 * ks + 3], desc,
                           ks == 0 && fresh ? 0u : 1u);
    }
  }
  // One wgmma group: block `f` of fragments against the token tile at xbase, committed.
  // The register fences keep the fragment writes before wgmma.fence (and its reads after).
  template <int kAtomBytes, int kRegs>
  static __device__ __forceinline__ void issue_block(float (&acc)[kRegs], uint32_t (&f)[32], uint32_t xbase,
                                                     bool fresh) {
#pragma unroll
    for (int k = 0; k < 32; ++k) ptx::fence_reg(f[k]);
    ptx::wgmma_fence();
    mma_block<kAtomBytes>(acc, f, xbase, fresh);
    ptx::wgmma_commit();
  }


  // wgmma of local block i with fragments `cur`; then (while it runs) decode block i+1
  // into `nxt`, whose previous contents were read by the wgmma of block i-1. `total`
  // receives each finished promotion chain (accumulator_promotion.cuh, every P blocks).
  template <int P>
  static __device__ __forceinline__ void consumer_step(SharedStorage& s, ConsumerState& c, int i, int nkb,
                                                       float (&acc)[64], float (&total)[64], uint32_t (&cur)[32],
                                                       uint32_t (&nxt)[32]) {
    using Promo = AccumulatorPromotionT<P>;
    // A new chain starts: the previous one (ended by block i-1, whose group may still run;
    // the decode of this block overlapped it) is waited for and promoted first
    // (before wgmma.fence: the FADDs read the accumulator registers).
    const bool fresh = Promo::chain_start(i);
    if (fresh && i > 0) {
      ptx::wgmma_wait<0>();
      Promo::promote(total, acc);
    }
    const int d = c.d;
    ptx::mbar_wait(&s.dfull[d], c.dphase);
    const uint32_t xbase = c.xdec0 + d * static_cast<uint32_t>(sizeof(XDecoded));
    issue_block<kXAtomBytes>(acc, cur, xbase, fresh);
    const bool more = i + 1 < nkb;
    // Block i+1's weight bytes and scales are read right after block i's group is
    // committed, before wgmma.wait_group<1> (the decode after the wait then starts without
    // the barrier wait and the shared-memory latency); not with promotion: the 10 live
    // registers spill at the consumers' 208.
    constexpr bool kEarly = P == 0;
    WRaw w{};
    if (kEarly && more) w = fetch_w(s, c);  // block i+1's bytes while group i-1 finishes
    ptx::wgmma_wait<1>();  // block i-1 done: its fragments (nxt) and decoded buffer are free
#pragma unroll
    for (int k = 0; k < 32; ++k) ptx::fence_reg(nxt[k]);
    if (i >= 1) {
      __syncwarp();
      ptx::mbar_arrive(&s.dempty[d == 0 ? kXBuf - 1 : d - 1]);
    }
    if (++c.d == kXBuf) { c.d = 0; c.dphase ^= 1; }
    if (more) {
      if (!kEarly) w = fetch_w(s, c);
      decode_w_fragments(w.a, w.b, w.sa, w.sb, nxt);
    }
  }

  // Runs the consumer side; out holds this thread's 64x128 fp32 fragment on return.
  template <int P>
  static __device__ __forceinline__ void run_consumer(SharedStorage& s, const GemmParams& p, int32_t kb0,
                                                      int32_t nkb, float (&out)[64]) {
    ConsumerState c;
    init_cursor<Stage>(c, threadIdx.x - kTransformThreads, p, ptx::smem_u32(&s.ring[0]));
    c.xdec0 = ptx::smem_u32(&s.xdec[0]);
    c.kb = kb0;
    c.stage = 0; c.sphase = 0; c.d = 0; c.dphase = 0;
    float acc[64];  // wgmma accumulator (one promotion chain)
#pragma unroll
    for (int k = 0; k < 64; ++k) acc[k] = 0.0f;
#pragma unroll
    for (int k = 0; k < 64; ++k) out[k] = 0.0f;
    uint32_t fa[32], fb[32];
    if (nkb > 0) load_w_fragments(s, c, fa);
    for (int i = 0; i < nkb; i += 2) {
      consumer_step<P>(s, c, i, nkb, acc, out, fa, fb);
      if (i + 1 < nkb) consumer_step<P>(s, c, i + 1, nkb, acc, out, fb, fa);
    }
    ptx::wgmma_wait<0>();
    if constexpr (P == 0) {
#pragma unroll
      for (int k = 0; k < 64; ++k) ptx::fence_reg(acc[k]);
#pragma unroll
      for (int k = 0; k < 64; ++k) out[k] = acc[k];
    } else if (nkb > 0) {
      AccumulatorPromotionT<P>::promote(out, acc);  // the last chain
    }
  }
};

}  // namespace nvfp4::sm90
