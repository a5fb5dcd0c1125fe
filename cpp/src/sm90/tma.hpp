// TMA descriptors (CUtensorMap) of the sm90a GEMM family: the packed fp4 operands, linear
// block scales, the fp16 token workspace of the pre-decoded paths, and the dual GEMM's output. Encoded on the host
// with cuTensorMapEncodeTiled, obtained through the runtime's driver entry point so that
// the library does not link libcuda. Each encoder returns false when the entry point is
// unavailable or the driver rejects the tensor (the caller then leaves the problem to the
// next backend, or loads scales another way). Host code only (tma.cu).
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "../problem.hpp"

namespace nvfp4::sm90 {

// cuTensorMapEncodeTiled is available (resolved once per process).
bool tensor_maps_available();

// Packed fp4 operand, rows x K/2 bytes x L (row and batch strides of `op`): box 64 bytes
// (one K block) x box_rows (128: the GEMM's tile; 64: half of the dual GEMM's) x 1, 64-byte
// swizzle (conflict-free 16-byte smem reads).
bool encode_fp4_map(CUtensorMap* map, const Fp4Operand& op, int64_t rows, int64_t K, int64_t L,
                    uint32_t box_rows = 128u);

// Linear scales, rows x K/16 bytes x L: box 16 x box_rows x 1, no swizzle; a stage loads its 8
// columns plus the next 8 (TMA needs 16-byte boxes).
bool encode_linear_sf_map(CUtensorMap* map, const ScaleOperand& sf, int64_t rows, int64_t K, int64_t L,
                          uint32_t box_rows = 128u);

// Output c (L x rows x cols, unit column stride, row/batch strides of `c` in elements, its
// dtype) for TMA stores of box_cols x box_rows x 1 boxes from a dense smem tile, no swizzle.
// The caller checks the alignment TMA needs (dual_plan.hpp: out_tma_compatible).
bool encode_out_map(CUtensorMap* map, const OutOperand& c, int64_t rows, int64_t cols, int64_t L, uint32_t box_cols,
                    uint32_t box_rows);

// fp16 token workspace [L][token_ws_rows(rows)][kpad] at ws (gemm_plan.hpp): box 64 x box_rows x 1, 128-byte swizzle
// (exactly the K-major SW128 layout of the wgmma B descriptor).
bool encode_token_map(CUtensorMap* map, void* ws, int64_t rows, int64_t kpad, int64_t L, uint32_t box_rows);

}  // namespace nvfp4::sm90
