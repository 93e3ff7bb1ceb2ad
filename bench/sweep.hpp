// The sweep benchmark (`fp4moe sweep`): for every GEMM/MoE row of the suites,
// the heuristic's tactic, the tuner's tactic and the best of an exhaustive
// sweep over every tactic that can run the row.
//
// Per row:
//   1. Build the row's problem (tuning::TuningProblem: the tuner's own
//      operands, random data through the library's quantizer).
//   2. Sweep: time every candidate tactic (compiled tile × split-K, filtered
//      by the argument rules) with the benchmark's timer.
//   3. Tune: tune() the row's bucket into the sweep's cache file (the
//      tuner's own problem and timing), then check that the entry point,
//      called without a tactic, now runs the tuned tactic from the cache.
//   4. Final timing, interleaved run by run so clock drift hits all three
//      alike: the entry point with the cache off (the heuristic's plan,
//      with the tail moe_dense_fc2 may split off), the entry point with the
//      cache (the tuned tactic) and the sweep's best tactic (forced). The ratios use
//      these; the sweep's own minimum is printed too (a minimum over many
//      noisy medians is biased low, so it is not the yardstick).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/suite.hpp"

namespace fp4moe::bench {

struct SweepOptions {
  TimingOptions timing;        ///< the sweep's timing of every candidate
  TimingOptions final_timing;  ///< the final, interleaved timing the ratios use
  TuneOptions tune;            ///< the tuner's own settings (cache_path is set by the sweep)
  std::string filter;       ///< only rows whose name contains this
  /// Only the candidate tactics whose name (GemmTactic::name, e.g. "swapAB
  /// bn64 bk256 st5 sk8") contains this; then the sweep's own times are all
  /// a row gets (no tuning, no final timing): for profiling and A/Bs of
  /// chosen tactics.
  std::string tactics;
  std::string cache_path;   ///< the cache the sweep tunes into (empty: a temporary file, removed after)
};

struct SweepRow {
  std::string suite, name;
  TuneShape shape;
  std::int64_t bucket = 0;
  int candidates = 0, unusable = 0;
  GemmTactic tuned, best;
  /// What the entry point runs with the cache off: the heuristic's tactic,
  /// or where moe_dense_fc2 runs two calls, "<first> + tail N: <second>".
  std::string heuristic_plan;
  /// The entry point ran the tuned tactic from the cache (or, where that
  /// tactic cannot run the row's M, the heuristic's, as it should).
  bool tuned_from_cache = false;
  double heuristic_us = 0, tuned_us = 0, best_us = 0;  ///< the final, interleaved timing
  double sweep_min_us = 0;  ///< the sweep's own minimum
  std::vector<std::pair<GemmTactic, double>> swept;  ///< every usable tactic's sweep time (µs)
  std::string first_unusable;  ///< the first tactic the entry point refused, and why
  std::string error;        ///< set when the row could not be measured
  double tuned_ratio() const { return tuned_us > 0 ? best_us / tuned_us : 0; }          ///< target ≥ 0.97
  double heuristic_ratio() const { return heuristic_us > 0 ? best_us / heuristic_us : 0; }  ///< target ≥ 0.9
};

/// The reduced sweep of `fp4moe sweep --quick`: every row still, every
/// candidate still swept and tuned, with fewer repeats (5 after 1 warm-up for
/// the sweep and the tuner, 15 for the final timing), to fit a few minutes
/// of device time.
SweepOptions quick_sweep_options();

/// Runs the sweep over `specs` (rows of `suite_of[i]`); prints a progress
/// line per row to stderr, with the time elapsed and an estimate of what is left.
std::vector<SweepRow> run_sweep(const Timer& timer, const std::vector<std::pair<std::string, GemmRowSpec>>& specs,
                                const SweepOptions& options);

/// The readable table, the per-suite summary and the targets' verdicts.
void print_sweep(const std::vector<SweepRow>& rows, const SweepOptions& options);
/// The same as a Markdown table (for docs/PERF.md).
void write_sweep_markdown(const std::string& path, const std::vector<SweepRow>& rows, const std::string& header);

}  // namespace fp4moe::bench
