// Host-side planning for the sm100a backend: which problems the CUTLASS kernels can
// take (TMA alignment rules), which kernel configuration a shape gets, and how the
// caller's workspace is carved. Plain C++ (no CUDA, no CUTLASS) so that the CPU unit
// test (tests/sm100_host) checks exactly the code the backend runs.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <initializer_list>

#include "../common/align.hpp"
#include "../common/formats.h"
#include "../problem.hpp"

namespace nvfp4::sm100 {

// Every workspace region starts on this boundary (TMA wants 16 B, CUTLASS's own
// workspace 16 B; 256 keeps regions in separate L2 sectors and matches cudaMalloc).
constexpr size_t kRegionAlign = 256;

inline size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
inline bool fits_int32(int64_t v) { return v >= 0 && v <= INT32_MAX; }

// Lays regions out one after another. Used twice with the same sequence of take()
// calls: once without a base to size the workspace, once on the caller's pointer.
// The size includes kRegionAlign bytes of slack, so any base pointer works.
class WorkspaceCarver {
 public:
  explicit WorkspaceCarver(void* base = nullptr) : base_(reinterpret_cast<uintptr_t>(base)) {
    cursor_ = base_ ? align_up(base_, kRegionAlign) : 0;
  }
  // Returns the region (nullptr when sizing); zero-byte regions take no space.
  void* take(size_t bytes) {
    if (bytes == 0) return nullptr;
    const uintptr_t at = cursor_;
    cursor_ = align_up(cursor_ + bytes, kRegionAlign);
    used_ = true;
    return base_ ? reinterpret_cast<void*>(at) : nullptr;
  }
  // Bytes a caller must provide for the regions taken so far.
  size_t required_bytes() const {
    if (!used_) return 0;
    const uintptr_t start = base_ ? align_up(base_, kRegionAlign) : 0;
    return static_cast<size_t>(cursor_ - start) + kRegionAlign;
  }

