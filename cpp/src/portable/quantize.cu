// Portable quantize (with optional global-scale computation) and dequantize.
//
// Bandwidth-bound streaming kernels, two shapes of work:
//   - aligned operands with long rows (the common case): rows are cut into fixed
//     segments that warps walk in a grid stride (quantize_rows_kernel, amax_rows_kernel,
//     dequantize_staged_kernel); lanes take consecutive 16-byte pieces so every warp
//     access is contiguous, and each lane has several loads in flight before it computes;
//   - everything else (short rows, unaligned or oddly strided operands): "items" of 32
//     consecutive K elements of one row (two scale blocks, 16 packed fp4 bytes) in
//     row-major order over (batch, row, item), one item per thread at a time, a
//     persistent grid striding over the items in chunks of 256 with the (batch, row,
//     item) coordinates carried forward (no per-item 64-bit division).
// Measured versions and why each shape was chosen: bench/NOTES.md ("quantize /
// dequantize / swizzle (portable)").
//
// Numerics are exactly formats.h's recipe (see common.cuh): the CPU backend and
// these kernels produce identical bytes.
//
// This file holds the launchers; the kernels are in headers it alone includes (same
// translation unit, so the kernel symbols keep this file's name):
//   quantize_walk.cuh       item spaces, row walks, grid sizing
//   quantize_amax.cuh       the amax pass (compute_global_scale)
//   quantize_kernels.cuh    quantize
//   dequantize_kernels.cuh  dequantize
#include "workspace_cache.hpp"
#include "portable/common.cuh"
#include "portable/launchers.hpp"
#include "portable/quantize_walk.cuh"
#include "portable/quantize_amax.cuh"
#include "portable/quantize_kernels.cuh"
#include "portable/dequantize_kernels.cuh"

namespace nvfp4 {
namespace portable {
namespace {

// ---------------------------------------------------------------------------
// quantize
// ---------------------------------------------------------------------------

template <class T, bool kVec>
nvfp4_status_t launch_quantize_typed(const QuantizeProblem& p, const Exec& exec) {
  cudaStream_t stream = cuda_stream(exec);
  const bool blocked = p.sf_layout == NVFP4_SF_BLOCKED;

  // Check everything before touching memory (NOT_SUPPORTED must leave it untouched).
  QuantizeArgs a;
  if (!make_item_space(p.L, blocked ? blocked_sf_rows(p.rows) : p.rows, p.K, exec.sm_count,
                       resident_ctas_per_sm<quantize_kernel<T, kVec>>(exec.device), &a.s))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "quantize (portable): problem too large (K=%lld)",
                static_cast<long long>(p.K));
  AmaxArgs am;
  if (p.compute_global_scale &&
      !make_item_space(p.L, p.rows, p.K, exec.sm_count, resident_ctas_per_sm<amax_kernel<T, kVec>>(exec.device), &am.s))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "quantize (portable): problem too large");

  // Computing the global scale: an amax pass before the quantize pass. With the library's
  // cached scratch (exec.cached_workspace) its CTAs leave their maxima there and the
  // quantize pass reduces them (2 launches); else atomics into the zeroed global_scale and a
  // finalize kernel (memset + 3 launches).
  ScratchLease parts;  // outlives the launches (a graph allocation is freed after them)
  if (p.compute_global_scale) {
    am.x = p.x;
    am.x_rs = p.x_row_stride;
    am.x_bs = p.x_batch_stride;
    am.amax_bits = reinterpret_cast<unsigned*>(p.global_scale);
    const int64_t pieces = p.K * int64_t(sizeof(T)) / 16;
    const bool rows_pass = kVec && pieces >= 32 * kAmaxRowsUnroll && pieces < (int64_t(1) << 31);
    const RowWalk walk = rows_pass ? row_walk<amax_rows_kernel<T>>(p.L, p.rows,
                                                                   ceil_div(pieces, int64_t(32) * kAmaxRowsUnroll),
                                                                   kThreads / 32, exec)
                                   : RowWalk{};
    const unsigned grid = rows_pass ? walk.grid : am.s.grid;
    if (exec.cached_workspace) {
      const nvfp4_status_t st = parts.acquire(exec.device, stream, size_t(grid) * sizeof(float));
      if (st != NVFP4_SUCCESS) return st;
      am.parts = static_cast<float*>(parts.data());
      a.amax_parts = am.parts;
      a.amax_count = static_cast<int>(grid);
      a.gs_out = p.global_scale;
    } else {
      NVFP4_CUDA_TRY(cudaMemsetAsync(p.global_scale, 0, sizeof(float), stream));
    }
    if (rows_pass)
      amax_rows_kernel<T><<<walk.grid, kThreads, 0, stream>>>(am, walk);
    else
      amax_kernel<T, kVec><<<am.s.grid, kThreads, 0, stream>>>(am);
    NVFP4_CHECK_LAUNCH();
  }

