// Portable GEMM family: gemv, gemm, dual gemm, grouped gemm (list) and the packed
// MoE grouped gemm. Deliberately plain: every fp4 operand element is decoded to its
// exact fp32 value (e2m1 * e4m3, exact: at most 6 significant bits) and products are
// accumulated in fp32 with FFMA. This is the fallback for GPUs without a fast path
// and the on-GPU oracle for the fast paths, so clarity wins over speed; the tiling
// (64x64 output tile per 256-thread CTA, K step 64, each operand tile decoded once
// into shared memory) only keeps it from being absurdly slow.
#include "common/activation.hpp"
#include "portable/common.cuh"
#include "portable/launchers.hpp"

namespace nvfp4 {
namespace portable {
namespace {

// e2m1 code (sign in bit 3) -> its value: the magnitude bits placed at fp32 bits
// 24..22 give value * 2^-126 (code 1 lands on the subnormal 2^-127), rescaled by an
// exact power-of-two multiply. Equal to formats.h e2m1_to_float for all 16 codes.
__device__ __forceinline__ float e2m1_value(uint32_t code) {
  return __uint_as_float(((code & 7u) << 22) | ((code & 8u) << 28)) * 0x1p126f;
}

// Exact values of 16 consecutive K elements (one scale block): 8 packed bytes and
// the block's scale byte.
__device__ __forceinline__ void decode_block16(uint2 packed, uint32_t scale_byte, float (&v)[16]) {
  const float s = e4m3_to_float(scale_byte);
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const uint32_t word = i < 8 ? packed.x : packed.y;
    v[i] = e2m1_value((word >> (4 * (i % 8))) & 0xFu) * s;  // exact, or NaN for a NaN scale
  }
}

// One fp4 operand with its scales; `vec8`: data and strides are 8-byte aligned.
struct Operand {
  const uint8_t* data = nullptr;
  int64_t row_stride = 0, batch_stride = 0;
  ScaleOperand sf;
  bool vec8 = false;
};

Operand make_operand(const Fp4Operand& q, const ScaleOperand& sf) {
  Operand o;
  o.data = q.data;
  o.row_stride = q.row_stride;
  o.batch_stride = q.batch_stride;
  o.sf = sf;
  o.vec8 = aligned_to(q.data, 8, q.row_stride, q.batch_stride);
  return o;
}

// The 8 packed bytes of scale block `kb` of row r in batch l.
__device__ __forceinline__ uint2 load_packed8(const Operand& op, int64_t l, int64_t r, int64_t kb) {
  const uint8_t* p = op.data + l * op.batch_stride + r * op.row_stride + kb * 8;
  if (op.vec8) return __ldg(reinterpret_cast<const uint2*>(p));
  uint32_t w[2] = {0u, 0u};
#pragma unroll
  for (int b = 0; b < 8; ++b) w[b / 4] |= uint32_t(p[b]) << (8 * (b % 4));
  return make_uint2(w[0], w[1]);
}

__device__ __forceinline__ void decode_row_block(const Operand& op, int64_t l, int64_t r, int64_t kb, int64_t K,
                                                 float (&v)[16]) {
  decode_block16(load_packed8(op, l, r, kb), op.sf.data[scale_offset(op.sf, l, r, kb, K)], v);
}

// ---------------------------------------------------------------------------
// gemv: one warp per output row, fp32 accumulation, warp-shuffle reduction
// ---------------------------------------------------------------------------

constexpr int kGemvWarps = 8;

struct GemvArgs {
  int64_t M = 0, K = 0, rows = 0;  // rows = L * M
  int64_t row_offset = 0;          // first (l*M + m) of this launch
  Operand a, b;                    // b: one row (row 0) per batch
  Alpha alpha;
  OutOperand c;
};

__global__ void __launch_bounds__(kGemvWarps * 32) gemv_kernel(const GemvArgs g) {
  const int lane = threadIdx.x & 31;
  const int64_t row = g.row_offset + int64_t(blockIdx.x) * kGemvWarps + (threadIdx.x >> 5);
  if (row >= g.rows) return;
  const int64_t l = row / g.M, m = row - l * g.M;
  float acc = 0.0f;
  for (int64_t kb = lane; kb < g.K / kSfVec; kb += 32) {
    float av[16], bv[16];
    decode_row_block(g.a, l, m, kb, g.K, av);
    decode_row_block(g.b, l, 0, kb, g.K, bv);
#pragma unroll
    for (int i = 0; i < 16; ++i) acc = fmaf(av[i], bv[i], acc);  // the product is exact
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xFFFFFFFFu, acc, off);
  if (lane == 0) store_out(g.c.data, g.c.dtype, l * g.c.batch_stride + m * g.c.row_stride, read_alpha(g.alpha) * acc);
}

// ---------------------------------------------------------------------------
// Tiled gemm kernel shared by gemm, dual gemm and packed grouped gemm
// ---------------------------------------------------------------------------

constexpr int kTile = 64;      // M, N and K extent of a CTA tile
constexpr int kThreads = 256;  // 16 x 16 threads, 4 x 4 outputs each

struct GemmArgs {
  int64_t L = 1, M = 0, N = 0, K = 0;
  Operand a;
  Operand b[2];
  Alpha alpha[2];
  nvfp4_activation_t act = NVFP4_ACT_SILU;
  OutOperand c;
  int64_t tiles_m = 0, tiles_n = 0;
  int64_t tile_offset = 0;  // first tile of this launch
  // packed MoE (kPacked): rows [offsets[g], offsets[g+1]) of A / C use B batch g
  const int32_t* offsets = nullptr;
  const float* alphas = nullptr;
  int32_t G = 0;
};

// Decodes rows [row0, row0 + 64) x K [k0, k0 + 64) of an operand into dst[k][row]
// (transposed so the compute loop reads 4 consecutive rows as one float4). Rows
// outside [row_lo, row_hi) and K beyond K read as zero. Thread t decodes one scale
// block: row t / 4, K chunk t % 4 (16 elements).
__device__ __forceinline__ void load_tile(const Operand& op, int64_t l, int64_t row0, int64_t row_lo,
                                          int64_t row_hi, int64_t k0, int64_t K, float (*dst)[kTile]) {
  const int r = threadIdx.x >> 2, kc = threadIdx.x & 3;
  const int64_t row = row0 + r, kk = k0 + kc * kSfVec;
  float v[16];
  if (row >= row_lo && row < row_hi && kk < K) {
    decode_row_block(op, l, row, kk / kSfVec, K, v);
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = 0.0f;
  }
#pragma unroll
  for (int i = 0; i < 16; ++i) dst[kc * kSfVec + i][r] = v[i];
}

// Largest g in [0, G) with offsets[g] <= row (0 if none). Bounded on any table.
__device__ __forceinline__ int32_t expert_of(const int32_t* offsets, int32_t G, int64_t row) {
  int32_t lo = 0, hi = G - 1;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    if (int64_t(offsets[mid]) <= row) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

template <int kNumB, bool kPacked>
__global__ void __launch_bounds__(kThreads) gemm_kernel(const GemmArgs g) {
  __shared__ __align__(16) float As[kTile][kTile];
  __shared__ __align__(16) float Bs[kNumB][kTile][kTile];

  const int64_t tile = g.tile_offset + blockIdx.x;
  const int64_t tn = tile % g.tiles_n;
  const int64_t tm = (tile / g.tiles_n) % g.tiles_m;
  const int64_t l = tile / (g.tiles_n * g.tiles_m);
  const int64_t m0 = tm * kTile, n0 = tn * kTile;
  const int64_t m_end = m0 + kTile < g.M ? m0 + kTile : g.M;
  const int64_t n_end = n0 + kTile < g.N ? n0 + kTile : g.N;
  const int ty = threadIdx.x >> 4, tx = threadIdx.x & 15;

  // Non-packed: one pass over the tile. Packed: one pass per expert whose rows meet
  // the tile (a tile may straddle experts; rows are predicated per pass).
  int32_t g_first = 0, g_last = 0;
  if constexpr (kPacked) {
    if (g.G <= 0) return;
    g_first = expert_of(g.offsets, g.G, m0);
    g_last = expert_of(g.offsets, g.G, m_end - 1);
  }
  for (int32_t e = g_first; e <= g_last; ++e) {
    int64_t row_lo = m0, row_hi = m_end, lb = l;
    float alpha[kNumB];
    if constexpr (kPacked) {
      // Same clamping as the CPU backend: a bad table can only skip rows.
      int64_t begin = g.offsets[e], end = g.offsets[e + 1];
      begin = begin < 0 ? 0 : (begin > g.M ? g.M : begin);
      end = end < begin ? begin : (end > g.M ? g.M : end);
      row_lo = begin > m0 ? begin : m0;
      row_hi = end < m_end ? end : m_end;
      if (row_lo >= row_hi) continue;  // uniform across the CTA
      lb = e;
      alpha[0] = g.alphas ? g.alphas[e] : 1.0f;
    } else {
#pragma unroll
      for (int j = 0; j < kNumB; ++j) alpha[j] = read_alpha(g.alpha[j]);
    }

    float acc[kNumB][4][4];
#pragma unroll
    for (int j = 0; j < kNumB; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) acc[j][i][jj] = 0.0f;

    for (int64_t k0 = 0; k0 < g.K; k0 += kTile) {
      load_tile(g.a, kPacked ? 0 : l, m0, row_lo, row_hi, k0, g.K, As);
#pragma unroll
      for (int j = 0; j < kNumB; ++j) load_tile(g.b[j], lb, n0, n0, n_end, k0, g.K, Bs[j]);
      __syncthreads();
#pragma unroll 8
      for (int k = 0; k < kTile; ++k) {
        const float4 av = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
        const float a4[4] = {av.x, av.y, av.z, av.w};
#pragma unroll
        for (int j = 0; j < kNumB; ++j) {
          const float4 bv = *reinterpret_cast<const float4*>(&Bs[j][k][tx * 4]);
          const float b4[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int jj = 0; jj < 4; ++jj) acc[j][i][jj] = fmaf(a4[i], b4[jj], acc[j][i][jj]);
        }
      }
      __syncthreads();
    }

    // Epilogue: alpha * acc (dual: act(alpha1*acc1) * (alpha2*acc2)) in fp32, one rounding.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t m = m0 + ty * 4 + i;
      if (m < row_lo || m >= row_hi) continue;
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int64_t n = n0 + tx * 4 + jj;
        if (n >= n_end) continue;
        float v = alpha[0] * acc[0][i][jj];
        if constexpr (kNumB == 2) v = activation(g.act, v) * (alpha[1] * acc[1][i][jj]);
        store_out(g.c.data, g.c.dtype, (kPacked ? 0 : l * g.c.batch_stride) + m * g.c.row_stride + n * g.c.col_stride, v);
      }
    }
  }
}

template <int kNumB, bool kPacked>
nvfp4_status_t launch_gemm_kernel(GemmArgs& g, const Exec& exec) {
  g.tiles_m = ceil_div(g.M, kTile);
  g.tiles_n = ceil_div(g.N, kTile);
  const int64_t tiles = g.L * g.tiles_m * g.tiles_n;
  cudaStream_t stream = cuda_stream(exec);
  for (int64_t first = 0; first < tiles; first += kMaxGridX) {
    g.tile_offset = first;
    const int64_t n = tiles - first < kMaxGridX ? tiles - first : kMaxGridX;
    gemm_kernel<kNumB, kPacked><<<static_cast<unsigned>(n), kThreads, 0, stream>>>(g);
    NVFP4_CHECK_LAUNCH();
  }
  return NVFP4_SUCCESS;
}

}  // namespace

