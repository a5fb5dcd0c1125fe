// Portable swizzle / unswizzle of e4m3 block scales: linear (rows, K/16) <-> the
// blocked "128x4" layout (docs/design.md, "Formats and layouts"), an exact byte permutation.
//
// Operands whose linear rows and blocked batches are 16-byte aligned take the staged
// kernels (bottom of the file: a CTA transposes 8 KB through shared memory as 32-bit
// words, 82-90% of the copy bandwidth on H100/H200). The general kernels:
// one thread per 16-byte chunk of the blocked layout: chunk j (0..31) of a 512-byte
// tile holds, for rows rb*128 + j + {0, 32, 64, 96}, the 4 scale columns cb*4..cb*4+3
// (blocked offset (r%32)*16 + ((r%128)/32)*4 + c%4). Consecutive threads write (or
// read) consecutive 16-byte chunks of the blocked tensor; on the linear side each
// thread moves four 4-byte row pieces. Padding rows/columns are written as zero on
// swizzle and skipped on unswizzle. K/16 may be any positive count here (odd too).
#include "portable/common.cuh"
#include "portable/launchers.hpp"

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
// 16-byte-aligned operands: one CTA per (128-row block, 16 tiles along K) stages the
// 8 KB of blocked tiles in shared memory, so both sides move 16-byte pieces: the
// blocked side as whole 16-byte chunks, the linear side as 16-byte row segments
// (four per row, four consecutive lanes per 64-byte row piece). Both layouts keep the
// 4 columns of one row inside one tile as one little-endian 32-bit word, so the
// transposition moves whole words: word (row, tile) of the CTA lives at shared word
// tile * 128 + (row % 32) * 4 + row / 32, i.e. exactly the blocked order (chunk c of
// the CTA = shared words 4c .. 4c+3).
// ---------------------------------------------------------------------------
constexpr int kTilesPerCta = 16;                   // 64 scale columns per row
constexpr int kSegsPerRow = kTilesPerCta / 4;      // 16-byte linear segments per row
constexpr int kStagedPasses = 128 * kSegsPerRow / kThreads;  // segments per thread
constexpr int kStagedChunks = kTilesPerCta * 32 / kThreads;  // blocked chunks per thread

struct StagedArgs {
  SwizzleArgs a;
  int64_t tiles_k = 0;
  int64_t cta_groups_k = 0;  // ceil(tiles_k / kTilesPerCta)
};

struct StagedCta {
  int64_t l, rb, cb0;  // batch, 128-row block, first tile along K
};

__device__ __forceinline__ StagedCta staged_cta(const StagedArgs& s) {
  StagedCta c;
  c.l = s.a.batch0 + blockIdx.y;
  c.rb = int64_t(blockIdx.x) / s.cta_groups_k;
  c.cb0 = (int64_t(blockIdx.x) - c.rb * s.cta_groups_k) * kTilesPerCta;
  return c;
}

// Linear segment `pass` of this thread: row within the block and 16-byte segment.
__device__ __forceinline__ int staged_row(int pass) { return pass * (kThreads / kSegsPerRow) + threadIdx.x / kSegsPerRow; }
__device__ __forceinline__ int staged_seg() { return threadIdx.x % kSegsPerRow; }
__device__ __forceinline__ int staged_word(int row, int tile) { return tile * 128 + (row & 31) * 4 + (row >> 5); }

__global__ void __launch_bounds__(kThreads) unswizzle_staged_kernel(const StagedArgs s) {
  __shared__ __align__(16) uint32_t words[kTilesPerCta * 128];
  const SwizzleArgs& a = s.a;
  const StagedCta c = staged_cta(s);
  // blocked -> smem (tiles beyond tiles_k are never read)
  const uint8_t* blk = a.src + c.l * a.blk_bs + (c.rb * s.tiles_k + c.cb0) * 512;
  uint4 v[kStagedChunks];
#pragma unroll
  for (int i = 0; i < kStagedChunks; ++i) {
    const int chunk = i * kThreads + threadIdx.x;
    if (c.cb0 + chunk / 32 < s.tiles_k) v[i] = __ldg(reinterpret_cast<const uint4*>(blk) + chunk);
  }
#pragma unroll
  for (int i = 0; i < kStagedChunks; ++i) {
    const int chunk = i * kThreads + threadIdx.x;
    if (c.cb0 + chunk / 32 < s.tiles_k) reinterpret_cast<uint4*>(words)[chunk] = v[i];
  }
  __syncthreads();
  const int seg = staged_seg();
  const int64_t col0 = c.cb0 * 4 + seg * 16;
  if (col0 >= a.cols) return;
#pragma unroll
  for (int pass = 0; pass < kStagedPasses; ++pass) {
    const int row = staged_row(pass);
    const int64_t r = c.rb * 128 + row;
    if (r >= a.rows) break;  // rows grow with pass
    const uint4 out = make_uint4(words[staged_word(row, seg * 4 + 0)], words[staged_word(row, seg * 4 + 1)],
                                 words[staged_word(row, seg * 4 + 2)], words[staged_word(row, seg * 4 + 3)]);
    uint8_t* dst = a.dst + c.l * a.lin_bs + r * a.lin_rs + col0;
    if (col0 + 16 <= a.cols) {
      *reinterpret_cast<uint4*>(dst) = out;
    } else {
      uint8_t b[16];
      memcpy(b, &out, 16);
      for (int j = 0; j < 16 && col0 + j < a.cols; ++j) dst[j] = b[j];
    }
  }
}

__global__ void __launch_bounds__(kThreads) swizzle_staged_kernel(const StagedArgs s) {
  __shared__ __align__(16) uint32_t words[kTilesPerCta * 128];
  const SwizzleArgs& a = s.a;
  const StagedCta c = staged_cta(s);
  // linear -> registers (all loads first), zeros for padding rows / columns
  const int seg = staged_seg();
  const int64_t col0 = c.cb0 * 4 + seg * 16;
  uint4 v[kStagedPasses];
#pragma unroll
  for (int pass = 0; pass < kStagedPasses; ++pass) {
    const int64_t r = c.rb * 128 + staged_row(pass);
    v[pass] = make_uint4(0u, 0u, 0u, 0u);
    if (r < a.rows && col0 < a.cols) {
      const uint8_t* src = a.src + c.l * a.lin_bs + r * a.lin_rs + col0;
      if (col0 + 16 <= a.cols) {
        v[pass] = __ldg(reinterpret_cast<const uint4*>(src));
      } else {
        uint8_t b[16] = {};
        for (int j = 0; j < 16 && col0 + j < a.cols; ++j) b[j] = src[j];
        memcpy(&v[pass], b, 16);
      }
    }
  }
#pragma unroll
  for (int pass = 0; pass < kStagedPasses; ++pass) {
    const int row = staged_row(pass);
    words[staged_word(row, seg * 4 + 0)] = v[pass].x;
    words[staged_word(row, seg * 4 + 1)] = v[pass].y;
    words[staged_word(row, seg * 4 + 2)] = v[pass].z;
    words[staged_word(row, seg * 4 + 3)] = v[pass].w;
  }
  __syncthreads();
  // smem -> blocked
  uint8_t* blk = a.dst + c.l * a.blk_bs + (c.rb * s.tiles_k + c.cb0) * 512;
#pragma unroll
  for (int i = 0; i < kStagedChunks; ++i) {
    const int chunk = i * kThreads + threadIdx.x;
    if (c.cb0 + chunk / 32 < s.tiles_k)
      reinterpret_cast<uint4*>(blk)[chunk] = reinterpret_cast<const uint4*>(words)[chunk];
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
