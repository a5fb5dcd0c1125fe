// Hopper (sm90a) NVFP4 GEMV:  c[l, m] = alpha * sum_k A[l, m, k] * B[l, 0, k].
//
// Memory bound: A (+ its scales) is streamed once at HBM speed; everything else is
// small. Two kernels (DESIGN.md §8 "GEMV"):
//   - gemv_mma_kernel (the large shapes: M >= 128, M*L >= 4096 rows or >= 1024 where
//     the register kernel would split K 4-8 ways; 16-byte aligned operands): the
//     products and the per-scale-block sums run on the int8 tensor cores (mma.sync
//     m16n8k32, exact in int32) on A split into the magnitudes of its positive and of
//     its negative values with prmt table lookups; each warp streams 16 rows through
//     its own shared-memory ring filled with cp.async. Details and numerics at the kernel.
//   - gemv_reg_kernel (everything else: small M*L, misaligned operands): e2m1 ->
//     fp16 with integer ops, exact fp16 HFMA2 chains per block; 16-byte
//     non-allocating loads into a register double buffer; K split across the warps
//     of a CTA (WK) when M*L is small, so that there are enough CTAs for the SMs.
//   - Both: b decoded once per CTA into shared memory; fp32 accumulation with one
//     rounding per scale block; warp-shuffle (+ shared-memory) reductions. No
//     workspace, no atomics, deterministic.
//   - Both are launched as programmatic dependents (PDL): launch and CTA start-up
//     overlap the preceding grid's tail; no global memory is touched before
//     griddepcontrol.wait (the MMA kernel only issues L2 prefetches of its first
//     stage, a hint). The MMA kernel may split each task's K over a thread-block
//     cluster of 2 CTAs (partials summed through distributed shared memory in rank
//     order, still deterministic) where the grid would leave SMs idle.
// Status and measurements: bench/NOTES.md "GEMV (sm90a)".
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
#include <cmath>

#include "../backends.hpp"
#include "../common/cuda_check.hpp"
#include "../common/formats.h"
#include "../problem.hpp"
#include "ptx.cuh"

