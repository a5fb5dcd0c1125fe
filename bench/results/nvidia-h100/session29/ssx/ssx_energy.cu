// ssx_energy.cu -- session 29: session 21's wgmma_energy.cu (issue 23 energy / rate microbenchmark) + the k_ssx variants (G, below).
//
// Question: under the H100's ~700 W cap our 4096^3 GEMM spends ~21% more energy per GEMM than
// cuBLAS bf16 (bench/NOTES.md "The large-M main loop is power-limited"). How much of that is the
// in-register weight decode (and the accumulator promotion) by itself, against plain wgmma?
// Every kernel: one CTA per SM, 384 threads = 1 idle "producer" warpgroup (setmaxnreg.dec, exits)
// + 2 consumer warpgroups, persistent loop of `iters` groups over operands resident in shared
// memory (copied in once; no global traffic, no mbarriers, no TMA in the loop), one float per
// thread written at the end. Each is run back to back for a few seconds while nvidia-smi samples
// SM clock and board power; the table gives TFLOP/s, MHz, W, pJ/FLOP and FLOP/SM/clock.
//   ss256              m64n256k16 SS (A, B from smem, 128B swizzle, K-major), 4 k16 per group,
//                      wait_group 1: CTA tile 128x256 like cuBLAS/CUTLASS sm90 warp-specialized.
//                      The cuBLAS-like energy baseline (128-register accumulator).
//   ss256_bf16         ss256 with bf16 operands (cuBLAS bf16's instruction; f16 elsewhere).
//   ss128              the same at m64n128k16 (tile 128x128): what halving N costs per FLOP
//                      (more smem operand bytes per MMA).
//   rs128              m64n128k16 RS: A (weights) from registers, two fragment sets of one
//                      128-K block (32 regs = 8 k16) alternating as in our kernel; B (tokens,
//                      2 x 64-K atoms) from a 4-block smem ring. Fragments decoded once before
//                      the loop (same values as below), no decode in the loop: RS vs SS.
//   rs128_decode       rs128 + per block and thread the exact project decode of the next
//                      block (LDS.128 x2 + LDS.U16 x2 from the ring, e2m1/e4m3 -> fp16x2,
//                      HMUL2) into the other fragment set, ordered like
//                      mainloop_rs_predecoded.cuh consumer_step_steady (issue, fetch,
//                      wait_group 1, decode). rs128_decode - rs128 = the decode's energy.
//                      (Keeps 64 untouched "ballast" registers live: E's register budget, else
//                      ptxas renamed the fragment sets and hoisted the decode; see k_rs.)
//   rs128_decode_promo rs128_decode + accumulator_promotion.cuh (every 4 blocks: wait_group 0,
//                      64 FADD into a second 64-register sum, next chain with scale-d = 0).
//                      = our consumer loop minus barriers, TMA and L2 traffic.
//   rs128_q4           (session 20) rs128_decode_promo with each block issued as four commit
//                      groups of two k-steps and the next block decoded a quarter at a time
//                      between them (wait_group 4): branch interleave-groups' consumer step.
// SASS (nvcc 13.0, steady loop, instructions per warp and 128-K block = 8 k16 per warpgroup): rs128 26
// (HGMMA + uniform descriptor moves), rs128_decode 188 (+4 LDS, 64 LOP3, ~56 shifts, 32 HMUL2, 4 PRMT,
// 2 F2FP), rs128_decode_promo 204 (+16 FADD, 1 wait_group 0 per 4 blocks); ss256: 53 per 8 HGMMA.
// No spills, no local memory, no "wgmma serialized" warning; ptxas reports 168 registers (the
// launch cap), the consumers use up to R206 (rs decode), R151 (ss256, rs128), R87 (ss128).
// Not modelled (the difference to the real kernels): the producer's TMA / L2->SM traffic,
// mbarrier waits/arrives, the epilogue, tile scheduling.
// --data rand: SS operands and the RS B operand are random fp16 in [-1, 1] (dense random data,
// like the randn bf16 of the cuBLAS reference); --data fp4: every fp16 smem operand holds exactly decoded fp4
// values (e2m1 * e4m3[0x30, 0x40) * 2^-14: what our pre-decoded tokens look like). The RS A
// operand is always the decoded fp4 weights (random nibbles, scale bytes in [0x30, 0x40)).
// Build: nvcc -arch=sm_90a -O3 -std=c++17 wgmma_energy.cu -o wgmma_energy
// Run:   ./wgmma_energy [--kernel all|idle|NAME[,NAME..]] [--seconds 3] [--data rand|fp4]
//                       [--launch-ms 10] [--gap 1]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

// CUDA 13's nvcc -arch=sm_90a also emits portable compute_90 PTX, where wgmma / setmaxnreg do
// not exist: the kernel bodies are compiled only for the sm_90a feature set.
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MB_NO_SM90A 1
#endif

#define CK(x)                                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } \
  } while (0)

// ---- PTX helpers: copied from cpp/src/sm90/ptx.cuh (+ the two SS wgmma forms, new) ----------
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint32_t lds_u16(uint32_t addr) {
  uint16_t v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
template <int N> __device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N)); }
template <int N> __device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N)); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
__device__ __forceinline__ void fence_reg(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
__device__ __forceinline__ void fence_reg(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ uint64_t smem_desc_sw128(uint32_t addr) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFFu) >> 4);  // start address
  d |= static_cast<uint64_t>(1) << 16;                  // leading byte offset (unused with swizzle)
  d |= static_cast<uint64_t>(1024 >> 4) << 32;          // stride byte offset: 8 rows x 128 B
  d |= static_cast<uint64_t>(1) << 62;                  // 128-byte swizzle
  return d;
}
__device__ __forceinline__ uint64_t smem_desc_advance(uint64_t desc, uint32_t byte_offset) {
  const uint32_t lo = static_cast<uint32_t>(desc) + (byte_offset >> 4);
  return (desc & 0xFFFFFFFF00000000ull) | lo;
}

#define MB_R64                                                                             \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                 \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "       \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "       \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define MB_R128_HI                                                                         \
  ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "     \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "       \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define MB_F8(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), \
                    "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define MB_F64(d, i) MB_F8(d, i), MB_F8(d, i + 8), MB_F8(d, i + 16), MB_F8(d, i + 24), MB_F8(d, i + 32), \
                     MB_F8(d, i + 40), MB_F8(d, i + 48), MB_F8(d, i + 56)

