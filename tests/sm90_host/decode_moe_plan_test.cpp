// CPU checks of the packed MoE decode route (no GPU): the route rule (packed_plan.hpp
// packed_decode_route), the MoE plan of the decode kernel (gemv/decode_moe_plan.hpp:
// token groups, the slot bound, support, launch shape, kernel parameters), and the
// chunk numbering the kernel's scan computes (decode_moe.cuh moe_find_chunk), emulated lane
// by lane on the host with the same clamp and chunk helpers: over valid ragged tables every
// token row is computed exactly once within the slot bound; over malformed tables every row
// touched lies inside [0, total_M). Prints "N passed, N failed".
#include <stdint.h>
#include <stdio.h>

#include <algorithm>
#include <random>
#include <vector>

#include "sm90/packed_plan.hpp"

#include "../host_check.hpp"
#include "decode_launch_equal.hpp"
#include "h100_clusters.hpp"

using namespace nvfp4;
using namespace nvfp4::sm90;
using namespace nvfp4::sm90::gemv_detail;

constexpr int kSms = 132;
// H100 SXM numbers (as gemv_plan_test.cpp) and the MoE kernel instances as built by CUDA 13 for
// sm_90a (ptxas -v, session 25): 83 registers for one token group, 112 for two, 126 for four (held to
// 128 by __launch_bounds__ min 2 blocks); 32 bytes of static shared memory (decode_moe.cuh MoeChunkShared).
static MmaKernelInfo moe_info(int nt8) {
  MmaKernelInfo i;
  i.regs = nt8 == 1 ? 83 : nt8 == 2 ? 112 : 126;
  i.smem_per_sm = 233472;
  i.regs_per_sm = 65536;
  i.static_smem = 32;
  i.max_smem_block = 232448 - 32;
  h100_cluster_table(i);
  return i;
}

alignas(256) static uint8_t g_buf[4096];
static PackedGroupedGemmProblem packed(int32_t G, int64_t total_M, int64_t N, int64_t K) {
  PackedGroupedGemmProblem p;
  p.G = G;
  p.total_M = total_M;
  p.N = N;
  p.K = K;
  p.a.data = g_buf;
  p.a.row_stride = K / 2;
  p.b.data = g_buf + 1024;
  p.b.row_stride = K / 2;
  p.b.batch_stride = N * (K / 2);
  p.sfa.data = g_buf + 2048;
  p.sfa.row_stride = K / 16;
  p.sfb.data = g_buf + 3072;
  p.sfb.row_stride = K / 16;
  p.sfb.batch_stride = N * (K / 16);
  p.offsets = reinterpret_cast<const int32_t*>(g_buf + 3584);
  p.c.data = g_buf + 3840;
  p.c.dtype = DType::kFloat16;
  p.c.row_stride = N;
  p.c.col_stride = 1;
  return p;
}

// The kernel's scan (moe_find_chunk) for slot j, lane by lane: expert g = 32 r + lane in row r,
// an inclusive scan of the row's chunk counts in expert order plus the rows before, the first
// lane whose chunks hold j answers. Returns false past the last chunk.
static bool find_chunk(const std::vector<int32_t>& off, int32_t G, int64_t total, int64_t j, int r, int64_t* expert,
                       int64_t* row0, int64_t* rows) {
  int64_t carry = 0;
  for (int32_t g0 = 0; g0 < G; g0 += 32) {
    int64_t inc = carry;
    for (int lane = 0; lane < 32; ++lane) {
      const int32_t g = g0 + lane;
      int64_t b = 0, e = 0;
      if (g < G) moe_clamp_span(off[g], off[g + 1], total, b, e);
      const int64_t n = moe_chunks(b, e, r), first = inc;
      inc += n;
      if (n > 0 && j >= first && j < inc) {
        *expert = g;
        *row0 = b + (j - first) * r;
        *rows = std::min<int64_t>(r, e - *row0);
        return true;
      }
    }
    carry = inc;
  }
  return false;
}

