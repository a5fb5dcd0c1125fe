// Iteration spaces of the portable quantize / amax / dequantize kernels and their grid
// sizing (the two shapes of work described at the top of quantize.cu):
//   - ItemSpace / for_each_item: 32-element items over (batch, row, item), one per
//     thread, a persistent grid striding in chunks of 256;
//   - RowWalk / for_each_row_segment: row segments walked by warps (or whole CTAs);
// plus resident_ctas_per_sm, which sizes both grids, and launch_row_walk.
// Part of quantize.cu's translation unit, included only there: its kernels live in the
// anonymous namespace, whose nvcc-mangled name carries the .cu file's name, so
// compiling them in another .cu would rename every kernel symbol.
#pragma once

#include "common/device_cache.hpp"
#include "portable/common.cuh"

namespace nvfp4 {
namespace portable {
namespace {

constexpr int kThreads = 256;
constexpr int kItemElems = 32;  // K elements per item

// The (batch, row, item) iteration space of one launch and its grid stride.
struct ItemSpace {
  int64_t rows = 0;         // rows per batch iterated (blocked quantize: padded to 128)
  int64_t total_items = 0;  // L * rows * P
  uint32_t P = 0;           // items per row = K / 32
  FastDivmod div_P;
  FastDivmod div_rows;      // used when rows_small
  bool rows_small = true;   // rows < 2^30: split a chunk's row offsets with div_rows
  // One grid step = gridDim.x * kThreads items = step_l batches + step_r rows + step_p
  // items, with step_r < rows and step_p < P.
  int64_t step_l = 0, step_r = 0;
  uint32_t step_p = 0;
  unsigned grid = 0;
};

// CTAs of `Kernel` that fit on one SM of `device` (cached per kernel and device; only
// sizes the grid).
template <auto Kernel>
int resident_ctas_per_sm(int device) {
  static PerDeviceCache<int> cache;
  int n = 1;
  cache.get(device, [](int& v) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, Kernel, kThreads, 0) != cudaSuccess || v < 1) {
      (void)cudaGetLastError();
      v = 1;
    }
    return NVFP4_SUCCESS;
  }, &n);
  return n;
}

// Returns false when the problem is beyond the 32-bit item arithmetic (K >= 2^35).
bool make_item_space(int64_t L, int64_t rows, int64_t K, int sm_count, int ctas_per_sm, ItemSpace* s,
                     int item_elems = kItemElems) {
  const int64_t P = K / item_elems;
  if (P <= 0 || P >= (int64_t(1) << 30) || rows <= 0) return false;
  s->rows = rows;
  s->P = static_cast<uint32_t>(P);
  s->total_items = L * rows * P;
  s->div_P = FastDivmod(s->P);
  s->rows_small = rows < (int64_t(1) << 30);
  s->div_rows = FastDivmod(s->rows_small ? static_cast<uint32_t>(rows) : 1u);
  const int64_t resident = int64_t(sm_count > 0 ? sm_count : 1) * ctas_per_sm;
  const int64_t needed = ceil_div(s->total_items, kThreads);
  s->grid = static_cast<unsigned>(needed < resident ? needed : resident);
  const int64_t step = int64_t(s->grid) * kThreads;
  const int64_t step_rows = step / P;
  s->step_p = static_cast<uint32_t>(step - step_rows * P);
  s->step_l = step_rows / rows;
  s->step_r = step_rows - s->step_l * rows;
  return true;
}

// Calls f(l, r, p) for every item this thread owns: item blockIdx.x * 256 + threadIdx.x
// and every grid step after it.
template <class F>
__device__ __forceinline__ void for_each_item(const ItemSpace& s, F&& f) {
  __shared__ int64_t start_l, start_r;
  __shared__ uint32_t start_p;
  int64_t item0 = int64_t(blockIdx.x) * kThreads;  // first item of this CTA's chunk
  if (threadIdx.x == 0) {  // the only 64-bit divisions
    const int64_t row = item0 / s.P;
    start_p = static_cast<uint32_t>(item0 - row * s.P);
    start_l = row / s.rows;
    start_r = row - start_l * s.rows;
  }
  __syncthreads();
  int64_t l0 = start_l, r0 = start_r;  // coordinates of item0
  uint32_t p0 = start_p;
  const int64_t step = int64_t(gridDim.x) * kThreads;
  for (; item0 < s.total_items; item0 += step) {
    if (item0 + threadIdx.x < s.total_items) {
      uint32_t dr, p;
      s.div_P.divmod(p0 + threadIdx.x, dr, p);  // p0 + 255 < 2^31
      int64_t l = l0, r = r0 + dr;
      if (s.rows_small) {
        uint32_t dl, rr;
        s.div_rows.divmod(static_cast<uint32_t>(r), dl, rr);  // r < rows + 256 < 2^31
        l += dl;
        r = rr;
      } else if (r >= s.rows) {  // dr <= 256 < rows: at most one carry
        r -= s.rows;
        l += 1;
      }
      f(l, r, p);
    }
    // Advance the chunk start by one grid step (p0 < P, r0 < rows: single carries).
    p0 += s.step_p;
    const uint32_t carry = p0 >= s.P ? 1u : 0u;
    p0 -= carry * s.P;
    r0 += s.step_r + carry;
    l0 += s.step_l;
    if (r0 >= s.rows) {
      r0 -= s.rows;
      l0 += 1;
    }
  }
}

