// The dequantize kernels: dequantize_lane16_kernel (aligned operands, short rows),
// dequantize_staged_kernel (aligned operands, long rows, staged through shared memory)
// and dequantize_unaligned_kernel (everything else), with their shared helpers.
// Part of quantize.cu's translation unit, included only there: its kernels live in the
// anonymous namespace, whose nvcc-mangled name carries the .cu file's name, so
// compiling them in another .cu would rename every kernel symbol.
#pragma once

#include "portable/quantize_walk.cuh"

namespace nvfp4 {
namespace portable {
namespace {

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

}  // namespace
}  // namespace portable
}  // namespace nvfp4
