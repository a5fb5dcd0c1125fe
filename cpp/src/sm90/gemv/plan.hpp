// Host-side planning of the sm90a GEMV (gemv.cu launches what this file decides):
// which problems it takes, which of its two kernels runs a problem, with which tile
// and warp shape, the occupancy model behind the MMA kernel's shape, and the kernel
// parameters built from the problem. Plain C++ (no CUDA): tests/sm90_host checks
// exactly the code the backend runs, on the CPU.
//
// The two kernels (headers beside this one):
//   reg_kernel.cuh  CUDA cores, a register double buffer, K split across the warps
//                   of a CTA when M*L is small. Takes every problem.
//   mma_kernel.cuh  int8 tensor cores, a cp.async ring per warp, K optionally split
//                   across the warps of a CTA and the CTAs of a cluster. Needs
//                   16-byte aligned operands and enough rows to fill the SMs.
// Kernel choice (choose_gemv), measured on an H200 (bench/NOTES.md "GEMV (sm90a)"):
// the MMA kernel wins from M*L >= 4096 rows, and from 1024 rows where the register
// kernel would split K 4 or 8 ways (1024x4096x4: 8.4 vs 9.4 µs; 2048x7168x1: 8.4 vs
// 7.7 µs for the register kernel, which keeps that shape).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <cmath>

#include "../../common/formats.h"
#include "../../common/align.hpp"
#include "../../problem.hpp"

