// Portable quantize (with optional global-scale computation) and dequantize.
//
// Bandwidth-bound streaming kernels, two shapes of work:
//   - aligned operands with long rows (the common case): rows are cut into fixed
//     segments that warps walk in a grid stride (quantize_rows_kernel, amax_rows_kernel,
//     dequantize_staged_kernel); lanes take consecutive 16-byte pieces so every warp
//     access is contiguous, and each lane has several loads in flight before it computes;
//   - everything else (short rows, unaligned or oddly strided operands): "items" of 32
//     consecutive K elements of one row (two scale blocks, 16 packed fp4 bytes) in
//     row-major order over (batch, row, item), one item per thread at a time, a
//     persistent grid striding over the items in chunks of 256 with the (batch, row,
//     item) coordinates carried forward (no per-item 64-bit division).
// Measured versions and why each shape was chosen: bench/NOTES.md ("quantize /
// dequantize / swizzle (portable)").
//
// Numerics are exactly formats.h's recipe (see common.cuh): the CPU backend and
// these kernels produce identical bytes.
#include "common/device_cache.hpp"
#include "workspace_cache.hpp"
#include "portable/common.cuh"
#include "portable/launchers.hpp"

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

// ---------------------------------------------------------------------------
// amax (for compute_global_scale)
// ---------------------------------------------------------------------------

struct AmaxArgs {
  ItemSpace s;
  const void* x = nullptr;
  int64_t x_rs = 0, x_bs = 0;  // elements
  unsigned* amax_bits = nullptr;  // the global_scale float, zeroed beforehand
  float* parts = nullptr;         // instead: each CTA's max |x| in parts[blockIdx.x] (no zeroing)
};

// The end of an amax pass: one atomicMax per warp on the bits of |x| into *amax_bits
// (non-negative floats order like their bits, and every NaN (sign cleared) is above +inf,
// so a NaN anywhere wins, as in the CPU backend); or, with `parts`, the CTA's maximum
// (the same bits order) in parts[blockIdx.x], reduced by the quantize pass: no memset
// before and no finalize launch after it (two stream operations of ~3 µs host each).
__device__ __forceinline__ void amax_store(const AmaxArgs& a, float m) {
  const unsigned bits = __reduce_max_sync(0xFFFFFFFFu, __float_as_uint(m) & 0x7FFFFFFFu);
  if (!a.parts) {
    if ((threadIdx.x & 31) == 0 && bits != 0) atomicMax(a.amax_bits, bits);
    return;
  }
  __shared__ unsigned warp_bits[kThreads / 32];
  if ((threadIdx.x & 31) == 0) warp_bits[threadIdx.x / 32] = bits;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned b = 0;
    for (int w = 0; w < kThreads / 32; ++w) b = max(b, warp_bits[w]);
    a.parts[blockIdx.x] = __uint_as_float(b);
  }
}

template <class T, bool kVec>
__global__ void __launch_bounds__(kThreads) amax_kernel(const AmaxArgs a) {
  float m = 0.0f;
  for_each_item(a.s, [&](int64_t l, int64_t r, uint32_t p) {
    const T* xp = static_cast<const T*>(a.x) + l * a.x_bs + r * a.x_rs + int64_t(p) * kItemElems;
    Raw16<T> x0, x1;
    load_raw16<T, kVec>(xp, x0);
    load_raw16<T, kVec>(xp + 16, x1);
    m = max_nan(m, max_nan(raw_amax(x0), raw_amax(x1)));
  });
  amax_store(a, m);
}

// max |x| (NaN wins) of the 16 bytes v of T elements (exact, like raw_amax).
template <class T>
__device__ __forceinline__ float amax_16B(const uint4 v) {
  if constexpr (sizeof(T) == 4) {
    return max_nan(max_nan(fabsf(__uint_as_float(v.x)), fabsf(__uint_as_float(v.y))),
                   max_nan(fabsf(__uint_as_float(v.z)), fabsf(__uint_as_float(v.w))));
  } else {
    constexpr bool kBf16 = std::is_same<T, __nv_bfloat16>::value;
    auto mx = [](uint32_t x, uint32_t y) { return max_nan_16x2<kBf16>(x, y); };
    const uint32_t m = mx(mx(v.x & 0x7FFF7FFFu, v.y & 0x7FFF7FFFu), mx(v.z & 0x7FFF7FFFu, v.w & 0x7FFF7FFFu));
    Raw16<T> t;
    t.w[0] = m;
    return max_nan(raw_elem(t, 0), raw_elem(t, 1));
  }
}