// D(64x128 f32) = A(64x16 f16, registers) * B(16x128, smem) + (scale_d ? D : 0)   [ptx.cuh]
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], uint32_t a0, uint32_t a1, uint32_t a2,
                                                    uint32_t a3, uint64_t desc_b, uint32_t scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" MB_R64 "}, "
               "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
               : MB_F64(d, 0)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc_b), "r"(scale_d));
}
// D(64x128 f32) = A(64x16 f16, smem K-major) * B(16x128, smem K-major) + (scale_d ? D : 0)
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" MB_R64 "}, "
               "%64, %65, p, 1, 1, 0, 0;\n}\n"
               : MB_F64(d, 0)
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
// D(64x256 f32) = A(64x16 T, smem K-major) * B(16x256 T, smem K-major) + (scale_d ? D : 0), T = f16
// or bf16 (ss256_bf16: what cuBLAS bf16 runs)
#define MB_WGMMA_SS256(T)                                                                    \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                               \
               "wgmma.mma_async.sync.aligned.m64n256k16.f32." T "." T " {" MB_R64 MB_R128_HI "}, " \
               "%128, %129, p, 1, 1, 0, 0;\n}\n"                                           \
               : MB_F64(d, 0), MB_F64(d, 64)                                                 \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d))
template <bool kBf16>
__device__ __forceinline__ void wgmma_m64n256k16_ss(float (&d)[128], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
  if constexpr (kBf16) MB_WGMMA_SS256("bf16");
  else MB_WGMMA_SS256("f16");
}

// ---- decode: copied verbatim from cpp/src/sm90/collective/fp4_decode.cuh -------------------
template <int P>
__device__ __forceinline__ uint32_t e2m1x2_to_f16x2_scaled(uint32_t q) {
  const uint32_t x = q << (12 - 4 * P);
  return (x & 0x80008000u) | ((x >> 3) & 0x0E000E00u);
}
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t two_bytes) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two_bytes & 0xFFFFu),
                                                   __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}
__device__ __forceinline__ uint32_t bcast_lo(uint32_t h2) { return __byte_perm(h2, 0, 0x1010); }
__device__ __forceinline__ uint32_t bcast_hi(uint32_t h2) { return __byte_perm(h2, 0, 0x3232); }
__device__ __forceinline__ uint32_t hmul2_u32(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
template <int P>
__device__ __forceinline__ uint32_t decode_pair(uint32_t q, uint32_t scale2) {
  return hmul2_u32(e2m1x2_to_f16x2_scaled<P>(q), scale2);
}
__device__ __forceinline__ void decode_w_fragments(const uint4& a, const uint4& b, uint32_t sa, uint32_t sb,
                                                   uint32_t (&f)[32]) {
  const uint32_t ha = e4m3x2_to_f16x2(sa), hb = e4m3x2_to_f16x2(sb);
  const uint32_t sa2[2] = {bcast_lo(ha), bcast_hi(ha)};
  const uint32_t sb2[2] = {bcast_lo(hb), bcast_hi(hb)};
  const uint32_t qa[4] = {a.x, a.y, a.z, a.w};
  const uint32_t qb[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    f[8 * w + 0] = decode_pair<0>(qa[w], sa2[w >> 1]);
    f[8 * w + 1] = decode_pair<0>(qb[w], sb2[w >> 1]);
    f[8 * w + 2] = decode_pair<1>(qa[w], sa2[w >> 1]);
    f[8 * w + 3] = decode_pair<1>(qb[w], sb2[w >> 1]);
    f[8 * w + 4] = decode_pair<2>(qa[w], sa2[w >> 1]);
    f[8 * w + 5] = decode_pair<2>(qb[w], sb2[w >> 1]);
    f[8 * w + 6] = decode_pair<3>(qa[w], sa2[w >> 1]);
    f[8 * w + 7] = decode_pair<3>(qb[w], sb2[w >> 1]);
  }
}


// ---- mbarrier helpers: copied from cpp/src/sm90/ptx.cuh (shared addresses as u32) -----------
__device__ __forceinline__ void mbar_init_u32(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_arrive_u32(uint32_t bar) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait_u32(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      " .reg .pred done;\n"
      "WAIT_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra WAIT_%=;\n"
      "}" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// ---- shared-memory images --------------------------------------------------------------------
constexpr int kThreads = 384;
// Session 21 modes: decode one word (two k-steps) of the next block; issue one group of two k-steps.
template <int W>
__device__ __forceinline__ void decode_w_quarter(const uint4& a, const uint4& b, const uint32_t (&sa2)[2],
                                                 const uint32_t (&sb2)[2], uint32_t (&f)[32]) {
  const uint32_t qa = W == 0 ? a.x : W == 1 ? a.y : W == 2 ? a.z : a.w;
  const uint32_t qb = W == 0 ? b.x : W == 1 ? b.y : W == 2 ? b.z : b.w;
  f[8 * W + 0] = decode_pair<0>(qa, sa2[W >> 1]);
  f[8 * W + 1] = decode_pair<0>(qb, sb2[W >> 1]);
  f[8 * W + 2] = decode_pair<1>(qa, sa2[W >> 1]);
  f[8 * W + 3] = decode_pair<1>(qb, sb2[W >> 1]);
  f[8 * W + 4] = decode_pair<2>(qa, sa2[W >> 1]);
  f[8 * W + 5] = decode_pair<2>(qb, sb2[W >> 1]);
  f[8 * W + 6] = decode_pair<3>(qa, sa2[W >> 1]);
  f[8 * W + 7] = decode_pair<3>(qb, sb2[W >> 1]);
}

constexpr int kRing = 4;                        // stages (SS) / K blocks (RS) resident in smem
constexpr uint32_t kAtomA = 64 * 128;           // SS: one WG's A, 64 rows x 64 K fp16 (128B rows)
__host__ __device__ constexpr uint32_t ss_stage_bytes(int n) { return 2 * kAtomA + static_cast<uint32_t>(n) * 128u; }
constexpr uint32_t kXAtom = 128 * 128;          // RS: 128 token rows x 64 K fp16
constexpr uint32_t kRsW = 2 * kXAtom;           // packed weights: 128 rows x 64 B (64-byte swizzle)
constexpr uint32_t kRsSf = kRsW + 128 * 64;     // scales: 128 rows x 8 e4m3 bytes
constexpr uint32_t kRsStage = kRsSf + 128 * 8;  // 41984 = 41 KB (a multiple of 1024)
static_assert(kRsStage % 1024 == 0, "stage alignment");

struct Args {
  const uint4* src;  // smem image (copied in once)
  int src_vec;       // its size in 16-byte vectors
  int iters;         // groups per CTA (a multiple of 64; runtime: the loops cannot be folded)
  float* out;        // one float per thread
  uint32_t sf_odd;   // k_ring: the odd K block's scale offset (0 here; runtime, as the kernel's)
};

// Copies the image into 1024-aligned dynamic smem; returns its shared address.
__device__ __forceinline__ uint32_t load_image(uint8_t* smem_raw, const Args& a) {
  const uint32_t raw = smem_u32(smem_raw);
  uint8_t* smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
  uint4* d = reinterpret_cast<uint4*>(smem);
  for (int i = threadIdx.x; i < a.src_vec; i += blockDim.x) d[i] = a.src[i];
  fence_proxy_async_smem();  // generic-proxy writes, read by wgmma (async proxy)
  __syncthreads();
  return __shfl_sync(0xffffffffu, smem_u32(smem), 0);  // provably warp-uniform: descriptors in URs
}

// ---- A/B: SS kernels (cuBLAS-like) -----------------------------------------------------------
template <int N, bool kBf16 = false>
__global__ void __launch_bounds__(kThreads, 1) k_ss(Args a) {
#ifdef MB_NO_SM90A
  __trap();
#else
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = load_image(smem_raw, a);
  // warp-uniform by construction (CUTLASS canonical_warp_group_idx): the descriptors stay in
  // uniform registers (without it: 2 R2UR + MOVs per wgmma in the loop)
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x >> 7), 0);
  if (wg == 0) {  // idle producer warpgroup
    setmaxnreg_dec<40>();
    a.out[blockIdx.x * kThreads + threadIdx.x] = 0.0f;
    return;
  }
  setmaxnreg_inc<232>();  // 128 * 40 + 256 * 232 <= 65536 (CUTLASS's split)
  constexpr uint32_t kStage = ss_stage_bytes(N);
  const uint64_t da0 = smem_desc_sw128(base + (wg - 1) * kAtomA), db0 = smem_desc_sw128(base + 2 * kAtomA);
  float acc[N / 2];
#pragma unroll
  for (int k = 0; k < N / 2; ++k) acc[k] = 0.0f;
  for (int g = 0; g < a.iters; g += kRing) {
#pragma unroll
    for (int s = 0; s < kRing; ++s) {                 // stage s: one 64-K group of 4 k16 steps
      const bool fresh = s == 0 && (g & 63) == 0;     // a new 4096-K chain (a GEMM tile's K)
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const uint32_t off = s * kStage + ks * 32;
        const uint32_t sd = ks == 0 && fresh ? 0u : 1u;
        if constexpr (N == 256)
          wgmma_m64n256k16_ss<kBf16>(acc, smem_desc_advance(da0, off), smem_desc_advance(db0, off), sd);
        else
          wgmma_m64n128k16_ss(acc, smem_desc_advance(da0, off), smem_desc_advance(db0, off), sd);
      }
      wgmma_commit();
      wgmma_wait<1>();
    }
  }
  wgmma_wait<0>();
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < N / 2; ++k) fence_reg(acc[k]);
#pragma unroll
  for (int k = 0; k < N / 2; ++k) sum += acc[k];
  a.out[blockIdx.x * kThreads + threadIdx.x] = sum;