 private:
  uintptr_t base_ = 0;
  uintptr_t cursor_ = 0;
  bool used_ = false;
};

// Bytes of one batch of scales in the blocked layout (formats.h).
inline size_t blocked_bytes(int64_t rows, int64_t k) { return static_cast<size_t>(blocked_sf_bytes(rows, k)); }

// ---------------------------------------------------------------------------
// Dense GEMM (also the shape checks shared by dual and grouped)
// ---------------------------------------------------------------------------

// The two CUTLASS configurations of the dense GEMM (gemm_1sm.cu, gemm_2sm.cu).
enum class GemmConfig : int {
  k1SmStreamK = 0,  // 128x128x256 MMA tile on one SM, stream-K / split-K persistent scheduler
  k2SmPersistent = 1,  // 256x256x256 MMA tile over a 2-SM cluster, CLC persistent scheduler
};

// Why a problem is left to the next backend (NOT_SUPPORTED); nullptr when it is taken.
// `out_elem_bytes` is the size of one element of the CUTLASS output tensor.
// Everything TMA needs: 16-byte aligned bases, 16-byte multiple row/batch strides,
// a contiguous output row whose length is a multiple of 16 bytes.
inline const char* fp4_operand_unsupported(const Fp4Operand& op, int64_t L) {
  if (!is_aligned(op.data, 16)) return "fp4 operand pointer not 16-byte aligned";
  if (op.row_stride % 16 != 0) return "fp4 operand row stride not a multiple of 16 bytes";
  if (L > 1 && op.batch_stride % 16 != 0) return "fp4 operand batch stride not a multiple of 16 bytes";
  return nullptr;
}

inline int64_t dtype_bytes(DType d) { return d == DType::kFloat32 ? 4 : 2; }

inline const char* out_unsupported(const OutOperand& c, int64_t N, int64_t L, int64_t out_elem_bytes_per_n) {
  // out_elem_bytes_per_n: bytes of output written per output column (2 for fp16/bf16).
  if (!is_aligned(c.data, 16)) return "output pointer not 16-byte aligned";
  if (N > 1 && c.col_stride != 1) return "output is not row-major (column stride != 1)";
  const int64_t eb = dtype_bytes(c.dtype);
  if ((N * out_elem_bytes_per_n) % 16 != 0) return "output row length not a multiple of 16 bytes (N % 8 for 16-bit outputs)";
  if ((c.row_stride * eb) % 16 != 0) return "output row stride not a multiple of 16 bytes";
  if (L > 1 && (c.batch_stride * eb) % 16 != 0) return "output batch stride not a multiple of 16 bytes";
  return nullptr;
}

// Scales reach the kernel in CUTLASS's blocked layout. Linear scales are swizzled
// into the workspace. Blocked scales are handed to TMA directly, except when K % 64
// != 0: then the last 4-column scale tile has padding columns that the tensor core
// multiplies with the (zero) out-of-range data, so a NaN left in a caller's padding
// would poison real outputs; those tensors are copied with the padding zeroed.
inline bool scales_copied(nvfp4_sf_layout_t layout, int64_t K) {
  return layout == NVFP4_SF_LINEAR || K % 64 != 0;
}
inline const char* blocked_scales_unsupported(const ScaleOperand& s, int64_t L, int64_t K) {
  if (s.layout != NVFP4_SF_BLOCKED) return nullptr;
  if (scales_copied(s.layout, K)) {  // read as 4-byte words
    if ((reinterpret_cast<uintptr_t>(s.data) & 3u) || (L > 1 && s.batch_stride % 4 != 0))
      return "blocked scales not 4-byte aligned";
    return nullptr;
  }
  if (!is_aligned(s.data, 16)) return "blocked scale pointer not 16-byte aligned";
  if (L > 1 && (s.batch_stride % 16 != 0 || !fits_int32(s.batch_stride)))
    return "blocked scale batch stride not a multiple of 16 bytes or above 2^31";
  return nullptr;
}

// Shape-only part (what nvfp4_gemm_workspace_size can see: no scale pointers).
inline const char* gemm_shape_unsupported(const GemmProblem& p) {
  if (p.c.dtype == DType::kFloat32) return "sm100a gemm writes fp16/bf16 only (fp32 output: portable backend)";
  if (!fits_int32(p.M) || !fits_int32(p.N) || !fits_int32(p.K) || !fits_int32(p.L)) return "extent above 2^31";
  if (const char* why = fp4_operand_unsupported(p.a, p.L)) return why;
  if (const char* why = fp4_operand_unsupported(p.b, p.L)) return why;
  if (const char* why = out_unsupported(p.c, p.N, p.L, 2)) return why;
  return nullptr;
}

inline const char* gemm_unsupported(const GemmProblem& p) {
  if (const char* why = gemm_shape_unsupported(p)) return why;
  if (p.sfa.layout != p.sfb.layout) return "mixed scale layouts";
  if (const char* why = blocked_scales_unsupported(p.sfa, p.L, p.K)) return why;
  if (const char* why = blocked_scales_unsupported(p.sfb, p.L, p.K)) return why;
  return nullptr;
}

// 2-SM tiles only pay off when there are enough of them to fill the GPU; small M
// (decode-like shapes) go to the stream-K kernel, which splits K across SMs.
inline GemmConfig choose_gemm_config(int64_t M, int64_t N, int64_t L, int sm_count) {
  const int64_t tiles_2sm = (M + 255) / 256 * ((N + 255) / 256) * L;
  const int64_t clusters = sm_count > 1 ? sm_count / 2 : 1;
  return (M >= 256 && tiles_2sm >= clusters) ? GemmConfig::k2SmPersistent : GemmConfig::k1SmStreamK;
}

// Workspace of the dense GEMM: linear scales swizzled to the blocked layout (one
// dense blocked array per batch), then CUTLASS's own scratch (stream-K partials).
struct GemmWorkspace {
  void* sfa = nullptr;      // blocked copy of sfa (nullptr: the caller's blocked sfa is used as is)
  void* sfb = nullptr;
  void* cutlass = nullptr;  // CUTLASS kernel workspace
  size_t required = 0;
};
inline GemmWorkspace carve_gemm_workspace(void* base, const GemmProblem& p, size_t cutlass_bytes) {
  WorkspaceCarver c(base);
  GemmWorkspace w;
  if (scales_copied(p.sfa.layout, p.K)) w.sfa = c.take(blocked_bytes(p.M, p.K) * static_cast<size_t>(p.L));
  if (scales_copied(p.sfb.layout, p.K)) w.sfb = c.take(blocked_bytes(p.N, p.K) * static_cast<size_t>(p.L));
  w.cutlass = c.take(cutlass_bytes);
  w.required = c.required_bytes();
  return w;
}

// ---------------------------------------------------------------------------
// Dual GEMM: one kernel, two accumulators (dual_kernel.cuh); b1 and b2 read in place
// ---------------------------------------------------------------------------

// Output tiles of the dual kernel (one CTA each): grid (tiles_m * tiles_n, L).
constexpr int64_t kDualTileM = 128, kDualTileN = 128;

inline const char* dual_unsupported(const DualGemmProblem& p) {
  if (p.c.dtype == DType::kFloat32) return "sm100a dual gemm writes fp16/bf16 only";
  if (!fits_int32(p.M) || !fits_int32(p.N) || !fits_int32(p.K) || !fits_int32(p.L)) return "extent above 2^31";
  if ((p.M + kDualTileM - 1) / kDualTileM * ((p.N + kDualTileN - 1) / kDualTileN) > INT32_MAX || p.L > 65535)
    return "too many output tiles for one grid";
  if (const char* why = fp4_operand_unsupported(p.a, p.L)) return why;
  if (const char* why = fp4_operand_unsupported(p.b1, p.L)) return why;
  if (const char* why = fp4_operand_unsupported(p.b2, p.L)) return why;
  if (const char* why = out_unsupported(p.c, p.N, p.L, 2)) return why;
  if (p.sfa.layout != p.sfb1.layout || p.sfa.layout != p.sfb2.layout) return "mixed scale layouts";
  for (const ScaleOperand* s : {&p.sfa, &p.sfb1, &p.sfb2})
    if (const char* why = blocked_scales_unsupported(*s, p.L, p.K)) return why;
  return nullptr;
}

// Workspace of the dual GEMM: only the scale copies (linear scales swizzled, blocked
// ones with K % 64 != 0 copied with the padding zeroed), one dense blocked array per
// batch each. Nothing else: the kernel reads b1 and b2 where they are.
struct DualWorkspace {
  void* sfa = nullptr;   // blocked copies (nullptr: the caller's blocked tensor is used as is)
  void* sfb1 = nullptr;
  void* sfb2 = nullptr;
  size_t required = 0;
};
inline DualWorkspace carve_dual_workspace(void* base, const DualGemmProblem& p) {
  WorkspaceCarver c(base);
  DualWorkspace w;
  const size_t L = static_cast<size_t>(p.L);
  if (scales_copied(p.sfa.layout, p.K)) w.sfa = c.take(blocked_bytes(p.M, p.K) * L);
  if (scales_copied(p.sfb1.layout, p.K)) w.sfb1 = c.take(blocked_bytes(p.N, p.K) * L);
  if (scales_copied(p.sfb2.layout, p.K)) w.sfb2 = c.take(blocked_bytes(p.N, p.K) * L);
  w.required = c.required_bytes();
  return w;
}

// ---------------------------------------------------------------------------
// Grouped GEMM (pointer-array kernel): per-group argument tables on the device
// ---------------------------------------------------------------------------

// Sizes of one entry of each table the CUTLASS pointer-array kernel reads; filled
// in by grouped.cu from the CUTLASS types (static_asserts there keep them honest).
struct GroupTableSizes {
  size_t problem_shape;  // Shape<int,int,int>
  size_t stride_a, stride_b, stride_d;
  size_t layout_sfa, layout_sfb;
};

// Tables for G groups: problem shapes, A/B/SFA/SFB/D pointers, strides, scale
// layouts, per-group alpha values and pointers to them.
struct GroupTables {
  void* problem_shapes = nullptr;
  void* ptr_a = nullptr;
  void* ptr_b = nullptr;
  void* ptr_sfa = nullptr;
  void* ptr_sfb = nullptr;
  void* ptr_d = nullptr;
  void* stride_a = nullptr;
  void* stride_b = nullptr;
  void* stride_d = nullptr;
  void* layout_sfa = nullptr;
  void* layout_sfb = nullptr;
  void* alpha = nullptr;      // float[G]
  void* alpha_ptr = nullptr;  // const float*[G] (each pointing into `alpha`)
};
inline GroupTables carve_group_tables(WorkspaceCarver& c, const GroupTableSizes& s, int64_t G) {
  const size_t g = static_cast<size_t>(G);
  GroupTables t;
  t.problem_shapes = c.take(s.problem_shape * g);
  t.ptr_a = c.take(sizeof(void*) * g);
  t.ptr_b = c.take(sizeof(void*) * g);
  t.ptr_sfa = c.take(sizeof(void*) * g);
  t.ptr_sfb = c.take(sizeof(void*) * g);
  t.ptr_d = c.take(sizeof(void*) * g);
  t.stride_a = c.take(s.stride_a * g);
  t.stride_b = c.take(s.stride_b * g);
  t.stride_d = c.take(s.stride_d * g);
  t.layout_sfa = c.take(s.layout_sfa * g);
  t.layout_sfb = c.take(s.layout_sfb * g);
  t.alpha = c.take(sizeof(float) * g);
  t.alpha_ptr = c.take(sizeof(void*) * g);
  return t;
}

inline const char* group_unsupported(const GemmProblem& p) {
  if (p.c.dtype == DType::kFloat32) return "sm100a grouped gemm writes fp16/bf16 only";
  if (!fits_int32(p.M) || !fits_int32(p.N) || !fits_int32(p.K)) return "extent above 2^31";
  if (const char* why = fp4_operand_unsupported(p.a, 1)) return why;
  if (const char* why = fp4_operand_unsupported(p.b, 1)) return why;
  if (const char* why = out_unsupported(p.c, p.N, 1, 2)) return why;
  if (p.sfa.layout != p.sfb.layout) return "mixed scale layouts";
  if (const char* why = blocked_scales_unsupported(p.sfa, 1, p.K)) return why;
  if (const char* why = blocked_scales_unsupported(p.sfb, 1, p.K)) return why;
  return nullptr;
}

// List API: tables, then one blocked region per copied scale operand.
struct GroupedWorkspace {
  GroupTables tables;
  void* scales = nullptr;  // all swizzled scales, group after group (sfa_g then sfb_g)
  size_t scales_bytes = 0;
  void* cutlass = nullptr;
  size_t required = 0;
};
// Bytes of group g's copied sfa + sfb inside `scales` (0 when used as is).
inline size_t grouped_scale_bytes(const GemmProblem& p) {
  if (!scales_copied(p.sfa.layout, p.K)) return 0;
  return align_up(blocked_bytes(p.M, p.K), kRegionAlign) + align_up(blocked_bytes(p.N, p.K), kRegionAlign);
}
inline GroupedWorkspace carve_grouped_workspace(void* base, const GroupedGemmProblem& p, const GroupTableSizes& s,
                                                size_t cutlass_bytes) {
  WorkspaceCarver c(base);
  GroupedWorkspace w;
  w.tables = carve_group_tables(c, s, p.count);
  for (int32_t g = 0; g < p.count; ++g) w.scales_bytes += grouped_scale_bytes(p.groups[g]);
  w.scales = c.take(w.scales_bytes);
  w.cutlass = c.take(cutlass_bytes);
  w.required = c.required_bytes();
  return w;
}

// Packed (MoE) API: the group sizes are on the device, so the swizzled sfa region is
// sized for the worst case: every group rounds its rows up to 128 at most once.
inline int64_t packed_sfa_tiles_bound(int64_t total_M, int64_t G) { return total_M / 128 + G; }
inline const char* packed_unsupported(const PackedGroupedGemmProblem& p) {
  if (p.c.dtype == DType::kFloat32) return "sm100a grouped gemm writes fp16/bf16 only";
  if (!fits_int32(p.total_M) || !fits_int32(p.N) || !fits_int32(p.K) || !fits_int32(p.G)) return "extent above 2^31";
  if (const char* why = fp4_operand_unsupported(p.a, 1)) return why;
  if (const char* why = fp4_operand_unsupported(p.b, p.G)) return why;
  if (const char* why = out_unsupported(p.c, p.N, 1, 2)) return why;
  return nullptr;
}
struct PackedWorkspace {
  GroupTables tables;
  void* sfa_tile_base = nullptr;  // int32[G+1]: first 512-byte tile of group g's sfa
  void* sfa = nullptr;            // swizzled sfa, groups back to back (tile granularity)
  void* sfb = nullptr;            // (G, blocked(N, K))
  void* cutlass = nullptr;
  size_t required = 0;
};
inline PackedWorkspace carve_packed_workspace(void* base, const PackedGroupedGemmProblem& p, const GroupTableSizes& s,
                                              size_t cutlass_bytes) {
  WorkspaceCarver c(base);
  PackedWorkspace w;
  w.tables = carve_group_tables(c, s, p.G);
  w.sfa_tile_base = c.take(sizeof(int32_t) * static_cast<size_t>(p.G + 1));
  const int64_t tiles_k = blocked_sf_cols(p.K) / 4;
  w.sfa = c.take(static_cast<size_t>(packed_sfa_tiles_bound(p.total_M, p.G) * tiles_k) * 512u);
  w.sfb = c.take(blocked_bytes(p.N, p.K) * static_cast<size_t>(p.G));
  w.cutlass = c.take(cutlass_bytes);
  w.required = c.required_bytes();
  return w;
}

// ---------------------------------------------------------------------------
// GEMV (CUDA cores, 16-byte loads)
// ---------------------------------------------------------------------------
inline const char* gemv_unsupported(const GemmProblem& p) {
  if (!is_aligned(p.a.data, 16) || p.a.row_stride % 16 || (p.L > 1 && p.a.batch_stride % 16))
    return "a not 16-byte aligned";
  if (!is_aligned(p.b.data, 16) || (p.L > 1 && p.b.batch_stride % 16)) return "b not 16-byte aligned";
  // two scale bytes are read at once (K/16 is even)
  auto sf_ok = [&](const ScaleOperand& s) {
    if (reinterpret_cast<uintptr_t>(s.data) & 1u) return false;
    if (s.layout == NVFP4_SF_LINEAR) return s.row_stride % 2 == 0 && (p.L <= 1 || s.batch_stride % 2 == 0);
    return p.L <= 1 || s.batch_stride % 2 == 0;
  };
  if (!sf_ok(p.sfa) || !sf_ok(p.sfb)) return "scales not 2-byte aligned";
  if (p.M > INT32_MAX || p.L > 65535 * 65535LL) return "extent too large";
  return nullptr;
}

}  // namespace nvfp4::sm100