// Aligned operands, long rows: warps walk row segments, each lane kAmaxRowsUnroll
// 16-byte pieces in flight, consecutive lanes on consecutive pieces (the item kernel's
// 32-element items made every warp load touch 32 different lines: 60-74% of the copy
// bandwidth on the H200 for a read-only pass).
constexpr int kAmaxRowsUnroll = 4;
template <class T>
__global__ void __launch_bounds__(kThreads) amax_rows_kernel(const AmaxArgs a, const RowWalk walk) {
  constexpr uint32_t E = 16 / sizeof(T), U = kAmaxRowsUnroll, S = 32 * U;
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t pieces = static_cast<uint32_t>(a.s.P) * (kItemElems / E);  // K / E < 2^31
  float m = 0.0f;
  for_each_row_segment(walk, [&](int64_t l, int64_t r, int64_t g) {
    const uint4* row = reinterpret_cast<const uint4*>(static_cast<const T*>(a.x) + l * a.x_bs + r * a.x_rs);
    const uint32_t c0 = static_cast<uint32_t>(g) * S + lane;
    uint4 v[U];
#pragma unroll
    for (uint32_t u = 0; u < U; ++u)
      if (c0 + u * 32 < pieces) v[u] = __ldg(row + c0 + u * 32);
#pragma unroll
    for (uint32_t u = 0; u < U; ++u)
      if (c0 + u * 32 < pieces) m = max_nan(m, amax_16B<T>(v[u]));
  });
  amax_store(a, m);
}

// *gs held amax bits; replace them with the decode global scale.
__global__ void finalize_global_scale_kernel(float* gs) { *gs = global_scale_from_amax(*gs); }

// ---------------------------------------------------------------------------
// quantize
// ---------------------------------------------------------------------------

struct QuantizeArgs {
  ItemSpace s;               // rows = R (linear) or R padded to 128 (blocked)
  const void* x = nullptr;
  int64_t x_rs = 0, x_bs = 0;  // elements
  uint8_t* q = nullptr;
  int64_t q_rs = 0, q_bs = 0;
  uint8_t* sf = nullptr;
  int64_t sf_rs = 0, sf_bs = 0;
  int64_t R = 0, K = 0;
  bool blocked = false;
  bool pad_cols = false;       // blocked and K/16 % 4 == 2: two zero columns per row
  const float* gs = nullptr;
  bool gs_is_amax = false;     // *gs holds amax bits (compute_global_scale, atomic amax pass)
  const float* amax_parts = nullptr;  // or the amax pass's per-CTA maxima (amax_count of them):
  int amax_count = 0;                 // every CTA reduces them, CTA 0 stores the scale in gs_out
  float* gs_out = nullptr;
  NibblePack pack = NibblePack::make();
};

// The decode global scale of a quantize pass (every thread of the CTA calls this first).
__device__ __forceinline__ float quantize_global_scale(const QuantizeArgs& a) {
  if (!a.amax_parts) return a.gs_is_amax ? global_scale_from_amax(*a.gs) : *a.gs;
  __shared__ unsigned warp_bits[kThreads / 32];
  unsigned bits = 0;
  for (int i = threadIdx.x; i < a.amax_count; i += kThreads) bits = max(bits, __float_as_uint(a.amax_parts[i]));
  bits = __reduce_max_sync(0xFFFFFFFFu, bits);
  if ((threadIdx.x & 31) == 0) warp_bits[threadIdx.x / 32] = bits;
  __syncthreads();
  unsigned b = 0;
  for (int w = 0; w < kThreads / 32; ++w) b = max(b, warp_bits[w]);
  const float gs = global_scale_from_amax(__uint_as_float(b));
  if (blockIdx.x == 0 && threadIdx.x == 0) *a.gs_out = gs;  // no CTA reads *gs_out
  return gs;
}

