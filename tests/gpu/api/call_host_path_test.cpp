// What an entry point remembers between and within calls to cut its host
// time (docs/PERF.md stop 71): the heuristic's pick per shape
// (gemm_dispatch.cpp) must be the heuristic's own for every shape, also
// after other shapes were planned and for shapes that differ in one field
// only; the current device is asked once per call (CallDeviceScope) and
// again in the next call. The device part's second half needs two GPUs.
#include <gtest/gtest.h>

#include <vector>

#include "api/gemm_dispatch.hpp"
#include "common/call_device_scope.hpp"
#include "common/device_info.hpp"
#include "support/test_support.hpp"
#include "tuning/tactic_space.hpp"

namespace fp4moe {
namespace {

/// Shapes of every layout, in pairs that differ in one field (M, N, K,
/// groups, format, the top-k hint), and with M at the tile boundaries.
std::vector<TuneShape> shapes() {
  std::vector<TuneShape> out;
  for (std::int64_t m : {1, 2, 3, 8, 17, 64, 65, 127, 128, 129, 4099}) {
    out.push_back({GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, m, 7168, 2048, 1});
    out.push_back({GemmOp::kDense, Fp4Format::kMXFP4, GemmOutput::kBF16, m, 7168, 2048, 1});
    out.push_back({GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, m, 2112, 7168, 1});
    out.push_back({GemmOp::kContiguous, Fp4Format::kNVFP4, GemmOutput::kFP32, m, 4096, 7168, 4});
    out.push_back({GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, m, 4096, 7168, 8});
    out.push_back({GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, m, 4096, 7168, 32});
    out.push_back({GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, m, 7168, 256 * 256, 256, 256});
    TuneShape routed = out.back();
    routed.top_k = 8;
    out.push_back(routed);
    out.push_back({GemmOp::kMoeFc1, Fp4Format::kNVFP4, GemmOutput::kBF16, m, 512, 1024, 4});
  }
  return out;
}

TEST(CallHostPath, RememberedPicksAreTheHeuristics) {
  FP4MOE_REQUIRE_GPU();
  const int sms = detail::current_device_sm_count();
  const std::vector<TuneShape> all = shapes();
  int checked = 0;
  for (int round = 0; round < 2; ++round) {  // the second round plans from what the first remembered
    for (bool prepacked : {false, true}) {
      for (const TuneShape& call : all) {
        if (prepacked && call.op == GemmOp::kMoeFc1) continue;  // (FC1 takes no prepacked B)
        SCOPED_TRACE(call.describe() + (prepacked ? " prepacked" : ""));
        const detail::ArgCheck c("test");
        GemmOptions opt;
        opt.moe_top_k = call.top_k;
        const std::int64_t rows = call.op == GemmOp::kContiguous ? call.m * call.groups : call.m;  // (A's rows)
        const detail::GemmPlan plan = detail::plan_gemm(c, call, rows, opt, prepacked);
        const detail::PlannedTactic& planned = detail::last_planned_tactic();
        if (planned.source != detail::PlannedTactic::Source::kHeuristic) continue;  // (a tuning cache's entry)
        tuning::ProblemShape shape = tuning::problem_shape(call);
        shape.top_k = call.top_k;
        shape.sm_count = sms;
        shape.b_prepacked = prepacked;
        const GemmTactic want = tuning::pick_tactic(shape);
        EXPECT_EQ(planned.tactic, want) << planned.tactic.name() << " vs " << want.name();
        EXPECT_EQ(plan.kernel, tuning::check_tactic(shape, want).kernel);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(CallHostPath, TheDeviceIsAskedOncePerCall) {
  FP4MOE_REQUIRE_GPU();
  int here = -1;
  ASSERT_EQ(cudaGetDevice(&here), cudaSuccess);
  {
    const detail::CallDeviceScope call;
    EXPECT_EQ(detail::current_device(), here);
    const detail::CallDeviceScope nested;
    EXPECT_EQ(detail::current_device(), here);
  }
  EXPECT_EQ(detail::current_device(), here);
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 2) GTEST_SKIP() << "the rest needs two GPUs (" << count << " here)";
  const int other = here == 0 ? 1 : 0;
  {
    const detail::CallDeviceScope call;
    EXPECT_EQ(detail::current_device(), here);
    ASSERT_EQ(cudaSetDevice(other), cudaSuccess);  // (nothing in a call does this: the answer stays)
    EXPECT_EQ(detail::current_device(), here);
    {
      const detail::CallDeviceScope nested;
      EXPECT_EQ(detail::current_device(), here);
    }
    EXPECT_EQ(detail::current_device(), here);
  }
  EXPECT_EQ(detail::current_device(), other) << "the next call asks again";
  {
    const detail::CallDeviceScope call;
    EXPECT_EQ(detail::current_device(), other);
  }
  ASSERT_EQ(cudaSetDevice(here), cudaSuccess);
  EXPECT_EQ(detail::current_device(), here);
}

}  // namespace
}  // namespace fp4moe
