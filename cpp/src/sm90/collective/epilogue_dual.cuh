// Epilogue of the fused sm90a dual GEMM (kernel/dual_gemm.cuh): the CTA's 128 (weight rows)
// x X (tokens: kTileXT = 128, or 32 / 64 / 96 for few tokens, dual_plan.hpp) fp32 tile holds A*B1^T in weight rows 0..63 and A*B2^T in rows 64..127 for
// the same 64 output columns n0..n0+63. After the split-K reduction across the cluster
// (distributed shared memory, fixed rank order: deterministic, as the GEMM's
// epilogue_cluster_reduce.cuh), each output is
//     out[l][m][n0 + r] = act(alpha1 * acc1) * (alpha2 * acc2),
//     acc1 = 2^28 * t[m][r], acc2 = 2^28 * t[m][64 + r]
// (2^28 undoes the decode's 2^-14 per operand, exactly), each product scaled by its alpha in
// fp32, the activation in fp32 (common/activation.hpp), one rounding to the output dtype:
// the numerics of the composed path (two fp32 GEMM outputs, then act * mul). The activation
// sees only the fully reduced sum (never a split's partial).
//
// Store: into a dense [X tokens][64 n] tile of the output dtype in shared memory (after the
// fp32 tile, inside the idle stage ring), then TMA stores of box_rows x 64 boxes (UTMASTG): the
// tensor map's dimensions clip the M and N tails. Where TMA cannot express the output
// (dual_plan.hpp: out_tma_compatible) the same values go out as predicated global stores.
// Split-K: CTA `rank` of S reduces and stores token rows [8 g0, 8 g1), g = rank * (X / 8) / S:
// whole 8-row groups so that its share is a whole number of store boxes (none where S > X / 8).
//
// Registers: every thread of the CTA runs this, the producer warpgroup at its 56-register cap
// (setmaxnreg), so S is a compile-time constant only for 1..4 (2 S float4 per unit in flight);
// 5..8 loop (the GEMM's epilogue spilled with S float4 at 5..8 in 48 registers).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "../../common/activation.hpp"
#include "../kernel/dual_gemm_params.cuh"
#include "../ptx.cuh"
#include "epilogue_cluster_reduce.cuh"

namespace nvfp4::sm90 {

template <int kTileXT>
struct EpilogueDualT {
  using Base = EpilogueClusterReduceT<kTileXT>;
  static constexpr int kTileN = 64, kTileX = kTileXT;
  static constexpr int kGroups = kTileX / 8;   // 8-row groups of the tile (split-K shares, store boxes)
  static constexpr int kPitch = Base::kPitch;  // floats per token row of the fp32 tile
  // The output tile [X][64] (at most 32 KB of fp32) after the fp32 tile, 1 KB aligned.
  static constexpr int kOutOffset = (Base::kSmemBytes + 1023) / 1024 * 1024;
  static constexpr int kSmemBytes = kOutOffset + kTileX * kTileN * 4;
  static constexpr uint32_t kTileBarrier = 2;  // named barrier id (1: the mainloop's ring-free barrier)

  static __device__ __forceinline__ float out_value(int32_t act, float acc1, float acc2, float alpha1,
                                                    float alpha2) {
    const float v1 = Base::output_value(acc1, alpha1), v2 = Base::output_value(acc2, alpha2);
    return activation(static_cast<nvfp4_activation_t>(act), v1) * v2;
  }