template <class T, bool kVec>
__global__ void __launch_bounds__(kThreads) quantize_kernel(const QuantizeArgs a) {
  const QuantScale qs = make_quant_scale(quantize_global_scale(a));
  for_each_item(a.s, [&](int64_t l, int64_t r, uint32_t p) {
    const int64_t c = 2 * int64_t(p);  // first scale column of the item
    uint32_t sf0 = 0, sf1 = 0;         // padding rows (r >= R) get zero scales
    if (r < a.R) {
      const T* xp = static_cast<const T*>(a.x) + l * a.x_bs + r * a.x_rs + int64_t(p) * kItemElems;
      Raw16<T> x0, x1;
      load_raw16<T, kVec>(xp, x0);
      load_raw16<T, kVec>(xp + 16, x1);
      uint4 w;
      sf0 = quantize_raw16(x0, qs, a.pack, w.x, w.y);
      sf1 = quantize_raw16(x1, qs, a.pack, w.z, w.w);
      uint8_t* qp = a.q + l * a.q_bs + r * a.q_rs + int64_t(p) * 16;
      if constexpr (kVec) {
        *reinterpret_cast<uint4*>(qp) = w;
      } else {
        const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int b = 0; b < 16; ++b) qp[b] = static_cast<uint8_t>(words[b / 4] >> (8 * (b % 4)));
      }
    }
    if (a.blocked) {
      uint8_t* base = a.sf + l * a.sf_bs;
      // c is even, so columns c and c+1 are adjacent bytes of one 4-byte group.
      const int64_t o = blocked_sf_offset(r, c, a.K);
      base[o] = static_cast<uint8_t>(sf0);
      base[o + 1] = static_cast<uint8_t>(sf1);
      if (a.pad_cols && p == a.s.P - 1) {
        const int64_t op = blocked_sf_offset(r, c + 2, a.K);
        base[op] = 0;
        base[op + 1] = 0;
      }
    } else {
      uint8_t* sp = a.sf + l * a.sf_bs + r * a.sf_rs + c;
      sp[0] = static_cast<uint8_t>(sf0);
      sp[1] = static_cast<uint8_t>(sf1);
    }
  });
}

// Aligned operands, long rows: each lane quantizes whole 16-element blocks (one
// scale byte, 8 code bytes), kQuantRowsUnroll<T> blocks in flight per lane (their
// loads are issued before any of them is converted), the blocks of one step W lanes
// apart so every warp load covers contiguous memory. A row segment is walked by a warp
// (W = 32, the default) or by the whole CTA (W = kThreads). The CTA first tabulates the
// inverse scale of all 256 scale bytes in shared memory (same values as computing them
// per block). Same recipe, same bytes as quantize_kernel; blocked layouts also walk the
// zero padding rows and columns.
#ifndef NVFP4_QUANT_ROWS_UNROLL16
#define NVFP4_QUANT_ROWS_UNROLL16 2
#endif
#ifndef NVFP4_QUANT_ROWS_UNROLL32
#define NVFP4_QUANT_ROWS_UNROLL32 1
#endif
#ifndef NVFP4_QUANT_ROWS_WALKER
#define NVFP4_QUANT_ROWS_WALKER 32
#endif
template <class T>
constexpr int kQuantRowsUnroll = sizeof(T) == 4 ? NVFP4_QUANT_ROWS_UNROLL32 : NVFP4_QUANT_ROWS_UNROLL16;
constexpr int kQuantRowsWalker = NVFP4_QUANT_ROWS_WALKER;

