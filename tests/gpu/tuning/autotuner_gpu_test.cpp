// The autotuner on the GPU: tuning a small shape list of every operation end
// to end, the entry points then running the tuned tactics (checked against
// the float64 reference and against the same tactic forced), CUDA-graph
// capture with the cache, a refused cache, a failing tactic, and the cost of
// a lookup on the device's path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "api/gemm_dispatch.hpp"
#include "common/device_identity.hpp"
#include "common/device_info.hpp"
#include "fp4moe/tuning.hpp"
#include "gemm/gemm_test_util.hpp"
#include "support/test_support.hpp"
#include "tuning/autotuner.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/profiler.hpp"
#include "tuning/runtime_cache.hpp"
#include "tuning/tactic_space.hpp"
#include "tuning/tuning_problem.hpp"

namespace fp4moe {
namespace {

namespace fs = std::filesystem;
using Source = detail::PlannedTactic::Source;

/// Each test tunes into its own cache file, and leaves the process's path as
/// it found it.
class TunerGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    FP4MOE_REQUIRE_GPU();
    path_ = (fs::temp_directory_path() / ("fp4moe-tuner-gpu-" + std::to_string(::getpid()) + ".json")).string();
    std::remove(path_.c_str());
    set_tuning_cache_path(path_);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    test::destroy_stream(stream_);
    set_tuning_cache_path("");
    if (!path_.empty()) {
      std::remove(path_.c_str());
      std::remove((path_ + ".lock").c_str());
    }
  }
  static TuneOptions quick() {
    TuneOptions o;
    o.warmup = 1;
    o.reps = 5;
    return o;
  }
  static std::vector<std::uint8_t> download(const tuning::TuningProblem& p) {
    return test::download_as<std::uint8_t>(p.output(), p.output_bytes());
  }
  std::string path_;
  cudaStream_t stream_ = nullptr;
};

std::vector<TuneShape> small_list() {
  return {
      {GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, 40, 512, 1024, 1},
      {GemmOp::kMasked, Fp4Format::kMXFP4, GemmOutput::kBF16, 8, 256, 512, 4},
      {GemmOp::kContiguous, Fp4Format::kNVFP4, GemmOutput::kFP32, 128, 256, 512, 2},
      {GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 16, 256, 0, 4, 128, 2},
      {GemmOp::kMoeFc1, Fp4Format::kMXFP4, GemmOutput::kBF16, 32, 256, 256, 2},
      {GemmOp::kMoeFc1, Fp4Format::kNVFP4, GemmOutput::kNVFP4, 64, 256, 512, 2},
  };
}

