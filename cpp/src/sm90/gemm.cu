// sm90a (Hopper) NVFP4 GEMM: C[l] = alpha * A[l] * B[l]^T, computed exactly on fp16
// tensor cores (DESIGN §3, §8).
//
// Accumulation: the wgmma fp32 accumulator is restarted every 4 K blocks (512 K) and
// added into a round-to-nearest fp32 sum (accumulator_promotion.cuh): one long chain
// of tensor-core accumulations lost up to 1e-3 absolute on outputs of ~0.1 among ~40.
// Where no CTA's K slice exceeds kShortChainBlocks (8) blocks the fused path runs an
// instance without promotion (one chain of <= 8 blocks: <= 0.28 of the tolerance
// measured), whose transform warpgroups get 80 registers instead of 48.
//
// Launch: programmatic dependent launch (kPdl, gemm_params.cuh) on the pre-decode pass
// and the pre-decoded GEMM, and on the fused GEMM (kPdlFused, without L2 prefetches);
// each kernel's prologue overlaps the end of the grid before it, and nothing that grid
// may write or read is touched before griddepcontrol.wait (details at the kernels).
//
// Two paths:
//   K slices too long for the unpromoted fused kernel (kPredecodeMinK, workspace given,
//     at most kPredecodeMaxBytes of it): the tokens are decoded once into an fp16 workspace
//     (x_predecode.cuh), the main loop only decodes weights (mainloop_rs_predecoded.cuh);
//     where every tile has one CTA and there are more tiles than SMs, a persistent kernel
//     (one CTA per SM walking the tiles) runs it;
//   otherwise (or without workspace): fused, every CTA decodes its token tile
//     (mainloop_rs.cuh).
// One or two tokens run as GEMVs over the weights (token_gemv below).
// Pieces (cpp/src/sm90/collective/):
//   mainloop_rs.cuh              TMA producer + activation decode WGs + RS-wgmma consumers
//   mainloop_rs_predecoded.cuh   TMA producer (fp16 tokens) + RS-wgmma consumers
//   x_predecode.cuh              token decode pass
//   predecoded_tile.cuh          one tile of the pre-decoded kernel by a whole CTA (also the MoE kernel's)
//   epilogue_cluster_reduce.cuh  split-K reduction over the cluster (DSMEM), alpha, stores;
//                                a lone CTA's tile from shared memory or straight from registers
//   tile_scheduler.cuh           tile / K-slice of each CTA (cluster split-K)
//   accumulator_promotion.cuh    wgmma chains promoted into an fp32 (round-to-nearest) sum
//   fp4_decode.cuh, ptx.cuh      integer e2m1 decode, inline PTX
// This file: the kernel that wires them, and the host launcher (tensor maps built
// with cuTensorMapEncodeTiled obtained through the runtime's driver entry point, so
// the library does not link libcuda).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <mutex>
#ifdef NVFP4_SM90_DEBUG_PLAN
#include <cstdio>
#endif

#include "../backends.hpp"
#include "../common/cuda_check.hpp"
#include "../problem.hpp"
#include "collective/epilogue_cluster_reduce.cuh"
#include "collective/gemm_params.cuh"
#include "collective/mainloop_rs.cuh"
#include "collective/mainloop_rs_predecoded.cuh"
#include "collective/predecoded_tile.cuh"
#include "collective/tile_scheduler.cuh"
#include "collective/x_predecode.cuh"
#include "gemm_parts.hpp"
#include "launchers.hpp"

