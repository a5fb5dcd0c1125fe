// Hopper (sm90a) NVFP4 GEMV:  c[l, m] = alpha * sum_k A[l, m, k] * B[l, 0, k].
//
// Memory bound: A (+ its scales) is streamed once at HBM speed; everything else is
// small. Design (DESIGN.md §8 "GEMV"):
//   - A is read in 16-byte pieces (one "chunk" = 16 bytes = 32 K elements = 2 scale
//     blocks), coalesced across the warp, several stages ahead of the math (see the
//     two kernels below).
//   - b is decoded once per CTA into shared memory as fp16 (value * 2^13) in the
//     same K permutation the A decoder produces, with its block scales as fp32.
//   - e2m1 -> fp16 with integer ops only: a nibble placed with its sign at fp16 bit
//     15 and its three magnitude bits at 11..9 is the fp16 number e2m1 * 2^-14
//     (codes 0/1 land on fp16 subnormals, which HFMA2 keeps). Two LOP3 and shifts
//     give two values (nibbles p and p+4 of a word) at a time.
//   - Exactness: (a*2^-14)*(b*2^13) = a*b/2 is a multiple of 1/8 with |.| <= 18, so
//     a chain of 8 HFMA2 per 16-element block (each fp16 lane sums 8 products,
//     |sum| <= 144 = 1152/8 < 2048/8) is exact in fp16. The two lanes are added in
//     fp32 (exact), multiplied by sa*sb (exact: 4+4 significant bits, then 12+8 bits)
//     and accumulated in fp32 with one FFMA per block. The final result is
//     2 * alpha * acc.
//   - Warp-shuffle reduction over the lanes (which split K); when K is split across
//     the warps of a CTA as well (small M*L), a shared-memory reduction follows.
//     No workspace, no atomics, deterministic.
//
// Two kernels:
//   - gemv_async_kernel (M*L large and every operand 16-byte aligned): each warp owns
//     4 rows {128*blk + s + 32*q, q = 0..3} and streams them through its own
//     shared-memory ring of D stages filled with cp.async (16-byte copies of A; the
//     scales of those 4 rows come as 16-byte pieces: in the blocked layout the 4
//     rows' scales of one 64-element K tile are 16 contiguous bytes). Many bytes in
//     flight without holding them in registers. Warps per CTA (4..8) are chosen so
//     that the CTAs spread evenly over the SMs.
//   - gemv_reg_kernel (everything else: small M*L, misaligned operands): 16-byte
//     non-allocating loads into a register double buffer; K split across the warps
//     of a CTA (WK) when M*L is small, so that there are enough CTAs for the SMs.
// Status (H200, bench/NOTES.md "GEMV (sm90a)"): ~2.5-2.9 TB/s on the large shapes,
// 1.5-2.4x the copy-bandwidth SOL: both kernels are bound by instruction issue
// (~90 instructions per 16-byte chunk and row, 52 of them the e2m1 decode), not by
// memory latency. The next step is fewer instructions per byte (notes there).
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
  int64_t tasks_per_batch;  // async kernel: warp tasks (4 rows each) per batch
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


// cp.async (16-byte, L2 only) to a shared-window address; `n` < 16 reads n bytes and
// zero-fills the rest (all 16 destination bytes are written, also for n == 0).
__device__ __forceinline__ void cp_async16_s(uint32_t dst, const void* gmem) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async16_n_s(uint32_t dst, const void* gmem, int n) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(gmem), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
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

