// The autotuner's CPU-side parts: choosing the best of the measured tactics
// when some fail, argument checks before any GPU work, and the problems it
// builds (contiguous rows, routing).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "fp4moe/error.hpp"
#include "kernels/sm90/gemm_registry.hpp"
#include "tuning/autotuner.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/tuning_problem.hpp"

namespace fp4moe::tuning {
namespace {

std::vector<GemmTactic> tactics(int n) {
  std::vector<GemmTactic> v;
  for (int i = 0; i < n; ++i) v.push_back(GemmTactic{true, 16 << (i % 3), 256, 3 + i, 1});
  return v;
}

/// A selection of `times` (0: unusable) over tactics(times.size()).
Selection timed(const std::vector<double>& times) {
  std::size_t i = 0;
  return select_best(tactics(static_cast<int>(times.size())), [&](const GemmTactic&) -> double {
    const double t = times[i++];
    if (t == 0) throw std::runtime_error("refused");
    return t;
  });
}

TEST(Autotuner, AcrossPointsTheSmallestWorstSlowdownWins) {
  // Tactic 0 is fastest at the bucket (the last point) but 1.5x slower at
  // the first; tactic 1 is never more than 1.06x off.
  const Selection s = choose_across_points({timed({15, 10, 12}), timed({10, 10.5, 12}), timed({9, 9.5, 12})});
  ASSERT_EQ(s.timings.size(), 3u);
  EXPECT_EQ(s.best, 1);
  EXPECT_DOUBLE_EQ(s.timings[1].median_us, 9.5);  // at the bucket
  EXPECT_EQ(s.timings[1].point_us, (std::vector<double>{10, 10.5, 9.5}));
  EXPECT_EQ(s.timings[0].point_us, (std::vector<double>{15, 10, 9}));
  // One point: the fastest, as select_best.
  const Selection one = choose_across_points({timed({12, 9, 9.5})});
  EXPECT_EQ(one.best, 1);
  // Ties on the worst slowdown: the faster at the bucket.
  EXPECT_EQ(choose_across_points({timed({10, 12}), timed({12, 10})}).best, 1);
}

TEST(Autotuner, AcrossPointsATacticUnusableAnywhereIsUnusable) {
  const Selection s = choose_across_points({timed({10, 20}), timed({0, 20}), timed({10, 20})});
  EXPECT_FALSE(s.timings[0].usable);
  EXPECT_EQ(s.timings[0].error, "refused");
  EXPECT_EQ(s.timings[0].median_us, 0);
  EXPECT_EQ(s.best, 1);
  EXPECT_EQ(choose_across_points({timed({0}), timed({0})}).best, -1);
  EXPECT_EQ(choose_across_points({}).best, -1);
}

// A bucket's entry is charged, at a point its tile cannot hold, what the run
// time then runs: the heuristic's tactic there (measured once).
TEST(Autotuner, ATileThatCannotHoldAPointIsChargedTheHeuristicsTimeThere) {
  TuneShape call{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 256, 7168, 256 * 256, 256, 256, 8};
  ProblemShape shape = problem_shape(call);
  shape.sm_count = 132;
  const GemmTactic heuristic = pick_tactic(shape);
  const kernels::KernelEntry* small = nullptr;  // a gather tile that holds fewer than 256 tokens
  for (const auto& e : kernels::kernel_registry())
    if (e.format == Fp4Format::kNVFP4 && e.tactic.moe_gather && e.max_m > 0 && e.max_m < 256) small = &e;
  ASSERT_NE(small, nullptr);
  ASSERT_EQ(check_tactic(shape, small->tactic).fault, TacticFault::kTooManyTokens);
  std::vector<GemmTactic> measured;
  const MeasureFn as_run = measure_as_run(shape, [&](const GemmTactic& t) {
    measured.push_back(t);
    return t == heuristic ? 50.0 : 10.0;
  });
  EXPECT_EQ(as_run(small->tactic), 50.0);
  EXPECT_EQ(as_run(small->tactic), 50.0);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(measured[0], heuristic);
  // A tactic that can run is measured as itself.
  GemmTactic runs = small->tactic;
  for (const GemmTactic& t : candidate_tactics(shape))
    if (!(t == heuristic)) runs = t;
  ASSERT_TRUE(check_tactic(shape, runs).ok());
  EXPECT_EQ(as_run(runs), 10.0);
  EXPECT_EQ(measured.size(), 2u);
  // Where the tile holds the tokens (M = its limit), it is measured as
  // itself. (At a fixed M = 160 the tile chosen, which holds 145, never
  // could: the check was dead.)
  call.m = small->max_m;
  ProblemShape fewer = problem_shape(call);
  fewer.sm_count = 132;
  ASSERT_TRUE(check_tactic(fewer, small->tactic).ok());
  EXPECT_EQ(measure_as_run(fewer, [](const GemmTactic&) { return 7.0; })(small->tactic), 7.0);
}

TEST(Autotuner, FailingTacticsAreMarkedAndSkipped) {
  const std::vector<GemmTactic> c = tactics(6);
  std::size_t progress_calls = 0;
  const Selection s = select_best(
      c,
      [&](const GemmTactic& t) -> double {
        switch (t.stages - 3) {
          case 0: return 50.0;
          case 1: throw InvalidArgument("fp4_gemm_nt", "options.tactic", "not compiled");
          case 2: return 20.0;  // the best
          case 3: throw CudaError("cudaLaunchKernel failed: too many resources", 7);
          case 4: return std::numeric_limits<double>::quiet_NaN();
          default: return 0.0;  // not a time
        }
      },
      [&](std::size_t done, std::size_t total) {
        ++progress_calls;
        EXPECT_EQ(total, c.size());
        EXPECT_EQ(done, progress_calls);
      });
  ASSERT_EQ(s.timings.size(), c.size());
  ASSERT_EQ(s.best, 2);
  EXPECT_EQ(s.timings[2].median_us, 20.0);
  EXPECT_TRUE(s.timings[0].usable);
  EXPECT_FALSE(s.timings[1].usable);
  EXPECT_NE(s.timings[1].error.find("not compiled"), std::string::npos);
  EXPECT_FALSE(s.timings[3].usable);
  EXPECT_NE(s.timings[3].error.find("too many resources"), std::string::npos);
  EXPECT_FALSE(s.timings[4].usable);
  EXPECT_FALSE(s.timings[5].usable);
  EXPECT_EQ(progress_calls, c.size());
}

TEST(Autotuner, NoUsableTacticMeansNoBest) {
  const Selection s = select_best(tactics(3), [](const GemmTactic&) -> double { throw std::runtime_error("boom"); });
  EXPECT_EQ(s.best, -1);
  for (const TacticTiming& t : s.timings) EXPECT_FALSE(t.usable);
}

TEST(Autotuner, ABrokenContextStopsTuning) {
  int calls = 0;
  EXPECT_THROW(select_best(tactics(4),
                           [&](const GemmTactic&) -> double {
                             ++calls;
                             throw TuningAborted("context lost");
                           }),
               TuningAborted);
  EXPECT_EQ(calls, 1);
}

TEST(Autotuner, TiesKeepTheFirst) {
  const Selection s = select_best(tactics(3), [](const GemmTactic&) { return 5.0; });
  EXPECT_EQ(s.best, 0);
}

TEST(Autotuner, CacheEntryOfAResult) {
  TuneResult r;
  r.shape = TuneShape{GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, 5, 4096, 7168, 8};
  r.bucket = 8;
  r.ok = true;
  r.best = GemmTactic{true, 16, 256, 3, 2};
  r.best_us = 9.5;
  r.heuristic_us = 11;
  r.timings = {{r.best, 9.5, true, "", {9.5}}, {GemmTactic{false, 256, 128, 4, 1}, 0, false, "boom", {0}}};
  const CacheEntry e = cache_entry(r);
  EXPECT_EQ(e.key.bucket, 8);
  EXPECT_EQ(e.key.groups, 8);
  EXPECT_EQ(e.tactic, r.best);
  EXPECT_EQ(e.candidates, 2);
  ASSERT_EQ(e.unusable.size(), 1u);
  EXPECT_NE(e.unusable[0].find("boom"), std::string::npos);
}

/// tune() checks everything before it touches the GPU: on a machine without
/// one, a bad argument is InvalidArgument, never a CUDA error.
TEST(Autotuner, TuneRefusesBadArgumentsFirst) {
  const TuneShape ok{GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, 64, 256, 256, 1};
  struct Case {
    const char* what;
    TuneShape shape;
    TuneOptions options;
    const char* argument;
  };
  auto with = [&](auto change) {
    TuneShape s = ok;
    change(s);
    return s;
  };
  TuneOptions bad_reps;
  bad_reps.reps = 0;
  TuneOptions bad_max;
  bad_max.max_m = 100;
  TuneOptions small_max;
  small_max.max_m = 128;
  TuneOptions huge_max;  // (m·groups past int64 was accepted: it wrapped to 0)
  huge_max.max_m = std::int64_t(1) << 62;
  const Case cases[] = {
      {"reps", ok, bad_reps, "options.reps"},
      {"max_m", ok, bad_max, "options.max_m"},
      {"m past max", with([](TuneShape& s) { s.m = 129; }), small_max, "shapes[1].m"},
      {"m zero", with([](TuneShape& s) { s.m = 0; }), {}, "shapes[1].m"},
      {"n zero", with([](TuneShape& s) { s.n = 0; }), {}, "shapes[1].n"},
      {"k odd", with([](TuneShape& s) { s.k = 48; }), {}, "shapes[1].k"},
      {"dense groups", with([](TuneShape& s) { s.groups = 2; }), {}, "shapes[1].groups"},
      {"format", with([](TuneShape& s) { s.format = static_cast<Fp4Format>(9); }), {}, "shapes[1].format"},
      {"op", with([](TuneShape& s) { s.op = static_cast<GemmOp>(9); }), {}, "shapes[1].op"},
      {"dense nvfp4 out", with([](TuneShape& s) { s.out = GemmOutput::kNVFP4; }), {}, "shapes[1].out"},
      {"fc1 fp32 out", with([](TuneShape& s) { s.op = GemmOp::kMoeFc1; s.n = 256; s.groups = 2; s.out = GemmOutput::kFP32; }), {},
       "shapes[1].out"},
      {"fc2 width", with([](TuneShape& s) { s.op = GemmOp::kMoeFc2; s.groups = 2; s.expert_width = 96; s.k = 0; }), {},
       "shapes[1].expert_width"},
      {"fc2 top_k", with([](TuneShape& s) { s.op = GemmOp::kMoeFc2; s.groups = 2; s.expert_width = 128; s.k = 256; s.top_k = 3; }), {},
       "shapes[1].top_k"},
      {"too many rows", with([](TuneShape& s) { s.n = std::int64_t(1) << 31; }), {}, "shapes[1].n"},
      {"masked groups", with([](TuneShape& s) { s.op = GemmOp::kMasked; s.groups = 0; }), {}, "shapes[1].groups"},
      {"32-bit rows", with([](TuneShape& s) { s.op = GemmOp::kMasked; s.groups = 1024; s.n = 1 << 22; }), {}, "shapes[1]"},
      // Products that overflowed int64 and passed: experts x width, m x groups.
      {"fc2 experts past 32 bits",
       with([](TuneShape& s) { s.op = GemmOp::kMoeFc2; s.groups = (std::int64_t(1) << 57) + 1; s.expert_width = 128; s.k = 0; }), {},
       "shapes[1].groups"},
      {"fc2 width past 32 bits",
       with([](TuneShape& s) { s.op = GemmOp::kMoeFc2; s.groups = 2; s.expert_width = std::int64_t(1) << 40; s.k = 0; }), {},
       "shapes[1].expert_width"},
      {"contiguous m past 32 bits", with([](TuneShape& s) { s.op = GemmOp::kContiguous; s.groups = 4; s.m = std::int64_t(1) << 62; }),
       huge_max, "shapes[1].m"},
  };
  for (const Case& c : cases) {
    try {
      tune({ok, c.shape}, c.options);
      ADD_FAILURE() << "accepted: " << c.what;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), c.argument) << c.what << ": " << e.what();
      EXPECT_EQ(e.function(), "tune");
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.what << ": not an argument error: " << e.what();
    }
  }
}

