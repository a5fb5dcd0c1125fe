// Session 21 transplant test (issue 23): the library's own consumer loop
// (MainloopRSPredecoded::run_segment, compiled from cpp/src/sm90/collective) over a ring that
// stays resident in shared memory, fed by a producer warp that only arrives on the full barriers
// (no TMA, no L2 traffic): the microbenchmark's k_ring harness with the real code inside.
// Question: does the real loop reach the microbenchmark's 87.9% tensor-pipe share at locked clocks
// (then the kernel's 80.6% comes from its surroundings) or the kernel's 80.6% (then from the code)?
// Build: nvcc -DNVFP4_BUILDING_LIBRARY -Icpp/include -Icpp/src -isystem extern/cutlass/include
//        -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 --expt-relaxed-constexpr mb_real.cu
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "sm90/collective/mainloop_rs_predecoded.cuh"
#include "sm90/gemm_plan.hpp"
#include "sm90/collective/epilogue_cluster_reduce.cuh"

using namespace nvfp4::sm90;
using ML = MainloopRSPredecoded;

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MB_NO_SM90A 1
#endif

// kEpi: the consumers end with the persistent kernel's epilogue (EpilogueClusterReduce::store_fragment of
// the 128 x 128 bf16 tile into c) instead of one float each: the loop compiled inside the kernel's function.
// kEpi == 2: the same epilogue behind a __noinline__ call (the fragment passes through local memory once
// per tile), so that ptxas compiles the loop without it.
__device__ __noinline__ void epi_call(const GemmParams& p, int ctid, const float (&sum)[64], int64_t w0) {
  EpilogueClusterReduceT<kTokenTile>::store_fragment(p, ctid, sum, w0, 0, 0, 1.0f);
}
template <int kEpi>
__global__ void __launch_bounds__(384, 1) k_real(const uint4* src, int src_vec, int nkb, int sf_mode, float* out,
                                                 void* c_out) {
#ifdef MB_NO_SM90A
  __trap();
#else
  extern __shared__ uint8_t smem_raw[];
  ML::SharedStorage& s = shared_storage<ML::SharedStorage>(smem_raw);
  uint4* d = reinterpret_cast<uint4*>(&s.ring[0]);
  for (int i = threadIdx.x; i < src_vec; i += blockDim.x) d[i] = src[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  GemmParams p{};
  p.sf_mode = sf_mode;
  p.num_kb = nkb;
  if (threadIdx.x == 0) ML::init_barriers(s, p);
  __syncthreads();
  if (threadIdx.x < 128) {
    ptx::setmaxnreg_dec<ML::kProducerRegs>();
    if (threadIdx.x < 32) {
      int stage = 0, phase = 0;
      for (int i = 0; i < nkb; ++i) {
        if (i >= ML::kStages) ptx::mbar_wait(&s.empty[stage], phase ^ 1);
        if (threadIdx.x == 0) ptx::mbar_arrive(&s.full[stage]);
        if (++stage == ML::kStages) { stage = 0; phase ^= 1; }
      }
    }
    out[blockIdx.x * 384 + threadIdx.x] = 0.0f;
    return;
  }
  ptx::setmaxnreg_inc<ML::kConsumerRegs>();
  ML::ConsumerState c = ML::init_consumer(s, p);
  float sum[ML::kAccRegs];
  ML::run_segment(s, c, 0, nkb, sum);
  if constexpr (kEpi) {
    p.M = 128;
    p.N = static_cast<int64_t>(gridDim.x) * 128;
    p.c = c_out;
    p.c_dtype = 5;  // bf16
    p.c_vec4 = 1;
    p.c_row_stride = p.N;
    p.c_col_stride = 1;
    if constexpr (kEpi == 2)
      epi_call(p, threadIdx.x - 128, sum, static_cast<int64_t>(blockIdx.x) * 128);
    else
      EpilogueClusterReduceT<kTokenTile>::store_fragment(p, threadIdx.x - 128, sum,
                                                         static_cast<int64_t>(blockIdx.x) * 128, 0, 0, 1.0f);
    return;
  }
  float t = 0.0f;
#pragma unroll
  for (int k = 0; k < ML::kAccRegs; ++k) t += sum[k];
  out[blockIdx.x * 384 + threadIdx.x] = t;
#endif
}

// argv: nkb, CTAs (0: one per SM), launch mode (0: <<<>>>, 3: <<<>>> with the real epilogue, 1: cudaLaunchKernelEx with a cluster
// attribute of 1 CTA, 2: + programmatic stream serialization: the library's launch of the tile kernel)
int main(int argc, char** argv) {
  const int nkb = argc > 1 ? atoi(argv[1]) : 1024;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int ctas = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : sms;
  const int mode = argc > 3 ? atoi(argv[3]) : 0;
  const size_t ring = sizeof(ML::Stage) * ML::kStages;
  std::vector<uint8_t> img(ring);
  std::mt19937 rng(1);
  for (int st = 0; st < ML::kStages; ++st) {
    uint8_t* b = img.data() + st * sizeof(ML::Stage);
    for (size_t i = 0; i < sizeof(ML::Stage::x); i += 2) {  // fp16 in [-1, 1]
      const float v = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
      const __half h = __float2half(v);
      memcpy(b + i, &h, 2);
    }
    for (size_t i = 0; i < sizeof(ML::Stage::w); ++i) b[offsetof(ML::Stage, w) + i] = static_cast<uint8_t>(rng());
    for (size_t i = 0; i < sizeof(ML::Stage::wsf); ++i) b[offsetof(ML::Stage, wsf) + i] = 0x30 + rng() % 16;
  }
  uint4* src;
  float* out;
  cudaMalloc(&src, ring);
  cudaMalloc(&out, size_t(sms) * 384 * 4);
  void* cbuf;
  cudaMalloc(&cbuf, size_t(sms) * 128 * 128 * 4);
  cudaMemcpy(src, img.data(), ring, cudaMemcpyHostToDevice);
  const size_t smem = sizeof(ML::SharedStorage) + 1024;
  cudaFuncSetAttribute(k_real<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  cudaFuncSetAttribute(k_real<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  cudaFuncSetAttribute(k_real<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int r = 0; r < 3; ++r) {
    cudaEventRecord(e0);
    if (mode == 0 || mode == 3 || mode == 4) {
      if (mode == 4) k_real<2><<<ctas, 384, smem>>>(src, static_cast<int>(ring / 16), nkb, kScaleTma, out, cbuf);
      else if (mode == 0) k_real<0><<<ctas, 384, smem>>>(src, static_cast<int>(ring / 16), nkb, kScaleTma, out, cbuf);
      else k_real<1><<<ctas, 384, smem>>>(src, static_cast<int>(ring / 16), nkb, kScaleTma, out, cbuf);
    } else {
      cudaLaunchConfig_t cfg{};
      cudaLaunchAttribute attr[2] = {};
      cfg.gridDim = dim3(ctas);
      cfg.blockDim = dim3(384);
      cfg.dynamicSmemBytes = smem;
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = 1;
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[1].val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = attr;
      cfg.numAttrs = mode == 1 ? 1 : 2;
      cudaLaunchKernelEx(&cfg, k_real<0>, static_cast<const uint4*>(src), static_cast<int>(ring / 16), nkb,
                         static_cast<int>(kScaleTma), out, cbuf);
    }
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    const double flop = double(ctas) * nkb * 2.0 * 128 * 128 * 128;
    printf("k_real ctas %d mode %d nkb %d: %.3f ms, %.1f TFLOP/s (%s)\n", ctas, mode, nkb, ms, flop / ms * 1e-9, cudaGetErrorString(cudaGetLastError()));
  }
  return 0;
}
