// Periodic promotion of the wgmma accumulator into a round-to-nearest fp32 sum.
//
// Why: Hopper's tensor cores do not accumulate fp16 products into fp32 the IEEE way
// (each MMA step aligns the products and the running accumulator and truncates), so
// every k16 step loses low bits relative to the *running sum*. Over one long chain
// (K = 7168: 448 steps into one accumulator) that reached 1.4e-3 absolute on an
// output of 0.12 among outputs of ~40 (tests/test_gpu_gemm.py on an H200; the
// contract, docs/design.md "Numerics", allows 1e-3 + 1e-3|ref|). Fix (DeepGEMM-style): the wgmma
// accumulates kBlocks K blocks (of 128) at a time, starting from zero (scale-d = 0),
// and each such chain is then added into a separate fp32 register sum with FADD
// (round-to-nearest). The chain sums are small (~sqrt(chain) instead of ~sqrt(K)
// times a typical product), and so is what each step truncates.
//
// Measured (H200, random fp4, e4m3 scales in [2^-4, 2^4], alpha a power of two with
// rms(out) ~ 64, float64 reference on every output; max |out-ref|/(1e-3+1e-3|ref|) of
// the fp32 output, and ||out-ref||/||ref||), 2304x4608x7168 / worst over the gpu-mode
// and square shapes:
//   never (one chain)  0.96 / 0.96   4.6e-6     every 8 blocks  0.28   5.2e-7
//   every 4 blocks     0.16          2.7e-7     every 2 blocks  0.06   1.7e-7
//   every block        0.05          1.5e-7
// Cost: 64 more registers per consumer thread (on the fused path this forces the
// transform warpgroups down to 48 registers: most of the cost there), 64 FADD per
// chain, and a wgmma.wait_group 0 before each new chain (the decode of the chain's
// first block still overlapped the previous group; the other consumer warpgroup keeps
// the tensor cores busy meanwhile). bench/NOTES.md has the timings.
// Every 4 blocks (512 K): 1-2% faster than every 2 on the pre-decoded shapes (H100, four
// alternating rounds), error 0.16 of the tolerance above (0.076 worst on the H100
// checks), against 0.06 (bench/NOTES.md "promotion every 4 K blocks -- adopted").
#pragma once

#include "../ptx.cuh"

namespace nvfp4::sm90 {

// kBlocks = K blocks (of 128 elements) per wgmma accumulation chain; 0 = never promote
// (one chain over the CTA's whole K slice). The fused kernel runs the 0 instance only
// where every CTA's K slice is at most kShortChainBlocks blocks (gemm_plan.hpp; measured
// above: chains of 8 blocks keep the error at <= 0.28 of the tolerance; H200, the
// instance itself on 128x7168x2048 / 2304x4608x1024 / 512x4096x512: 0.14 / 0.16 / 0.10),
// which frees the 64 registers of the promoted sum (the fused path's transform warpgroups
// get 80, not 48; 128x7168x2048: 17.4 -> 16.5 µs).
template <int kBlocksT>
struct AccumulatorPromotionT {
  static constexpr int kBlocks = kBlocksT;
  static_assert(kBlocks >= 0 && (kBlocks & (kBlocks - 1)) == 0, "a power of two (or 0)");

  // Local block i starts a chain: its first wgmma ignores the old accumulator, and the
  // previous chain (if any) is waited for and promoted first. The caller promotes the
  // last chain after the loop.
  static __device__ __forceinline__ bool chain_start(int i) { return kBlocks > 0 && (i & (kBlocks - 1)) == 0; }
  // total += acc, after wgmma.wait_group 0 (the fences keep the FADDs after the wait;
  // the caller issues wgmma.fence before the next wgmma writes acc).
  static __device__ __forceinline__ void promote(float (&total)[64], float (&acc)[64]) {
#pragma unroll
    for (int k = 0; k < 64; ++k) ptx::fence_reg(acc[k]);
#pragma unroll
    for (int k = 0; k < 64; ++k) total[k] += acc[k];
  }
};
using AccumulatorPromotion = AccumulatorPromotionT<4>;

}  // namespace nvfp4::sm90
