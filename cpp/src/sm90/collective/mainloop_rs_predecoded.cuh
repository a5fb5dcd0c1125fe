// Mainloop collective of the sm90a NVFP4 GEMM, pre-decoded path: the token operand was
// decoded once into an fp16 workspace (kernel/token_predecode.cuh) and arrives by TMA
// already in the 128-byte-swizzled K-major layout wgmma reads; only the weights are
// decoded here.
//
// CTA = 3 warpgroups (384 threads):
//   WG0 (setmaxnreg 56): warp 0 = producer (lane 0 issues TMA for the packed weight
//        tile, the two 64-K atoms of the fp16 token tile and the weight scales; all
//        lanes fetch the scales by cp.async / plain loads where TMA alignment rules
//        forbid it). Warps 1..3 only join the epilogue.
//   WG1, WG2 (setmaxnreg 224): consumers, 64 weight rows each, weight fragments decoded
//        into registers (RS wgmma m64nXk16, X = the token tile, 128, 136, 64, 32 or 96); the decode of
//        block i+1 runs while the wgmma group of block i is in flight; the accumulator is
//        promoted every few K blocks into a round-to-nearest fp32 sum
//        (accumulator_promotion.cuh).
// A ring stage is released when the wgmma that read its token tile has completed.
// run_producer / run_segment continue the ring across calls, so one CTA can compute
// several K ranges of different tiles in turn (the persistent, stream-K and grouped
// kernels: kernel/gemm_persistent.cuh, gemm_streamk.cuh, grouped_walk.cuh).
//
// Two fragment sets, not three: with three (two groups in flight while decoding) ptxas
// gave two of the sets the same physical registers, so a decode overwrote the A
// operand of a wgmma still in flight (wrong results from the third K block on; the
// register fences below only pin virtual registers). Measured gain of 3 sets: none.
//
// Programmatic dependent launch: the kernel is launched with programmatic stream
// serialization after the pre-decode pass and issues the weight loads of the first stages
// before griddepcontrol.wait (-2.5 µs on the gpu-mode shapes, H200; with the pass
// PDL-launched too, -0.7..-1.2 µs against neither). That is safe because the pre-decode
// pass only signals launch_dependents after its own griddepcontrol.wait: by then every
// earlier grid (which may have written the weights) has completed. Only the fp16 token
// tiles, the pass's output, wait. Every other thread waits too (griddepcontrol.wait at
// the start of the consumers and of the producer warpgroup's idle warps:
// kernel/predecoded_tile.cuh, kernel/gemm_persistent.cuh) before it reads alpha, and the
// C stores come after that.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "accumulator_promotion.cuh"
#include "fp4_decode.cuh"
#include "../kernel/gemm_params.cuh"
#include "mainloop_rs.cuh"
#include "../ptx.cuh"

