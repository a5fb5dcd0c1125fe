// TMA descriptor encoding of the sm90a GEMM family (tma.hpp).
#include "tma.hpp"

#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <mutex>

#include "gemm_plan.hpp"

namespace nvfp4::sm90 {

namespace {

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

// A (cols x rows x L) byte tensor with the given row and batch strides (one batch: its
// extent, rounded up to 16 bytes, stands in for the unused batch stride) as a 3-D uint8
// tensor map with box box_cols x box_rows x 1.
bool encode_u8_rows_map(CUtensorMap* map, const uint8_t* data, int64_t cols, int64_t rows, int64_t L,
                        int64_t row_stride, int64_t batch_stride, uint32_t box_cols, CUtensorMapSwizzle swizzle,
                        uint32_t box_rows = 128u) {
  const auto encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const int64_t bstride = L > 1 ? batch_stride : ((rows * row_stride + 15) / 16) * 16;
  cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(L)};
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(row_stride), static_cast<cuuint64_t>(bstride)};
  cuuint32_t box[3] = {box_cols, box_rows, 1u};
  cuuint32_t elem[3] = {1u, 1u, 1u};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<uint8_t*>(data), dims, strides, box,
                            elem, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

static_assert(kTileW == 128 && kTileX == 128, "the fp4 and scale boxes are 128 rows (one tile)");

}  // namespace

bool tensor_maps_available() { return tensor_map_encoder() != nullptr; }

bool encode_fp4_map(CUtensorMap* map, const Fp4Operand& op, int64_t rows, int64_t K, int64_t L,
                    uint32_t box_rows) {
  return encode_u8_rows_map(map, op.data, K / 2, rows, L, op.row_stride, op.batch_stride, kFp4BoxBytes,
                            CU_TENSOR_MAP_SWIZZLE_64B, box_rows);
}

bool encode_linear_sf_map(CUtensorMap* map, const ScaleOperand& sf, int64_t rows, int64_t K, int64_t L,
                          uint32_t box_rows) {
  return encode_u8_rows_map(map, sf.data, K / 16, rows, L, sf.row_stride, sf.batch_stride, kSfBoxCols,
                            CU_TENSOR_MAP_SWIZZLE_NONE, box_rows);
}

bool encode_out_map(CUtensorMap* map, const OutOperand& c, int64_t rows, int64_t cols, int64_t L, uint32_t box_cols,
                    uint32_t box_rows) {
  const auto encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const int64_t esize = c.dtype == DType::kFloat32 ? 4 : 2;
  const int64_t row_bytes = c.row_stride * esize;
  const int64_t bstride = L > 1 ? c.batch_stride * esize : ((rows * row_bytes + 15) / 16) * 16;
  cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(L)};
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(row_bytes), static_cast<cuuint64_t>(bstride)};
  cuuint32_t box[3] = {box_cols, box_rows, 1u};
  cuuint32_t elem[3] = {1u, 1u, 1u};
  const CUtensorMapDataType type = c.dtype == DType::kFloat32    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : c.dtype == DType::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = encode(map, type, 3, c.data, dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

bool encode_token_map(CUtensorMap* map, void* ws, int64_t rows, int64_t kpad, int64_t L, uint32_t box_rows) {
  const auto encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const int64_t ws_rows = token_ws_rows(rows);  // the padded rows: no box reaches out of bounds
  cuuint64_t dims[3] = {static_cast<cuuint64_t>(kpad), static_cast<cuuint64_t>(ws_rows), static_cast<cuuint64_t>(L)};
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(kpad * 2), static_cast<cuuint64_t>(ws_rows * kpad * 2)};
  cuuint32_t box[3] = {64u, box_rows, 1u};
  cuuint32_t elem[3] = {1u, 1u, 1u};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, ws, dims, strides, box, elem,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

}  // namespace nvfp4::sm90
