#include "dispatch.hpp"

#include "workspace_cache.hpp"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string.h>

namespace nvfp4 {
namespace {

constexpr int kMaxDevices = 64;
thread_local nvfp4_backend_t g_last_backend = NVFP4_BACKEND_AUTO;
std::mutex g_props_mutex;
DeviceProps g_props[kMaxDevices];

// The backends that can run on a device, best first (a fixed array: no allocation per call).
struct Chain {
  const BackendOps* items[3] = {};
  int size = 0;
  void push(const BackendOps* b) { items[size++] = b; }
  const BackendOps* const* begin() const { return items; }
  const BackendOps* const* end() const { return items + size; }
  bool empty() const { return size == 0; }
};

Chain backend_chain(int cc_major, int cc_minor) {
  Chain chain;
  if (cc_major == 10 && cc_minor == 0 && sm100a_backend()) chain.push(sm100a_backend());
  if (cc_major == 9 && cc_minor == 0 && sm90a_backend()) chain.push(sm90a_backend());
  if (cc_major >= 8 && portable_backend()) chain.push(portable_backend());
  return chain;
}

// Restores the caller's current device on scope exit.
struct DeviceGuard {
  int previous = -1;
  bool switched = false;
  cudaError_t enter(int device) {
    cudaError_t err = cudaGetDevice(&previous);
    if (err != cudaSuccess) return err;
    if (previous != device) {
      err = cudaSetDevice(device);
      switched = (err == cudaSuccess);
    }
    return err;
  }
  ~DeviceGuard() {
    if (switched) cudaSetDevice(previous);
  }
};

nvfp4_status_t make_exec(int device, const DeviceProps& props, const nvfp4_exec_t* exec, Exec* out) {
  out->device = device;
  out->sm_count = props.sm_count;
  out->cc_major = props.cc_major;
  out->cc_minor = props.cc_minor;
  if (exec) {
    out->stream = exec->stream;
    out->workspace = exec->workspace;
    out->workspace_bytes = exec->workspace_bytes;
    out->cached_workspace = exec->workspace_mode == NVFP4_WORKSPACE_CACHED && exec->workspace == nullptr;
  }
  return NVFP4_SUCCESS;
}

// Runs fn(backend, exec) on the first backend of the device's chain that accepts the
// problem, with the device current; `cached_workspace` > 0: that many bytes of the
// library's own scratch (workspace_cache.hpp) are the op's workspace.
template <class Fn>
nvfp4_status_t with_chain(const char* op, int device, const nvfp4_exec_t* exec, size_t cached_workspace, Fn&& fn) {
  const DeviceProps* props = nullptr;
  nvfp4_status_t st = device_props(device, &props);
  if (st != NVFP4_SUCCESS) return st;
  const nvfp4_backend_t requested = exec ? exec->backend : NVFP4_BACKEND_AUTO;
  Chain chain = backend_chain(props->cc_major, props->cc_minor);
  if (requested != NVFP4_BACKEND_AUTO) {
    const BackendOps* forced = nullptr;
    for (const BackendOps* b : chain)
      if (b->id == requested) forced = b;
    if (!forced)
      return fail(NVFP4_ERROR_NOT_SUPPORTED,
                  "%s: backend '%s' cannot run on device %d (%s, compute capability %d.%d) in this build",
                  op, nvfp4_backend_name(requested), device, props->name, props->cc_major,
                  props->cc_minor);
    chain = Chain{};
    chain.push(forced);
  }
  if (chain.empty())
    return fail(NVFP4_ERROR_NOT_SUPPORTED,
                "%s: no backend for device %d (%s, compute capability %d.%d); nvfp4 needs compute "
                "capability >= 8.0 (this build: archs %s)",
                op, device, props->name, props->cc_major, props->cc_minor, nvfp4_build_archs());
  DeviceGuard guard;
  cudaError_t err = guard.enter(device);
  if (err != cudaSuccess)
    return fail(NVFP4_ERROR_CUDA, "%s: cudaSetDevice(%d): %s", op, device, cudaGetErrorString(err));
  Exec ex;
  make_exec(device, *props, exec, &ex);
  ScratchLease scratch;  // released (a graph allocation: freed) after the launches below
  if (cached_workspace > 0) {
    const nvfp4_status_t st = scratch.acquire(device, reinterpret_cast<cudaStream_t>(ex.stream), cached_workspace);
    if (st != NVFP4_SUCCESS) return st;
    ex.workspace = scratch.data();
    ex.workspace_bytes = scratch.size();
  }
  nvfp4_status_t last = NVFP4_ERROR_NOT_SUPPORTED;
  for (const BackendOps* b : chain) {
    last = fn(*b, ex);
    if (last != NVFP4_ERROR_NOT_SUPPORTED) {
      g_last_backend = b->id;
      return last;
    }
  }
  return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s: no backend of this build handles this problem on device %d (%s)",
              op, device, props->name);
}

}  // namespace

