// The autotuner: times every candidate tactic of a shape and keeps the
// fastest. The selection loop is separate from the GPU (measure is a
// callback), so its failure handling is tested on the CPU. Host only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fp4moe/error.hpp"
#include "fp4moe/tuning.hpp"
#include "tuning/tactic_space.hpp"
#include "tuning/tuning_cache.hpp"

namespace fp4moe::tuning {

/// Thrown by a measurement when tuning cannot go on at all (the CUDA context
/// is broken): select_best lets it through instead of marking one tactic.
class TuningAborted : public Error {
 public:
  using Error::Error;
};

/// Times one tactic, in microseconds. Throwing anything but TuningAborted, or
/// returning a time that is not finite and positive, marks it unusable.
using MeasureFn = std::function<double(const GemmTactic&)>;
/// Called after each tactic: (tactics done, tactics).
using TacticProgressFn = std::function<void(std::size_t, std::size_t)>;

struct Selection {
  std::vector<TacticTiming> timings;  ///< one per candidate, in order
  int best = -1;                      ///< index into timings; -1 when none is usable
};

/// Measures every candidate; the best is the smallest time (the first on ties).
Selection select_best(const std::vector<GemmTactic>& candidates, const MeasureFn& measure,
                      const TacticProgressFn& progress = {});

/// One tactic for a bucket timed at several token counts (per_point[p]:
/// the same candidates, in the same order, timed at point p; the bucket
/// last): the tactic whose worst slowdown against the fastest at each point
/// is smallest (ties: the faster at the last point). A tactic unusable at
/// any point is unusable (its first error is kept). The result's timings
/// hold each tactic's time at every point (point_us) and at the last
/// (median_us).
Selection choose_across_points(const std::vector<Selection>& per_point);

/// What a bucket's entry costs at one of its points, as the run time runs
/// it: a cached tactic the call cannot run there (a gather tile past its
/// token limit) falls back to the heuristic's tactic, so such a tactic is
/// charged the heuristic's time at that point (measured once); any other
/// tactic is measured as itself. `shape` is the problem at that point.
MeasureFn measure_as_run(const ProblemShape& shape, const MeasureFn& measure);

/// The cache entry of a tuned result (result.ok must hold).
CacheEntry cache_entry(const TuneResult& result);

/// Checks a shape and options against the tuner's rules, throwing
/// InvalidArgument("tune", "shapes[i].<field>" or "options.<field>", rule).
/// Returns the shape normalised: k filled in for FC2 from groups·width.
TuneShape checked_shape(const TuneShape& shape, std::size_t index, const TuneOptions& options);
void check_tune_options(const TuneOptions& options);

/// tune() without the argument checks (done by the caller): runs on the
/// current device, writes to options.cache_path (or the current cache path).
std::vector<TuneResult> run_tuning(const std::vector<TuneShape>& shapes, const TuneOptions& options);

}  // namespace fp4moe::tuning