namespace nvfp4::sm90 {

nvfp4_status_t gemv(const GemmProblem& p, const Exec& exec);

namespace gemv_detail {

// The streaming load of A (a macro only so that the standalone benchmarks can try
// other cache hints).
#ifndef NVFP4_GEMV_LDG_A
#define NVFP4_GEMV_LDG_A "ld.global.nc.L1::no_allocate.L2::256B"
#endif

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTileChunksMax = 512;         // b chunks (32 K elements) per smem tile
constexpr int kSmemBytesPerChunk = 4 * 16 + 8;  // 4 x (4 fp16x2) values + 2 fp32 scales

struct Args {
  int64_t M;
  int32_t nchunks;          // K / 32
  int32_t tile_cap;         // min(nchunks, kTileChunksMax): smem row pitch in chunks
  int64_t groups_per_batch; // CTAs per batch
  int64_t tasks_per_batch;  // MMA kernel: warp tasks (16 rows each) per batch
  int32_t tiles_k;          // ceil(K / 64): blocked-layout scale tiles per 128-row block
  const uint8_t* a;
  int64_t a_row, a_batch;
  const uint8_t* b;
  int64_t b_batch;
  const uint8_t* sfa;
  int64_t sfa_row, sfa_batch;
  int64_t sfa_tile_row_bytes;  // blocked: 512 * ceil(K/64) bytes per 128-row block
  const uint8_t* sfb;
  int64_t sfb_batch;
  int32_t sf_blocked;          // sfa layout is blocked
  int32_t sfb_blocked;         // sfb layout is blocked
  int32_t prefetch_stages;     // MMA kernel: L2 prefetch distance beyond the ring, in stages
  int32_t cluster_k;           // MMA kernel: CTAs of a thread-block cluster splitting each task's K
  int32_t stages_per_cta;      // MMA kernel: K stages of one cluster rank (ceil(stages / cluster_k))
  int32_t pdl;                 // launched as a programmatic dependent (1); MMA kernel: + L2 prefetch
                               // of the first pdl - 1 stages before griddepcontrol.wait (>= 2)
  float alpha;
  const float* alpha_ptr;
  void* c;
  int32_t c_dtype;             // DType
  int64_t c_row, c_batch;
};

// ---------------------------------------------------------------------------------
// Decoding
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
// Loads
// ---------------------------------------------------------------------------------

// Byte-wise fallbacks for operands whose base or strides are not aligned.
__device__ __forceinline__ uint32_t ld_bytes4(const uint8_t* p) {
  return static_cast<uint32_t>(__ldg(p)) | (static_cast<uint32_t>(__ldg(p + 1)) << 8) |
         (static_cast<uint32_t>(__ldg(p + 2)) << 16) | (static_cast<uint32_t>(__ldg(p + 3)) << 24);
}
__device__ __forceinline__ uint4 ld_bytes16(const uint8_t* p) {
  return make_uint4(ld_bytes4(p), ld_bytes4(p + 4), ld_bytes4(p + 8), ld_bytes4(p + 12));
}
__device__ __forceinline__ uint32_t ld_bytes2(const uint8_t* p) {
  return static_cast<uint32_t>(__ldg(p)) | (static_cast<uint32_t>(__ldg(p + 1)) << 8);
}

// Byte offset of the scale pair of chunk `chunk` (scale columns 2*chunk, 2*chunk+1)
// relative to the row's base: linear 2*chunk; blocked (chunk/2)*512 + (chunk%2)*2.
__device__ __forceinline__ int64_t sf_chunk_offset(int64_t chunk, bool blocked) {
  return blocked ? (chunk >> 1) * 512 + (chunk & 1) * 2 : chunk * 2;
}
// Byte offset of row r's scales (column 0) inside one batch.
__device__ __forceinline__ int64_t sf_row_offset(int64_t r, bool blocked, int64_t row_stride,
                                                 int64_t tile_row_bytes) {
  return blocked ? (r >> 7) * tile_row_bytes + (r & 31) * 16 + ((r & 127) >> 5) * 4 : r * row_stride;
}

// ---------------------------------------------------------------------------------
// Shared pieces of both kernels
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

// c = acc * factor * alpha (factor: the kernel's fixed scaling of its sums).
__device__ __forceinline__ void store_out(const Args& args, int64_t l, int64_t row, float acc, float factor) {
  const float v = acc * factor * (args.alpha_ptr ? *args.alpha_ptr : args.alpha);
  const int64_t off = l * args.c_batch + row * args.c_row;
  switch (args.c_dtype) {
    case static_cast<int32_t>(DType::kFloat16):
      static_cast<__half*>(args.c)[off] = __float2half_rn(v);
      break;
    case static_cast<int32_t>(DType::kBFloat16):
      static_cast<__nv_bfloat16*>(args.c)[off] = __float2bfloat16_rn(v);
      break;
    default:
      static_cast<float*>(args.c)[off] = v;
      break;
  }
}

// ---------------------------------------------------------------------------------
// gemv_mma_kernel: int8 tensor-core MMA on exactly decoded values, per-warp cp.async rings
// ---------------------------------------------------------------------------------
//
// Why: the HFMA2 kernel spends ~93 issue slots per 16-byte chunk and row (52 of them
// decoding e2m1 to fp16 pairs, 29 on fp16 products and the fp32 block-scale chain) and
// is bound by instruction issue at ~2.5-2.9 TB/s. Here the products and their sums
// per scale block run on the tensor cores (IMMA m16n8k32, exact in int32) and the
// decode writes 4 values per register instead of 2.
//
// Numerics (exact up to the fp32 accumulation, DESIGN.md §3):
//   2a = P - N for each A element a, P = 2|a| for a > 0 (else 0), N = 2|a| for a < 0
//   (else 0), both u8 0..12; b' = 2b (s8, -12..12). Per (row, 16-element scale block)
//   two MMAs accumulate sum P*b' and sum N*b' (exact int32); D = their difference
//   = 4 * sum a*b exactly.
//   acc += float(D) * (sa * sb)   (sa*sb exact in fp32: 4+4 significant bits; the
//   product D*(sa*sb) exact: <= 12+8 bits; one rounding per block in the FFMA).
//   c = acc * alpha / 4.
//
// Decode of A (7 integer ops per 8 values, prmt table lookups; decode_e2m1x8_pn):
//   prmt's default mode selects byte (nibble & 7) of an 8-byte table, or, when the
//   selector nibble's bit 3 is set (the e2m1 sign bit), the sign of that byte
//   replicated. With the table M[m] = v(m) = 2|e2m1(m)| in {0,1,2,3,4,6,8,12} (sign
//   bits clear), P = prmt(M, w) and N = prmt(M, w ^ 0x88888888). prmt reads the low 16
//   bits of the selector only: the high half of a word takes a shift. Twice the MMAs
//   of a single offset-coded operand (A' = 12 + 2a from two tables and ~(R & S): 9
//   ops, and a -12 * sum b' correction as the MMA's C), but 22% fewer integer ops,
//   which is what the SM is short of here (bench/NOTES.md gemv10: 1-4% faster on the
//   benchmark shapes, H100 and H200).
//
// MMA mapping (warp task = 16 rows; lane (g, t) = (lane / 4, lane % 4)):
//   MMA row m is matrix row base + (m & 3) + 32 * (m >> 2), so that in the blocked
//   scale layout the 16 rows' scales of one 64-element K tile are 64 contiguous bytes.
//   A step covers 4 consecutive chunks (16 B = 32 elements each); lane (g, t) works on
//   chunk c_t = 4 * step + t of rows g and g + 8, in 4 MMAs (jw = word 0..3 of the chunk):
//     A regs: a0/a2 = low/high 4 values of word jw of row g, a1/a3 the same of row g + 8.
//     B (32 x 8): column n = 2t + (jw >= 2) holds lane t's b values of word jw in the
//     k-slots of quad lane t, zero elsewhere. So D column 2t is block 0 of chunk c_t,
//     column 2t + 1 is block 1: every D element is one (row, block) partial.
//   B fragments: only lane (2t, t) (words 0,1) and lane (2t + 1, t) (words 2,3) are
//   non-zero; b is decoded once per CTA into shared memory (32 B of b' per chunk in
//   natural order, {sb0, sb1}), and the other lanes read a zero vector.
//   Lane (g, t) then holds D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]: exactly the
//   two blocks of its own chunk for its two rows, whose A scales it reads as 2-byte pairs.
//
// Memory: each warp streams its 16 rows through its own ring of D stages in shared
// memory, SC chunks (16*SC bytes) of each row per stage, filled with 16-byte cp.async
// (LPR lanes per row, so one copy instruction moves whole 128-byte lines of 32 / LPR
// rows; plus one 16-byte piece of scales per lane). Even and odd rows are laid out 64
// bytes apart modulo 128 so that the 16-byte reads of a quarter warp (rows g and g + 1)
// hit all 32 banks once. K may be split across the warps of a CTA (KS, stages
// interleaved), reduced through shared memory; b is decoded per CTA in tiles of 512
// chunks (CTA-wide barrier between tiles; the rings keep running across it).
// Measured (H200, bench/NOTES.md "GEMV (sm90a)"): ~60 instructions per chunk and row
// (was ~93) but 1.3-2.0x the copy SOL: the copies alone (no math) already take
// 1.17-1.61x, so the access side, not issue, is the limit now. PDL (launch overlap,
// -2.0..-2.6 µs on the benchmark shapes back to back) brought 1.21-1.69x.
// Cluster split (cluster_k CTAs of a cluster take consecutive K ranges of the same
// tasks; rank 0 adds the others' partials, which they store into its shared memory):
// chosen only for grids that would leave SMs idle (see choose_mma_shape).

constexpr int kMmaRows = 16;               // rows per warp task
constexpr int kMmaTileChunks = 512;        // b tile (chunks): all of b for K <= 16384
constexpr int kMmaMaxWarps = 8;
constexpr int kMmaMaxCluster = 4;           // CTAs splitting one task's K (thread-block cluster)
// The largest cluster K split that the automatic choice may take (forced requests: any).
#ifndef NVFP4_SM90_GEMV_AUTO_CLUSTER
#define NVFP4_SM90_GEMV_AUTO_CLUSTER 2
#endif
constexpr int kAutoMaxCluster = NVFP4_SM90_GEMV_AUTO_CLUSTER;
constexpr int kMinClusterStages = 6;
constexpr int kMmaBChunkBytes = 32 + 8;  // b', {sb0, sb1}

__host__ __device__ constexpr int mma_rows_bytes(int sc) { return 16 * sc * 8; }        // 8 rows of a stage
__host__ __device__ constexpr int mma_odd_rows(int sc) { return mma_rows_bytes(sc) + 64; }
__host__ __device__ constexpr int mma_stage_a(int sc) { return mma_odd_rows(sc) + mma_rows_bytes(sc); }
__host__ __device__ constexpr int mma_stage_bytes(int sc) { return mma_stage_a(sc) + 32 * sc; }
// The 16-byte zero vector sits after the decoded b tile; the rings after that.
__host__ __device__ inline uint32_t mma_zero_offset(int tile_cap) {
  return (static_cast<uint32_t>(tile_cap) * kMmaBChunkBytes + 15) / 16 * 16;
}
__host__ __device__ inline size_t mma_b_region_bytes(int tile_cap) {
  return (mma_zero_offset(tile_cap) + 16 + 127) / 128 * 128;
}
inline size_t mma_smem_bytes(int sc, int tile_cap, int warps, int depth) {
  return mma_b_region_bytes(tile_cap) + static_cast<size_t>(warps) * depth * mma_stage_bytes(sc);
}

// 8 e2m1 values of `w` -> the u8 magnitudes 2|value| of its positive values (p) and of
// its negative values (n), 0 elsewhere; lo = elements 0..3, hi = 4..7 (see above).
constexpr uint32_t kMagLo = 0x03020100u, kMagHi = 0x0C080604u;  // 2|v| for codes 0..7
__device__ __forceinline__ void decode_e2m1x8_pn(uint32_t w, uint32_t& plo, uint32_t& phi, uint32_t& nlo,
                                                 uint32_t& nhi) {
  asm("{\n\t"
      ".reg .b32 x, wh, xh;\n\t"
      "xor.b32 x, %4, 0x88888888;\n\t"
      "shr.u32 wh, %4, 16;\n\t"
      "shr.u32 xh, x, 16;\n\t"
      "prmt.b32 %0, %5, %6, %4;\n\t"
      "prmt.b32 %1, %5, %6, wh;\n\t"
      "prmt.b32 %2, %5, %6, x;\n\t"
      "prmt.b32 %3, %5, %6, xh;\n\t"
      "}"
      : "=r"(plo), "=r"(phi), "=r"(nlo), "=r"(nhi)
      : "r"(w), "r"(kMagLo), "r"(kMagHi));
}

__device__ __forceinline__ void imma_16832(uint4& d, const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(d.x), "+r"(d.y), "+r"(d.z), "+r"(d.w)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Shared-memory loads: lds128 and lds_u16 from ptx.cuh, the pair of floats here.
using ptx::lds128;
using ptx::lds_u16;
__device__ __forceinline__ float2 lds_f2(uint32_t addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(addr));
  return v;
}

// cp.async (16 bytes, L2 only) to a shared-window address.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* gmem) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void prefetch_l2(const void* gmem) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(gmem));
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Thread-block cluster (K split over the CTAs of a cluster) and programmatic dependent launch
// (cluster_ctarank, pdl_wait_primary, pdl_launch_dependents: ptx.cuh).
using ptx::cluster_ctarank;
using ptx::pdl_launch_dependents;
using ptx::pdl_wait_primary;
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait_acquire() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Stores v at the same shared-memory offset as `local` in the CTA of cluster rank `rank`.
__device__ __forceinline__ void st_cluster_f32(const void* local, uint32_t rank, float v) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(local));
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
}