#endif
}

// ---- C/D/E: RS kernels (our consumer loop) ---------------------------------------------------
// kMode 0 = constant fragments (rs128), 1 = + decode (rs128_decode), 2 = + promotion.
struct WRaw {
  uint4 a, b;
  uint32_t sa, sb;
};
struct RsThread {
  uint32_t woff0, woff1, sfoff0, sfoff1;  // in-stage offsets of this thread's bytes / scales
};
__device__ __forceinline__ WRaw fetch_w(uint32_t st, const RsThread& c) {  // mainloop_rs.cuh fetch_w_from
  WRaw w;
  w.a = lds128(st + c.woff0);
  w.b = lds128(st + c.woff1);
  w.sa = lds_u16(st + c.sfoff0);
  w.sb = lds_u16(st + c.sfoff1);
  return w;
}
// mainloop_rs.cuh issue_block / mma_block: 8 k16 steps over the two 64-K token atoms at xbase.
__device__ __forceinline__ void issue_block(float (&acc)[64], uint32_t (&f)[32], uint32_t xbase, uint32_t fresh) {
#pragma unroll
  for (int k = 0; k < 32; ++k) fence_reg(f[k]);
  wgmma_fence();
  const uint64_t desc0 = smem_desc_sw128(xbase);
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) {
    const uint32_t off = (ks >> 2) * kXAtom + (ks & 3) * 32;
    wgmma_m64n128k16_rs(acc, f[4 * ks + 0], f[4 * ks + 1], f[4 * ks + 2], f[4 * ks + 3],
                        smem_desc_advance(desc0, off), ks == 0 && fresh ? 0u : 1u);
  }
  wgmma_commit();
}
template <int Q>
__device__ __forceinline__ void issue_quarter(float (&acc)[64], uint32_t (&f)[32], uint32_t xbase, uint32_t fresh) {
  if constexpr (Q == 0) {
#pragma unroll
    for (int k = 0; k < 32; ++k) fence_reg(f[k]);
    wgmma_fence();
  }
  const uint64_t desc0 = smem_desc_sw128(xbase);
#pragma unroll
  for (int ks = 2 * Q; ks < 2 * Q + 2; ++ks) {
    const uint32_t off = (ks >> 2) * kXAtom + (ks & 3) * 32;
    wgmma_m64n128k16_rs(acc, f[4 * ks + 0], f[4 * ks + 1], f[4 * ks + 2], f[4 * ks + 3],
                        smem_desc_advance(desc0, off), ks == 0 && fresh ? 0u : 1u);
  }
  wgmma_commit();
}
// accumulator_promotion.cuh AccumulatorPromotionT::promote
__device__ __forceinline__ void promote(float (&total)[64], float (&acc)[64]) {
#pragma unroll
  for (int k = 0; k < 64; ++k) fence_reg(acc[k]);
#pragma unroll
  for (int k = 0; k < 64; ++k) total[k] += acc[k];
}
// Block U (0..3) of a steady group, mirroring mainloop_rs_predecoded.cuh consumer_step_steady:
// [promote], issue block U with `cur`, fetch block U+1's bytes, wait_group 1, decode into `nxt`.
template <int kMode, int U>
__device__ __forceinline__ void rs_step(uint32_t base, const RsThread& c, float (&acc)[64], float (&total)[64],
                                        uint32_t (&cur)[32], uint32_t (&nxt)[32], uint32_t fresh) {
  if constexpr (kMode >= 2 && U == 0) {
    wgmma_wait<0>();
    promote(total, acc);
  }
  if constexpr (kMode == 3) {  // rs128_q4: four groups of two k-steps, the next block decoded a quarter at a time
    const uint32_t xb = base + U * kRsStage;
    issue_quarter<0>(acc, cur, xb, fresh);
    const WRaw w = fetch_w(base + ((U + 1) % kRing) * kRsStage, c);
    const uint32_t ha = e4m3x2_to_f16x2(w.sa), hb = e4m3x2_to_f16x2(w.sb);
    const uint32_t sa2[2] = {bcast_lo(ha), bcast_hi(ha)}, sb2[2] = {bcast_lo(hb), bcast_hi(hb)};
    wgmma_wait<4>();
#pragma unroll
    for (int k = 0; k < 8; ++k) fence_reg(nxt[k]);
    decode_w_quarter<0>(w.a, w.b, sa2, sb2, nxt);
    issue_quarter<1>(acc, cur, xb, fresh);
    wgmma_wait<4>();
#pragma unroll
    for (int k = 8; k < 16; ++k) fence_reg(nxt[k]);
    decode_w_quarter<1>(w.a, w.b, sa2, sb2, nxt);
    issue_quarter<2>(acc, cur, xb, fresh);
    wgmma_wait<4>();
#pragma unroll
    for (int k = 16; k < 24; ++k) fence_reg(nxt[k]);
    decode_w_quarter<2>(w.a, w.b, sa2, sb2, nxt);
    issue_quarter<3>(acc, cur, xb, fresh);
    wgmma_wait<4>();
#pragma unroll
    for (int k = 24; k < 32; ++k) fence_reg(nxt[k]);
    decode_w_quarter<3>(w.a, w.b, sa2, sb2, nxt);
    return;
  }
  issue_block(acc, cur, base + U * kRsStage, fresh);
  WRaw w{};
  if constexpr (kMode >= 1) w = fetch_w(base + ((U + 1) % kRing) * kRsStage, c);
  wgmma_wait<1>();
#pragma unroll
  for (int k = 0; k < 32; ++k) fence_reg(nxt[k]);
  if constexpr (kMode >= 1) decode_w_fragments(w.a, w.b, w.sa, w.sb, nxt);
}

