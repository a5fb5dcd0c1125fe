/* nvfp4 — NVFP4 (e2m1 values, e4m3 block scales per 16 elements) matrix kernels.
 *
 * C ABI. Every operand is described by an nvfp4_tensor_t (pointer, dtype, device,
 * shape, strides in elements). Operands on the host run the float64 CPU
 * implementations; operands on a CUDA device run the best GPU backend for that
 * device. All functions are thread-safe; GPU calls only enqueue work on `stream`
 * (no host synchronisation, no allocation), so they can be captured in a CUDA graph.
 *
 * Conventions (see docs/design.md, "Formats and layouts"):
 *   - packed fp4: two e2m1 values per byte, element 2i in the low nibble; a matrix
 *     with K columns has K/2 bytes per row. Tensors of dtype NVFP4_DTYPE_FP4X2 or
 *     UINT8/INT8 are accepted; their shape counts bytes.
 *   - block scales: one e4m3 byte per 16 K-elements, either `linear` (rows, K/16)
 *     or `blocked` (the cuBLAS/CUTLASS 128x4 tiled layout: rows padded to 128, scale
 *     columns padded to 4). A blocked scale tensor is a dense array of exactly
 *     nvfp4_blocked_scale_bytes(rows, K) bytes per batch.
 *   - C = alpha * A * B^T, both operands K-major. A leading batch dim L is optional
 *     on every operand.
 *   - global_scale is a *decode* multiplier (amax / (6*448)).
 */
#ifndef NVFP4_NVFP4_H
#define NVFP4_NVFP4_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  if defined(NVFP4_BUILDING_LIBRARY)
#    define NVFP4_API __declspec(dllexport)
#  else
#    define NVFP4_API
#  endif
#else
#  define NVFP4_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define NVFP4_MAX_DIMS 6

/* Binary compatible with cudaStream_t / CUstream; NULL is the legacy default stream. */
typedef struct CUstream_st* nvfp4_stream_t;

typedef enum nvfp4_status {
  NVFP4_SUCCESS = 0,
  NVFP4_ERROR_INVALID_VALUE = 1,   /* bad shape, stride, size, option (Python: ValueError) */
  NVFP4_ERROR_INVALID_TYPE = 2,    /* wrong dtype or device kind (Python: TypeError) */
  NVFP4_ERROR_NOT_SUPPORTED = 3,   /* no backend can run this op on this device */
  NVFP4_ERROR_CUDA = 4,            /* a CUDA runtime call or launch failed */
  NVFP4_ERROR_INTERNAL = 5
} nvfp4_status_t;

typedef enum nvfp4_dtype {
  NVFP4_DTYPE_UINT8 = 0,
  NVFP4_DTYPE_INT8 = 1,
  NVFP4_DTYPE_FP4X2 = 2,     /* float4_e2m1fn_x2: one byte, two packed values */
  NVFP4_DTYPE_E4M3 = 3,      /* float8_e4m3fn */
  NVFP4_DTYPE_FLOAT16 = 4,
  NVFP4_DTYPE_BFLOAT16 = 5,
  NVFP4_DTYPE_FLOAT32 = 6,
  NVFP4_DTYPE_FLOAT64 = 7,
  NVFP4_DTYPE_INT32 = 8
} nvfp4_dtype_t;

/* Bytes per element of dtype d (the fp4 and e4m3 dtypes count bytes: 1). */
static inline int64_t nvfp4_dtype_size(nvfp4_dtype_t d) {
  switch (d) {
    case NVFP4_DTYPE_FLOAT16:
    case NVFP4_DTYPE_BFLOAT16: return 2;
    case NVFP4_DTYPE_FLOAT32:
    case NVFP4_DTYPE_INT32: return 4;
    case NVFP4_DTYPE_FLOAT64: return 8;
    default: return 1;
  }
}

typedef enum nvfp4_device_type {
  NVFP4_DEVICE_CPU = 0,
  NVFP4_DEVICE_CUDA = 1
} nvfp4_device_type_t;

typedef enum nvfp4_sf_layout {
  NVFP4_SF_LINEAR = 0,
  NVFP4_SF_BLOCKED = 1
} nvfp4_sf_layout_t;

