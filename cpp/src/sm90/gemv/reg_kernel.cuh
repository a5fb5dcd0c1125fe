// gemv_reg_kernel: the sm90a GEMV on CUDA cores, c[l, m] = alpha * sum_k A[l, m, k] * b[l, k],
// for every problem the MMA kernel does not take (small M*L, misaligned operands).
//
// Algorithm. A is streamed once from HBM with 16-byte loads, one chunk = 32 e2m1
// values = two 16-element scale blocks; b is decoded once per CTA into shared memory.
//   - decode: 8 e2m1 values of a 32-bit word -> 4 fp16x2 holding e2m1 * 2^-14 (exact)
//     in 13 integer ops (decode_e2m1x8); b is stored as fp16 b * 2^13 (exact), so that
//     one HFMA2 gives a*b/2.
//   - per scale block each fp16 lane sums 8 products a*b/2 in an HFMA2 chain. Exact:
//     e2m1 values are multiples of 1/2 up to 6, so a*b/2 is a multiple of 1/8 up to 18,
//     and 8 of them (<= 144) are multiples of 1/8 below 256 = 2^11 / 8: fp16 holds them
//     exactly (docs/design.md "Numerics").
//   - the two lanes' sums -> fp32, times sa*sb (exact in fp32: 4 + 4 significant bits),
//     accumulated in fp32 with one rounding per block (FFMA); c = acc * 2 * alpha.
// Mapping. 256 threads = 8 warps; a warp owns R rows, K is split over WK warps of the
// CTA (kRegShapes in plan.hpp: 32 rows per CTA down to 1 row split 8 ways, chosen so
// that there is a CTA for every SM). A lane takes every (32 * WK)-th chunk, U chunks
// per stage, in two register stages (loads of stage i+1 in flight while stage i is
// computed; predicated PTX loads so that no stage is ever copied). b is decoded in
// tiles of 512 chunks (16384 elements, 36 KB). Reduction: warp shuffles, then shared
// memory over the WK warps; no atomics, deterministic.
// Cost (bench/NOTES.md "GEMV (sm90a)", H200): ~93 issue slots per chunk and row (52
// decoding, 16 HFMA2, 13 of fp32 block-scale work, the rest loads and loop), so the
// kernel is issue bound at 2.5-2.9 TB/s on large shapes: hence the MMA kernel there.
// Small M*L is latency bound (one DRAM round trip + launch: 1x4096x1 2.9 µs back to
// back with PDL).
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <string.h>

#include "../ptx.cuh"
#include "common.cuh"
#include "plan.hpp"

