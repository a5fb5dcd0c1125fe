// CUTLASS's blocked scale-factor layout (Sm1xxBlockScaledConfig, SFVecSize 16) with
// a caller-chosen batch stride. Host+device, no kernel types: tests/sm100_host checks
// that it addresses byte (row, k) of batch l exactly at
//     l * batch_stride + nvfp4::blocked_sf_offset(row, k / 16, K)
// for odd shapes (so CUTLASS reads our blocked layout as is).
#pragma once

#include <stdint.h>

#include <cute/tensor.hpp>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>

namespace nvfp4::sm100 {

using ScaleConfig16 = cutlass::detail::Sm1xxBlockScaledConfig<16>;
using ScaleLayout = typename ScaleConfig16::LayoutSF;  // ((32,4,rest_mn),(16,4,rest_k),(1,L))

// The layout's L-mode stride is a plain int32 (CUTLASS's own dense batches); only
// that stride changes. L == 1 keeps CUTLASS's layout untouched.
template <class Layout>
CUTE_HOST_DEVICE Layout with_batch_stride(Layout ref, int L, int64_t batch_stride) {
  if (L <= 1) return ref;
  auto s = ref.stride();
  auto new_l = cute::make_stride(cute::get<2, 0>(s), static_cast<int32_t>(batch_stride));
  return Layout(ref.shape(), cute::make_stride(cute::get<0>(s), cute::get<1>(s), new_l));
}

// Scale layouts of A (rows = M) and B (rows = N) for problem (M, N, K, L).
CUTE_HOST_DEVICE ScaleLayout scale_layout_a(int M, int N, int K, int L, int64_t batch_stride) {
  return with_batch_stride(ScaleLayout(ScaleConfig16::tile_atom_to_shape_SFA(cute::make_shape(M, N, K, L))), L,
                           batch_stride);
}
CUTE_HOST_DEVICE ScaleLayout scale_layout_b(int M, int N, int K, int L, int64_t batch_stride) {
  return with_batch_stride(ScaleLayout(ScaleConfig16::tile_atom_to_shape_SFB(cute::make_shape(M, N, K, L))), L,
                           batch_stride);
}

}  // namespace nvfp4::sm100