namespace nvfp4::sm90 {

namespace {

using Mainloop = MainloopRS;
using Epilogue = EpilogueClusterReduce;

// The kernels' shared storage: the dynamic shared memory rounded up to 1 KB (the 128-byte
// swizzle atoms of the TMA tiles need 1 KB alignment; the launch adds 1 KB for it).
template <class Storage>
__device__ __forceinline__ Storage& shared_storage(uint8_t* smem_raw) {
  const uintptr_t base = (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~static_cast<uintptr_t>(1023);
  return *reinterpret_cast<Storage*>(base);
}

constexpr size_t kSmemBytes = sizeof(Mainloop::SharedStorage) + 1024;  // + manual 1 KB alignment
static_assert(Epilogue::kSmemBytes <= sizeof(Mainloop::Stage) * Mainloop::kStages,
              "the epilogue tile reuses the stage ring");
static_assert(Epilogue::kTileW == Mainloop::kBlockW && Epilogue::kTileX == Mainloop::kBlockX, "tile shapes");

// P = promotion interval in K blocks (accumulator_promotion.cuh): the default, or 0 when
// every CTA's K slice is at most kShortChainBlocks blocks (host: fused_kernel()).
// With kPdlFused (on by default, gemm_params.cuh) the prologue runs before
// griddepcontrol.wait (L2 prefetches of the first blocks there were measured slower:
// gemm3, gemm4); every real global load and store, and the alpha read, come after it.
// launch_dependents is
// signalled right away: the next grid's CTAs may then take SMs as this grid's CTAs
// leave (they wait for this grid before touching memory).
template <int P>
__global__ void __launch_bounds__(Mainloop::kThreads, 1)
    nvfp4_sm90_gemm_kernel(const __grid_constant__ CUtensorMap tmap_w, const __grid_constant__ CUtensorMap tmap_x,
                           const __grid_constant__ CUtensorMap tmap_sfw,
                           const __grid_constant__ CUtensorMap tmap_sfx, const GemmParams p) {
  extern __shared__ uint8_t smem_raw[];
  Mainloop::SharedStorage& s = shared_storage<Mainloop::SharedStorage>(smem_raw);
  const TileWork work = cluster_splitk_work(p.splits, p.num_kb);
  const int64_t w0 = static_cast<int64_t>(work.tile_w) * Mainloop::kBlockW;
  const int64_t x0 = static_cast<int64_t>(work.tile_x) * Mainloop::kBlockX;
  const Mainloop::TmaDescs tm{&tmap_w, &tmap_x, &tmap_sfw, &tmap_sfx};

  if (threadIdx.x == 0) {
    Mainloop::init_barriers(s, p);
    ptx::tma_prefetch_desc(&tmap_w);
    ptx::tma_prefetch_desc(&tmap_x);
  }
  __syncthreads();
  if (kPdlFused) {
    ptx::pdl_launch_dependents();
    ptx::pdl_wait_primary();
  }
  // alpha here, not in the epilogue: its load latency hides under the main loop
  const float alpha = load_alpha(p);

  float* tile = reinterpret_cast<float*>(&s.ring[0]);
  if (threadIdx.x < Mainloop::kTransformThreads) {
    ptx::setmaxnreg_dec<Mainloop::transform_regs<P>()>();
    Mainloop::run_transform(s, tm, p, w0, x0, work.batch, work.kb_begin, work.kb_count);
    ptx::named_barrier_sync(1, Mainloop::kThreads);  // ring free: the tile may overwrite it
  } else {
    ptx::setmaxnreg_inc<Mainloop::consumer_regs<P>()>();
    float sum[64];  // this thread's fp32 fragment of the CTA's K range
    Mainloop::run_consumer<P>(s, p, work.kb_begin, work.kb_count, sum);
    ptx::named_barrier_sync(1, Mainloop::kThreads);
    Epilogue::stage_fragment(tile, threadIdx.x - Mainloop::kTransformThreads, sum);
  }
  Epilogue::reduce_and_store(p, tile, p.splits, work.split, w0, x0, work.batch, alpha);
}

using MainloopPre = MainloopRSPredecoded;
constexpr size_t kSmemBytesPre = sizeof(MainloopPre::SharedStorage) + 1024;
static_assert(Epilogue::kSmemBytes <= sizeof(MainloopPre::Stage) * MainloopPre::kStages,
              "the epilogue tile reuses the stage ring");
// Pre-decoded path when K >= kPredecodeMinK, the workspace (L * M * Kp * 2 bytes) is at
// most kPredecodeMaxBytes, and the fused kernel would give a CTA more than
// kShortChainBlocks K blocks (i.e. would need accumulator promotion; gemm()). Large M
// too (gemm12, H200: 1024..8192 tokens 14-27% faster than fused, e.g. 8192^3 2.0 vs
// 2.7 ms: decoding each token once instead of once per weight tile outweighs reading it
// as fp16). Model from the H200 run of gemm3 (graph replay, M = 128): fused
// with promotion ~6.4 µs + 1.25 µs per block of a CTA, pre-decoded (PDL) ~10.6 µs +
// 0.84 µs per block: equal at ~10 blocks; the fused kernel without promotion (<= 8
// blocks) beats both (128x7168x2048: 15.6 fused vs 17.4 pre-decoded; 128x4096x7168, 19
// blocks: 26.4 pre-decoded vs 30.3 fused). The workspace is requested from K = 2048 on.
#ifndef NVFP4_SM90_PREDECODE_MIN_K
#define NVFP4_SM90_PREDECODE_MIN_K 2048
#endif
// Cap on the workspace (2 bytes per token element): 1 GiB, e.g. 32768 tokens x K 16384.
constexpr size_t kPredecodeMaxBytes = size_t(1) << 30;
constexpr int64_t kPredecodeMinK = NVFP4_SM90_PREDECODE_MIN_K;
// Persistent pre-decoded kernel where every tile has one CTA and tiles outnumber SMs
// (gemm16: -2% on large shapes, H100); 0 = one CTA per tile.
#ifndef NVFP4_SM90_PERSISTENT
#define NVFP4_SM90_PERSISTENT 1
#endif
constexpr bool kPersistent = NVFP4_SM90_PERSISTENT != 0;

__global__ void __launch_bounds__(MainloopPre::kThreads, 1)
    nvfp4_sm90_gemm_predecoded_kernel(const __grid_constant__ CUtensorMap tmap_w,
                                      const __grid_constant__ CUtensorMap tmap_xh,
                                      const __grid_constant__ CUtensorMap tmap_sfw, const GemmParams p) {
  extern __shared__ uint8_t smem_raw[];
  MainloopPre::SharedStorage& s = shared_storage<MainloopPre::SharedStorage>(smem_raw);
  const TileWork work = cluster_splitk_work(p.splits, p.num_kb);
  const int64_t w0 = static_cast<int64_t>(work.tile_w) * MainloopPre::kBlockW;
  const int64_t x0 = static_cast<int64_t>(work.tile_x) * MainloopPre::kBlockX;

  if (threadIdx.x == 0) {
    MainloopPre::init_barriers(s, p);
    ptx::tma_prefetch_desc(&tmap_w);
    ptx::tma_prefetch_desc(&tmap_xh);
  }
  __syncthreads();

  const MainloopPre::TmaDescs tm{&tmap_w, &tmap_xh, &tmap_sfw};
  predecoded_tile(s, tm, p,
                  PredecodedTileOrigin{w0, x0, x0, work.batch, work.batch, work.batch, work.kb_begin, work.kb_count,
                                       p.splits, work.split});
}

// Persistent variant of the pre-decoded kernel for one CTA per tile (splits == 1: large
// M): gridDim.x <= SMs CTAs walk the tiles t = blockIdx.x, blockIdx.x + gridDim.x, ...
// (weight tile fastest, as the non-persistent grid). The ring continues across tiles
// (run_producer / run_segment), so the producer loads the next tile while the consumers
// store the previous one straight from registers (store_fragment): no per-tile launch,
// prologue, first-load wait or shared-memory epilogue.
__global__ void __launch_bounds__(MainloopPre::kThreads, 1)
    nvfp4_sm90_gemm_persistent_kernel(const __grid_constant__ CUtensorMap tmap_w,
                                      const __grid_constant__ CUtensorMap tmap_xh,
                                      const __grid_constant__ CUtensorMap tmap_sfw, const GemmParams p) {
  extern __shared__ uint8_t smem_raw[];
  MainloopPre::SharedStorage& s = shared_storage<MainloopPre::SharedStorage>(smem_raw);
  const int64_t tiles = static_cast<int64_t>(p.tiles_w) * p.tiles_x * p.L;
  auto origin = [&](int64_t t, int64_t& w0, int64_t& x0, int32_t& l) {
    w0 = (t % p.tiles_w) * MainloopPre::kBlockW;
    x0 = ((t / p.tiles_w) % p.tiles_x) * MainloopPre::kBlockX;
    l = static_cast<int32_t>(t / (static_cast<int64_t>(p.tiles_w) * p.tiles_x));
  };
  if (threadIdx.x == 0) {
    MainloopPre::init_barriers(s, p);
    ptx::tma_prefetch_desc(&tmap_w);
    ptx::tma_prefetch_desc(&tmap_xh);
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    ptx::setmaxnreg_dec<MainloopPre::kProducerRegs>();
    if (threadIdx.x < 32) {
      const MainloopPre::TmaDescs tm{&tmap_w, &tmap_xh, &tmap_sfw};
      MainloopPre::RingCursor rc;
#pragma unroll 1
      for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        int64_t w0, x0;
        int32_t l;
        origin(t, w0, x0, l);
        MainloopPre::run_producer(s, tm, p, w0, x0, l, 0, p.num_kb, rc);
      }
    }
  } else {
    ptx::setmaxnreg_inc<MainloopPre::kConsumerRegs>();
    const int ctid = threadIdx.x - 128;
    MainloopPre::ConsumerState c = MainloopPre::init_consumer(s, p);
    if (kPdl) ptx::pdl_wait_primary();  // alpha and C belong to the grids before until then
    const float alpha = load_alpha(p);
#pragma unroll 1
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      int64_t w0, x0;
      int32_t l;
      origin(t, w0, x0, l);
      float sum[64];
      MainloopPre::run_segment(s, c, 0, p.num_kb, sum);
      Epilogue::store_fragment(p, ctid, sum, w0, x0, l, alpha);
    }
  }
}

// With kPdl this pass is itself launched after the preceding grid with programmatic
// serialization: it prefetches its input into L2, waits for that grid, and only then
// lets the GEMM start (the GEMM loads weights before its own wait, which is safe only
// once every grid before this pass has completed).
__global__ void __launch_bounds__(kPredecodeThreads) nvfp4_sm90_x_predecode_kernel(const XPredecodeParams p) {
  const XPredecodeRow row = predecode_row(p, blockIdx.x, blockIdx.z);
  if (kPdl) {
#pragma unroll
    for (int u = 0; u < kPredecodeUnroll; ++u) x_predecode_prefetch(p, row, predecode_chunk_index(u));
    ptx::pdl_wait_primary();
  }
  ptx::pdl_launch_dependents();  // the GEMM may start its prologue and weight loads now
  x_predecode_row_piece(p, row);
}

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) ==
            cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    else
      (void)cudaGetLastError();
  });
  return fn;
}

