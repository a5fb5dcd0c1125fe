// CPU unit test of the sm100a backend's host-side argument building (no GPU, no
// kernel launch; compiled by tests/test_sm100_sass.py with nvcc as host code).
//
// Checks, on odd shapes:
//  1. CUTLASS's own block-scaled scale layout (Sm1xxBlockScaledConfig<16>, the one
//     the SM100 collectives read through TMA) addresses scale byte (row, k-block, l)
//     exactly at nvfp4::blocked_sf_offset (+ batch stride), including our batch-stride
//     override (scale_layout.hpp), and spans exactly blocked_sf_bytes per batch;
//  2. the scale preparation arithmetic of the kernels (scale_map.hpp: linear and
//     blocked sources, the packed MoE per-group swizzle with its device-side tile
//     prefix and offset clamping) builds byte-for-byte the blocked tensors formats.h
//     defines, padding zero;
//  3. the workspace carving (plan.hpp): aligned, disjoint regions inside the size
//     the query reports, for any base alignment; the support checks;
//  4. the dual GEMM kernel's host-side arguments (dual_config.hpp): the strides and
//     scale layouts handed to CUTLASS's mainloop for (A, B1, SFA, SFB1) and
//     (A, B2, SFA, SFB2), CUTLASS's can_implement on them, the per-stage TMA byte
//     count and the shared-memory budget.
// Prints "N passed, N failed".
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <random>
#include <vector>

#include "sm100/dual_config.hpp"
#include "sm100/plan.hpp"
#include "sm100/scale_layout.hpp"
#include "sm100/scale_map.hpp"

using namespace nvfp4;
using namespace nvfp4::sm100;

#include "../host_check.hpp"

static const int kRows[] = {1, 7, 31, 32, 127, 128, 129, 255, 300, 513};
static const int kKs[] = {32, 64, 96, 160, 256, 480, 1056};

// ---------------------------------------------------------------------------
// 1. CUTLASS layout == formats.h blocked layout
// ---------------------------------------------------------------------------
static void test_cutlass_layout() {
  for (int rows : kRows)
    for (int K : kKs)
      for (int L : {1, 3}) {
        const int64_t bytes = blocked_sf_bytes(rows, K);
        for (int64_t bs : {bytes, bytes + 512, bytes * 2 + 16}) {
          // A: rows = M; B: rows = N (other extent arbitrary)
          const ScaleLayout la = scale_layout_a(rows, 77, K, L, bs);
          const ScaleLayout lb = scale_layout_b(5, rows, K, L, bs);
          bool ok_a = true, ok_b = true;
          for (int l = 0; l < L; ++l)
            for (int r = 0; r < rows; ++r)
              for (int c = 0; c < K / 16; ++c) {
                const int64_t want = (L > 1 ? l * bs : 0) + blocked_sf_offset(r, c, K);
                // every element of the 16-element block maps to its scale (stride 0)
                for (int e : {0, 15}) {
                  ok_a = ok_a && static_cast<int64_t>(la(r, c * 16 + e, l)) == want;
                  ok_b = ok_b && static_cast<int64_t>(lb(r, c * 16 + e, l)) == want;
                }
              }
          CHECK(ok_a, "SFA layout != blocked_sf_offset for rows=%d K=%d L=%d bs=%lld", rows, K, L, (long long)bs);
          CHECK(ok_b, "SFB layout != blocked_sf_offset for rows=%d K=%d L=%d bs=%lld", rows, K, L, (long long)bs);
          if (bs == bytes) {
            // dense batches: the layout covers exactly the blocked bytes (padding included)
            const int64_t span = cute::cosize(cute::filter_zeros(la));
            CHECK(span == bytes * L, "SFA cosize %lld != %lld (rows=%d K=%d L=%d)", (long long)span,
                  (long long)(bytes * L), rows, K, L);
            // and L == 1 / dense batch stride leaves CUTLASS's layout untouched
            const ScaleLayout ref(ScaleConfig16::tile_atom_to_shape_SFA(cute::make_shape(rows, 77, K, L)));
            CHECK(la == ref, "dense override differs from CUTLASS's layout (rows=%d K=%d L=%d)", rows, K, L);
          }
        }
      }
}

