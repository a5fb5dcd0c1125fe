// Dense NVFP4 GEMM, 1-SM configuration: 128x128x256 MMA tile on one SM with the
// stream-K persistent scheduler, so small-M shapes (few output tiles) still use
// every SM: CUTLASS's heuristic picks data-parallel, split-K or stream-K per shape.
#include "gemm_cutlass.cuh"

namespace nvfp4::sm100 {
namespace {

using Config1Sm = BlockScaledGemm<cute::Shape<cute::_128, cute::_128, cute::_256>,
                                  cute::Shape<cute::_1, cute::_1, cute::_1>,
                                  cutlass::gemm::KernelTmaWarpSpecialized1SmNvf4Sm100,
                                  cutlass::epilogue::TmaWarpSpecialized1Sm,
                                  cutlass::gemm::StreamKScheduler>;
using Runner = DenseGemmRunner<Config1Sm>;

// alpha, plus the stream-K decomposition: CUTLASS's heuristic (data-parallel when
// there are enough tiles, else split-K / stream-K), deterministic reduction so that a
// result does not depend on timing.
struct Customize {
  const DenseGemmArgs& g;
  void operator()(Runner::Arguments& args) const {
    Runner::DefaultCustomize{g}(args);
    using Params = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90StreamKParams;
    args.scheduler.decomposition_mode = Params::DecompositionMode::Heuristic;
    args.scheduler.reduction_mode = Params::ReductionMode::Deterministic;
  }
};

}  // namespace

const char* gemm_1sm_check(const DenseGemmArgs& g) { return Runner::check(g, Customize{g}); }
size_t gemm_1sm_workspace(const DenseGemmArgs& g) { return Runner::workspace(g, Customize{g}); }
nvfp4_status_t gemm_1sm_run(const DenseGemmArgs& g, void* workspace, cudaStream_t stream) {
  return Runner::run(g, Customize{g}, workspace, stream, "sm100a gemm (1-SM stream-K)");
}

}  // namespace nvfp4::sm100