// Per-segment address work is a large part of this kernel's instructions (a segment is only
// U blocks per lane), so rows, segments and scale columns are 32-bit here (the launcher
// guarantees the ranges) and the layout is a template parameter: a row's scale base is
// then a few shifts instead of a signed 64-bit blocked_sf_offset.
template <class T, int W, bool kBlocked>
__global__ void __launch_bounds__(kThreads) quantize_rows_kernel(const QuantizeArgs a, const RowWalk walk) {
  constexpr int U = kQuantRowsUnroll<T>;
  constexpr uint32_t S = uint32_t(W) * U;  // blocks per segment
  using SA = ScaleAddr32<kBlocked>;
  constexpr uint32_t kColStep = (W / 4) * SA::kStep4;  // scale offset between a lane's blocks (W apart)
  static_assert(W % 4 == 0, "walker width");
  const uint32_t lane = threadIdx.x % W;
  const float gs = quantize_global_scale(a);
  const QuantScale qs = make_quant_scale(gs);
  __shared__ float inv_lut[256];  // quant_inv_of(sf, gs) for every scale byte
  fill_inv_lut(inv_lut, gs);
  __syncthreads();
  const uint32_t blocks = static_cast<uint32_t>(a.K / kSfVec);
  const uint32_t R = static_cast<uint32_t>(a.R);
  const int64_t sf_stride = kBlocked ? blocked_sf_cols(a.K) * 128 : a.sf_rs;  // see ScaleAddr32
  const uint32_t pad_cols = static_cast<uint32_t>(blocked_sf_cols(a.K)) - blocks;  // 0 or 2
  for_each_row_segment(walk, [&](int64_t l, int64_t r64, int64_t g64) {
    const uint32_t r = static_cast<uint32_t>(r64), g = static_cast<uint32_t>(g64);
    uint8_t* sf_row = a.sf + l * a.sf_bs + SA::row(r, sf_stride);
    const uint32_t c0 = g * S + lane;
    uint8_t* sf_lane = sf_row + SA::col(c0);
    if constexpr (kBlocked) {
      // the last segment also zeroes the padding columns (K/16 % 4 == 2)
      if (g == walk.segs - 1 && lane < pad_cols) sf_row[SA::col(blocks + lane)] = 0;
      if (r >= R) {  // padding row: zero scales only
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (c0 + u * W < blocks) sf_lane[u * kColStep] = 0;
        return;
      }
    }
    const T* xlane = static_cast<const T*>(a.x) + l * a.x_bs + int64_t(r) * a.x_rs + size_t(c0) * kSfVec;
    uint8_t* qlane = a.q + l * a.q_bs + int64_t(r) * a.q_rs + size_t(c0) * (kSfVec / 2);
    Raw16<T> raw[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (c0 + u * W < blocks) load_raw16<T, true>(xlane + u * W * kSfVec, raw[u]);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (c0 + u * W < blocks) {
        uint2 q;
        sf_lane[u * kColStep] = static_cast<uint8_t>(quantize_raw16<T, true>(raw[u], qs, a.pack, q.x, q.y, inv_lut));
        *reinterpret_cast<uint2*>(qlane + u * W * (kSfVec / 2)) = q;
      }
    }
  });
}