TEST_F(TunerGpu, TunesAShapeListEndToEndAndTheEntryPointsUseIt) {
  const std::vector<TuneShape> shapes = small_list();
  std::size_t progress_calls = 0;
  TuneOptions opt = quick();
  opt.progress = [&](const TuneProgress& p) {
    ++progress_calls;
    EXPECT_EQ(p.shapes, shapes.size());
    EXPECT_LE(p.tactic_index, p.tactics);
  };
  const std::vector<TuneResult> results = tune(shapes, opt);
  ASSERT_EQ(results.size(), shapes.size());
  std::size_t tactics_timed = 0;
  for (const TuneResult& r : results) {
    SCOPED_TRACE(r.shape.describe());
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.bucket, tuning_bucket(r.shape.m));
    TuneShape at = r.shape;
    at.m = r.bucket;
    if (at.op == GemmOp::kMoeFc2) at.k = at.groups * at.expert_width;
    const std::vector<GemmTactic> space = tuning::candidate_tactics(tuning::problem_shape(at));
    ASSERT_EQ(r.timings.size(), space.size()) << "every tactic of the space is timed";
    double best = 1e30;
    for (const TacticTiming& t : r.timings) {
      EXPECT_TRUE(t.usable) << t.tactic.name() << ": " << t.error;
      if (t.usable) best = std::min(best, t.median_us);
    }
    EXPECT_EQ(r.best_us, best);
    EXPECT_GT(r.heuristic_us, 0) << "the heuristic's tactic is in the space";
    tactics_timed += r.timings.size();
    std::printf("tuned %-52s bucket %4lld: %-26s %8.2f us (heuristic %-26s %8.2f us)\n", r.shape.describe().c_str(),
                static_cast<long long>(r.bucket), r.best.name().c_str(), r.best_us, r.heuristic.name().c_str(),
                r.heuristic_us);
  }
  EXPECT_EQ(progress_calls, tactics_timed + shapes.size());
  // The cache file holds one entry per shape and is usable here.
  const std::string listing = describe_tuning_cache();
  EXPECT_NE(listing.find(std::to_string(shapes.size()) + " entries"), std::string::npos) << listing;
  EXPECT_NE(listing.find("usable on this device"), std::string::npos) << listing;
  EXPECT_EQ(load_tuning_cache(), shapes.size());

  for (const TuneResult& r : results) {
    SCOPED_TRACE(r.shape.describe());
    GemmTactic cached;
    ASSERT_TRUE(cached_tactic(r.shape, &cached));
    EXPECT_EQ(cached, r.best);
    // Another token count in the same bucket runs the tuned tactic, with the
    // same result as that tactic forced.
    TuneShape same_bucket = r.shape;
    same_bucket.m = r.bucket > 8 ? r.bucket - 3 : r.bucket;
    ASSERT_EQ(tuning_bucket(same_bucket.m), r.bucket);
    const tuning::TuningProblem p(same_bucket, 77, stream_);
    p.run(GemmOptions{}, stream_);
    EXPECT_EQ(detail::last_planned_tactic().source, Source::kCache);
    EXPECT_EQ(detail::last_planned_tactic().tactic, r.best);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    const std::vector<std::uint8_t> via_cache = download(p);
    ASSERT_EQ(cudaMemsetAsync(const_cast<void*>(p.output()), 0, p.output_bytes(), stream_), cudaSuccess);
    GemmOptions forced;
    forced.tactic = &r.best;
    p.run(forced, stream_);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_TRUE(download(p) == via_cache) << "the cached tactic is the tactic that ran";
    // A bucket nobody tuned: the heuristic decides.
    TuneShape elsewhere = r.shape;
    elsewhere.m = 300;
    GemmTactic none;
    EXPECT_FALSE(cached_tactic(elsewhere, &none));
    const tuning::TuningProblem q(elsewhere, 78, stream_);
    q.run(GemmOptions{}, stream_);
    EXPECT_EQ(detail::last_planned_tactic().source, Source::kHeuristic);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }

  // The tuned dense tactic against the float64 reference.
  test::Rng rng;
  test::GemmCase c;
  c.format = Fp4Format::kNVFP4;
  c.layout = test::GemmLayout::kDense;
  c.m = 37;
  c.n = 512;
  c.k = 1024;
  c.out = DType::kBF16;
  const test::GemmResult res = test::run_gemm_case(c, rng);
  EXPECT_EQ(detail::last_planned_tactic().source, Source::kCache);
  EXPECT_EQ(detail::last_planned_tactic().tactic, results[0].best);
  test::expect_gemm_ok(c, res);

  // Off: the heuristic everywhere.
  set_tuning_cache_enabled(false);
  const tuning::TuningProblem p(shapes[0], 79, stream_);
  p.run(GemmOptions{}, stream_);
  EXPECT_EQ(detail::last_planned_tactic().source, Source::kHeuristic);
  set_tuning_cache_enabled(true);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

