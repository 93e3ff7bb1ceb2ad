// The tactic space the tuner searches is what is compiled, filtered by the
// very rules the entry points apply to a forced tactic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "api/gemm_dispatch.hpp"
#include "fp4moe/error.hpp"
#include "tuning/tactic_space.hpp"

namespace fp4moe::tuning {
namespace {

const TuneShape kCalls[] = {
    {GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, 64, 2112, 7168, 1},
    {GemmOp::kDense, Fp4Format::kMXFP4, GemmOutput::kFP32, 8, 256, 256, 1},  // one 256-K block: no split-K
    {GemmOp::kContiguous, Fp4Format::kNVFP4, GemmOutput::kBF16, 512, 4096, 7168, 4},
    {GemmOp::kMasked, Fp4Format::kMXFP4, GemmOutput::kBF16, 8, 7168, 2048, 32},
    {GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 32, 7168, 256 * 256, 256, 256},
    {GemmOp::kMoeFc2, Fp4Format::kMXFP4, GemmOutput::kFP32, 32, 256, 2 * 128, 2, 128},  // 2 experts: split <= 2
    {GemmOp::kMoeFc1, Fp4Format::kNVFP4, GemmOutput::kNVFP4, 128, 512, 1024, 4},
};

TEST(TacticSpace, CandidatesAreExactlyWhatTheEntryPointsAccept) {
  for (const TuneShape& call : kCalls) {
    const ProblemShape shape = problem_shape(call);
    const std::vector<GemmTactic> candidates = candidate_tactics(shape);
    ASSERT_FALSE(candidates.empty()) << call.describe();
    const detail::ArgCheck c("test");
    int accepted = 0;
    for (const GemmTactic& tile : compiled_tactics(call.format, layout_of(call.op)))
      for (int split : {0, 1, 2, 3, 4, 5, 6, 8, 16}) {
        GemmTactic t = tile;
        t.split_k = split;
        const bool in_space = std::find(candidates.begin(), candidates.end(), t) != candidates.end();
        bool entry_accepts = true;
        try {
          GemmOptions opt;
          opt.tactic = &t;
          detail::plan_gemm(c, call, call.m, opt);  // forced tactic: no CUDA call
        } catch (const InvalidArgument& e) {
          entry_accepts = false;
          EXPECT_EQ(e.argument(), "options.tactic");
        }
        EXPECT_EQ(in_space, entry_accepts) << call.describe() << " " << t.name();
        EXPECT_EQ(check_tactic(shape, t).ok(), entry_accepts) << call.describe() << " " << t.name();
        accepted += entry_accepts;
      }
    EXPECT_EQ(accepted, static_cast<int>(candidates.size()));
  }
}

TEST(TacticSpace, StreamKOnlyWhereTheHostKnowsTheTiles) {
  for (const TuneShape& call : kCalls) {
    const ProblemShape shape = problem_shape(call);
    const bool allowed = call.op != GemmOp::kMasked;
    for (const GemmTactic& tile : compiled_tactics(call.format, layout_of(call.op))) {
      GemmTactic t = tile;
      t.split_k = kStreamK;
      const TacticCheck c = check_tactic(shape, t);
      ASSERT_NE(c.kernel, nullptr);
      // (A tile that cannot run the shape at all, split or not, is refused
      // for that: a gather tile's stages wider than W, say.)
      const bool runs = check_tactic(shape, tile).ok();
      const bool expect = runs && allowed && c.kernel->stream_k && c.units >= 2;
      EXPECT_EQ(c.ok(), expect) << call.describe() << " " << t.name();
      if (!allowed && c.kernel->stream_k) {
        EXPECT_EQ(c.fault, TacticFault::kStreamKLayout) << t.name();
      }
    }
  }
  GemmTactic t;
  t.swap_ab = true;
  t.block_n = 16;
  t.block_k = 128;
  t.stages = 5;
  t.split_k = kStreamK;
  EXPECT_EQ(t.name(), "swapAB bn16 bk128 st5 streamK");
}

// moe_dense_fc2's token tail: 1-64 tokens past the direct tile's last
// whole tile (65-96 and the split at 96 where the 96-token tile serves the
// stages), and nothing on any other tile, layout or M.
TEST(TacticSpace, MoeTailTokensPastTheDirectTile) {
  const TuneShape base{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 160, 7168, 65536, 256, 256};
  auto tail_at = [&](int m, const GemmTactic& t) {
    TuneShape call = base;
    call.m = m;
    return moe_tail_tokens(problem_shape(call), t, 128);
  };
  GemmTactic direct;
  direct.block_n = 128;
  direct.block_k = 128;
  direct.stages = 8;
  direct.split_k = kStreamK;
  EXPECT_EQ(tail_at(160, direct), 32);
  EXPECT_EQ(tail_at(192, direct), 64);
  EXPECT_EQ(tail_at(129, direct), 1);
  EXPECT_EQ(tail_at(300, direct), 44);
  EXPECT_EQ(tail_at(224, direct), 0);  // 96 left: no 96-token tile has 128-K stages
  EXPECT_EQ(tail_at(256, direct), 0);  // whole tiles
  EXPECT_EQ(tail_at(100, direct), 0);  // one tile
  GemmTactic direct256 = direct;  // (W = 256: the 256-K stage tiles)
  direct256.block_k = 256;
  direct256.stages = 4;
  EXPECT_EQ(tail_at(224, direct256), 96);  // the 96-token swap-AB tile
  EXPECT_EQ(tail_at(200, direct256), 72);
  // 145-192 tokens: 96 and the rest, both on swap-AB tiles.
  EXPECT_EQ(tail_at(145, direct256), 49);
  EXPECT_EQ(tail_at(160, direct256), 64);
  EXPECT_EQ(tail_at(161, direct256), 65);
  EXPECT_EQ(tail_at(192, direct256), 96);
  EXPECT_EQ(tail_at(144, direct256), 16);  // 16 past the direct tile: the 16-token tile
  EXPECT_EQ(tail_at(129, direct256), 1);
  EXPECT_EQ(tail_at(300, direct256), 44);  // two direct tiles and the rest
  EXPECT_EQ(tail_at(256, direct256), 0);
  GemmTactic swap = direct;
  swap.swap_ab = true;
  swap.block_n = 64;
  EXPECT_EQ(tail_at(160, swap), 0);
  GemmTactic fp8 = direct;
  fp8.fp8 = true;
  EXPECT_EQ(tail_at(160, fp8), 0);
  GemmTactic gather = swap;
  gather.moe_gather = true;
  EXPECT_EQ(tail_at(160, gather), 0);
  const TuneShape dense{GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, 160, 7168, 7168, 1};
  EXPECT_EQ(moe_tail_tokens(problem_shape(dense), direct, 128), 0);
}

TEST(TacticSpace, FiltersSplitKByUnitsAndByTile) {
  // K = 256 is one K block of every 256-K tile (only split_k = 1) and two of
  // a 128-K tile (at most two slices).
  for (const GemmTactic& t : candidate_tactics(problem_shape(kCalls[1]))) {
    if (t.block_k == 256) {
      EXPECT_EQ(t.split_k, 1) << t.name();
    } else {
      EXPECT_LE(t.split_k, 2) << t.name();
    }
  }
  // Two experts: at most two slices.
  for (const GemmTactic& t : candidate_tactics(problem_shape(kCalls[5]))) EXPECT_LE(t.split_k, 2) << t.name();
  // Tiles compiled without split-K never appear with it.
  const ProblemShape big = problem_shape(kCalls[0]);
  for (const GemmTactic& t : candidate_tactics(big)) {
    const TacticCheck c = check_tactic(big, t);
    ASSERT_TRUE(c.ok());
    EXPECT_LE(t.split_k, c.kernel->max_split_k) << t.name();
  }
  // The heuristic's pick is always in the space.
  for (const TuneShape& call : kCalls) {
    const ProblemShape s = problem_shape(call);
    const std::vector<GemmTactic> space = candidate_tactics(s);
    EXPECT_NE(std::find(space.begin(), space.end(), pick_tactic(s)), space.end()) << call.describe();
  }
}

// The CUDA-core route (dp4a bn8) has no prepacked kernel: prepacked weights
// keep the 16-token wgmma tile at one token, in both formats; standard ones
// take it up to kDp4aMaxTokens.
TEST(TacticSpace, CudaCoreRouteOnlyForFewTokensOnStandardWeights) {
  for (Fp4Format format : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (int m : {1, kDp4aMaxTokens, kDp4aMaxTokens + 1})
      for (bool prepacked : {false, true}) {
        ProblemShape shape = problem_shape({GemmOp::kMasked, format, GemmOutput::kBF16, m, 7168, 2048, 8});
        shape.b_prepacked = prepacked;
        const GemmTactic t = pick_tactic(shape);
        EXPECT_EQ(is_dp4a(t), !prepacked && m <= kDp4aMaxTokens) << t.name() << " m=" << m << " prepacked=" << prepacked;
        EXPECT_EQ(t.name().rfind("dp4a", 0) == 0, is_dp4a(t)) << t.name();
      }
}

// The heuristic against the exhaustive sweep on an H200 (132 SMs; docs/PERF.md,
// "sweep", commits 6c6a3089163a and, with stream-K, 1d622dc2172f): rows
// where the old wave-count rule picked 25-50% slower tactics, and rows it
// got right, each with the sweep's best.
TEST(TacticSpace, HeuristicPicksTheSweepsBestOnMeasuredRows) {
  struct Row {
    TuneShape call;
    bool swap_ab;
    int block_n, split_k;
    bool moe_gather = false;
    int block_k = 0;  ///< checked where non-zero
  };
  const Row rows[] = {
      // decode: K = 2048 is too short to split (sk4 was 0.78x of sk1); one
      // token: the CUDA-core route (dp4a bn8, docs/PERF.md stop 53)
      {{GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, 1, 7168, 2048, 8}, true, 8, 1},
      {{GemmOp::kMasked, Fp4Format::kMXFP4, GemmOutput::kBF16, 1, 7168, 2048, 8}, true, 8, 1},
      {{GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, 4, 7168, 2048, 8}, true, 16, 1},
      {{GemmOp::kMasked, Fp4Format::kMXFP4, GemmOutput::kBF16, 64, 7168, 2048, 8}, true, 64, 1},
      {{GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, 8, 4096, 7168, 8}, true, 16, 1},
      {{GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, 64, 4096, 7168, 32}, true, 64, 1},
      // dense: few tiles, long K (64x2112x7168: 17 tiles; split 6 fills 102
      // CTA slots, 15.9 us against split 4's 17.9, H200 sweep, stop 35)
      {{GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, 64, 2112, 7168, 1}, true, 64, 6},
      // (128x7168x16384: stream-K 70.9-72.8 us, split 2 75.6-77.4, H200 sweep, stop 35)
      {{GemmOp::kDense, Fp4Format::kMXFP4, GemmOutput::kBF16, 128, 7168, 16384, 1}, true, 128, kStreamK},
      // The 128 x 256 tile: stream-K after whole rounds where the last
      // partial wave costs more than the partials (H200 probe of the
      // two-CTA tile, stop 46: 8192³ 0.944-0.985x whole tiles' time,
      // 2048x7168x16384 0.877-0.889x, prefill G4 0.974-0.979x); whole tiles
      // where it does not (4096x4096x7168 1.027-1.030x, prefill G8
      // 1.010-1.014x).
      {{GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, 8192, 8192, 8192, 1}, false, 256, kStreamK},
      {{GemmOp::kDense, Fp4Format::kMXFP4, GemmOutput::kBF16, 2048, 7168, 16384, 1}, false, 256, kStreamK},
      {{GemmOp::kContiguous, Fp4Format::kNVFP4, GemmOutput::kBF16, 8192, 4096, 7168, 4}, false, 256, kStreamK},
      {{GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, 4096, 4096, 7168, 1}, false, 256, 1},
      {{GemmOp::kContiguous, Fp4Format::kMXFP4, GemmOutput::kBF16, 4096, 7168, 2048, 8}, false, 256, 1},
      // MoE-dense FC2, E = 256, W = 256: swap-AB up to 64 tokens, then the
      // direct 128 x 128 tile (swap bn128 was 0.47x); stream-K at every M
      // (split 2 was 0.87-0.89x of it at one token tile, split 1 0.89x at two).
      // M = 32: the 32-token tile (H200 sweep, stop 30: 186.1 us against
      // bn64's 258.9, gather bn32's 194.6); M = 64: bn64 (bn32 1.43x). W =
      // 256: 256-K stages (stop 30 sweep: M = 32 163.3 us against 185.8
      // with 128-K stages, M = 64 236.6 against 253.7, M = 128 318.3
      // against 327.1); W = 128 (E = 512): 128-K stages.
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 32, 7168, 65536, 256, 256}, true, 32, kStreamK, false, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kMXFP4, GemmOutput::kBF16, 32, 7168, 65536, 256, 256}, true, 32, kStreamK, false, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 32, 7168, 65536, 512, 128}, true, 32, kStreamK, false, 128},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 64, 7168, 65536, 256, 256}, true, 64, kStreamK, false, 256},
      // (M = 96: the 96-token tile, 0.80x the direct tile's time in stop 38's A/B, after the sweep)
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 96, 7168, 65536, 256, 256}, true, 96, kStreamK, false, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kMXFP4, GemmOutput::kBF16, 128, 7168, 65536, 256, 256}, false, 128, kStreamK, false, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 128, 7168, 65536, 512, 128}, false, 128, kStreamK, false, 128},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 160, 7168, 65536, 256, 256}, false, 128, kStreamK, false, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kMXFP4, GemmOutput::kBF16, 256, 7168, 65536, 256, 256}, false, 128, kStreamK, false, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 384, 7168, 65536, 256, 256}, false, 128, kStreamK, false, 256},
      // the same with top-8 routing known (GemmOptions::moe_top_k), H100
      // sweep at 35e65cd (PERF.md stop 17): the gathered formulation,
      // 256-K stages, on stream-K, at every M (0.95x the best dense tactic at
      // M = 32, 0.27x at M = 384); 8 tokens a pass up to M = 128 (H200,
      // stop 18: 0.84-0.86x the time of 16 at M = 32-96), 16 beyond (H200
      // sweep at 7853f4b, stop 27: the one-CTA 16-token tile the best at M
      // = 160-224; stop 60's sweep at 06f6dbb: NVFP4 M = 160 takes 8 a pass,
      // 135.7 us against 141.9, MXFP4 keeps 16, 143.1 against 145.5; stop
      // 63's sweep at 1c11980, tokens gathered in BF16: MXFP4 M = 160 takes
      // 8 a pass too, 130.6 us against 134.2)
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 32, 7168, 65536, 256, 256, 8}, true, 8, kStreamK, true, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 64, 7168, 65536, 256, 256, 8}, true, 8, kStreamK, true, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kMXFP4, GemmOutput::kBF16, 96, 7168, 65536, 256, 256, 8}, true, 8, kStreamK, true, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 128, 7168, 65536, 256, 256, 8}, true, 8, kStreamK, true, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 160, 7168, 65536, 256, 256, 8}, true, 8, kStreamK, true, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kMXFP4, GemmOutput::kBF16, 160, 7168, 65536, 256, 256, 8}, true, 8, kStreamK, true, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 192, 7168, 65536, 256, 256, 8}, true, 16, kStreamK, true, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 224, 7168, 65536, 256, 256, 8}, true, 16, kStreamK, true, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kMXFP4, GemmOutput::kBF16, 256, 7168, 65536, 256, 256, 8}, true, 16, kStreamK, true, 256},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 384, 7168, 65536, 256, 256, 8}, true, 16, kStreamK, true, 256},
  };
  for (const Row& r : rows) {
    ProblemShape s = problem_shape(r.call);
    s.sm_count = 132;
    const GemmTactic t = pick_tactic(s);
    EXPECT_EQ(t.swap_ab, r.swap_ab) << r.call.describe() << ": " << t.name();
    EXPECT_EQ(t.block_n, r.block_n) << r.call.describe() << ": " << t.name();
    EXPECT_EQ(t.split_k, r.split_k) << r.call.describe() << ": " << t.name();
    EXPECT_EQ(t.moe_gather, r.moe_gather) << r.call.describe() << ": " << t.name();
    if (r.block_k) {
      EXPECT_EQ(t.block_k, r.block_k) << r.call.describe() << ": " << t.name();
    }
  }
}

