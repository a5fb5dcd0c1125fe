// Field-by-field equality of two decode launches (decode_plan.hpp DecodeLaunch), for the host
// tests of the plan memo: a remembered plan must be the plan.
#pragma once

#include "sm90/gemv/decode_plan.hpp"

inline bool decode_launch_equal(const nvfp4::sm90::gemv_detail::DecodeLaunch& a,
                                const nvfp4::sm90::gemv_detail::DecodeLaunch& b) {
  return a.unsupported == b.unsupported && a.nt8 == b.nt8 && a.kc == b.kc && a.sc == b.sc &&
         a.stages_per_cta == b.stages_per_cta && a.tile_cap == b.tile_cap && a.warps == b.warps &&
         a.groups_per_batch == b.groups_per_batch && a.ctas == b.ctas && a.smem == b.smem &&
         a.smem_launch == b.smem_launch;
}