nvfp4_status_t gemv(const GemmProblem& p, const Exec& exec) {
  if (p.L == 0 || p.M == 0 || p.N == 0) return NVFP4_SUCCESS;
  GemvArgs g;
  g.M = p.M;
  g.K = p.K;
  g.rows = p.L * p.M;
  g.a = make_operand(p.a, p.sfa);
  g.b = make_operand(p.b, p.sfb);
  g.alpha = p.alpha;
  g.c = p.c;
  cudaStream_t stream = cuda_stream(exec);
  const int64_t rows_per_launch = kMaxGridX * kGemvWarps;
  for (int64_t first = 0; first < g.rows; first += rows_per_launch) {
    g.row_offset = first;
    const int64_t n = g.rows - first < rows_per_launch ? g.rows - first : rows_per_launch;
    gemv_kernel<<<static_cast<unsigned>(ceil_div(n, kGemvWarps)), kGemvWarps * 32, 0, stream>>>(g);
    NVFP4_CHECK_LAUNCH();
  }
  return NVFP4_SUCCESS;
}

nvfp4_status_t gemm(const GemmProblem& p, const Exec& exec) {
  if (p.L == 0 || p.M == 0 || p.N == 0) return NVFP4_SUCCESS;
  GemmArgs g;
  g.L = p.L; g.M = p.M; g.N = p.N; g.K = p.K;
  g.a = make_operand(p.a, p.sfa);
  g.b[0] = make_operand(p.b, p.sfb);
  g.alpha[0] = p.alpha;
  g.c = p.c;
  return launch_gemm_kernel<1, false>(g, exec);
}