template <int kMode>
__global__ void __launch_bounds__(kThreads, 1) k_rs(Args a) {
#ifdef MB_NO_SM90A
  __trap();
#else
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = load_image(smem_raw, a);
  if (threadIdx.x < 128) {  // idle producer warpgroup
    setmaxnreg_dec<56>();
    a.out[blockIdx.x * kThreads + threadIdx.x] = 0.0f;
    return;
  }
  setmaxnreg_inc<224>();  // the project's split (mainloop_rs_predecoded.cuh)
  // Fragment rows r0, r0 + 8 and quad t of this consumer thread (mainloop_rs.cuh init_cursor).
  const int ctid = threadIdx.x - 128, cw = ctid >> 5, lane = ctid & 31;
  const uint32_t r0 = (cw >> 2) * 64 + (cw & 3) * 16 + (lane >> 2), r1 = r0 + 8, t = lane & 3;
  RsThread c;
  c.woff0 = kRsW + r0 * 64u + ((t ^ ((r0 >> 1) & 3u)) << 4);  // sw64_offset
  c.woff1 = kRsW + r1 * 64u + ((t ^ ((r1 >> 1) & 3u)) << 4);
  c.sfoff0 = kRsSf + r0 * 8u + 2u * t;  // sf_offset, row-major scales (8 per row)
  c.sfoff1 = kRsSf + r1 * 8u + 2u * t;
  float acc[64], total[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) acc[k] = total[k] = 0.0f;
  if constexpr (kMode == 1) {
    // rs128_decode: `total` is ballast, live through the loop but untouched (64 registers, no
    // instructions in the loop; loaded, so not rematerializable), so that ptxas has E's register
    // budget and schedules the decode as in E (after wait_group 1); with those registers free it
    // renamed the fragment sets and hoisted the decode into the wgmma issue of the previous block.
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      const uint4 v = a.src[(threadIdx.x * 16 + k) % a.src_vec];
      total[4 * k] = __uint_as_float(v.x & 0x3FFFFFFFu);  // finite floats
      total[4 * k + 1] = __uint_as_float(v.y & 0x3FFFFFFFu);
      total[4 * k + 2] = __uint_as_float(v.z & 0x3FFFFFFFu);
      total[4 * k + 3] = __uint_as_float(v.w & 0x3FFFFFFFu);
    }
  }
  uint32_t f[2][32];  // compile-time indices only
  {
    const WRaw w0 = fetch_w(base, c);
    decode_w_fragments(w0.a, w0.b, w0.sa, w0.sb, f[0]);
    const WRaw w1 = fetch_w(base + kRsStage, c);  // rs128: the constant second set
    decode_w_fragments(w1.a, w1.b, w1.sa, w1.sb, f[1]);
  }
  for (int i = 0; i < a.iters; i += kRing) {
    // chain starts: every 4 blocks with promotion, else every 32 blocks (4096 K)
    const uint32_t fresh0 = kMode >= 2 ? 1u : ((i & 31) == 0 ? 1u : 0u);
    rs_step<kMode, 0>(base, c, acc, total, f[0], f[1], fresh0);
    rs_step<kMode, 1>(base, c, acc, total, f[1], f[0], 0u);
    rs_step<kMode, 2>(base, c, acc, total, f[0], f[1], 0u);
    rs_step<kMode, 3>(base, c, acc, total, f[1], f[0], 0u);
  }
  wgmma_wait<0>();
  if constexpr (kMode >= 2) promote(total, acc);
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < 64; ++k) fence_reg(acc[k]);
#pragma unroll
  for (int k = 0; k < 64; ++k) sum += kMode >= 2 ? total[k] : kMode == 1 ? acc[k] + total[k] : acc[k];
  a.out[blockIdx.x * kThreads + threadIdx.x] = sum;
#endif
}


