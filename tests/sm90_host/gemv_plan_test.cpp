// CPU unit test of the sm90a GEMV's host-side plan (cpp/src/sm90/gemv/plan.hpp): no GPU,
// no CUDA; compiled with the host C++ compiler by tests/test_sm90_plans.py.
//
// Checks:
//  1. support checks (N, K, output dtype, empty problems);
//  2. the alignment classification (16-byte loads; the MMA kernel's 16-byte scale pieces);
//  3. the register kernel's shapes and their choice (a CTA for every SM);
//  4. the kernel choice on the shapes whose measurements set the rule;
//  5. the MMA kernel's occupancy model (CTAs per SM by threads, registers, shared memory;
//     the grid score) with the device numbers of an H100 / H200 and the registers of the
//     built kernels;
//  6. the MMA shape choice and the even-spread cap on the benchmark shapes, as recorded
//     in bench/NOTES.md "GEMV (sm90a)";
//  7. invariants of every automatic launch over a grid of problems and devices;
//  8. the shared-memory geometry and the kernel parameters built from a problem;
//  9. the decode-regime GEMM's plan (decode_plan.hpp): support, token groups, token tile,
//     launch shape on the target shapes and invariants over a grid of problems.
// Prints "N passed, N failed".
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "sm90/gemv/decode_plan.hpp"
#include "sm90/gemv/plan.hpp"

using namespace nvfp4;
using namespace nvfp4::sm90::gemv_detail;

#include "../host_check.hpp"
#include "h100_clusters.hpp"

// Device numbers of an H100 SXM / H200 (132 SMs, 228 KB of shared memory per SM, 227 KB
// per block with opt-in, 64K registers) and the MMA kernel's resources as built by CUDA 13
// for sm_90a (cuobjdump -res-usage: 119 registers with blocked scales, 121 with linear
// ones; 2048 bytes of static shared memory: s_red and s_cred).
constexpr int kSms = 132;
static MmaKernelInfo h100_info(int regs) {
  MmaKernelInfo i;
  i.regs = regs;
  i.smem_per_sm = 233472;
  i.regs_per_sm = 65536;
  i.static_smem = 2048;
  i.max_smem_block = 232448 - i.static_smem;
  return i;
}

alignas(256) static uint8_t g_buf[4096];
// A dense, aligned gemm problem: M tokens x N weight rows x K, fp16 out.
static GemmProblem dense_problem(int64_t M, int64_t N, int64_t K, int64_t L, nvfp4_sf_layout_t layout) {
  GemmProblem p;
  p.M = M;
  p.N = N;
  p.K = K;
  p.L = L;
  p.a.data = g_buf;
  p.a.row_stride = K / 2;
  p.a.batch_stride = M * (K / 2);
  p.b.data = g_buf + 1024;
  p.b.row_stride = K / 2;
  p.b.batch_stride = N * (K / 2);
  p.sfa.data = g_buf + 2048;
  p.sfa.layout = layout;
  p.sfa.row_stride = K / 16;
  p.sfa.batch_stride = layout == NVFP4_SF_BLOCKED ? blocked_sf_bytes(M, K) : M * (K / 16);
  p.sfb.data = g_buf + 3072;
  p.sfb.layout = layout;
  p.sfb.row_stride = K / 16;
  p.sfb.batch_stride = layout == NVFP4_SF_BLOCKED ? blocked_sf_bytes(N, K) : N * (K / 16);
  p.alpha.value = 0.5f;
  p.c.data = g_buf;
  p.c.dtype = DType::kFloat16;
  p.c.row_stride = N;
  p.c.col_stride = 1;
  p.c.batch_stride = M * N;
  return p;
}
// The GEMV case: one b row per batch.
static GemmProblem make_problem(int64_t M, int64_t K, int64_t L, nvfp4_sf_layout_t layout = NVFP4_SF_BLOCKED) {
  return dense_problem(M, 1, K, L, layout);
}

// The automatic plan as gemv.cu runs it: kernel choice, then the MMA shape and launch.
struct Auto {
  GemvConfig cfg;
  GemvAlignment al;
  MmaShape shape;
  MmaLaunch mma;
  RegLaunch reg;
  bool is_mma;
};
static Auto plan(const GemmProblem& p, int sms, const MmaKernelInfo& info) {
  Auto a;
  a.cfg = choose_gemv(p, sms);
  a.al = gemv_alignment(p);
  a.is_mma = a.cfg.kernel == GemvKernel::kMma && a.al.mma_ok;
  const int nchunks = static_cast<int>(p.K / 32);
  const int64_t tasks = (p.M + 127) / 128 * 8;
  if (a.is_mma) {
    a.shape = choose_mma_shape(info, nchunks, tasks, p.L, sms);
    a.mma = mma_launch(info, a.shape, nchunks, tasks, p.L, sms, a.cfg.even_spread);
  } else {
    a.reg = reg_launch(a.cfg.reg_shape, p.M, p.L, std::min(nchunks, kRegTileChunks));
  }
  return a;
}

// ---------------------------------------------------------------------------
// 1. support
// ---------------------------------------------------------------------------
static void test_support() {
  GemmProblem p = make_problem(256, 1024, 2);
  CHECK(gemv_unsupported(p) == nullptr, "plain problem refused");
  p.N = 2;
  CHECK(gemv_unsupported(p) != nullptr, "N = 2 taken");
  p = make_problem(256, 1024, 2);
  for (int64_t K : {0LL, 16LL, 48LL, 1000LL, -32LL}) {
    p.K = K;
    CHECK(gemv_unsupported(p) != nullptr, "K = %lld taken", (long long)K);
  }
  p.K = 32;
  CHECK(gemv_unsupported(p) == nullptr, "K = 32 refused");
  p.K = 32LL * 0x80000000LL;  // K / 32 above 2^31 - 1
  CHECK(gemv_unsupported(p) != nullptr, "K / 32 above 2^31 taken");
  p = make_problem(256, 1024, 2);
  for (DType d : {DType::kFloat16, DType::kBFloat16, DType::kFloat32}) {
    p.c.dtype = d;
    CHECK(gemv_unsupported(p) == nullptr, "dtype %d refused", static_cast<int>(d));
  }
  p.c.dtype = static_cast<DType>(99);
  CHECK(gemv_unsupported(p) != nullptr, "unknown dtype taken");
  // empty problems are taken (nothing to launch), even with a K the kernels cannot run
  p = make_problem(0, 1000, 1);
  CHECK(gemv_unsupported(p) == nullptr, "M = 0 refused");
  p = make_problem(16, 1000, 1);
  p.L = 0;
  CHECK(gemv_unsupported(p) == nullptr, "L = 0 refused");
}