// The 17-32-token swap-AB tiles hold 256 weight rows in one CTA of four
// consumer warpgroups (gemm_configs.hpp, docs/PERF.md stop 37); the 16- and
// 64-token tiles keep 128 rows (two CTAs an SM, one).
TEST(TacticSpace, ThirtyTwoTokenTilesAreOneCtaOf256WeightRows) {
  struct Row {
    TuneShape call;
    int block_n, block_m, ctas_per_sm;
  };
  const Row rows[] = {
      {{GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, 32, 4096, 7168, 8}, 32, 256, 1},
      {{GemmOp::kMasked, Fp4Format::kMXFP4, GemmOutput::kBF16, 17, 7168, 2048, 32}, 32, 256, 1},
      {{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 32, 7168, 65536, 256, 256}, 32, 256, 1},
      {{GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, 8, 4096, 7168, 8}, 16, 128, 2},
      {{GemmOp::kMasked, Fp4Format::kMXFP4, GemmOutput::kBF16, 64, 4096, 7168, 8}, 64, 128, 1},
  };
  for (const Row& r : rows) {
    ProblemShape s = problem_shape(r.call);
    s.sm_count = 132;
    const GemmTactic t = pick_tactic(s);
    EXPECT_EQ(t.block_n, r.block_n) << r.call.describe() << ": " << t.name();
    const TacticCheck check = check_tactic(s, t);
    ASSERT_NE(check.kernel, nullptr) << r.call.describe();
    EXPECT_EQ(check.kernel->block_m, r.block_m) << r.call.describe() << ": " << t.name();
    EXPECT_EQ(check.kernel->ctas_per_sm, r.ctas_per_sm) << r.call.describe() << ": " << t.name();
  }
}