  a.x = p.x;
  a.x_rs = p.x_row_stride;
  a.x_bs = p.x_batch_stride;
  a.q = p.q;
  a.q_rs = p.q_row_stride;
  a.q_bs = p.q_batch_stride;
  a.sf = p.sf;
  a.sf_rs = p.sf_row_stride;
  a.sf_bs = p.sf_batch_stride;
  a.R = p.rows;
  a.K = p.K;
  a.blocked = blocked;
  a.pad_cols = blocked && (p.K / kSfVec) % 4 != 0;
  a.gs = p.global_scale;
  a.gs_is_amax = p.compute_global_scale && !a.amax_parts;
  bool launched = false;
  if constexpr (kVec && kQuantRowsUnroll<T> > 0) {
    constexpr int W = kQuantRowsWalker;
    // 32-bit rows, segments and blocked scale column offsets (see quantize_rows_kernel)
    const int64_t rows = blocked ? blocked_sf_rows(p.rows) : p.rows;
    if (p.K / kSfVec >= W * kQuantRowsUnroll<T> && blocked_sf_cols(p.K) * 128 < (int64_t(1) << 31) &&
        rows < (int64_t(1) << 31)) {  // every lane has a block
      const int64_t segs = ceil_div(p.K / kSfVec, int64_t(W) * kQuantRowsUnroll<T>);
      if (blocked)
        launch_row_walk<quantize_rows_kernel<T, W, true>>(a, p.L, rows, segs, kThreads / W, exec);
      else
        launch_row_walk<quantize_rows_kernel<T, W, false>>(a, p.L, rows, segs, kThreads / W, exec);
      launched = true;
    }
  }
  if (!launched) quantize_kernel<T, kVec><<<a.s.grid, kThreads, 0, stream>>>(a);
  NVFP4_CHECK_LAUNCH();