template <class T, bool kVec>
nvfp4_status_t launch_quantize_typed(const QuantizeProblem& p, const Exec& exec) {
  cudaStream_t stream = cuda_stream(exec);
  const bool blocked = p.sf_layout == NVFP4_SF_BLOCKED;

  // Check everything before touching memory (NOT_SUPPORTED must leave it untouched).
  QuantizeArgs a;
  if (!make_item_space(p.L, blocked ? blocked_sf_rows(p.rows) : p.rows, p.K, exec.sm_count,
                       resident_ctas_per_sm<quantize_kernel<T, kVec>>(exec.device), &a.s))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "quantize (portable): problem too large (K=%lld)",
                static_cast<long long>(p.K));
  AmaxArgs am;
  if (p.compute_global_scale &&
      !make_item_space(p.L, p.rows, p.K, exec.sm_count, resident_ctas_per_sm<amax_kernel<T, kVec>>(exec.device), &am.s))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "quantize (portable): problem too large");

  // Computing the global scale: an amax pass before the quantize pass. With the library's
  // cached scratch (exec.cached_workspace) its CTAs leave their maxima there and the
  // quantize pass reduces them (2 launches); else atomics into the zeroed global_scale and a
  // finalize kernel (memset + 3 launches).
  ScratchLease parts;  // outlives the launches (a graph allocation is freed after them)
  if (p.compute_global_scale) {
    am.x = p.x;
    am.x_rs = p.x_row_stride;
    am.x_bs = p.x_batch_stride;
    am.amax_bits = reinterpret_cast<unsigned*>(p.global_scale);
    const int64_t pieces = p.K * int64_t(sizeof(T)) / 16;
    const bool rows_pass = kVec && pieces >= 32 * kAmaxRowsUnroll && pieces < (int64_t(1) << 31);
    const RowWalk walk = rows_pass ? row_walk<amax_rows_kernel<T>>(p.L, p.rows,
                                                                   ceil_div(pieces, int64_t(32) * kAmaxRowsUnroll),
                                                                   kThreads / 32, exec)
                                   : RowWalk{};
    const unsigned grid = rows_pass ? walk.grid : am.s.grid;
    if (exec.cached_workspace) {
      const nvfp4_status_t st = parts.acquire(exec.device, stream, size_t(grid) * sizeof(float));
      if (st != NVFP4_SUCCESS) return st;
      am.parts = static_cast<float*>(parts.data());
      a.amax_parts = am.parts;
      a.amax_count = static_cast<int>(grid);
      a.gs_out = p.global_scale;
    } else {
      NVFP4_CUDA_TRY(cudaMemsetAsync(p.global_scale, 0, sizeof(float), stream));
    }
    if (rows_pass)
      amax_rows_kernel<T><<<walk.grid, kThreads, 0, stream>>>(am, walk);
    else
      amax_kernel<T, kVec><<<am.s.grid, kThreads, 0, stream>>>(am);
    NVFP4_CHECK_LAUNCH();
  }

  a.x = p.x;
  a.x_rs = p.x_row_stride;
  a.x_bs = p.x_batch_stride;
  a.q = p.q;
  a.q_rs = p.q_row_stride;
  a.q_bs = p.q_batch_stride;
  a.sf = p.sf;
  a.sf_rs = p.sf_row_stride;
  a.sf_bs = p.sf_batch_stride;
  a.R = p.rows;
  a.K = p.K;
  a.blocked = blocked;
  a.pad_cols = blocked && (p.K / kSfVec) % 4 != 0;
  a.gs = p.global_scale;
  a.gs_is_amax = p.compute_global_scale && !a.amax_parts;
  bool launched = false;
  if constexpr (kVec && kQuantRowsUnroll<T> > 0) {
    constexpr int W = kQuantRowsWalker;
    // 32-bit rows, segments and blocked scale column offsets (see quantize_rows_kernel)
    const int64_t rows = blocked ? blocked_sf_rows(p.rows) : p.rows;
    if (p.K / kSfVec >= W * kQuantRowsUnroll<T> && blocked_sf_cols(p.K) * 128 < (int64_t(1) << 31) &&
        rows < (int64_t(1) << 31)) {  // every lane has a block
      const int64_t segs = ceil_div(p.K / kSfVec, int64_t(W) * kQuantRowsUnroll<T>);
      if (blocked)
        launch_row_walk<quantize_rows_kernel<T, W, true>>(a, p.L, rows, segs, kThreads / W, exec);
      else
        launch_row_walk<quantize_rows_kernel<T, W, false>>(a, p.L, rows, segs, kThreads / W, exec);
      launched = true;
    }
  }
  if (!launched) quantize_kernel<T, kVec><<<a.s.grid, kThreads, 0, stream>>>(a);
  NVFP4_CHECK_LAUNCH();

  if (a.gs_is_amax) {
    finalize_global_scale_kernel<<<1, 1, 0, stream>>>(p.global_scale);
    NVFP4_CHECK_LAUNCH();
  }
  return NVFP4_SUCCESS;
}

template <class T>
nvfp4_status_t launch_quantize_typed(const QuantizeProblem& p, const Exec& exec) {
  const int64_t es = sizeof(T);
  const bool vec = aligned_to(p.x, 16, p.x_row_stride * es, p.x_batch_stride * es) &&
                   aligned_to(p.q, 16, p.q_row_stride, p.q_batch_stride);
  return vec ? launch_quantize_typed<T, true>(p, exec) : launch_quantize_typed<T, false>(p, exec);
}

// ---------------------------------------------------------------------------
// dequantize
// ---------------------------------------------------------------------------

struct DequantizeArgs {
  ItemSpace s;
  const uint8_t* q = nullptr;
  int64_t q_rs = 0, q_bs = 0;
  ScaleOperand sf;
  int64_t K = 0;
  Alpha gs;
  void* out = nullptr;
  int64_t o_rs = 0, o_bs = 0;  // elements
};

// e2m1 nibble -> fp32 bits of value * 2^-126: magnitude bits at 24..22 (exponent
// field = code >> 1, so code 1 is the subnormal 2^-127), sign at 31.
__device__ __forceinline__ float e2m1_scaled_bits(uint32_t nibble) {
  return __uint_as_float(((nibble & 7u) << 22) | ((nibble & 8u) << 28));
}

// Aligned operands, short rows (dequantize_lane16_kernel): a lane piece is the 16
// output bytes of E consecutive elements (8 fp16/bf16 or 4 fp32 values); consecutive
// lanes take consecutive pieces, so every load and store instruction of a warp covers
// one contiguous span. dequantize_piece also serves the staged kernel's 16-element halves.
template <class OT>
constexpr int kDequantLaneElems = 16 / static_cast<int>(sizeof(OT));

