// Every tactic the tuner may time, on every GEMM/MoE row of the benchmark
// suites at its full size: each one must run without faulting the device and
// agree with the heuristic's tactic. The other GPU tests check every tactic
// against the float64 reference on shapes small enough for the CPU; this one
// covers what only the real sizes reach (row counts past 2^15, split-K
// workspaces of a gigabyte, tile counts past 2^16), where a fault would kill
// the tuner and the sweep, which time all of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/suite.hpp"
#include "common/device_info.hpp"
#include "support/test_support.hpp"
#include "tuning/tactic_space.hpp"
#include "tuning/tuning_problem.hpp"

namespace fp4moe {
namespace {

std::vector<float> download_fp32(const tuning::TuningProblem& p) {
  return test::download_as<float>(p.output(), p.output_bytes());
}

TEST(SuiteRowsEveryTactic, RunsWithoutFaultAndAgreesWithTheHeuristic) {
  FP4MOE_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  // FP4MOE_SUITE_ROWS=TEXT: only rows whose name contains TEXT (to debug one).
  const char* only = std::getenv("FP4MOE_SUITE_ROWS");
  int rows = 0, tactics = 0;
  for (const bench::Suite& suite : bench::all_suites()) {
    if (!suite.gemm_rows) continue;
    for (const bench::GemmRowSpec& spec : suite.gemm_rows()) {
      if (only && spec.name.find(only) == std::string::npos) continue;
      TuneShape shape = spec.shape;
      if (shape.out == GemmOutput::kBF16) shape.out = GemmOutput::kFP32;  // compare in FP32
      if (shape.out != GemmOutput::kFP32) continue;  // (no suite row writes NVFP4 yet)
      SCOPED_TRACE(spec.name);
      const tuning::TuningProblem problem(shape, 11 + rows, stream);
      tuning::ProblemShape ps = tuning::problem_shape(shape);
      ps.sm_count = detail::current_device_sm_count();
      const GemmTactic heuristic = tuning::pick_tactic(ps);
      GemmOptions ho;
      ho.tactic = &heuristic;
      ASSERT_EQ(cudaMemsetAsync(const_cast<void*>(problem.output()), 0xff, problem.output_bytes(), stream),
                cudaSuccess);  // (the baseline too: a tile it left unwritten stays NaN)
      problem.run(ho, stream);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << heuristic.name();
      const std::vector<float> want = download_fp32(problem);
      float peak = 0;
      for (float v : want) {
        ASSERT_TRUE(std::isfinite(v)) << "the heuristic's tactic " << heuristic.name() << " left an element unwritten";
        peak = std::max(peak, std::fabs(v));
      }
      ASSERT_GT(peak, 0.0f) << "random operands give a nonzero product";
      for (const GemmTactic& t : tuning::candidate_tactics(ps)) {
        SCOPED_TRACE(t.name());
        ASSERT_EQ(cudaMemsetAsync(const_cast<void*>(problem.output()), 0xff, problem.output_bytes(), stream),
                  cudaSuccess);  // NaN: a tile left unwritten fails the comparison
        GemmOptions o;
        o.tactic = &t;
        problem.run(o, stream);
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << "the tactic faulted the device";
        const std::vector<float> got = download_fp32(problem);
        // Tactics sum K in different orders (split-K slices, tile shapes):
        // FP32 rounding differences only, far below the peak.
        std::size_t bad = 0, first = 0;
        for (std::size_t i = 0; i < got.size(); ++i)
          if (!(std::fabs(got[i] - want[i]) <= 1e-4f * peak) && bad++ == 0) first = i;
        EXPECT_EQ(bad, 0u) << "first at " << first << ": " << got[first] << " vs " << want[first] << " (peak " << peak
                           << ")";
        ++tactics;
      }
      ++rows;
    }
  }
  std::printf("%d suite rows, %d tactic runs\n", rows, tactics);
  if (!only) {  // (the suites' GEMM rows: a listing that lost them would pass here)
    EXPECT_GT(rows, 0);
    EXPECT_GT(tactics, rows);
  }
  test::destroy_stream(stream);
}

}  // namespace
}  // namespace fp4moe
