// Epilogue of the sm90a NVFP4 GEMM: fp32 accumulators -> shared memory -> split-K
// reduction across the CTAs of the cluster (distributed shared memory) -> alpha ->
// fp16/bf16/fp32 -> coalesced global stores (vectorized when the output rows are
// contiguous and aligned, else scalar; tails predicated).
//
// Every CTA stages its 128 x X fp32 tile (X = kTileXT tokens: 128, or 136 for the dense
// GEMM's wide instance, mainloop_rs_predecoded.cuh) as [token][weight row] (row pitch 132
// floats: the wgmma fragment stores are bank-conflict free), then after a cluster
// barrier CTA `rank` reduces tokens [rank*X/S, (rank+1)*X/S) over the S tiles in
// a fixed order (deterministic) and writes them. A second cluster barrier keeps
// every tile alive until all remote reads are done.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "../kernel/gemm_params.cuh"
#include "../ptx.cuh"

namespace nvfp4::sm90 {

template <int kTileXT>
struct EpilogueClusterReduceT {
  static constexpr int kTileW = 128, kTileX = kTileXT;
  static constexpr int kAccRegs = kTileX / 2;  // a consumer thread's wgmma fragment (fp32 values)
  static constexpr int kPitch = kTileW + 4;  // floats
  static constexpr int kSmemBytes = kTileX * kPitch * 4;

  // Consumer thread (ctid 0..255) writes its 64 x kTileX wgmma fragment.
  static __device__ __forceinline__ void stage_fragment(float* tile, int ctid, const float (&acc)[kAccRegs]) {
    const int cw = ctid >> 5, lane = ctid & 31;
    const int r0 = (cw >> 2) * 64 + (cw & 3) * 16 + (lane >> 2);
    const int t = lane & 3;
    const uint32_t base = ptx::smem_u32(tile);
#pragma unroll
    for (int j = 0; j < kTileX / 8; ++j) {
      const int x = 8 * j + 2 * t;
      ptx::sts_f32(base + 4u * (x * kPitch + r0), acc[4 * j + 0]);
      ptx::sts_f32(base + 4u * ((x + 1) * kPitch + r0), acc[4 * j + 1]);
      ptx::sts_f32(base + 4u * (x * kPitch + r0 + 8), acc[4 * j + 2]);
      ptx::sts_f32(base + 4u * ((x + 1) * kPitch + r0 + 8), acc[4 * j + 3]);
    }
  }