// MoE-dense's 96-token swap-AB tile (256-K stages) lies in one 128-row
// scale band only as a call's one token tile: the tactic check refuses it
// past 96 tokens (the entry point's error names the rule), and the
// heuristic takes it for 65-96 tokens where W is a multiple of 256 (the
// direct tile where W is not, the 64-token tile up to 64).
TEST(TacticSpace, NinetySixTokenTileServesOneTokenTile) {
  auto call_of = [](int m, int width) {
    return TuneShape{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, m, 7168, 256 * width, 256, width};
  };
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    const GemmTactic* bn96 = nullptr;
    std::vector<GemmTactic> tiles = compiled_tactics(f, kernels::Layout::kMoeDense);
    for (const GemmTactic& t : tiles)
      if (t.swap_ab && !t.moe_gather && t.block_n == 96) bn96 = &t;
    ASSERT_NE(bn96, nullptr) << format_name(f);
    EXPECT_EQ(bn96->block_k, 256);
    TuneShape call = call_of(96, 256);
    call.format = f;
    EXPECT_TRUE(check_tactic(problem_shape(call), *bn96).ok());
    EXPECT_EQ(check_tactic(problem_shape(call), *bn96).max_m, 96);
    call.m = 97;
    EXPECT_EQ(check_tactic(problem_shape(call), *bn96).fault, TacticFault::kTooManyTokens);
    GemmOptions opt;
    opt.tactic = bn96;
    try {
      detail::plan_gemm(detail::ArgCheck("test"), call, call.m, opt);
      ADD_FAILURE() << "97 tokens on the 96-token tile were accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "options.tactic");
      EXPECT_NE(std::string(e.what()).find("holds at most 96 tokens"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("scale bands"), std::string::npos) << e.what();
    }
  }
  struct Row {
    int m, width, block_n;
    bool swap_ab;
  };
  for (const Row& r : {Row{65, 256, 96, true}, Row{96, 256, 96, true}, Row{64, 256, 64, true}, Row{96, 128, 128, false},
                       Row{97, 256, 128, false}}) {
    ProblemShape s = problem_shape(call_of(r.m, r.width));
    s.sm_count = 132;
    const GemmTactic t = pick_tactic(s);
    EXPECT_EQ(t.block_n, r.block_n) << "M = " << r.m << ", W = " << r.width << ": " << t.name();
    EXPECT_EQ(t.swap_ab, r.swap_ab) << "M = " << r.m << ", W = " << r.width << ": " << t.name();
  }
}

