// Portable swizzle / unswizzle of e4m3 block scales: linear (rows, K/16) <-> the
// blocked "128x4" layout (DESIGN.md §1), an exact byte permutation.
//
// One thread per 16-byte chunk of the blocked layout: chunk j (0..31) of a 512-byte
// tile holds, for rows rb*128 + j + {0, 32, 64, 96}, the 4 scale columns cb*4..cb*4+3
// (blocked offset (r%32)*16 + ((r%128)/32)*4 + c%4). Consecutive threads write (or
// read) consecutive 16-byte chunks of the blocked tensor; on the linear side each
// thread moves four 4-byte row pieces. Padding rows/columns are written as zero on
// swizzle and skipped on unswizzle. K/16 may be any positive count here (odd too).
#include "portable/common.cuh"
#include "portable/launchers.cuh"

namespace nvfp4 {
namespace portable {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxGridY = 65535;

struct SwizzleArgs {
  const uint8_t* src = nullptr;
  uint8_t* dst = nullptr;
  int64_t lin_rs = 0, lin_bs = 0;  // linear row / batch strides (bytes)
  int64_t blk_bs = 0;              // blocked batch stride (bytes)
  int64_t rows = 0;
  int64_t cols = 0;                // K / 16 scale columns
  int64_t chunks = 0;              // 16-byte chunks per blocked batch
  FastDivmod div_tiles_k;          // tiles along K = ceil(cols / 4)
  int64_t batch0 = 0;              // first batch of this launch (blockIdx.y offset)
  bool lin_vec4 = false;           // linear base and strides 4-byte aligned
  bool blk_vec16 = false;          // blocked base and stride 16-byte aligned
};

struct ChunkCoord {
  int64_t l, row0, col0;  // rows row0 + 32*i (i < 4), columns col0 .. col0+3
  int64_t blk_offset;     // byte offset of the chunk inside its blocked batch
};

__device__ __forceinline__ bool chunk_coord(const SwizzleArgs& a, ChunkCoord& cc) {
  const int64_t chunk = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (chunk >= a.chunks) return false;
  const uint32_t tile = static_cast<uint32_t>(chunk >> 5), j = static_cast<uint32_t>(chunk & 31);
  uint32_t rb, cb;
  a.div_tiles_k.divmod(tile, rb, cb);
  cc.l = a.batch0 + blockIdx.y;
  cc.row0 = int64_t(rb) * 128 + j;
  cc.col0 = int64_t(cb) * 4;
  cc.blk_offset = chunk * 16;
  return true;
}

// Four scale bytes (columns col0..col0+3) of one linear row, little-endian, zero
// beyond the last column.
__device__ __forceinline__ uint32_t load_linear4(const SwizzleArgs& a, const uint8_t* row, int64_t col0) {
  if (a.lin_vec4 && col0 + 4 <= a.cols) return __ldg(reinterpret_cast<const uint32_t*>(row + col0));
  uint32_t v = 0;
#pragma unroll
  for (int c = 0; c < 4; ++c)
    if (col0 + c < a.cols) v |= uint32_t(row[col0 + c]) << (8 * c);
  return v;
}

__global__ void __launch_bounds__(kThreads) swizzle_kernel(const SwizzleArgs a) {
  ChunkCoord cc;
  if (!chunk_coord(a, cc)) return;
  uint32_t word[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t r = cc.row0 + 32 * i;
    word[i] = r < a.rows ? load_linear4(a, a.src + cc.l * a.lin_bs + r * a.lin_rs, cc.col0) : 0u;
  }
  uint8_t* out = a.dst + cc.l * a.blk_bs + cc.blk_offset;
  if (a.blk_vec16) {
    *reinterpret_cast<uint4*>(out) = make_uint4(word[0], word[1], word[2], word[3]);
  } else {
#pragma unroll
    for (int b = 0; b < 16; ++b) out[b] = static_cast<uint8_t>(word[b / 4] >> (8 * (b % 4)));
  }
}

__global__ void __launch_bounds__(kThreads) unswizzle_kernel(const SwizzleArgs a) {
  ChunkCoord cc;
  if (!chunk_coord(a, cc)) return;
  const uint8_t* in = a.src + cc.l * a.blk_bs + cc.blk_offset;
  uint32_t word[4];
  if (a.blk_vec16) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(in));
    word[0] = v.x; word[1] = v.y; word[2] = v.z; word[3] = v.w;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      word[i] = uint32_t(in[4 * i]) | (uint32_t(in[4 * i + 1]) << 8) | (uint32_t(in[4 * i + 2]) << 16) |
                (uint32_t(in[4 * i + 3]) << 24);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t r = cc.row0 + 32 * i;
    if (r >= a.rows) break;  // rows grow with i: the rest is padding too
    uint8_t* row = a.dst + cc.l * a.lin_bs + r * a.lin_rs;
    if (a.lin_vec4 && cc.col0 + 4 <= a.cols) {
      *reinterpret_cast<uint32_t*>(row + cc.col0) = word[i];
    } else {
#pragma unroll
      for (int c = 0; c < 4; ++c)
        if (cc.col0 + c < a.cols) row[cc.col0 + c] = static_cast<uint8_t>(word[i] >> (8 * c));
    }
  }
}

