// sm100a fused dual GEMM kernel:
//     out[l] = act(alpha1 * A[l].B1[l]^T) * (alpha2 * A[l].B2[l]^T)      (silu or gelu-tanh)
// in one kernel: every A tile is loaded once and feeds two block-scaled MMAs per
// k-block, one into each of two tensor-memory accumulators; the epilogue reads both
// accumulators, combines them in registers, stages the 16-bit result in shared memory
// and stores it with TMA.
//
// Built by composition from CUTLASS 4.2 / CuTe SM100 pieces, so that correctness rests
// on NVIDIA's tested code as far as possible:
//   - the types of CUTLASS's own 1-SM NVFP4 block-scaled collective (CollectiveBuilder,
//     128x128x256 MMA tile, KernelTmaWarpSpecialized1SmNvf4Sm100): TiledMma
//     (tcgen05.mma kind::mxf4nvf4 block16 = SASS UTCOMMA.4X), swizzled shared-memory
//     layouts of A, B, SFA, SFB, the TMA atoms and their host-side construction
//     (to_underlying_arguments, called once for (A, B1, SFA, SFB1) and once for
//     (A, B2, SFA, SFB2)), the smem pipeline (PipelineTmaUmmaAsync);
//   - the mainloop below is that collective's load()/mma() (sm100_blockscaled_mma_
//     warpspecialized.hpp) with the B/SFB half doubled: the same TMA partitioning, the
//     same UTCCP copies of the scale factors into tensor memory, the same cute::gemm
//     calls -- issued twice per k-block with the same A descriptor;
//   - the epilogue follows CuTe's Blackwell tutorial 05 / CUTLASS's sm100 TMA epilogue:
//     tcgen05.ld (SM100_TMEM_LOAD_32dp32b32x, one accumulator row per thread),
//     registers -> swizzled smem -> SM90_TMA_STORE.
// What is ours: the warp roles of a non-persistent kernel (one 128x128 output tile per
// CTA), the tensor-memory carve-up (two accumulators + three scale-factor tensors) and
// the element-wise combination.
//
// Warp roles (192 threads): warps 0-3 epilogue (warp w reads TMEM lanes 32w..32w+31,
// the hardware's sub-partition rule), warp 4 MMA (allocates TMEM), warp 5 TMA producer.
#pragma once

#include <cuda_runtime_api.h>

#include <cute/tensor.hpp>
#include <cute/arch/tmem_allocator_sm100.hpp>
#include <cute/atom/copy_traits_sm100.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/cutlass.h>
#include <cutlass/detail/sm100_tmem_helper.hpp>

#include "dual_config.hpp"
#include "epilogue_nodes.cuh"  // dual_activation, output_bits (shared with the other epilogues)

#if !defined(CUTLASS_ARCH_MMA_SM100_SUPPORTED) && defined(__CUDA_ARCH__)
#  error "cpp/src/sm100 must be compiled for sm_100a (CUTLASS_ARCH_MMA_SM100_SUPPORTED)"
#endif