namespace nvfp4::sm90::gemv_detail {

// ---------------------------------------------------------------------------------
// Kernel parameters (one struct for both kernels)
// ---------------------------------------------------------------------------------
struct Args {
  int64_t M;
  int32_t nchunks;          // K / 32
  int32_t tile_cap;         // b chunks per shared-memory tile (the tile's row pitch)
  int64_t groups_per_batch; // CTAs per batch (MMA kernel: per cluster rank)
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
// Geometry of the register kernel (reg_kernel.cuh)
// ---------------------------------------------------------------------------------
constexpr int kRegThreads = 256;
constexpr int kRegWarps = kRegThreads / 32;
constexpr int kRegTileChunks = 512;             // b chunks (32 K elements) per smem tile
constexpr int kRegSmemBytesPerChunk = 4 * 16 + 8;  // 4 x (4 fp16x2) values + 2 fp32 scales

// R rows per warp, U chunks per lane and stage, K split over WK warps of the CTA.
struct RegShape {
  int R, U, WK;
};
// The shapes the register kernel is built for; choose_reg_shape walks them in order,
// from most rows per CTA to fewest. Measured and dropped (bench/NOTES.md): {4, 2, 1}
// (168+ registers, 1.4x slower) and {2, 2, 1} (10% slower).
constexpr RegShape kRegShapes[] = {
    {4, 1, 1},  // 0: 32 rows / CTA
    {2, 2, 2},  // 1: 8 rows / CTA, K split over 2 warps
    {1, 4, 4},  // 2: 2 rows / CTA, K split over 4 warps
    {1, 4, 8},  // 3: 1 row / CTA, K split over 8 warps
};
constexpr int kNumRegShapes = sizeof(kRegShapes) / sizeof(kRegShapes[0]);

inline int64_t reg_rows_per_cta(int shape) { return kRegShapes[shape].R * (kRegWarps / kRegShapes[shape].WK); }

// The most rows per CTA that still gives every SM a CTA; small M*L is latency bound
// (one DRAM round trip + launch), so K is split instead of leaving SMs idle.
inline int choose_reg_shape(int64_t M, int64_t L, int sm_count) {
  for (int shape = 0; shape < kNumRegShapes; ++shape) {
    const int64_t ctas = (M + reg_rows_per_cta(shape) - 1) / reg_rows_per_cta(shape) * L;
    if (ctas >= sm_count) return shape;
  }
  return kNumRegShapes - 1;
}

// ---------------------------------------------------------------------------------
// Geometry of the MMA kernel (mma_kernel.cuh)
// ---------------------------------------------------------------------------------
constexpr int kMmaRows = 16;           // rows per warp task
constexpr int kMmaTileChunks = 512;    // b tile (chunks): all of b for K <= 16384
constexpr int kMmaMaxWarps = 8;
constexpr int kMmaMaxCluster = 4;      // CTAs splitting one task's K (thread-block cluster)
constexpr int kMmaBChunkBytes = 32 + 8;  // b', {sb0, sb1}
// The one instance built: SC = 16 chunks (256 B of each row) per stage, a ring of D = 2
// stages per warp, LPR = 16 lanes per row in the copies (2 rows x 256 B per copy
// instruction). Measured against the other geometries (bench/NOTES.md "GEMV (sm90a)",
// H200, µs on 7168x16384x1 / 4096x7168x8 / 7168x2048x4): 24.8 / 39.6 / 14.8, vs 25.0 /
// 40.0 / 15.1 with 4 rows x 128 B per copy (LPR 8), 28.5 / 45.5 / 16.0 with 16 rows x
// 32 B; on 7168x16384x1 26.7-29.4 with SC 8 and D 4, 29.0-32.0 with SC 16 and D 3-4.
// SC 32 (512 B per row and stage, a later run): 25.7 / 42.2 / 16.0 against 22.9 / 37.7
// / 13.1 for this one.
constexpr int kMmaSC = 16, kMmaDepth = 2, kMmaLPR = 16;

// Shared memory of one warp's ring stage: even rows, 64 bytes of padding, odd rows
// (the 16-byte reads of a quarter warp, rows g and g + 1, then hit all 32 banks once),
// then the A scales.
NVFP4_HD constexpr int mma_rows_bytes(int sc) { return 16 * sc * 8; }  // 8 rows of a stage
NVFP4_HD constexpr int mma_odd_rows(int sc) { return mma_rows_bytes(sc) + 64; }
NVFP4_HD constexpr int mma_stage_a(int sc) { return mma_odd_rows(sc) + mma_rows_bytes(sc); }
NVFP4_HD constexpr int mma_stage_bytes(int sc) { return mma_stage_a(sc) + 32 * sc; }
// The decoded b tile first, then a 16-byte zero vector, then the rings.
NVFP4_HD uint32_t mma_zero_offset(int tile_cap) {
  return (static_cast<uint32_t>(tile_cap) * kMmaBChunkBytes + 15) / 16 * 16;
}
NVFP4_HD size_t mma_b_region_bytes(int tile_cap) { return (mma_zero_offset(tile_cap) + 16 + 127) / 128 * 128; }
inline size_t mma_smem_bytes(int sc, int tile_cap, int warps, int depth) {
  return mma_b_region_bytes(tile_cap) + static_cast<size_t>(warps) * depth * mma_stage_bytes(sc);
}

// ---------------------------------------------------------------------------------
// What runs: the configuration handed to the launcher
// ---------------------------------------------------------------------------------
enum class GemvKernel { kReg, kMma };

// MMA kernel shape: warps per CTA = ks * wt (<= kMmaMaxWarps); ks warps split each
// task's K inside the CTA (stages interleaved), wt warp tasks per CTA, kc CTAs of a
// thread-block cluster split each task's K (consecutive ranges).
struct MmaShape {
  int ks = 0, wt = 0, kc = 0;
};

// Programmatic dependent launch: 0 off, 1 on, 2 on + the MMA kernel's L2 prefetch of its
// first stage before griddepcontrol.wait. Measured (H200): -2.0..-2.6 µs on every benchmark
// shape back to back; mode 2 0.1-0.6 µs better than mode 1; prefetching 2 or 4 stages
// before the wait was slower (4096x7168x8 38.5 / 40.0 vs 37.9 µs).
constexpr int kPdl = 2;

struct GemvConfig {
  GemvKernel kernel = GemvKernel::kReg;
  // Register kernel: index into kRegShapes. (Its instance with 16-byte loads or the
  // byte-load one follows from the operands: GemvAlignment.)
  int reg_shape = 0;
  // MMA kernel: all zero = chosen by choose_mma_shape once the kernel's resources are
  // known (the launcher queries them).
  MmaShape mma;
  int pdl = kPdl;
  // MMA kernel, L2 prefetch distance beyond the ring (stages). Kept at 0: 1-5 stages were
  // slower on every shape (H200: 7168x16384x1 25.1 -> 27.9..30.1 µs).
  int prefetch_stages = 0;
  // MMA kernel: cap the CTAs per SM at the grid's per-SM share (mma_launch).
  bool even_spread = true;
};

// ---------------------------------------------------------------------------------
// Support and alignment
// ---------------------------------------------------------------------------------

// Why the problem is not taken (NOT_SUPPORTED); nullptr when it is (an empty M or L is
// taken: nothing to launch).
inline const char* gemv_unsupported(const GemmProblem& p) {
  if (p.N != 1) return "sm90a gemv: N must be 1";
  if (p.M <= 0 || p.L <= 0) return nullptr;
  if (p.K <= 0 || p.K % 32 != 0 || p.K / 32 > 0x7FFFFFFF) return "sm90a gemv: K must be a positive multiple of 32";
  if (p.c.dtype != DType::kFloat16 && p.c.dtype != DType::kBFloat16 && p.c.dtype != DType::kFloat32)
    return "sm90a gemv: unsupported output dtype";
  return nullptr;
}

struct GemvAlignment {
  bool aligned;  // 16-byte loads of A and b, 2-byte loads of the scale pairs
  bool mma_ok;   // the MMA kernel's copies too: 16-byte pieces of A's scales
};
inline GemvAlignment gemv_alignment(const GemmProblem& p) {
  const bool sfa_blocked = p.sfa.layout == NVFP4_SF_BLOCKED;
  const bool multi_row = p.M > 1, multi_batch = p.L > 1;
  // 16-byte loads of A and b and 2-byte loads of the scale pairs need every row and
  // batch start aligned; else the byte-load instance of the register kernel.
  const bool a16 = is_aligned(p.a.data, 16) && (!multi_row || p.a.row_stride % 16 == 0) &&
                   (!multi_batch || p.a.batch_stride % 16 == 0);
  const bool b16 = is_aligned(p.b.data, 16) && (!multi_batch || p.b.batch_stride % 16 == 0);
  const bool sfa2 = is_aligned(p.sfa.data, 2) && (!multi_batch || p.sfa.batch_stride % 2 == 0) &&
                    (sfa_blocked || !multi_row || p.sfa.row_stride % 2 == 0);
  const bool sfb2 = is_aligned(p.sfb.data, 2) && (!multi_batch || p.sfb.batch_stride % 2 == 0);
  GemvAlignment r;
  r.aligned = a16 && b16 && sfa2 && sfb2;
  // The MMA kernel copies 16-byte pieces of the scales from 16-byte aligned addresses:
  // blocked tiles always; linear rows only when every stage's piece of a row (2 * 8
  // chunks = 16 bytes at the least) is whole, i.e. K % 256 == 0.
  const int64_t nchunks = p.K / 32;
  const bool sfa16 = is_aligned(p.sfa.data, 16) && (!multi_batch || p.sfa.batch_stride % 16 == 0) &&
                     (sfa_blocked || ((!multi_row || p.sfa.row_stride % 16 == 0) && nchunks % 8 == 0));
  r.mma_ok = r.aligned && sfa16;
  return r;
}

// ---------------------------------------------------------------------------------
// Kernel choice
// ---------------------------------------------------------------------------------
constexpr int64_t kMmaMinRows = 128;         // per batch
constexpr int64_t kMmaMinRowsTotal = 4096;   // M * L (1024 where the register kernel splits K 4-8 ways)

// The MMA kernel wherever its alignment holds and there are rows enough for the SMs;
// else (small M*L: latency bound; misaligned operands) the register kernel. The MMA
// shape is left to choose_mma_shape (it needs the kernel's register count).
inline GemvConfig choose_gemv(const GemmProblem& p, int sm_count) {
  const GemvAlignment al = gemv_alignment(p);
  GemvConfig cfg;
  cfg.reg_shape = choose_reg_shape(p.M, p.L, sm_count);
  const bool many_rows = p.M >= kMmaMinRows && (p.M * p.L >= kMmaMinRowsTotal ||
                                                (p.M * p.L >= kMmaMinRowsTotal / 4 && cfg.reg_shape >= 2));
  cfg.kernel = al.mma_ok && many_rows ? GemvKernel::kMma : GemvKernel::kReg;
  return cfg;
}

// ---------------------------------------------------------------------------------
// MMA kernel: occupancy model and launch shape
// ---------------------------------------------------------------------------------

// Per-device resources of one MMA kernel instance (cudaFuncGetAttributes and the
// device attributes; gemv.cu queries them once per device).
constexpr int kClusterTablePerSm = 8;  // CTAs per SM the cluster table covers (1..8)
constexpr int kClusterTableSize = 8;   // cluster sizes it covers (1..8, the portable maximum)
struct MmaKernelInfo {
  int regs = 0;            // registers per thread
  int smem_per_sm = 0;     // cudaDevAttrMaxSharedMemoryPerMultiprocessor
  int regs_per_sm = 0;     // cudaDevAttrMaxRegistersPerMultiprocessor
  int max_smem_block = 0;  // opt-in dynamic shared memory per block (opt-in maximum - static)
  int static_smem = 0;     // the kernel's static shared memory
  // cluster_ctas[p][s]: CTAs the device runs at once in clusters of s CTAs when p CTAs fit on an
  // SM (cudaOccupancyMaxActiveClusters x s; kernel_info.hpp queries it for the decode kernels).
  // Not p x SMs: a cluster must fit in one GPC (H100, 8-warp CTAs, 2 per SM: 264 CTAs in
  // clusters of 2, 237 of 3, 248 of 4, 224 of 7). 0: not known (the decode plan then splits K
  // over no cluster of that size). Column s = 1 is not used.
  int cluster_ctas[kClusterTablePerSm + 1][kClusterTableSize + 1] = {};
};

// CTAs of `warps` warps and `smem` bytes of dynamic shared memory that fit on one SM
// (0 if none): threads (2048 per SM), registers (allocated per warp in units of 256),
// shared memory (+ 1 KB reserved per CTA), at most 32 CTAs.
inline int mma_ctas_per_sm(const MmaKernelInfo& info, int warps, size_t smem) {
  if (smem > static_cast<size_t>(info.max_smem_block)) return 0;
  const int by_threads = 2048 / (32 * warps);
  const int regs_per_warp = (info.regs * 32 + 255) / 256 * 256;
  const int by_regs = info.regs_per_sm / (regs_per_warp * warps);
  const int by_smem = static_cast<int>(info.smem_per_sm / (smem + info.static_smem + 1024));
  return std::min(std::min(by_threads, by_regs), std::min(by_smem, 32));
}

// Even spread: where more CTAs fit on an SM than the grid's per-SM share, the dynamic shared
// memory to request so that at most that share fits (the block scheduler then cannot stack
// CTAs on some SMs while others idle); `smem` where no cap applies or none is possible.
inline size_t even_spread_smem(const MmaKernelInfo& info, int warps, size_t smem, int64_t ctas, int sm_count) {
  const int per_sm = mma_ctas_per_sm(info, warps, smem);
  const int64_t share = (ctas + sm_count - 1) / sm_count;
  if (share >= per_sm) return smem;
  const int64_t need = info.smem_per_sm / (share + 1) + 1 - info.static_smem - 1024;
  if (need <= static_cast<int64_t>(smem) || need > info.max_smem_block) return smem;
  return static_cast<size_t>(need + 127) / 128 * 128;
}

// Score of a grid of `ctas` CTAs of `warps` warps at `per_sm` CTAs per SM: how evenly the
// last wave fills the SMs (the SM with the most warps sets the time), times warps
// resident per SM, saturating at 12 (fewer leave too little issue to cover the decode).
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

// The automatic choice splits a task's K over at most 2 CTAs of a cluster, and only
// where the best grid without it leaves SMs idle and each CTA keeps >= 6 stages.
// Measured (H200, PDL on): KC 2 on 1024x16384x1 8.36 -> 6.87 µs, 256x7168x4 (7 stages per
// CTA) 5.42 -> 5.24, but 512x4096x2 (4 stages) 4.28 -> 4.97; on 7168x16384x1 (224 CTAs)
// KC 2 22.8 vs 23.1 (noise) and KC 4 (7 quarter tasks per SM instead of 3-4 whole ones)
// 23.2-23.5 vs 23.1 µs. KC 4 with KS 1 x Wt 8 was 2.3% faster there in a later run, but
// 45-70% slower on 4096x7168x8 and 7168x2048x4: no rule without a shape special case.
constexpr int kAutoMaxCluster = 2;
constexpr int kMinClusterStages = 6;

// Picks warps per CTA W = KS * Wt in {2, 4, 8}, the K split KS inside a CTA and the K
// split KC over the CTAs of a cluster. The work comes in warp tasks of 16 rows x K; a
// CTA holds Wt tasks x 1/KC of K; the score is mma_grid_score. KS only while each warp
// keeps >= 2 stages; a cluster split only for a clear gain (score + 0.02). All zero when
// no shape fits the SM.
inline MmaShape choose_mma_shape(const MmaKernelInfo& info, int nchunks, int64_t tasks_per_batch, int64_t L,
                                 int sm_count) {
  const int sc = kMmaSC, depth = kMmaDepth;
  const int n_stages = (nchunks + sc - 1) / sc;
  MmaShape best_shape;
  double best = -1.0;
  double best_ctas = 0.0;
  for (int kc = 1; kc <= kAutoMaxCluster; kc *= 2) {
    const int spc = mma_stages_per_cta(n_stages, kc);
    if (kc > 1 && (spc < kMinClusterStages || best_ctas >= sm_count)) break;
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
        if (score > best + (kc > 1 ? 0.02 : 1e-9)) {
          best = score;
          best_ctas = ctas;
          best_shape.ks = ks;
          best_shape.wt = wt;
          best_shape.kc = kc;
        }
      }
    }
  }
  return best_shape;
}