  // The S partial tiles' sums of the 4 accumulators of B1 (a) and of B2 (b) at byte offset
  // `off` of a token row.
  template <int S>
  static __device__ __forceinline__ void sum_pair(uint32_t tile_addr, uint32_t off, int splits, int rank,
                                                  float (&a)[4], float (&b)[4]) {
    constexpr uint32_t kHalf = kTileN * 4;  // B2's rows: 64 floats further in the token row
#pragma unroll
    for (int e = 0; e < 4; ++e) a[e] = b[e] = 0.f;
    if constexpr (S > 0) {
      float4 f[S], g[S];
#pragma unroll
      for (int q = 0; q < S; ++q) {
        if (q == rank) {
          f[q] = Base::lds_f4(tile_addr + off);
          g[q] = Base::lds_f4(tile_addr + off + kHalf);
        } else {
          // (mapa is a volatile asm after the cluster barrier, so the loads cannot move above it)
          const uint32_t remote = ptx::map_to_rank(tile_addr + off, static_cast<uint32_t>(q));
          f[q] = ptx::ld_dsmem_f4_batchable(remote);
          g[q] = ptx::ld_dsmem_f4_batchable(remote + kHalf);
        }
      }
#pragma unroll
      for (int q = 0; q < S; ++q) {
        a[0] += f[q].x; a[1] += f[q].y; a[2] += f[q].z; a[3] += f[q].w;
        b[0] += g[q].x; b[1] += g[q].y; b[2] += g[q].z; b[3] += g[q].w;
      }
    } else {
#pragma unroll 1
      for (int q = 0; q < splits; ++q) {
        float4 f, g;
        if (q == rank) {  // this CTA's own tile: plain shared-memory loads
          f = Base::lds_f4(tile_addr + off);
          g = Base::lds_f4(tile_addr + off + kHalf);
        } else {
          const uint32_t remote = ptx::map_to_rank(tile_addr + off, static_cast<uint32_t>(q));
          f = ptx::ld_dsmem_f4(remote);
          g = ptx::ld_dsmem_f4(remote + kHalf);
        }
        a[0] += f.x; a[1] += f.y; a[2] += f.z; a[3] += f.w;
        b[0] += g.x; b[1] += g.y; b[2] += g.z; b[3] += g.w;
      }
    }
  }

