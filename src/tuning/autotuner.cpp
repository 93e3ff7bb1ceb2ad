#include "tuning/autotuner.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>

#include "api/check.hpp"
#include "common/cuda_check.hpp"
#include "common/device_identity.hpp"
#include "common/device_info.hpp"
#include "common/split_k_workspace.hpp"
#include "kernels/sm90/gemm_params.hpp"
#include "tuning/buckets.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/profiler.hpp"
#include "tuning/runtime_cache.hpp"
#include "tuning/tactic_space.hpp"
#include "tuning/tuning_problem.hpp"

namespace fp4moe::tuning {

Selection select_best(const std::vector<GemmTactic>& candidates, const MeasureFn& measure, const TacticProgressFn& progress) {
  Selection s;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    TacticTiming t;
    t.tactic = candidates[i];
    try {
      const double us = measure(candidates[i]);
      if (std::isfinite(us) && us > 0) {
        t.median_us = us;
      } else {
        t.usable = false;
        t.error = "no valid time (" + std::to_string(us) + " us)";
      }
    } catch (const TuningAborted&) {
      throw;
    } catch (const std::exception& e) {
      t.usable = false;
      t.error = e.what();
    } catch (...) {
      t.usable = false;
      t.error = "unknown exception";
    }
    if (t.usable && (s.best < 0 || t.median_us < s.timings[static_cast<std::size_t>(s.best)].median_us))
      s.best = static_cast<int>(s.timings.size());
    s.timings.push_back(std::move(t));
    if (progress) progress(i + 1, candidates.size());
  }
  return s;
}

Selection choose_across_points(const std::vector<Selection>& per_point) {
  Selection out;
  if (per_point.empty()) return out;
  const std::size_t n = per_point.front().timings.size();
  std::vector<double> fastest(per_point.size(), 0);
  for (std::size_t p = 0; p < per_point.size(); ++p)
    for (const TacticTiming& t : per_point[p].timings)
      if (t.usable && (fastest[p] == 0 || t.median_us < fastest[p])) fastest[p] = t.median_us;
  double best_regret = 0;
  for (std::size_t i = 0; i < n; ++i) {
    TacticTiming t = per_point.front().timings[i];
    t.point_us.clear();
    double regret = 0;
    for (std::size_t p = 0; p < per_point.size(); ++p) {
      const TacticTiming& at = per_point[p].timings[i];
      t.point_us.push_back(at.usable ? at.median_us : 0);
      if (!at.usable && t.usable) {
        t.usable = false;
        t.error = at.error;
      }
      if (at.usable) regret = std::max(regret, at.median_us / fastest[p]);
    }
    t.median_us = t.usable ? t.point_us.back() : 0;
    if (t.usable) {
      const bool better = out.best < 0 || regret < best_regret ||
                          (regret == best_regret && t.median_us < out.timings[static_cast<std::size_t>(out.best)].median_us);
      if (better) {
        out.best = static_cast<int>(i);
        best_regret = regret;
      }
    }
    out.timings.push_back(std::move(t));
  }
  return out;
}

MeasureFn measure_as_run(const ProblemShape& shape, const MeasureFn& measure) {
  auto fallback_us = std::make_shared<double>(0.0);
  return [shape, measure, fallback_us](const GemmTactic& t) -> double {
    if (check_tactic(shape, t).fault != TacticFault::kTooManyTokens) return measure(t);
    if (*fallback_us == 0.0) *fallback_us = measure(pick_tactic(shape));
    return *fallback_us;
  };
}

CacheEntry cache_entry(const TuneResult& r) {
  CacheEntry e;
  TuneShape at = r.shape;
  at.m = r.bucket;
  e.key = key_of(at);
  e.tactic = r.best;
  e.median_us = r.best_us;
  e.heuristic_us = r.heuristic_us;
  e.candidates = static_cast<int>(r.timings.size());
  for (const TacticTiming& t : r.timings)
    if (!t.usable) e.unusable.push_back(t.tactic.name() + ": " + t.error);
  return e;
}

void check_tune_options(const TuneOptions& o) {
  const detail::ArgCheck c("tune");
  c.non_negative(o.warmup, "options.warmup");
  c.positive(o.reps, "options.reps");
  c.require(valid_max_bucket(o.max_m), "options.max_m", "must be a multiple of 128, at least 128", std::to_string(o.max_m));
}