namespace nvfp4::sm90 {

// Token tile widths (tokens per CTA tile, the wgmma N) of the pre-decoded kernels.
//  128: every kernel of the family (GEMM, persistent GEMM, dual, grouped, packed MoE).
//  136: the dense GEMM's second instance, for M just above a multiple of 128 (gemm_plan.hpp
//       choose_token_tile): M = 129 needs two 128-token tiles, i.e. twice the MMA and
//       decode work of M = 128 (H100, N = K = 7168: 69.8 against 31.6 µs), but one
//       136-token tile. Why 136 and not wider: the consumer's registers (the accumulator
//       and the promoted sum are X/2 floats each, plus 64 for the two fragment sets: 192 of
//       the 224 at X = 128, 200 at 136, 208 at 144, 224 at 160) and shared memory (a 5-stage
//       ring is 210 KB at 128, 220 KB at 136; 144 would need 4 stages to fit 227 KB).
//  64: the dense GEMM's third instance, for M <= 64 (gemm_schedule.hpp choose_token_tile): a
//      128-token tile there multiplies as many zero columns as tokens. A K block of the
//      128-token tile is tensor-bound at one CTA per SM (16 wgmma = 2.1 M FMA, ~1,000 cycles,
//      against ~600 cycles for its 9 KB of weights at 1/132 of HBM). Its stage is 26 KB, so
//      the ring holds 8 (208 KB). H100 (session 25): 64 x 7168^2 30.4 -> 25.4 µs, 64 x
//      4096x14336 36.1 -> 30.0, 64 x 14336x4096 32.7 -> 28.1; still ~2.5x the HBM floor and
//      flat in M (the 32-token tile takes 23.2 µs at M = 4 as at M = 32 on 7168^2). ncu
//      (session 26, 32-token tile, 7168^2 M = 4): 112 CTAs, ~1,370 cycles per K block against
//      ~550 for its 8 KB at the CTAs' HBM share, DRAM 31% of peak, issue 30%; the consumer
//      warps (two per scheduler) spend ~240 instructions per block, 87% of their samples in
//      the decode / wgmma loop and ~7% waiting for data: the weight decode's issue and latency
//      bound it (bench/NOTES.md "Session 26").
constexpr int kTokenTile = 128;
constexpr int kTokenTileWide = 136;
constexpr int kTokenTileSmall = 64;
//  32: its fourth, for M <= 32 (a quarter of the 128-token tile's tensor work); 12 stages of 18 KB.
constexpr int kTokenTileTiny = 32;
//  96: its fifth, for M = 65..96, between the 64- and 128-token tiles' costs; 6 stages of 34 KB.
//      Without it M = 64 -> 65 stepped 1.16-1.20x; H100 (session 25), 128-token tile -> 96:
//      65 x 7168^2 30.5 -> 26.7 µs, 96 x 7168^2 31.3 -> 27.7, 96 x 4096x14336 36.6 -> 33.5; the
//      steps 64 -> 65 and 96 -> 97 are now 1.05-1.12x.
constexpr int kTokenTileMid = 96;

// kTileX = tokens per tile (kTokenTile, kTokenTileWide, kTokenTileSmall, kTokenTileTiny or kTokenTileMid): the wgmma N, the
// token TMA box's rows (at most), the accumulator's size (kTileX / 2 floats per consumer thread).
template <int kTileX>
struct MainloopRSPredecodedT {
  static_assert(kTileX == kTokenTile || kTileX == kTokenTileWide || kTileX == kTokenTileSmall ||
                    kTileX == kTokenTileTiny || kTileX == kTokenTileMid,
                "a token tile with a wgmma wrapper");
  static constexpr int kBlockW = 128;
  static constexpr int kBlockX = kTileX;
  static constexpr int kAccRegs = kBlockX / 2;  // fp32 accumulator values per consumer thread
  static constexpr int kBlockK = 128;
  static constexpr int kPackedRow = kBlockK / 2;
  static constexpr int kSfRow = kBlockK / 16;
  // 5 stages at 128 and 136 tokens: a stage is 42 KB (32 KB of tokens) at 128, 44 KB at 136;
  // 5 x 44 KB + barriers + the 1 KB alignment = 222 KB <= 227 KB (static_assert below). 8 at 64
  // tokens (26 KB stages), 12 at 32 (18 KB), 6 at 96 (34 KB).
  static constexpr int kStages = kTileX == kTokenTileTiny    ? 12
                                 : kTileX == kTokenTileSmall ? 8
                                 : kTileX == kTokenTileMid   ? 6
                                                             : 5;
  // Every consumer lane arrives on the empty barrier (its own reads released by its own
  // arrive). With one arrive per warp after __syncwarp, racecheck reported a hazard
  // between the blocked scales' bulk copy and the lanes' scale reads (the PTX model does
  // not make __syncwarp order the other lanes' reads before lane 0's release); the
  // all-lane arrive is also 1-2% faster (H100).
  static constexpr int kReleaseLanes = 32;
  static constexpr int kThreads = 384;
  static constexpr int kFragBuffers = 2;  // see the header comment before raising this
  static constexpr int kProducerRegs = 56;    // setmaxnreg: 128 * 56 + 256 * 224 <= 65536
  static constexpr int kConsumerRegs = 224;
  static constexpr int kXAtomBytes = kBlockX * 128;
  // fp4_decode.cuh decode_w_fragments: the byte-wise word decode only where the decode, not the
  // tensor work, bounds a block (the 32-token tile; measured there and on the wider tiles).
  static constexpr bool kByteWiseDecode = kTileX == kTokenTileTiny;
  static constexpr int kSfTmaCols = MainloopRS::kSfTmaCols;