// Everything the MMA launch needs, from its shape.
struct MmaLaunch {
  const char* unsupported = nullptr;  // why it cannot launch (then the rest is unset)
  int kc = 1, stages_per_cta = 0, tile_cap = 0, warps = 0;
  int64_t groups_per_batch = 0, ctas = 0;
  size_t smem = 0;         // dynamic shared memory the kernel uses
  size_t smem_launch = 0;  // requested at launch (>= smem: the even-spread cap)
};
inline MmaLaunch mma_launch(const MmaKernelInfo& info, MmaShape shape, int nchunks, int64_t tasks_per_batch,
                            int64_t L, int sm_count, bool even_spread) {
  MmaLaunch r;
  r.kc = shape.kc > 0 ? shape.kc : 1;
  const int n_stages = (nchunks + kMmaSC - 1) / kMmaSC;
  r.stages_per_cta = mma_stages_per_cta(n_stages, r.kc);
  r.tile_cap = mma_tile_cap(nchunks, kMmaSC, r.stages_per_cta);
  r.warps = shape.ks * shape.wt;
  r.smem = mma_smem_bytes(kMmaSC, r.tile_cap, r.warps, kMmaDepth);
  if (shape.ks <= 0 || shape.wt <= 0 || r.warps > kMmaMaxWarps || r.kc > kMmaMaxCluster ||
      mma_ctas_per_sm(info, r.warps, r.smem) <= 0) {
    r.unsupported = "sm90a gemv: shared memory too small";
    return r;
  }
  r.groups_per_batch = (tasks_per_batch + shape.wt - 1) / shape.wt;
  r.ctas = r.groups_per_batch * L * r.kc;
  if (r.ctas > 0x7FFFFFFF) {
    r.unsupported = "sm90a gemv: grid too large";
    return r;
  }
  // Even spread: when more CTAs fit on an SM than the grid needs for one per-SM share
  // (e.g. 896 CTAs on 132 SMs, 8 fit, 6.79 needed), extra shared memory caps the CTAs
  // per SM at that share, so that the block scheduler cannot stack 8 on some SMs and 5
  // on others (H200, 7168x2048x4: 13.07 vs 13.17 µs). Not for clusters of 4:
  // 7168x16384x1 as 896 CTAs in clusters of 4 took 28.2 µs capped at 7 per SM vs 23.4
  // uncapped (H200).
  r.smem_launch = even_spread && r.kc <= 2 ? even_spread_smem(info, r.warps, r.smem, r.ctas, sm_count) : r.smem;
  return r;
}