typedef enum nvfp4_activation {
  NVFP4_ACT_SILU = 0,
  NVFP4_ACT_GELU_TANH = 1
} nvfp4_activation_t;

typedef enum nvfp4_backend {
  NVFP4_BACKEND_AUTO = 0,      /* best for the device */
  NVFP4_BACKEND_CPU = 1,
  NVFP4_BACKEND_PORTABLE = 2,  /* CC >= 8.0 */
  NVFP4_BACKEND_SM90A = 3,     /* CC 9.0 */
  NVFP4_BACKEND_SM100A = 4     /* CC 10.x */
} nvfp4_backend_t;

/* A strided view; strides are in elements (bytes for 1-byte dtypes), may be any
 * non-negative value except where an op requires a unit inner stride. */
typedef struct nvfp4_tensor {
  void* data;
  nvfp4_dtype_t dtype;
  nvfp4_device_type_t device_type;
  int32_t device_id;
  int32_t ndim;
  int64_t shape[NVFP4_MAX_DIMS];
  int64_t strides[NVFP4_MAX_DIMS];
} nvfp4_tensor_t;

/* A scalar multiplier: `device_ptr` (one fp32 on the operands' device, read at
 * kernel time, so a captured graph can change it) when non-NULL, else `value`. */
typedef struct nvfp4_scalar {
  float value;
  const float* device_ptr;
} nvfp4_scalar_t;

/* Where an op's scratch comes from (ops that need none ignore it). */
typedef enum nvfp4_workspace_mode {
  /* `workspace`: caller-owned, at least the bytes the op's *_workspace_size query returns. */
  NVFP4_WORKSPACE_CALLER = 0,
  /* The library's own, when `workspace` is NULL: one buffer cached per (calling thread,
   * device, stream), grown in stream order (cudaFreeAsync / cudaMallocAsync on `stream`),
   * so nothing is allocated on the hot path. While `stream` is being captured into a CUDA
   * graph, the scratch is instead a graph allocation (cudaMallocAsync on the capturing
   * stream, cudaFreeAsync after the op's launches): every graph owns its scratch, and
   * replays, also concurrent ones on other streams, never share it. */
  NVFP4_WORKSPACE_CACHED = 1
} nvfp4_workspace_mode_t;

/* Per-call execution context. Zero-initialised: legacy default stream, no workspace,
 * AUTO backend, caller-provided workspace. */
typedef struct nvfp4_exec {
  nvfp4_stream_t stream;
  void* workspace;
  size_t workspace_bytes;
  nvfp4_backend_t backend;  /* NVFP4_BACKEND_AUTO unless forcing one (tests, benchmarks) */
  nvfp4_workspace_mode_t workspace_mode;
} nvfp4_exec_t;

/* ---- library ---------------------------------------------------------- */
NVFP4_API const char* nvfp4_version(void);
NVFP4_API const char* nvfp4_status_string(nvfp4_status_t status);
/* Message of the last failed call on this thread ("" if none). */
NVFP4_API const char* nvfp4_last_error(void);
/* Semicolon-separated CUDA archs the library was compiled for, e.g. "80;90a;100a". */
NVFP4_API const char* nvfp4_build_archs(void);
NVFP4_API const char* nvfp4_backend_name(nvfp4_backend_t backend);
/* The backend that ran the last successful op on this thread (a fast path may hand a
 * problem it does not cover to the portable kernels; this says which one ran). */
NVFP4_API nvfp4_backend_t nvfp4_last_backend(void);

/* ---- devices ---------------------------------------------------------- */
typedef struct nvfp4_device_info_st {
  int32_t device_id;
  int32_t cc_major, cc_minor;
  int32_t multiprocessors;
  int64_t total_memory_bytes;
  char name[256];
  nvfp4_backend_t backend;   /* what NVFP4_BACKEND_AUTO picks on this device */
} nvfp4_device_info_t;