  struct alignas(1024) Stage {
    uint8_t x[2][kXAtomBytes];         // fp16 tokens, TMA 128-byte swizzle (wgmma B operand)
    uint8_t w[kBlockW * kPackedRow];   // TMA, 64-byte swizzle
    uint8_t wsf[kBlockW * kSfTmaCols];
  };
  struct alignas(1024) SharedStorage {
    using StageType = Stage;
    static constexpr int kRingStages = kStages;
    Stage ring[kStages];
    uint64_t full[kStages];
    uint64_t empty[kStages];
  };
  static_assert(sizeof(SharedStorage) + 1024 <= 227 * 1024, "the ring fits Hopper's 227 KB per block");

  struct TmaDescs {
    const void* w;
    const void* xh;   // fp16 workspace [L][M][Kp]
    const void* sfw;  // kScaleTma only
  };

  // Token tile of global K block kb into `st` (two 64-K atoms). (A variant that paired the
  // CTAs of neighbouring weight tiles in a cluster, each multicasting one atom to both, was
  // correct but 23-39% slower: the pair advances in lock step; bench/NOTES.md "token
  // multicast on the pre path".)
  static __device__ __forceinline__ void load_x(Stage& st, const TmaDescs& tm, uint64_t* bar, int32_t kb,
                                                int64_t x0, int32_t l) {
    ptx::tma_load_3d(st.x[0], tm.xh, bar, kb * kBlockK, static_cast<int32_t>(x0), l);
    ptx::tma_load_3d(st.x[1], tm.xh, bar, kb * kBlockK + 64, static_cast<int32_t>(x0), l);
  }

  static __device__ __forceinline__ void init_barriers(SharedStorage& s, const GemmParams& p) {
    const bool tx_only = p.sf_mode == kScaleBulk || p.sf_mode == kScaleTma;
    for (int i = 0; i < kStages; ++i) {
      ptx::mbar_init(&s.full[i], tx_only ? 1 : 1 + 32);
      ptx::mbar_init(&s.empty[i], 8 * kReleaseLanes);  // consumer lanes
    }
    ptx::mbar_init_fence();
  }

  // Ring position of the producer across the K segments a CTA computes in turn.
  struct RingCursor {
    int stage = 0, phase = 0;
    int iter = 0;  // blocks produced so far
  };