// ---- F: the kernel's exact consumer step (session 21) ------------------------------------------
// k_ring<kBar, kLanes>: rs128_decode_promo's math with mainloop_rs_predecoded.cuh's consumer_step_steady
// bookkeeping: a 5-stage ring (kRing5) walked with run-time stage / phase / K-block counters (the
// kernel's ConsumerState), the B descriptor rebuilt from the run-time stage address, the odd block's
// scale offset (kb & 1) * sf_odd. kBar: + the full-barrier wait before the fetch and the release of
// the previous stage after wait_group 1 (kLanes = 32: every lane arrives, as the kernel; 1: lane 0
// after __syncwarp), fed by a producer warp that only arrives (no TMA: the data stay resident).
//   rs128_ring5       no barriers (the bookkeeping alone)
//   rs128_ring5_bar   + barriers, every lane releases (the kernel's protocol)
//   rs128_ring5_bar1  + barriers, lane 0 releases
constexpr int kRing5 = 5;
struct RingState {
  uint32_t ring0, bars, sf_odd;
  int mstage, stage, sphase;
  int32_t kb;
};
template <bool kFresh, bool kBar, int kLanes>
__device__ __forceinline__ void ring_step(RingState& c, const RsThread& t, float (&acc)[64], float (&total)[64],
                                          uint32_t (&cur)[32], uint32_t (&nxt)[32]) {
  const int ms = c.mstage;
  const uint32_t xbase = c.ring0 + ms * kRsStage;
  if constexpr (kFresh) {
    wgmma_wait<0>();
    promote(total, acc);
  }
  issue_block(acc, cur, xbase, kFresh ? 1u : 0u);
  if constexpr (kBar) mbar_wait_u32(c.bars + c.stage * 8u, c.sphase);
  const uint32_t st = c.ring0 + c.stage * kRsStage;
  const uint32_t sf_kb = (static_cast<uint32_t>(c.kb) & 1u) * c.sf_odd;
  WRaw w;
  w.a = lds128(st + t.woff0);
  w.b = lds128(st + t.woff1);
  w.sa = lds_u16(st + t.sfoff0 + sf_kb);
  w.sb = lds_u16(st + t.sfoff1 + sf_kb);
  ++c.kb;
  if (++c.stage == kRing5) { c.stage = 0; c.sphase ^= 1; }
  wgmma_wait<1>();
#pragma unroll
  for (int k = 0; k < 32; ++k) fence_reg(nxt[k]);
  if constexpr (kBar) {
    __syncwarp();
    if (kLanes == 32 || (threadIdx.x & 31) == 0)
      mbar_arrive_u32(c.bars + kRing5 * 8u + (ms == 0 ? kRing5 - 1 : ms - 1) * 8u);
  }
  c.mstage = ms + 1 == kRing5 ? 0 : ms + 1;
  decode_w_fragments(w.a, w.b, w.sa, w.sb, nxt);
}
// kPark: warps 1..3 of the producer warpgroup wait on a named barrier for the whole loop (as the
// kernels' epilogue warps do: bar.sync 1, 384 at the tile's end) instead of exiting.
__device__ __forceinline__ void park_sync() { asm volatile("bar.sync 1, 384;" ::: "memory"); }
template <bool kBar, int kLanes, bool kPark = false>
__global__ void __launch_bounds__(kThreads, 1) k_ring(Args a) {
#ifdef MB_NO_SM90A
  __trap();
#else
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = load_image(smem_raw, a);
  const uint32_t bars = base + kRing5 * kRsStage;  // full[5], empty[5]
  if (threadIdx.x == 0) {
    for (int s = 0; s < kRing5; ++s) {
      mbar_init_u32(bars + s * 8u, 1);
      mbar_init_u32(bars + (kRing5 + s) * 8u, 8 * kLanes);
    }
    mbar_init_fence();
  }
  __syncthreads();
  if (threadIdx.x < 128) {  // producer warpgroup: warp 0 arrives on the full barriers (kBar)
    setmaxnreg_dec<56>();
    if (kBar && threadIdx.x < 32) {
      int stage = 0, phase = 0;
      for (int i = 0; i <= a.iters; ++i) {  // blocks 0..iters are fetched by the consumers
        if (i >= kRing5) mbar_wait_u32(bars + (kRing5 + stage) * 8u, phase ^ 1);
        if (threadIdx.x == 0) mbar_arrive_u32(bars + stage * 8u);
        if (++stage == kRing5) { stage = 0; phase ^= 1; }
      }
    }
    if (kPark) park_sync();
    a.out[blockIdx.x * kThreads + threadIdx.x] = 0.0f;
    return;
  }
  setmaxnreg_inc<224>();
  const int ctid = threadIdx.x - 128, cw = ctid >> 5, lane = ctid & 31;
  const uint32_t r0 = (cw >> 2) * 64 + (cw & 3) * 16 + (lane >> 2), r1 = r0 + 8, tq = lane & 3;
  RsThread t;
  t.woff0 = kRsW + r0 * 64u + ((tq ^ ((r0 >> 1) & 3u)) << 4);
  t.woff1 = kRsW + r1 * 64u + ((tq ^ ((r1 >> 1) & 3u)) << 4);
  t.sfoff0 = kRsSf + r0 * 8u + 2u * tq;
  t.sfoff1 = kRsSf + r1 * 8u + 2u * tq;
  RingState c{base, bars, a.sf_odd, 0, 0, 0, 0};
  float acc[64], total[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) acc[k] = total[k] = 0.0f;
  uint32_t f[2][32];
  {  // block 0 (the kernel's load_w_fragments)
    if constexpr (kBar) mbar_wait_u32(c.bars, 0);
    WRaw w;
    w.a = lds128(base + t.woff0);
    w.b = lds128(base + t.woff1);
    w.sa = lds_u16(base + t.sfoff0);
    w.sb = lds_u16(base + t.sfoff1);
    c.stage = 1;
    c.kb = 1;
    decode_w_fragments(w.a, w.b, w.sa, w.sb, f[0]);
  }
  for (int i = 0; i < a.iters; i += 4) {  // steady groups of 4 blocks, a chain each
    ring_step<true, kBar, kLanes>(c, t, acc, total, f[0], f[1]);
    ring_step<false, kBar, kLanes>(c, t, acc, total, f[1], f[0]);
    ring_step<false, kBar, kLanes>(c, t, acc, total, f[0], f[1]);
    ring_step<false, kBar, kLanes>(c, t, acc, total, f[1], f[0]);
  }
  wgmma_wait<0>();
  promote(total, acc);
  if (kPark) park_sync();
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < 64; ++k) sum += total[k];
  a.out[blockIdx.x * kThreads + threadIdx.x] = sum;
#endif
}


// ---- G (session 29): SS m64n192 with the weights decoded into shared memory by a third warpgroup ----
// Question (issue 23): the RS design's consumer step (decode in the consumers' registers + promotion) is
// bounded at ~0.90 of the cuBLAS-like SS loop per cycle (session 21) and its register budget caps the token
// tile at 128-136. Does an SS loop whose A operand (the weights, fp16) is written into a shared-memory ring
// by a *transform* warpgroup (the decode off the consumers' path), with a 192-token tile (accumulator 96 +
// promoted sum 96 registers), keep the tensor pipe as busy as ss256? Loop unit = one 64-K stage: A 128 rows
// x 64 K fp16 (two 8 KB 128B-swizzled atoms, one per consumer warpgroup), B 192 tokens x 64 K (24 KB).
//   ss192         SS m64n192k16, A and B static (no transform, no promotion): the tile's own rate
//   ss192_promo   ss192 + promotion every 8 stages (512 K, as the library: 4 blocks of 128 K)
//   ssx192        ss192_promo with A written per stage by the transform warpgroup (warpgroup 0, 128
//                 threads, one weight row each: 32 bytes of e2m1 + 4 e4m3 scales -> 64 fp16 = 8 chunks of
//                 16 B, K permuted inside each 8-value chunk (pairs (j, j+4)), which the token pass would
//                 mirror) into a 4-stage A ring; full / empty mbarriers; fence.proxy.async before the arrive.
// Registers: consumers setmaxnreg 224 (96 + 96 + descriptors), transform 56 (128 x 56 + 256 x 224 = 64512).
constexpr int kSsxN = 192;
constexpr int kSsxA = 4;                                 // A ring stages
constexpr uint32_t kSsxAStage = 2 * kAtomA;              // 16 KB: 128 rows x 64 K fp16
constexpr uint32_t kSsxBStage = kSsxN * 128u;            // 24 KB
constexpr uint32_t kSsxBOff = kSsxA * kSsxAStage;        // B ring after the A ring
constexpr uint32_t kSsxSrcOff = kSsxBOff + kRing * kSsxBStage;  // e2m1 source: 4 stages x 128 rows x 32 B
constexpr uint32_t kSsxSfOff = kSsxSrcOff + 4 * 128 * 32;       // scales: 4 stages x 128 rows x 4 B
constexpr uint32_t kSsxImage = kSsxSfOff + 4 * 128 * 4;         // 182272 B
constexpr uint32_t kSsxBars = kSsxImage;                         // full[4], empty[4]