__device__ __forceinline__ void store_out(const Args& args, int64_t l, int64_t row, float acc) {
  const float v = acc * 2.0f * (args.alpha_ptr ? *args.alpha_ptr : args.alpha);
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
// gemv_async_kernel: per-warp cp.async rings (see the header)
// ---------------------------------------------------------------------------------

constexpr int kAsyncRows = 4;                       // rows per warp task
constexpr int kStageA = kAsyncRows * 32 * 16;       // 2048 B: 4 rows x 32 chunks
constexpr int kStageBytes = kStageA + 256;          // + the 4 rows' scales of those chunks
constexpr int kAsyncTileChunks = 256;               // b tile (8 stages): small, so more CTAs fit
constexpr int kAsyncMaxWarps = 8;

// The decoded b tile, rounded up so that the rings behind it stay 16-byte aligned.
__host__ __device__ inline size_t b_region_bytes(int tile_cap) {
  return (static_cast<size_t>(tile_cap) * kSmemBytesPerChunk + 127) / 128 * 128;
}
inline size_t async_smem_bytes(int tile_cap, int warps, int depth) {
  return b_region_bytes(tile_cap) + static_cast<size_t>(warps) * depth * kStageBytes;
}

struct __align__(16) AsyncWarpDesc {
  const uint8_t* a;    // row 0 of the task (or of the batch when it has no rows)
  const uint8_t* sf;   // its scales
  uint32_t qoff[3];    // byte offsets of rows 1..3 from row 0 (last valid row past M)
  uint32_t sf_qstride; // linear scales: bytes between rows q and q+1 (32 rows)
};
// Volatile 16-byte shared loads: the descriptor is re-read at every use.
__device__ __forceinline__ AsyncWarpDesc load_desc(const AsyncWarpDesc* p) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  uint32_t w[8];
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "r"(addr));
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[4]), "=r"(w[5]), "=r"(w[6]), "=r"(w[7])
               : "r"(addr + 16));
  AsyncWarpDesc d;
  d.a = reinterpret_cast<const uint8_t*>((static_cast<uint64_t>(w[1]) << 32) | w[0]);
  d.sf = reinterpret_cast<const uint8_t*>((static_cast<uint64_t>(w[3]) << 32) | w[2]);
  d.qoff[0] = w[4];
  d.qoff[1] = w[5];
  d.qoff[2] = w[6];
  d.sf_qstride = w[7];
  return d;
}