// Top-k routing of T tokens over G experts with Dirichlet(1)-like popularities (bench/run.py
// moe_routing's kind of table): rows per expert.
static std::vector<int64_t> routing(int64_t T, int32_t G, int topk, std::mt19937& rng) {
  std::exponential_distribution<double> ex(1.0);
  std::vector<double> p(G);
  for (auto& v : p) v = ex(rng);
  std::vector<int64_t> cnt(G, 0);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> w = p;
    for (int k = 0; k < std::min<int>(topk, G); ++k) {
      std::discrete_distribution<int> d(w.begin(), w.end());
      const int g = d(rng);
      ++cnt[g];
      w[g] = 0.0;
    }
  }
  return cnt;
}

static void test_route() {
  // the targets: top-8 of 1, 4, 16, 64 tokens over 64 experts on both (N, K) pairs: decode route;
  // also 128 tokens (1024 rows, mean 16 per expert: 32-row chunks, the route's end); 1024 stay tiled
  for (int64_t T : {1LL, 4LL, 16LL, 64LL, 128LL, 1024LL})
    for (int nk = 0; nk < 2; ++nk) {
      const int64_t N = nk ? 7168 : 2048, K = nk ? 2048 : 7168;
      CHECK(packed_decode_route(packed(64, 8 * T, N, K)) == (T <= 128), "G 64 T %lld N %lld", (long long)T,
            (long long)N);
      CHECK(packed_decode_route(packed(128, 8 * T, N, K)) == (T <= 256), "G 128 T %lld N %lld", (long long)T,
            (long long)N);
    }
  CHECK(packed_decode_route(packed(8, 128, 4096, 7168)), "G 8, 128 rows (mean 16)");
  CHECK(!packed_decode_route(packed(8, 129, 4096, 7168)), "G 8, 129 rows");
  CHECK(packed_decode_route(packed(64, 8, 512, 256)), "512 rows x 8 experts");
  CHECK(!packed_decode_route(packed(64, 8, 256, 256)), "256 rows x 8 experts (2048 weight rows) taken");
  CHECK(!packed_decode_route(packed(64, 2, 1024, 256)), "1024 rows x 2 experts taken");
  CHECK(!packed_decode_route(packed(0, 8, 2048, 7168)) && !packed_decode_route(packed(64, 0, 2048, 7168)) &&
            !packed_decode_route(packed(64, 8, 0, 7168)),
        "empty problems taken");
  // operands the kernel cannot take
  PackedGroupedGemmProblem p = packed(64, 64, 2048, 96);
  CHECK(!packed_decode_route(p) && decode_moe_unsupported(p) != nullptr, "K = 96 (linear scale pieces) taken");
  p = packed(64, 64, 2048, 7168);
  p.sfb.layout = NVFP4_SF_BLOCKED;
  CHECK(!packed_decode_route(p), "blocked weight scales taken");
  p = packed(64, 64, 2048, 7168);
  p.a.row_stride = 3592;  // 8 bytes off 16
  CHECK(!packed_decode_route(p), "misaligned token rows taken");
  p = packed(64, 64, 2048, 7168);
  p.b.data = g_buf + 1032;
  CHECK(!packed_decode_route(p), "misaligned weights taken");
  p = packed(64, 64, 2048, 7168);
  p.sfb.batch_stride += 8;
  CHECK(!packed_decode_route(p), "expert scale stride off 16 taken");
  p = packed(64, 64, 2048, 7168);
  p.sfa.data = g_buf + 2049;  // token scales: byte loads
  CHECK(packed_decode_route(p), "odd token scale address refused");
  for (DType d : {DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
    p = packed(64, 64, 2048, 7168);
    p.c.dtype = d;
    CHECK(packed_decode_route(p), "out dtype %d refused", static_cast<int>(d));
  }
  CHECK(packed_decode_route(packed(1024, 64, 2048, 7168)) && !packed_decode_route(packed(1025, 64, 2048, 7168)),
        "expert bound");
}

static void test_groups_and_slots() {
  CHECK(decode_moe_nt8(8, 64) == 1 && decode_moe_nt8(128, 64) == 1 && decode_moe_nt8(129, 64) == 2 &&
            decode_moe_nt8(512, 64) == 2 && decode_moe_nt8(513, 64) == 4 && decode_moe_nt8(2048, 64) == 4 &&
            decode_moe_nt8(16, 8) == 1 && decode_moe_nt8(17, 8) == 2 && decode_moe_nt8(65, 8) == 4,
        "token groups");
  CHECK(decode_moe_slots(8, 64, 1) == 8 && decode_moe_slots(32, 64, 1) == 32 && decode_moe_slots(128, 64, 1) == 72 &&
            decode_moe_slots(512, 64, 2) == 92 && decode_moe_slots(1, 64, 1) == 1 && decode_moe_slots(0, 64, 1) == 0 &&
            decode_moe_slots(40, 1, 2) == 3 && decode_moe_slots(1024, 64, 4) == 94,
        "slot bounds");
  // valid ragged tables: every row computed once, within the bound
  std::mt19937 rng(12345);
  int bad = 0, cases = 0;
  for (int32_t G : {1, 5, 8, 31, 32, 33, 64, 128, 1024})
    for (int64_t T : {1LL, 2LL, 4LL, 16LL, 64LL, 128LL})
      for (int rep = 0; rep < 3; ++rep) {
        std::vector<int64_t> cnt = routing(T, G, 8, rng);
        if (rep == 2 && G >= 2) {  // one expert far above a chunk (the > 16-row case), others empty
          std::fill(cnt.begin(), cnt.end(), 0);
          cnt[G / 2] = 40;
          cnt[G - 1] = 3;
        }
        std::vector<int32_t> off(G + 1, 0);
        for (int32_t g = 0; g < G; ++g) off[g + 1] = off[g] + static_cast<int32_t>(cnt[g]);
        const int64_t total = off[G];
        if (total == 0) continue;
        const int nt8 = decode_moe_nt8(total, G), r = 8 * nt8;
        const int64_t slots = decode_moe_slots(total, G, nt8);
        std::vector<int> seen(total, 0);
        int64_t live = 0, need = 0;
        for (int32_t g = 0; g < G; ++g) need += moe_chunks(off[g], off[g + 1], r);
        for (int64_t j = 0; j < slots; ++j) {
          int64_t x, r0, rows;
          if (!find_chunk(off, G, total, j, r, &x, &r0, &rows)) continue;
          ++live;
          if (rows < 1 || rows > r || r0 < off[x] || r0 + rows > off[x + 1]) ++bad;
          for (int64_t m = r0; m < r0 + rows; ++m) ++seen[m];
        }
        ++cases;
        if (need > slots || live != need) ++bad;
        for (int v : seen)
          if (v != 1) ++bad;
      }
  CHECK(bad == 0 && cases > 100, "%d mismatches over %d tables", bad, cases);
  // malformed tables (decreasing, negative, past total_M): every row touched inside [0, total)
  int out_of_range = 0;
  for (int rep = 0; rep < 200; ++rep) {
    const int32_t G = 1 + static_cast<int32_t>(rng() % 100);
    const int64_t total = 1 + rng() % 300;
    std::vector<int32_t> off(G + 1);
    for (auto& o : off) {
      const uint32_t k = rng() % 4;
      o = k == 0 ? -static_cast<int32_t>(rng() % 1000) : k == 1 ? static_cast<int32_t>(rng() % (2 * total + 1))
                                                     : k == 2 ? 0x7FFFFFFF : static_cast<int32_t>(rng() % (total + 1));
    }
    const int nt8 = decode_moe_nt8(total, G), r = 8 * nt8;
    for (int64_t j = 0; j < decode_moe_slots(total, G, nt8); ++j) {
      int64_t x, r0, rows;
      if (find_chunk(off, G, total, j, r, &x, &r0, &rows) &&
          (x < 0 || x >= G || r0 < 0 || rows < 1 || rows > r || r0 + rows > total))
        ++out_of_range;
    }
  }
  CHECK(out_of_range == 0, "%d chunks outside the operands", out_of_range);
}

static void test_launch() {
  // The target rows on an H100: (tokens, N, K) -> token groups, slots, CTA warps, K split, grid.
  struct Want {
    int64_t T, N, K;
    int nt8;
    int64_t slots;
  };
  const Want wants[] = {{1, 2048, 7168, 1, 8},  {4, 2048, 7168, 1, 32},  {16, 2048, 7168, 1, 72},
                        {64, 2048, 7168, 2, 92}, {1, 7168, 2048, 1, 8},  {4, 7168, 2048, 1, 32},
                        {16, 7168, 2048, 1, 72}, {64, 7168, 2048, 2, 92}, {128, 2048, 7168, 4, 94},
                        {128, 7168, 2048, 4, 94}};
  for (const Want& w : wants) {
    const PackedGroupedGemmProblem p = packed(64, 8 * w.T, w.N, w.K);
    const MmaKernelInfo info = moe_info(w.nt8);
    const DecodeMoeLaunch d = decode_moe_launch(info, p, kSms);
    const int64_t tasks = (w.N + 127) / 128 * 8;
    const bool ok = d.unsupported == nullptr && d.nt8 == w.nt8 && d.slots == w.slots &&
                    d.launch.ctas == d.slots * d.launch.groups_per_batch * d.launch.kc &&
                    d.launch.groups_per_batch * d.launch.warps >= tasks &&
                    (d.launch.kc == 1 || d.launch.stages_per_cta >= kDecodeMinClusterStages) &&
                    d.launch.smem_launch >= d.launch.smem &&
                    mma_ctas_per_sm(info, d.launch.warps, d.launch.smem_launch) >= 1;
    CHECK(ok, "T %lld %lldx%lld: nt8 %d slots %lld wt %d kc %d ctas %lld", (long long)w.T, (long long)w.N,
          (long long)w.K, d.nt8, (long long)d.slots, d.launch.warps, d.launch.kc, (long long)d.launch.ctas);
    printf("  T %-3lld %5lldx%-5lld nt8 %d slots %3lld wt %d kc %d ctas %5lld smem %zu (launch %zu, %d per SM)\n",
           (long long)w.T, (long long)w.N, (long long)w.K, d.nt8, (long long)d.slots, d.launch.warps, d.launch.kc,
           (long long)d.launch.ctas, d.launch.smem, d.launch.smem_launch,
           mma_ctas_per_sm(info, d.launch.warps, d.launch.smem_launch));
  }
  // equal model times go to the larger K split on the MoE route (choose_decode_shape split_ties): top-8 of 4
  // tokens on 2048 x 7168 ties kc 1 and 2 at its 32-slot bound; the 3% rule alone keeps kc 1
  {
    const DecodeMoeLaunch d = decode_moe_launch(moe_info(1), packed(64, 32, 2048, 7168), kSms);
    const DecodeLaunch strict = decode_plan_launch(moe_info(1), nullptr, 1, 7168 / 32, 16 * 8, 32, kSms);
    CHECK(d.launch.kc == 2 && strict.kc == 1, "ties to the larger split: MoE kc %d, strict kc %d", d.launch.kc,
          strict.kc);
  }
  // invariants over a grid of problems
  int bad = 0;
  for (int32_t G : {1, 8, 64, 128, 1024})
    for (int64_t T : {1LL, 3LL, 16LL, 64LL, 512LL, 8192LL})
      for (int64_t N : {32LL, 512LL, 2048LL, 7168LL})
        for (int64_t K : {256LL, 2048LL, 7168LL, 16384LL}) {
          const PackedGroupedGemmProblem p = packed(G, T, N, K);
          if (decode_moe_unsupported(p) != nullptr) {
            ++bad;
            continue;
          }
          const int nt8 = decode_moe_nt8(T, G);
          const MmaKernelInfo info = moe_info(nt8);
          const DecodeMoeLaunch d = decode_moe_launch(info, p, kSms);
          static int kernels[5];  // stand-ins for the instances' addresses (the plan memo's key)
          for (int twice = 0; twice < 2; ++twice)  // the second call a memo hit: the same launch
            if (!decode_launch_equal(decode_moe_launch(info, p, kSms, 0, &kernels[nt8]).launch, d.launch)) ++bad;
          const int64_t tasks = (N + 127) / 128 * 8;
          const int n_stages = static_cast<int>((K / 32 + kMmaSC - 1) / kMmaSC);
          const DecodeLaunch& l = d.launch;
          const bool ok = d.unsupported == nullptr && d.nt8 == nt8 && l.warps >= 2 && l.warps <= kDecodeMaxWarps &&
                          l.kc >= 1 && l.kc <= kDecodeMaxCluster && l.kc * l.stages_per_cta >= n_stages &&
                          l.tile_cap % kMmaSC == 0 && l.tile_cap > 0 && l.smem <= size_t(info.max_smem_block) &&
                          l.smem_launch <= size_t(info.max_smem_block) && l.groups_per_batch * l.warps >= tasks &&
                          (l.groups_per_batch - 1) * l.warps < tasks && l.ctas == d.slots * l.groups_per_batch * l.kc;
          if (!ok) ++bad;
          // the tie rule (one token group) costs at most the 3% a split needs under the strict rule, in model time
          // at the slot bound, and where it differs it takes kc 2 over the strict rule's kc 1
          const int nchunks = static_cast<int>(K / 32);
          const DecodeShape strict = choose_decode_shape(info, nt8, nchunks, tasks, d.slots, kSms);
          const DecodeShape mine{l.warps, l.kc, l.sc};
          const double t_strict = decode_shape_time(info, nt8, nchunks, tasks, d.slots, kSms, strict);
          const double t_mine = decode_shape_time(info, nt8, nchunks, tasks, d.slots, kSms, mine);
          if (nt8 != 1 ? !(mine.wt == strict.wt && mine.kc == strict.kc)
                       : !(t_mine <= t_strict * 1.03 + 1e-9 &&
                           (mine.kc == strict.kc || (mine.kc == 2 && strict.kc == 1))))
            ++bad;
        }
  CHECK(bad == 0, "%d launch invariants broken", bad);
}

static void test_args() {
  PackedGroupedGemmProblem p = packed(64, 40, 2048, 7168);
  float alphas[64];
  p.alphas = alphas;
  p.c.dtype = DType::kBFloat16;
  p.c.row_stride = 4096;
  p.c.col_stride = 2;
  const DecodeMoeArgs m = make_decode_moe_args(p);
  const DecodeArgs& a = m.d;
  CHECK(a.N == 2048 && a.M == 40 && a.nchunks == 224 && a.tiles_k == 112 && a.tasks_per_batch == 128 &&
            a.w == p.b.data && a.w_row == 3584 && a.w_batch == 2048 * 3584 && a.sfw == p.sfb.data &&
            a.sfw_row == 448 && a.sfw_batch == 2048 * 448 && a.x == p.a.data && a.x_row == 3584 && a.x_batch == 0 &&
            a.sfx == p.sfa.data && a.sfx_row == 448 && a.sfx_batch == 0 && a.sfw_blocked == 0 && a.sfx_blocked == 0 &&
            a.alpha == 1.0f && a.alpha_ptr == nullptr && a.c == p.c.data &&
            a.c_dtype == static_cast<int32_t>(DType::kBFloat16) && a.c_row == 4096 && a.c_col == 2 && a.c_batch == 0 &&
            a.pdl == kDecodeMoePdl && a.pdl == 1 && a.cluster_k == 1,
        "decode args");
  CHECK(m.offsets == p.offsets && m.alphas == alphas && m.experts == 64, "moe args");
}

int main() {
  test_route();
  test_groups_and_slots();
  test_launch();
  test_args();
  return check_summary();
}
