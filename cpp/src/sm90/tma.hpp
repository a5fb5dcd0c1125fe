// TMA descriptors (CUtensorMap) of the sm90a GEMM family: the packed fp4 operands, linear
// block scales, and the fp16 token workspace of the pre-decoded paths. Encoded on the host
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
// (one K block) x 128 rows x 1, 64-byte swizzle (conflict-free 16-byte smem reads).
bool encode_fp4_map(CUtensorMap* map, const Fp4Operand& op, int64_t rows, int64_t K, int64_t L);

// Linear scales, rows x K/16 bytes x L: box 16 x 128 x 1, no swizzle; a stage loads its 8
// columns plus the next 8 (TMA needs 16-byte boxes).
bool encode_linear_sf_map(CUtensorMap* map, const ScaleOperand& sf, int64_t rows, int64_t K, int64_t L);

// fp16 token workspace [L][rows][kpad] at ws: box 64 x box_rows x 1, 128-byte swizzle
// (exactly the K-major SW128 layout of the wgmma B descriptor).
bool encode_token_map(CUtensorMap* map, void* ws, int64_t rows, int64_t kpad, int64_t L, uint32_t box_rows);

}  // namespace nvfp4::sm90