TEST_F(TunerGpu, GraphCaptureWithTheCache) {
  // A dense and an MoE shape; each captured twice: with the table already
  // loaded, and with the file read by the first lookup inside the capture.
  const std::vector<TuneShape> shapes = {small_list()[0], small_list()[3]};
  for (const TuneResult& r : tune(shapes, quick())) ASSERT_TRUE(r.ok) << r.shape.describe();
  for (bool load_inside_capture : {false, true}) {
    for (const TuneShape& s : shapes) {
      SCOPED_TRACE(s.describe() + (load_inside_capture ? " (cache read during capture)" : ""));
      const tuning::TuningProblem p(s, 5, stream_);
      p.run(GemmOptions{}, stream_);  // eager, and the split-K workspace for this stream
      ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
      const std::vector<std::uint8_t> eager = download(p);
      ASSERT_EQ(cudaMemsetAsync(const_cast<void*>(p.output()), 0, p.output_bytes(), stream_), cudaSuccess);
      if (load_inside_capture) reload_tuning_cache();
      cudaGraph_t graph = nullptr;
      ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
      p.run(GemmOptions{}, stream_);
      ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
      EXPECT_EQ(detail::last_planned_tactic().source, Source::kCache);
      cudaGraphExec_t exec = nullptr;
      ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
      EXPECT_TRUE(download(p) == eager) << "the graph replays the tuned call";
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
  }
}

TEST_F(TunerGpu, ACacheOfAnotherDeviceIsRefusedAndTheHeuristicRuns) {
  const TuneShape s = small_list()[0];
  tuning::ProblemShape ps = tuning::problem_shape(s);
  ps.sm_count = detail::current_device_sm_count();
  const GemmTactic heuristic = tuning::pick_tactic(ps);
  GemmTactic other;
  for (const GemmTactic& t : tuning::candidate_tactics(ps))
    if (!(t == heuristic)) other = t;
  tuning::CacheHeader h = tuning::expected_header(detail::device_identity(detail::current_device()));
  h.device = "Some Other GPU";
  tuning::CacheEntry e;
  e.key = tuning::key_of(s);
  e.tactic = other;
  tuning::merge_into_cache_file(path_, h, {e});
  testing::internal::CaptureStderr();
  EXPECT_EQ(load_tuning_cache(), 0u);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Some Other GPU"), std::string::npos) << err;
  EXPECT_NE(err.find("ignored"), std::string::npos) << err;
  const tuning::TuningProblem p(s, 1, stream_);
  p.run(GemmOptions{}, stream_);
  EXPECT_EQ(detail::last_planned_tactic().source, Source::kHeuristic);
  EXPECT_EQ(detail::last_planned_tactic().tactic, heuristic);
  // The same entry under this device's header is used.
  tuning::merge_into_cache_file(path_, tuning::expected_header(detail::device_identity(detail::current_device())), {e});
  EXPECT_EQ(load_tuning_cache(), 1u);
  p.run(GemmOptions{}, stream_);
  EXPECT_EQ(detail::last_planned_tactic().source, Source::kCache);
  EXPECT_EQ(detail::last_planned_tactic().tactic, other);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

TEST_F(TunerGpu, AFailingTacticIsRecordedAndTuningGoesOn) {
  const TuneShape s = small_list()[1];
  const tuning::TuningProblem p(s, 3, stream_);
  const tuning::Profiler profiler(stream_);
  std::vector<GemmTactic> candidates = tuning::candidate_tactics(tuning::problem_shape(s));
  GemmTactic uncompiled = candidates.front();
  uncompiled.block_n = 24;
  GemmTactic bad_split = candidates.front();
  bad_split.split_k = 5;
  candidates.insert(candidates.begin() + 1, uncompiled);
  candidates.push_back(bad_split);
  const tuning::Selection sel = tuning::select_best(candidates, [&](const GemmTactic& t) {
    GemmOptions o;
    o.tactic = &t;
    return profiler.time([&](cudaStream_t st) { p.run(o, st); }, {1, 3, true}).median_us;
  });
  ASSERT_GE(sel.best, 0);
  EXPECT_FALSE(sel.timings[1].usable);
  EXPECT_NE(sel.timings[1].error.find("options.tactic"), std::string::npos) << sel.timings[1].error;
  EXPECT_FALSE(sel.timings.back().usable);
  for (std::size_t i = 0; i < sel.timings.size(); ++i)
    if (i != 1 && i + 1 != sel.timings.size()) {
      EXPECT_TRUE(sel.timings[i].usable) << sel.timings[i].error;
    }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(TunerGpu, LookupOnTheEntryPointsPathCostsWellUnderAMicrosecond) {
  const TuneShape s = small_list()[1];
  ASSERT_TRUE(tune({s}, quick())[0].ok);
  ASSERT_EQ(load_tuning_cache(), 1u);
  const tuning::ProblemKey hit = tuning::key_of(s);
  TuneShape other = s;
  other.n = 768;
  const tuning::ProblemKey miss = tuning::key_of(other);
  // Under compute-sanitizer, which intercepts every runtime call, the times
  // are the tool's: the loops run shorter and only their results are checked.
  const bool timed = !test::under_sanitizer();
  const int kLookups = timed ? 1000000 : 1000;
  int hits = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kLookups; ++i)  // what plan_gemm does: the device, then the table
    hits += tuning::runtime_cache().lookup(detail::current_device(), i % 2 ? miss : hit) != nullptr;
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kLookups;
  std::printf("tuning-cache lookup with the device query: %.1f ns\n", ns);
  EXPECT_EQ(hits, kLookups / 2);
  if (timed) {
    EXPECT_LT(ns, 1000.0);
  }

  // The whole planning of an entry point (key, lookup, re-check of the cached
  // tactic, grid bound), with a hit and, for comparison, with the heuristic.
  const detail::ArgCheck c("m_grouped_fp4_gemm_nt_masked");
  auto plan_ns = [&](Source want) {
    const int kPlans = timed ? 200000 : 200;
    const auto p0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kPlans; ++i) detail::plan_gemm(c, s, s.m, GemmOptions{});
    const double per = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - p0).count() / kPlans;
    EXPECT_EQ(detail::last_planned_tactic().source, want);
    return per;
  };
  const double hit_ns = plan_ns(Source::kCache);
  set_tuning_cache_enabled(false);
  const double heuristic_ns = plan_ns(Source::kHeuristic);
  set_tuning_cache_enabled(true);
  std::printf("plan_gemm: %.1f ns with a cache hit, %.1f ns with the heuristic\n", hit_ns, heuristic_ns);
  if (timed) {
    EXPECT_LT(hit_ns, 1000.0);
  }
}

}  // namespace
}  // namespace fp4moe
