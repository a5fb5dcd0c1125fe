// CPU check of the dense decode route's launches (cpp/src/sm90/gemv/decode_plan.hpp) beyond the
// H100 picks that gemv_plan_test.cpp pins: choose_decode_shape + decode_launch over ~10^6
// problems (token groups 1..4, N, K from 32 to 2^20, batches) on several device models (an H100,
// one with static shared memory, 78 and 114 SMs with their cluster capacity scaled, no cluster
// table, a 100 KB-per-SM part), with and without the fine-stage instance, and then every launch's
// K walk replayed as decode_kernel.cuh's stage loop runs it (cluster ranks of stages_per_cta
// stages, token tiles of tile_cap chunks, a kMmaDepth ring): every K chunk is consumed exactly
// once, every stage lies inside its token tile, every rank gets stages, the ring slot issued for a
// stage is the one read. Plus the memory invariants (shared memory within the block and SM limits,
// the cluster partials inside the rings they reuse) and direct decode_launch calls over every
// (sc, wt, kc) shape; and the dense launcher's plan memo (decode_plan_memo) against the direct
// plan. Prints "N passed, N failed".
#include <stdint.h>
#include <stdio.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "../host_check.hpp"
#include "decode_launch_equal.hpp"
#include "h100_clusters.hpp"
#include "sm90/gemv/decode_plan.hpp"

using namespace nvfp4::sm90::gemv_detail;

struct DeviceModel {
  const char* name;
  int sms, smem_per_sm, max_block, static_smem;
  double cluster_scale;  // the H100's cluster table scaled to the SM count; 0: no table
};

static MmaKernelInfo model_info(const DeviceModel& d, int regs) {
  MmaKernelInfo i;
  i.regs = regs;
  i.smem_per_sm = d.smem_per_sm;
  i.regs_per_sm = 65536;
  i.static_smem = d.static_smem;
  i.max_smem_block = d.max_block - d.static_smem;
  if (d.cluster_scale > 0) {
    h100_cluster_table(i);
    for (int p = 1; p <= kClusterTablePerSm; ++p)
      for (int s = 2; s <= kClusterTableSize; ++s)
        i.cluster_ctas[p][s] = static_cast<int>(i.cluster_ctas[p][s] * d.cluster_scale) / s * s;
  }
  return i;
}

// The kernel's K walk for launch d (decode_kernel.cuh: ranks, token tiles, stages, ring slots).
// Returns false (and counts the failure) at the first broken invariant.
static bool walk_k(const DecodeLaunch& d, int nchunks, int nt8, const char* what) {
  const int SC = d.sc, D = kMmaDepth;
  const int n_stages = (nchunks + SC - 1) / SC;
  std::vector<int> cover(static_cast<size_t>(n_stages) * SC, 0);
  for (int rank = 0; rank < d.kc; ++rank) {
    const int s_begin = std::min(n_stages, rank * d.stages_per_cta);
    const int s_end = std::min(n_stages, s_begin + d.stages_per_cta);
    const int c_begin = SC * s_begin, c_end = std::min(nchunks, SC * s_end);
    const int n_mine = s_end - s_begin;
    if (n_mine <= 0) {
      CHECK(false, "%s: rank %d of %d has no stage", what, rank, d.kc);
      return false;
    }
    std::vector<int> slot_of(static_cast<size_t>(n_mine) + D, -1);
    for (int i = 0; i < D - 1 && i < n_mine; ++i) slot_of[i] = i;  // the prologue's issues
    int j = 0, slot = 0;
    for (int t0 = c_begin; t0 < c_end; t0 += d.tile_cap) {
      const int tn = std::min(d.tile_cap, c_end - t0);
      for (; j < n_mine && SC * (s_begin + j) < t0 + tn; ++j) {
        if (j + D - 1 < n_mine) slot_of[j + D - 1] = slot == 0 ? D - 1 : slot - 1;
        const int gs = s_begin + j, c0 = SC * gs - t0, nc = std::min(SC, nchunks - SC * gs);
        // decode_step reads token chunks c0 .. c0 + SC - 1 (those past K zeroed): inside the tile
        if (slot_of[j] != slot || nc <= 0 || c0 < 0 || c0 + nc > tn || c0 + SC > d.tile_cap) {
          CHECK(false, "%s: rank %d stage %d: slot %d (issued %d), chunks %d..%d of a tile of %d (cap %d)", what, rank,
                gs, slot, slot_of[j], c0, c0 + nc, tn, d.tile_cap);
          return false;
        }
        for (int c = 0; c < nc; ++c) ++cover[static_cast<size_t>(SC) * gs + c];
        slot = slot + 1 == D ? 0 : slot + 1;
      }
    }
    if (j != n_mine) {
      CHECK(false, "%s: rank %d consumed %d of its %d stages", what, rank, j, n_mine);
      return false;
    }
  }
  for (int c = 0; c < nchunks; ++c)
    if (cover[c] != 1) {
      CHECK(false, "%s: chunk %d consumed %d times", what, c, cover[c]);
      return false;
    }
  return true;
}