  // Warp 0: fills the ring for local blocks 0..nkb-1 (continuing at `rc`). With
  // programmatic dependent launch this kernel starts while the pre-decode pass
  // still runs: the first kStages blocks get their weights and scales first, and the
  // fp16 token tiles (the pass's output) only after griddepcontrol.wait.
  // `l` = batch of the weights (and of their scales); `lx` = batch of the token
  // workspace (the same, except for the packed MoE kernel: expert l, one token matrix).
  static __device__ __forceinline__ void run_producer(SharedStorage& s, const TmaDescs& tm, const GemmParams& p,
                                                      int64_t w0, int64_t x0, int32_t l, int32_t kb0, int32_t nkb,
                                                      RingCursor& rc) {
    run_producer(s, tm, p, w0, x0, l, kb0, nkb, rc, l);
  }
  static __device__ __forceinline__ void run_producer(SharedStorage& s, const TmaDescs& tm, const GemmParams& p,
                                                      int64_t w0, int64_t x0, int32_t l, int32_t kb0, int32_t nkb,
                                                      RingCursor& rc, int32_t lx) {
    const int lane = threadIdx.x & 31;
    const bool tx_only = p.sf_mode == kScaleBulk || p.sf_mode == kScaleTma;
    const uint32_t sf_bytes = p.sf_mode == kScaleBulk ? 1024u : p.sf_mode == kScaleTma ? 128u * kSfTmaCols : 0u;
    const uint32_t tx = kBlockW * kPackedRow + 2u * 128u * static_cast<uint32_t>(p.x_box_rows) + sf_bytes;
    // token tiles deferred past the wait (first segment only: ring positions 0..early-1)
    const int early = rc.iter == 0 ? (nkb < kStages ? nkb : kStages) : 0;
    int stage = rc.stage, phase = rc.phase;
    for (int i = 0; i < nkb; ++i) {
      const int32_t kb = kb0 + i;
      if (i == early) {
        // token tiles of the first blocks, once the pre-decode pass is done
        ptx::pdl_wait_primary();
        if (lane == 0)
          for (int e = 0; e < early; ++e) load_x(s.ring[e], tm, &s.full[e], kb0 + e, x0, lx);
      }
      if (rc.iter + i >= kStages) ptx::mbar_wait(&s.empty[stage], phase ^ 1);
      Stage& st = s.ring[stage];
      uint64_t* bar = &s.full[stage];
      if (lane == 0) {
        ptx::mbar_arrive_expect_tx(bar, tx);
        ptx::tma_load_3d(st.w, tm.w, bar, kb * kPackedRow, static_cast<int32_t>(w0), l);
        if (i >= early) load_x(st, tm, bar, kb, x0, lx);
        if (p.sf_mode == kScaleBulk) {
          const int64_t tiles_k = p.K / 64;
          const uint8_t* gw = p.sf_w.data + static_cast<int64_t>(l) * p.sf_w.batch_stride +
                              ((w0 / 128) * tiles_k + 2 * static_cast<int64_t>(kb)) * 512;
          ptx::bulk_load(st.wsf, gw, sf_bytes, bar);
        } else if (p.sf_mode == kScaleTma) {
          ptx::tma_load_3d(st.wsf, tm.sfw, bar, (kb >> 1) * kSfTmaCols, static_cast<int32_t>(w0), l);
        }
      }
      if (!tx_only) {
        MainloopRS::load_scales_rows(st.wsf, p.sf_w, p, w0, l, kb, lane);
        if (p.sf_mode == kScaleCpAsync)
          ptx::cp_async_mbar_arrive_noinc(bar);
        else
          ptx::mbar_arrive(bar);
      }
      if (++stage == kStages) { stage = 0; phase ^= 1; }
    }
    rc.stage = stage;
    rc.phase = phase;
    rc.iter += nkb;
    if (nkb == early && nkb > 0) {
      ptx::pdl_wait_primary();
      if (lane == 0)
        for (int e = 0; e < early; ++e) load_x(s.ring[e], tm, &s.full[e], kb0 + e, x0, lx);
    }
  }

  struct ConsumerState : MainloopRS::WCursor {
    int mstage;  // ring position of the next wgmma
  };

  // Releases ring stage rs (every consumer lane).
  static __device__ __forceinline__ void release_stage(SharedStorage& s, int rs) {
    ptx::mbar_arrive(&s.empty[rs]);
  }

  // Reads the next ring block's weight bytes and scales (the stage is released once the
  // wgmma that reads its token tile has completed: consumer_step).
  static __device__ __forceinline__ MainloopRS::WRaw fetch_w(SharedStorage& s, ConsumerState& c) {
    return MainloopRS::fetch_w_from<false>(s, c);
  }

  static __device__ __forceinline__ void load_w_fragments(SharedStorage& s, ConsumerState& c, uint32_t (&f)[32]) {
    const MainloopRS::WRaw w = fetch_w(s, c);
    decode_w_fragments<kByteWiseDecode>(w.a, w.b, w.sa, w.sb, f);
  }

  // total += acc after wgmma.wait_group 0 (AccumulatorPromotion::promote at kTileX / 2 values).
  static __device__ __forceinline__ void promote(float (&total)[kAccRegs], float (&acc)[kAccRegs]) {
    if constexpr (kAccRegs == 64) {
      AccumulatorPromotion::promote(total, acc);
    } else {
#pragma unroll
      for (int k = 0; k < kAccRegs; ++k) ptx::fence_reg(acc[k]);
#pragma unroll
      for (int k = 0; k < kAccRegs; ++k) total[k] += acc[k];
    }
  }