bool aligned(const void* ptr, uintptr_t a) { return (reinterpret_cast<uintptr_t>(ptr) % a) == 0; }

// A (cols x rows x L) byte tensor with the given row and batch strides (one batch: its
// extent, rounded up to 16 bytes, stands in for the unused batch stride) as a 3-D uint8
// tensor map with box box_cols x 128 rows x 1.
bool encode_u8_rows_map(CUtensorMap* map, const uint8_t* data, int64_t cols, int64_t rows, int64_t L,
                        int64_t row_stride, int64_t batch_stride, uint32_t box_cols, CUtensorMapSwizzle swizzle) {
  const auto encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const int64_t bstride = L > 1 ? batch_stride : ((rows * row_stride + 15) / 16) * 16;
  cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(L)};
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(row_stride), static_cast<cuuint64_t>(bstride)};
  cuuint32_t box[3] = {box_cols, 128u, 1u};
  cuuint32_t elem[3] = {1u, 1u, 1u};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<uint8_t*>(data), dims, strides, box,
                            elem, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

// Packed fp4 operand (rows x K/2 bytes x L): box 64 bytes x 128 rows, 64-byte swizzle
// (conflict-free 16-byte smem reads).
bool encode_fp4_map(CUtensorMap* map, const Fp4Operand& op, int64_t rows, int64_t K, int64_t L) {
  return encode_u8_rows_map(map, op.data, K / 2, rows, L, op.row_stride, op.batch_stride, Mainloop::kPackedRow,
                            CU_TENSOR_MAP_SWIZZLE_64B);
}