// ---------------------------------------------------------------------------
// 2. Scale preparation
// ---------------------------------------------------------------------------
// Reference: the blocked tensor (dense batches) from a logical scale matrix.
static std::vector<uint8_t> reference_blocked(const std::vector<uint8_t>& logical, int64_t rows, int64_t K,
                                              int64_t L) {
  const int64_t kc = K / 16, bytes = blocked_sf_bytes(rows, K);
  std::vector<uint8_t> out(static_cast<size_t>(bytes * L), 0);
  for (int64_t l = 0; l < L; ++l)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < kc; ++c) out[l * bytes + blocked_sf_offset(r, c, K)] = logical[(l * rows + r) * kc + c];
  return out;
}

// Runs a swizzle job the way swizzle_scales_kernel does (one word at a time).
static std::vector<uint8_t> run_job(const SwizzleJob& job) {
  const BlockedGeometry geo = blocked_geometry(job.rows, job.K);
  std::vector<uint8_t> out(static_cast<size_t>(geo.bytes_per_batch * job.L), 0xAB);
  for (int64_t w = 0; w < geo.words_per_batch * job.L; ++w) {
    const int64_t l = w / geo.words_per_batch;
    const BlockedWord bw = blocked_word(geo, w - l * geo.words_per_batch);
    const uint32_t v = gather_scale_word(job, geo, l, bw);
    memcpy(out.data() + l * geo.bytes_per_batch + bw.word * 4, &v, 4);
  }
  return out;
}

static void test_swizzle(std::mt19937& rng) {
  for (int rows : kRows)
    for (int K : kKs)
      for (int L : {1, 2}) {
        const int64_t kc = K / 16;
        std::vector<uint8_t> logical(static_cast<size_t>(L * rows * kc));
        for (auto& b : logical) b = static_cast<uint8_t>(rng() | 1u);  // non-zero: padding must stay zero
        const std::vector<uint8_t> want = reference_blocked(logical, rows, K, L);

        // linear source with padded rows and batches
        const int64_t rs = kc + 3, bs = rs * rows + 5;
        std::vector<uint8_t> lin(static_cast<size_t>(bs * L), 0x7F);  // 0x7F (NaN) in the gaps: never read
        for (int l = 0; l < L; ++l)
          for (int r = 0; r < rows; ++r)
            for (int c = 0; c < kc; ++c) lin[l * bs + r * rs + c] = logical[(l * rows + r) * kc + c];
        SwizzleJob job;
        job.rows = rows; job.K = K; job.L = L;
        job.src[0] = ScaleSource{lin.data(), NVFP4_SF_LINEAR, rs, bs};
        CHECK(run_job(job) == want, "linear->blocked rows=%d K=%d L=%d", rows, K, L);

        // blocked source with garbage padding and a larger batch stride: copied, padding zeroed
        const int64_t bytes = blocked_sf_bytes(rows, K), bbs = bytes + 64;
        std::vector<uint8_t> blk(static_cast<size_t>(bbs * L), 0x7F);
        for (int l = 0; l < L; ++l) memcpy(blk.data() + l * bbs, want.data() + l * bytes, bytes);
        for (int l = 0; l < L; ++l)  // dirty the column padding
          for (int r = 0; r < rows; ++r)
            for (int64_t c = kc; c < blocked_sf_cols(K); ++c) blk[l * bbs + blocked_sf_offset(r, c, K)] = 0x7F;
        SwizzleJob jb;
        jb.rows = rows; jb.K = K; jb.L = L;
        jb.src[0] = ScaleSource{blk.data(), NVFP4_SF_BLOCKED, 0, bbs};
        CHECK(run_job(jb) == want, "blocked->blocked rows=%d K=%d L=%d", rows, K, L);
      }
}

