// Launcher of the scale-staging kernel (kernel/scale_stage.cuh) that the GEMM, dual, packed
// MoE and grouped launchers run in front of their token pass where the plan stages scales
// no TMA box can read. A translation unit of its own so that adding it left the GEMM
// kernels' SASS untouched.
#include <cuda_runtime_api.h>

#include "../common/cuda_check.hpp"
#include "gemm_parts.hpp"
#include "gemm_plan.hpp"
#include "kernel/scale_stage.cuh"
#include "launch.hpp"

namespace nvfp4::sm90 {

namespace {

template <int kMaxOps>
nvfp4_status_t launch_stage(const StageRequest* ops, int count, int64_t L, const Exec& exec) {
  static thread_local ScaleStageParams<kMaxOps> sp;  // (4.6 KB for 64 operands: off the caller's stack)
  sp = ScaleStageParams<kMaxOps>{};
  sp.count = count;
  int64_t blocks = 0;
  for (int i = 0; i < count; ++i) {
    ScaleStageOperand& o = sp.op[i];
    o.src = ops[i].src.data;
    o.row_stride = ops[i].src.row_stride;
    o.batch_stride = ops[i].src.batch_stride;
    o.blocked = ops[i].src.layout == NVFP4_SF_BLOCKED ? 1 : 0;
    o.rows = ops[i].rows;
    o.K = ops[i].K;
    o.words_per_row = staged_sf_cols(o.K) / 4;
    o.dst = static_cast<uint32_t*>(ops[i].dst);
    o.block_begin = blocks;
    blocks += (o.rows + kScaleStageRows - 1) / kScaleStageRows;
  }
  if (blocks == 0) return NVFP4_SUCCESS;
  if (blocks > 0x7FFFFFFF || L > 65535) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a: scales too large to stage");
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(L));
  shape.block = dim3(kScaleStageThreads, 1, 1);
  shape.pdl = true;
  return launch_params(nvfp4_sm90_scale_stage_kernel<kMaxOps>, shape, cuda_stream(exec), &sp);
}

}  // namespace

ScaleOperand StageRequest::staged() const {
  ScaleOperand s;
  s.data = static_cast<const uint8_t*>(dst);
  s.layout = NVFP4_SF_LINEAR;
  s.row_stride = staged_sf_cols(K);
  s.batch_stride = rows * s.row_stride;
  return s;
}

nvfp4_status_t launch_scale_stage(const StageRequest* ops, int count, int64_t L, const Exec& exec) {
  if (count < 0 || count > kScaleStageMaxOps) return fail(NVFP4_ERROR_INVALID_VALUE, "sm90a: %d scale operands to stage", count);
  return count <= 2 ? launch_stage<2>(ops, count, L, exec) : launch_stage<kScaleStageMaxOps>(ops, count, L, exec);
}

}  // namespace nvfp4::sm90