// b chunks [t0, t0 + tn) -> shared memory: s_bq[c] = the 32 bytes b' = 2b (s8, natural
// element order), s_bs[c] = the two block scales in fp32.
__device__ __forceinline__ void decode_b_tile_mma(uint4* s_bq, float2* s_bs, const uint8_t* b_base,
                                                  const uint8_t* sfb_base, bool sfb_blocked, int t0, int tn) {
  for (int c = threadIdx.x; c < tn; c += blockDim.x) {
    const int64_t cg = static_cast<int64_t>(t0) + c;
    const uint4 bw = __ldg(reinterpret_cast<const uint4*>(b_base + cg * 16));
    const uint32_t words[4] = {bw.x, bw.y, bw.z, bw.w};
    uint32_t o[8];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t plo, phi, nlo, nhi;
      decode_e2m1x8_pn(words[q], plo, phi, nlo, nhi);
      o[2 * q] = __vsub4(plo, nlo);  // 2b = P - N per byte (s8)
      o[2 * q + 1] = __vsub4(phi, nhi);
    }
    s_bq[2 * c] = make_uint4(o[0], o[1], o[2], o[3]);
    s_bq[2 * c + 1] = make_uint4(o[4], o[5], o[6], o[7]);
    const uint32_t two = ld_bytes2(sfb_base + sf_chunk_offset(cg, sfb_blocked));
    const __half2_raw sb = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
    s_bs[c] = __half22float2(__half2(sb));
  }
}

// Per-lane shared-memory addresses of the consumer side (see the mapping above).
struct MmaLaneAddrs {
  uint32_t a;        // row g, chunk t of a stage (row g + 8: + 4 rows)
  uint32_t sf;       // scale pair of row g, chunk t (row g + 8: + sf_r8)
  uint32_t b1, b2;   // b' words 0,1 / 2,3 of chunk t of the tile, or the zero vector
  uint32_t b1_step, b2_step;  // per chunk (0 for the zero vector)
  uint32_t bs;       // {sb0, sb1} of chunk t of the tile
};

// One step: chunks cs + t (tile-relative) of rows g, g + 8 from stage `st`, whose A scale
// pairs of rows g / g + 8 lie at st + ad.sf + kSfU * u (+ kSfR8).
// kCheck: the stage is partial (only chunks < nc of it exist).
template <int SC, bool kBlocked, bool kCheck>
__device__ __forceinline__ void mma_step(const MmaLaneAddrs& ad, uint32_t st, int u, int cs, int t, int nc,
                                         float& acc0, float& acc1) {
  constexpr uint32_t kSfU = kBlocked ? 128u : 8u, kSfR8 = kBlocked ? 8u : 16u * SC;  // per step / row g -> g + 8
  constexpr uint32_t kA8 = 4 * 16 * SC;  // row g -> row g + 8 in a stage
  const uint4 x = lds128(st + ad.a + 64 * u);
  const uint4 y = lds128(st + ad.a + kA8 + 64 * u);
  const uint4 p = lds128(ad.b1 + cs * ad.b1_step);
  const uint4 q = lds128(ad.b2 + cs * ad.b2_step);
  uint4 d = make_uint4(0u, 0u, 0u, 0u), e = make_uint4(0u, 0u, 0u, 0u);  // P and N sums
  const uint32_t xw[4] = {x.x, x.y, x.z, x.w}, yw[4] = {y.x, y.y, y.z, y.w};
  const uint32_t bw[8] = {p.x, p.y, p.z, p.w, q.x, q.y, q.z, q.w};
#pragma unroll
  for (int jw = 0; jw < 4; ++jw) {
    uint32_t pa[4], na[4];
    decode_e2m1x8_pn(xw[jw], pa[0], pa[2], na[0], na[2]);
    decode_e2m1x8_pn(yw[jw], pa[1], pa[3], na[1], na[3]);
    imma_16832(d, pa, bw[2 * jw], bw[2 * jw + 1]);
    imma_16832(e, na, bw[2 * jw], bw[2 * jw + 1]);
  }
  d.x -= e.x;
  d.y -= e.y;
  d.z -= e.z;
  d.w -= e.w;
  const uint32_t sp0 = lds_u16(st + ad.sf + kSfU * u);
  const uint32_t sp1 = lds_u16(st + ad.sf + kSfR8 + kSfU * u);
  const float2 sb = lds_f2(ad.bs + 8 * cs);
  const float2 sa0 =
      __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(sp0), __NV_E4M3)));
  const float2 sa1 =
      __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(sp1), __NV_E4M3)));
  float s00 = sa0.x * sb.x, s01 = sa0.y * sb.y, s10 = sa1.x * sb.x, s11 = sa1.y * sb.y;
  if (kCheck && 4 * u + t >= nc) s00 = s01 = s10 = s11 = 0.0f;  // chunk past K: stale data, maybe NaN scales
  acc0 = fmaf(static_cast<float>(static_cast<int>(d.x)), s00, acc0);
  acc0 = fmaf(static_cast<float>(static_cast<int>(d.y)), s01, acc0);
  acc1 = fmaf(static_cast<float>(static_cast<int>(d.z)), s10, acc1);
  acc1 = fmaf(static_cast<float>(static_cast<int>(d.w)), s11, acc1);
}