#define MB_R96                                                                             \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                 \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "       \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "       \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "       \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "       \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
// D(64x192 f32) = A(64x16 f16, smem K-major) * B(16x192 f16, smem K-major) + (scale_d ? D : 0)
__device__ __forceinline__ void wgmma_m64n192k16_ss(float (&d)[96], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {" MB_R96 "}, "
               "%96, %97, p, 1, 1, 0, 0;\n}\n"
               : MB_F64(d, 0), MB_F8(d, 64), MB_F8(d, 72), MB_F8(d, 80), MB_F8(d, 88)
               : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
__device__ __forceinline__ void promote96(float (&total)[96], float (&acc)[96]) {
#pragma unroll
  for (int k = 0; k < 96; ++k) fence_reg(acc[k]);
#pragma unroll
  for (int k = 0; k < 96; ++k) total[k] += acc[k];
}
__device__ __forceinline__ void sts128(uint32_t addr, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}

// One transform stage: row r's 64 values of source stage `src` into A ring stage `dst` (128B swizzle);
// kTwice: also into the row kAtomA further (ssx192_h: one decode, two stores).
template <bool kTwice = false>
__device__ __forceinline__ void transform_row(uint32_t base, int src, uint32_t dst_row, uint32_t r) {
  const uint32_t q_addr = base + kSsxSrcOff + src * (128u * 32u) + r * 32u;
  const uint4 qa = lds128(q_addr), qb = lds128(q_addr + 16);
  const uint32_t sf = lds32(base + kSsxSfOff + src * (128u * 4u) + r * 4u);
  const uint32_t h01 = e4m3x2_to_f16x2(sf & 0xFFFFu), h23 = e4m3x2_to_f16x2(sf >> 16);
  const uint32_t s2[4] = {bcast_lo(h01), bcast_hi(h01), bcast_lo(h23), bcast_hi(h23)};
  const uint32_t q[8] = {qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w};
#pragma unroll
  for (int c = 0; c < 8; ++c) {  // chunk c = word c = values 8c..8c+7 (scale c / 2)
    const uint32_t sc = s2[c >> 1];
    const uint32_t d0 = decode_pair<0>(q[c], sc), d1 = decode_pair<1>(q[c], sc), d2 = decode_pair<2>(q[c], sc),
                   d3 = decode_pair<3>(q[c], sc);
    const uint32_t at = dst_row + ((static_cast<uint32_t>(c) ^ (r & 7u)) << 4);
    sts128(at, d0, d1, d2, d3);
    if constexpr (kTwice) sts128(at + kAtomA, d0, d1, d2, d3);
  }
}

// Half-decode probes (what a decode shared by the two CTAs of a cluster would leave each SM): threads 0..63 of
// the transform warpgroup decode rows 0..63 only; kHalf 1 (ssx192_h): each writes its row twice (rows r and
// r + 64: all 16 KB of A stores, half the decode), kHalf 2 (ssx192_q): once (half the stores too; rows 64..127
// keep stale values). h near ssx192 = shared-memory bound; h near ss192_promo = decode-instruction bound.
template <int kHalf>
__device__ __forceinline__ void transform_stage(uint32_t base, int s, uint32_t row_off, uint32_t r) {
  if constexpr (kHalf == 0) {
    transform_row(base, s, base + s * kSsxAStage + row_off, r);
  } else if (r < 64) {
    transform_row<kHalf == 1>(base, s, base + s * kSsxAStage + row_off, r);
  }
}

// kMode: 0 ss192 (static A, no promotion), 1 ss192_promo, 2 ssx192 (kHalf: the probes above)
template <int kMode, int kHalf = 0>
__global__ void __launch_bounds__(kThreads, 1) k_ssx(Args a) {
#ifdef MB_NO_SM90A
  __trap();
#else
  constexpr bool kTransform = kMode == 2, kPromo = kMode >= 1;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = load_image(smem_raw, a);
  const uint32_t bars = base + kSsxBars;  // full[s] at bars + 8 s, empty[s] at bars + 8 (kSsxA + s)
  if (kTransform && threadIdx.x == 0) {
    for (int s = 0; s < kSsxA; ++s) {
      mbar_init_u32(bars + s * 8u, 128);
      mbar_init_u32(bars + (kSsxA + s) * 8u, 8);
    }
    mbar_init_fence();
  }
  __syncthreads();
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x >> 7), 0);
  if (wg == 0) {  // transform warpgroup (idle in ss192 / ss192_promo)
    setmaxnreg_dec<56>();
    if constexpr (kTransform) {
      const uint32_t r = threadIdx.x;  // weight row
      const uint32_t row_off = (r >> 6) * kAtomA + (r & 63u) * 128u;
      for (int i = 0; i < a.iters; i += kSsxA) {
        const uint32_t pass = static_cast<uint32_t>(i / kSsxA);
#pragma unroll
        for (int s = 0; s < kSsxA; ++s) {
          if (i > 0) mbar_wait_u32(bars + (kSsxA + s) * 8u, (pass - 1) & 1u);
          transform_stage<kHalf>(base, s, row_off, r);
          fence_proxy_async_smem();  // generic-proxy stores, read by wgmma (async proxy)
          mbar_arrive_u32(bars + s * 8u);
        }
      }
    }
    a.out[blockIdx.x * kThreads + threadIdx.x] = 0.0f;
    return;
  }
  setmaxnreg_inc<224>();
  const uint32_t wgi = static_cast<uint32_t>(wg - 1);
  float acc[96], total[96];
