// Host cost of the CUDA runtime calls an op's launch path is made of, so that the
// library's own host time can be told apart from the launch calls themselves.
//
//   nvcc -O2 -std=c++17 -arch=sm_90a -Icpp/include bench/host_primitives.cu -o /tmp/host_primitives \
//        -L<build dir> -lnvfp4 -Xlinker -rpath=<build dir>
//   /tmp/host_primitives
//
// The last rows time the C ABI itself (nvfp4_gemm etc. on tiny device operands, the
// caller's workspace given): the library's host work plus its launch calls.
//
// Each row: median over 7 batches of 20000 calls, ns per call (the GPU is never the
// limit: the kernels are empty and the queue is drained between batches).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "nvfp4/nvfp4.h"

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::printf("%s failed: %s\n", #x, cudaGetErrorString(e_));                      \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

__global__ void empty_kernel(int) {}
__global__ void __cluster_dims__(1, 1, 1) empty_cluster_kernel(int) {}

template <class F>
double ns_per_call(F&& f, cudaStream_t s, int n = 20000) {
  for (int i = 0; i < 1000; ++i) f();
  CHECK(cudaStreamSynchronize(s));
  std::vector<double> v;
  for (int b = 0; b < 7; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) f();
    auto t1 = std::chrono::steady_clock::now();
    CHECK(cudaStreamSynchronize(s));
    v.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  CHECK(cudaSetDevice(0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* buf = nullptr;
  CHECK(cudaMalloc(&buf, 1 << 20));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s\n| call | ns/call |\n|---|---:|\n", prop.name);
  auto row = [](const char* name, double ns) { std::printf("| %s | %.0f |\n", name, ns); };

  row("empty_kernel<<<1,32,0,s>>>", ns_per_call([&] { empty_kernel<<<1, 32, 0, s>>>(0); }, s));
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(1);
  cfg.blockDim = dim3(32);
  cfg.stream = s;
  row("cudaLaunchKernelEx, no attributes", ns_per_call([&] { cudaLaunchKernelEx(&cfg, empty_kernel, 0); }, s));
  cudaLaunchAttribute attr[2] = {};
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 2;
  row("cudaLaunchKernelEx, cluster + PDL", ns_per_call([&] { cudaLaunchKernelEx(&cfg, empty_kernel, 0); }, s));
  cfg.numAttrs = 1;
  cfg.attrs = &attr[1];
  row("cudaLaunchKernelEx, PDL", ns_per_call([&] { cudaLaunchKernelEx(&cfg, empty_kernel, 0); }, s));

  // The same launches through the driver API with the CUfunction fetched once
  // (cudaGetFuncBySymbol): what the runtime adds per launch.
  {
    cudaFunction_t rf = nullptr;
    CHECK(cudaGetFuncBySymbol(&rf, reinterpret_cast<const void*>(empty_kernel)));
    CUfunction f = reinterpret_cast<CUfunction>(rf);
    void* drv_launch = nullptr;
    void* drv_launch_ex = nullptr;
    cudaDriverEntryPointQueryResult qr;
    CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &drv_launch, 12000, cudaEnableDefault, &qr));
    CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", &drv_launch_ex, 12000, cudaEnableDefault, &qr));
    auto launch = reinterpret_cast<PFN_cuLaunchKernel_v4000>(drv_launch);
    auto launch_ex = reinterpret_cast<PFN_cuLaunchKernelEx_v11060>(drv_launch_ex);
    int arg0 = 0;
    void* params[] = {&arg0};
    row("cuLaunchKernel (driver, cached CUfunction)", ns_per_call([&] {
          launch(f, 1, 1, 1, 32, 1, 1, 0, reinterpret_cast<CUstream>(s), params, nullptr);
        }, s));
    CUlaunchAttribute dattr[2] = {};
    dattr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    dattr[0].value.clusterDim.x = 1;
    dattr[0].value.clusterDim.y = 1;
    dattr[0].value.clusterDim.z = 1;
    dattr[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    dattr[1].value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig dcfg = {};
    dcfg.gridDimX = dcfg.gridDimY = dcfg.gridDimZ = 1;
    dcfg.blockDimX = 32;
    dcfg.blockDimY = dcfg.blockDimZ = 1;
    dcfg.hStream = reinterpret_cast<CUstream>(s);
    dcfg.attrs = dattr;
    dcfg.numAttrs = 2;
    row("cuLaunchKernelEx (driver), cluster + PDL", ns_per_call([&] { launch_ex(&dcfg, f, params, nullptr); }, s));
  }

  int v = 0;
  row("cudaGetDevice", ns_per_call([&] { cudaGetDevice(&v); }, s));
  row("cudaGetDeviceCount", ns_per_call([&] { cudaGetDeviceCount(&v); }, s));
  row("cudaGetLastError", ns_per_call([&] { (void)cudaGetLastError(); }, s));
  row("cudaDeviceGetAttribute(SM count)",
      ns_per_call([&] { cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0); }, s));
  row("cudaFuncSetAttribute(max dyn smem)", ns_per_call([&] {
        cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024);
      }, s));
  cudaStreamCaptureStatus cs;
  row("cudaStreamIsCapturing", ns_per_call([&] { cudaStreamIsCapturing(s, &cs); }, s));
  row("cudaStreamIsCapturing(legacy stream 0)", ns_per_call([&] { cudaStreamIsCapturing(0, &cs); }, s));
  unsigned long long sid;
  row("cudaStreamGetId (the scratch cache's key)", ns_per_call([&] { cudaStreamGetId(s, &sid); }, s));
  cudaEvent_t ev;
  cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  row("cudaEventRecord (the scratch cache's last use)", ns_per_call([&] { cudaEventRecord(ev, s); }, s));
  row("cudaMallocAsync + cudaFreeAsync (1 MiB)", ns_per_call([&] {
        void* p;
        cudaMallocAsync(&p, 1 << 20, s);
        cudaFreeAsync(p, s);
      }, s, 2000));

  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
  auto encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  CUtensorMap map;
  cuuint64_t dims[3] = {1024, 128, 1};
  cuuint64_t strides[2] = {1024, 1024 * 128};
  cuuint32_t box[3] = {64, 128, 1};
  cuuint32_t elem[3] = {1, 1, 1};
  row("cuTensorMapEncodeTiled (3-D uint8, swizzle 64B)", ns_per_call([&] {
        encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, buf, dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      }, s));
  int clusters = 0;
  cudaLaunchConfig_t occ = cfg;
  occ.attrs = attr;
  occ.numAttrs = 1;
  row("cudaOccupancyMaxActiveClusters", ns_per_call([&] {
        cudaOccupancyMaxActiveClusters(&clusters, empty_kernel, &occ);
      }, s, 2000));

  // ---- the C ABI on tiny problems (inputs are garbage bytes: only the host path matters)
  uint8_t* dev = nullptr;
  CHECK(cudaMalloc(&dev, 64 << 20));
  CHECK(cudaMemset(dev, 0x11, 64 << 20));
  auto tensor = [&](size_t offset, nvfp4_dtype_t dt, std::vector<int64_t> shape) {
    nvfp4_tensor_t t{};
    t.data = dev + offset;
    t.dtype = dt;
    t.device_type = NVFP4_DEVICE_CUDA;
    t.device_id = 0;
    t.ndim = static_cast<int32_t>(shape.size());
    int64_t st = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      t.shape[i] = shape[i];
      t.strides[i] = st;
      st *= shape[i];
    }
    return t;
  };
  nvfp4_exec_t ex{};
  ex.stream = reinterpret_cast<nvfp4_stream_t>(s);
  ex.workspace = dev + (32 << 20);
  ex.workspace_bytes = 32 << 20;
  for (int64_t K : {int64_t{2048}, int64_t{256}}) {
    const int64_t M = 128, N = 128;
    nvfp4_tensor_t a = tensor(0, NVFP4_DTYPE_UINT8, {M, K / 2}), sfa = tensor(1 << 20, NVFP4_DTYPE_UINT8, {M, K / 16}),
                   b = tensor(2 << 20, NVFP4_DTYPE_UINT8, {N, K / 2}), sfb = tensor(3 << 20, NVFP4_DTYPE_UINT8, {N, K / 16}),
                   c = tensor(4 << 20, NVFP4_DTYPE_FLOAT16, {M, N});
    nvfp4_scalar_t alpha{1.0f, nullptr};
    char label[128];
    size_t bytes = 0;
    std::snprintf(label, sizeof label, "nvfp4_gemm_workspace_size %lldx%lldx%lld", (long long)M, (long long)N,
                  (long long)K);
    row(label, ns_per_call([&] { nvfp4_gemm_workspace_size(&a, &sfa, &b, &sfb, NVFP4_SF_LINEAR, &c, &ex, &bytes); }, s));
    std::snprintf(label, sizeof label, "nvfp4_gemm %lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
    nvfp4_status_t st = nvfp4_gemm(&a, &sfa, &b, &sfb, alpha, NVFP4_SF_LINEAR, &c, &ex);
    if (st != NVFP4_SUCCESS) std::printf("nvfp4_gemm failed: %s\n", nvfp4_last_error());
    row(label, ns_per_call([&] { nvfp4_gemm(&a, &sfa, &b, &sfb, alpha, NVFP4_SF_LINEAR, &c, &ex); }, s, 5000));
  }
  {
    const int64_t M = 256, K = 1024;
    nvfp4_tensor_t a = tensor(0, NVFP4_DTYPE_UINT8, {M, K / 2}), sfa = tensor(1 << 20, NVFP4_DTYPE_UINT8, {M, K / 16}),
                   b = tensor(2 << 20, NVFP4_DTYPE_UINT8, {K / 2}), sfb = tensor(3 << 20, NVFP4_DTYPE_UINT8, {K / 16}),
                   c = tensor(4 << 20, NVFP4_DTYPE_FLOAT16, {M});
    nvfp4_scalar_t alpha{1.0f, nullptr};
    nvfp4_status_t st = nvfp4_gemv(&a, &sfa, &b, &sfb, alpha, NVFP4_SF_LINEAR, &c, &ex);
    if (st != NVFP4_SUCCESS) std::printf("nvfp4_gemv failed: %s\n", nvfp4_last_error());
    row("nvfp4_gemv 256x1024", ns_per_call([&] { nvfp4_gemv(&a, &sfa, &b, &sfb, alpha, NVFP4_SF_LINEAR, &c, &ex); }, s, 5000));
  }
  {
    const int64_t M = 128, N = 128, K = 2048;
    nvfp4_tensor_t a = tensor(0, NVFP4_DTYPE_UINT8, {M, K / 2}), sfa = tensor(1 << 20, NVFP4_DTYPE_UINT8, {M, K / 16}),
                   b = tensor(2 << 20, NVFP4_DTYPE_UINT8, {N, K / 2}), sfb = tensor(3 << 20, NVFP4_DTYPE_UINT8, {N, K / 16}),
                   c = tensor(4 << 20, NVFP4_DTYPE_FLOAT16, {M, N});
    nvfp4_scalar_t one{1.0f, nullptr};
    nvfp4_exec_t cached{};
    cached.stream = ex.stream;
    cached.workspace_mode = NVFP4_WORKSPACE_CACHED;
    nvfp4_status_t st = nvfp4_dual_gemm(&a, &sfa, &b, &sfb, &b, &sfb, one, one, NVFP4_ACT_SILU, NVFP4_SF_LINEAR, &c, &cached);
    if (st != NVFP4_SUCCESS) std::printf("nvfp4_dual_gemm failed: %s\n", nvfp4_last_error());
    row("nvfp4_dual_gemm 128x128x2048 (cached workspace)", ns_per_call([&] {
          nvfp4_dual_gemm(&a, &sfa, &b, &sfb, &b, &sfb, one, one, NVFP4_ACT_SILU, NVFP4_SF_LINEAR, &c, &cached);
        }, s, 5000));
    row("nvfp4_gemm 128x128x2048 (cached workspace)", ns_per_call([&] {
          nvfp4_gemm(&a, &sfa, &b, &sfb, one, NVFP4_SF_LINEAR, &c, &cached);
        }, s, 5000));
  }
  {
    nvfp4_tensor_t x = tensor(0, NVFP4_DTYPE_FLOAT32, {128, 1024}), q = tensor(1 << 20, NVFP4_DTYPE_UINT8, {128, 512}),
                   sf = tensor(2 << 20, NVFP4_DTYPE_UINT8, {128, 64}), gs = tensor(3 << 20, NVFP4_DTYPE_FLOAT32, {1});
    nvfp4_status_t st = nvfp4_quantize(&x, &q, &sf, NVFP4_SF_LINEAR, &gs, 1, &ex);
    if (st != NVFP4_SUCCESS) std::printf("nvfp4_quantize failed: %s\n", nvfp4_last_error());
    row("nvfp4_quantize 128x1024 fp32, computing the global scale",
        ns_per_call([&] { nvfp4_quantize(&x, &q, &sf, NVFP4_SF_LINEAR, &gs, 1, &ex); }, s, 5000));
    row("nvfp4_quantize 128x1024 fp32, global scale given",
        ns_per_call([&] { nvfp4_quantize(&x, &q, &sf, NVFP4_SF_LINEAR, &gs, 0, &ex); }, s, 5000));
  }
  CHECK(cudaFree(dev));
  CHECK(cudaFree(buf));
  return 0;
}