// CTA = Wt warp tasks (16 rows each) x KS K-parts; warp part kp takes the stages kp,
// kp + KS, ... of its task. blockDim = 32 * Wt * KS.
template <int SC, int D, bool kBlocked, int LPR>
__global__ void __launch_bounds__(kMmaMaxWarps * 32, 2) gemv_mma_kernel(const Args args, int ks_split) {
  static_assert(SC % 4 == 0 && kMmaTileChunks % SC == 0, "stage geometry");
  static_assert((LPR == 2 || LPR == 8 || LPR == 16) && SC % LPR == 0, "copy geometry");
  static_assert(D >= 2, "ring depth");
  constexpr int kStageA = mma_stage_a(SC);
  constexpr int kStageBytes = mma_stage_bytes(SC);
  constexpr int kRowBytes = 16 * SC;  // bytes of one row per stage

  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ float s_red[kMmaMaxWarps][kMmaRows];
  __shared__ float s_cred[kMmaMaxCluster - 1][kMmaMaxWarps][kMmaRows];  // cluster partials (rank 0)

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int wt = (blockDim.x >> 5) / ks_split;
  const int task_local = warp % wt;
  const int kp = warp / wt;
  // Cluster split: the cluster_k CTAs of a cluster (consecutive blockIdx.x) take the same
  // tasks and consecutive ranges of stages_per_cta K stages each; rank 0 sums their partials.
  const int kc = args.cluster_k;
  const uint32_t crank = kc > 1 ? cluster_ctarank() : 0u;
  if (kc > 1) cluster_arrive_relaxed();  // matched before the DSMEM stores: every CTA has started
  const int64_t group = static_cast<int64_t>(blockIdx.x / static_cast<unsigned>(kc));
  const int64_t l = group / args.groups_per_batch;
  const int64_t task = (group - l * args.groups_per_batch) * wt + task_local;
  const int64_t blk = task >> 3;                    // 128-row block
  const int64_t base = blk * 128 + 4 * (task & 7);  // rows base + i + 32 q
  const bool task_ok = task < args.tasks_per_batch && base < args.M;

  const int nchunks = args.nchunks;
  const int tile_cap = args.tile_cap;
  uint4* s_bq = reinterpret_cast<uint4*>(smem_raw);
  float2* s_bs = reinterpret_cast<float2*>(smem_raw + 32 * static_cast<size_t>(tile_cap));
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t zero16 = smem_base + mma_zero_offset(tile_cap);
  const uint32_t ring = smem_base + static_cast<uint32_t>(mma_b_region_bytes(tile_cap)) +
                        static_cast<uint32_t>(warp * D * kStageBytes);
  if (threadIdx.x < 4) reinterpret_cast<uint32_t*>(smem_raw + mma_zero_offset(tile_cap))[threadIdx.x] = 0u;

  // ---- copy side: LPR lanes per row, 32 / LPR rows per copy instruction. Lane L takes
  // row slot rs = L / LPR, i.e. rows m = rs + (32 / LPR) k of the task, and in each the
  // 16-byte pieces p + LPR c (p = L % LPR) of the stage. ----
  constexpr int kRpi = 32 / LPR;          // rows per copy instruction
  constexpr int kRowsPerLane = 16 / kRpi;
  const int cp_rs = lane / LPR, cp_p = lane % LPR;
  // MMA row m -> matrix row base + (m & 3) + 32 (m >> 2); relative to the lane's first row:
  auto cp_rowoff = [](int k) { return kRpi == 4 ? 32 * k : kRpi == 2 ? 2 * (k & 1) + 32 * (k >> 1) : 0; };
  const int64_t cp_row0 = base + (cp_rs & 3) + 32 * (cp_rs >> 2);
  uint32_t cp_rows = 0;  // bit k: the lane's k-th row exists
#pragma unroll
  for (int k = 0; k < kRowsPerLane; ++k)
    if (cp_row0 + cp_rowoff(k) < args.M) cp_rows |= 1u << k;
  const uint8_t* cp_src = args.a + l * args.a_batch + (cp_rows & 1 ? cp_row0 : 0) * args.a_row + 16 * cp_p;
  const int64_t cp_arow = args.a_row;
  auto cp_smem_row = [](int m) { return (m & 1 ? mma_odd_rows(SC) : 0) + (m >> 1) * kRowBytes; };
  const uint32_t cp_dst = ring + 16 * cp_p;
  // scales: one 16-byte piece per lane and stage
  const uint8_t* sf_src;
  int64_t sf_step;
  uint32_t sf_dst;
  int sf_lim;  // the piece exists in stage g while g * sf_gstep < sf_lim (after the lane check)
  int sf_gstep;
  bool sf_lane;
  if constexpr (kBlocked) {
    // lane -> K tile kt = lane / 4 of the stage, rows base + (lane % 4) (all 4 row groups)
    const int kt = lane >> 2, ii = lane & 3;
    sf_lane = kt < SC / 2;
    sf_src = args.sfa + l * args.sfa_batch + blk * args.sfa_tile_row_bytes + kt * 512 + ((base & 31) + ii) * 16;
    sf_step = (SC / 2) * 512;
    sf_dst = ring + kStageA + kt * 64 + ii * 16;
    sf_lim = args.tiles_k - kt;  // tile (SC/2) g + kt < tiles_k
    sf_gstep = SC / 2;
  } else {
    // lane -> row m = lane / (SC/8), 16-byte piece h = lane % (SC/8) of its 2*SC bytes
    constexpr int kPieces = SC / 8;
    const int m = lane / kPieces, h = lane % kPieces;
    const int64_t row = base + (m & 3) + 32 * (m >> 2);
    sf_lane = m < 16 && row < args.M;
    sf_src = args.sfa + l * args.sfa_batch + (sf_lane ? row : 0) * args.sfa_row + 16 * h;
    sf_step = 2 * SC;
    sf_dst = ring + kStageA + m * 2 * SC + 16 * h;
    sf_lim = nchunks - 8 * h;  // bytes [16h, 16h + 16) of the stage's 2 * nc exist: 8 h < nc
    sf_gstep = SC;
  }

  const int n_stages = (nchunks + SC - 1) / SC;
  const int s_begin = min(n_stages, static_cast<int>(crank) * args.stages_per_cta);
  const int s_end = min(n_stages, s_begin + args.stages_per_cta);
  const int c_begin = SC * s_begin, c_end = min(nchunks, SC * s_end);
  const int n_mine = task_ok && s_begin + kp < s_end ? (s_end - s_begin - kp + ks_split - 1) / ks_split : 0;

  auto issue = [&](int slot, int jj) {
    const int gs = s_begin + kp + ks_split * jj;
    const int nc = min(SC, nchunks - SC * gs);
    const uint32_t so = slot * kStageBytes;
    const uint8_t* src = cp_src + static_cast<int64_t>(gs) * kRowBytes;
#pragma unroll
    for (int k = 0; k < kRowsPerLane; ++k) {
      if (!(cp_rows & (1u << k))) continue;
      const uint8_t* row_src = src + cp_rowoff(k) * cp_arow;
      const uint32_t row_dst = cp_dst + so + cp_smem_row(cp_rs + kRpi * k);
#pragma unroll
      for (int c = 0; c < SC / LPR; ++c)
        if (nc == SC || cp_p + LPR * c < nc) cp_async16(row_dst + 16 * LPR * c, row_src + 16 * LPR * c);
    }
      if (sf_lane && gs * sf_gstep < sf_lim) cp_async16(sf_dst + so, sf_src + gs * sf_step);
  };

  // ---- consumer constants ----
  const int g = lane >> 2, t = lane & 3;
  MmaLaneAddrs ad;
  ad.a = (g & 1 ? mma_odd_rows(SC) : 0) + (g >> 1) * kRowBytes + 16 * t;
  ad.sf = kBlocked ? kStageA + (t >> 1) * 64 + (t & 1) * 2 + (g & 3) * 16 + (g >> 2) * 4 : kStageA + g * 2 * SC + 2 * t;
  const bool b_act = (g >> 1) == t;
  ad.b1 = b_act && !(g & 1) ? smem_base + 32 * t : zero16;
  ad.b2 = b_act && (g & 1) ? smem_base + 32 * t + 16 : zero16;
  ad.b1_step = b_act && !(g & 1) ? 32 : 0;
  ad.b2_step = b_act && (g & 1) ? 32 : 0;
  ad.bs = smem_base + 32 * tile_cap + 8 * t;

  float acc0 = 0.0f, acc1 = 0.0f;  // rows g, g + 8

  // L2 prefetch of the stages after the ring (more bytes in flight than the ring holds):
  // lane L touches the 128-byte line L % 2 (+ 2c) of row m = L / 2 of a stage.
  const int pf = args.prefetch_stages;
  const int64_t pf_row = base + ((lane >> 1) & 3) + 32 * (lane >> 3);
  const bool pf_ok = pf > 0 && pf_row < args.M;
  const uint8_t* pf_src = args.a + l * args.a_batch + (pf_ok ? pf_row : 0) * args.a_row + 128 * (lane & 1);
  auto prefetch = [&](int jj) {
    const int gs = s_begin + kp + ks_split * jj;
    const int nbytes = 16 * min(SC, nchunks - SC * gs);  // of each row in this stage
#pragma unroll
    for (int c = 0; c < (SC + 15) / 16; ++c)
      if (128 * ((lane & 1) + 2 * c) < nbytes) prefetch_l2(pf_src + static_cast<int64_t>(gs) * kRowBytes + 256 * c);
  };

  // Programmatic dependent launch: nothing that the preceding grid may write is read
  // before griddepcontrol.wait. L2 prefetches are hints (L2 is the point of coherence,
  // so a line that grid still writes is updated there): with pdl == 2 the first stages
  // of A are prefetched while the preceding grid drains.
  if (args.pdl != 0) {
    if (args.pdl >= 2) {
      for (int i = 0; i < args.pdl - 1 && i < n_mine; ++i) {
        const int gs = s_begin + kp + ks_split * i;
        if (cp_p >= nchunks - SC * gs) continue;  // this lane's first piece is past K
        const uint8_t* src = cp_src + static_cast<int64_t>(gs) * kRowBytes;
#pragma unroll
        for (int k = 0; k < kRowsPerLane; ++k)
          if (cp_rows & (1u << k)) prefetch_l2(src + cp_rowoff(k) * cp_arow);
      }
    }
    pdl_wait_primary();
    pdl_launch_dependents();
  }

  // Prologue (before the first b decode, so that these copies overlap it).
#pragma unroll
  for (int i = 0; i < D - 1; ++i) {
    if (i < n_mine) issue(i, i);
    cp_async_commit();
  }
  if (pf_ok)
    for (int i = D - 1; i < D - 1 + pf && i < n_mine; ++i) prefetch(i);

  int j = 0, slot = 0;
  for (int t0 = c_begin; t0 < c_end; t0 += tile_cap) {
    const int tn = min(tile_cap, c_end - t0);
    if (t0 > c_begin) __syncthreads();  // every warp is done with the previous b tile
    decode_b_tile_mma(s_bq, s_bs, args.b + l * args.b_batch, args.sfb + l * args.sfb_batch,
                      args.sfb_blocked != 0, t0, tn);
    __syncthreads();
#pragma unroll 1
    for (; j < n_mine && SC * (s_begin + kp + ks_split * j) < t0 + tn; ++j) {
      __syncwarp();  // every lane is done reading the slot refilled now
      if (j + D - 1 < n_mine) issue(slot == 0 ? D - 1 : slot - 1, j + D - 1);
      cp_async_commit();
      if (pf_ok && j + D - 1 + pf < n_mine) prefetch(j + D - 1 + pf);
      cp_async_wait<D - 1>();  // this lane's copies of stage j have landed
      __syncwarp();            // ... and those of the other lanes

      const int gs = s_begin + kp + ks_split * j;
      const int c0 = SC * gs - t0;                // tile-relative chunk of the stage's first chunk
      const int nc = min(SC, nchunks - SC * gs);  // chunks in this stage
      const uint32_t st = ring + slot * kStageBytes;
#ifdef NVFP4_GEMV_PROBE  // standalone experiments only: the copies without the math
      acc0 += __uint_as_float(lds128(st + ad.a).x & 0x3F800000u);
      if (nc < 0) {
#else
      if (nc == SC) {
#endif
#pragma unroll
        for (int u = 0; u < SC / 4; ++u) mma_step<SC, kBlocked, false>(ad, st, u, c0 + 4 * u, t, nc, acc0, acc1);
      } else {
#pragma unroll
        for (int u = 0; u < SC / 4; ++u)
          if (4 * u < nc && nc < SC) mma_step<SC, kBlocked, true>(ad, st, u, c0 + 4 * u, t, nc, acc0, acc1);
      }
      slot = slot + 1 == D ? 0 : slot + 1;
    }
  }
  cp_async_wait<0>();

  // Sum over the quad (the 4 chunks of a step), then over the KS warps of the task.
  acc0 += __shfl_xor_sync(0xFFFFFFFFu, acc0, 1);
  acc1 += __shfl_xor_sync(0xFFFFFFFFu, acc1, 1);
  acc0 += __shfl_xor_sync(0xFFFFFFFFu, acc0, 2);
  acc1 += __shfl_xor_sync(0xFFFFFFFFu, acc1, 2);
  if (ks_split > 1) {
    if (kp != 0 && t == 0) {
      s_red[warp][g] = acc0;
      s_red[warp][g + 8] = acc1;
    }
    __syncthreads();
    if (kp == 0) {
      for (int pp = 1; pp < ks_split; ++pp) {
        acc0 += s_red[warp + pp * wt][g];
        acc1 += s_red[warp + pp * wt][g + 8];
      }
    }
  }
  if (kc > 1) {
    // Ranks 1.. store their partials into rank 0's s_cred; rank 0 adds them in rank
    // order (deterministic). Every thread of every CTA passes both cluster barriers.
    cluster_wait_acquire();  // (the arrive at the start) every CTA of the cluster runs
    if (crank != 0 && kp == 0 && t == 0 && task_ok) {
      st_cluster_f32(&s_cred[crank - 1][task_local][g], 0, acc0);
      st_cluster_f32(&s_cred[crank - 1][task_local][g + 8], 0, acc1);
    }
    cluster_arrive_release();
    cluster_wait_acquire();
    if (crank != 0) return;
    if (kp == 0 && t == 0 && task_ok) {
      for (int r = 1; r < kc; ++r) {
        acc0 += s_cred[r - 1][task_local][g];
        acc1 += s_cred[r - 1][task_local][g + 8];
      }
    }
  }
  if (kp != 0 || t != 0 || !task_ok) return;
  const int64_t r0 = base + (g & 3) + 32 * (g >> 2), r1 = r0 + 64;
  if (r0 < args.M) store_out(args, l, r0, acc0, 0.25f);
  if (r1 < args.M) store_out(args, l, r1, acc1, 0.25f);
}

// ---------------------------------------------------------------------------------
// gemv_reg_kernel: register double buffer, optional K split across warps
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
    asm volatile(
        "{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %5, 0;\n\t"
        "@q " NVFP4_GEMV_LDG_A ".v4.u32 {%0, %1, %2, %3}, [%4];\n\t}"
        : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w)
        : "l"(p), "r"(static_cast<int>(pred)));
  } else {
    if (pred) v = ld_bytes16(p);
  }
}
template <bool kAligned>
__device__ __forceinline__ void load_sf2_pred(uint32_t& v, const uint8_t* p, bool pred) {
  if constexpr (kAligned) {
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q ld.global.nc.u16 %0, [%1];\n\t}"
                 : "+r"(v)
                 : "l"(p), "r"(static_cast<int>(pred)));
  } else {
    if (pred) v = ld_bytes2(p);
  }
}