nvfp4_status_t device_props(int device, const DeviceProps** out) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    count = 0;
  }
  if (device < 0 || device >= count || device >= kMaxDevices)
    return fail(NVFP4_ERROR_INVALID_VALUE, "CUDA device %d does not exist (%d visible)", device, count);
  std::lock_guard<std::mutex> lock(g_props_mutex);
  DeviceProps& p = g_props[device];
  if (!p.valid) {
    cudaDeviceProp prop;
    cudaError_t err = cudaGetDeviceProperties(&prop, device);
    if (err != cudaSuccess)
      return fail(NVFP4_ERROR_CUDA, "cudaGetDeviceProperties(%d): %s", device, cudaGetErrorString(err));
    p.cc_major = prop.major;
    p.cc_minor = prop.minor;
    p.sm_count = prop.multiProcessorCount;
    p.total_memory = static_cast<int64_t>(prop.totalGlobalMem);
    strncpy(p.name, prop.name, sizeof(p.name) - 1);
    p.valid = true;
  }
  *out = &p;
  return NVFP4_SUCCESS;
}

void set_last_backend(nvfp4_backend_t b) { g_last_backend = b; }
nvfp4_backend_t last_backend() { return g_last_backend; }

nvfp4_backend_t preferred_backend(int cc_major, int cc_minor) {
  const Chain chain = backend_chain(cc_major, cc_minor);
  return chain.empty() ? NVFP4_BACKEND_AUTO : chain.items[0]->id;
}

template <class P>
nvfp4_status_t run_on_device(LaunchFn<P> BackendOps::*member, const char* op, const P& problem,
                             int device, const nvfp4_exec_t* exec, size_t cached_workspace) {
  return with_chain(op, device, exec, cached_workspace, [&](const BackendOps& b, const Exec& ex) {
    LaunchFn<P> fn = b.*member;
    return fn ? fn(problem, ex) : NVFP4_ERROR_NOT_SUPPORTED;
  });
}

template <class P>
nvfp4_status_t workspace_on_device(LaunchFn<P> BackendOps::*launch, WorkspaceFn<P> BackendOps::*workspace,
                                   const char* op, const P& problem, int device, const nvfp4_exec_t* exec,
                                   size_t* bytes) {
  *bytes = 0;
  return with_chain(op, device, exec, 0, [&](const BackendOps& b, const Exec& ex) {
    if (!(b.*launch)) return NVFP4_ERROR_NOT_SUPPORTED;
    WorkspaceFn<P> fn = b.*workspace;
    *bytes = fn ? fn(problem, ex) : 0;
    return NVFP4_SUCCESS;
  });
}

template nvfp4_status_t run_on_device<GemmProblem>(LaunchFn<GemmProblem> BackendOps::*, const char*,
                                                   const GemmProblem&, int, const nvfp4_exec_t*, size_t);
template nvfp4_status_t run_on_device<DualGemmProblem>(LaunchFn<DualGemmProblem> BackendOps::*, const char*,
                                                       const DualGemmProblem&, int, const nvfp4_exec_t*, size_t);
template nvfp4_status_t run_on_device<GroupedGemmProblem>(LaunchFn<GroupedGemmProblem> BackendOps::*,
                                                          const char*, const GroupedGemmProblem&, int,
                                                          const nvfp4_exec_t*, size_t);
template nvfp4_status_t run_on_device<PackedGroupedGemmProblem>(
    LaunchFn<PackedGroupedGemmProblem> BackendOps::*, const char*, const PackedGroupedGemmProblem&, int,
    const nvfp4_exec_t*, size_t);
template nvfp4_status_t run_on_device<QuantizeProblem>(LaunchFn<QuantizeProblem> BackendOps::*, const char*,
                                                       const QuantizeProblem&, int, const nvfp4_exec_t*, size_t);
template nvfp4_status_t run_on_device<DequantizeProblem>(LaunchFn<DequantizeProblem> BackendOps::*,
                                                         const char*, const DequantizeProblem&, int,
                                                         const nvfp4_exec_t*, size_t);
template nvfp4_status_t run_on_device<SwizzleProblem>(LaunchFn<SwizzleProblem> BackendOps::*, const char*,
                                                      const SwizzleProblem&, int, const nvfp4_exec_t*, size_t);

#define NVFP4_INSTANTIATE_WORKSPACE(P)                                                                     \
  template nvfp4_status_t workspace_on_device<P>(LaunchFn<P> BackendOps::*, WorkspaceFn<P> BackendOps::*, \
                                                 const char*, const P&, int, const nvfp4_exec_t*, size_t*);
NVFP4_INSTANTIATE_WORKSPACE(GemmProblem)
NVFP4_INSTANTIATE_WORKSPACE(DualGemmProblem)
NVFP4_INSTANTIATE_WORKSPACE(GroupedGemmProblem)
NVFP4_INSTANTIATE_WORKSPACE(PackedGroupedGemmProblem)
#undef NVFP4_INSTANTIATE_WORKSPACE

// Backends not compiled into this build (arch not in NVFP4_CUDA_ARCHS, or no sources).
#if !defined(NVFP4_WITH_PORTABLE)
const BackendOps* portable_backend() { return nullptr; }
#endif
#if !defined(NVFP4_WITH_SM90A)
const BackendOps* sm90a_backend() { return nullptr; }
#endif
#if !defined(NVFP4_WITH_SM100A)
const BackendOps* sm100a_backend() { return nullptr; }
#endif

}  // namespace nvfp4