// ---------------------------------------------------------------------------
// 2. alignment
// ---------------------------------------------------------------------------
static void test_alignment() {
  for (nvfp4_sf_layout_t layout : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED}) {
    const bool blocked = layout == NVFP4_SF_BLOCKED;
    GemmProblem p = make_problem(256, 1024, 3, layout);
    GemvAlignment a = gemv_alignment(p);
    CHECK(a.aligned && a.mma_ok, "dense problem not aligned (layout %d)", layout);

    p = make_problem(256, 1024, 3, layout);
    p.a.row_stride += 16;  // padded rows stay aligned
    p.a.batch_stride = p.M * p.a.row_stride;
    a = gemv_alignment(p);
    CHECK(a.aligned && a.mma_ok, "16-byte padded rows not aligned");

    p = make_problem(256, 1024, 3, layout);
    p.a.data = g_buf + 8;
    a = gemv_alignment(p);
    CHECK(!a.aligned && !a.mma_ok, "a base at 8 bytes taken as aligned");

    p = make_problem(256, 1024, 3, layout);
    p.a.row_stride += 8;
    a = gemv_alignment(p);
    CHECK(!a.aligned, "a row stride %% 16 != 0 taken as aligned");
    p.M = 1;  // a single row has no row stride to speak of
    p.a.batch_stride = 1024;
    CHECK(gemv_alignment(p).aligned, "one-row a with odd row stride not aligned");

    p = make_problem(256, 1024, 3, layout);
    p.b.batch_stride += 8;
    CHECK(!gemv_alignment(p).aligned, "b batch stride %% 16 != 0 taken as aligned");
    p.L = 1;  // one batch: the batch stride does not matter
    CHECK(gemv_alignment(p).aligned, "L = 1 with odd b batch stride not aligned");

    p = make_problem(256, 1024, 3, layout);
    p.sfb.data = g_buf + 3073;
    CHECK(!gemv_alignment(p).aligned, "odd sfb base taken as aligned");

    p = make_problem(256, 1024, 3, layout);
    p.sfa.data = g_buf + 2050;  // 2-byte aligned: the register kernel's pairs, not the MMA kernel's pieces
    a = gemv_alignment(p);
    CHECK(a.aligned && !a.mma_ok, "sfa at 2 bytes: aligned %d mma_ok %d", a.aligned, a.mma_ok);

    p = make_problem(256, 1024, 3, layout);
    p.sfa.row_stride += 1;  // odd linear row stride; a blocked layout has none
    a = gemv_alignment(p);
    CHECK(a.aligned == blocked && a.mma_ok == blocked, "odd sfa row stride, layout %d: %d %d", layout, a.aligned,
          a.mma_ok);

    p = make_problem(256, 1024, 3, layout);
    p.sfa.batch_stride += 2;
    a = gemv_alignment(p);
    CHECK(a.aligned && !a.mma_ok, "sfa batch stride %% 16 == 2: %d %d", a.aligned, a.mma_ok);

    // linear scales: the MMA kernel's 16-byte pieces of a row need K % 256 == 0
    for (int64_t K : {224LL, 256LL, 288LL, 2048LL, 2080LL}) {
      p = make_problem(256, K, 3, layout);
      a = gemv_alignment(p);
      const bool want = blocked || K % 256 == 0;
      CHECK(a.mma_ok == want, "K = %lld layout %d: mma_ok %d", (long long)K, layout, a.mma_ok);
    }
  }
}

// ---------------------------------------------------------------------------
// 3. register kernel shapes
// ---------------------------------------------------------------------------
static void test_reg_shapes() {
  CHECK(kNumRegShapes == 4, "%d shapes", kNumRegShapes);
  const int64_t want_rows[] = {32, 8, 2, 1};
  for (int s = 0; s < kNumRegShapes; ++s) {
    CHECK(reg_rows_per_cta(s) == want_rows[s], "shape %d: %lld rows per CTA", s, (long long)reg_rows_per_cta(s));
    CHECK(kRegWarps % kRegShapes[s].WK == 0, "shape %d: WK %d", s, kRegShapes[s].WK);
  }
  CHECK(choose_reg_shape(7168, 1, kSms) == 0, "7168 rows: 224 CTAs of 32 rows");
  CHECK(choose_reg_shape(2048, 1, kSms) == 1, "2048 rows: 64 CTAs of 32 < 132, 256 of 8");
  CHECK(choose_reg_shape(64, 8, kSms) == 2, "64x8: 16, 64, 256 CTAs");
  CHECK(choose_reg_shape(1, 1, kSms) == 3, "one row: 1 CTA, K split 8 ways");
  CHECK(choose_reg_shape(132, 1, kSms) == 3, "132 rows: 132 CTAs of 1 row");
  CHECK(choose_reg_shape(264, 1, kSms) == 2, "264 rows: 132 CTAs of 2 rows");
  // the rule: the first shape with a CTA for every SM, else the last
  for (int sms : {1, 16, 78, 114, 132})
    for (int64_t M : {1LL, 5LL, 31LL, 100LL, 129LL, 1000LL, 4096LL, 100000LL})
      for (int64_t L : {1LL, 3LL, 64LL}) {
        const int s = choose_reg_shape(M, L, sms);
        int want = kNumRegShapes - 1;
        for (int t = 0; t < kNumRegShapes; ++t)
          if ((M + reg_rows_per_cta(t) - 1) / reg_rows_per_cta(t) * L >= sms) {
            want = t;
            break;
          }
        CHECK(s == want, "M %lld L %lld sms %d: shape %d, want %d", (long long)M, (long long)L, sms, s, want);
      }
  // grid and shared memory of a launch
  const RegLaunch r = reg_launch(0, 7168, 4, 512);
  CHECK(r.unsupported == nullptr && r.groups_per_batch == 224 && r.ctas == 896 && r.smem == 512u * 72u,
        "7168x4 shape 0: %lld groups %lld CTAs %zu bytes", (long long)r.groups_per_batch, (long long)r.ctas, r.smem);
  CHECK(reg_launch(3, 1, 1, 64).ctas == 1, "one row, one CTA");
  CHECK(reg_launch(3, 0x10000, 0x10000, 512).unsupported != nullptr, "2^32 CTAs taken");
}

