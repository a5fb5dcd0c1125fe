// Tile scheduler of the sm90a NVFP4 GEMM: which output tile and which slice of K
// a CTA computes.
//
// Split-K inside a thread-block cluster: the `splits` CTAs of one cluster (cluster
// dims = splits x 1 x 1) compute the same output tile over disjoint K ranges and
// reduce their fp32 accumulators through distributed shared memory in the epilogue.
// No workspace, no zeroed counters, deterministic summation order. The host picks
// `splits` so that tiles * splits fills the SMs (gemm.cu: choose_splits).
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

__device__ __forceinline__ TileWork cluster_splitk_work(int32_t splits, int32_t num_kb) {
  TileWork w;
  w.tile_w = static_cast<int32_t>(blockIdx.x) / splits;
  w.split = static_cast<int32_t>(blockIdx.x) % splits;  // == %cluster_ctarank for clusters along x
  w.tile_x = static_cast<int32_t>(blockIdx.y);
  w.batch = static_cast<int32_t>(blockIdx.z);
  const int32_t b = static_cast<int32_t>((static_cast<int64_t>(num_kb) * w.split) / splits);
  const int32_t e = static_cast<int32_t>((static_cast<int64_t>(num_kb) * (w.split + 1)) / splits);
  w.kb_begin = b;
  w.kb_count = e - b;
  return w;
}

// ---- stream-K (pre-decoded path, tiles < SMs) ------------------------------------------
// Split-K over clusters can only give every tile the same number of CTAs: 56 tiles
// (M = 128, N = 7168) on 132 SMs run as 56 clusters of 2 = 112 CTAs. Stream-K instead
// cuts the linearized (tile, K block) space into gridDim.x equal ranges, one per CTA
// (all co-resident): with tiles <= CTAs a range spans at most two tiles, the tail of
// one and the head of the next (each CTA's first segment comes before its second).
// The CTA whose segment holds a tile's K block 0 (the "finisher", always the last
// segment of its CTA) adds the other contributors' fp32 partials (streamk_fixup.cuh),
// in CTA order (deterministic), and runs the epilogue. The others (first segments of
// the following CTAs, computed early) publish their partial and a flag.
struct StreamKSegment {
  int32_t tile;      // linear tile: tile_w + tiles_w * (tile_x + tiles_x * batch)
  int32_t kb_begin;
  int32_t kb_count;  // > 0
  bool finisher;     // holds K block 0 of the tile
};
struct StreamKWork {
  StreamKSegment seg[2];
  int32_t count;          // 1 or 2 (0 for an empty range)
  int32_t helpers_begin;  // finisher: CTAs [helpers_begin, helpers_end) hold the rest of its tile
  int32_t helpers_end;
};

__device__ __forceinline__ int64_t streamk_range_begin(int64_t units, int32_t ctas, int32_t c) {
  return units * c / ctas;
}
// The CTA whose range holds unit u.
__device__ __forceinline__ int32_t streamk_cta_of(int64_t units, int32_t ctas, int64_t u) {
  int32_t c = static_cast<int32_t>(u * ctas / units);
  while (c + 1 < ctas && streamk_range_begin(units, ctas, c + 1) <= u) ++c;
  while (c > 0 && streamk_range_begin(units, ctas, c) > u) --c;
  return c;
}

__device__ __forceinline__ StreamKWork streamk_work(int32_t tiles, int32_t num_kb) {
  const int32_t ctas = static_cast<int32_t>(gridDim.x), c = static_cast<int32_t>(blockIdx.x);
  const int64_t units = static_cast<int64_t>(tiles) * num_kb;
  const int64_t u0 = streamk_range_begin(units, ctas, c);
  const int64_t u1 = streamk_range_begin(units, ctas, c + 1);
  StreamKWork w;
  w.helpers_begin = w.helpers_end = 0;
  // [u, e) within one tile (no run-time array index: the struct stays in registers)
  auto make = [&](int64_t u, StreamKSegment& sg) {
    const int32_t t = static_cast<int32_t>(u / num_kb);
    const int64_t tile_end = static_cast<int64_t>(t + 1) * num_kb;
    const int64_t e = u1 < tile_end ? u1 : tile_end;
    sg.tile = t;
    sg.kb_begin = static_cast<int32_t>(u - static_cast<int64_t>(t) * num_kb);
    sg.kb_count = static_cast<int32_t>(e - u);
    sg.finisher = sg.kb_begin == 0;
    if (sg.finisher && e < tile_end) {
      w.helpers_begin = c + 1;
      w.helpers_end = streamk_cta_of(units, ctas, tile_end - 1) + 1;
    }
    return e;
  };
  w.count = 0;
  w.seg[1] = StreamKSegment{0, 0, 0, false};
  if (u0 < u1) {
    const int64_t e0 = make(u0, w.seg[0]);
    w.count = 1;
    if (e0 < u1) {  // the host keeps ranges within two tiles (tiles <= CTAs)
      make(e0, w.seg[1]);
      w.count = 2;
    }
  } else {
    w.seg[0] = w.seg[1];
  }
  return w;
}

}  // namespace nvfp4::sm90