#pragma unroll
  for (int k = 0; k < 96; ++k) acc[k] = total[k] = 0.0f;
  for (int g = 0; g < a.iters; g += 8) {  // 8 stages = 512 K = one promotion chain
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int s = u & 3;
      if constexpr (kTransform) mbar_wait_u32(bars + s * 8u, static_cast<uint32_t>(u >> 2));
      const bool fresh = u == 0 && (kPromo || (g & 63) == 0);
      const uint64_t da = smem_desc_sw128(base + s * kSsxAStage + wgi * kAtomA);
      const uint64_t db = smem_desc_sw128(base + kSsxBOff + s * kSsxBStage);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma_m64n192k16_ss(acc, smem_desc_advance(da, ks * 32), smem_desc_advance(db, ks * 32),
                            ks == 0 && fresh ? 0u : 1u);
      wgmma_commit();
      wgmma_wait<1>();
      if constexpr (kTransform) {  // the previous stage's MMAs are done: hand its A buffer back
        if (g > 0 || u > 0) {
          __syncwarp();
          if ((threadIdx.x & 31) == 0) mbar_arrive_u32(bars + (kSsxA + ((s + 3) & 3)) * 8u);
        }
      }
      if constexpr (kPromo) {
        if (u == 7) {
          wgmma_wait<0>();
          promote96(total, acc);
        }
      }
    }
  }
  wgmma_wait<0>();
  if constexpr (kTransform) {  // the last stage (keeps the barrier protocol whole)
    __syncwarp();
    if ((threadIdx.x & 31) == 0) mbar_arrive_u32(bars + (kSsxA + 3) * 8u);
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < 96; ++k) fence_reg(acc[k]);
#pragma unroll
  for (int k = 0; k < 96; ++k) sum += kPromo ? total[k] : acc[k];
  a.out[blockIdx.x * kThreads + threadIdx.x] = sum;
#endif
}

// ---- host ------------------------------------------------------------------------------------
struct KernelDesc {
  const char* name;
  void (*fn)(Args);
  bool rs;
  bool bf16;         // SS operands in bf16
  int n;             // wgmma N
  int k16_per_group; // wgmma per group and warpgroup
  int stages = kRing; // RS image stages (k_ring: 5)
  bool ssx = false;   // session 29's k_ssx image (A ring, B ring, e2m1 source, scales)
};
static const KernelDesc kKernels[] = {
    {"ss256", k_ss<256>, false, false, 256, 4},          {"ss256_bf16", k_ss<256, true>, false, true, 256, 4},
    {"ss128", k_ss<128>, false, false, 128, 4},          {"rs128", k_rs<0>, true, false, 128, 8},
    {"rs128_decode", k_rs<1>, true, false, 128, 8},      {"rs128_decode_promo", k_rs<2>, true, false, 128, 8},
    {"rs128_q4", k_rs<3>, true, false, 128, 8},
    {"rs128_ring5", k_ring<false, 32>, true, false, 128, 8, kRing5},
    {"rs128_ring5_bar", k_ring<true, 32>, true, false, 128, 8, kRing5},
    {"rs128_ring5_bar1", k_ring<true, 1>, true, false, 128, 8, kRing5},
    {"rs128_ring5_bar_park", k_ring<true, 32, true>, true, false, 128, 8, kRing5},
    {"ss192", k_ssx<0>, false, false, 192, 4, kRing, true},
    {"ss192_promo", k_ssx<1>, false, false, 192, 4, kRing, true},
    {"ssx192", k_ssx<2>, false, false, 192, 4, kRing, true},
    {"ssx192_h", k_ssx<2, 1>, false, false, 192, 4, kRing, true},
    {"ssx192_q", k_ssx<2, 2>, false, false, 192, 4, kRing, true},
};

static std::mt19937 rng(12345);
static float e2m1_val(int nib) {
  static const float mag[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};
  return (nib & 8 ? -1.f : 1.f) * mag[nib & 7];
}
static float e4m3_val(int b) {  // normal e4m3 only (bytes 0x30..0x3F here)
  const int e = (b >> 3) & 15, m = b & 7;
  return std::ldexp(1.0f + m / 8.0f, e - 7);
}
static uint8_t scale_byte() { return static_cast<uint8_t>(0x30 + rng() % 16); }
// 16-bit operands: random in [-1, 1], or exactly decoded fp4 values (exact in bf16 too: <= 5
// significant bits), as fp16 or bf16.
static void fill_fp16(std::vector<uint8_t>& img, size_t off, size_t bytes, bool fp4, bool bf16 = false) {
  for (size_t i = 0; i < bytes; i += 2) {
    const float v = fp4 ? e2m1_val(rng() % 16) * e4m3_val(scale_byte()) * std::ldexp(1.0f, -14)
                        : std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
    if (bf16) {
      const __nv_bfloat16 h = __float2bfloat16(v);
      std::memcpy(&img[off + i], &h, 2);
    } else {
      const __half h = __float2half(v);
      std::memcpy(&img[off + i], &h, 2);
    }
  }
}
static std::vector<uint8_t> make_image(const KernelDesc& k, bool fp4) {
  std::vector<uint8_t> img;
  if (k.ssx) {
    img.resize(kSsxImage);
    fill_fp16(img, 0, kSsxSrcOff, fp4);  // A ring (static in ss192*) and B ring
    for (uint32_t i = kSsxSrcOff; i < kSsxSfOff; ++i) img[i] = static_cast<uint8_t>(rng());
    for (uint32_t i = kSsxSfOff; i < kSsxImage; ++i) img[i] = scale_byte();
    return img;
  }
  if (!k.rs) {
    img.resize(kRing * ss_stage_bytes(k.n));
    fill_fp16(img, 0, img.size(), fp4, k.bf16);
  } else {
    img.resize(k.stages * kRsStage);
    for (int s = 0; s < k.stages; ++s) {
      const size_t st = s * size_t(kRsStage);
      fill_fp16(img, st, 2 * kXAtom, fp4);
      for (uint32_t i = kRsW; i < kRsSf; ++i) img[st + i] = static_cast<uint8_t>(rng());
      for (uint32_t i = kRsSf; i < kRsStage; ++i) img[st + i] = scale_byte();
    }
  }
  return img;
}