TuneShape checked_shape(const TuneShape& in, std::size_t index, const TuneOptions& options) {
  const detail::ArgCheck c("tune");
  const std::string at = "shapes[" + std::to_string(index) + "].";
  constexpr std::int64_t kMax32 = (std::int64_t(1) << 31) - 1;
  TuneShape s = in;
  c.require(s.op <= GemmOp::kMoeFc1, at + "op", "must be a GemmOp", std::to_string(int(s.op)));
  c.require(s.format == Fp4Format::kNVFP4 || s.format == Fp4Format::kMXFP4, at + "format", "must be kNVFP4 or kMXFP4");
  if (s.op == GemmOp::kMoeFc1)
    c.require(s.out == GemmOutput::kBF16 || s.out == GemmOutput::kNVFP4, at + "out", "must be kBF16 or kNVFP4 for moe_fc1");
  else
    c.require(s.out == GemmOutput::kBF16 || s.out == GemmOutput::kFP32, at + "out", "must be kBF16 or kFP32");
  c.positive(s.m, at + "m");
  c.require(s.m <= kMax32, at + "m", "must fit 32-bit indexing", std::to_string(s.m));
  c.require(bucket_of(s.m, options.max_m) != 0, at + "m",
            "must be at most options.max_m = " + std::to_string(options.max_m) + " once rounded up to its bucket",
            std::to_string(s.m));
  c.positive(s.n, at + "n");
  c.require(s.n <= kMax32, at + "n", "must fit 32-bit indexing", std::to_string(s.n));
  if (s.op == GemmOp::kMoeFc1) c.multiple_of(s.n, 256, at + "n", "2I with I a multiple of 128: gate and up rows per expert");
  switch (s.op) {
    case GemmOp::kDense:
      c.require(s.groups == 1, at + "groups", "must be 1 for dense", std::to_string(s.groups));
      break;
    case GemmOp::kContiguous:
    case GemmOp::kMasked:
      c.positive(s.groups, at + "groups");
      c.require(s.groups <= kernels::kMaxGroups, at + "groups", "must be at most " + std::to_string(kernels::kMaxGroups),
                std::to_string(s.groups));
      break;
    case GemmOp::kMoeFc2:
    case GemmOp::kMoeFc1:
      c.positive(s.groups, at + "groups");
      // (Bounded before the products below, which must not overflow.)
      c.require(s.groups <= kMax32, at + "groups", "must fit 32-bit indexing", std::to_string(s.groups));
      break;
  }
  if (s.op == GemmOp::kMoeFc2) {
    c.positive(s.expert_width, at + "expert_width");
    c.require(s.expert_width <= kMax32, at + "expert_width", "must fit 32-bit indexing", std::to_string(s.expert_width));
    c.multiple_of(s.expert_width, 128, at + "expert_width", "W must be whole 128-column pipeline stages");
    if (s.k == 0) s.k = s.groups * s.expert_width;
    c.require(s.k == s.groups * s.expert_width, at + "k", "must be 0 or groups*expert_width", std::to_string(s.k));
    c.require(s.top_k >= 0 && s.top_k <= s.groups, at + "top_k", "must be in [0, groups]", std::to_string(s.top_k));
  } else {
    c.require(s.expert_width == 0, at + "expert_width", "must be 0 (moe_fc2 only)", std::to_string(s.expert_width));
    c.require(s.top_k == 0, at + "top_k", "must be 0 (moe_fc2 only)", std::to_string(s.top_k));
  }
  c.positive(s.k, at + "k");
  c.multiple_of(s.k, 32, at + "k", "as the GEMM entry points require");
  c.require(s.k <= kMax32, at + "k", "must fit 32-bit indexing", std::to_string(s.k));
  // Rows of A and B (all groups) at the largest token count of the bucket.
  const std::int64_t m = bucket_of(s.m);
  const std::int64_t a_rows = s.op == GemmOp::kContiguous || s.op == GemmOp::kMasked ? m * s.groups : m;
  const std::int64_t b_rows = s.op == GemmOp::kDense || s.op == GemmOp::kMoeFc2 ? s.n : s.n * s.groups;
  c.require(a_rows <= kMax32 && b_rows <= kMax32, at.substr(0, at.size() - 1),
            "A and B rows (all groups) must fit 32-bit indexing");
  return s;
}

namespace {

/// After a failed tactic: clears a recoverable error; a broken context ends
/// tuning (every later call would fail too).
void recover_or_abort(cudaStream_t stream, const std::string& what) {
  cudaGetLastError();
  cudaError_t e = cudaStreamSynchronize(stream);
  cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess && cudaDeviceSynchronize() != cudaSuccess)
    throw TuningAborted("tune: the CUDA context failed while timing " + what + " (" + cudaGetErrorName(e) + ": " +
                        cudaGetErrorString(e) + "); tuning stopped (results of earlier shapes are kept)");
}

