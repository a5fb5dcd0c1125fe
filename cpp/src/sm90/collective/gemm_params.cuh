// Kernel-side parameters of the sm90a NVFP4 GEMM (everything except the TMA
// descriptors, which travel as separate __grid_constant__ arguments).
//
// Naming inside the sm90 GEMM: the problem computes C[l] = alpha * A[l] * B[l]^T.
// The kernel swaps the operands (Machete-like, DESIGN §8): B ("w", weights, N rows)
// is the wgmma A operand, dequantized into registers; A ("x", tokens, M rows) is the
// wgmma B operand, dequantized once per CTA into fp16 shared memory.
#pragma once

#include <stdint.h>

// Programmatic dependent launch. kPdl (default on; 0 = every kernel waits for the one
// before as it used to): the pre-decode pass and the pre-decoded GEMM are launched with
// programmatic stream serialization and run their prologue (and the GEMM its weight
// loads) while the grid before them finishes; what may depend on that grid comes after
// griddepcontrol.wait (gemm.cu). kPdlFused (default on since gemm4): the same for the
// fused GEMM (barrier init + descriptor prefetch before the wait). Measured (H200, same
// run each): PDL on the pre path -0.7..-1.2 µs (gemm3); on the fused path with L2
// prefetches of the first <= 8 blocks before the wait -0.3..+0.9 µs on the 128-token
// shapes and +6 µs on 4096^3 (gemm3; that option was removed in session 4), without them
// -0.9 µs on 128x7168x2048 (15.75 -> 14.83) and +0.1% on 4096^3 (gemm4).
#ifndef NVFP4_SM90_PDL
#define NVFP4_SM90_PDL 1
#endif
#ifndef NVFP4_SM90_PDL_FUSED
#define NVFP4_SM90_PDL_FUSED 1
#endif
// Consumer-loop changes (gemm5; both mainloops), on: together -0.9..-1.5% on the three
// gpu-mode shapes (H200, same call; float64 reference over every output on 9 shapes):
// kDescIncrement: the 8 wgmma B descriptors of a block are the first one plus a constant
// (32-bit add on the low word) instead of being rebuilt from the address (5 uniform
// instructions each). kEarlyWLoad: the packed weight bytes and scales of block i+1 are
// read from the ring right after block i's wgmma group is committed, before
// wgmma.wait_group<1> (the decode after the wait then starts without the barrier wait
// and the shared-memory latency).
#ifndef NVFP4_SM90_DESC_INCREMENT
#define NVFP4_SM90_DESC_INCREMENT 1
#endif
#ifndef NVFP4_SM90_EARLY_W_LOAD
#define NVFP4_SM90_EARLY_W_LOAD 1
#endif
// kHoistOffsets: the consumer's shared-memory offsets of its weight bytes and scales are
// computed once (ConsumerState) instead of per block from the thread index and scale mode.
#ifndef NVFP4_SM90_HOIST_OFFSETS
#define NVFP4_SM90_HOIST_OFFSETS 1
#endif

namespace nvfp4::sm90 {

constexpr bool kDescIncrement = NVFP4_SM90_DESC_INCREMENT != 0;
constexpr bool kEarlyWLoad = NVFP4_SM90_EARLY_W_LOAD != 0;
constexpr bool kHoistOffsets = NVFP4_SM90_HOIST_OFFSETS != 0;
constexpr bool kPdl = NVFP4_SM90_PDL != 0;
constexpr bool kPdlFused = NVFP4_SM90_PDL_FUSED != 0;

// How the block scales reach shared memory.
enum ScaleLoad : int32_t {
  kScaleSync = 0,   // plain byte loads by the producer warp (any alignment)
  kScaleCpAsync = 1,  // 4-byte cp.async with zero-fill, smem [row][8] (4-byte aligned rows)
  kScaleBulk = 2,   // blocked layout, K % 128 == 0: the stage's 128-row x 8-column scales are
                    // 1 KB contiguous in global memory -> one bulk copy, smem keeps the blocked order
  kScaleTma = 3,    // linear layout with 16-byte aligned rows: a TMA box of 16 columns x 128
                    // rows per stage (the first 8 columns are the stage's), smem [row][16]
};

struct ScaleSrc {
  const uint8_t* data;
  int64_t row_stride;    // linear layout only
  int64_t batch_stride;
  int64_t rows;          // valid rows (N for w, M for x)
};

struct GemmParams {
  int64_t M, N, K;
  int32_t L;
  int32_t num_kb;        // ceil(K / kBlockK)
  int32_t splits;        // CTAs per cluster sharing one output tile (split-K)
  int32_t sf_blocked;    // 1: blocked 128x4 scale layout, 0: linear
  int32_t sf_mode;       // ScaleLoad: how the producer fetches the block scales
  int32_t x_box_rows;    // pre-decoded path: token rows per TMA box (128, or M rounded up to 8 if less)
  int32_t tiles_w, tiles_x;  // persistent pre-decoded kernel: output tiles per batch along N and M
  ScaleSrc sf_w, sf_x;
  float alpha;
  const float* alpha_ptr;  // read in-kernel when non-null
  void* c;
  int32_t c_dtype;       // DType
  int32_t c_vec4;        // 1: 4 consecutive n are contiguous and 4-element aligned
  int64_t c_row_stride, c_col_stride, c_batch_stride;  // elements
};

// alpha: the float, or the device scalar read at kernel time (only after griddepcontrol.wait
// where the kernel is a programmatic dependent: a grid before may write it).
__device__ __forceinline__ float load_alpha(const GemmParams& p) {
  return p.alpha_ptr != nullptr ? __ldg(p.alpha_ptr) : p.alpha;
}

}  // namespace nvfp4::sm90