// Linear scales (rows x K/16 bytes x L): box 16 x 128, each stage loads its 8 columns
// plus the next 8 (TMA needs 16-byte boxes).
bool encode_linear_sf_map(CUtensorMap* map, const ScaleOperand& sf, int64_t rows, int64_t K, int64_t L) {
  return encode_u8_rows_map(map, sf.data, K / 16, rows, L, sf.row_stride, sf.batch_stride, Mainloop::kSfTmaCols,
                            CU_TENSOR_MAP_SWIZZLE_NONE);
}

bool scales_tma(const ScaleOperand& s, int64_t L) {
  return s.layout == NVFP4_SF_LINEAR && aligned(s.data, 16) && s.row_stride % 16 == 0 && s.row_stride > 0 &&
         (L == 1 || (s.batch_stride % 16 == 0 && s.batch_stride > 0));
}

// fp16 token workspace [L][M][Kp] as a 3-D map, box 64 x 128 x 1, 128-byte swizzle
// (exactly the K-major SW128 layout of the wgmma B descriptor).
bool encode_xh_map(CUtensorMap* map, void* ws, int64_t M, int64_t Kp, int64_t L, uint32_t box_rows) {
  const auto encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  cuuint64_t dims[3] = {static_cast<cuuint64_t>(Kp), static_cast<cuuint64_t>(M), static_cast<cuuint64_t>(L)};
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(Kp * 2), static_cast<cuuint64_t>(M * Kp * 2)};
  cuuint32_t box[3] = {64u, box_rows, 1u};
  cuuint32_t elem[3] = {1u, 1u, 1u};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, ws, dims, strides, box, elem,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

size_t predecode_bytes(const GemmProblem& p) {
  if (p.M <= 0 || p.K < kPredecodeMinK || p.L <= 0) return 0;
  const int64_t kp = (p.K + 127) / 128 * 128;
  const size_t bytes = static_cast<size_t>((p.L * p.M * kp * 2 + 255) / 256 * 256);
  return bytes <= kPredecodeMaxBytes ? bytes : 0;
}

// Pass parameters for one fp4 operand (rows x K, L batches) -> fp16 [L][rows][kpad] at out.
XPredecodeParams predecode_params(const Fp4Operand& a, const ScaleOperand& sf, int64_t rows, int64_t K, int64_t L,
                                  int32_t num_kb, void* out, int64_t kpad) {
  XPredecodeParams xp{};
  xp.a = a.data;
  xp.a_row_stride = a.row_stride;
  xp.a_batch_stride = a.batch_stride;
  xp.sf = sf.data;
  xp.sf_row_stride = sf.row_stride;
  xp.sf_batch_stride = sf.batch_stride;
  xp.sf_blocked = sf.layout == NVFP4_SF_BLOCKED ? 1 : 0;
  xp.sf_words = xp.sf_blocked && aligned(sf.data, 4) && (L == 1 || sf.batch_stride % 4 == 0) ? 1 : 0;
  xp.M = rows;
  xp.K = K;
  xp.L = static_cast<int32_t>(L);
  xp.num_kb = num_kb;
  xp.out = static_cast<uint16_t*>(out);
  xp.out_row_stride = kpad;
  xp.out_batch_stride = rows * kpad;
  return xp;
}

bool tma_compatible(const Fp4Operand& op, int64_t rows, int64_t L) {
  if (!aligned(op.data, 16) || op.row_stride % 16 != 0 || op.row_stride <= 0) return false;
  if (L > 1 && (op.batch_stride % 16 != 0 || op.batch_stride <= 0)) return false;
  if (rows > (int64_t{1} << 31) - 1) return false;
  if (op.row_stride >= (int64_t{1} << 40) || op.batch_stride >= (int64_t{1} << 40)) return false;
  return true;
}