  // 4 outputs into the shared output tile (row-major [X][64] of the output dtype).
  static __device__ __forceinline__ void stage_out4(uint32_t out_addr, int32_t dtype, int xr, int wc,
                                                    const float (&v)[4]) {
    if (dtype == static_cast<int32_t>(DType::kFloat32)) {
      const uint32_t a = out_addr + static_cast<uint32_t>((xr * kTileN + wc) * 4);
      ptx::sts128(a, make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]),
                                __float_as_uint(v[3])));
      return;
    }
    uint32_t lo, hi;
    if (dtype == static_cast<int32_t>(DType::kFloat16)) {
      lo = Base::pack2(static_cast<__half*>(nullptr), v[0], v[1]);
      hi = Base::pack2(static_cast<__half*>(nullptr), v[2], v[3]);
    } else {
      lo = Base::pack2(static_cast<__nv_bfloat16*>(nullptr), v[0], v[1]);
      hi = Base::pack2(static_cast<__nv_bfloat16*>(nullptr), v[2], v[3]);
    }
    const uint32_t a = out_addr + static_cast<uint32_t>((xr * kTileN + wc) * 2);
    asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(a), "r"(lo), "r"(hi) : "memory");
  }

  // Rows [row_begin, row_begin + rows) of the tile: reduced, combined and staged (TMA) or
  // stored (plain).
  template <int S>
  static __device__ __forceinline__ void reduce_rows(const DualParams& p, uint32_t tile_addr, int rank,
                                                     int row_begin, int rows, int64_t n0, int64_t x0, int32_t l,
                                                     float alpha1, float alpha2) {
    const GemmParams& g = p.g;
    const bool tma = p.store == kDualStoreTma;
    const uint32_t out_addr = tile_addr + kOutOffset;
    const int units = rows * (kTileN / 4);
    const int64_t cbase = static_cast<int64_t>(l) * g.c_batch_stride;
    // S = 1 (a lone CTA): two units' shared-memory loads in flight; more splits keep one unit
    // (2 S float4 already)
#pragma unroll(S == 1 ? 2 : 1)
    for (int u = threadIdx.x; u < units; u += blockDim.x) {
      const int xr = row_begin + u / (kTileN / 4);
      const int wc = (u % (kTileN / 4)) * 4;
      const int64_t m = x0 + xr, n = n0 + wc;
      // (TMA: rows past M and columns past N are computed from stale tile words and clipped by the store)
      if (!tma && (m >= g.M || n >= g.N)) continue;
      float a[4], b[4];
      sum_pair<S>(tile_addr, static_cast<uint32_t>((xr * kPitch + wc) * 4), g.splits, rank, a, b);
      float v[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = out_value(p.act, a[e], b[e], alpha1, alpha2);
      if (tma) {
        stage_out4(out_addr, g.c_dtype, xr, wc, v);
      } else {
        const int64_t left = g.N - n;
        const int nvalid = left < 4 ? static_cast<int>(left) : 4;
        Base::store4(g, cbase + m * g.c_row_stride + n * g.c_col_stride, v, nvalid, g.c_vec4 && nvalid == 4);
      }
    }
  }

  // All threads of the CTA, after the consumers staged their fragments (Base::stage_fragment)
  // into `tile`. The S = p.g.splits tiles are in cluster ranks 0 .. S - 1.
  static __device__ __forceinline__ void reduce_and_store(const DualParams& p, const void* tmap_c, const float* tile,
                                                          int rank, int64_t n0, int64_t x0, int32_t l,
                                                          float alpha1, float alpha2) {
    const int splits = p.g.splits;
    const uint32_t ta = ptx::smem_u32(tile);
    const int g0 = rank * kGroups / splits, g1 = (rank + 1) * kGroups / splits;  // 8-row groups of this CTA
    const int row_begin = 8 * g0, rows = 8 * (g1 - g0);
    if (splits == 1)
      __syncthreads();  // a lone CTA: no cluster barrier (a GPU-scope MEMBAR each)
    else
      ptx::cluster_sync();  // all S tiles written
    switch (splits) {
      case 1: reduce_rows<1>(p, ta, rank, row_begin, rows, n0, x0, l, alpha1, alpha2); break;
      case 2: reduce_rows<2>(p, ta, rank, row_begin, rows, n0, x0, l, alpha1, alpha2); break;
      case 3: reduce_rows<3>(p, ta, rank, row_begin, rows, n0, x0, l, alpha1, alpha2); break;
      case 4: reduce_rows<4>(p, ta, rank, row_begin, rows, n0, x0, l, alpha1, alpha2); break;
      default: reduce_rows<0>(p, ta, rank, row_begin, rows, n0, x0, l, alpha1, alpha2); break;
    }
    if (p.store != kDualStoreTma) {
      // Remote reads of this tile finished (their values were consumed above: relaxed suffices)
      if (splits > 1) ptx::cluster_sync_relaxed();
      return;
    }
    ptx::fence_proxy_async_smem();  // this thread's st.shared before the TMA store reads them
    if (splits > 1) ptx::cluster_arrive_relaxed();  // done reading the other CTAs' tiles
    ptx::named_barrier_sync(kTileBarrier, blockDim.x);  // the output rows of every thread staged
    if (threadIdx.x == 0) {
      const int esize = p.g.c_dtype == static_cast<int32_t>(DType::kFloat32) ? 4 : 2;
      const int box = p.c_box_rows;
      for (int r = row_begin; r < row_begin + rows && x0 + r < p.g.M; r += box)
        ptx::tma_store_3d(tmap_c, ta + kOutOffset + static_cast<uint32_t>(r * kTileN * esize),
                          static_cast<int32_t>(n0), static_cast<int32_t>(x0 + r), l);
      ptx::bulk_commit_group();
      ptx::bulk_wait_group_read0();  // the stores have read the tile before the CTA exits
    }
    __syncwarp();  // warp 0 converged again before the aligned cluster barrier
    if (splits > 1) ptx::cluster_wait_acquire();  // the other CTAs are done reading this tile
  }
};
// The 128-token instance: also the decode kernel's act * mul (EpilogueDual::out_value).
using EpilogueDual = EpilogueDualT<128>;

}  // namespace nvfp4::sm90