// When the heuristic takes the gathered formulation of moe_dense_fc2: only
// with top-k routing known, from one token per expert, while its kernel
// holds M; with the widest stages that divide W; on stream-K where the
// N / 64 tiles leave SMs idle.
// The routes and cluster sizes of the direct tile (docs/PERF.md stop 20):
// the FP8 route only where compiled (MXFP4 dense, contiguous, masked,
// MoE-dense) and never the heuristic's pick; two-CTA clusters compiled for
// the dense and contiguous 128 x 256 tile only, and the heuristic's pick
// wherever the direct tile is.
TEST(TacticSpace, Fp8RouteNeverPickedClustersWhereverCompiled) {
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (GemmOp op : {GemmOp::kDense, GemmOp::kContiguous, GemmOp::kMasked, GemmOp::kMoeFc2, GemmOp::kMoeFc1}) {
      const kernels::Layout layout = layout_of(op);
      bool fp8 = false, cluster = false;
      for (const GemmTactic& t : compiled_tactics(f, layout)) {
        fp8 |= t.fp8;
        cluster |= t.cluster == 2;
        if (t.cluster == 2) {
          EXPECT_FALSE(t.swap_ab);
          EXPECT_EQ(t.block_n, 256);
          EXPECT_EQ(t.name().rfind("cluster2 ", 0), 0u) << t.name();
        }
        if (t.fp8) {
          EXPECT_EQ(t.name().rfind("fp8 ", 0), 0u) << t.name();
        }
      }
      const bool fp8_layout = op != GemmOp::kMoeFc1;
      EXPECT_EQ(fp8, f == Fp4Format::kMXFP4 && fp8_layout) << gemm_op_name(op);
      EXPECT_EQ(cluster, op == GemmOp::kDense || op == GemmOp::kContiguous) << gemm_op_name(op);
      // Many tokens per weight tile: the direct tile, in clusters where compiled.
      TuneShape call{op, f, GemmOutput::kBF16, 4096, 4096, 7168, op == GemmOp::kDense ? 1 : 4};
      if (op == GemmOp::kMoeFc2) call = {op, f, GemmOutput::kBF16, 4096, 4096, 8 * 256, 8, 256};
      if (op == GemmOp::kMoeFc1) call = {op, f, GemmOutput::kBF16, 4096, 512, 1024, 4};
      const GemmTactic picked = pick_tactic(problem_shape(call));
      EXPECT_FALSE(picked.fp8) << call.describe();
      EXPECT_EQ(picked.cluster, cluster ? 2 : 1) << call.describe() << ": " << picked.name();
    }
}