  // One wgmma group (MainloopRS::issue_block at the tile's N, ptx.cuh wgmma_m64k16_rs): block `f`
  // of fragments against the token tile at xbase, committed.
  static __device__ __forceinline__ void issue_block(float (&acc)[kAccRegs], uint32_t (&f)[32], uint32_t xbase,
                                                     bool fresh) {
    MainloopRS::issue_block<kXAtomBytes>(acc, f, xbase, fresh);
  }

  // wgmma of local block i with fragments `cur`; then, with up to kFragBuffers-1
  // groups still in flight, decode block i+1 into `nxt` (last read by block
  // i+1-kFragBuffers, whose group has completed by then).
  // `total` receives each finished promotion chain (accumulator_promotion.cuh).
  static __device__ __forceinline__ void consumer_step(SharedStorage& s, ConsumerState& c, int i, int nkb,
                                                       float (&acc)[kAccRegs], float (&total)[kAccRegs],
                                                       uint32_t (&cur)[32], uint32_t (&nxt)[32]) {
    using Promo = AccumulatorPromotion;
    const int ms = c.mstage;
    const uint32_t xbase = c.ring0 + ms * static_cast<uint32_t>(sizeof(Stage)) + offsetof(Stage, x);
    // A new chain starts: the previous one (ended by block i-1, whose group may still run;
    // the decode of this block overlapped it) is waited for and promoted first
    // (before wgmma.fence: the FADDs read the accumulator registers).
    const bool fresh = Promo::chain_start(i);
    if (fresh && i > 0) {
      ptx::wgmma_wait<0>();
      promote(total, acc);
    }
    issue_block(acc, cur, xbase, fresh);
    const bool more = i + 1 < nkb;
    MainloopRS::WRaw w{};
    if (more) w = fetch_w(s, c);  // block i+1's bytes while the older group finishes
    ptx::wgmma_wait<kFragBuffers - 1>();  // block i+1-kFragBuffers done: its stage and `nxt` are free
#pragma unroll
    for (int k = 0; k < 32; ++k) ptx::fence_reg(nxt[k]);
    if (i >= kFragBuffers - 1) {
      __syncwarp();
      int rs = ms - (kFragBuffers - 1);
      if (rs < 0) rs += kStages;
      release_stage(s, rs);
    }
    c.mstage = ms + 1 == kStages ? 0 : ms + 1;
    if (more) decode_w_fragments<kByteWiseDecode>(w.a, w.b, w.sa, w.sb, nxt);
  }

  // consumer_step for a block that is known to be neither the first nor the last of the
  // segment, with its chain start (kFresh) known at compile time: no branches besides the
  // barrier waits, so the compiler schedules across the whole step (235 instead of 296 SASS
  // instructions per block; 1.5-2.5% faster on the pre-decoded shapes, H100, bench/NOTES.md
  // "a branch-free steady consumer step"). A separate function rather than compile-time
  // flags on consumer_step: that form compiled to ~50 more instructions per four blocks.
  template <bool kFresh>
  static __device__ __forceinline__ void consumer_step_steady(SharedStorage& s, ConsumerState& c,
                                                              float (&acc)[kAccRegs], float (&total)[kAccRegs],
                                                              uint32_t (&cur)[32], uint32_t (&nxt)[32]) {
    const int ms = c.mstage;
    const uint32_t xbase = c.ring0 + ms * static_cast<uint32_t>(sizeof(Stage)) + offsetof(Stage, x);
    if constexpr (kFresh) {
      ptx::wgmma_wait<0>();
      promote(total, acc);
    }
    issue_block(acc, cur, xbase, kFresh);
    const MainloopRS::WRaw w = fetch_w(s, c);
    ptx::wgmma_wait<kFragBuffers - 1>();
#pragma unroll
    for (int k = 0; k < 32; ++k) ptx::fence_reg(nxt[k]);
    __syncwarp();
    release_stage(s, ms == 0 ? kStages - 1 : ms - 1);
    c.mstage = ms + 1 == kStages ? 0 : ms + 1;
    decode_w_fragments<kByteWiseDecode>(w.a, w.b, w.sa, w.sb, nxt);
  }

