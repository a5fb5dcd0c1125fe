// sm100a dual GEMM: out = act(alpha1 * A.B1^T) * (alpha2 * A.B2^T) in one CUTLASS
// block-scaled GEMM kernel.
//
// How (an honest alternative to a custom two-accumulator collective, which would
// have to be written from scratch and could not be run here):
//   1. B1 and B2 are row-interleaved into one operand B' (2N x K) in the workspace
//      (row 2n = b1[n], 2n+1 = b2[n]; scales likewise, blocked) -- scales.cu;
//   2. one stock CUTLASS NVFP4 GEMM computes A.B'^T: every A tile is loaded once and
//      feeds the MMA of both B1 and B2 rows (the accumulator of each CTA tile holds
//      64 columns of A.B1^T interleaved with the same 64 columns of A.B2^T);
//   3. a custom EVT node (dual_epilogue.cuh) pairs adjacent accumulator columns in
//      registers, applies act(.)*(.) and the TMA store writes the (M, N) output.
// Cost of step 1: B1 and B2 are read and B' written once per call (2*N*K bytes of
// traffic on top of the GEMM's); a caller with constant weights could keep B' (the
// packing is exposed as launch_interleave_rows / launch_swizzle for that).
#include "epilogue_nodes.cuh"
#include "gemm_cutlass.cuh"

namespace nvfp4::sm100 {
namespace {

using DualCallbacks = cutlass::epilogue::fusion::Sm90EVT<DualGluNode, cutlass::epilogue::fusion::Sm90AccFetch>;

// 1-SM 128x128x256 tile with the stream-K scheduler: dual shapes (M 256-512) have
// few output tiles, stream-K keeps every SM busy. Output: uint8 view (see above).
using DualConfig = BlockScaledGemm<cute::Shape<cute::_128, cute::_128, cute::_256>,
                                   cute::Shape<cute::_1, cute::_1, cute::_1>,
                                   cutlass::gemm::KernelTmaWarpSpecialized1SmNvf4Sm100,
                                   cutlass::epilogue::TmaWarpSpecialized1Sm,
                                   cutlass::gemm::StreamKScheduler, uint8_t, DualCallbacks>;
using Runner = DenseGemmRunner<DualConfig>;

struct Customize {
  const DualEpilogueArgs& e;
  void operator()(Runner::Arguments& args) const {
    DualGluNode::Arguments node;
    node.alpha1 = e.alpha1;
    node.alpha2 = e.alpha2;
    node.alpha1_ptr = e.alpha1_ptr;
    node.alpha2_ptr = e.alpha2_ptr;
    node.activation = e.activation;
    node.out_bf16 = e.out_bf16;
    args.epilogue.thread = {{}, node};  // (AccFetch child, node)
    using Params = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90StreamKParams;
    args.scheduler.decomposition_mode = Params::DecompositionMode::Heuristic;
    args.scheduler.reduction_mode = Params::ReductionMode::Deterministic;
  }
};

}  // namespace

const char* dual_check(const DenseGemmArgs& g, const DualEpilogueArgs& e) { return Runner::check(g, Customize{e}); }
size_t dual_workspace(const DenseGemmArgs& g, const DualEpilogueArgs& e) { return Runner::workspace(g, Customize{e}); }
nvfp4_status_t dual_run(const DenseGemmArgs& g, const DualEpilogueArgs& e, void* workspace, cudaStream_t stream) {
  return Runner::run(g, Customize{e}, workspace, stream, "sm100a dual gemm");
}

}  // namespace nvfp4::sm100
