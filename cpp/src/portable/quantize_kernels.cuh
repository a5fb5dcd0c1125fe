// The quantize kernels: QuantizeArgs, the pass's global scale (given, from the atomic
// amax, or reduced from the amax pass's per-CTA maxima), quantize_kernel (items: any
// operand) and quantize_rows_kernel (aligned operands, long rows).
// Part of quantize.cu's translation unit, included only there: its kernels live in the
// anonymous namespace, whose nvcc-mangled name carries the .cu file's name, so
// compiling them in another .cu would rename every kernel symbol.
#pragma once

#include "portable/quantize_walk.cuh"

namespace nvfp4 {
namespace portable {
namespace {

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

}  // namespace
}  // namespace portable
}  // namespace nvfp4