// heuristic_split_k: the split the heuristic gives a tile someone else
// chose (the benchmark's FP8-route rows): what pick_tactic gives its own
// tile, whatever split_k the given tile carries; for the seed-fc2 rows'
// FP8 tile (one or three 128-token tiles of 56 weight tiles, 256 experts)
// stream-K, as the direct BF16 tile gets.
TEST(TacticSpace, HeuristicSplitOfAGivenTile) {
  for (int m : {32, 128, 384}) {
    const ProblemShape s = problem_shape({GemmOp::kMoeFc2, Fp4Format::kMXFP4, GemmOutput::kBF16, m, 7168, 65536, 256, 256});
    const GemmTactic picked = pick_tactic(s);
    GemmTactic carrying = picked;
    carrying.split_k = 8;
    EXPECT_EQ(heuristic_split_k(s, carrying), picked.split_k) << m;
    int fp8_tiles = 0;
    for (GemmTactic t : compiled_tactics(Fp4Format::kMXFP4, kernels::Layout::kMoeDense)) {
      if (!t.fp8) continue;
      ++fp8_tiles;
      EXPECT_EQ(heuristic_split_k(s, t), kStreamK) << m;
    }
    EXPECT_EQ(fp8_tiles, 1);
  }
}

TEST(TacticSpace, GatherOnlyForRoutedAlphaThatItHolds) {
  auto pick = [](int m, int top_k, int width, int n = 7168, Fp4Format format = Fp4Format::kNVFP4) {
    TuneShape call{GemmOp::kMoeFc2, format, GemmOutput::kBF16, m, n, 256 * width, 256, width, top_k};
    ProblemShape s = problem_shape(call);
    s.sm_count = 132;
    return pick_tactic(s);
  };
  EXPECT_FALSE(pick(128, 0, 256).moe_gather) << "dense alpha (no top-k hint)";
  EXPECT_FALSE(pick(16, 8, 256).moe_gather) << "half a token per expert";
  const GemmTactic routed = pick(32, 8, 256);
  EXPECT_TRUE(routed.moe_gather);
  EXPECT_EQ(routed.block_n, 8) << "one token per expert: 8 a pass";
  EXPECT_EQ(routed.block_k, 256);
  EXPECT_EQ(routed.stages, 6) << "the six-stage 8-token tile holds 32 tokens";
  EXPECT_EQ(routed.split_k, kStreamK) << "112 tiles on 132 SMs";
  EXPECT_EQ(pick(32, 8, 128).block_k, 128) << "W = 128: 128-K stages";
  int most = 0;
  for (const auto& e : kernels::kernel_registry())
    if (e.tactic.moe_gather) most = std::max(most, e.max_m);
  EXPECT_FALSE(pick(most + 1, 8, 256).moe_gather) << "more tokens than any gather tile holds";
  EXPECT_EQ(pick(128, 8, 256).block_n, 8) << "four tokens per expert: 8 a pass";
  EXPECT_EQ(pick(96, 8, 256).stages, 6) << "the 8-token tile with six stages holds 96 tokens (100)";
  const GemmTactic m160 = pick(160, 8, 256);
  EXPECT_EQ(m160.block_n, 8) << "five tokens per expert: 8 a pass";
  EXPECT_EQ(m160.stages, 4) << "the four-stage 8-token tile holds 160 tokens";
  EXPECT_EQ(pick(160, 8, 256, 7168, Fp4Format::kMXFP4).block_n, 8) << "five tokens per expert, MXFP4: 8 a pass too";
  EXPECT_EQ(pick(192, 8, 256).block_n, 16) << "six tokens per expert: 16 a pass";
  EXPECT_EQ(pick(256, 8, 256).block_n, 16) << "eight tokens per expert: 16 a pass";
  EXPECT_EQ(pick(192, 8, 256).stages, 8) << "the eight-stage 16-token tile holds 192 tokens";
  EXPECT_EQ(pick(256, 8, 256).stages, 8) << "and 256";
  EXPECT_EQ(pick(288, 8, 256).stages, 8) << "and 288 (NVFP4's eight stages hold 303)";
  EXPECT_EQ(pick(320, 8, 256).stages, 6) << "320 tokens: the six-stage tile";
  EXPECT_EQ(pick(384, 8, 256).stages, 6) << "and 384";
  {
    TuneShape call{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 32, 7168, 256 * 256, 256, 256, 8};
    const TacticCheck check = check_tactic(problem_shape(call), routed);
    ASSERT_NE(check.kernel, nullptr);
    EXPECT_EQ(check.kernel->ctas_per_sm, 2) << "few tokens: the two-CTA tile";
  }
  EXPECT_EQ(pick(128, 8, 256, 2 * 132 * 64).split_k, 1) << "one tile per CTA (two a SM): nothing to share";
}