  // fp16 / bf16 stores of 4 values (vec: 8 contiguous bytes, else nvalid scalar stores).
  static __device__ __forceinline__ uint32_t pack2(__half*, float x, float y) {
    const __half2 h = __floats2half2_rn(x, y);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  static __device__ __forceinline__ uint32_t pack2(__nv_bfloat16*, float x, float y) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  static __device__ __forceinline__ __half to16(__half*, float x) { return __float2half_rn(x); }
  static __device__ __forceinline__ __nv_bfloat16 to16(__nv_bfloat16*, float x) { return __float2bfloat16_rn(x); }
  template <class H>
  static __device__ __forceinline__ void store4_16(H* c, const GemmParams& p, const float (&v)[4], int nvalid,
                                                   bool vec) {
    if (vec) {
      uint2 u;
      u.x = pack2(c, v[0], v[1]);
      u.y = pack2(c, v[2], v[3]);
      *reinterpret_cast<uint2*>(c) = u;
    } else {
      #pragma unroll
      for (int e = 0; e < 4; ++e)
        if (e < nvalid) c[e * p.c_col_stride] = to16(c, v[e]);
    }
  }

  static __device__ __forceinline__ void store4(const GemmParams& p, int64_t off, const float (&v)[4], int nvalid,
                                                bool vec) {
    if (p.c_dtype == 4 /*fp16*/) {
      store4_16(static_cast<__half*>(p.c) + off, p, v, nvalid, vec);
    } else if (p.c_dtype == 5 /*bf16*/) {
      store4_16(static_cast<__nv_bfloat16*>(p.c) + off, p, v, nvalid, vec);
    } else {
      float* c = static_cast<float*>(p.c) + off;
      if (vec) {
        *reinterpret_cast<float4*>(c) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
        #pragma unroll
        for (int e = 0; e < 4; ++e)
          if (e < nvalid) c[e * p.c_col_stride] = v[e];
      }
    }
  }

  // An accumulated value as output: (acc * 2^28) * alpha. 2^28 undoes the decode's 2^-14 per
  // operand (exact); then one rounding for alpha, as the reference does.
  static __device__ __forceinline__ float output_value(float acc, float alpha) {
    return (acc * 268435456.0f) * alpha;
  }

  // Four adjacent outputs (4-element aligned) as one store: 8 bytes (fp16 / bf16) or 16 (fp32).
  // (PTX vector stores: nvcc split uint2 / float4 assignments here into 4-byte stores.)
  template <class H>
  static __device__ __forceinline__ void store_row4(H* c, float v0, float v1, float v2, float v3) {
    ptx::stg64(c, pack2(c, v0, v1), pack2(c, v2, v3));
  }
  static __device__ __forceinline__ void store_row4(float* c, float v0, float v1, float v2, float v3) {
    ptx::stg128(c, make_uint4(__float_as_uint(v0), __float_as_uint(v1), __float_as_uint(v2), __float_as_uint(v3)));
  }

  // A tile with contiguous, 4-element-aligned output rows (c_vec4) and all its weight rows
  // inside N; tokens past M are skipped. A warp's fragment
  // holds, per group of 8 tokens j, 16 consecutive weight rows (n) of 8 tokens (m): lane
  // (g, t) has rows r + g and r + g + 8 of tokens 2t and 2t + 1. The four lanes g = 4b + i
  // (i = 0..3, same b and t; lanes 4 apart) transpose their 4 x 4 values in two shuffle
  // stages (lane masks 4 and 8), after which lane i holds rows r + 8 (i >> 1) + 4b .. + 3
  // of token 2t + (i & 1): one 4-output store per lane and j, and per store instruction a
  // warp writes 16 consecutive rows (32 bytes at fp16: whole sectors) of each of 8 tokens.
  // One pointer per thread, advanced by a constant per store. (The general loop below costs
  // ~35 instructions per output. Against the earlier two-output stores, which wrote half
  // sectors: ~1% less kernel time at locked clocks (H100, 4096^3 and 2048x14336x4096), while
  // a build with no epilogue stores at all ran 4096^3 6.6% faster: what the stores cost is
  // mostly their place between two tiles, not their bytes; bench/NOTES.md session 13.)
  template <class H>
  static __device__ __forceinline__ void store_fragment_quads(const GemmParams& p, int ctid,
                                                              const float (&acc)[kAccRegs],
                                                              int64_t w0, int64_t x0, int32_t l, float alpha) {
    const int cw = ctid >> 5, lane = ctid & 31;
    const int g = lane >> 2, t = lane & 3, i = g & 3;
    const bool odd = (i & 1) != 0, high = (i & 2) != 0;
    const int row = (cw >> 2) * 64 + (cw & 3) * 16 + 8 * (i >> 1) + 4 * (g >> 2);  // first of the lane's 4
    const int64_t m = x0 + 2 * t + (i & 1);  // the lane's token at j = 0
    H* c = static_cast<H*>(p.c) + static_cast<int64_t>(l) * p.c_batch_stride + m * p.c_row_stride + (w0 + row);
    const int64_t step = 8 * p.c_row_stride;  // next j: 8 tokens on
    // tokens past M (a partial last token tile) are not stored; the shuffles still run in every lane
    const int64_t jm = p.M - m;  // j < jm / 8 (j * 8 < jm) stores
#pragma unroll
    for (int j = 0; j < kTileX / 8; ++j) {
      // element k = 2h + e: row r + g + 8h, token 2t + e
      float v0 = acc[4 * j], v1 = acc[4 * j + 1], v2 = acc[4 * j + 2], v3 = acc[4 * j + 3];
      float r = __shfl_xor_sync(0xFFFFFFFFu, odd ? v0 : v1, 4);  // stage 1: elements (0, 1), (2, 3)
      if (odd) v0 = r; else v1 = r;
      r = __shfl_xor_sync(0xFFFFFFFFu, odd ? v2 : v3, 4);
      if (odd) v2 = r; else v3 = r;
      r = __shfl_xor_sync(0xFFFFFFFFu, high ? v0 : v2, 8);  // stage 2: elements (0, 2), (1, 3)
      if (high) v0 = r; else v2 = r;
      r = __shfl_xor_sync(0xFFFFFFFFu, high ? v1 : v3, 8);
      if (high) v1 = r; else v3 = r;
      if (8 * j < jm)
        store_row4(c, output_value(v0, alpha), output_value(v1, alpha), output_value(v2, alpha),
                   output_value(v3, alpha));
      c += step;
    }
  }

  // Consumer thread ctid: its 64 x kTileX wgmma fragment straight to C (no shared memory, no
  // barrier: the persistent kernels' producer is already filling the ring with the next
  // tile). Tiles with all their weight rows inside N and aligned contiguous rows by fours
  // (store_fragment_quads above; a partial last token tile too, its missing tokens skipped:
  // through the per-output loop below, ~35 instructions per output, 320x7168^2's half-full
  // tiles took it to 94.4 µs against 78.4 by fours, H100 graph, bench/NOTES.md session 17);
  // otherwise one store per output, predicated (per store instruction a warp writes 8
  // consecutive weight rows (n) of 4 tokens).
  static __device__ __forceinline__ void store_fragment(const GemmParams& p, int ctid, const float (&acc)[kAccRegs],
                                                        int64_t w0, int64_t x0, int32_t l, float alpha) {
    if (p.c_vec4 && w0 + kTileW <= p.N) {  // (uniform over the CTA)
      if (p.c_dtype == 4 /*fp16*/) {
        store_fragment_quads<__half>(p, ctid, acc, w0, x0, l, alpha);
        return;
      }
      if (p.c_dtype == 5 /*bf16*/) {
        store_fragment_quads<__nv_bfloat16>(p, ctid, acc, w0, x0, l, alpha);
        return;
      }
      store_fragment_quads<float>(p, ctid, acc, w0, x0, l, alpha);
      return;
    }
    const int cw = ctid >> 5, lane = ctid & 31;
    const int r0 = (cw >> 2) * 64 + (cw & 3) * 16 + (lane >> 2);
    const int t = lane & 3;
    const int64_t cbase = static_cast<int64_t>(l) * p.c_batch_stride;
#pragma unroll
    for (int j = 0; j < kTileX / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t m = x0 + 8 * j + 2 * t + (e & 1), n = w0 + r0 + 8 * (e >> 1);
        if (m >= p.M || n >= p.N) continue;
        const float v[4] = {output_value(acc[4 * j + e], alpha), 0.f, 0.f, 0.f};
        store4(p, cbase + m * p.c_row_stride + n * p.c_col_stride, v, 1, false);
      }
    }
  }