template <int R, int U, int WK, bool kAligned>
__global__ void __launch_bounds__(kThreads, (R * U <= 4 ? 2 : 1)) gemv_reg_kernel(const Args args) {
  static_assert(kWarps % WK == 0, "WK must divide the warp count");
  constexpr int kRowsPerCta = R * (kWarps / WK);
  constexpr int kSlot = 32 * WK;       // chunks between a lane's consecutive slots
  constexpr int kStep = kSlot * U;     // chunks consumed by the CTA's K-split per iteration

  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ float s_red[kWarps][R];

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

  // Programmatic dependent launch (see gemv_mma_kernel): no global access before this.
  if (args.pdl != 0) {
    pdl_wait_primary();
    pdl_launch_dependents();
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

// ---------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------

struct Config {
  int R, U, WK;
};
// Register-kernel configurations; auto-selection walks them in order. (Measured and
// dropped: {4, 2, 1}, 168+ registers, 1.4x slower; {2, 2, 1}, 10% slower.)
constexpr Config kConfigs[] = {
    {4, 1, 1},  // 0: 32 rows / CTA
    {2, 2, 2},  // 1: 8 rows / CTA, K split over 2 warps
    {1, 4, 4},  // 2: 2 rows / CTA, K split over 4 warps
    {1, 4, 8},  // 3: 1 row / CTA, K split over 8 warps
};
constexpr int kNumAutoConfigs = 4;
constexpr int kNumConfigs = sizeof(kConfigs) / sizeof(kConfigs[0]);
// MMA-kernel requests in run_gemv's `cfg`: kMmaCfg + 1000 * variant + 100 * KS + Wt
// (KS = 0: automatic KS and Wt). Variants (launch_mma_variant): stage chunks SC, ring
// depth D, lanes per row in the copies LPR.
constexpr int kMmaCfg = 20000;
constexpr int kDefaultMmaVariant = 3;
// L2 prefetch distance (stages beyond the ring) for the automatic choice; forced
// requests add 100000 * (distance + 1) to the MMA cfg.
constexpr int kDefaultPrefetch = 0;
// Cluster K split: forced requests add 1000000 * KC (0 = automatic with the rest).
// Programmatic dependent launch of the MMA kernel (0 off, 1 on, 2 on + L2 prefetch of the
// first stages before griddepcontrol.wait); forced requests add 10000000 * (mode + 1).
#ifndef NVFP4_SM90_GEMV_PDL
#define NVFP4_SM90_GEMV_PDL 2
#endif
constexpr int kDefaultPdl = NVFP4_SM90_GEMV_PDL;
// MMA kernel: cap CTAs per SM at the grid's per-SM share (launch_mma); forced requests
// add 100000000 * (1 off, 2 on).
#ifndef NVFP4_SM90_GEMV_PAD
#define NVFP4_SM90_GEMV_PAD 1
#endif
constexpr bool kDefaultPad = NVFP4_SM90_GEMV_PAD != 0;
// Automatic choice: the MMA kernel from this many rows on (per batch and in all).
constexpr int64_t kMmaMinRows = 128;
constexpr int64_t kMmaMinRowsTotal = 4096;

inline int64_t rows_per_cta(int cfg) { return kConfigs[cfg].R * (kWarps / kConfigs[cfg].WK); }

inline int choose_reg_config(int64_t M, int64_t L, int sm_count) {
  for (int cfg = 0; cfg < kNumAutoConfigs; ++cfg) {
    const int64_t ctas = (M + rows_per_cta(cfg) - 1) / rows_per_cta(cfg) * L;
    if (ctas >= sm_count) return cfg;
  }
  return kNumAutoConfigs - 1;
}

// Launches `kernel` with the programmatic-stream-serialization attribute when args.pdl
// is set (the kernels wait for the preceding grid before any global access), and as
// clusters of `cluster` CTAs when cluster > 1.
template <typename Kernel, typename... KArgs>
nvfp4_status_t launch_ex(Kernel kernel, const Args& args, int64_t ctas, int threads, size_t smem,
                         cudaStream_t stream, int cluster, KArgs... kargs) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(ctas), 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2] = {};
  int n_attr = 0;
  if (cluster > 1) {
    attr[n_attr].id = cudaLaunchAttributeClusterDimension;
    attr[n_attr].val.clusterDim.x = static_cast<unsigned>(cluster);
    attr[n_attr].val.clusterDim.y = 1;
    attr[n_attr].val.clusterDim.z = 1;
    ++n_attr;
  }
  if (args.pdl != 0) {
    attr[n_attr].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n_attr].val.programmaticStreamSerializationAllowed = 1;
    ++n_attr;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n_attr;
  NVFP4_CUDA_TRY(cudaLaunchKernelEx(&cfg, kernel, args, kargs...));
  return NVFP4_SUCCESS;
}