// A CTA of W = KS * Wt warps owns Wt consecutive warp tasks of one batch; the KS
// warps of a task split K by stages (warp part kp takes stages kp, kp + KS, ...) and
// add their sums through shared memory at the end. Stages run across the b tiles
// without draining the ring: only the b tile switch is CTA-wide. The per-warp state
// is kept small (one row pointer, row offsets in 32 bits) so that the kernel fits in
// 72 registers: 28 resident warps per SM.
template <int D>
__global__ void __launch_bounds__(kAsyncMaxWarps * 32, 3) gemv_async_kernel(const Args args, int ks_split) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ float s_red[kAsyncMaxWarps][kAsyncRows];
  __shared__ AsyncWarpDesc s_desc[kAsyncMaxWarps];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int wt = (blockDim.x >> 5) / ks_split;  // tasks per CTA
  const int task_local = warp % wt;
  const int kp = warp / wt;                      // K part of this warp
  const int64_t l = blockIdx.x / args.groups_per_batch;
  const int64_t task = (blockIdx.x - l * args.groups_per_batch) * wt + task_local;
  const int64_t blk = task >> 5;
  const int s = static_cast<int>(task & 31);
  const int64_t row0 = blk * 128 + s;  // rows row0 + 32 q, q = 0..3
  // valid rows are a prefix q < n_rows (0 when the task is past the batch's rows)
  const int n_rows = task < args.tasks_per_batch && row0 < args.M
                         ? static_cast<int>((args.M - row0 + 31) / 32 < kAsyncRows ? (args.M - row0 + 31) / 32 : kAsyncRows)
                         : 0;

  const int tile_cap = args.tile_cap;
  uint4* s_b = reinterpret_cast<uint4*>(smem_raw);
  float2* s_sb = reinterpret_cast<float2*>(smem_raw + 64 * static_cast<size_t>(tile_cap));
  unsigned char* ring = smem_raw + b_region_bytes(tile_cap) + static_cast<size_t>(warp) * D * kStageBytes;

  const bool sfa_blocked = args.sf_blocked != 0;
  const int nchunks = args.nchunks;
  // Copy sources. Rows past M copy the last valid row. Scale copies, lanes 0..15
  // (one 16-byte piece each per stage g):
  //   blocked: the 4 rows' scales of K tile t are the 16 bytes at base + 512 * t;
  //            lane i copies tile 16 * g + i.
  //   linear:  lane i copies bytes 64 * g + 16 * (i % 4) .. of row q = i / 4.
  // Bytes copied: clamp(sf_rem - g * sf_rem_step, 0, 16) (blocked: 16 while the tile
  // index is < tiles_k; linear: what is left of the row).
  // The 64-bit bases live in a per-warp descriptor in shared memory, re-read at every
  // issue: kept in registers, the compiler (at 72 registers) would rebuild them with
  // ~60 instructions per stage instead.
  const int sf_q = (lane >> 2) & 3;
  const bool sf_ok = n_rows > 0 && lane < 16 && (sfa_blocked || sf_q < n_rows);
  if (lane == 0) {
    AsyncWarpDesc& d = s_desc[warp];
    d.a = args.a + l * args.a_batch + (n_rows ? row0 : 0) * args.a_row;
    const uint32_t qstride = static_cast<uint32_t>(32 * args.a_row);  // host checks it fits
    d.qoff[0] = (n_rows > 1 ? 1u : 0u) * qstride;
    d.qoff[1] = (n_rows > 2 ? 2u : n_rows > 1 ? 1u : 0u) * qstride;
    d.qoff[2] = static_cast<uint32_t>(max(0, min(3, n_rows - 1))) * qstride;
    d.sf = sfa_blocked ? args.sfa + l * args.sfa_batch + blk * args.sfa_tile_row_bytes + s * 16
                       : args.sfa + l * args.sfa_batch + (n_rows ? row0 : 0) * args.sfa_row;
    d.sf_qstride = sfa_blocked ? 0u : static_cast<uint32_t>(32 * args.sfa_row);
  }
  __syncwarp();
  const uint32_t sf_lane_src = sfa_blocked ? lane * 512 : (lane & 3) * 16;  // + sf_q * sf_qstride (linear)
  const int sf_dst = kStageA + (sfa_blocked ? lane * 16 : sf_q * 64 + (lane & 3) * 16);
  const int sf_src_step = sfa_blocked ? 16 * 512 : 64;  // bytes per stage
  const int sf_rem_step = sfa_blocked ? 256 : 64;
  const int sf_rem = !sf_ok ? -(1 << 30) : sfa_blocked ? (args.tiles_k - lane) * 16 : 2 * nchunks - (lane & 3) * 16;
  // where this lane finds its scale pair inside a stage, and the step between rows
  const int sf_lane_off = sfa_blocked ? kStageA + (lane >> 1) * 16 + (lane & 1) * 2 : kStageA + lane * 2;
  const int sf_row_step = sfa_blocked ? 4 : 64;

  const int n_stages = (nchunks + 31) / 32;
  const int n_mine = n_rows ? (n_stages - kp + ks_split - 1) / ks_split : 0;  // stages of this warp

  // The warp's j-th stage g = kp + KS * j (chunks 32 g + lane) into ring slot `slot`.
  // Nothing is read past K.
  const uint32_t ring_lane = static_cast<uint32_t>(__cvta_generic_to_shared(ring)) + lane * 16;
  const uint32_t ring_sf = static_cast<uint32_t>(__cvta_generic_to_shared(ring)) + sf_dst;
  auto issue = [&](int slot, int j) {
    const int g = kp + ks_split * j;
    const AsyncWarpDesc d = load_desc(&s_desc[warp]);
    if (32 * g + lane < nchunks) {
      const uint32_t st = ring_lane + slot * kStageBytes;
      const uint8_t* src = d.a + (static_cast<int64_t>(g) * 512 + lane * 16);
      cp_async16_s(st, src);
      cp_async16_s(st + 512, src + d.qoff[0]);
      cp_async16_s(st + 1024, src + d.qoff[1]);
      cp_async16_s(st + 1536, src + d.qoff[2]);
    }
    // (a copy of size 0 still zero-fills its 16 destination bytes: lanes 16..31 copy nothing)
    if (lane < 16)
      cp_async16_n_s(ring_sf + slot * kStageBytes,
                     d.sf + (static_cast<int64_t>(g) * sf_src_step + sf_lane_src + sf_q * d.sf_qstride),
                     min(max(sf_rem - g * sf_rem_step, 0), 16));
  };

  float acc[kAsyncRows];