TEST(TuningProblem, ContiguousRowsGiveTheTokenCountPerExpert) {
  for (auto [m, groups] : {std::pair<std::int64_t, std::int64_t>{8, 8}, {64, 32}, {128, 4}, {1024, 8}, {4096, 8}, {200, 3}}) {
    const std::int64_t rows = m * groups;
    const std::vector<std::int32_t> idx = contiguous_indices(rows, groups);
    ASSERT_EQ(static_cast<std::int64_t>(idx.size()), rows);
    EXPECT_EQ(rows / groups, m);
    for (std::int64_t r = 0; r < rows; ++r) {
      ASSERT_GE(idx[r], 0);
      ASSERT_LT(idx[r], groups);
      if (r > 0) {
        ASSERT_GE(idx[r], idx[r - 1]) << "an expert's rows are contiguous";
        if (idx[r] != idx[r - 1]) {
          EXPECT_EQ(r % 128, 0) << "an expert starts on a 128-row boundary";
        }
      }
    }
    if (m % 128 == 0) {  // whole segments: every expert gets exactly m rows
      for (std::int64_t g = 0; g < groups; ++g) EXPECT_EQ(std::count(idx.begin(), idx.end(), g), m) << m << " " << g;
    }
  }
}

TEST(TuningProblem, RoutingAlpha) {
  const std::vector<float> dense = routing_alpha(5, 16, 0, 1);
  for (float a : dense) {
    EXPECT_GE(a, 0.05f);
    EXPECT_LT(a, 1.0f);
  }
  const std::vector<float> top = routing_alpha(64, 256, 8, 2);
  for (int t = 0; t < 64; ++t) {
    int nonzero = 0;
    for (int e = 0; e < 256; ++e) nonzero += top[t * 256 + e] != 0.0f;
    EXPECT_EQ(nonzero, 8) << t;
  }
  EXPECT_NE(routing_alpha(4, 256, 8, 3), routing_alpha(4, 256, 8, 4));
}

}  // namespace
}  // namespace fp4moe::tuning