// Packed codes of E elements (E/2 bytes, aligned to E/2): word i holds elements 8i..8i+7.
template <int E>
struct PackedPiece {
  static constexpr int kWords = E >= 8 ? E / 8 : 1;
  uint32_t w[kWords];
};
template <int E>
__device__ __forceinline__ void load_packed(const uint8_t* qp, PackedPiece<E>& p) {
  static_assert(E == 4 || E == 8, "the lane16 kernel's pieces: 16 output bytes");
  p.w[0] = E == 4 ? uint32_t(__ldg(reinterpret_cast<const uint16_t*>(qp))) : __ldg(reinterpret_cast<const uint32_t*>(qp));
}

// A 16-byte output store (st.global.cs measured no different on the H100, round 2).
template <class OT>
__device__ __forceinline__ void store_out16(OT* dst, uint4 v) {
  *reinterpret_cast<uint4*>(dst) = v;
}

// Dequantizes E elements (all in one scale block when E <= 16) to dst (16-byte aligned).
template <class OT, int E>
__device__ __forceinline__ void dequantize_piece(OT* dst, const PackedPiece<E>& p, float s, float gs) {
  constexpr int V = 16 / static_cast<int>(sizeof(OT));  // values per 16-byte store
#pragma unroll
  for (int v0 = 0; v0 < E; v0 += V) {
    float v[V];
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const int k = v0 + i;
      // same operations as dequantize_unaligned_kernel: exact (e2m1 * e4m3), one rounding by gs
      const float e = __fmul_rn(e2m1_scaled_bits(p.w[k / 8] >> (4 * (k % 8))), 0x1p126f);
      v[i] = __fmul_rn(__fmul_rn(e, s), gs);
    }
    if constexpr (sizeof(OT) == 4) {
      store_out16(dst + v0, make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]),
                                       __float_as_uint(v[3])));
    } else {
      uint32_t h[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (std::is_same<OT, __half>::value) {
          const __half2 t = __floats2half2_rn(v[2 * j], v[2 * j + 1]);
          h[j] = *reinterpret_cast<const uint32_t*>(&t);
        } else {
          const __nv_bfloat162 t = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
          h[j] = *reinterpret_cast<const uint32_t*>(&t);
        }
      }
      store_out16(dst + v0, make_uint4(h[0], h[1], h[2], h[3]));
    }
  }
}

template <class OT>
__global__ void __launch_bounds__(kThreads) dequantize_lane16_kernel(const DequantizeArgs a) {
  constexpr int E = kDequantLaneElems<OT>;
  const float gs = read_alpha(a.gs);
  for_each_item(a.s, [&](int64_t l, int64_t r, uint32_t p) {
    const int64_t k0 = int64_t(p) * E;
    PackedPiece<E> w;
    load_packed(a.q + l * a.q_bs + r * a.q_rs + k0 / 2, w);
    const float s = e4m3_to_float_fast(a.sf.data[scale_offset(a.sf, l, r, k0 / kSfVec, a.K)]);
    dequantize_piece<OT, E>(static_cast<OT*>(a.out) + l * a.o_bs + r * a.o_rs + k0, w, s, gs);
  });
}

// Aligned operands, long rows: warps walk row segments of 32 x 32 elements staged
// through shared memory. A lane loads 16 packed bytes (32 elements, two scale bytes)
// with one 16-byte load, converts them into its own shared-memory slot, and the warp
// stores the segment back 16 bytes per lane, contiguous across the warp. (Giving each
// lane 16 contiguous output bytes directly instead needs one 4-byte code load and one
// scale-byte load per 16 output bytes: 72% against 78-80% of the copy bandwidth for
// 16-bit outputs on an H200, bench/NOTES.md.)
template <class OT>
constexpr int kStagedLaneBytes = 32 * static_cast<int>(sizeof(OT));  // 32 outputs per lane
template <class OT>
constexpr int kStagedSlot = kStagedLaneBytes<OT> + 16;  // padded: conflict-free 16-byte stores