#pragma unroll
  for (int q = 0; q < kAsyncRows; ++q) acc[q] = 0.0f;

  // Prologue before the first b decode, so that these loads overlap it.
#pragma unroll
  for (int i = 0; i < D - 1; ++i) {
    if (i < n_mine) issue(i, i);
    cp_async_commit();
  }
  int j = 0, slot = 0, slot_next = D - 1;  // slot of stage j, of stage j + D - 1
  for (int t0 = 0; t0 < nchunks; t0 += tile_cap) {
    const int tn = min(tile_cap, nchunks - t0);
    if (t0 > 0) __syncthreads();  // all warps done with the previous b tile
    decode_b_tile<true>(s_b, s_sb, tile_cap, args.b + l * args.b_batch, args.sfb + l * args.sfb_batch,
                        args.sfb_blocked != 0, t0, tn);  // b is 16-byte aligned on this path
    __syncthreads();
#pragma unroll 1
    for (; j < n_mine && 32 * (kp + ks_split * j) < t0 + tn; ++j) {
      __syncwarp();  // every lane is done reading the slot refilled now
      if (j + D - 1 < n_mine) issue(slot_next, j + D - 1);
      cp_async_commit();
      cp_async_wait<D - 1>();  // this thread's copies of stage j have landed
      __syncwarp();            // ... and those of the other lanes (scales)
      const int c = 32 * (kp + ks_split * j) - t0 + lane;  // tile-relative chunk
      if (c < tn) {
        const unsigned char* st = ring + slot * kStageBytes;
        uint4 bq[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) bq[q] = s_b[q * tile_cap + c];
        const float2 sb = s_sb[c];
#pragma unroll
        for (int q = 0; q < kAsyncRows; ++q) {
          // Rows past M recompute the last valid row; their sums are dropped.
          const uint4 a = *reinterpret_cast<const uint4*>(st + q * 512 + lane * 16);
          const uint32_t sf2 = *reinterpret_cast<const unsigned short*>(st + sf_lane_off + q * sf_row_step);
          acc[q] = chunk_dot(acc[q], a, bq, sb, sf2);
        }
      }
      slot = slot + 1 == D ? 0 : slot + 1;
      slot_next = slot_next + 1 == D ? 0 : slot_next + 1;
    }
  }
  cp_async_wait<0>();

#pragma unroll
  for (int q = 0; q < kAsyncRows; ++q) acc[q] = warp_sum(acc[q]);
  if (ks_split > 1) {
    if (kp != 0 && lane == 0) {
#pragma unroll
      for (int q = 0; q < kAsyncRows; ++q) s_red[warp][q] = acc[q];
    }
    __syncthreads();
    if (kp != 0) return;
    for (int p = 1; p < ks_split; ++p)
#pragma unroll
      for (int q = 0; q < kAsyncRows; ++q) acc[q] += s_red[warp + p * wt][q];
  }
  if (lane != 0) return;