// decode_plan_memo (the dense launcher's per-thread plan memory): a pseudo-random stream of
// problems over more distinct keys than the memo holds, every answer the direct plan's, the plan
// run exactly on the misses (a hit only for a key among the last kDecodePlanMemo remembered);
// a failed plan and an unlaunchable one are not remembered.
static void check_plan_memo(const DeviceModel& dev, const int* full_regs, const int* fine_regs) {
  static int kernels[5];  // stand-ins for the instances' addresses
  uint32_t x = 12345;
  auto rnd = [&x](uint32_t n) { x = x * 1664525u + 1013904223u; return (x >> 8) % n; };
  std::vector<DecodePlanKey> recent;  // the memo's expected content, oldest first
  long hits = 0, misses = 0;
  char what[160];
  for (int it = 0; it < 20000; ++it) {
    DecodePlanKey key;
    key.device = static_cast<int>(rnd(2));
    key.nt8 = 1 + static_cast<int>(rnd(4));
    key.kernel = &kernels[key.nt8];
    key.nchunks = 32 * (1 + static_cast<int>(rnd(3)));  // K 1024, 2048, 3072
    key.sm_count = dev.sms;
    key.tasks_per_batch = 8 * (32 + 24 * static_cast<int64_t>(rnd(2)));  // N 4096, 7168
    key.L = 1 + rnd(2);
    const MmaKernelInfo full = model_info(dev, full_regs[key.nt8]), fine = model_info(dev, fine_regs[key.nt8]);
    const DecodeLaunch want =
        decode_plan_launch(full, &fine, key.nt8, key.nchunks, key.tasks_per_batch, key.L, key.sm_count);
    bool planned = false;
    DecodeLaunch got;
    const bool ok = decode_plan_memo(key, &got, [&](DecodeLaunch* out) {
      planned = true;
      *out = decode_plan_launch(full, &fine, key.nt8, key.nchunks, key.tasks_per_batch, key.L, key.sm_count);
      return true;
    });
    const bool expect_hit = std::find(recent.begin(), recent.end(), key) != recent.end();
    snprintf(what, sizeof what, "memo step %d: dev %d nt8 %d chunks %d tasks %lld L %lld", it, key.device, key.nt8,
             key.nchunks, static_cast<long long>(key.tasks_per_batch), static_cast<long long>(key.L));
    CHECK(ok && decode_launch_equal(got, want) && planned == !expect_hit, "%s: planned %d expected hit %d", what, planned,
          expect_hit);
    if (planned) {
      ++misses;
      recent.push_back(key);
      if (recent.size() > static_cast<size_t>(kDecodePlanMemo)) recent.erase(recent.begin());
    } else {
      ++hits;
    }
  }
  CHECK(hits > 1000 && misses > 1000, "memo stream: %ld hits, %ld misses", hits, misses);
  // a failed plan is not remembered, and the next call for the key plans again
  DecodePlanKey key;
  key.device = 7;
  key.kernel = &kernels[1];
  key.nt8 = 1;
  key.nchunks = 64;
  key.sm_count = dev.sms;
  key.tasks_per_batch = 448;
  key.L = 1;
  DecodeLaunch got;
  int calls = 0;
  CHECK(!decode_plan_memo(key, &got, [&](DecodeLaunch*) { ++calls; return false; }), "failed plan reported");
  CHECK(decode_plan_memo(key, &got, [&](DecodeLaunch* out) { ++calls; *out = DecodeLaunch{}; out->unsupported = "x"; return true; }) &&
            got.unsupported != nullptr, "unlaunchable plan returned");
  CHECK(decode_plan_memo(key, &got, [&](DecodeLaunch* out) { ++calls; *out = DecodeLaunch{}; return true; }) &&
            got.unsupported == nullptr && calls == 3, "neither remembered: %d plans", calls);
  CHECK(decode_plan_memo(key, &got, [&](DecodeLaunch*) { ++calls; return false; }) && calls == 3,
        "a launchable plan is remembered");
  printf("plan memo: %ld hits, %ld misses\n", hits, misses);
}