namespace nvfp4::sm90::gemv_detail {

// ---------------------------------------------------------------------------------
// Decoding and the per-chunk dot product
// ---------------------------------------------------------------------------------

// 8 e2m1 nibbles of `w` -> 4 fp16x2, each value = e2m1 * 2^-14 (exact).
// Output pairs (elements of the word): h0 = (0, 4), h1 = (1, 5), h2 = (2, 6), h3 = (3, 7).
// With the nibbles isolated in the top half of each byte (t = nibble << 4 in every
// byte, zeros elsewhere), (t >> 3) holds a magnitude at bits 9..11 / 25..27 and a
// zero at 15 / 31, and t holds the sign at 15 / 31 and zeros at 9..11 / 25..27; so
// ((t >> 3) | t) & 0x8E008E00 is the pair from bytes 1 and 3, and the same with t
// shifted left by 8 the pair from bytes 0 and 2. 13 integer ops per 8 values.
__device__ __forceinline__ void decode_e2m1x8(uint32_t w, uint32_t (&h)[4]) {
  // Written in PTX so that the compiler keeps this 13-instruction form (left to
  // itself it rewrites the masks into a 16-instruction one).
  asm("{\n\t"
      ".reg .b32 to, te, x, y;\n\t"
      "and.b32 to, %4, 0xF0F0F0F0;\n\t"          // nibbles 1,3,5,7 at bits 4..7 of each byte
      "shl.b32 te, %4, 4;\n\t"
      "and.b32 te, te, 0xF0F0F0F0;\n\t"          // nibbles 0,2,4,6
      "shl.b32 x, te, 5;\n\t"
      "shl.b32 y, te, 8;\n\t"
      "lop3.b32 %0, x, y, 0x8E008E00, 0xA8;\n\t"  // (x | y) & 0x8E008E00
      "shl.b32 x, to, 5;\n\t"
      "shl.b32 y, to, 8;\n\t"
      "lop3.b32 %1, x, y, 0x8E008E00, 0xA8;\n\t"
      "shr.b32 x, te, 3;\n\t"
      "lop3.b32 %2, x, te, 0x8E008E00, 0xA8;\n\t"
      "shr.b32 x, to, 3;\n\t"
      "lop3.b32 %3, x, to, 0x8E008E00, 0xA8;\n\t"
      "}"
      : "=r"(h[0]), "=r"(h[1]), "=r"(h[2]), "=r"(h[3])
      : "r"(w));
}

__device__ __forceinline__ __half2 as_h2(uint32_t u) {
  __half2 h;
  memcpy(&h, &u, 4);
  return h;
}
__device__ __forceinline__ uint32_t as_u32(__half2 h) {
  uint32_t u;
  memcpy(&u, &h, 4);
  return u;
}

// One 16-byte chunk of a row (32 elements, 2 scale blocks) against the decoded b
// chunk: returns sum over the two blocks of (sum_16 a*b/2) * sa * sb, the inner sums
// exact; `acc` receives it with one rounding per block (FFMA).
__device__ __forceinline__ float chunk_dot(float acc, const uint4 a, const uint4 (&bq)[4],
                                           const float2 sb, uint32_t sf2) {
  uint32_t h[4];
  __half2 s0, s1;
  decode_e2m1x8(a.x, h);
  s0 = __hmul2(as_h2(h[0]), as_h2(bq[0].x));
  s0 = __hfma2(as_h2(h[1]), as_h2(bq[0].y), s0);
  s0 = __hfma2(as_h2(h[2]), as_h2(bq[0].z), s0);
  s0 = __hfma2(as_h2(h[3]), as_h2(bq[0].w), s0);
  decode_e2m1x8(a.y, h);
  s0 = __hfma2(as_h2(h[0]), as_h2(bq[1].x), s0);
  s0 = __hfma2(as_h2(h[1]), as_h2(bq[1].y), s0);
  s0 = __hfma2(as_h2(h[2]), as_h2(bq[1].z), s0);
  s0 = __hfma2(as_h2(h[3]), as_h2(bq[1].w), s0);
  decode_e2m1x8(a.z, h);
  s1 = __hmul2(as_h2(h[0]), as_h2(bq[2].x));
  s1 = __hfma2(as_h2(h[1]), as_h2(bq[2].y), s1);
  s1 = __hfma2(as_h2(h[2]), as_h2(bq[2].z), s1);
  s1 = __hfma2(as_h2(h[3]), as_h2(bq[2].w), s1);
  decode_e2m1x8(a.w, h);
  s1 = __hfma2(as_h2(h[0]), as_h2(bq[3].x), s1);
  s1 = __hfma2(as_h2(h[1]), as_h2(bq[3].y), s1);
  s1 = __hfma2(as_h2(h[2]), as_h2(bq[3].z), s1);
  s1 = __hfma2(as_h2(h[3]), as_h2(bq[3].w), s1);
  const __half2_raw sa =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(sf2 & 0xFFFFu), __NV_E4M3);
  const float2 saf = __half22float2(__half2(sa));
  const float2 f0 = __half22float2(s0);
  const float2 f1 = __half22float2(s1);
  acc = fmaf(f0.x + f0.y, saf.x * sb.x, acc);
  acc = fmaf(f1.x + f1.y, saf.y * sb.y, acc);
  return acc;
}

// ---------------------------------------------------------------------------------
// b -> shared memory, reductions
// ---------------------------------------------------------------------------------

