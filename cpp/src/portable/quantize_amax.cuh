// The amax pass of a quantize with compute_global_scale: max |x| (NaN wins) over the
// operand, left as atomics on the global scale's bits or as per-CTA maxima (amax_store),
// by an item kernel (any operand) or a row-walking kernel (aligned, long rows); and
// the kernel that turns the atomic result into the decode global scale.
// Part of quantize.cu's translation unit, included only there: its kernels live in the
// anonymous namespace, whose nvcc-mangled name carries the .cu file's name, so
// compiling them in another .cu would rename every kernel symbol.
#pragma once

#include "portable/quantize_walk.cuh"

namespace nvfp4 {
namespace portable {
namespace {

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

}  // namespace
}  // namespace portable
}  // namespace nvfp4
