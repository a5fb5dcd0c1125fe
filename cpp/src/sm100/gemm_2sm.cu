// Dense NVFP4 GEMM, 2-SM configuration: 256x256x256 MMA tile computed by a 2x1
// cluster (tcgen05.mma cta_group::2: each SM holds half of A's rows and the pair
// shares B), persistent CLC tile scheduler. Chosen for shapes with enough 256x256
// tiles to fill the GPU (plan.hpp: choose_gemm_config).
#include "gemm_cutlass.cuh"

namespace nvfp4::sm100 {
namespace {

using Config2Sm = BlockScaledGemm<cute::Shape<cute::_256, cute::_256, cute::_256>,
                                  cute::Shape<cute::_2, cute::_1, cute::_1>,
                                  cutlass::gemm::KernelTmaWarpSpecialized2SmNvf4Sm100,
                                  cutlass::epilogue::TmaWarpSpecialized2Sm,
                                  void /* default persistent scheduler */>;
using Runner = DenseGemmRunner<Config2Sm>;
using Customize = Runner::DefaultCustomize;

}  // namespace

const char* gemm_2sm_check(const DenseGemmArgs& g) { return Runner::check(g, Customize{g}); }
size_t gemm_2sm_workspace(const DenseGemmArgs& g) { return Runner::workspace(g, Customize{g}); }
nvfp4_status_t gemm_2sm_run(const DenseGemmArgs& g, void* workspace, cudaStream_t stream) {
  return Runner::run(g, Customize{g}, workspace, stream, "sm100a gemm (2-SM)");
}

}  // namespace nvfp4::sm100