// The packed MoE sfa: groups of a linear (total_M, K/16) tensor -> blocked per group.
static void test_packed(std::mt19937& rng) {
  const std::vector<std::vector<int32_t>> sizes = {
      {80, 176, 128, 72, 64, 248, 96, 160}, {0, 5, 0, 129, 1}, {300}, {0, 0}, {128, 128, 128}};
  for (const auto& ms : sizes)
    for (int K : {32, 96, 2048}) {
      const int32_t G = static_cast<int32_t>(ms.size());
      std::vector<int32_t> offsets(G + 1, 0);
      for (int g = 0; g < G; ++g) offsets[g + 1] = offsets[g] + ms[g];
      const int64_t total_M = offsets[G], kc = K / 16, tiles_k = blocked_sf_cols(K) / 4;
      std::vector<uint8_t> lin(static_cast<size_t>(std::max<int64_t>(total_M, 1) * (kc + 1)));
      for (auto& b : lin) b = static_cast<uint8_t>(rng() | 1u);
      const ScaleSource src{lin.data(), NVFP4_SF_LINEAR, kc + 1, 0};

      std::vector<int32_t> tile_base(G + 1);
      packed_tile_prefix(offsets.data(), G, total_M, tiles_k, tile_base.data());
      const int64_t bound_words = packed_sfa_tiles_bound(total_M, G) * tiles_k * 128;
      CHECK(static_cast<int64_t>(tile_base[G]) * 128 <= bound_words, "packed bound too small");
      std::vector<uint8_t> dst(static_cast<size_t>(bound_words * 4), 0xAB);
      for (int64_t w = 0; w < bound_words; ++w) {
        uint32_t v;
        if (!packed_sfa_word(src, offsets.data(), tile_base.data(), G, total_M, K, w, &v)) break;
        memcpy(dst.data() + w * 4, &v, 4);
      }
      bool ok = true;
      for (int g = 0; g < G; ++g) {
        std::vector<uint8_t> logical(static_cast<size_t>(ms[g] * kc));
        for (int r = 0; r < ms[g]; ++r)
          for (int c = 0; c < kc; ++c) logical[r * kc + c] = lin[(offsets[g] + r) * (kc + 1) + c];
        const std::vector<uint8_t> want = reference_blocked(logical, ms[g], K, 1);
        CHECK(static_cast<int64_t>(tile_base[g + 1] - tile_base[g]) * 512 == static_cast<int64_t>(want.size()),
              "group %d tile count", g);
        ok = ok && memcmp(dst.data() + static_cast<int64_t>(tile_base[g]) * 512, want.data(), want.size()) == 0;
      }
      CHECK(ok, "packed sfa groups G=%d K=%d", G, K);
    }
  // Malformed device offsets are clamped into [0, total_M]: no out-of-range row.
  const int32_t bad[] = {-5, 10, 3, 1000};
  CHECK(group_rows(bad, 0, 20) == 10 && group_rows(bad, 1, 20) == 0 && group_rows(bad, 2, 20) == 17,
        "offset clamping");
  int32_t tb[4];
  packed_tile_prefix(bad, 3, 20, 2, tb);
  CHECK(tb[0] == 0 && tb[1] == 2 && tb[2] == 2 && tb[3] == 4, "clamped tile prefix");
  CHECK(group_of_tile(tb, 3, 0) == 0 && group_of_tile(tb, 3, 2) == 2 && group_of_tile(tb, 3, 3) == 2,
        "group_of_tile skips empty groups");
}

// ---------------------------------------------------------------------------
// 3. Workspace carving and support checks
// ---------------------------------------------------------------------------
struct Region {
  uintptr_t lo, hi;
};
static bool regions_ok(uintptr_t base, size_t bytes, std::vector<Region> rs) {
  rs.erase(std::remove_if(rs.begin(), rs.end(), [](const Region& r) { return r.lo == 0; }), rs.end());
  std::sort(rs.begin(), rs.end(), [](const Region& a, const Region& b) { return a.lo < b.lo; });
  for (size_t i = 0; i < rs.size(); ++i) {
    if (rs[i].lo % kRegionAlign || rs[i].lo < base || rs[i].hi > base + bytes) return false;
    if (i && rs[i].lo < rs[i - 1].hi) return false;
  }
  return true;
}