// Decodes chunks [t0, t0 + tn) of b into shared memory: s_b[q][c] = the 4 fp16x2 of
// word q of chunk c (value * 2^13, in the A decoder's pairing), s_sb[c] = the two
// block scales in fp32. All threads of the CTA take part.
template <bool kAligned>
__device__ __forceinline__ void decode_b_tile(uint4* s_b, float2* s_sb, int tile_cap, const uint8_t* b_base,
                                              const uint8_t* sfb_base, bool sfb_blocked, int t0, int tn) {
  const __half2 k14 = __float2half2_rn(16384.0f), k13 = __float2half2_rn(8192.0f);
  for (int c = threadIdx.x; c < tn; c += blockDim.x) {
    const int64_t cg = static_cast<int64_t>(t0) + c;
    uint4 bw;
    if constexpr (kAligned) bw = __ldg(reinterpret_cast<const uint4*>(b_base + cg * 16));
    else bw = ld_bytes16(b_base + cg * 16);
    const uint32_t words[4] = {bw.x, bw.y, bw.z, bw.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t h[4];
      decode_e2m1x8(words[q], h);
      uint4 v;  // (b * 2^-14) * 2^14 * 2^13: both multiplications exact
      v.x = as_u32(__hmul2(__hmul2(as_h2(h[0]), k14), k13));
      v.y = as_u32(__hmul2(__hmul2(as_h2(h[1]), k14), k13));
      v.z = as_u32(__hmul2(__hmul2(as_h2(h[2]), k14), k13));
      v.w = as_u32(__hmul2(__hmul2(as_h2(h[3]), k14), k13));
      s_b[q * tile_cap + c] = v;
    }
    const uint32_t two = ld_bytes2(sfb_base + sf_chunk_offset(cg, sfb_blocked));
    const __half2_raw sb = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
    s_sb[c] = __half22float2(__half2(sb));
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
  return v;
}

// ---------------------------------------------------------------------------------
// The kernel
// ---------------------------------------------------------------------------------

template <int R, int U>
struct Stage {
  uint4 a[U][R];
  uint32_t sf[U][R];
};

// Predicated loads: nothing is read when `pred` is false (the destination keeps its
// old contents, which the caller then never uses).
template <bool kAligned>
__device__ __forceinline__ void load_a_pred(uint4& v, const uint8_t* p, bool pred) {
  if constexpr (kAligned) {
    ptx::ldg128_stream_pred(v, p, pred);
  } else {
    if (pred) v = ld_bytes16(p);
  }
}
template <bool kAligned>
__device__ __forceinline__ void load_sf2_pred(uint32_t& v, const uint8_t* p, bool pred) {
  if constexpr (kAligned) {
    ptx::ldg_u16_pred(v, p, pred);
  } else {
    if (pred) v = ld_bytes2(p);
  }
}

// CTA = 8 warps: kRegWarps / WK row groups of R rows, each row group's K split over WK
// warps. blockDim = kRegThreads; dynamic shared memory = the b tile (tile_cap chunks).
template <int R, int U, int WK, bool kAligned>
__global__ void __launch_bounds__(kRegThreads, (R * U <= 4 ? 2 : 1)) gemv_reg_kernel(const Args args) {
  static_assert(kRegWarps % WK == 0, "WK must divide the warp count");
  constexpr int kRowsPerCta = R * (kRegWarps / WK);
  constexpr int kSlot = 32 * WK;       // chunks between a lane's consecutive slots
  constexpr int kStep = kSlot * U;     // chunks consumed by the CTA's K-split per iteration

  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ float s_red[kRegWarps][R];

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int wk = warp % WK;
  const int wr = warp / WK;
  const int64_t l = blockIdx.x / args.groups_per_batch;
  const int64_t g = blockIdx.x - l * args.groups_per_batch;
  const int64_t row0 = g * kRowsPerCta + static_cast<int64_t>(wr) * R;

  const int tile_cap = args.tile_cap;
  uint4* s_b = reinterpret_cast<uint4*>(smem_raw);                                          // [4][tile_cap]
  float2* s_sb = reinterpret_cast<float2*>(smem_raw + 64 * static_cast<size_t>(tile_cap));  // [tile_cap]

  const bool sfa_blocked = args.sf_blocked != 0;
  // Scale bytes between a lane's consecutive slots (kSlot is even, so the blocked
  // offset (c/2)*512 + (c%2)*2 advances linearly too).
  const int64_t sf_slot = sfa_blocked ? static_cast<int64_t>(kSlot / 2) * 512 : kSlot * 2;

  // Rows past M read row 0 of the batch (valid memory); their results are dropped.
  const uint8_t* a_row[R];
  const uint8_t* sf_row[R];
  bool row_ok[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = row0 + r;
    row_ok[r] = row < args.M;
    const int64_t rr = row_ok[r] ? row : 0;
    a_row[r] = args.a + l * args.a_batch + rr * args.a_row;
    sf_row[r] = args.sfa + l * args.sfa_batch +
                sf_row_offset(rr, sfa_blocked, args.sfa_row, args.sfa_tile_row_bytes);
  }
  const int c_lane = wk * 32 + lane;  // tile-relative chunk of slot 0, iteration 0

  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;

  // Programmatic dependent launch: no global access before this.
  if (args.pdl != 0) {
    ptx::pdl_wait_primary();
    ptx::pdl_launch_dependents();
  }

  for (int t0 = 0; t0 < args.nchunks; t0 += tile_cap) {
    const int tn = min(tile_cap, args.nchunks - t0);
    const int n_it = (tn + kStep - 1) / kStep;
    const int64_t c0 = static_cast<int64_t>(t0) + c_lane;
    const uint8_t* pa[R];
    const uint8_t* ps[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      pa[r] = a_row[r] + c0 * 16;
      ps[r] = sf_row[r] + sf_chunk_offset(c0, sfa_blocked);
    }

    auto load_stage = [&](Stage<R, U>& st, int it) {
      const int64_t off_a = static_cast<int64_t>(it) * (kStep * 16);
      const int64_t off_s = static_cast<int64_t>(it) * U * sf_slot;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const bool cv = it * kStep + u * kSlot + c_lane < tn;
#pragma unroll
        for (int r = 0; r < R; ++r) {
          load_a_pred<kAligned>(st.a[u][r], pa[r] + off_a + u * kSlot * 16, cv);
          load_sf2_pred<kAligned>(st.sf[u][r], ps[r] + off_s + u * sf_slot, cv);
        }
      }
    };
    auto compute_stage = [&](const Stage<R, U>& st, int it) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int c = it * kStep + u * kSlot + c_lane;
        if (c < tn) {
          uint4 bq[4];
#pragma unroll
          for (int q = 0; q < 4; ++q) bq[q] = s_b[q * tile_cap + c];
          const float2 sb = s_sb[c];
          // Rows past M compute on row 0's data (no branch); their sums are dropped.
#pragma unroll
          for (int r = 0; r < R; ++r) acc[r] = chunk_dot(acc[r], st.a[u][r], bq, sb, st.sf[u][r]);
        }
      }
    };

    // Issue the first A loads before decoding b, so their latency overlaps it.
    Stage<R, U> s0, s1;
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        s0.a[u][r] = s1.a[u][r] = make_uint4(0, 0, 0, 0);
        s0.sf[u][r] = s1.sf[u][r] = 0;
      }
    load_stage(s0, 0);

    if (t0 > 0) __syncthreads();  // every warp is done reading the previous b tile
    decode_b_tile<kAligned>(s_b, s_sb, tile_cap, args.b + l * args.b_batch, args.sfb + l * args.sfb_batch,
                            args.sfb_blocked != 0, t0, tn);
    __syncthreads();

    // Two register stages, unrolled by two so that no stage is ever copied.
#pragma unroll 1
    for (int it = 0; it < n_it; it += 2) {
      load_stage(s1, it + 1);
      compute_stage(s0, it);
      load_stage(s0, it + 2);
      compute_stage(s1, it + 1);
    }
  }

  // Reduce over the lanes, then over the WK warps sharing the rows.
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = warp_sum(acc[r]);
  if constexpr (WK > 1) {
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r) s_red[warp][r] = acc[r];
    }
    __syncthreads();
    if (wk != 0) return;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float v = s_red[warp][r];
#pragma unroll
      for (int j = 1; j < WK; ++j) v += s_red[warp + j][r];
      acc[r] = v;
    }
  }
  if (lane != 0) return;
#pragma unroll
  for (int r = 0; r < R; ++r)
    if (row_ok[r]) store_out(args, l, row0 + r, acc[r], 2.0f);
}

}  // namespace nvfp4::sm90::gemv_detail