#pragma unroll
  for (int q = 0; q < kAsyncRows; ++q)
    if (q < n_rows) store_out(args, l, row0 + 32 * q, acc[q]);
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
    if (row_ok[r]) store_out(args, l, row0 + r, acc[r]);
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
// Async-kernel requests in run_gemv's `cfg`: kAsyncCfg + 1000 * depth + 100 * KS + Wt
// (KS = 0: automatic KS and Wt).
constexpr int kAsyncCfg = 10000;
constexpr int kDefaultDepth = 2;

inline int64_t rows_per_cta(int cfg) { return kConfigs[cfg].R * (kWarps / kConfigs[cfg].WK); }

inline int choose_reg_config(int64_t M, int64_t L, int sm_count) {
  for (int cfg = 0; cfg < kNumAutoConfigs; ++cfg) {
    const int64_t ctas = (M + rows_per_cta(cfg) - 1) / rows_per_cta(cfg) * L;
    if (ctas >= sm_count) return cfg;
  }
  return kNumAutoConfigs - 1;
}

template <int R, int U, int WK, bool kAligned>
nvfp4_status_t launch_reg(const Args& args, int64_t ctas, size_t smem, cudaStream_t stream) {
  gemv_reg_kernel<R, U, WK, kAligned><<<static_cast<unsigned>(ctas), kThreads, smem, stream>>>(args);
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
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

// Per-device facts the async launch needs (queried once per device and kernel).
struct AsyncKernelInfo {
  int regs = 0;
  int smem_per_sm = 0;
  int regs_per_sm = 0;
  int max_smem_block = 0;
  bool ready = false;
};

template <int D>
nvfp4_status_t async_info(int device, AsyncKernelInfo* out) {
  constexpr int kMaxDevices = 64;
  static AsyncKernelInfo cache[kMaxDevices];
  AsyncKernelInfo* info = (device >= 0 && device < kMaxDevices) ? &cache[device] : nullptr;
  if (info && info->ready) {
    *out = *info;
    return NVFP4_SUCCESS;
  }
  AsyncKernelInfo v;
  cudaFuncAttributes fa;
  NVFP4_CUDA_TRY(cudaFuncGetAttributes(&fa, gemv_async_kernel<D>));
  v.regs = fa.numRegs;
  int optin = 0;
  NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&v.smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&v.regs_per_sm, cudaDevAttrMaxRegistersPerMultiprocessor, device));
  NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  v.max_smem_block = optin - static_cast<int>(fa.sharedSizeBytes);
  NVFP4_CUDA_TRY(cudaFuncSetAttribute(gemv_async_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      v.max_smem_block));
  v.ready = true;
  if (info) *info = v;  // benign race: every writer stores the same values
  *out = v;
  return NVFP4_SUCCESS;
}

// CTAs of `warps` warps that fit on one SM (0 if none).
inline int async_ctas_per_sm(const AsyncKernelInfo& info, int warps, size_t smem) {
  if (smem > static_cast<size_t>(info.max_smem_block)) return 0;
  const int by_threads = 2048 / (32 * warps);
  const int regs_per_warp = (info.regs * 32 + 255) / 256 * 256;
  const int by_regs = info.regs_per_sm / (regs_per_warp * warps);
  const int by_smem = static_cast<int>(info.smem_per_sm / (smem + 1024));
  return std::min(std::min(by_threads, by_regs), std::min(by_smem, 32));
}

// Picks the warps per CTA (one task each, KS = 1). Measured on an H200 (bench/NOTES.md):
// the kernel is bound by instruction issue once ~14 warps per SM are resident, so
// more warps (or a K split across warps, KS = 2) did not help, while an uneven
// number of CTAs per SM costs directly. So: the W in 4..8 whose CTAs spread most
// evenly over the SMs (single wave: CTAs per SM; several waves: filled slots), at
// least 2 CTAs per SM, ties to the larger W.
inline void choose_async_shape(const AsyncKernelInfo& info, const Args& args, int depth, int64_t L, int sm_count,
                               int* ks_out, int* wt_out) {
  double best = -1.0;
  for (int w = kAsyncMaxWarps; w >= 4; --w) {
    const int per_sm = async_ctas_per_sm(info, w, async_smem_bytes(args.tile_cap, w, depth));
    if (per_sm <= 0) continue;
    const double ctas = static_cast<double>(L * ((args.tasks_per_batch + w - 1) / w));
    const double slots = static_cast<double>(sm_count) * per_sm;
    double balance;
    if (ctas <= slots) {
      const double per = ctas / sm_count;
      balance = per / std::ceil(per);
    } else {
      const double waves = ctas / slots;
      balance = waves / std::ceil(waves);
    }
    const double score = balance * (per_sm >= 2 ? 1.0 : 0.8);
    if (score > best + 1e-9) {
      best = score;
      *ks_out = 1;
      *wt_out = w;
    }
  }
}

