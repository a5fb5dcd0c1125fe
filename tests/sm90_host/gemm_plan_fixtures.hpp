// Shared fixtures of the sm90a GEMM plan tests (gemm_plan_test.cpp, gemm_schedule_test.cpp):
// fake device addresses, a dense problem, an H100's device numbers, plan helpers. Plain C++.
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <random>
#include <vector>

#include "common/formats.h"
#include "sm90/gemm_plan.hpp"
#include "sm90/packed_plan.hpp"

using namespace nvfp4;
using namespace nvfp4::sm90;

#include "../host_check.hpp"

// Fake, well-aligned device addresses (the plan only looks at their values).
inline const uint8_t* addr(uintptr_t a) { return reinterpret_cast<const uint8_t*>(a); }

// A dense problem: packed rows of K/2 bytes, linear scales of K/16 bytes per row (or blocked),
// fp16 row-major output, every base 256-byte aligned.
inline GemmProblem dense(int64_t M, int64_t N, int64_t K, int64_t L = 1, nvfp4_sf_layout_t layout = NVFP4_SF_LINEAR) {
  GemmProblem p;
  p.L = L;
  p.M = M;
  p.N = N;
  p.K = K;
  p.a = Fp4Operand{addr(1u << 20), K / 2, M * K / 2};
  p.b = Fp4Operand{addr(1u << 28), K / 2, N * K / 2};
  const int64_t sfa_batch = layout == NVFP4_SF_BLOCKED ? blocked_sf_bytes(M, K) : M * (K / 16);
  const int64_t sfb_batch = layout == NVFP4_SF_BLOCKED ? blocked_sf_bytes(N, K) : N * (K / 16);
  p.sfa = ScaleOperand{addr(3u << 28), layout, K / 16, sfa_batch};
  p.sfb = ScaleOperand{addr(5u << 28), layout, K / 16, sfb_batch};
  p.c.data = reinterpret_cast<void*>(uintptr_t{7} << 28);
  p.c.dtype = DType::kFloat16;
  p.c.row_stride = N;
  p.c.col_stride = 1;
  p.c.batch_stride = M * N;
  return p;
}

inline GemmDeviceNumbers h100() {
  GemmDeviceNumbers d;
  d.sm_count = 132;
  for (int s = 0; s <= kMaxSplits; ++s) {
    d.fused_clusters[s] = d.predecoded_clusters[s] = d.predecoded_wide_clusters[s] = 1 << 20;
    for (int i = 0; i < kSplitTiles; ++i) d.predecoded_split_clusters[i][s] = 1 << 20;
  }
  return d;
}

// The tiled plan (pre-decoded / persistent + tail) of a problem stream-K would take: the
// workspace query's bytes less stream-K's, so its partials do not fit.
inline GemmPlan tiled_plan(const GemmProblem& p, const GemmDeviceNumbers& d) {
  const GemmPlan g = plan_gemm(p, d, SIZE_MAX);
  if (g.path != GemmPath::kStreamK) return g;
  return plan_gemm(p, d, g.workspace_bytes - streamk_workspace_bytes(StreamKChoice{g.sk_units, g.grid[0]}, g.tile_x));
}

inline const char* path_name(GemmPath p) {
  switch (p) {
    case GemmPath::kEmpty: return "empty";
    case GemmPath::kGemvRoute: return "gemv";
    case GemmPath::kFused: return "fused";
    case GemmPath::kPredecoded: return "predecoded";
    case GemmPath::kPersistent: return "persistent";
    case GemmPath::kDecode: return "decode";
    case GemmPath::kStreamK: return "streamk";
  }
  return "?";
}

inline bool same_reason(const char* a, const char* b) {
  return (a == nullptr && b == nullptr) || (a != nullptr && b != nullptr && strcmp(a, b) == 0);
}