static GemmProblem make_gemm(int64_t M, int64_t N, int64_t K, int64_t L, nvfp4_sf_layout_t layout) {
  GemmProblem p;
  p.L = L; p.M = M; p.N = N; p.K = K;
  p.a = Fp4Operand{reinterpret_cast<const uint8_t*>(0x10000), K / 2, M * K / 2};
  p.b = Fp4Operand{reinterpret_cast<const uint8_t*>(0x20000), K / 2, N * K / 2};
  p.sfa = ScaleOperand{reinterpret_cast<const uint8_t*>(0x30000), layout, K / 16, blocked_sf_bytes(M, K)};
  p.sfb = ScaleOperand{reinterpret_cast<const uint8_t*>(0x40000), layout, K / 16, blocked_sf_bytes(N, K)};
  p.c = OutOperand{reinterpret_cast<void*>(0x50000), DType::kFloat16, N, 1, M * N};
  return p;
}

static void test_workspace() {
  const uintptr_t bases[] = {0x100000, 0x100010, 0x1000F0, 0x100100};
  for (uintptr_t base : bases)
    for (int M : {1, 129, 300})
      for (int N : {8, 264})
        for (int K : {96, 128})
          for (int L : {1, 3})
            for (nvfp4_sf_layout_t layout : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED})
              for (size_t cutlass_bytes : {size_t(0), size_t(1000)}) {
                const GemmProblem p = make_gemm(M, N, K, L, layout);
                const GemmWorkspace need = carve_gemm_workspace(nullptr, p, cutlass_bytes);
                const GemmWorkspace w = carve_gemm_workspace(reinterpret_cast<void*>(base), p, cutlass_bytes);
                auto at = [](void* q, size_t n) {
                  return Region{reinterpret_cast<uintptr_t>(q), reinterpret_cast<uintptr_t>(q) + n};
                };
                // linear scales, and blocked ones with K % 64 != 0 (padding zeroed), are copied
                const bool copied = layout == NVFP4_SF_LINEAR || K % 64 != 0;
                CHECK(scales_copied(layout, K) == copied, "scales_copied");
                const size_t sfa = copied ? blocked_bytes(M, K) * L : 0;
                const size_t sfb = copied ? blocked_bytes(N, K) * L : 0;
                CHECK((w.sfa != nullptr) == (sfa > 0) && (w.sfb != nullptr) == (sfb > 0), "gemm regions present");
                CHECK(regions_ok(base, need.required,
                                 {at(w.sfa, sfa), at(w.sfb, sfb), at(w.cutlass, cutlass_bytes)}),
                      "gemm workspace regions base=%#lx M=%d N=%d K=%d L=%d", (unsigned long)base, M, N, K, L);
                CHECK(need.required == 0 || need.required >= sfa + sfb + cutlass_bytes, "gemm size");
                CHECK((sfa + sfb + cutlass_bytes == 0) == (need.required == 0), "no workspace when nothing is needed");

                DualGemmProblem d;
                d.L = L; d.M = M; d.N = N; d.K = K;
                d.sfa.layout = d.sfb1.layout = d.sfb2.layout = layout;
                const DualWorkspace dn = carve_dual_workspace(nullptr, d);
                const DualWorkspace dw = carve_dual_workspace(reinterpret_cast<void*>(base), d);
                CHECK((dw.sfa != nullptr) == copied && (dw.sfb1 != nullptr) == copied &&
                          (dw.sfb2 != nullptr) == copied,
                      "dual scale copies");
                CHECK(regions_ok(base, dn.required, {at(dw.sfa, sfa), at(dw.sfb1, sfb), at(dw.sfb2, sfb)}),
                      "dual workspace regions");
                // only the scale copies: nothing at all for blocked scales with K % 64 == 0
                CHECK((dn.required == 0) == !copied && (!copied || dn.required >= sfa + 2 * sfb), "dual size");
              }

  // grouped list / packed
  const GroupTableSizes ts{12, 16, 16, 16, 40, 40};
  std::vector<GemmProblem> groups = {make_gemm(80, 4096, 7168, 1, NVFP4_SF_LINEAR),
                                     make_gemm(1, 8, 32, 1, NVFP4_SF_LINEAR),
                                     make_gemm(300, 264, 96, 1, NVFP4_SF_LINEAR)};
  GroupedGemmProblem gp;
  gp.count = 3;
  gp.groups = groups.data();
  for (uintptr_t base : bases) {
    const GroupedWorkspace n = carve_grouped_workspace(nullptr, gp, ts, 4096);
    const GroupedWorkspace w = carve_grouped_workspace(reinterpret_cast<void*>(base), gp, ts, 4096);
    size_t scales = 0;
    for (const auto& g : groups) scales += grouped_scale_bytes(g);
    CHECK(w.scales_bytes == scales, "grouped scale bytes");
    const uintptr_t s = reinterpret_cast<uintptr_t>(w.scales);
    CHECK(regions_ok(base, n.required,
                     {{reinterpret_cast<uintptr_t>(w.tables.problem_shapes), reinterpret_cast<uintptr_t>(w.tables.problem_shapes) + 36},
                      {reinterpret_cast<uintptr_t>(w.tables.alpha_ptr), reinterpret_cast<uintptr_t>(w.tables.alpha_ptr) + 24},
                      {s, s + scales},
                      {reinterpret_cast<uintptr_t>(w.cutlass), reinterpret_cast<uintptr_t>(w.cutlass) + 4096}}),
          "grouped workspace regions");

    PackedGroupedGemmProblem pp;
    pp.G = 8; pp.total_M = 1016; pp.N = 4096; pp.K = 7168;
    const PackedWorkspace pn = carve_packed_workspace(nullptr, pp, ts, 4096);
    const PackedWorkspace pw = carve_packed_workspace(reinterpret_cast<void*>(base), pp, ts, 4096);
    const size_t sfa = static_cast<size_t>(packed_sfa_tiles_bound(1016, 8) * (blocked_sf_cols(7168) / 4) * 512);
    auto r = [](void* q, size_t n) { return Region{reinterpret_cast<uintptr_t>(q), reinterpret_cast<uintptr_t>(q) + n}; };
    CHECK(regions_ok(base, pn.required,
                     {r(pw.tables.layout_sfb, 40 * 8), r(pw.sfa_tile_base, 36), r(pw.sfa, sfa),
                      r(pw.sfb, blocked_bytes(4096, 7168) * 8), r(pw.cutlass, 4096)}),
          "packed workspace regions");
  }

  // support checks (NOT_SUPPORTED before touching memory)
  GemmProblem ok = make_gemm(128, 7168, 16384, 1, NVFP4_SF_BLOCKED);
  CHECK(gemm_unsupported(ok) == nullptr, "benchmark gemm shape supported: %s", gemm_unsupported(ok));
  GemmProblem bad = ok;
  bad.N = 7;
  CHECK(gemm_unsupported(bad) != nullptr, "N %% 8 != 0 rejected");
  bad = ok;
  bad.a.data += 8;
  CHECK(gemm_unsupported(bad) != nullptr, "misaligned a rejected");
  bad = ok;
  bad.a.row_stride = 8200;
  CHECK(gemm_unsupported(bad) != nullptr, "a row stride %% 16 rejected");
  bad = ok;
  bad.c.dtype = DType::kBFloat16;
  CHECK(gemm_unsupported(bad) == nullptr, "bf16 gemm output written natively (Store16Node)");
  bad.c.dtype = DType::kFloat32;
  bad.c.row_stride = 7168;
  CHECK(gemm_unsupported(bad) != nullptr, "fp32 gemm output left to the portable backend");
  bad = ok;
  bad.c.col_stride = 2;
  CHECK(gemm_unsupported(bad) != nullptr, "column-strided output rejected");
  bad = ok;
  bad.sfa.data += 4;
  CHECK(gemm_unsupported(bad) != nullptr, "blocked scales used by TMA must be 16-byte aligned");
  GemmProblem odd = make_gemm(128, 7168, 16384 + 32, 1, NVFP4_SF_BLOCKED);  // K % 64 == 32: copied
  odd.sfa.data += 4;
  CHECK(gemm_unsupported(odd) == nullptr, "copied blocked scales need 4-byte alignment only");
  odd.sfa.data += 2;
  CHECK(gemm_unsupported(odd) != nullptr, "copied blocked scales read as words");
  GemmProblem lin = make_gemm(128, 7168, 16384, 1, NVFP4_SF_LINEAR);
  lin.sfa.data += 3;  // linear scales are copied byte-wise: any alignment
  CHECK(gemm_unsupported(lin) == nullptr, "linear scales at any alignment");

  CHECK(choose_gemm_config(128, 7168, 1, 148) == GemmConfig::k1SmStreamK, "small M -> stream-K");
  CHECK(choose_gemm_config(4096, 4096, 1, 148) == GemmConfig::k2SmPersistent, "large -> 2-SM");
  CHECK(choose_gemm_config(256, 1024, 1, 148) == GemmConfig::k1SmStreamK, "few 2-SM tiles -> stream-K");

  GemmProblem gv = make_gemm(7168, 1, 16384, 1, NVFP4_SF_LINEAR);
  CHECK(gemv_unsupported(gv) == nullptr, "gemv supported");
  gv.sfa.row_stride = 1023;
  CHECK(gemv_unsupported(gv) != nullptr, "gemv odd scale stride rejected");
}