template <int R, int U, int WK, bool kAligned>
nvfp4_status_t launch_reg(const Args& args, int64_t ctas, size_t smem, cudaStream_t stream) {
  return launch_ex(gemv_reg_kernel<R, U, WK, kAligned>, args, ctas, kThreads, smem, stream, 1);
}

template <bool kAligned>
nvfp4_status_t launch_reg_cfg(int cfg, const Args& args, int64_t ctas, size_t smem, cudaStream_t s) {
  switch (cfg) {
    case 0: return launch_reg<4, 1, 1, kAligned>(args, ctas, smem, s);
    case 1: return launch_reg<2, 2, 2, kAligned>(args, ctas, smem, s);
    case 2: return launch_reg<1, 4, 4, kAligned>(args, ctas, smem, s);
    case 3: return launch_reg<1, 4, 8, kAligned>(args, ctas, smem, s);
    default: break;
  }
  return fail(NVFP4_ERROR_INTERNAL, "sm90a gemv: unknown configuration %d", cfg);
}

inline bool aligned_to(const void* p, unsigned n) { return (reinterpret_cast<uintptr_t>(p) % n) == 0; }

// Per-device facts the MMA launch needs (queried once per device and kernel).
struct MmaKernelInfo {
  int regs = 0;
  int smem_per_sm = 0;
  int regs_per_sm = 0;
  int max_smem_block = 0;
  int static_smem = 0;
  bool ready = false;
};

template <int SC, int D, bool kBlocked, int LPR>
nvfp4_status_t mma_info(int device, MmaKernelInfo* out) {
  constexpr int kMaxDevices = 64;
  static MmaKernelInfo cache[kMaxDevices];
  MmaKernelInfo* info = (device >= 0 && device < kMaxDevices) ? &cache[device] : nullptr;
  if (info && info->ready) {
    *out = *info;
    return NVFP4_SUCCESS;
  }
  MmaKernelInfo v;
  cudaFuncAttributes fa;
  NVFP4_CUDA_TRY(cudaFuncGetAttributes(&fa, gemv_mma_kernel<SC, D, kBlocked, LPR>));
  v.regs = fa.numRegs;
  int optin = 0;
  NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&v.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&v.regs_per_sm, cudaDevAttrMaxRegistersPerMultiprocessor, device));
  NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  v.static_smem = static_cast<int>(fa.sharedSizeBytes);
  v.max_smem_block = optin - v.static_smem;
  NVFP4_CUDA_TRY(cudaFuncSetAttribute(gemv_mma_kernel<SC, D, kBlocked, LPR>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      v.max_smem_block));
  v.ready = true;
  if (info) *info = v;  // benign race: every writer stores the same values
  *out = v;
  return NVFP4_SUCCESS;
}

// CTAs of `warps` warps that fit on one SM (0 if none).
inline int mma_ctas_per_sm(const MmaKernelInfo& info, int warps, size_t smem) {
  if (smem > static_cast<size_t>(info.max_smem_block)) return 0;
  const int by_threads = 2048 / (32 * warps);
  const int regs_per_warp = (info.regs * 32 + 255) / 256 * 256;
  const int by_regs = info.regs_per_sm / (regs_per_warp * warps);
  const int by_smem = static_cast<int>(info.smem_per_sm / (smem + info.static_smem + 1024));
  return std::min(std::min(by_threads, by_regs), std::min(by_smem, 32));
}