// A tactic is looked up by (format, layout, tactic) alone (entry_of, the
// dispatcher, the tuning cache), so two compiled kernels that differ in
// nothing a GemmTactic holds (CTAs an SM or consumer warpgroups) would be one
// name: the lookup finds one of them and the other is never run. (Stop 55's
// three-CTA gather tiles had the two-CTA tiles' stage counts and names: the
// sweep timed one kernel under both names and two GPU tests failed.)
TEST(TacticSpace, OneCompiledKernelPerTactic) {
  const auto& reg = kernels::kernel_registry();
  ASSERT_FALSE(reg.empty());
  for (std::size_t i = 0; i < reg.size(); ++i)
    for (std::size_t j = i + 1; j < reg.size(); ++j)
      EXPECT_FALSE(reg[i].format == reg[j].format && reg[i].layout == reg[j].layout && reg[i].tactic == reg[j].tactic)
          << "entries " << i << " and " << j << " share a tactic (" << int(reg[i].layout) << ", "
          << "ctas " << reg[i].ctas_per_sm << " / " << reg[j].ctas_per_sm << ")";
}

TEST(TacticSpace, VersionIsAStableHashOfTheCompiledSet) {
  const std::string v = tactic_space_version();
  ASSERT_EQ(v.size(), 16u);
  for (char ch : v) EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(ch))) << v;
  EXPECT_EQ(tactic_space_version(), v);
  EXPECT_EQ(fp4moe::tactic_space_version(), v);
  EXPECT_STRNE(library_version(), "");
}

TEST(TacticSpace, Fc1RunsAsOneGroupOfEveryExpertsRows) {
  const ProblemShape s = problem_shape(kCalls[6]);
  EXPECT_EQ(s.layout, kernels::Layout::kMoeFc1);
  EXPECT_EQ(s.n, 512 * 4);
  EXPECT_EQ(s.groups, 1);
  EXPECT_EQ(s.experts, 4);
  const ProblemShape fc2 = problem_shape(kCalls[4]);
  EXPECT_EQ(fc2.layout, kernels::Layout::kMoeDense);
  EXPECT_EQ(fc2.experts, 256);
  EXPECT_EQ(fc2.groups, 1);
}

}  // namespace
}  // namespace fp4moe::tuning