// ---------------------------------------------------------------------------
// 4. kernel choice (bench/NOTES.md "GEMV (sm90a)": the MMA kernel wins from M*L >= 4096,
//    and from 1024 where the register kernel splits K 4 or 8 ways)
// ---------------------------------------------------------------------------
static void test_kernel_choice() {
  struct Case {
    int64_t M, K, L;
    bool mma;
  } cases[] = {
      {7168, 16384, 1, true},  {4096, 7168, 8, true}, {7168, 2048, 4, true}, {1024, 4096, 4, true},
      {1024, 16384, 1, true},  {512, 4096, 2, true},  {256, 7168, 4, true},  {2048, 7168, 1, false},  // reg shape 1
      {127, 16384, 64, false},  // M < 128 per batch
      {64, 16384, 8, false},   {1, 4096, 1, false},   {32, 7168, 4, false},  {128, 16384, 1, false},
      {128, 4096, 32, true},   {128, 4096, 8, true},  // 1024 rows, register kernel would split K 4 ways
  };
  for (const Case& c : cases)
    for (nvfp4_sf_layout_t layout : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED}) {
      const GemmProblem p = make_problem(c.M, c.K, c.L, layout);
      const GemvConfig cfg = choose_gemv(p, kSms);
      CHECK((cfg.kernel == GemvKernel::kMma) == c.mma, "%lldx%lldx%lld layout %d: kernel %d", (long long)c.M,
            (long long)c.K, (long long)c.L, layout, static_cast<int>(cfg.kernel));
      CHECK(cfg.reg_shape == choose_reg_shape(c.M, c.L, kSms), "reg shape");
      CHECK(cfg.pdl == 2 && cfg.prefetch_stages == 0 && cfg.even_spread, "defaults");
      CHECK(cfg.mma.ks == 0 && cfg.mma.wt == 0 && cfg.mma.kc == 0, "MMA shape left to choose_mma_shape");
    }
  // misaligned operands never take the MMA kernel
  GemmProblem p = make_problem(7168, 16384, 1);
  p.sfa.data = g_buf + 2050;
  CHECK(choose_gemv(p, kSms).kernel == GemvKernel::kReg, "sfa not 16-byte aligned: MMA kernel chosen");
  p = make_problem(7168, 16384, 1);
  p.a.data = g_buf + 1;
  CHECK(choose_gemv(p, kSms).kernel == GemvKernel::kReg, "a misaligned: MMA kernel chosen");
  p = make_problem(4096, 7168 + 32, 8, NVFP4_SF_LINEAR);  // K % 256 != 0 with linear scales
  CHECK(choose_gemv(p, kSms).kernel == GemvKernel::kReg, "linear K %% 256 != 0: MMA kernel chosen");
}

// ---------------------------------------------------------------------------
// 5. occupancy model
// ---------------------------------------------------------------------------
static void test_occupancy() {
  const MmaKernelInfo info = h100_info(119);
  // registers: 119 -> 3840 per warp (allocation unit 256): 8 warps -> 2 CTAs, 2 warps -> 8
  CHECK(mma_ctas_per_sm(info, 8, 1024) == 2, "8 warps: %d", mma_ctas_per_sm(info, 8, 1024));
  CHECK(mma_ctas_per_sm(info, 4, 1024) == 4, "4 warps: %d", mma_ctas_per_sm(info, 4, 1024));
  CHECK(mma_ctas_per_sm(info, 2, 1024) == 8, "2 warps: %d", mma_ctas_per_sm(info, 2, 1024));
  // threads: 2048 per SM, with few registers
  CHECK(mma_ctas_per_sm(h100_info(32), 8, 1024) == 8, "8 warps at 32 registers: threads bound");
  CHECK(mma_ctas_per_sm(h100_info(32), 2, 1024) == 32, "2 warps at 32 registers: 32 CTAs at most");
  // shared memory: (smem + static + 1 KB reserved) per CTA
  CHECK(mma_ctas_per_sm(info, 2, 233472 / 3 - 3072) == 3, "three CTAs' worth of smem");
  CHECK(mma_ctas_per_sm(info, 2, 233472 / 3 - 3071) == 2, "one byte more");
  CHECK(mma_ctas_per_sm(info, 2, static_cast<size_t>(info.max_smem_block) + 1) == 0, "above the opt-in limit");
  CHECK(mma_ctas_per_sm(info, 2, static_cast<size_t>(info.max_smem_block)) == 1, "at the opt-in limit");

  // grid score: balance of the last wave x residency (saturating at 12 warps per SM)
  CHECK(mma_grid_score(264, 132, 2, 8) == 1.0, "two full CTAs per SM");
  CHECK(std::fabs(mma_grid_score(224, 132, 2, 8) - 224.0 / 264.0) < 1e-12, "224 of 264 slots");
  CHECK(std::fabs(mma_grid_score(132, 132, 2, 4) - 4.0 / 12.0) < 1e-12, "4 warps per SM: residency 1/3");
  CHECK(std::fabs(mma_grid_score(396, 132, 2, 8) - 0.75) < 1e-12, "1.5 waves: balance 0.75");
  CHECK(mma_grid_score(528, 132, 2, 8) == 1.0, "two full waves");
}

