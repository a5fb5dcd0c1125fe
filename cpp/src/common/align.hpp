// Alignment tests: the C ABI's element and scalar checks, and the launchers' choice of
// vector paths (the C ABI guarantees element alignment only, so a launcher that wants
// 8- or 16-byte accesses tests the pointer and every stride it will step by).
#pragma once

#include <stdint.h>

namespace nvfp4 {

inline bool is_aligned(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

// True when `p` and every stride (in bytes) are multiples of `bytes`, i.e. every
// row/batch start reached from `p` is `bytes`-aligned.
inline bool aligned_to(const void* p, int64_t bytes, int64_t stride_bytes_a = 0, int64_t stride_bytes_b = 0) {
  return is_aligned(p, bytes) && stride_bytes_a % bytes == 0 && stride_bytes_b % bytes == 0;
}

}  // namespace nvfp4