// Score of a grid of `ctas` CTAs of `warps` warps at `per_sm` CTAs per SM: how evenly the
// last wave fills the SMs, times warps resident per SM (saturating at 12).
inline double mma_grid_score(double ctas, int sm_count, int per_sm, int warps) {
  const double slots = static_cast<double>(sm_count) * per_sm;
  double balance, resident;
  if (ctas <= slots) {
    const double per = ctas / sm_count;
    balance = per / std::ceil(per);
    resident = per * warps;
  } else {
    const double waves = ctas / slots;
    balance = waves / std::ceil(waves);
    resident = static_cast<double>(per_sm) * warps;
  }
  return balance * std::min(1.0, resident / 12.0);
}

// K stages of one cluster rank, and the b tile (chunks) that a CTA then needs.
inline int mma_stages_per_cta(int n_stages, int kc) { return (n_stages + kc - 1) / kc; }
inline int mma_tile_cap(int nchunks, int sc, int stages_per_cta) {
  return std::min(kMmaTileChunks, std::min(nchunks, sc * stages_per_cta));
}

// Picks warps per CTA W = KS * Wt in {2, 4, 8}, the K split KS inside a CTA and the K
// split KC over the CTAs of a cluster (1, 2, 4). The work comes in warp tasks of 16 rows
// x K; a CTA holds Wt tasks x 1/KC of K; the SM with the most warps sets the time, so
// the score is the balance (average over maximum resident CTAs per SM, or filled wave
// slots for several waves), discounted when fewer than ~12 warps per SM are resident
// (too little issue to cover the decode). KS only while each warp keeps >= 2 stages.
// KC: for grids that would leave SMs idle (few rows, long K). Spreading the 448 tasks
// of 7168x16384x1 evenly in quarter tasks (KC 4: 7 per SM instead of 3 or 4 whole
// ones) did not make it faster (H200, bench/NOTES.md "Session 3").
inline void choose_mma_shape(const MmaKernelInfo& info, int sc, int depth, int nchunks, int64_t tasks_per_batch,
                             int n_stages, int64_t L, int sm_count, int kc_only, int* ks_out, int* wt_out,
                             int* kc_out) {
  double best = -1.0;
  double best_ctas = 0.0;
  for (int kc = 1; kc <= kMmaMaxCluster; kc *= 2) {
    if (kc_only > 0 ? kc != kc_only : kc > kAutoMaxCluster) continue;
    const int spc = mma_stages_per_cta(n_stages, kc);
    // Automatic cluster split only where the best grid without it leaves SMs idle and
    // each CTA keeps kMinClusterStages stages. Measured (H200, PDL on): KC 2 on
    // 1024x16384x1 8.36 -> 6.87 µs, 256x7168x4 (7 stages per CTA) 5.42 -> 5.24, but
    // 512x4096x2 (4 stages) 4.28 -> 4.97; 7168x16384x1 (224 CTAs) KC 2/4: no gain.
    if (kc > 1 && kc_only == 0 && (spc < kMinClusterStages || best_ctas >= sm_count)) break;
    const int tile_cap = mma_tile_cap(nchunks, sc, spc);
    for (int ks = 1; ks <= kMmaMaxWarps; ks *= 2) {
      if (ks > 1 && (spc + ks - 1) / ks < 2) break;
      for (int w = kMmaMaxWarps; w >= 2; w /= 2) {
        if (w < ks) continue;
        const int per_sm = mma_ctas_per_sm(info, w, mma_smem_bytes(sc, tile_cap, w, depth));
        if (per_sm <= 0) continue;
        const int wt = w / ks;
        const double ctas = static_cast<double>(L * ((tasks_per_batch + wt - 1) / wt) * kc);
        const double score = mma_grid_score(ctas, sm_count, per_sm, w);
        if (score > best + (kc > 1 ? 0.02 : 1e-9)) {  // a cluster split only for a clear gain
          best = score;
          best_ctas = ctas;
          *ks_out = ks;
          *wt_out = wt;
          *kc_out = kc;
        }
      }
    }
  }
}

template <int SC, int D, bool kBlocked, int LPR>
nvfp4_status_t launch_mma(Args args, int ks, int wt, int kc, bool pad, const Exec& exec, int sm_count, int64_t L) {
  MmaKernelInfo info;
  const nvfp4_status_t st = mma_info<SC, D, kBlocked, LPR>(exec.device, &info);
  if (st != NVFP4_SUCCESS) return st;
  const int n_stages = (args.nchunks + SC - 1) / SC;
  if (ks <= 0 || wt <= 0) {
    const int kc_only = kc;
    ks = wt = kc = 0;
    choose_mma_shape(info, SC, D, args.nchunks, args.tasks_per_batch, n_stages, L, sm_count, kc_only, &ks, &wt, &kc);
    if (ks == 0) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: shared memory too small");
  }
  if (kc <= 0) kc = 1;
  args.cluster_k = kc;
  args.stages_per_cta = mma_stages_per_cta(n_stages, kc);
  args.tile_cap = mma_tile_cap(args.nchunks, SC, args.stages_per_cta);
  const int warps = ks * wt;
  const size_t smem = mma_smem_bytes(SC, args.tile_cap, warps, D);
  if (warps > kMmaMaxWarps || kc > kMmaMaxCluster || mma_ctas_per_sm(info, warps, smem) <= 0)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: shared memory too small");
  args.groups_per_batch = (args.tasks_per_batch + wt - 1) / wt;
  const int64_t ctas = args.groups_per_batch * L * kc;
  if (ctas > 0x7FFFFFFF) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: grid too large");
  // Even spread: when more CTAs fit on an SM than the grid needs for one per-SM share
  // (e.g. 896 CTAs, 8 fit, 6.79 needed), extra shared memory caps the CTAs per SM at
  // that share, so that the block scheduler cannot stack 8 on some SMs and 5 on others.
  // Not for clusters of 4: 7168x16384x1 as 896 CTAs in clusters of 4 took 28.2 µs capped
  // at 7 per SM vs 23.4 uncapped (H200).
  size_t smem_launch = smem;
  if (pad && kc <= 2) {
    const int per_sm = mma_ctas_per_sm(info, warps, smem);
    const int64_t share = (ctas + sm_count - 1) / sm_count;
    if (share < per_sm) {
      const int64_t need = info.smem_per_sm / (share + 1) + 1 - info.static_smem - 1024;
      if (need > static_cast<int64_t>(smem_launch) && need <= info.max_smem_block)
        smem_launch = static_cast<size_t>(need + 127) / 128 * 128;
    }
  }
  return launch_ex(gemv_mma_kernel<SC, D, kBlocked, LPR>, args, ctas, 32 * warps, smem_launch, cuda_stream(exec), kc,
                   ks);
}

inline nvfp4_status_t launch_mma_variant(int variant, const Args& args, int ks, int wt, int kc, bool pad,
                                         const Exec& exec, int sm_count, int64_t L) {
  const bool blocked = args.sf_blocked != 0;
#define NVFP4_GEMV_MMA_CASE(V, SC, D, LPR)                                                 \
  case V:                                                                                  \
    return blocked ? launch_mma<SC, D, true, LPR>(args, ks, wt, kc, pad, exec, sm_count, L) \
                   : launch_mma<SC, D, false, LPR>(args, ks, wt, kc, pad, exec, sm_count, L);
  // Variants measured on an H200 (bench/NOTES.md) and dropped: 0 = (16, 2, 2), 1 = (8, 4, 2),
  // 4 = (8, 4, 8), 5 = (16, 4, 8), 6 = (16, 3, 8); all slower than 3 on the benchmark shapes.
  switch (variant) {
    NVFP4_GEMV_MMA_CASE(2, 16, 2, 8)
    NVFP4_GEMV_MMA_CASE(3, 16, 2, 16)
    default: break;
  }
#undef NVFP4_GEMV_MMA_CASE
  return fail(NVFP4_ERROR_INTERNAL, "sm90a gemv: unknown MMA variant %d", variant);
}

