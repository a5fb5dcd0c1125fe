// sm100a dual GEMM: launch of the two-accumulator kernel (dual_kernel.cuh).
//
// The kernel parameters: CUTLASS's own mainloop argument conversion
// (to_underlying_arguments: the TMA descriptors of A, B, SFA, SFB) once for
// (A, B1, SFA, SFB1) and once for (A, B2, SFA, SFB2), of which the kernel keeps the
// A, SFA, B1, SFB1, B2, SFB2 descriptors -- the mainloop arguments themselves are
// built in dual_config.hpp (checked on the CPU by tests/sm100_host) -- and the output
// TMA store descriptor from CuTe's make_tma_atom. One CTA per 128x128 output tile,
// grid (tiles_m * tiles_n, L).
#include "../common/cuda_check.hpp"
#include "dual_kernel.cuh"
#include "kernels.hpp"

namespace nvfp4::sm100 {

const char* dual_check(const DualGemmArgs& g) { return dual::check_args(g); }

nvfp4_status_t dual_run(const DualGemmArgs& g, cudaStream_t stream) {
  using namespace cute;
  using dual::Config;
  using dual::Mainloop;
  const auto shape = make_shape(g.M, g.N, g.K, g.L);
  cutlass::KernelHardwareInfo hw;
  hw.device_id = g.device;

  const Mainloop::Params op1 = Mainloop::to_underlying_arguments(shape, dual::mainloop_args(g, 1, false), nullptr, hw);
  const Mainloop::Params op2 = Mainloop::to_underlying_arguments(shape, dual::mainloop_args(g, 2, false), nullptr, hw);
  dual::Params p;
  p.tma_a = op1.tma_load_a;
  p.tma_b1 = op1.tma_load_b;
  p.tma_b2 = op2.tma_load_b;
  p.tma_sfa = op1.tma_load_sfa;
  p.tma_sfb1 = op1.tma_load_sfb;
  p.tma_sfb2 = op2.tma_load_sfb;
  p.layout_sfa = op1.layout_SFA;
  p.layout_sfb1 = op1.layout_SFB;
  p.layout_sfb2 = op2.layout_SFB;
  const int64_t d_batch = g.L > 1 ? g.d_batch : g.d_row * g.M;
  auto out = make_tensor(make_gmem_ptr(static_cast<uint16_t*>(g.d)),
                         make_layout(make_shape(g.M, g.N, g.L), Config::StrideOut(g.d_row, Int<1>{}, d_batch)));
  p.tma_out = make_tma_atom(SM90_TMA_STORE{}, out, Config::SmemLayoutOut{}, Config::EpiTile{});
  p.M = g.M;
  p.N = g.N;
  p.K = g.K;
  p.L = g.L;
  p.tiles_m = static_cast<int>(dual::tiles_m(g));
  p.alpha1 = g.alpha1;
  p.alpha2 = g.alpha2;
  p.alpha1_ptr = g.alpha1_ptr;
  p.alpha2_ptr = g.alpha2_ptr;
  p.activation = g.activation;
  p.out_bf16 = g.out_bf16;

  auto kernel = dual::dual_gemm_kernel<Config>;
  constexpr int smem = static_cast<int>(sizeof(dual::SharedStorage));
  const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess)
    return fail(NVFP4_ERROR_CUDA, "sm100a dual gemm: cudaFuncSetAttribute(%d bytes of shared memory): %s", smem,
                cudaGetErrorString(err));
  const dim3 grid(static_cast<unsigned>(dual::tiles_m(g) * dual::tiles_n(g)), static_cast<unsigned>(g.L));
  kernel<<<grid, Config::kThreads, smem, stream>>>(p);
  NVFP4_CHECK_LAUNCH();
  return NVFP4_SUCCESS;
}

}  // namespace nvfp4::sm100