/* Number of CUDA devices (0 without a driver or GPU; never an error). */
NVFP4_API int32_t nvfp4_device_count(void);
NVFP4_API nvfp4_status_t nvfp4_device_info(int32_t device_id, nvfp4_device_info_t* info);
/* Waits for all work on `stream` (for callers without a CUDA runtime of their own). */
NVFP4_API nvfp4_status_t nvfp4_stream_synchronize(nvfp4_stream_t stream);

/* ---- layouts ---------------------------------------------------------- */
/* Bytes of one blocked scale tensor: ceil(rows/128)*128 * ceil(k/64)*4. */
NVFP4_API int64_t nvfp4_blocked_scale_bytes(int64_t rows, int64_t k);
/* Offset in the blocked layout of the scale of (row, scale column). */
NVFP4_API int64_t nvfp4_blocked_scale_offset(int64_t row, int64_t col, int64_t k);

/* ---- ops ---------------------------------------------------------------
 * Shapes (a leading L is optional on every operand, all-or-nothing):
 *   gemv:  a (L,M,K/2), sfa, b (L,K/2), sfb (L,K/16) or blocked with rows=1, out (L,M)
 *   gemm:  a (L,M,K/2), b (L,N,K/2), out (L,M,N)
 *   dual:  out = act(alpha1*A*B1^T) * (alpha2*A*B2^T)
 *   grouped: `count` independent gemms (L = 1), one launch where the backend can
 *   grouped_packed: a (sum M_g, K/2), sfa linear (sum M_g, K/16), b (G,N,K/2),
 *     sfb linear (G,N,K/16), offsets int32 (G+1,) on the device, out (sum M_g, N);
 *     alphas: NULL or fp32 (G,) on the device. M_g = offsets[g+1]-offsets[g].
 * Scale tensors: linear (L, rows, K/16) with unit inner stride, or blocked: a dense
 * (L, bytes) / (bytes,) array, or the 6-D view (32,4,rest_rows,4,rest_k,L).
 */
NVFP4_API nvfp4_status_t nvfp4_gemv(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                    const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb,
                                    nvfp4_scalar_t alpha, nvfp4_sf_layout_t sf_layout,
                                    const nvfp4_tensor_t* out, const nvfp4_exec_t* exec);

NVFP4_API nvfp4_status_t nvfp4_gemm(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                    const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb,
                                    nvfp4_scalar_t alpha, nvfp4_sf_layout_t sf_layout,
                                    const nvfp4_tensor_t* out, const nvfp4_exec_t* exec);

NVFP4_API nvfp4_status_t nvfp4_dual_gemm(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                         const nvfp4_tensor_t* b1, const nvfp4_tensor_t* sfb1,
                                         const nvfp4_tensor_t* b2, const nvfp4_tensor_t* sfb2,
                                         nvfp4_scalar_t alpha1, nvfp4_scalar_t alpha2,
                                         nvfp4_activation_t activation,
                                         nvfp4_sf_layout_t sf_layout,
                                         const nvfp4_tensor_t* out, const nvfp4_exec_t* exec);

/* Arrays of `count` tensors; alphas has `count` entries (NULL: all 1.0). */
NVFP4_API nvfp4_status_t nvfp4_grouped_gemm(int32_t count, const nvfp4_tensor_t* a,
                                            const nvfp4_tensor_t* sfa, const nvfp4_tensor_t* b,
                                            const nvfp4_tensor_t* sfb, const nvfp4_scalar_t* alphas,
                                            nvfp4_sf_layout_t sf_layout,
                                            const nvfp4_tensor_t* out, const nvfp4_exec_t* exec);

NVFP4_API nvfp4_status_t nvfp4_grouped_gemm_packed(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                                   const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb,
                                                   const nvfp4_tensor_t* offsets,
                                                   const nvfp4_tensor_t* alphas, /* NULL or (G,) fp32 */
                                                   const nvfp4_tensor_t* out, const nvfp4_exec_t* exec);