// kBlocked and the 32-bit row math: see quantize_rows_kernel (ScaleAddr32).
template <class OT, bool kBlocked>
__global__ void __launch_bounds__(kThreads) dequantize_staged_kernel(const DequantizeArgs a, const RowWalk walk) {
  constexpr int V = 16 / static_cast<int>(sizeof(OT));  // outputs per 16-byte piece
  constexpr int C = 32 / V;                             // 16-byte output pieces per lane
  __shared__ __align__(16) uint8_t stage[kThreads / 32][32 * kStagedSlot<OT>];
  uint8_t* slots = stage[threadIdx.x / 32];
  const uint32_t lane = threadIdx.x % 32;
  const float gs = read_alpha(a.gs);
  const uint32_t pieces = static_cast<uint32_t>(a.K / 32);  // 32-element lane pieces per row (< 2^31)
  using SA = ScaleAddr32<kBlocked>;
  const int64_t sf_stride = kBlocked ? blocked_sf_cols(a.K) * 128 : a.sf.row_stride;
  for_each_row_segment(walk, [&](int64_t l, int64_t r64, int64_t g) {
    const uint32_t r = static_cast<uint32_t>(r64);
    const uint32_t piece = static_cast<uint32_t>(g) * 32 + lane;
    if (piece < pieces) {
      const uint4 w = __ldg(reinterpret_cast<const uint4*>(a.q + l * a.q_bs + int64_t(r) * a.q_rs) + piece);
      // columns 2 piece and 2 piece + 1: adjacent bytes in both layouts (2 piece is even)
      const uint8_t* sf = a.sf.data + l * a.sf.batch_stride + SA::row(r, sf_stride) + SA::col(2 * piece);
      const float s0 = e4m3_to_float_fast(__ldg(sf)), s1 = e4m3_to_float_fast(__ldg(sf + 1));
      PackedPiece<16> lo, hi;
      lo.w[0] = w.x; lo.w[1] = w.y;
      hi.w[0] = w.z; hi.w[1] = w.w;
      OT* mine = reinterpret_cast<OT*>(slots + lane * kStagedSlot<OT>);
      dequantize_piece<OT, 16>(mine, lo, s0, gs);
      dequantize_piece<OT, 16>(mine + 16, hi, s1, gs);
    }
    __syncwarp();
    OT* orow = static_cast<OT*>(a.out) + l * a.o_bs + int64_t(r) * a.o_rs;
#pragma unroll
    for (int k = 0; k < C; ++k) {
      const uint32_t j = k * 32 + lane;        // 16-byte output piece of the segment
      if (g * 32 + j / C < pieces) {
        const uint4 v = *reinterpret_cast<const uint4*>(slots + (j / C) * kStagedSlot<OT> + (j % C) * 16);
        *reinterpret_cast<uint4*>(orow + (static_cast<size_t>(g) * 32 * 32) + size_t(j) * V) = v;
      }
    }
    __syncwarp();
  });
}

// Unaligned operands: a 32-element item per thread with byte loads and element stores.
template <class OT>
__global__ void __launch_bounds__(kThreads) dequantize_unaligned_kernel(const DequantizeArgs a) {
  constexpr DType kOut = sizeof(OT) == 4 ? DType::kFloat32
                         : std::is_same<OT, __half>::value ? DType::kFloat16 : DType::kBFloat16;
  const float gs = read_alpha(a.gs);
  for_each_item(a.s, [&](int64_t l, int64_t r, uint32_t p) {
    const uint8_t* qp = a.q + l * a.q_bs + r * a.q_rs + int64_t(p) * 16;
    uint32_t w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      w[j] = uint32_t(qp[4 * j]) | (uint32_t(qp[4 * j + 1]) << 8) | (uint32_t(qp[4 * j + 2]) << 16) |
             (uint32_t(qp[4 * j + 3]) << 24);
    const int64_t c = 2 * int64_t(p);
    const float s[2] = {e4m3_to_float_fast(a.sf.data[scale_offset(a.sf, l, r, c, a.K)]),
                        e4m3_to_float_fast(a.sf.data[scale_offset(a.sf, l, r, c + 1, a.K)])};
    const int64_t o = l * a.o_bs + r * a.o_rs + int64_t(p) * kItemElems;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      // (e2m1 * e4m3) is exact in fp32 (at most 6 significant bits, >= 2^-10), as is
      // the power-of-two rescale; the only rounding is the multiply by gs, as in
      // formats.h / the CPU backend.
      const float e = __fmul_rn(e2m1_scaled_bits(w[i / 8] >> (4 * (i % 8))), 0x1p126f);
      store_out(a.out, kOut, o + i, __fmul_rn(__fmul_rn(e, s[i / 16]), gs));
    }
  });
}