  // A float4 of this CTA's staged tile.
  static __device__ __forceinline__ float4 lds_f4(uint32_t addr) {
    const uint4 o = ptx::lds128(addr);
    return make_float4(__uint_as_float(o.x), __uint_as_float(o.y), __uint_as_float(o.z), __uint_as_float(o.w));
  }

  // This CTA's rows of the tile (rank * kTileX / S .. (rank + 1) * kTileX / S; S need not
  // divide kTileX), summed over the S split tiles in rank order (deterministic), scaled and stored.
  // A thread's unit is 4 adjacent weight rows of one token. Consecutive threads take
  // consecutive weight rows where C's rows are contiguous, consecutive tokens where its columns
  // are (c_row_stride == 1: the problems gemm_plan.hpp swap_roles runs as Cᵀ = B·Aᵀ), so a
  // warp's store covers 32 contiguous outputs either way (the shared-memory reads stay
  // conflict-free: the 132-float pitch puts 8 consecutive tokens in 8 different bank quads).
  // S > 0: the split count at compile time, so a unit's S loads (S - 1 of them remote) are
  // all issued before the first add, and the DSMEM loads of two unrolled units may go out
  // together; with S a run-time loop bound they went out one at a time (together with alpha
  // read before the main loop: 0.6-1.2 µs off the split shapes, H100, bench/NOTES.md "the
  // split-K epilogue"). S == 0: the count `splits` at run time: 1 (a lone CTA reads its own tile) and
  // 5..8, whose S float4 per unit spilled in the 48-register transform warps.
  template <int S>
  static __device__ __forceinline__ void reduce_rows(const GemmParams& p, uint32_t tile_addr, int splits, int rank,
                                                     int64_t w0, int64_t x0, int32_t l, float alpha) {
    const int ns = S > 0 ? S : splits;
    const int row_begin = rank * kTileX / ns;
    const int rows = (rank + 1) * kTileX / ns - row_begin;
    const int units = rows * (kTileW / 4);
    const int64_t cbase = static_cast<int64_t>(l) * p.c_batch_stride;
    const bool by_token = p.c_row_stride == 1 && !p.c_vec4;
#pragma unroll(S > 0 ? 2 : 1)
    for (int u = threadIdx.x; u < units; u += blockDim.x) {
      const int xr = row_begin + (by_token ? u % rows : u / (kTileW / 4));
      const int wc = (by_token ? u / rows : u % (kTileW / 4)) * 4;
      const int64_t m = x0 + xr, n = w0 + wc;
      if (m >= p.M || n >= p.N) continue;
      const uint32_t off = static_cast<uint32_t>((xr * kPitch + wc) * 4);
      float v[4] = {0.f, 0.f, 0.f, 0.f};
      if constexpr (S > 0) {
        float4 f[S];
#pragma unroll
        for (int q = 0; q < S; ++q) {
          if (q == rank) {
            f[q] = lds_f4(tile_addr + off);
          } else {
            // (mapa is a volatile asm after the cluster barrier, so the loads cannot move above it)
            f[q] = ptx::ld_dsmem_f4_batchable(ptx::map_to_rank(tile_addr + off, static_cast<uint32_t>(q)));
          }
        }
#pragma unroll
        for (int q = 0; q < S; ++q) {
          v[0] += f[q].x; v[1] += f[q].y; v[2] += f[q].z; v[3] += f[q].w;
        }
      } else if (ns == 1) {
        const float4 f = lds_f4(tile_addr + off);
        v[0] = f.x; v[1] = f.y; v[2] = f.z; v[3] = f.w;
      } else {
        for (int q = 0; q < ns; ++q) {
          float4 f;
          if (q == rank) {  // this CTA's own tile: a plain shared-memory load
            f = lds_f4(tile_addr + off);
          } else {
            f = ptx::ld_dsmem_f4(ptx::map_to_rank(tile_addr + off, static_cast<uint32_t>(q)));
          }
          v[0] += f.x; v[1] += f.y; v[2] += f.z; v[3] += f.w;
        }
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = output_value(v[e], alpha);
      const int64_t left = p.N - n;
      const int nvalid = left < 4 ? static_cast<int>(left) : 4;
      store4(p, cbase + m * p.c_row_stride + n * p.c_col_stride, v, nvalid, p.c_vec4 && nvalid == 4);
    }
  }

  // All threads of the CTA. `tile` = this CTA's staged fp32 tile (already written and
  // visible CTA-wide). The S tiles are in cluster ranks 0 .. S - 1. The result is
  // (acc * 2^28) * alpha: 2^28 undoes the decode's 2^-14 per operand.
  static __device__ __forceinline__ void reduce_and_store(const GemmParams& p, const float* tile, int splits,
                                                          int rank, int64_t w0, int64_t x0, int32_t l,
                                                          float alpha) {
    const uint32_t ta = ptx::smem_u32(tile);
    if (splits >= 2 && splits <= 4) {
      ptx::cluster_sync();  // all S tiles written
      switch (splits) {
        case 2: reduce_rows<2>(p, ta, splits, rank, w0, x0, l, alpha); break;
        case 3: reduce_rows<3>(p, ta, splits, rank, w0, x0, l, alpha); break;
        default: reduce_rows<4>(p, ta, splits, rank, w0, x0, l, alpha); break;
      }
      ptx::cluster_sync_relaxed();  // see below
      return;
    }
    // A lone CTA (splits == 1: the large-M case) needs no cluster barrier (each compiles
    // to a GPU-scope MEMBAR) and reads its tile from its own smem.
    const bool solo = splits == 1;
    if (solo)
      __syncthreads();
    else
      ptx::cluster_sync();  // all S tiles written
    reduce_rows<0>(p, ta, splits, rank, w0, x0, l, alpha);
    // Remote reads of this tile finished. Their values were consumed above, so a relaxed
    // arrive suffices: a release arrive compiles to a GPU-scope MEMBAR that would also wait
    // for this thread's C stores to drain (measured: -0.7..-1.4% per GEMM call).
    if (!solo) ptx::cluster_sync_relaxed();
  }
};

// The 128-token tile's epilogue (every kernel of the family; the dual epilogue builds on it).
using EpilogueClusterReduce = EpilogueClusterReduceT<128>;

}  // namespace nvfp4::sm90