// nvidia-smi sampler: child process writing into a pipe, read by a thread until EOF.
struct Sampler {
  pid_t pid = -1;
  int fd = -1;
  std::string text;
  std::thread reader;
  void start(const char* bus_id) {
    int p[2];
    if (pipe(p) != 0) { perror("pipe"); exit(1); }
    if ((pid = fork()) == 0) {
      dup2(p[1], 1);
      close(p[0]);
      close(p[1]);
      execlp("nvidia-smi", "nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
             "-lms", "100", "-i", bus_id, (char*)nullptr);
      _exit(127);
    }
    close(p[1]);
    fd = p[0];
    reader = std::thread([this] {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, n);
    });
  }
  // Stops the child (SIGTERM, as clock_probe.py's terminate()); returns the MHz and W columns.
  void stop(std::vector<double>& mhz, std::vector<double>& w) {
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    reader.join();
    close(fd);
    for (size_t pos = 0; pos < text.size();) {
      size_t e = text.find('\n', pos);
      if (e == std::string::npos) e = text.size();
      double m, x;
      if (sscanf(text.substr(pos, e - pos).c_str(), "%lf , %lf", &m, &x) == 2) { mhz.push_back(m); w.push_back(x); }
      pos = e + 1;
    }
  }
};
static double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
static double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int main(int argc, char** argv) {
  std::string which = "all", data = "rand";
  double seconds = 3.0, launch_ms = 10.0, gap = 1.0;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) { fprintf(stderr, "%s needs a value\n", s.c_str()); exit(2); }
      return argv[++i];
    };
    if (s == "--kernel") which = val();
    else if (s == "--seconds") seconds = atof(val());
    else if (s == "--data") data = val();
    else if (s == "--launch-ms") launch_ms = atof(val());
    else if (s == "--gap") gap = atof(val());
    else { fprintf(stderr, "usage: %s [--kernel all|idle|NAME,..] [--seconds S] [--data rand|fp4] [--launch-ms MS] [--gap S]\n", argv[0]); return 2; }
  }
  const bool fp4 = data == "fp4";
  int dev = 0;
  CK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  char bus[64];
  CK(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
  const int sms = prop.multiProcessorCount;
  printf("# %s (%s), %d SMs, data=%s, %.1f s per kernel, ~%.0f ms per launch\n", prop.name, bus, sms, data.c_str(),
         seconds, launch_ms);
  printf("# %-19s %9s %8s %7s %7s %8s %9s %7s %8s %4s\n", "kernel", "TFLOP/s", "MHz", "minMHz", "W", "maxW", "pJ/FLOP",
         "/ss256", "F/SM/clk", "n");
  printf("# (medians of nvidia-smi samples every 100 ms, first 3 dropped; /ss256 = pJ/FLOP over ss256's of this run;\n"
         "#  F/SM/clk = FLOP/s / (SMs x median MHz), dense fp16 peak 4096)\n");
  fflush(stdout);
  std::vector<std::string> names;
  if (which == "all") {
    names.push_back("idle");
    for (const auto& k : kKernels) names.push_back(k.name);
  } else {
    for (size_t p = 0; p <= which.size();) {
      size_t e = which.find(',', p);
      if (e == std::string::npos) e = which.size();
      names.push_back(which.substr(p, e - p));
      p = e + 1;
    }
  }
  float* out = nullptr;
  CK(cudaMalloc(&out, size_t(sms) * kThreads * sizeof(float)));
  uint4* src = nullptr;
  CK(cudaMalloc(&src, 256 * 1024));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double ref_pj = 0.0;
  for (const std::string& name : names) {
    const KernelDesc* k = nullptr;
    for (const auto& kk : kKernels)
      if (name == kk.name) k = &kk;
    if (!k && name != "idle") { fprintf(stderr, "unknown kernel %s\n", name.c_str()); return 2; }
    Args a{src, 0, 64, out, 0u};
    double flop_per_launch = 0.0;
    size_t smem = 0;
    if (k) {
      const std::vector<uint8_t> img = make_image(*k, fp4);
      CK(cudaMemcpy(src, img.data(), img.size(), cudaMemcpyHostToDevice));
      a.src_vec = static_cast<int>(img.size() / 16);
      smem = img.size() + 1024 + 128;  // + alignment + k_ring's barriers
      CK(cudaFuncSetAttribute(k->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
      // calibrate: `iters` (a multiple of 64) for ~launch_ms per launch
      auto launch = [&]() { k->fn<<<sms, kThreads, smem>>>(a); };
      a.iters = 1024;
      launch();
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      CK(cudaEventRecord(e0));
      launch();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0.f;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      const double per_group = ms / a.iters;
      a.iters = std::max(64, static_cast<int>(launch_ms / per_group / 64.0 + 0.5) * 64);
      flop_per_launch = double(sms) * 2 /*WGs*/ * a.iters * k->k16_per_group * 2.0 * 64 * k->n * 16;
      const double t_warm = now_s();  // warm-up ~0.5 s
      while (now_s() - t_warm < 0.5) {
        for (int j = 0; j < 5; ++j) launch();
        CK(cudaDeviceSynchronize());
      }
    }
    Sampler smp;
    smp.start(bus);
    const double t0 = now_s();
    long launches = 0;
    while (now_s() - t0 < seconds) {
      if (k) {
        const int batch = std::max(1, static_cast<int>(100.0 / launch_ms));  // ~100 ms per batch
        for (int j = 0; j < batch; ++j) k->fn<<<sms, kThreads, smem>>>(a);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        launches += batch;
      } else {
        usleep(20000);
      }
    }
    const double dt = now_s() - t0;
    std::vector<double> mhz, w;
    smp.stop(mhz, w);
    const size_t drop = mhz.size() > 3 ? 3 : 0;  // nvidia-smi start / ramp
    mhz.erase(mhz.begin(), mhz.begin() + drop);
    w.erase(w.begin(), w.begin() + drop);
    const double mhz_med = median(mhz), w_med = median(w);
    const double mhz_min = mhz.empty() ? 0 : *std::min_element(mhz.begin(), mhz.end());
    const double w_max = w.empty() ? 0 : *std::max_element(w.begin(), w.end());
    const double flops = launches * flop_per_launch / dt;
    const double pj = flops > 0 ? w_med / flops * 1e12 : 0.0;
    const double per_clk = mhz_med > 0 ? flops / (double(sms) * mhz_med * 1e6) : 0.0;
    if (name == "ss256") ref_pj = pj;
    printf("%-21s %9.1f %8.0f %7.0f %7.1f %8.1f %9.4f %7.3f %8.0f %4zu", name.c_str(), flops * 1e-12, mhz_med, mhz_min,
           w_med, w_max, pj, ref_pj > 0 ? pj / ref_pj : 0.0, per_clk, mhz.size());
    if (k) printf("   (iters %d, %.2f ms/launch)", a.iters, dt / launches * 1e3);
    if (mhz.empty()) printf("   no nvidia-smi samples: %.120s", smp.text.c_str());
    printf("\n");
    fflush(stdout);
    if (gap > 0) usleep(static_cast<useconds_t>(gap * 1e6));
  }
  std::vector<float> h(size_t(sms) * kThreads);
  CK(cudaMemcpy(h.data(), out, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double cs = 0;
  for (float v : h) cs += v;
  printf("# checksum of the last kernel's outputs %g (only keeps the work alive)\n", cs);
  return 0;
}
