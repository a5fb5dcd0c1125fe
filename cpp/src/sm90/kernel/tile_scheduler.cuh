// Tile scheduler of the sm90a NVFP4 GEMM: which output tile and which slice of K
// a CTA computes.
//
// Split-K inside a thread-block cluster: the `splits` CTAs of one cluster (cluster
// dims = splits x 1 x 1) compute the same output tile over disjoint K ranges and
// reduce their fp32 accumulators through distributed shared memory in the epilogue.
// No workspace, no zeroed counters, deterministic summation order. The host picks
// `splits` so that tiles * splits fills the SMs (gemm_schedule.hpp: choose_splits).
#pragma once

#include <stdint.h>

namespace nvfp4::sm90 {

struct TileWork {
  int32_t tile_w;    // tile index along the weight rows (problem N)
  int32_t tile_x;    // tile index along the tokens (problem M)
  int32_t batch;     // l
  int32_t split;     // rank inside the cluster
  int32_t kb_begin;  // first K block (of kBlockK elements)
  int32_t kb_count;  // number of K blocks (may be 0 when splits > K blocks)
};

// Slice `split` of `splits` over num_kb K blocks: [begin, begin + count), consecutive slices,
// sizes differing by at most one block (count may be 0 when splits > num_kb).
struct KSlice {
  int32_t begin, count;
};
__device__ __forceinline__ KSlice splitk_slice(int32_t num_kb, int32_t split, int32_t splits) {
  const int32_t b = static_cast<int32_t>((static_cast<int64_t>(num_kb) * split) / splits);
  const int32_t e = static_cast<int32_t>((static_cast<int64_t>(num_kb) * (split + 1)) / splits);
  return KSlice{b, e - b};
}

__device__ __forceinline__ TileWork cluster_splitk_work(int32_t splits, int32_t num_kb) {
  TileWork w;
  w.tile_w = static_cast<int32_t>(blockIdx.x) / splits;
  w.split = static_cast<int32_t>(blockIdx.x) % splits;  // == %cluster_ctarank for clusters along x
  w.tile_x = static_cast<int32_t>(blockIdx.y);
  w.batch = static_cast<int32_t>(blockIdx.z);
  const KSlice k = splitk_slice(num_kb, w.split, splits);
  w.kb_begin = k.begin;
  w.kb_count = k.count;
  return w;
}

}  // namespace nvfp4::sm90