/* Workspace queries: the scratch bytes the op needs for exactly these arguments on the
 * backend `exec` selects (0 on the portable paths; the sm90a GEMM's pre-decode path,
 * the sm90a dual GEMM (two fp32 products, at most 256 MiB + the GEMM's), grouped GEMM
 * (the largest group's) and packed MoE GEMM (the tokens as fp16) and the sm100a paths
 * need some). Same arguments and validation as the op, plus `bytes`.
 * An op given less workspace than its query returns fails with INVALID_VALUE, unless
 * exec->workspace_mode is NVFP4_WORKSPACE_CACHED and exec->workspace is NULL. */
NVFP4_API nvfp4_status_t nvfp4_gemm_workspace_size(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                                   const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb,
                                                   nvfp4_sf_layout_t sf_layout,
                                                   const nvfp4_tensor_t* out, const nvfp4_exec_t* exec,
                                                   size_t* bytes);
NVFP4_API nvfp4_status_t nvfp4_dual_gemm_workspace_size(const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa,
                                                        const nvfp4_tensor_t* b1, const nvfp4_tensor_t* sfb1,
                                                        const nvfp4_tensor_t* b2, const nvfp4_tensor_t* sfb2,
                                                        nvfp4_scalar_t alpha1, nvfp4_scalar_t alpha2,
                                                        nvfp4_activation_t activation,
                                                        nvfp4_sf_layout_t sf_layout, const nvfp4_tensor_t* out,
                                                        const nvfp4_exec_t* exec, size_t* bytes);
NVFP4_API nvfp4_status_t nvfp4_grouped_gemm_workspace_size(int32_t count, const nvfp4_tensor_t* a,
                                                           const nvfp4_tensor_t* sfa, const nvfp4_tensor_t* b,
                                                           const nvfp4_tensor_t* sfb,
                                                           const nvfp4_scalar_t* alphas,
                                                           nvfp4_sf_layout_t sf_layout,
                                                           const nvfp4_tensor_t* out, const nvfp4_exec_t* exec,
                                                           size_t* bytes);
NVFP4_API nvfp4_status_t nvfp4_grouped_gemm_packed_workspace_size(
    const nvfp4_tensor_t* a, const nvfp4_tensor_t* sfa, const nvfp4_tensor_t* b, const nvfp4_tensor_t* sfb,
    const nvfp4_tensor_t* offsets, const nvfp4_tensor_t* alphas, const nvfp4_tensor_t* out,
    const nvfp4_exec_t* exec, size_t* bytes);

/* x (L..., rows, K) fp32/fp16/bf16 -> q (..., K/2) uint8, sf linear (..., K/16) or
 * blocked (L, bytes). The decode global scale is read from `global_scale` (one fp32,
 * same device as x) unless compute_global_scale != 0, in which case amax(|x|)/(6*448)
 * (1.0 when amax is 0) is computed and written there first. */
NVFP4_API nvfp4_status_t nvfp4_quantize(const nvfp4_tensor_t* x, const nvfp4_tensor_t* q,
                                        const nvfp4_tensor_t* sf, nvfp4_sf_layout_t sf_layout,
                                        const nvfp4_tensor_t* global_scale, int32_t compute_global_scale,
                                        const nvfp4_exec_t* exec);

/* out (..., K) fp32/fp16/bf16 = e2m1 * e4m3 * global_scale (computed in fp32). */
NVFP4_API nvfp4_status_t nvfp4_dequantize(const nvfp4_tensor_t* q, const nvfp4_tensor_t* sf,
                                          nvfp4_sf_layout_t sf_layout, nvfp4_scalar_t global_scale,
                                          const nvfp4_tensor_t* out, const nvfp4_exec_t* exec);

/* sf linear (L, rows, K/16) -> blocked (L, bytes), padding written as zero. */
NVFP4_API nvfp4_status_t nvfp4_swizzle_scales(const nvfp4_tensor_t* sf, const nvfp4_tensor_t* out,
                                              const nvfp4_exec_t* exec);
/* blocked (L, bytes) -> linear (L, rows, K/16); `out` fixes rows and K/16. */
NVFP4_API nvfp4_status_t nvfp4_unswizzle_scales(const nvfp4_tensor_t* sf_blocked, const nvfp4_tensor_t* out,
                                                const nvfp4_exec_t* exec);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NVFP4_NVFP4_H */