int main() {
  const DeviceModel devices[] = {
      {"H100", 132, 233472, 232448, 0, 1.0},
      {"H100, 2 KB static", 132, 233472, 232448, 2048, 1.0},
      {"78 SMs", 78, 233472, 232448, 0, 78.0 / 132},
      {"114 SMs", 114, 233472, 232448, 0, 114.0 / 132},
      {"no cluster table", 132, 233472, 232448, 0, 0.0},
      {"100 KB per SM", 132, 102400 + 1024, 101376, 0, 1.0},
  };
  // registers per instance (CUDA 13, sm_90a, linear scales): full stages, fine stages
  const int full_regs[5] = {0, 79, 106, 117, 126}, fine_regs[5] = {0, 79, 93, 110, 123};
  const int64_t Ns[] = {8, 128, 1000, 2048, 2400, 4096, 4100, 4224, 5120, 6144, 7168, 7200, 8192, 14336, 28672, 131072};
  std::vector<int64_t> Ks;
  for (int64_t k = 32; k <= 4096; k += 32) Ks.push_back(k);
  for (int64_t k : {5120, 6144, 7168, 8192, 10240, 14336, 16384, 28672, 65536, 131072, 1 << 20}) Ks.push_back(k);
  long planned = 0, fine_planned = 0;
  char what[160];
  for (const DeviceModel& dev : devices)
    for (int nt8 = 1; nt8 <= 4; ++nt8) {
      const MmaKernelInfo full = model_info(dev, full_regs[nt8]), fine = model_info(dev, fine_regs[nt8]);
      for (int64_t N : Ns)
        for (int64_t K : Ks)
          for (int64_t L : {1, 3, 8})
            for (bool with_fine : {false, true}) {
              const int nchunks = static_cast<int>(K / 32);
              const int64_t tasks = (N + 127) / 128 * 8;
              const DecodeShape s = choose_decode_shape(full, nt8, nchunks, tasks, L, dev.sms, with_fine ? &fine : nullptr);
              snprintf(what, sizeof what, "%s nt8 %d %lldx%lldx%lld%s: sc %d wt %d kc %d", dev.name, nt8,
                       static_cast<long long>(N), static_cast<long long>(K), static_cast<long long>(L),
                       with_fine ? " (fine)" : "", s.sc, s.wt, s.kc);
              if (s.wt == 0) {  // nothing fits this device model: decode_launch must refuse, not launch
                CHECK(decode_launch(full, s, nt8, nchunks, tasks, L, dev.sms).unsupported != nullptr, "%s", what);
                continue;
              }
              const MmaKernelInfo& info = s.sc == kMmaSC ? full : fine;
              const DecodeLaunch d = decode_launch(info, s, nt8, nchunks, tasks, L, dev.sms);
              ++planned;
              fine_planned += d.sc == kDecodeFineSC;
              const int n_stages = (nchunks + s.sc - 1) / s.sc;
              const bool ok =
                  d.unsupported == nullptr && (with_fine || d.sc == kMmaSC) && d.sc == s.sc && d.kc == s.kc &&
                  d.warps == s.wt && d.tile_cap > 0 && d.tile_cap % d.sc == 0 &&
                  d.tile_cap <= decode_tile_chunks(nt8, d.sc) &&
                  d.smem == decode_token_tile_bytes(d.tile_cap, nt8) +
                                static_cast<size_t>(d.warps) * kMmaDepth * mma_stage_bytes(d.sc) &&
                  d.smem_launch >= d.smem && d.smem_launch <= static_cast<size_t>(info.max_smem_block) &&
                  d.smem + 1024 + info.static_smem <= static_cast<size_t>(info.smem_per_sm) &&
                  mma_ctas_per_sm(info, d.warps, d.smem_launch) >= 1 &&
                  // the cluster partials (warps x 16 rows x 8 nt8 tokens fp32) reuse the drained rings
                  static_cast<size_t>(d.warps) * nt8 * 32 * 16 <=
                      static_cast<size_t>(d.warps) * kMmaDepth * mma_stage_bytes(d.sc) &&
                  (d.kc == 1 || (d.stages_per_cta >= kDecodeMinClusterStages &&
                                 static_cast<int64_t>(d.kc - 1) * d.stages_per_cta < n_stages)) &&
                  d.ctas == d.groups_per_batch * L * d.kc && d.ctas <= INT_MAX;
              CHECK(ok, "%s: spc %d tile %d smem %zu / %zu", what, d.stages_per_cta, d.tile_cap, d.smem, d.smem_launch);
              if (ok && walk_k(d, nchunks, nt8, what)) CHECK(true, "%s", what);
            }
    }
  // every (sc, wt, kc) shape straight into decode_launch: what it does not refuse keeps the invariants
  for (const DeviceModel& dev : devices)
    for (int nt8 = 1; nt8 <= 4; ++nt8) {
      const MmaKernelInfo full = model_info(dev, full_regs[nt8]), fine = model_info(dev, fine_regs[nt8]);
      for (int64_t K : Ks)
        for (int sc : {kMmaSC, kDecodeFineSC})
          for (int kc = 1; kc <= kDecodeMaxCluster; ++kc)
            for (int wt = 1; wt <= kDecodeMaxWarps; ++wt) {
              const int nchunks = static_cast<int>(K / 32), n_stages = (nchunks + sc - 1) / sc;
              const MmaKernelInfo& info = sc == kMmaSC ? full : fine;
              const DecodeLaunch d = decode_launch(info, DecodeShape{wt, kc, sc}, nt8, nchunks, 448, 1, dev.sms);
              if (d.unsupported != nullptr || (kc > 1 && (kc - 1) * d.stages_per_cta >= n_stages)) continue;
              snprintf(what, sizeof what, "%s nt8 %d K %lld: direct sc %d wt %d kc %d", dev.name, nt8,
                       static_cast<long long>(K), sc, wt, kc);
              CHECK(d.smem_launch <= static_cast<size_t>(info.max_smem_block) && d.tile_cap % sc == 0, "%s", what);
              if (walk_k(d, nchunks, nt8, what)) CHECK(true, "%s", what);
            }
    }
  printf("%ld planned launches (%ld in fine stages)\n", planned, fine_planned);
  CHECK(fine_planned > 0 && fine_planned < planned, "both geometries planned somewhere");
  check_plan_memo(devices[0], full_regs, fine_regs);
  return check_summary();
}