  if (a.gs_is_amax) {
    finalize_global_scale_kernel<<<1, 1, 0, stream>>>(p.global_scale);
    NVFP4_CHECK_LAUNCH();
  }
  return NVFP4_SUCCESS;
}

template <class T>
nvfp4_status_t launch_quantize_typed(const QuantizeProblem& p, const Exec& exec) {
  const int64_t es = sizeof(T);
  const bool vec = aligned_to(p.x, 16, p.x_row_stride * es, p.x_batch_stride * es) &&
                   aligned_to(p.q, 16, p.q_row_stride, p.q_batch_stride);
  return vec ? launch_quantize_typed<T, true>(p, exec) : launch_quantize_typed<T, false>(p, exec);
}

// ---------------------------------------------------------------------------
// dequantize
// ---------------------------------------------------------------------------

template <class OT, bool kVec>
nvfp4_status_t launch_dequantize_typed(const DequantizeProblem& p, const Exec& exec) {
  DequantizeArgs a;
  a.q = p.q;
  a.q_rs = p.q_row_stride;
  a.q_bs = p.q_batch_stride;
  a.sf = p.sf;
  a.K = p.K;
  a.gs = p.global_scale;
  a.out = p.out;
  a.o_rs = p.out_row_stride;
  a.o_bs = p.out_batch_stride;
  // long rows: whole warp segments (32-bit rows and scale offsets: see ScaleAddr32)
  if (kVec && p.K >= 32 * 32 && blocked_sf_cols(p.K) * 128 < (int64_t(1) << 31) && p.rows < (int64_t(1) << 31)) {
    const int64_t segs = ceil_div(p.K / 32, int64_t(32));
    if (p.sf.layout == NVFP4_SF_BLOCKED)
      launch_row_walk<dequantize_staged_kernel<OT, true>>(a, p.L, p.rows, segs, kThreads / 32, exec);
    else
      launch_row_walk<dequantize_staged_kernel<OT, false>>(a, p.L, p.rows, segs, kThreads / 32, exec);
    NVFP4_CHECK_LAUNCH();
    return NVFP4_SUCCESS;
  }
  const int ctas = kVec ? resident_ctas_per_sm<dequantize_lane16_kernel<OT>>(exec.device)
                        : resident_ctas_per_sm<dequantize_unaligned_kernel<OT>>(exec.device);
  if (!make_item_space(p.L, p.rows, p.K, exec.sm_count, ctas, &a.s, kVec ? kDequantLaneElems<OT> : kItemElems))
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "dequantize (portable): problem too large (K=%lld)",
                static_cast<long long>(p.K));
  if constexpr (kVec) {
    dequantize_lane16_kernel<OT><<<a.s.grid, kThreads, 0, cuda_stream(exec)>>>(a);
  } else {
    dequantize_unaligned_kernel<OT><<<a.s.grid, kThreads, 0, cuda_stream(exec)>>>(a);
  }
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
}

template <class OT>
nvfp4_status_t launch_dequantize_typed(const DequantizeProblem& p, const Exec& exec) {
  const int64_t es = sizeof(OT);
  const bool vec = aligned_to(p.q, 16, p.q_row_stride, p.q_batch_stride) &&
                   aligned_to(p.out, 16, p.out_row_stride * es, p.out_batch_stride * es);
  return vec ? launch_dequantize_typed<OT, true>(p, exec) : launch_dequantize_typed<OT, false>(p, exec);
}

}  // namespace

nvfp4_status_t quantize(const QuantizeProblem& p, const Exec& exec) {
  if (p.L == 0 || p.rows == 0 || p.K == 0) {
    // Nothing to quantize; a requested global scale is that of amax 0 (1.0), as on CPU.
    if (p.compute_global_scale) {
      cudaStream_t stream = cuda_stream(exec);
      NVFP4_CUDA_TRY(cudaMemsetAsync(p.global_scale, 0, sizeof(float), stream));
      finalize_global_scale_kernel<<<1, 1, 0, stream>>>(p.global_scale);
      NVFP4_CHECK_LAUNCH();
    }
    return NVFP4_SUCCESS;
  }
  switch (p.x_dtype) {
    case DType::kFloat32: return launch_quantize_typed<float>(p, exec);
    case DType::kFloat16: return launch_quantize_typed<__half>(p, exec);
    case DType::kBFloat16: return launch_quantize_typed<__nv_bfloat16>(p, exec);
  }
  return fail(NVFP4_ERROR_INVALID_TYPE, "quantize (portable): unsupported input dtype");
}

nvfp4_status_t dequantize(const DequantizeProblem& p, const Exec& exec) {
  if (p.L == 0 || p.rows == 0 || p.K == 0) return NVFP4_SUCCESS;
  switch (p.out_dtype) {
    case DType::kFloat32: return launch_dequantize_typed<float>(p, exec);
    case DType::kFloat16: return launch_dequantize_typed<__half>(p, exec);
    case DType::kBFloat16: return launch_dequantize_typed<__nv_bfloat16>(p, exec);
  }
  return fail(NVFP4_ERROR_INVALID_TYPE, "dequantize (portable): unsupported output dtype");
}

}  // namespace portable
}  // namespace nvfp4