// ---------------------------------------------------------------------------
// 6. MMA shape choice on the measured shapes (H100 / H200 numbers)
// ---------------------------------------------------------------------------
static void test_mma_shapes() {
  struct Case {
    int64_t M, K, L;
    int ks, wt, kc;
    int64_t ctas;
    int per_sm_launch;  // CTAs per SM at the launch's shared memory (even-spread cap)
  } cases[] = {
      // 448 tasks: KS 4 x Wt 2, 224 CTAs of 8 warps (2 per SM)
      {7168, 16384, 1, 4, 2, 1, 224, 2},
      {4096, 7168, 8, 1, 8, 1, 256, 2},
      // 896 CTAs of 2 warps: 8 fit per SM, 6.79 needed -> capped at 7
      {7168, 2048, 4, 1, 2, 1, 896, 7},
      // few rows, long K: the cluster split (KC 2, >= 6 stages per CTA)
      {1024, 16384, 1, 8, 1, 2, 128, 1},
      {256, 7168, 4, 4, 1, 2, 128, 1},
      // 4 stages per CTA with KC 2: no cluster split
      {512, 4096, 2, 4, 1, 1, 64, 1},
  };
  for (const Case& c : cases)
    for (nvfp4_sf_layout_t layout : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED}) {
      const MmaKernelInfo info = h100_info(layout == NVFP4_SF_BLOCKED ? 119 : 121);
      const Auto a = plan(make_problem(c.M, c.K, c.L, layout), kSms, info);
      CHECK(a.is_mma, "%lldx%lldx%lld not on the MMA kernel", (long long)c.M, (long long)c.K, (long long)c.L);
      CHECK(a.shape.ks == c.ks && a.shape.wt == c.wt && a.shape.kc == c.kc, "%lldx%lldx%lld layout %d: KS %d Wt %d KC %d",
            (long long)c.M, (long long)c.K, (long long)c.L, layout, a.shape.ks, a.shape.wt, a.shape.kc);
      CHECK(a.mma.unsupported == nullptr && a.mma.ctas == c.ctas, "%lldx%lldx%lld: %lld CTAs", (long long)c.M,
            (long long)c.K, (long long)c.L, (long long)a.mma.ctas);
      const int per_sm = mma_ctas_per_sm(info, a.mma.warps, a.mma.smem_launch);
      CHECK(per_sm == c.per_sm_launch, "%lldx%lldx%lld: %d CTAs per SM at launch", (long long)c.M, (long long)c.K,
            (long long)c.L, per_sm);
    }
  // the even-spread cap: off on request; never for clusters of 4
  {
    const MmaKernelInfo info = h100_info(119);
    const int nchunks = 2048 / 32;
    const int64_t tasks = 7168 / 128 * 8;
    MmaShape s;
    s.ks = 1, s.wt = 2, s.kc = 1;
    const MmaLaunch off = mma_launch(info, s, nchunks, tasks, 4, kSms, false);
    CHECK(off.smem_launch == off.smem && mma_ctas_per_sm(info, 2, off.smem_launch) == 8, "cap off");
    // 7168x16384x1 as 896 CTAs of 2 warps in clusters of 4: 8 fit per SM, 6.79 needed,
    // but capped it took 28.2 µs vs 23.4 uncapped (H200)
    s.kc = 4;
    const MmaLaunch kc4 = mma_launch(info, s, 16384 / 32, tasks, 1, kSms, true);
    CHECK(kc4.unsupported == nullptr && kc4.ctas == 896 && mma_ctas_per_sm(info, 2, kc4.smem) == 8,
          "KC 4: %lld CTAs, %d per SM", (long long)kc4.ctas, mma_ctas_per_sm(info, 2, kc4.smem));
    CHECK(kc4.smem_launch == kc4.smem, "clusters of 4 capped");
    CHECK(kc4.stages_per_cta == 8 && kc4.tile_cap == 128, "KC 4 over 32 stages: %d stages, %d chunks",
          kc4.stages_per_cta, kc4.tile_cap);
    s.kc = 2;  // the same grid with clusters of 2 (448 CTAs, 4 needed per SM) is capped
    const MmaLaunch kc2 = mma_launch(info, s, 16384 / 32, tasks, 1, kSms, true);
    CHECK(kc2.ctas == 448 && mma_ctas_per_sm(info, 2, kc2.smem_launch) == 4, "KC 2: %d per SM",
          mma_ctas_per_sm(info, 2, kc2.smem_launch));
  }
  // hand-built shapes out of range
  {
    const MmaKernelInfo info = h100_info(119);
    MmaShape s;
    s.ks = 4, s.wt = 4, s.kc = 1;  // 16 warps
    CHECK(mma_launch(info, s, 512, 448, 1, kSms, true).unsupported != nullptr, "16 warps taken");
    s.ks = 1, s.wt = 2, s.kc = 8;
    CHECK(mma_launch(info, s, 512, 448, 1, kSms, true).unsupported != nullptr, "cluster of 8 taken");
    s.ks = 1, s.wt = 2, s.kc = 1;
    CHECK(mma_launch(info, s, 512, 1LL << 31, 4, kSms, true).unsupported != nullptr, "2^32 CTAs taken");
    MmaKernelInfo tiny = info;
    tiny.max_smem_block = 4096;  // not even one stage ring fits
    CHECK(choose_mma_shape(tiny, 512, 448, 1, kSms).ks == 0, "shape chosen without shared memory");
  }
}