// ---------------------------------------------------------------------------
// Row-segment walking kernels (aligned operands, long rows)
// ---------------------------------------------------------------------------
// Each row is cut into segments of S per-lane pieces (S = walker lanes x pieces in
// flight per lane). "Walkers" (single warps, or whole CTAs) take segments in a grid
// stride over the L * rows * segments space, coordinates carried forward without
// division; their lanes take consecutive pieces, so every warp access is contiguous
// and a segment's loads are all issued before its conversions. Whole rows per walker
// left ~1.5 rows per warp at 8192 x 8192: a third of the warps idle for the last row.
struct RowWalk {
  int64_t rows = 0;         // rows per batch walked
  int64_t segs = 0;         // segments per row
  int64_t total = 0;        // L * rows * segs
  int64_t step_l = 0, step_r = 0, step_g = 0;  // one step = all walkers, as (batches, rows, segments)
  unsigned grid = 0;
  int per_cta = 1;          // walkers per CTA: kThreads / 32 (its warps) or 1 (the CTA)
};

RowWalk make_row_walk(int64_t L, int64_t rows, int64_t segs, int sm_count, int ctas_per_sm, int per_cta) {
  RowWalk w;
  w.rows = rows;
  w.segs = segs;
  w.total = L * rows * segs;
  w.per_cta = per_cta;
  const int64_t resident = int64_t(sm_count > 0 ? sm_count : 1) * ctas_per_sm;
  const int64_t needed = ceil_div(w.total, int64_t(per_cta));
  w.grid = static_cast<unsigned>(needed < resident ? needed : resident);
  const int64_t walkers = int64_t(w.grid) * per_cta;
  const int64_t step_rows = walkers / segs;
  w.step_g = walkers - step_rows * segs;
  w.step_l = step_rows / rows;
  w.step_r = step_rows - w.step_l * rows;
  return w;
}

// Launches a row-walking kernel over L x rows x segs segments (per_cta walkers per CTA),
// with as many CTAs as fit on the device at once or are needed.
template <auto Kernel>
RowWalk row_walk(int64_t L, int64_t rows, int64_t segs, int per_cta, const Exec& exec) {
  return make_row_walk(L, rows, segs, exec.sm_count, resident_ctas_per_sm<Kernel>(exec.device), per_cta);
}

template <auto Kernel, class Args>
void launch_row_walk(const Args& a, int64_t L, int64_t rows, int64_t segs, int per_cta, const Exec& exec) {
  const RowWalk walk = row_walk<Kernel>(L, rows, segs, per_cta, exec);
  Kernel<<<walk.grid, kThreads, 0, cuda_stream(exec)>>>(a, walk);
}

// Calls f(l, r, g) for the row segments of this walker (the calling warp, or the CTA).
template <class F>
__device__ __forceinline__ void for_each_row_segment(const RowWalk& w, F&& f) {
  const int64_t walker = int64_t(blockIdx.x) * w.per_cta + (w.per_cta > 1 ? int(threadIdx.x / 32) : 0);
  const int64_t walkers = int64_t(gridDim.x) * w.per_cta;
  const int64_t row0 = walker / w.segs;
  int64_t g = walker - row0 * w.segs, l = row0 / w.rows, r = row0 - l * w.rows;
  for (int64_t seg = walker; seg < w.total; seg += walkers) {
    f(l, r, g);
    g += w.step_g;  // g < segs, step_g < segs, r < rows, step_r < rows: single carries
    if (g >= w.segs) {
      g -= w.segs;
      r += 1;
    }
    r += w.step_r;
    if (r >= w.rows) {
      r -= w.rows;
      l += 1;
    }
    l += w.step_l;
  }
}

}  // namespace
}  // namespace portable
}  // namespace nvfp4