bool scales_bulk(const ScaleOperand& s, int64_t K, int64_t L) {
  // K % 128: every stage then holds 8 real scale columns (no stale smem bytes in a K tail)
  return s.layout == NVFP4_SF_BLOCKED && K % 128 == 0 && aligned(s.data, 16) &&
         (L == 1 || s.batch_stride % 16 == 0);
}

bool scales_async(const ScaleOperand& s, int64_t L) {
  if (!aligned(s.data, 4)) return false;
  if (L > 1 && s.batch_stride % 4 != 0) return false;
  if (s.layout == NVFP4_SF_LINEAR && s.row_stride % 4 != 0) return false;
  return true;
}

// CTAs per output tile (split-K over a cluster): enough to cover the SMs once.
int choose_splits(int64_t tiles, int32_t num_kb, int sm_count) {
  int64_t s = tiles > 0 ? sm_count / tiles : 1;
  if (s > 8) s = 8;
  if (s > num_kb) s = num_kb;
  if (s < 1) s = 1;
  return static_cast<int>(s);
}

// Clusters of `splits` CTAs of `kernel` that can be resident at once (cached per
// device; a failed query counts as "no limit").
int max_active_clusters(const void* kernel, int kernel_id, size_t smem, int threads, int splits, int device) {
  static std::atomic<int> cache[2][9][16];  // 0 = not queried yet, else value + 1
  const bool cacheable = device >= 0 && device < 16;
  if (cacheable) {
    const int v = cache[kernel_id][splits][device].load(std::memory_order_relaxed);
    if (v > 0) return v - 1;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(splits), 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(splits);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    n = 1 << 20;
  }
  if (cacheable) cache[kernel_id][splits][device].store(n + 1, std::memory_order_relaxed);
  return n;
}

// CTAs per output tile (split-K over a cluster): fill the SMs once, but only with a
// cluster size whose clusters all fit at once (a cluster of 4 with ~200 KB of smem per
// CTA may not tile every GPC; v2 suspected 32 such clusters ran as two waves).
int choose_splits_fitting(const void* kernel, int kernel_id, size_t smem, int threads, int64_t tiles,
                          int32_t num_kb, int sm_count, int device) {
  int s = choose_splits(tiles, num_kb, sm_count);
  while (s > 1 && max_active_clusters(kernel, kernel_id, smem, threads, s, device) < tiles) --s;
  return s;
}

using FusedKernelFn = void (*)(CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap, GemmParams);
constexpr FusedKernelFn kFusedPromoted = nvfp4_sm90_gemm_kernel<AccumulatorPromotion::kBlocks>;
constexpr FusedKernelFn kFusedShortChain = nvfp4_sm90_gemm_kernel<0>;

// The fused kernel instance: without promotion (and its 64 registers) when no CTA's K
// slice exceeds kShortChainBlocks blocks (cluster_splitk_work: at most ceil(num_kb / splits)).
FusedKernelFn fused_kernel(int32_t num_kb, int splits) {
  const int32_t per_cta = (num_kb + splits - 1) / splits;
  return per_cta <= kShortChainBlocks ? kFusedShortChain : kFusedPromoted;
}

}  // namespace

nvfp4_status_t gemv(const GemmProblem& p, const Exec& exec);  // gemv.cu

namespace {
// A few tokens: the tiled GEMM costs about the same for M = 1 as for M = 128 (every weight
// element is decoded once per CTA, the 128-token tile mostly empty), while the GEMV kernel
// streams the weights at near memory speed. So M <= kGemvMaxTokens runs as M GEMVs over
// the weights, one per token. H200, N = K = 7168 (bench/NOTES.md "gemm via gemv"): M = 1
// 44.7 -> 12.5 µs, M = 2 41.6 -> 24.2 µs; the GEMM took 30-50 µs at M = 4 in two runs, so
// three GEMVs (~37 µs) are not a sure win at M = 3.
#ifndef NVFP4_SM90_GEMV_MAX_TOKENS
#define NVFP4_SM90_GEMV_MAX_TOKENS 2
#endif
constexpr int64_t kGemvMaxTokens = NVFP4_SM90_GEMV_MAX_TOKENS;

// Token m of p as a GEMV over the weights: out[l, n] = sum_k b[l, n, k] a[l, m, k], row m's
// scales as a one-row operand (scales_from_row).
GemmProblem token_gemv(const GemmProblem& p, int64_t m) {
  GemmProblem g = p;
  g.M = p.N;
  g.N = 1;
  g.a = p.b;
  g.sfa = p.sfb;
  g.b = fp4_from_row(p.a, m);
  g.sfb = scales_from_row(p.sfa, m, p.K);
  const int64_t esize = p.c.dtype == DType::kFloat32 ? 4 : 2;
  g.c.data = static_cast<uint8_t*>(p.c.data) + m * p.c.row_stride * esize;
  g.c.row_stride = p.c.col_stride;  // out[l, n] = c[l, m, n]
  g.c.col_stride = 1;               // (one column)
  return g;
}
}  // namespace