namespace nvfp4::sm100::dual {

// ---------------------------------------------------------------------------
// Tensor memory: acc1 | acc2 | SFA | SFB1 | SFB2 (columns), 512 columns allocated.
// ---------------------------------------------------------------------------
struct TmemTensors {
  template <class T>
  CUTE_HOST_DEVICE static constexpr int columns(T const& t) {
    return static_cast<int>(cutlass::detail::find_tmem_tensor_col_offset(t));
  }
  CUTE_DEVICE static auto accumulators() {
    using namespace cute;
    auto acc_shape = partition_shape_C(Config::TiledMma{}, take<0, 2>(Config::MmaTile{}));  // ((128,128),1,1)
    // Two accumulator "stages" of CUTLASS's accumulator layout: stage 0 = A.B1^T,
    // stage 1 = A.B2^T (the layout CUTLASS uses to double-buffer accumulators).
    return Config::TiledMma::make_fragment_C(append(acc_shape, Int<2>{}));  // ((128,128),1,1,2)
  }
  CUTE_DEVICE static auto sfa() {
    return cute::make_tensor<typename Config::TiledMma::FrgTypeSFA>(cute::shape(Config::SmemLayoutAtomSFA{}));
  }
  CUTE_DEVICE static auto sfb() {
    return cute::make_tensor<typename Config::TiledMma::FrgTypeSFB>(cute::shape(Config::SmemLayoutAtomSFB{}));
  }
};

// UTCCP (tcgen05.cp) smem -> tmem copy of one scale-factor tensor, set up exactly as
// the collective's mma_init does (zero strides removed, smem side as descriptors).
template <class SmemTensor, class TmemTensor>
CUTE_DEVICE auto make_sf_copy(SmemTensor const& smem, TmemTensor const& tmem) {
  using namespace cute;
  using UtccpOp = SM100_UTCCP_4x32dp128bit_1cta;
  auto smem_compact = make_tensor(smem.data(), filter_zeros(smem.layout()));
  auto tmem_compact = make_tensor(tmem.data(), filter_zeros(tmem.layout()));
  auto tiled = make_utccp_copy(UtccpOp{}, tmem_compact);
  auto thr = tiled.get_slice(0);
  auto src = get_utccp_smem_desc_tensor<UtccpOp>(thr.partition_S(smem_compact));
  auto dst = thr.partition_D(tmem_compact);
  return make_tuple(tiled, src, dst);
}

// ---------------------------------------------------------------------------
// The kernel
// ---------------------------------------------------------------------------
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1) dual_gemm_kernel(const __grid_constant__ Params p) {
#if defined(__CUDA_ARCH__) && defined(CUTLASS_ARCH_MMA_SM100_ENABLED)
  using namespace cute;
  using X = Underscore;
  using TiledMma = typename Cfg::TiledMma;
  using MainloopPipeline = typename Cfg::MainloopPipeline;
  using AccumulatorPipeline = typename Cfg::AccumulatorPipeline;
  using TmemAllocator = cute::TMEM::Allocator1Sm;

  extern __shared__ char smem_raw[];
  SharedStorage& ss = *reinterpret_cast<SharedStorage*>(smem_raw);

  const int warp = cutlass::canonical_warp_idx_sync();
  const bool lane_predicate = cute::elect_one_sync();

  // One 128x128 output tile per CTA; consecutive CTAs walk down M so that the CTAs
  // resident together share B1/B2 tiles (the large operands) in L2.
  const int m_tile = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.tiles_m));
  const int n_tile = static_cast<int>(blockIdx.x / static_cast<unsigned>(p.tiles_m));
  const int l_idx = static_cast<int>(blockIdx.y);

  // Pipelines (CUTLASS's, initialized the way GemmUniversal's sm100 kernel does).
  typename MainloopPipeline::Params mp;
  if (warp == Cfg::kLoadWarp) mp.role = MainloopPipeline::ThreadCategory::Producer;
  if (warp == Cfg::kMmaWarp) mp.role = MainloopPipeline::ThreadCategory::Consumer;
  mp.is_leader = lane_predicate && warp == Cfg::kLoadWarp;
  mp.transaction_bytes = Cfg::kStageTxBytes;
  mp.initializing_warp = 0;
  MainloopPipeline mainloop_pipeline(ss.mainloop_pipe, mp, typename Cfg::Cluster{}, cute::true_type{},
                                     cute::false_type{});

  typename AccumulatorPipeline::Params ap;
  if (warp == Cfg::kMmaWarp) ap.role = AccumulatorPipeline::ThreadCategory::Producer;
  if (warp < Cfg::kEpilogueThreads / 32) ap.role = AccumulatorPipeline::ThreadCategory::Consumer;
  ap.producer_arv_count = 1;
  ap.consumer_arv_count = Cfg::kEpilogueThreads;
  ap.initializing_warp = 1;
  AccumulatorPipeline acc_pipeline(ss.acc_pipe, ap, typename Cfg::Cluster{}, cute::true_type{}, cute::false_type{});

  cutlass::pipeline_init_arrive_relaxed(1);
  mainloop_pipeline.init_masks(typename Cfg::Cluster{});
  acc_pipeline.init_masks(typename Cfg::Cluster{});

  // MMA warp + epilogue warps meet once TMEM is allocated.
  cutlass::arch::NamedBarrier tmem_ready(32 + Cfg::kEpilogueThreads,
                                         cutlass::arch::ReservedNamedBarriers::TmemAllocBarrier);
  cutlass::pipeline_init_wait(1);

  // k tiles of 256 (the last one zero-filled by TMA past K)
  const int k_tiles = (p.K + size<2>(typename Cfg::MmaTile{}) - 1) / size<2>(typename Cfg::MmaTile{});

  if (warp == Cfg::kLoadWarp) {
    // ------------------------------------------------------------------ TMA producer
    if (lane_predicate) {
      prefetch_tma_descriptor(p.tma_a.get_tma_descriptor());
      prefetch_tma_descriptor(p.tma_b1.get_tma_descriptor());
      prefetch_tma_descriptor(p.tma_b2.get_tma_descriptor());
      prefetch_tma_descriptor(p.tma_sfa.get_tma_descriptor());
      prefetch_tma_descriptor(p.tma_sfb1.get_tma_descriptor());
      prefetch_tma_descriptor(p.tma_sfb2.get_tma_descriptor());
    }
    // As the collective's load_init, for a 1x1 cluster.
    Tensor mA = p.tma_a.get_tma_tensor(make_shape(p.M, p.K, p.L));
    Tensor mB1 = p.tma_b1.get_tma_tensor(make_shape(p.N, p.K, p.L));
    Tensor mB2 = p.tma_b2.get_tma_tensor(make_shape(p.N, p.K, p.L));
    Tensor mSFA = p.tma_sfa.get_tma_tensor(shape(p.layout_sfa));
    Tensor mSFB1 = p.tma_sfb1.get_tma_tensor(shape(p.layout_sfb1));
    Tensor mSFB2 = p.tma_sfb2.get_tma_tensor(shape(p.layout_sfb2));

    using Tile = typename Cfg::MmaTile;
    using TileSF = typename Cfg::TileShapeSF;
    Tensor gA = local_tile(mA, Tile{}, make_coord(_, _, _), Step<_1, X, _1>{});           // (BM,BK,m,k,l)
    Tensor gB1 = local_tile(mB1, Tile{}, make_coord(_, _, _), Step<X, _1, _1>{});         // (BN,BK,n,k,l)
    Tensor gB2 = local_tile(mB2, Tile{}, make_coord(_, _, _), Step<X, _1, _1>{});
    Tensor gSFA = local_tile(mSFA, Tile{}, make_coord(_, _, _), Step<_1, X, _1>{});
    Tensor gSFB1 = local_tile(mSFB1, TileSF{}, make_coord(_, _, _), Step<X, _1, _1>{});
    Tensor gSFB2 = local_tile(mSFB2, TileSF{}, make_coord(_, _, _), Step<X, _1, _1>{});

    ThrMMA cta_mma = TiledMma{}.get_slice(0);
    ThrMMA cta_mma_sf = typename Cfg::TiledMmaSF{}.get_slice(0);
    Tensor tCgA = cta_mma.partition_A(gA);
    Tensor tCgB1 = cta_mma.partition_B(gB1);
    Tensor tCgB2 = cta_mma.partition_B(gB2);
    Tensor tCgSFA = cta_mma.partition_A(gSFA);
    Tensor tCgSFB1 = cta_mma_sf.partition_B(gSFB1);
    Tensor tCgSFB2 = cta_mma_sf.partition_B(gSFB2);

    Tensor sA = make_tensor(make_smem_ptr(ss.tensors.a.begin()), typename Cfg::SmemLayoutA{});
    Tensor sB1 = make_tensor(make_smem_ptr(ss.tensors.b1.begin()), typename Cfg::SmemLayoutB{});
    Tensor sB2 = make_tensor(make_smem_ptr(ss.tensors.b2.begin()), typename Cfg::SmemLayoutB{});
    Tensor sSFA = make_tensor(make_smem_ptr(ss.tensors.sfa.begin()), typename Cfg::SmemLayoutSFA{});
    Tensor sSFB1 = make_tensor(make_smem_ptr(ss.tensors.sfb1.begin()), typename Cfg::SmemLayoutSFB{});
    Tensor sSFB2 = make_tensor(make_smem_ptr(ss.tensors.sfb2.begin()), typename Cfg::SmemLayoutSFB{});

    // No multicast: the CTA is its own cluster (coordinate 0 of a size-1 layout).
    auto [tAgA, tAsA] = tma_partition(p.tma_a, Int<0>{}, Layout<_1>{}, group_modes<0, 3>(sA),
                                      group_modes<0, 3>(tCgA));
    auto [tBgB1, tBsB1] = tma_partition(p.tma_b1, Int<0>{}, Layout<_1>{}, group_modes<0, 3>(sB1),
                                        group_modes<0, 3>(tCgB1));
    auto [tBgB2, tBsB2] = tma_partition(p.tma_b2, Int<0>{}, Layout<_1>{}, group_modes<0, 3>(sB2),
                                        group_modes<0, 3>(tCgB2));
    auto [tAgSFA, tAsSFA] = tma_partition(p.tma_sfa, Int<0>{}, Layout<_1>{}, group_modes<0, 3>(sSFA),
                                          group_modes<0, 3>(tCgSFA));
    auto [tBgSFB1, tBsSFB1] = tma_partition(p.tma_sfb1, Int<0>{}, Layout<_1>{}, group_modes<0, 3>(sSFB1),
                                            group_modes<0, 3>(tCgSFB1));
    auto [tBgSFB2, tBsSFB2] = tma_partition(p.tma_sfb2, Int<0>{}, Layout<_1>{}, group_modes<0, 3>(sSFB2),
                                            group_modes<0, 3>(tCgSFB2));

    // This CTA's tiles: (TMA, k)
    Tensor gA_k = tAgA(_, m_tile, _, l_idx);
    Tensor gB1_k = tBgB1(_, n_tile, _, l_idx);
    Tensor gB2_k = tBgB2(_, n_tile, _, l_idx);
    Tensor gSFA_k = tAgSFA(_, m_tile, _, l_idx);
    Tensor gSFB1_k = tBgSFB1(_, n_tile, _, l_idx);
    Tensor gSFB2_k = tBgSFB2(_, n_tile, _, l_idx);

    auto state = cutlass::make_producer_start_state<MainloopPipeline>();
    CUTLASS_PRAGMA_NO_UNROLL
    for (int k = 0; k < k_tiles; ++k) {
      mainloop_pipeline.producer_acquire(state);  // also arms the stage's expected bytes
      using BarrierType = typename MainloopPipeline::ProducerBarrierType;
      BarrierType* bar = mainloop_pipeline.producer_get_barrier(state);
      const int s = state.index();
      ++state;
      if (cute::elect_one_sync()) {
        copy(p.tma_a.with(*bar), gA_k(_, k), tAsA(_, s));
        copy(p.tma_b1.with(*bar), gB1_k(_, k), tBsB1(_, s));
        copy(p.tma_b2.with(*bar), gB2_k(_, k), tBsB2(_, s));
        copy(p.tma_sfa.with(*bar), gSFA_k(_, k), tAsSFA(_, s));
        copy(p.tma_sfb1.with(*bar), gSFB1_k(_, k), tBsSFB1(_, s));
        copy(p.tma_sfb2.with(*bar), gSFB2_k(_, k), tBsSFB2(_, s));
      }
    }
    mainloop_pipeline.producer_tail(state);
  } else if (warp == Cfg::kMmaWarp) {
    // ------------------------------------------------------------------ MMA issue
    TmemAllocator tmem_allocator{};
    tmem_allocator.allocate(TmemAllocator::Sm100TmemCapacityColumns, &ss.tmem_base);
    __syncwarp();
    tmem_ready.arrive();
    const uint32_t tmem_base = ss.tmem_base;

    Tensor accs = TmemTensors::accumulators();
    Tensor tCtSFA = TmemTensors::sfa();
    Tensor tCtSFB1 = TmemTensors::sfb();
    Tensor tCtSFB2 = TmemTensors::sfb();
    accs.data() = tmem_base;
    tCtSFA.data() = accs.data().get() + TmemTensors::columns(accs);
    tCtSFB1.data() = tCtSFA.data().get() + TmemTensors::columns(tCtSFA);
    tCtSFB2.data() = tCtSFB1.data().get() + TmemTensors::columns(tCtSFB1);
    Tensor acc1 = accs(_, _, _, 0);  // (MMA, MMA_M, MMA_N)
    Tensor acc2 = accs(_, _, _, 1);

    Tensor sA = make_tensor(make_smem_ptr(ss.tensors.a.begin()), typename Cfg::SmemLayoutA{});
    Tensor sB1 = make_tensor(make_smem_ptr(ss.tensors.b1.begin()), typename Cfg::SmemLayoutB{});
    Tensor sB2 = make_tensor(make_smem_ptr(ss.tensors.b2.begin()), typename Cfg::SmemLayoutB{});
    Tensor tCrA = TiledMma::make_fragment_A(sA);    // smem descriptors (MMA, MMA_M, MMA_K, PIPE)
    Tensor tCrB1 = TiledMma::make_fragment_B(sB1);  // (MMA, MMA_N, MMA_K, PIPE)
    Tensor tCrB2 = TiledMma::make_fragment_B(sB2);

    auto [cp_sfa, src_sfa, dst_sfa] =
        make_sf_copy(make_tensor(make_smem_ptr(ss.tensors.sfa.begin()), typename Cfg::SmemLayoutSFA{}), tCtSFA);
    auto [cp_sfb1, src_sfb1, dst_sfb1] =
        make_sf_copy(make_tensor(make_smem_ptr(ss.tensors.sfb1.begin()), typename Cfg::SmemLayoutSFB{}), tCtSFB1);
    auto [cp_sfb2, src_sfb2, dst_sfb2] =
        make_sf_copy(make_tensor(make_smem_ptr(ss.tensors.sfb2.begin()), typename Cfg::SmemLayoutSFB{}), tCtSFB2);

    TiledMma tiled_mma;
    auto state = typename MainloopPipeline::PipelineState{};
    auto acc_state = cutlass::make_producer_start_state<AccumulatorPipeline>();
    acc_pipeline.producer_acquire(acc_state);  // passes at once: the accumulators start empty

    tiled_mma.accumulate_ = UMMA::ScaleOut::Zero;
    CUTLASS_PRAGMA_NO_UNROLL
    for (int k = 0; k < k_tiles; ++k) {
      mainloop_pipeline.consumer_wait(state);
      const int s = state.index();
      if (cute::elect_one_sync()) {
        copy(cp_sfa, src_sfa(_, _, _, _, s), dst_sfa);
        copy(cp_sfb1, src_sfb1(_, _, _, _, s), dst_sfb1);
        copy(cp_sfb2, src_sfb2(_, _, _, _, s), dst_sfb2);
      }
      // Each k-block: the same A descriptor feeds two MMAs, one per accumulator.
      CUTLASS_PRAGMA_UNROLL
      for (int kb = 0; kb < size<2>(tCrA); ++kb) {
        cute::gemm(tiled_mma.with(tiled_mma.accumulate_, tCtSFA(_, _, kb), tCtSFB1(_, _, kb)), tCrA(_, _, kb, s),
                   tCrB1(_, _, kb, s), acc1);
        cute::gemm(tiled_mma.with(tiled_mma.accumulate_, tCtSFA(_, _, kb), tCtSFB2(_, _, kb)), tCrA(_, _, kb, s),
                   tCrB2(_, _, kb, s), acc2);
        tiled_mma.accumulate_ = UMMA::ScaleOut::One;
      }
      mainloop_pipeline.consumer_release(state);  // tcgen05.commit: the stage is free once these MMAs finish
      ++state;
    }
    acc_pipeline.producer_commit(acc_state);  // tcgen05.commit: both accumulators complete
    ++acc_state;

    tmem_allocator.release_allocation_lock();
    acc_pipeline.producer_tail(acc_state);  // the epilogue has read both accumulators
    tmem_allocator.free(tmem_base, TmemAllocator::Sm100TmemCapacityColumns);
  } else if (warp < Cfg::kEpilogueThreads / 32) {
    // ------------------------------------------------------------------ epilogue
    const int thread_idx = static_cast<int>(threadIdx.x);  // 0..127 = accumulator row
    tmem_ready.arrive_and_wait();
    Tensor accs = TmemTensors::accumulators();
    accs.data() = ss.tmem_base;
    Tensor acc1 = accs(make_coord(_, _), _0{}, _0{}, _0{});  // (128, 128)
    Tensor acc2 = accs(make_coord(_, _), _0{}, _0{}, _1{});
    Tensor acc1_epi = flat_divide(acc1, typename Cfg::EpiTile{});  // (128, 32, 1, 4)
    Tensor acc2_epi = flat_divide(acc2, typename Cfg::EpiTile{});

    Tensor mD = p.tma_out.get_tma_tensor(make_shape(p.M, p.N, p.L));
    Tensor gD = local_tile(mD, take<0, 2>(typename Cfg::MmaTile{}), make_coord(m_tile, n_tile, l_idx));  // (128,128)
    Tensor gD_epi = flat_divide(gD, typename Cfg::EpiTile{});  // (128, 32, 1, 4)
    Tensor sD = make_tensor(make_smem_ptr(ss.out.begin()), typename Cfg::SmemLayoutOut{});  // (128, 32)

    // tcgen05.ld 32x32b: thread t reads TMEM lane t (row t), 32 consecutive columns.
    TiledCopy t2r = make_tmem_copy(SM100_TMEM_LOAD_32dp32b32x{}, acc1_epi(_, _, _0{}, _0{}));
    ThrCopy thr_t2r = t2r.get_slice(thread_idx);
    Tensor tAcc1 = thr_t2r.partition_S(acc1_epi);  // (T2R, T2R_M, T2R_N, EPI_M, EPI_N)
    Tensor tAcc2 = thr_t2r.partition_S(acc2_epi);  // same layout, 128 columns further
    Tensor tSmem = thr_t2r.partition_D(sD);        // (T2R, T2R_M, T2R_N): the same (row, column)s in smem
    Tensor r1 = make_tensor<float>(shape(tSmem));
    Tensor r2 = make_tensor<float>(shape(tSmem));
    Tensor rOut = make_tensor<uint16_t>(shape(tSmem));

    auto [tSG_g, tSG_s] = tma_partition(p.tma_out, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sD),
                                        group_modes<0, 2>(gD_epi));  // (TMA, EPI_M, EPI_N), (TMA)

    const float alpha1 = p.alpha1_ptr ? *p.alpha1_ptr : p.alpha1;
    const float alpha2 = p.alpha2_ptr ? *p.alpha2_ptr : p.alpha2;
    cutlass::arch::NamedBarrier epi_sync(Cfg::kEpilogueThreads, cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);

    auto acc_state = typename AccumulatorPipeline::PipelineState{};
    acc_pipeline.consumer_wait(acc_state);

    // Not unrolled: the element loop below is already 32 activations wide, and the
    // instruction cache is better spent on one copy of it.
    CUTLASS_PRAGMA_NO_UNROLL
    for (int epi_n = 0; epi_n < size<3>(acc1_epi); ++epi_n) {
      copy(t2r, tAcc1(_, _, _, _0{}, epi_n), r1);
      copy(t2r, tAcc2(_, _, _, _0{}, epi_n), r2);
      cutlass::arch::fence_view_async_tmem_load();  // tcgen05.wait::ld before the registers are used
      if (epi_n == size<3>(acc1_epi) - 1) acc_pipeline.consumer_release(acc_state);  // TMEM no longer needed

      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < size(r1); ++i) {
        const float gate = alpha1 * r1(i);
        const float up = alpha2 * r2(i);
        rOut(i) = output_bits(dual_activation(gate, p.activation) * up, p.out_bf16);
      }

      if (epi_n > 0) {  // the single staging buffer: the previous TMA store must have read it
        if (thread_idx == 0) tma_store_wait<0>();
        epi_sync.arrive_and_wait();
      }
      copy(rOut, tSmem);
      tma_store_fence();  // generic-proxy smem writes visible to the TMA (async proxy)
      epi_sync.arrive_and_wait();
      if (thread_idx == 0) {
        copy(p.tma_out, tSG_s, tSG_g(_, _0{}, epi_n));  // out-of-range rows/columns are clipped
        tma_store_arrive();
      }
    }
    if (thread_idx == 0) tma_store_wait<0>();  // smem must outlive the last store's reads
  }
#else
  (void)p;
#endif
}

}  // namespace nvfp4::sm100::dual