template <int D>
nvfp4_status_t launch_async(Args args, int ks, int wt, const Exec& exec, int sm_count, int64_t L) {
  AsyncKernelInfo info;
  const nvfp4_status_t st = async_info<D>(exec.device, &info);
  if (st != NVFP4_SUCCESS) return st;
  args.tile_cap = args.nchunks < kAsyncTileChunks ? args.nchunks : kAsyncTileChunks;
  if (ks <= 0 || wt <= 0) {
    ks = wt = 0;
    choose_async_shape(info, args, D, L, sm_count, &ks, &wt);
    if (ks == 0) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: shared memory too small");
  }
  const int warps = ks * wt;
  const size_t smem = async_smem_bytes(args.tile_cap, warps, D);
  if (warps > kAsyncMaxWarps || async_ctas_per_sm(info, warps, smem) <= 0)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: shared memory too small");
  args.groups_per_batch = (args.tasks_per_batch + wt - 1) / wt;
  const int64_t ctas = args.groups_per_batch * L;
  if (ctas > 0x7FFFFFFF) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemv: grid too large");
  gemv_async_kernel<D><<<static_cast<unsigned>(ctas), 32 * warps, smem, cuda_stream(exec)>>>(args, ks);
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
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
  // The async kernel copies 16-byte pieces of the scales as well.
  const bool sfa16 = aligned_to(p.sfa.data, 16) && (!multi_batch || p.sfa.batch_stride % 16 == 0) &&
                     (sfa_blocked || !multi_row || p.sfa.row_stride % 16 == 0);
  // ... and addresses rows 32, 64, 96 apart with 32-bit offsets
  const bool async_ok = aligned && sfa16 && p.a.row_stride >= 0 && p.a.row_stride * 96 < (int64_t{1} << 32);

  Args args{};
  args.M = p.M;
  args.nchunks = static_cast<int32_t>(p.K / 32);
  args.tile_cap = args.nchunks < kTileChunksMax ? args.nchunks : kTileChunksMax;
  args.tasks_per_batch = (p.M + 127) / 128 * 32;
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

  if (cfg < 0) {
    // The async kernel wherever it is allowed and there are enough warp tasks
    // (4 rows each) to give every SM a dozen warps; else the register kernel.
    const bool many_rows = args.tasks_per_batch * p.L >= 12LL * sm_count && p.M >= 128;
    cfg = (async_ok && many_rows) ? kAsyncCfg + 1000 * kDefaultDepth : choose_reg_config(p.M, p.L, sm_count);
  }
  if (cfg >= kAsyncCfg) {
    if (!async_ok) {
      cfg = choose_reg_config(p.M, p.L, sm_count);
    } else {
      const int depth = (cfg - kAsyncCfg) / 1000, ks = (cfg - kAsyncCfg) / 100 % 10, wt = (cfg - kAsyncCfg) % 100;
      if (depth == 2) return launch_async<2>(args, ks, wt, exec, sm_count, p.L);
      if (depth == 3) return launch_async<3>(args, ks, wt, exec, sm_count, p.L);
      return fail(NVFP4_ERROR_INTERNAL, "sm90a gemv: unknown configuration %d", cfg);
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