template <class OT, bool kVec>
nvfp4_status_t launch_dequantize_typed(const DequantizeProblem& p, const Exec& exec) {
  DequantizeArgs a;
  a.q = p.q;
  a.q_rs = p.q_row_stride;
  a.q_bs = p.q_batch_stride;
  a.sf = p.sf;
  a.K = p.K;
  a.gs = p.global_scale;
  a.out = p.out;
  a.o_rs = p.out_row_stride;
  a.o_bs = p.out_batch_stride;
  // long rows: whole warp segments (32-bit rows and scale offsets: see ScaleAddr32)
  if (kVec && p.K >= 32 * 32 && blocked_sf_cols(p.K) * 128 < (int64_t(1) << 31) && p.rows < (int64_t(1) << 31)) {
    const int64_t segs = ceil_div(p.K / 32, int64_t(32));
    if (p.sf.layout == NVFP4_SF_BLOCKED)
      launch_row_walk<dequantize_staged_kernel<OT, true>>(a, p.L, p.rows, segs, kThreads / 32, exec);
    else
      launch_row_walk<dequantize_staged_kernel<OT, false>>(a, p.L, p.rows, segs, kThreads / 32, exec);
    NVFP4_CHECK_LAUNCH();
    return NVFP4_SUCCESS;
  }
  const int ctas = kVec ? resident_ctas_per_sm<dequantize_lane16_kernel<OT>>(exec.device)
                        : resident_ctas_per_sm<dequantize_unaligned_kernel<OT>>(exec.device);
  if (!make_item_space(p.L, p.rows, p.K, exec.sm_count, ctas, &a.s, kVec ? kDequantLaneElems<OT> : kItemElems))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "dequantize (portable): problem too large (K=%lld)",
                static_cast<long long>(p.K));
  if constexpr (kVec) {
    dequantize_lane16_kernel<OT><<<a.s.grid, kThreads, 0, cuda_stream(exec)>>>(a);
  } else {
    dequantize_unaligned_kernel<OT><<<a.s.grid, kThreads, 0, cuda_stream(exec)>>>(a);
  }
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
}

template <class OT>
nvfp4_status_t launch_dequantize_typed(const DequantizeProblem& p, const Exec& exec) {
  const int64_t es = sizeof(OT);
  const bool vec = aligned_to(p.q, 16, p.q_row_stride, p.q_batch_stride) &&
                   aligned_to(p.out, 16, p.out_row_stride * es, p.out_batch_stride * es);
  return vec ? launch_dequantize_typed<OT, true>(p, exec) : launch_dequantize_typed<OT, false>(p, exec);
}

}  // namespace

nvfp4_status_t quantize(const QuantizeProblem& p, const Exec& exec) {
  if (p.L == 0 || p.rows == 0 || p.K == 0) {
    // Nothing to quantize; a requested global scale is that of amax 0 (1.0), as on CPU.
    if (p.compute_global_scale) {
      cudaStream_t stream = cuda_stream(exec);
      NVFP4_CUDA_TRY(cudaMemsetAsync(p.global_scale, 0, sizeof(float), stream));
      finalize_global_scale_kernel<<<1, 1, 0, stream>>>(p.global_scale);
      NVFP4_CHECK_LAUNCH();
    }
    return NVFP4_SUCCESS;
  }
  switch (p.x_dtype) {
    case DType::kFloat32: return launch_quantize_typed<float>(p, exec);
    case DType::kFloat16: return launch_quantize_typed<__half>(p, exec);
    case DType::kBFloat16: return launch_quantize_typed<__nv_bfloat16>(p, exec);
  }
  return fail(NVFP4_ERROR_INVALID_TYPE, "quantize (portable): unsupported input dtype");
}

nvfp4_status_t dequantize(const DequantizeProblem& p, const Exec& exec) {
  if (p.L == 0 || p.rows == 0 || p.K == 0) return NVFP4_SUCCESS;
  switch (p.out_dtype) {
    case DType::kFloat32: return launch_dequantize_typed<float>(p, exec);
    case DType::kFloat16: return launch_dequantize_typed<__half>(p, exec);
    case DType::kBFloat16: return launch_dequantize_typed<__nv_bfloat16>(p, exec);
  }
  return fail(NVFP4_ERROR_INVALID_TYPE, "dequantize (portable): unsupported output dtype");
}

}  // namespace portable
}  // namespace nvfp4