// ---------------------------------------------------------------------------
// 16-byte-aligned operands: one CTA per (128-row block, 8 tiles along K) stages the
// 4 KB of blocked tiles in shared memory, so both sides move 16-byte pieces: the
// blocked side as whole 16-byte chunks, the linear side as 16-byte row segments (two
// per row). The per-chunk kernels above move the linear side 4 bytes per row.
// ---------------------------------------------------------------------------
constexpr int kTilesPerCta = 8;  // 8 tiles x 4 columns = 32 scale columns per row

struct StagedArgs {
  SwizzleArgs a;
  int64_t tiles_k = 0;
  int64_t cta_groups_k = 0;  // ceil(tiles_k / 8)
};

// The CTA's 128-row block, its first tile along K, and thread t's linear piece.
struct StagedCoord {
  int64_t l, rb, cb0;
  int row;   // 0..127 within the row block
  int seg;   // 16-byte half of the CTA's 32 columns
  __device__ int64_t col0() const { return cb0 * 4 + seg * 16; }
};

__device__ __forceinline__ StagedCoord staged_coord(const StagedArgs& s) {
  StagedCoord c;
  c.l = s.a.batch0 + blockIdx.y;
  c.rb = int64_t(blockIdx.x) / s.cta_groups_k;
  c.cb0 = (int64_t(blockIdx.x) - c.rb * s.cta_groups_k) * kTilesPerCta;
  c.row = threadIdx.x >> 1;
  c.seg = threadIdx.x & 1;
  return c;
}

// Byte offset in the staged 8-tile block of (row within block, column within the 32).
__device__ __forceinline__ int staged_offset(int row, int col) {
  return (col >> 2) * 512 + (row & 31) * 16 + (row >> 5) * 4 + (col & 3);
}

__global__ void __launch_bounds__(kThreads) unswizzle_staged_kernel(const StagedArgs s) {
  __shared__ __align__(16) uint8_t tile[kTilesPerCta * 512];
  const SwizzleArgs& a = s.a;
  const StagedCoord c = staged_coord(s);
  // blocked -> smem: chunk t of the CTA's tiles (tiles beyond tiles_k are never read)
  if (c.cb0 + threadIdx.x / 32 < s.tiles_k) {
    const int64_t chunk = (c.rb * s.tiles_k + c.cb0) * 32 + threadIdx.x;
    reinterpret_cast<uint4*>(tile)[threadIdx.x] =
        __ldg(reinterpret_cast<const uint4*>(a.src + c.l * a.blk_bs + chunk * 16));
  }
  __syncthreads();
  const int64_t r = c.rb * 128 + c.row;
  const int64_t col0 = c.col0();
  if (r >= a.rows || col0 >= a.cols) return;
  uint8_t b[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) b[j] = tile[staged_offset(c.row, c.seg * 16 + j)];
  uint8_t* out = a.dst + c.l * a.lin_bs + r * a.lin_rs + col0;
  if (col0 + 16 <= a.cols) {
    uint4 v;
    memcpy(&v, b, 16);
    *reinterpret_cast<uint4*>(out) = v;
  } else {
    for (int j = 0; j < 16 && col0 + j < a.cols; ++j) out[j] = b[j];
  }
}

__global__ void __launch_bounds__(kThreads) swizzle_staged_kernel(const StagedArgs s) {
  __shared__ __align__(16) uint8_t tile[kTilesPerCta * 512];
  const SwizzleArgs& a = s.a;
  const StagedCoord c = staged_coord(s);
  // linear -> smem, zeros for padding rows / columns
  const int64_t r = c.rb * 128 + c.row;
  const int64_t col0 = c.col0();
  uint8_t b[16] = {};
  if (r < a.rows && col0 < a.cols) {
    const uint8_t* in = a.src + c.l * a.lin_bs + r * a.lin_rs + col0;
    if (col0 + 16 <= a.cols) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(in));
      memcpy(b, &v, 16);
    } else {
      for (int j = 0; j < 16 && col0 + j < a.cols; ++j) b[j] = in[j];
    }
  }