// ---------------------------------------------------------------------------
// 7. invariants of the automatic plan
// ---------------------------------------------------------------------------
static void test_invariants() {
  int n_mma = 0, n_reg = 0, n_kc2 = 0;
  const int64_t Ms[] = {1, 7, 100, 128, 129, 300, 1000, 1024, 2048, 4096, 7168, 8191, 28672};
  const int64_t Ks[] = {32, 96, 256, 800, 2048, 4128, 7168, 16384, 16416, 65536};
  const int64_t Ls[] = {1, 2, 3, 8, 64};
  for (int sms : {132, 114, 78, 16})
    for (int regs : {119, 121, 168})
      for (int64_t M : Ms)
        for (int64_t K : Ks)
          for (int64_t L : Ls)
            for (nvfp4_sf_layout_t layout : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED}) {
              const GemmProblem p = make_problem(M, K, L, layout);
              const MmaKernelInfo info = h100_info(regs);
              const Auto a = plan(p, sms, info);
              const int nchunks = static_cast<int>(K / 32);
              if (!a.is_mma) {
                ++n_reg;
                CHECK(a.reg.unsupported == nullptr && a.reg.ctas * reg_rows_per_cta(a.cfg.reg_shape) >= M * L &&
                          a.reg.smem <= 512u * 72u,
                      "register launch M %lld K %lld L %lld", (long long)M, (long long)K, (long long)L);
                continue;
              }
              ++n_mma;
              CHECK(M >= kMmaMinRows && M * L >= kMmaMinRowsTotal / 4, "MMA kernel on few rows");
              const MmaShape s = a.shape;
              const MmaLaunch& m = a.mma;
              const int w = s.ks * s.wt;
              const int n_stages = (nchunks + kMmaSC - 1) / kMmaSC;
              const int64_t tasks = (M + 127) / 128 * 8;
              bool ok = m.unsupported == nullptr && (w == 2 || w == 4 || w == 8) && m.warps == w;
              ok = ok && (s.kc == 1 || s.kc == 2) && m.kc == s.kc;
              ok = ok && (s.kc == 1 || m.stages_per_cta >= kMinClusterStages);
              ok = ok && m.stages_per_cta * s.kc >= n_stages && (m.stages_per_cta - 1) * s.kc < n_stages;
              ok = ok && (s.ks == 1 || (m.stages_per_cta + s.ks - 1) / s.ks >= 2);
              ok = ok && m.tile_cap == std::min(kMmaTileChunks, std::min(nchunks, kMmaSC * m.stages_per_cta));
              ok = ok && m.groups_per_batch * s.wt >= tasks && (m.groups_per_batch - 1) * s.wt < tasks;
              ok = ok && m.ctas == m.groups_per_batch * L * s.kc;
              ok = ok && m.smem == mma_smem_bytes(kMmaSC, m.tile_cap, w, kMmaDepth) && m.smem_launch >= m.smem;
              ok = ok && m.smem_launch <= static_cast<size_t>(info.max_smem_block) + 127;
              const int per_sm = mma_ctas_per_sm(info, w, m.smem_launch);
              ok = ok && per_sm >= 1 && per_sm <= mma_ctas_per_sm(info, w, m.smem);
              // the cap never leaves fewer CTA slots than one per-SM share of the grid
              ok = ok && (m.smem_launch == m.smem || per_sm >= (m.ctas + sms - 1) / sms);
              CHECK(ok, "MMA launch M %lld K %lld L %lld sms %d regs %d layout %d: KS %d Wt %d KC %d", (long long)M,
                    (long long)K, (long long)L, sms, regs, layout, s.ks, s.wt, s.kc);
              if (s.kc == 2) ++n_kc2;
            }
  CHECK(n_mma > 1000 && n_reg > 1000 && n_kc2 > 10, "grid covers both kernels and the cluster split: %d %d %d", n_mma,
        n_reg, n_kc2);
}

// ---------------------------------------------------------------------------
// 8. geometry and kernel parameters
// ---------------------------------------------------------------------------
static void test_geometry_and_args() {
  // one warp's stage: 8 even rows, 64 bytes, 8 odd rows (256 B each), 16 rows x 32 B scales
  CHECK(mma_stage_a(16) == 2 * 8 * 256 + 64 && mma_stage_bytes(16) == mma_stage_a(16) + 512, "stage layout");
  CHECK((mma_odd_rows(16) % 128) == 64, "odd rows 64 bytes off the even rows modulo 128");
  for (int cap : {1, 2, 3, 16, 64, 511, 512}) {
    CHECK(mma_zero_offset(cap) % 16 == 0 && mma_zero_offset(cap) >= static_cast<uint32_t>(cap) * kMmaBChunkBytes,
          "zero vector after the b tile (cap %d)", cap);
    CHECK(mma_b_region_bytes(cap) % 128 == 0 && mma_b_region_bytes(cap) >= mma_zero_offset(cap) + 16u,
          "b region (cap %d)", cap);
  }
  CHECK(mma_smem_bytes(16, 512, 8, 2) == mma_b_region_bytes(512) + 8u * 2u * mma_stage_bytes(16), "smem sum");
  CHECK(static_cast<size_t>(kRegTileChunks) * kRegSmemBytesPerChunk == 36864u, "register kernel b tile 36 KB");

  GemmProblem p = make_problem(300, 4128, 3, NVFP4_SF_BLOCKED);
  p.alpha.device_ptr = reinterpret_cast<const float*>(g_buf + 64);
  p.c.dtype = DType::kBFloat16;
  p.c.row_stride = 2;
  p.c.batch_stride = 1000;
  GemvConfig cfg;
  cfg.pdl = 1;
  cfg.prefetch_stages = 3;
  const Args a = make_args(p, cfg);
  CHECK(a.M == 300 && a.nchunks == 129 && a.tile_cap == 129 && a.tasks_per_batch == 24, "extents");
  CHECK(a.tiles_k == 65 && a.sfa_tile_row_bytes == 65 * 512, "blocked scale tiles: %d", a.tiles_k);
  CHECK(a.a == p.a.data && a.a_row == p.a.row_stride && a.a_batch == p.a.batch_stride, "a");
  CHECK(a.b == p.b.data && a.b_batch == p.b.batch_stride, "b");
  CHECK(a.sfa == p.sfa.data && a.sfa_row == p.sfa.row_stride && a.sfa_batch == p.sfa.batch_stride, "sfa");
  CHECK(a.sfb == p.sfb.data && a.sfb_batch == p.sfb.batch_stride, "sfb");
  CHECK(a.sf_blocked == 1 && a.sfb_blocked == 1, "layouts");
  CHECK(a.alpha == 0.5f && a.alpha_ptr == p.alpha.device_ptr, "alpha");
  CHECK(a.c == p.c.data && a.c_dtype == static_cast<int32_t>(DType::kBFloat16) && a.c_row == 2 && a.c_batch == 1000,
        "c");
  CHECK(a.pdl == 1 && a.prefetch_stages == 3 && a.cluster_k == 1 && a.stages_per_cta == 0, "config fields");
  p = make_problem(64, 65536, 1, NVFP4_SF_LINEAR);
  const Args b = make_args(p, GemvConfig());
  CHECK(b.nchunks == 2048 && b.tile_cap == kRegTileChunks && b.sf_blocked == 0 && b.sfb_blocked == 0 && b.pdl == kPdl,
        "long K, linear scales");
}