// ---------------------------------------------------------------------------------
// Register kernel launch shape
// ---------------------------------------------------------------------------------
struct RegLaunch {
  const char* unsupported = nullptr;
  int64_t groups_per_batch = 0, ctas = 0;
  size_t smem = 0;
};
inline RegLaunch reg_launch(int shape, int64_t M, int64_t L, int tile_cap) {
  RegLaunch r;
  r.groups_per_batch = (M + reg_rows_per_cta(shape) - 1) / reg_rows_per_cta(shape);
  r.ctas = r.groups_per_batch * L;
  if (r.ctas > 0x7FFFFFFF) r.unsupported = "sm90a gemv: grid too large";
  r.smem = static_cast<size_t>(tile_cap) * kRegSmemBytesPerChunk;  // <= 36 KB
  return r;
}

// ---------------------------------------------------------------------------------
// Kernel parameters from the problem (the launch fills in the shape-dependent fields:
// groups_per_batch; MMA kernel: tile_cap, cluster_k, stages_per_cta)
// ---------------------------------------------------------------------------------
inline Args make_args(const GemmProblem& p, const GemvConfig& cfg) {
  Args args{};
  const int64_t nchunks = p.K / 32;
  args.M = p.M;
  args.nchunks = static_cast<int32_t>(nchunks);
  args.tile_cap = args.nchunks < kRegTileChunks ? args.nchunks : kRegTileChunks;
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
  args.sf_blocked = p.sfa.layout == NVFP4_SF_BLOCKED ? 1 : 0;
  args.sfb_blocked = p.sfb.layout == NVFP4_SF_BLOCKED ? 1 : 0;
  args.prefetch_stages = cfg.prefetch_stages;
  args.cluster_k = 1;
  args.stages_per_cta = 0;
  args.pdl = cfg.pdl;
  args.alpha = p.alpha.value;
  args.alpha_ptr = p.alpha.device_ptr;
  args.c = p.c.data;
  args.c_dtype = static_cast<int32_t>(p.c.dtype);
  args.c_row = p.c.row_stride;
  args.c_batch = p.c.batch_stride;
  return args;
}

}  // namespace nvfp4::sm90::gemv_detail