#pragma unroll
  for (int j = 0; j < 16; ++j) tile[staged_offset(c.row, c.seg * 16 + j)] = b[j];
  __syncthreads();
  // smem -> blocked: chunk t of the CTA's tiles
  if (c.cb0 + threadIdx.x / 32 < s.tiles_k) {
    const int64_t chunk = (c.rb * s.tiles_k + c.cb0) * 32 + threadIdx.x;
    *reinterpret_cast<uint4*>(a.dst + c.l * a.blk_bs + chunk * 16) = reinterpret_cast<const uint4*>(tile)[threadIdx.x];
  }
}

nvfp4_status_t launch(const SwizzleProblem& p, const Exec& exec, bool to_blocked) {
  if (p.L == 0 || p.rows == 0 || p.K < kSfVec) return NVFP4_SUCCESS;
  SwizzleArgs a;
  a.src = p.src;
  a.dst = p.dst;
  a.lin_rs = p.linear_row_stride;
  a.lin_bs = p.linear_batch_stride;
  a.blk_bs = p.blocked_batch_stride;
  a.rows = p.rows;
  a.cols = p.K / kSfVec;
  const int64_t tiles_k = ceil_div(a.cols, 4);
  const int64_t tiles = blocked_sf_rows(p.rows) / 128 * tiles_k;
  a.chunks = tiles * 32;
  if (tiles >= (int64_t(1) << 31) || ceil_div(a.chunks, kThreads) > kMaxGridX)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s (portable): scale tensor too large",
                to_blocked ? "swizzle_scales" : "unswizzle_scales");
  a.div_tiles_k = FastDivmod(static_cast<uint32_t>(tiles_k));
  const uint8_t* lin = to_blocked ? p.src : p.dst;
  const uint8_t* blk = to_blocked ? p.dst : p.src;
  a.lin_vec4 = aligned_to(lin, 4, a.lin_rs, a.lin_bs);
  a.blk_vec16 = aligned_to(blk, 16, a.blk_bs);
  cudaStream_t stream = cuda_stream(exec);
  if (a.blk_vec16 && aligned_to(lin, 16, a.lin_rs, a.lin_bs)) {
    StagedArgs st;
    st.tiles_k = tiles_k;
    st.cta_groups_k = ceil_div(tiles_k, kTilesPerCta);
    const int64_t ctas = blocked_sf_rows(p.rows) / 128 * st.cta_groups_k;
    if (ctas <= kMaxGridX) {
      for (int64_t l0 = 0; l0 < p.L; l0 += kMaxGridY) {
        a.batch0 = l0;
        st.a = a;
        const dim3 grid(static_cast<unsigned>(ctas),
                        static_cast<unsigned>(p.L - l0 < kMaxGridY ? p.L - l0 : kMaxGridY));
        if (to_blocked) swizzle_staged_kernel<<<grid, kThreads, 0, stream>>>(st);
        else unswizzle_staged_kernel<<<grid, kThreads, 0, stream>>>(st);
        NVFP4_CHECK_LAUNCH();
      }
      return NVFP4_SUCCESS;
    }
  }
  const unsigned grid_x = static_cast<unsigned>(ceil_div(a.chunks, kThreads));
  for (int64_t l0 = 0; l0 < p.L; l0 += kMaxGridY) {  // gridDim.y <= 65535
    a.batch0 = l0;
    const dim3 grid(grid_x, static_cast<unsigned>(p.L - l0 < kMaxGridY ? p.L - l0 : kMaxGridY));
    if (to_blocked) swizzle_kernel<<<grid, kThreads, 0, stream>>>(a);
    else unswizzle_kernel<<<grid, kThreads, 0, stream>>>(a);
    NVFP4_CHECK_LAUNCH();
  }
  return NVFP4_SUCCESS;
}

}  // namespace

nvfp4_status_t swizzle_scales(const SwizzleProblem& p, const Exec& exec) { return launch(p, exec, true); }
nvfp4_status_t unswizzle_scales(const SwizzleProblem& p, const Exec& exec) { return launch(p, exec, false); }

}  // namespace portable
}  // namespace nvfp4