// ---------------------------------------------------------------------------
// 4. Dual GEMM kernel arguments
// ---------------------------------------------------------------------------
static DualGemmProblem make_dual(int64_t M, int64_t N, int64_t K, int64_t L, nvfp4_sf_layout_t layout) {
  const GemmProblem g = make_gemm(M, N, K, L, layout);
  DualGemmProblem d;
  d.L = L; d.M = M; d.N = N; d.K = K;
  d.a = g.a;
  d.sfa = g.sfa;
  d.b1 = g.b;
  d.sfb1 = g.sfb;
  d.b2 = Fp4Operand{reinterpret_cast<const uint8_t*>(0x60000), K / 2, N * K / 2};
  d.sfb2 = ScaleOperand{reinterpret_cast<const uint8_t*>(0x70000), layout, K / 16, blocked_sf_bytes(N, K)};
  d.c = g.c;
  return d;
}

static DualGemmArgs dual_args_of(int M, int N, int K, int L, int64_t pad) {
  // operands with padded rows / batches (bytes), scales with padded batches
  DualGemmArgs g;
  g.M = M; g.N = N; g.K = K; g.L = L;
  g.a = reinterpret_cast<const void*>(0x100000);
  g.a_row = K / 2 + pad; g.a_batch = g.a_row * M + 2 * pad;
  g.b1 = reinterpret_cast<const void*>(0x200000);
  g.b1_row = K / 2 + 2 * pad; g.b1_batch = g.b1_row * N + pad;
  g.b2 = reinterpret_cast<const void*>(0x300000);
  g.b2_row = K / 2; g.b2_batch = g.b2_row * N + 4 * pad;
  g.sfa = reinterpret_cast<const void*>(0x400000);
  g.sfa_batch = blocked_sf_bytes(M, K) + 32 * pad;
  g.sfb1 = reinterpret_cast<const void*>(0x500000);
  g.sfb1_batch = blocked_sf_bytes(N, K) + 16 * pad;
  g.sfb2 = reinterpret_cast<const void*>(0x600000);
  g.sfb2_batch = blocked_sf_bytes(N, K);
  return g;
}