// Scratch of the pre-decoded path (the fp16 token workspace); without it gemm() runs the
// fused path. Nothing in it needs to be zeroed. Asked for whenever the path may be taken
// (K >= kPredecodeMinK, at most kPredecodeMaxBytes); gemm() still runs the fused kernel
// where its CTAs' K slices fit one unpromoted chain (the choice needs the occupancy-fitted
// split).
size_t gemm_workspace(const GemmProblem& p, const Exec& exec) {
  if (p.M <= kGemvMaxTokens) return 0;  // the GEMV route needs none
  return predecode_bytes(p);
}

namespace {
// What gemm() refuses (NOT_SUPPORTED, with the reason) before it launches anything; with
// `tmap_w` / `tmap_x` (tiled path only) the operands' tensor maps are also encoded there.
nvfp4_status_t check_gemm(const GemmProblem& p, const Exec& exec, CUtensorMap* tmap_w, CUtensorMap* tmap_x) {
  if (exec.cc_major != 9 || exec.cc_minor != 0)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemm: needs a CC 9.0 device");
  if (p.M <= 0 || p.N <= 0 || p.L <= 0) return NVFP4_SUCCESS;
  if (p.K <= 0 || p.K % 32 != 0) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemm: K must be a multiple of 32");
  if (p.M <= kGemvMaxTokens) return NVFP4_SUCCESS;  // the GEMV route takes any layout and alignment
  if (!tma_compatible(p.a, p.M, p.L) || !tma_compatible(p.b, p.N, p.L))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemm: fp4 operands need 16-byte aligned bases and strides");
  const int64_t tiles_w = (p.N + Mainloop::kBlockW - 1) / Mainloop::kBlockW;
  const int64_t tiles_x = (p.M + Mainloop::kBlockX - 1) / Mainloop::kBlockX;
  if (tiles_x > 65535 || p.L > 65535 || tiles_w * 8 > 0x7FFFFFFF)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemm: grid too large");
  if (p.sfa.layout != p.sfb.layout) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemm: mixed scale layouts");
  CUtensorMap scratch_w, scratch_x;
  if (!encode_fp4_map(tmap_w ? tmap_w : &scratch_w, p.b, p.N, p.K, p.L) ||
      !encode_fp4_map(tmap_x ? tmap_x : &scratch_x, p.a, p.M, p.K, p.L))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemm: cuTensorMapEncodeTiled unavailable or rejected the operands");
  return NVFP4_SUCCESS;
}
}  // namespace

nvfp4_status_t gemm_supported(const GemmProblem& p, const Exec& exec) { return check_gemm(p, exec, nullptr, nullptr); }

