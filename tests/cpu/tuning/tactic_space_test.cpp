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
      for (int split : {0, 1, 2, 3, 4, 8, 16}) {
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

TEST(TacticSpace, FiltersSplitKByUnitsAndByTile) {
  // K = 256 is one K block of every dense tile: only split_k = 1.
  for (const GemmTactic& t : candidate_tactics(problem_shape(kCalls[1]))) EXPECT_EQ(t.split_k, 1) << t.name();
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