nvfp4_status_t dual_gemm(const DualGemmProblem& p, const Exec& exec) {
  if (p.L == 0 || p.M == 0 || p.N == 0) return NVFP4_SUCCESS;
  GemmArgs g;
  g.L = p.L; g.M = p.M; g.N = p.N; g.K = p.K;
  g.a = make_operand(p.a, p.sfa);
  g.b[0] = make_operand(p.b1, p.sfb1);
  g.b[1] = make_operand(p.b2, p.sfb2);
  g.alpha[0] = p.alpha1;
  g.alpha[1] = p.alpha2;
  g.act = p.activation;
  g.c = p.c;
  return launch_gemm_kernel<2, false>(g, exec);
}

// A loop of launches, one per group (acceptable for the portable path).
nvfp4_status_t grouped_gemm(const GroupedGemmProblem& p, const Exec& exec) {
  for (int32_t i = 0; i < p.count; ++i) {
    const nvfp4_status_t st = gemm(p.groups[i], exec);
    if (st != NVFP4_SUCCESS) return st;
  }
  return NVFP4_SUCCESS;
}

// Offsets and alphas stay on the device: the grid covers all total_M rows and each
// row tile finds its expert(s) there. No host synchronisation.
nvfp4_status_t grouped_gemm_packed(const PackedGroupedGemmProblem& p, const Exec& exec) {
  if (p.G <= 0 || p.total_M == 0 || p.N == 0) return NVFP4_SUCCESS;
  GemmArgs g;
  g.L = 1; g.M = p.total_M; g.N = p.N; g.K = p.K;
  Fp4Operand a = p.a;
  a.batch_stride = 0;
  g.a = make_operand(a, p.sfa);
  g.b[0] = make_operand(p.b, p.sfb);
  g.c = p.c;
  g.offsets = p.offsets;
  g.alphas = p.alphas;
  g.G = p.G;
  return launch_gemm_kernel<1, true>(g, exec);
}

}  // namespace portable
}  // namespace nvfp4