namespace {
// tokens_decoded: the workspace already holds p's tokens pre-decoded (gemm_same_tokens).
nvfp4_status_t run_gemm(const GemmProblem& p, const Exec& exec, bool tokens_decoded) {
  CUtensorMap tmap_w, tmap_x;
  const nvfp4_status_t supported = check_gemm(p, exec, &tmap_w, &tmap_x);
  if (supported != NVFP4_SUCCESS) return supported;
  if (p.M <= 0 || p.N <= 0 || p.L <= 0) return NVFP4_SUCCESS;
  if (p.M <= kGemvMaxTokens) {
    for (int64_t m = 0; m < p.M; ++m) {
      const nvfp4_status_t st = gemv(token_gemv(p, m), exec);
      if (st != NVFP4_SUCCESS) return st;  // the checks are the same for every token: only the first can refuse
    }
    return NVFP4_SUCCESS;
  }
  const int64_t tiles_w = (p.N + Mainloop::kBlockW - 1) / Mainloop::kBlockW;
  const int64_t tiles_x = (p.M + Mainloop::kBlockX - 1) / Mainloop::kBlockX;

  GemmParams kp{};
  kp.M = p.M;
  kp.N = p.N;
  kp.K = p.K;
  kp.L = static_cast<int32_t>(p.L);
  kp.num_kb = static_cast<int32_t>((p.K + Mainloop::kBlockK - 1) / Mainloop::kBlockK);
  int sm_count = exec.sm_count;
  if (sm_count <= 0) NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, exec.device));
  kp.sf_blocked = p.sfb.layout == NVFP4_SF_BLOCKED ? 1 : 0;
  CUtensorMap tmap_sfw = tmap_w, tmap_sfx = tmap_x;  // placeholders unless kScaleTma
  if (scales_bulk(p.sfa, p.K, p.L) && scales_bulk(p.sfb, p.K, p.L)) {
    kp.sf_mode = kScaleBulk;
  } else if (scales_tma(p.sfa, p.L) && scales_tma(p.sfb, p.L) &&
             encode_linear_sf_map(&tmap_sfw, p.sfb, p.N, p.K, p.L) &&
             encode_linear_sf_map(&tmap_sfx, p.sfa, p.M, p.K, p.L)) {
    kp.sf_mode = kScaleTma;
  } else {
    kp.sf_mode = (scales_async(p.sfa, p.L) && scales_async(p.sfb, p.L)) ? kScaleCpAsync : kScaleSync;
  }
  kp.sf_w = ScaleSrc{p.sfb.data, p.sfb.row_stride, p.sfb.batch_stride, p.N};
  kp.sf_x = ScaleSrc{p.sfa.data, p.sfa.row_stride, p.sfa.batch_stride, p.M};
  kp.alpha = p.alpha.value;
  kp.alpha_ptr = p.alpha.device_ptr;
  kp.c = p.c.data;
  kp.c_dtype = static_cast<int32_t>(p.c.dtype);
  const int esize = p.c.dtype == DType::kFloat32 ? 4 : 2;
  kp.c_vec4 = (p.c.col_stride == 1 && aligned(p.c.data, 4 * esize) && p.c.row_stride % 4 == 0 &&
               (p.L == 1 || p.c.batch_stride % 4 == 0))
                  ? 1
                  : 0;
  kp.c_row_stride = p.c.row_stride;
  kp.c_col_stride = p.c.col_stride;
  kp.c_batch_stride = p.c.batch_stride;

  // Raise the dynamic smem limits once per device (a host-side cost of ~µs per call otherwise).
  static std::atomic<uint64_t> smem_attr_set{0};
  const uint64_t dev_bit = uint64_t{1} << (exec.device & 63);
  if ((smem_attr_set.load(std::memory_order_acquire) & dev_bit) == 0) {
    NVFP4_CUDA_TRY(cudaFuncSetAttribute(kFusedPromoted, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kSmemBytes)));
    NVFP4_CUDA_TRY(cudaFuncSetAttribute(kFusedShortChain, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kSmemBytes)));
    NVFP4_CUDA_TRY(cudaFuncSetAttribute(nvfp4_sm90_gemm_predecoded_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kSmemBytesPre)));
    NVFP4_CUDA_TRY(cudaFuncSetAttribute(nvfp4_sm90_gemm_persistent_kernel,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(kSmemBytesPre)));
    smem_attr_set.fetch_or(dev_bit, std::memory_order_acq_rel);
  }
  const int64_t tiles = tiles_w * tiles_x * p.L;
  // Fused split (occupancy: both fused instances have the same threads, smem and register cap).
  const int fused_splits = choose_splits_fitting(reinterpret_cast<const void*>(kFusedPromoted), 0, kSmemBytes,
                                                 Mainloop::kThreads, tiles, kp.num_kb, sm_count, exec.device);
  const bool fused_short = fused_kernel(kp.num_kb, fused_splits) == kFusedShortChain;
  const size_t ws_need = predecode_bytes(p);
  const bool predecode = ws_need > 0 && !fused_short && exec.workspace != nullptr &&
                         exec.workspace_bytes >= ws_need && aligned(exec.workspace, 256);
  const size_t smem = predecode ? kSmemBytesPre : kSmemBytes;
  const int threads = predecode ? MainloopPre::kThreads : Mainloop::kThreads;
  kp.splits = predecode ? choose_splits_fitting(reinterpret_cast<const void*>(nvfp4_sm90_gemm_predecoded_kernel), 1,
                                                kSmemBytesPre, MainloopPre::kThreads, tiles, kp.num_kb, sm_count,
                                                exec.device)
                        : fused_splits;

#ifdef NVFP4_SM90_DEBUG_PLAN
  fprintf(stderr, "[sm90 plan] M=%lld N=%lld K=%lld pre=%d splits=%d fused_splits=%d short=%d\n",
          static_cast<long long>(p.M), static_cast<long long>(p.N), static_cast<long long>(p.K), predecode ? 1 : 0,
          kp.splits, fused_splits, fused_short ? 1 : 0);