  // Steady blocks come in groups of kSteadyGroup (whole two-buffer cycles and whole
  // promotion chains), so that each block's buffers and chain start are compile-time.
  static constexpr int kSteadyGroup =
      AccumulatorPromotion::kBlocks > kFragBuffers ? AccumulatorPromotion::kBlocks : kFragBuffers;
  static_assert(kFragBuffers == 2 && kSteadyGroup % kFragBuffers == 0, "whole fragment-buffer cycles");
  template <int U>
  static __device__ __forceinline__ void steady_group(SharedStorage& s, ConsumerState& c, float (&acc)[kAccRegs],
                                                      float (&total)[kAccRegs], uint32_t (&f)[kFragBuffers][32]) {
    if constexpr (U < kSteadyGroup) {
      constexpr bool kFresh = AccumulatorPromotion::kBlocks > 0 && U % AccumulatorPromotion::kBlocks == 0;
      consumer_step_steady<kFresh>(s, c, acc, total, f[U % kFragBuffers], f[(U + 1) % kFragBuffers]);
      steady_group<U + 1>(s, c, acc, total, f);
    }
  }

  static __device__ __forceinline__ ConsumerState init_consumer(SharedStorage& s, const GemmParams& p) {
    ConsumerState c;
    MainloopRS::init_cursor<Stage>(c, threadIdx.x - 128, p, ptx::smem_u32(&s.ring[0]));
    c.kb = 0;
    c.stage = 0; c.sphase = 0; c.mstage = 0;
    return c;
  }

  // Local blocks 0..nkb-1 (global K blocks kb0..) of one output tile, continuing at the
  // ring position in `c`; out = this thread's 64 x kTileX fp32 fragment of that K range. The
  // ring stage of the last block is released at the end (a CTA may go on with another
  // segment).
  static __device__ __forceinline__ void run_segment(SharedStorage& s, ConsumerState& c, int32_t kb0, int32_t nkb,
                                                     float (&out)[kAccRegs]) {
    c.kb = kb0;
    float acc[kAccRegs];  // wgmma accumulator (one promotion chain); out = promoted sum
#pragma unroll
    for (int k = 0; k < kAccRegs; ++k) acc[k] = 0.0f;
#pragma unroll
    for (int k = 0; k < kAccRegs; ++k) out[k] = 0.0f;
    uint32_t f[kFragBuffers][32];  // only compile-time indices (unrolled below)
    if (nkb > 0) load_w_fragments(s, c, f[0]);
    // head (block 0 releases no stage), steady groups (every block has a successor), tail
    int i = 0;
    for (; i < nkb && i < kSteadyGroup; i += 2) {
      consumer_step(s, c, i, nkb, acc, out, f[0], f[1]);
      if (i + 1 < nkb) consumer_step(s, c, i + 1, nkb, acc, out, f[1], f[0]);
    }
    for (; i + kSteadyGroup < nkb; i += kSteadyGroup) steady_group<0>(s, c, acc, out, f);
    for (; i < nkb; i += 2) {
      consumer_step(s, c, i, nkb, acc, out, f[0], f[1]);
      if (i + 1 < nkb) consumer_step(s, c, i + 1, nkb, acc, out, f[1], f[0]);
    }
    ptx::wgmma_wait<0>();
    if constexpr (AccumulatorPromotion::kBlocks == 0) {
#pragma unroll
      for (int k = 0; k < kAccRegs; ++k) ptx::fence_reg(acc[k]);
#pragma unroll
      for (int k = 0; k < kAccRegs; ++k) out[k] = acc[k];
    } else if (nkb > 0) {
      promote(out, acc);  // the last chain
    }
    if (nkb > 0) {  // the last block's stage (earlier ones were released by consumer_step)
      __syncwarp();
      release_stage(s, c.mstage == 0 ? kStages - 1 : c.mstage - 1);
    }
  }

  static __device__ __forceinline__ void run_consumer(SharedStorage& s, const GemmParams& p, int32_t kb0,
                                                      int32_t nkb, float (&out)[kAccRegs]) {
    ConsumerState c = init_consumer(s, p);
    run_segment(s, c, kb0, nkb, out);
  }
};

// The family's 128-token instance (dual, grouped and packed MoE kernels use only this one).
using MainloopRSPredecoded = MainloopRSPredecodedT<kTokenTile>;

}  // namespace nvfp4::sm90
