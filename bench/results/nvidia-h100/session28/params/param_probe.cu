// Session 28 probe: does a kernel's parameter-block size change its launch cost inside a CUDA graph? The grouped
// list kernel takes 23.9 KB of parameters (64 groups' table + tensor maps), the packed MoE kernel ~1 KB, and on the
// same problem (128 + 384 x 4096 x 1536) the packed call measured 18.2-18.3 µs against 18.8-19.0 for the list call.
// Kernels of B bytes of parameters (B = 256 .. 32 KB), 128 CTAs x 384 threads, each thread reads one parameter word
// and thread 0 of each CTA writes it: 200 back-to-back launches in one graph, with and without the PDL attribute
// (griddepcontrol.wait first, as the library's kernels); µs per launch (median of 20 replays).
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
template <int B> struct P { unsigned w[B / 4]; };
template <int B> __global__ void __launch_bounds__(384, 1) k(const __grid_constant__ P<B> p, unsigned* out) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const unsigned v = p.w[(threadIdx.x * 7) % (B / 4)];
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
template <int B> float run(bool pdl, unsigned* out, cudaStream_t s) {
  static P<B> p; for (int i = 0; i < B / 4; ++i) p.w[i] = i;
  cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute a[1];
  a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; a[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.gridDim = dim3(128); cfg.blockDim = dim3(384); cfg.stream = s; cfg.attrs = a; cfg.numAttrs = pdl ? 1 : 0;
  cudaGraph_t g; cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < 200; ++i) cudaLaunchKernelEx(&cfg, k<B>, p, out);
  cudaStreamEndCapture(s, &g); cudaGraphInstantiate(&ge, g, 0);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> t;
  for (int r = 0; r < 22; ++r) {
    cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 2) t.push_back(ms * 1000.f / 200.f);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
  return t[t.size() / 2];
}
// The list call's shape: a pass-like kernel (512 CTAs x 256 threads, 3.6 KB of parameters: wait, trigger) then the
// B-byte kernel, both PDL, 100 pairs per graph; µs per pair.
__global__ void __launch_bounds__(256) pass(const __grid_constant__ P<3584> p, unsigned* out) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (threadIdx.x == 0) out[1024 + blockIdx.x] = p.w[blockIdx.x % 896];
}
template <int B> float run_pair(unsigned* out, cudaStream_t s) {
  static P<B> p; static P<3584> q;
  cudaLaunchConfig_t cfg = {}, cq = {}; cudaLaunchAttribute a[1];
  a[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; a[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.gridDim = dim3(128); cfg.blockDim = dim3(384); cfg.stream = s; cfg.attrs = a; cfg.numAttrs = 1;
  cq.gridDim = dim3(512); cq.blockDim = dim3(256); cq.stream = s; cq.attrs = a; cq.numAttrs = 1;
  cudaGraph_t g; cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < 100; ++i) { cudaLaunchKernelEx(&cq, pass, q, out); cudaLaunchKernelEx(&cfg, k<B>, p, out); }
  cudaStreamEndCapture(s, &g); cudaGraphInstantiate(&ge, g, 0);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> t;
  for (int r = 0; r < 22; ++r) {
    cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); if (r >= 2) t.push_back(ms * 1000.f / 100.f);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
  return t[t.size() / 2];
}
int main() {
  unsigned* out; cudaMalloc(&out, 4096); cudaStream_t s; cudaStreamCreate(&s);
  for (bool pdl : {false, true}) {
    printf("%s: us per launch, params 256 B %.2f | 1 KB %.2f | 4 KB %.2f | 12 KB %.2f | 24 KB %.2f | 31 KB %.2f\n",
           pdl ? "PDL   " : "no PDL", run<256>(pdl, out, s), run<1024>(pdl, out, s), run<4096>(pdl, out, s),
           run<12288>(pdl, out, s), run<24576>(pdl, out, s), run<31744>(pdl, out, s));
  }
  printf("pass + kernel pairs (PDL): us per pair, params 1 KB %.2f | 24 KB %.2f | 1 KB %.2f | 24 KB %.2f\n",
         run_pair<1024>(out, s), run_pair<24576>(out, s), run_pair<1024>(out, s), run_pair<24576>(out, s));
  printf("status %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