#endif

  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(tiles_w * kp.splits), static_cast<unsigned>(tiles_x),
                     static_cast<unsigned>(p.L));
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = cuda_stream(exec);
  // [0] cluster shape, [1] programmatic dependent launch (kPdl: see the kernels)
  cudaLaunchAttribute attr[2] = {};
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(kp.splits);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = kPdlFused ? 2 : 1;
  if (predecode) {
    const int64_t kpad = static_cast<int64_t>(kp.num_kb) * 128;  // workspace row (elements)
    CUtensorMap tmap_xh;
    // Token tile rows the TMA brings: for M < 128 only the rows that exist, rounded up to
    // the 8-row swizzle atom. A 128-row box that is mostly out of bounds made the loads slow
    // (H200, N = K = 7168: M = 8 40.5 -> 29.3 µs, M = 32 38.3 -> 30.6 with the fitted box;
    // bench/NOTES.md gemm13). The rest of the smem tile keeps stale data, which only
    // reaches the output columns of tokens >= M, never stored.
    kp.x_box_rows = p.M < 128 ? static_cast<int32_t>((p.M + 7) / 8 * 8) : 128;
    if (!encode_xh_map(&tmap_xh, exec.workspace, p.M, kpad, p.L, static_cast<uint32_t>(kp.x_box_rows)))
      return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemm: cuTensorMapEncodeTiled rejected the workspace");
    if (tokens_decoded) {
      // No pass in front: plain stream order behind the GEMM that decoded them (its
      // programmatic launch would let this one load weights before the grids in front of
      // that GEMM had completed).
      cfg.numAttrs = 1;
    } else {
      const XPredecodeParams xp = predecode_params(p.a, p.sfa, p.M, p.K, p.L, kp.num_kb, exec.workspace, kpad);
      cfg.numAttrs = kPdl ? 2 : 1;  // the pre-decoded GEMM after the pass
      cudaLaunchConfig_t pre_cfg = {};
      pre_cfg.gridDim = dim3(static_cast<unsigned>(p.M), static_cast<unsigned>(predecode_pieces(kp.num_kb)),
                             static_cast<unsigned>(p.L));
      pre_cfg.blockDim = dim3(kPredecodeThreads, 1, 1);
      pre_cfg.stream = cuda_stream(exec);
      pre_cfg.attrs = &attr[1];
      pre_cfg.numAttrs = kPdl ? 1 : 0;
      NVFP4_CUDA_TRY(cudaLaunchKernelEx(&pre_cfg, nvfp4_sm90_x_predecode_kernel, xp));
      NVFP4_CHECK_LAUNCH();
    }
    if (kPersistent && kp.splits == 1 && tiles > sm_count) {  // one CTA per tile: persistent
      kp.tiles_w = static_cast<int32_t>(tiles_w);
      kp.tiles_x = static_cast<int32_t>(tiles_x);
      cfg.gridDim = dim3(static_cast<unsigned>(sm_count), 1, 1);
      NVFP4_CUDA_TRY(cudaLaunchKernelEx(&cfg, nvfp4_sm90_gemm_persistent_kernel, tmap_w, tmap_xh, tmap_sfw, kp));
      NVFP4_CHECK_LAUNCH();
      return NVFP4_SUCCESS;
    }
    NVFP4_CUDA_TRY(cudaLaunchKernelEx(&cfg, nvfp4_sm90_gemm_predecoded_kernel, tmap_w, tmap_xh, tmap_sfw, kp));
    NVFP4_CHECK_LAUNCH();
    return NVFP4_SUCCESS;
  }
  NVFP4_CUDA_TRY(cudaLaunchKernelEx(&cfg, fused_kernel(kp.num_kb, kp.splits), tmap_w, tmap_x, tmap_sfw, tmap_sfx, kp));
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
}
}  // namespace

nvfp4_status_t gemm(const GemmProblem& p, const Exec& exec) { return run_gemm(p, exec, false); }
nvfp4_status_t gemm_same_tokens(const GemmProblem& p, const Exec& exec) { return run_gemm(p, exec, true); }


// ---- Pieces of gemm() for the packed MoE launcher (grouped_packed.cu; gemm_parts.hpp) ----

bool moe_tokens_supported(const Fp4Operand& a, int64_t rows) { return tma_compatible(a, rows, 1); }

bool moe_weight_maps(const Fp4Operand& b, const ScaleOperand& sfb, int64_t N, int64_t K, int64_t G, CUtensorMap* w,
                     CUtensorMap* sfw, int32_t* sf_mode) {
  if (!tma_compatible(b, N, G) || !encode_fp4_map(w, b, N, K, G)) return false;
  *sfw = *w;  // placeholder unless kScaleTma
  if (scales_tma(sfb, G) && encode_linear_sf_map(sfw, sfb, N, K, G))
    *sf_mode = kScaleTma;
  else
    *sf_mode = scales_async(sfb, G) ? kScaleCpAsync : kScaleSync;
  return true;
}

size_t moe_token_bytes(int64_t rows, int64_t K) {
  const int64_t kpad = (K + 127) / 128 * 128;
  return static_cast<size_t>((rows * kpad * 2 + 255) / 256 * 256);
}

nvfp4_status_t moe_predecode_tokens(const Fp4Operand& a, const ScaleOperand& sfa, int64_t rows, int64_t K,
                                    uint32_t box_rows, void* ws, CUtensorMap* xh_map, const Exec& exec) {
  const int32_t num_kb = static_cast<int32_t>((K + 127) / 128);
  const int64_t kpad = static_cast<int64_t>(num_kb) * 128;
  if (!encode_xh_map(xh_map, ws, rows, kpad, 1, box_rows))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a grouped gemm packed: cuTensorMapEncodeTiled rejected the workspace");
  const XPredecodeParams xp = predecode_params(a, sfa, rows, K, 1, num_kb, ws, kpad);
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(rows), static_cast<unsigned>(predecode_pieces(num_kb)), 1);
  cfg.blockDim = dim3(kPredecodeThreads, 1, 1);
  cfg.stream = cuda_stream(exec);
  cfg.attrs = attr;
  cfg.numAttrs = kPdl ? 1 : 0;
  NVFP4_CUDA_TRY(cudaLaunchKernelEx(&cfg, nvfp4_sm90_x_predecode_kernel, xp));
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
}

}  // namespace nvfp4::sm90
