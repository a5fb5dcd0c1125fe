// sm90a decode-regime GEMM launcher: gemm with M = 2..32 tokens on >= 4096 (17..32 at K < 1536: 7168) weight rows
// (gemm_plan.hpp routes them here, gemv/decode_plan.hpp says which operands and why those
// bounds), c[l, m, n] = alpha * sum_k a[l, m, k] * b[l, n, k]. Kernel: gemv/decode_kernel.cuh
// (the MMA GEMV's weight streaming, fp16 tensor-core MMAs over up to 32 tokens decoded once
// per CTA; ring stages of 512 or 256 K, decode_plan.hpp). A translation unit of
// its own, so that adding it moves no schedule of the GEMM or GEMV kernels (gemm.cu).
// This file: the per-device kernel resources the plan needs, and the launch.
#include <cuda_runtime.h>
#include <stdint.h>

#include "../backends.hpp"
#include "../common/cuda_check.hpp"
#include "../problem.hpp"
#include "gemv/decode_kernel.cuh"
#include "gemv/kernel_info.hpp"
#include "gemv/decode_plan.hpp"
#include "launch.hpp"
#include "launchers.hpp"

namespace nvfp4::sm90 {
namespace gemv_detail {
namespace {

using DecodeKernelFn = void (*)(const DecodeArgs);

template <int NT8, int SC>
DecodeKernelFn decode_kernel_for(bool blocked) {
  return blocked ? gemm_decode_kernel<NT8, true, SC> : gemm_decode_kernel<NT8, false, SC>;
}
template <int SC>
DecodeKernelFn decode_kernel_sc(int nt8, bool blocked) {
  switch (nt8) {
    case 1: return decode_kernel_for<1, SC>(blocked);
    case 2: return decode_kernel_for<2, SC>(blocked);
    case 3: return decode_kernel_for<3, SC>(blocked);
    case 4: return decode_kernel_for<4, SC>(blocked);
    default: return nullptr;
  }
}
// sc: the stage geometry (decode_plan.hpp: kMmaSC or kDecodeFineSC chunks per stage).
DecodeKernelFn decode_kernel(int nt8, bool blocked, int sc) {
  return sc == kMmaSC ? decode_kernel_sc<kMmaSC>(nt8, blocked)
                      : sc == kDecodeFineSC ? decode_kernel_sc<kDecodeFineSC>(nt8, blocked) : nullptr;
}

// The resources of one kernel instance on `device` (kernel_info.hpp: queried once per device and
// instance, the dynamic shared memory limit raised to the opt-in maximum on the way).
nvfp4_status_t decode_info(int device, int nt8, bool blocked, int sc, MmaKernelInfo* out) {
  const DecodeKernelFn kernel = decode_kernel(nt8, blocked, sc);
  if (kernel == nullptr) return fail(NVFP4_ERROR_INTERNAL, "sm90a decode gemm: no kernel for %d token groups", nt8);
  return decode_kernel_info(device, reinterpret_cast<const void*>(kernel), out);
}

}  // namespace
}  // namespace gemv_detail

nvfp4_status_t gemm_decode(const GemmProblem& p, const Exec& exec) {
  using namespace gemv_detail;
  if (exec.cc_major != 9 || exec.cc_minor != 0)
    return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a decode gemm: needs a CC 9.0 device");
  if (const char* why = decode_unsupported(p)) return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s", why);
  int sm_count = exec.sm_count;
  if (sm_count <= 0) NVFP4_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, exec.device));
  const int nt8 = decode_nt8(p.M);
  const bool blocked = p.sfb.layout == NVFP4_SF_BLOCKED;
  DecodeArgs args = make_decode_args(p);
  const void* full = reinterpret_cast<const void*>(decode_kernel(nt8, blocked, kMmaSC));
  const DecodePlanKey key{exec.device, full, nt8, args.nchunks, sm_count, args.tasks_per_batch, p.L};
  nvfp4_status_t st = NVFP4_SUCCESS;
  DecodeLaunch dl;
  decode_plan_memo(key, &dl, [&](DecodeLaunch* out) {
    MmaKernelInfo info, fine;  // the full- and fine-stage instances (decode_plan.hpp)
    st = decode_info(exec.device, nt8, blocked, kMmaSC, &info);
    if (st == NVFP4_SUCCESS) st = decode_info(exec.device, nt8, blocked, kDecodeFineSC, &fine);
    if (st != NVFP4_SUCCESS) return false;
    *out = decode_plan_launch(info, &fine, nt8, args.nchunks, args.tasks_per_batch, p.L, sm_count);
    return true;
  });
  if (st != NVFP4_SUCCESS) return st;
  if (dl.unsupported) return fail(NVFP4_ERROR_NOT_SUPPORTED, "%s", dl.unsupported);
  const LaunchShape ls = decode_launch_shape(dl, &args);
  return launch(decode_kernel(nt8, blocked, dl.sc), ls, cuda_stream(exec), args);
}

}  // namespace nvfp4::sm90