class Stream {
 public:
  Stream() { FP4MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  // (The split-K and gathered buffers its candidates grew, up to hundreds
  // of MB, go with the stream.)
  ~Stream() { detail::destroy_own_stream(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace

std::vector<TuneResult> run_tuning(const std::vector<TuneShape>& shapes, const TuneOptions& options) {
  const detail::DeviceIdentity id = detail::device_identity(detail::current_device());
  const CacheHeader header = expected_header(id);
  const std::string path = options.cache_path.empty() ? cache_path() : options.cache_path;
  if (options.write_cache && path.empty())
    throw Error("tune: no tuning cache path (FP4MOE_TUNING_CACHE is 'off', or neither XDG_CACHE_HOME nor HOME is set); "
                "pass options.cache_path or set FP4MOE_TUNING_CACHE");
  Stream stream;
  const Profiler profiler(stream.get());
  const ProfileOptions popts{options.warmup, options.reps, options.cold_l2};
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t seed = std::random_device{}();  // fresh data every run
  std::vector<TuneResult> results;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    TuneResult r;
    r.shape = shapes[i];
    r.bucket = bucket_of(shapes[i].m, options.max_m);
    TuneShape at = shapes[i];
    at.m = r.bucket;
    ProblemShape ps = problem_shape(at);
    ps.sm_count = id.sm_count;
    r.heuristic = pick_tactic(ps);
    r.points = bucket_points(r.bucket);
    // Candidates at the bucket's smallest point: a tile that holds some of
    // its token counts but not all (the gather tiles' token limits) is timed
    // where it can run and charged the heuristic's time where it cannot
    // (measure_as_run): what the run time does with its entry.
    TuneShape at_first = at;
    at_first.m = r.points.front();
    ProblemShape ps_first = problem_shape(at_first);
    ps_first.sm_count = id.sm_count;
    const std::vector<GemmTactic> candidates = candidate_tactics(ps_first);
    const std::size_t per_point = candidates.size();
    auto report = [&](std::size_t done) {
      if (!options.progress) return;
      TuneProgress p;
      p.shape_index = i;
      p.shapes = shapes.size();
      p.tactic_index = done;
      p.tactics = per_point * r.points.size();
      p.shape = &shapes[i];
      p.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      options.progress(p);
    };
    report(0);
    std::vector<Selection> timed;
    for (std::size_t pi = 0; pi < r.points.size(); ++pi) {
      TuneShape at_point = at;
      at_point.m = r.points[pi];
      std::unique_ptr<TuningProblem> problem;
      std::string build_error;
      try {
        problem = std::make_unique<TuningProblem>(at_point, seed + 1000 * i + pi, stream.get());
      } catch (const std::exception& e) {
        build_error = std::string("the problem could not be built: ") + e.what();
        recover_or_abort(stream.get(), at_point.describe());
      }
      const MeasureFn measure = [&](const GemmTactic& t) -> double {
        if (!problem) throw Error(build_error);
        GemmOptions o;
        o.tactic = &t;
        try {
          return profiler.time([&](cudaStream_t s) { problem->run(o, s); }, popts).median_us;
        } catch (...) {
          recover_or_abort(stream.get(), at_point.describe() + " with " + t.name());
          throw;
        }
      };
      ProblemShape ps_point = problem_shape(at_point);
      ps_point.sm_count = id.sm_count;
      timed.push_back(select_best(candidates, measure_as_run(ps_point, measure),
                                  [&](std::size_t done, std::size_t) { report(pi * per_point + done); }));
    }
    Selection sel = choose_across_points(timed);
    r.timings = std::move(sel.timings);
    if (sel.best >= 0) {
      r.ok = true;
      r.best = r.timings[static_cast<std::size_t>(sel.best)].tactic;
      r.best_us = r.timings[static_cast<std::size_t>(sel.best)].median_us;
    }
    for (const TacticTiming& t : r.timings)
      if (t.usable && t.tactic == r.heuristic) r.heuristic_us = t.median_us;
    if (r.ok && options.write_cache) {
      std::vector<std::string> notes;
      merge_into_cache_file(path, header, {cache_entry(r)}, &notes);
      for (const std::string& n : notes) warn(n);
      runtime_cache().invalidate();  // the next lookup reads what was just written
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace fp4moe::tuning