// ---------------------------------------------------------------------------
// 9. decode-regime GEMM (decode_plan.hpp)
// ---------------------------------------------------------------------------
// The decode kernels as built by CUDA 13 for sm_90a (ptxas -v): 79 / 106 / 117 / 124 registers for
// 1 / 2 / 3 / 4 token groups (blocked weight scales; linear 77 / 106 / 117 / 126; NT8 = 3 and 4 under
// __launch_bounds__(256, 2)), no static shared memory.
static MmaKernelInfo decode_info(int nt8) {
  MmaKernelInfo i = h100_info(nt8 == 1 ? 79 : nt8 == 2 ? 106 : nt8 == 3 ? 117 : 126);
  i.static_smem = 0;
  i.max_smem_block = 232448;
  h100_cluster_table(i);
  return i;
}
// The fine-stage instances (8 chunks per stage, decode_plan.hpp kDecodeFineSC): 79 / 93 / 110 / 123
// registers (linear; blocked 77 / 93 / 109 / 121), no spills.
static MmaKernelInfo decode_fine_info(int nt8) {
  MmaKernelInfo i = decode_info(nt8);
  i.regs = nt8 == 1 ? 79 : nt8 == 2 ? 93 : nt8 == 3 ? 110 : 123;
  return i;
}

static void test_decode_plan() {
  // token groups and tiles
  CHECK(decode_nt8(2) == 1 && decode_nt8(8) == 1 && decode_nt8(9) == 2 && decode_nt8(16) == 2 &&
            decode_nt8(17) == 3 && decode_nt8(24) == 3 && decode_nt8(25) == 4 && decode_nt8(32) == 4,
        "token groups");
  CHECK(decode_tile_cap(1, 7) == 64 && decode_tile_cap(2, 7) == 32 && decode_tile_cap(2, 1) == kMmaSC &&
            decode_tile_cap(4, 7) == kMmaSC && decode_token_tile_bytes(decode_tile_chunks(4, kMmaSC), 4) == 32768 &&
            decode_tile_cap(3, 7) == kMmaSC && decode_token_tile_bytes(decode_tile_chunks(3, kMmaSC), 3) == 24576,
        "token tile caps");
  // rows the route needs: 4096, but 7168 for 17..32 tokens (3 / 4 token groups) at K < 1536
  CHECK(decode_min_rows(2, 1024) == 4096 && decode_min_rows(16, 1024) == 4096 && decode_min_rows(17, 1024) == 7168 &&
            decode_min_rows(32, 1504) == 7168 && decode_min_rows(17, 1536) == 4096 && decode_min_rows(32, 2048) == 4096 &&
            decode_min_rows(32, 14336) == 4096,
        "decode_min_rows");
  CHECK(decode_token_tile_bytes(64, 2) == 64 * 16 * 64, "token tile bytes");
  // fine stages: the token tile in whole fine stages, up to 64 KB (64 chunks for 1 / 2 token groups,
  // 32 for 3 / 4), rings of fine stages; two 8-warp CTAs per SM still fit at every token count
  CHECK(decode_tile_cap(4, 1, kDecodeFineSC) == kDecodeFineSC && decode_tile_cap(1, 3, kDecodeFineSC) == 24 &&
            decode_tile_cap(1, 9, kDecodeFineSC) == 64 && decode_tile_cap(2, 9, kDecodeFineSC) == 64 &&
            decode_tile_cap(3, 9, kDecodeFineSC) == 32 && decode_tile_cap(4, 3, kDecodeFineSC) == 24 &&
            decode_smem_bytes(32, 4, 8, kDecodeFineSC) == 65536 + 8 * kMmaDepth * mma_stage_bytes(kDecodeFineSC) &&
            mma_stage_bytes(kDecodeFineSC) < mma_stage_bytes(kMmaSC),
        "fine-stage tiles and rings");
  for (int nt8 = 1; nt8 <= 4; ++nt8) {
    const MmaKernelInfo fine = decode_fine_info(nt8);
    const size_t smem = decode_smem_bytes(decode_tile_chunks(nt8, kDecodeFineSC), nt8, 8, kDecodeFineSC);
    CHECK(mma_ctas_per_sm(fine, 8, smem) >= 2, "fine stages, %d token groups: %d 8-warp CTAs per SM at %zu B", nt8,
          mma_ctas_per_sm(fine, 8, smem), smem);
  }
  // support
  for (nvfp4_sf_layout_t lay : {NVFP4_SF_LINEAR, NVFP4_SF_BLOCKED}) {
    for (int64_t M : {1LL, 2LL, 3LL, 16LL, 17LL, 32LL, 64LL, 65LL, 128LL}) {
      const GemmProblem p = dense_problem(M, 7168, 7168, 1, lay);
      CHECK((decode_unsupported(p) == nullptr) == (M >= 2 && M <= 32), "M = %lld", (long long)M);
    }
  }
  {
    GemmProblem p = dense_problem(8, 200, 96, 3, NVFP4_SF_BLOCKED);
    CHECK(decode_unsupported(p) == nullptr, "blocked K = 96 refused");
    p = dense_problem(8, 200, 96, 3, NVFP4_SF_LINEAR);
    CHECK(decode_unsupported(p) != nullptr, "linear K = 96 taken (scale pieces need K %% 256)");
    p = dense_problem(8, 200, 256, 3, NVFP4_SF_LINEAR);
    CHECK(decode_unsupported(p) == nullptr, "linear K = 256 refused");
    p.a.row_stride = 136;  // token rows 8 bytes off 16
    CHECK(decode_unsupported(p) != nullptr, "misaligned token rows taken");
    p = dense_problem(8, 200, 256, 1, NVFP4_SF_LINEAR);
    p.b.data = g_buf + 1032;
    CHECK(decode_unsupported(p) != nullptr, "misaligned weights taken");
    p = dense_problem(8, 200, 256, 1, NVFP4_SF_LINEAR);
    p.sfa.data = g_buf + 2049;  // token scales: byte loads, any alignment
    p.sfa.layout = NVFP4_SF_BLOCKED;
    CHECK(decode_unsupported(p) == nullptr, "odd token scales / mixed layouts refused");
    p.K = 48;
    CHECK(decode_unsupported(p) != nullptr, "K = 48 taken");
  }
  // the target shapes on an H100 (132 SMs): the time model's stage geometry, K split and CTA size
  // (decode_plan.hpp choose_decode_shape; bench/NOTES.md "Decode kernel streaming (issue 22,
  // session 11)", "Fine decode stages"); clusters only as large as the device's cluster table holds
  // in one wave (4096x14336: 224 CTAs in clusters of 7 = the H100's 32 such clusters; bench/NOTES.md
  // "Decode K split over clusters of up to 8"). 7168 K = 14 full stages: clusters of 4 balance in
  // fine ones (7 per rank); 14336 / 7 and 4096 / 2 divide in full ones. Short K: 2048 = 4 full
  // stages could not split (3 per rank at least), 8 fine ones split over 3 CTAs.
  struct Want {
    int64_t N, K;
    int nt8, sc, wt, kc;
    int64_t ctas;
    int per_sm;  // CTAs per SM at the launch's shared memory
  };
  const Want wants[] = {
      {7168, 7168, 1, 8, 8, 4, 224, 2}, {4096, 14336, 1, 16, 8, 7, 224, 2}, {14336, 4096, 1, 16, 7, 2, 256, 2},
      {4096, 2048, 1, 8, 7, 3, 111, 1}, {4096, 1024, 1, 16, 2, 1, 128, 1},
      {7168, 7168, 2, 8, 8, 4, 224, 2}, {4096, 14336, 2, 16, 8, 7, 224, 2}, {14336, 4096, 2, 16, 7, 2, 256, 2},
      {4096, 2048, 2, 8, 7, 3, 111, 1},
      // 3 / 4 groups: the same shapes (a one-stage token tile, 110-126 registers: two CTAs per SM)
      {7168, 7168, 3, 8, 8, 4, 224, 2}, {4096, 14336, 3, 16, 8, 7, 224, 2},
      {7168, 7168, 4, 8, 8, 4, 224, 2}, {4096, 14336, 4, 16, 8, 7, 224, 2}, {14336, 4096, 4, 16, 7, 2, 256, 2},
  };
  for (const Want& w : wants) {
    const MmaKernelInfo info = decode_info(w.nt8), fine = decode_fine_info(w.nt8);
    const int nchunks = static_cast<int>(w.K / 32);
    const int64_t tasks = (w.N + 127) / 128 * 8;
    const DecodeShape s = choose_decode_shape(info, w.nt8, nchunks, tasks, 1, kSms, &fine);
    const MmaKernelInfo& used = s.sc == kMmaSC ? info : fine;
    const DecodeLaunch d = decode_launch(used, s, w.nt8, nchunks, tasks, 1, kSms);
    CHECK(mma_ctas_per_sm(used, d.warps, d.smem_launch) == w.per_sm, "%lldx%lld nt8 %d: %d CTAs per SM at %zu B",
          (long long)w.N, (long long)w.K, w.nt8, mma_ctas_per_sm(used, d.warps, d.smem_launch), d.smem_launch);
    CHECK(d.unsupported == nullptr && s.sc == w.sc && d.sc == w.sc && s.wt == w.wt && s.kc == w.kc && d.ctas == w.ctas,
          "%lldx%lld nt8 %d: sc %d wt %d kc %d ctas %lld (want %d %d %d %lld)", (long long)w.N, (long long)w.K, w.nt8,
          s.sc, s.wt, s.kc, (long long)d.ctas, w.sc, w.wt, w.kc, (long long)w.ctas);
    // without the fine instance (the dual and MoE routes): full stages only
    CHECK(choose_decode_shape(info, w.nt8, nchunks, tasks, 1, kSms).sc == kMmaSC, "full stages only without `fine`");
  }
  {  // a geometry the kernel does not have is refused, not launched
    const DecodeLaunch d = decode_launch(decode_info(1), DecodeShape{8, 1, 4}, 1, 224, 448, 1, kSms);
    CHECK(d.unsupported != nullptr, "stage of 4 chunks planned");
  }
  // waves of clustered grids from the device's table (decode_waves)
  {
    const MmaKernelInfo info = decode_info(1);
    // session 10: 128 CTAs in clusters of 4 at one per SM, 120 fit: two waves
    DecodeWaves w = decode_waves(info, 128, 4, 1, kSms);
    CHECK(w.waves == 2 && w.share == 1 && !w.spread, "128 CTAs kc 4 at 1 per SM: waves %lld", (long long)w.waves);
    // 224 CTAs in clusters of 7 at two per SM: exactly one wave (32 clusters); one cluster more: two
    w = decode_waves(info, 224, 7, 2, kSms);
    CHECK(w.waves == 1 && w.share == 2, "224 CTAs kc 7: waves %lld share %lld", (long long)w.waves, (long long)w.share);
    w = decode_waves(info, 231, 7, 2, kSms);
    CHECK(w.waves == 2, "231 CTAs kc 7: waves %lld", (long long)w.waves);
    // the even spread only where the capped residency still holds the grid in one wave: 128 CTAs
    // in clusters of 4 fit at 2 per SM (248) but not at 1 (120), so no cap; 112 in clusters of 2
    // fit at 1 per SM: capped
    w = decode_waves(info, 128, 4, 2, kSms);
    CHECK(w.waves == 1 && w.share == 2 && !w.spread, "128 CTAs kc 4 at 2 per SM");
    w = decode_waves(info, 112, 2, 2, kSms);
    CHECK(w.waves == 1 && w.share == 1 && w.spread, "112 CTAs kc 2 at 2 per SM: spread");
    // single CTAs: slots = SMs x per SM
    w = decode_waves(info, 300, 1, 2, kSms);
    CHECK(w.waves == 2 && w.share == 2 && !w.spread, "300 CTAs kc 1");
    // no table (not queried): no cluster launch is a candidate
    MmaKernelInfo bare = info;
    for (auto& row : bare.cluster_ctas)
      for (int& v : row) v = 0;
    CHECK(decode_waves(bare, 224, 4, 2, kSms).waves == 0 && decode_waves(bare, 224, 1, 2, kSms).waves == 1,
          "bare table: clusters refused, single CTAs planned");
    const DecodeShape s = choose_decode_shape(bare, 1, 7168 / 32, 7168 / 128 * 8, 1, kSms);
    CHECK(s.kc == 1 && s.wt >= 2, "bare table: 7168^2 planned without a cluster (kc %d)", s.kc);
  }
  // invariants over a grid of problems
  for (int nt8 : {1, 2, 3, 4})
    for (int64_t N : {8LL, 200LL, 1000LL, 4096LL, 7168LL, 14336LL, 50000LL})
      for (int64_t K : {32LL, 96LL, 512LL, 2048LL, 4096LL, 7168LL, 14336LL, 65536LL})
        for (int64_t L : {1LL, 3LL})
          for (bool with_fine : {false, true}) {
          const MmaKernelInfo full = decode_info(nt8), fine = decode_fine_info(nt8);
          const int nchunks = static_cast<int>(K / 32);
          const int64_t tasks = (N + 127) / 128 * 8;
          const DecodeShape s = choose_decode_shape(full, nt8, nchunks, tasks, L, kSms, with_fine ? &fine : nullptr);
          const MmaKernelInfo& info = s.sc == kMmaSC ? full : fine;
          const int n_stages = (nchunks + s.sc - 1) / s.sc;
          const DecodeLaunch d = decode_launch(info, s, nt8, nchunks, tasks, L, kSms);
          const int per_sm = mma_ctas_per_sm(info, d.warps, d.smem_launch);
          const bool ok = d.unsupported == nullptr && s.wt >= 2 && s.wt <= kDecodeMaxWarps &&
                          s.kc >= 1 && s.kc <= kDecodeMaxCluster && d.warps == s.wt &&
                          d.kc * d.stages_per_cta >= n_stages && (d.kc - 1) * d.stages_per_cta < n_stages &&
                          (d.kc == 1 || d.stages_per_cta >= kDecodeMinClusterStages) &&
                          // clusters only of sizes the device's table holds (waves counted from it)
                          (d.kc == 1 || info.cluster_ctas[std::min(per_sm, kClusterTablePerSm)][d.kc] > 0) &&
                          (s.sc == kMmaSC || (with_fine && s.sc == kDecodeFineSC)) && d.sc == s.sc &&
                          d.tile_cap % s.sc == 0 &&
                          d.tile_cap <= decode_tile_chunks(nt8, s.sc) && d.tile_cap > 0 &&
                          d.smem <= static_cast<size_t>(info.max_smem_block) && d.smem_launch >= d.smem &&
                          d.smem_launch <= static_cast<size_t>(info.max_smem_block) &&
                          mma_ctas_per_sm(info, d.warps, d.smem_launch) >=
                              std::min<int64_t>((d.ctas + kSms - 1) / kSms,
                                                mma_ctas_per_sm(info, d.warps, d.smem)) &&
                          d.groups_per_batch * s.wt >= tasks && (d.groups_per_batch - 1) * s.wt < tasks &&
                          d.ctas == d.groups_per_batch * L * d.kc &&
                          // the cluster partials fit in the rings they reuse
                          static_cast<size_t>(s.wt) * nt8 * 32 * 16 <=
                              static_cast<size_t>(s.wt) * kMmaDepth * mma_stage_bytes(s.sc);
          CHECK(ok, "nt8 %d %lldx%lldx%lld: sc %d wt %d kc %d spc %d tile %d smem %zu", nt8, (long long)N,
                (long long)K, (long long)L, s.sc, s.wt, s.kc, d.stages_per_cta, d.tile_cap, d.smem);
        }
  // kernel parameters
  {
    GemmProblem p = dense_problem(5, 300, 1024, 2, NVFP4_SF_BLOCKED);
    p.sfa.layout = NVFP4_SF_LINEAR;
    p.c.dtype = DType::kBFloat16;
    p.c.col_stride = 3;
    const DecodeArgs a = make_decode_args(p);
    CHECK(a.N == 300 && a.M == 5 && a.nchunks == 32 && a.tiles_k == 16 && a.tasks_per_batch == 24 &&
              a.w == p.b.data && a.x == p.a.data && a.sfw == p.sfb.data && a.sfx == p.sfa.data &&
              a.sfw_blocked == 1 && a.sfx_blocked == 0 && a.sfw_tile_row_bytes == 512 * 16 && a.c_col == 3 &&
              a.c_row == 300 && a.c_dtype == static_cast<int32_t>(DType::kBFloat16) && a.pdl == kPdl &&
              a.cluster_k == 1 && a.alpha == 0.5f,
          "decode args");
  }
}

int main() {
  test_support();
  test_alignment();
  test_reg_shapes();
  test_kernel_choice();
  test_occupancy();
  test_mma_shapes();
  test_invariants();
  test_geometry_and_args();
  test_decode_plan();
  return check_summary();
}
