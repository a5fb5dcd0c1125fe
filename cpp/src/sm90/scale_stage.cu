// Launcher of the scale-staging kernel (kernel/scale_stage.cuh) that gemm.cu runs in front
// of a GEMM whose scales no TMA box can read (gemm_plan.hpp: GemmPlan::stage_w / stage_x).
// A translation unit of its own so that adding it left the GEMM kernels' SASS untouched.
#include <cuda_runtime_api.h>

#include "../common/cuda_check.hpp"
#include "gemm_parts.hpp"
#include "gemm_plan.hpp"
#include "kernel/scale_stage.cuh"
#include "launch.hpp"

namespace nvfp4::sm90 {

ScaleOperand staged_scales(void* dst, int64_t rows, int64_t K) {
  ScaleOperand s;
  s.data = static_cast<const uint8_t*>(dst);
  s.layout = NVFP4_SF_LINEAR;
  s.row_stride = staged_sf_cols(K);
  s.batch_stride = rows * s.row_stride;
  return s;
}

nvfp4_status_t launch_scale_stage(const StageRequest* ops, int count, int64_t K, int64_t L, const Exec& exec) {
  ScaleStageParams sp{};
  sp.count = count;
  sp.K = K;
  sp.words_per_row = staged_sf_cols(K) / 4;
  int64_t blocks = 0;
  for (int i = 0; i < count; ++i) {
    ScaleStageOperand& o = sp.op[i];
    o.src = ops[i].src.data;
    o.row_stride = ops[i].src.row_stride;
    o.batch_stride = ops[i].src.batch_stride;
    o.blocked = ops[i].src.layout == NVFP4_SF_BLOCKED ? 1 : 0;
    o.rows = ops[i].rows;
    o.dst = static_cast<uint32_t*>(ops[i].dst);
    o.blocks = (o.rows * sp.words_per_row + kScaleStageThreads - 1) / kScaleStageThreads;
    blocks += o.blocks;
  }
  if (blocks > 0x7FFFFFFF) return fail(NVFP4_ERROR_NOT_SUPPORTED, "sm90a gemm: scales too large to stage");
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(L));
  shape.block = dim3(kScaleStageThreads, 1, 1);
  shape.pdl = true;
  return launch(nvfp4_sm90_scale_stage_kernel, shape, cuda_stream(exec), sp);
}

}  // namespace nvfp4::sm90