// cfg < 0: automatic. Exposed (inside this namespace) for the standalone tests.
inline nvfp4_status_t run_gemv(const GemmProblem& p, const Exec& exec, int cfg) {
  if (p.N != 1) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: N must be 1");
  if (p.M <= 0 || p.L <= 0) return NVFP4_SUCCESS;
  if (p.K <= 0 || p.K % 32 != 0 || p.K / 32 > 0x7FFFFFFF)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: K must be a positive multiple of 32");
  if (p.c.dtype != DType::kFloat16 && p.c.dtype != DType::kBFloat16 && p.c.dtype != DType::kFloat32)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: unsupported output dtype");

  int sm_count = exec.sm_count;
  if (sm_count <= 0) NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, exec.device));

  const bool sfa_blocked = p.sfa.layout == NVFP4_SF_BLOCKED;
  const bool sfb_blocked = p.sfb.layout == NVFP4_SF_BLOCKED;
  const bool multi_row = p.M > 1, multi_batch = p.L > 1;
  // 16-byte loads of A and b and 2-byte loads of the scale pairs need every row and
  // batch start aligned; else the byte-load variant of the register kernel.
  const bool a16 = aligned_to(p.a.data, 16) && (!multi_row || p.a.row_stride % 16 == 0) &&
                   (!multi_batch || p.a.batch_stride % 16 == 0);
  const bool b16 = aligned_to(p.b.data, 16) && (!multi_batch || p.b.batch_stride % 16 == 0);
  const bool sfa2 = aligned_to(p.sfa.data, 2) && (!multi_batch || p.sfa.batch_stride % 2 == 0) &&
                    (sfa_blocked || !multi_row || p.sfa.row_stride % 2 == 0);
  const bool sfb2 = aligned_to(p.sfb.data, 2) && (!multi_batch || p.sfb.batch_stride % 2 == 0);
  const bool aligned = a16 && b16 && sfa2 && sfb2;
  // The MMA kernel bulk-copies 16-byte multiples of the scales from 16-byte aligned
  // addresses: blocked tiles always; linear rows only when every stage's piece of a
  // row (2 * 8 chunks = 16 bytes at the least) is whole, i.e. K % 256 == 0.
  const int64_t nchunks = p.K / 32;
  const bool sfa16 = aligned_to(p.sfa.data, 16) && (!multi_batch || p.sfa.batch_stride % 16 == 0) &&
                     (sfa_blocked || ((!multi_row || p.sfa.row_stride % 16 == 0) && nchunks % 8 == 0));
  const bool mma_ok = aligned && sfa16;

  Args args{};
  args.M = p.M;
  args.nchunks = static_cast<int32_t>(nchunks);
  args.tile_cap = args.nchunks < kTileChunksMax ? args.nchunks : kTileChunksMax;
  args.tasks_per_batch = (p.M + 127) / 128 * 8;  // MMA kernel: 16-row warp tasks
  args.tiles_k = static_cast<int32_t>((p.K / kSfVec + 3) / 4);
  args.a = p.a.data;
  args.a_row = p.a.row_stride;
  args.a_batch = p.a.batch_stride;
  args.b = p.b.data;
  args.b_batch = p.b.batch_stride;
  args.sfa = p.sfa.data;
  args.sfa_row = p.sfa.row_stride;
  args.sfa_batch = p.sfa.batch_stride;
  args.sfa_tile_row_bytes = 512 * static_cast<int64_t>(args.tiles_k);
  args.sfb = p.sfb.data;
  args.sfb_batch = p.sfb.batch_stride;
  args.sf_blocked = sfa_blocked ? 1 : 0;
  args.sfb_blocked = sfb_blocked ? 1 : 0;
  args.alpha = p.alpha.value;
  args.alpha_ptr = p.alpha.device_ptr;
  args.c = p.c.data;
  args.c_dtype = static_cast<int32_t>(p.c.dtype);
  args.c_row = p.c.row_stride;
  args.c_batch = p.c.batch_stride;

  args.pdl = kDefaultPdl;
  args.cluster_k = 1;
  args.stages_per_cta = 0;
  int kc = 0;  // 0: automatic
  bool pad = kDefaultPad;
  if (cfg >= 1000000) {  // forced padding / PDL mode / cluster split; the rest 0 = automatic
    if (cfg >= 100000000) pad = cfg / 100000000 == 2;
    if (cfg % 100000000 >= 10000000) args.pdl = cfg / 10000000 % 10 - 1;
    kc = cfg / 1000000 % 10;
    cfg %= 1000000;
    if (cfg == 0) cfg = -1;
  }
  if (cfg < 0) {
    // The MMA kernel wherever it is allowed and there are rows enough for the SMs;
    // else (small M * L: latency bound) the register kernel with its K split.
    // Measured on an H200 (bench/NOTES.md): the MMA kernel wins from M*L >= 4096 rows, and
    // from 1024 rows where the register kernel would have to split K 4 or 8 ways.
    const int reg_cfg = choose_reg_config(p.M, p.L, sm_count);
    const bool many_rows = p.M >= kMmaMinRows && (p.M * p.L >= kMmaMinRowsTotal ||
                                                   (p.M * p.L >= kMmaMinRowsTotal / 4 && reg_cfg >= 2));
    cfg = (mma_ok && many_rows) ? kMmaCfg + 1000 * kDefaultMmaVariant : reg_cfg;
  }
  args.prefetch_stages = kDefaultPrefetch;
  if (cfg >= 100000) {
    args.prefetch_stages = cfg / 100000 - 1;
    cfg %= 100000;
  }
  if (cfg >= kMmaCfg) {
    if (!mma_ok) {
      cfg = choose_reg_config(p.M, p.L, sm_count);
    } else {
      const int variant = (cfg - kMmaCfg) / 1000, ks = (cfg - kMmaCfg) / 100 % 10, wt = (cfg - kMmaCfg) % 100;
      return launch_mma_variant(variant, args, ks, wt, kc, pad, exec, sm_count, p.L);
    }
  }
  if (cfg >= kNumConfigs) return fail(NVFP4_ERROR_INTERNAL, "sm90a gemv: unknown configuration %d", cfg);

  args.groups_per_batch = (p.M + rows_per_cta(cfg) - 1) / rows_per_cta(cfg);
  const int64_t ctas = args.groups_per_batch * p.L;
  if (ctas > 0x7FFFFFFF) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: grid too large");
  const size_t smem = static_cast<size_t>(args.tile_cap) * kSmemBytesPerChunk;  // <= 36 KB
  cudaStream_t stream = cuda_stream(exec);
  return aligned ? launch_reg_cfg<true>(cfg, args, ctas, smem, stream)
                 : launch_reg_cfg<false>(cfg, args, ctas, smem, stream);
}

}  // namespace gemv_detail

nvfp4_status_t gemv(const GemmProblem& p, const Exec& exec) {
  if (exec.cc_major != 9 || exec.cc_minor != 0)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: needs a CC 9.0 device");
  return gemv_detail::run_gemv(p, exec, -1);
}

}  // namespace nvfp4::sm90