static void test_dual_args() {
  using dual::Config;
  // per stage: A, B1, B2 (128 x 256 fp4 = 16 KiB each) and SFA, SFB1, SFB2 (128 x 16 = 2 KiB each)
  CHECK(Config::kStageTxBytes == 3 * 16384 + 3 * 2048, "stage TMA bytes %u", Config::kStageTxBytes);
  CHECK(sizeof(dual::SharedStorage) <= 232448 &&
            sizeof(dual::SharedStorage) >= Config::kStages * Config::kStageTxBytes + 128 * 32 * 2,
        "dual shared memory %zu", sizeof(dual::SharedStorage));
  // the classic 4 KiB kernel-parameter limit (TMA descriptors are passed by value)
  CHECK(sizeof(dual::Params) <= 4096, "dual kernel parameters %zu bytes", sizeof(dual::Params));

  for (int M : {1, 129, 300})
    for (int N : {8, 264})
      for (int K : {32, 96, 1056})
        for (int L : {1, 3})
          for (int64_t pad : {0, 16}) {
            const DualGemmArgs g = dual_args_of(M, N, K, L, pad);
            for (int which : {1, 2}) {
              const auto a = dual::mainloop_args(g, which, false);
              const int64_t b_row = which == 1 ? g.b1_row : g.b2_row;
              const int64_t b_batch = which == 1 ? g.b1_batch : g.b2_batch;
              const int64_t sfb_batch = which == 1 ? g.sfb1_batch : g.sfb2_batch;
              // fp4 strides in elements (2 per byte); L == 1: packed batch stride
              CHECK(cute::get<0>(a.dA) == g.a_row * 2 && cute::get<2>(a.dA) == (L > 1 ? g.a_batch : g.a_row * M) * 2,
                    "dual A strides M=%d K=%d L=%d", M, K, L);
              CHECK(cute::get<0>(a.dB) == b_row * 2 && cute::get<2>(a.dB) == (L > 1 ? b_batch : b_row * N) * 2,
                    "dual B%d strides N=%d K=%d L=%d", which, N, K, L);
              CHECK(a.ptr_B == reinterpret_cast<decltype(a.ptr_B)>(which == 1 ? g.b1 : g.b2) &&
                        a.ptr_SFB == reinterpret_cast<decltype(a.ptr_SFB)>(which == 1 ? g.sfb1 : g.sfb2) &&
                        a.ptr_A == reinterpret_cast<decltype(a.ptr_A)>(g.a),
                    "dual operand pointers");
              // scale layouts: the blocked layout with the caller's batch stride (checked
              // against blocked_sf_offset in test_cutlass_layout)
              CHECK(a.layout_SFA == scale_layout_a(M, N, K, L, g.sfa_batch) &&
                        a.layout_SFB == scale_layout_b(M, N, K, L, sfb_batch),
                    "dual scale layouts");
              const auto ref = dual::mainloop_args(g, which, true);
              CHECK(ref.layout_SFA == ScaleLayout(ScaleConfig16::tile_atom_to_shape_SFA(cute::make_shape(M, N, K, L))),
                    "dual reference layout");
            }
            CHECK(dual::check_args(g) == nullptr, "dual args accepted M=%d N=%d K=%d L=%d pad=%lld: %s", M, N, K, L,
                  (long long)pad, dual::check_args(g));
          }
  // CUTLASS's can_implement rejects what TMA cannot address
  DualGemmArgs bad = dual_args_of(128, 256, 1024, 1, 0);
  bad.b2_row += 8;  // not a multiple of 16 bytes
  CHECK(dual::check_args(bad) != nullptr, "dual: misaligned b2 row stride rejected");
  bad = dual_args_of(128, 256, 1024, 2, 0);
  bad.sfb2_batch += 4;
  CHECK(dual::check_args(bad) != nullptr, "dual: scale batch stride %% 16 rejected");

  // support checks (plan.hpp)
  const DualGemmProblem ok = make_dual(256, 4096, 7168, 1, NVFP4_SF_LINEAR);
  CHECK(dual_unsupported(ok) == nullptr, "dual benchmark shape supported: %s", dual_unsupported(ok));
  DualGemmProblem d = ok;
  d.b2.data += 8;
  CHECK(dual_unsupported(d) != nullptr, "dual: misaligned b2 rejected");
  d = ok;
  d.b1.row_stride += 8;
  CHECK(dual_unsupported(d) != nullptr, "dual: b1 row stride %% 16 rejected");
  d = ok;
  d.sfb2.layout = NVFP4_SF_BLOCKED;
  CHECK(dual_unsupported(d) != nullptr, "dual: mixed scale layouts rejected");
  d = make_dual(256, 4096, 7168, 1, NVFP4_SF_BLOCKED);
  CHECK(dual_unsupported(d) == nullptr, "dual: blocked scales read in place");
  d.sfb1.data += 4;
  CHECK(dual_unsupported(d) != nullptr, "dual: blocked scales read by TMA must be 16-byte aligned");
  d = ok;
  d.N = 4100;
  CHECK(dual_unsupported(d) != nullptr, "dual: N %% 8 != 0 rejected");
  d = ok;
  d.c.dtype = DType::kFloat32;
  CHECK(dual_unsupported(d) != nullptr, "dual: fp32 output left to the portable backend");
  d = ok;
  d.L = 70000;
  CHECK(dual_unsupported(d) != nullptr, "dual: batch above the grid's y limit rejected");
}

int main() {
  std::mt19937 rng(12345);
  test_cutlass_layout();
  test_swizzle(rng);
  test_packed(rng);
  test_workspace();
  test_dual_args();
  return check_summary();
}
