#include "bench/sweep.hpp"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>

#include "api/gemm_dispatch.hpp"
#include "bench/row_filter.hpp"
#include "common/device_info.hpp"
#include "fp4moe/error.hpp"
#include "tuning/autotuner.hpp"
#include "tuning/buckets.hpp"
#include "tuning/runtime_cache.hpp"
#include "tuning/tactic_space.hpp"
#include "tuning/tuning_problem.hpp"

namespace fp4moe::bench {
namespace {

constexpr double kTunedTarget = 0.97, kHeuristicTarget = 0.9;

/// Turns the run-time cache lookup off while it lives (the entry point then
/// plans as with no cache: the heuristic's tactic, and for moe_dense_fc2 the
/// tail it may split off), and back to what it was.
class CacheLookupOff {
 public:
  CacheLookupOff() : was_(tuning::runtime_cache().enabled()) { tuning::runtime_cache().set_enabled(false); }
  ~CacheLookupOff() { tuning::runtime_cache().set_enabled(was_); }
  CacheLookupOff(const CacheLookupOff&) = delete;
  CacheLookupOff& operator=(const CacheLookupOff&) = delete;

 private:
  bool was_;
};

/// Restores the process's cache path when the sweep ends, however it ends,
/// and removes a temporary cache.
class SweepCache {
 public:
  explicit SweepCache(const std::string& path) : path_(path), temporary_(path.empty()) {
    if (temporary_) path_ = "/tmp/fp4moe-sweep-" + std::to_string(::getpid()) + ".json";
    if (temporary_) std::remove(path_.c_str());
    set_tuning_cache_path(path_);
  }
  ~SweepCache() {
    set_tuning_cache_path("");
    if (temporary_) {
      std::remove(path_.c_str());
      std::remove((path_ + ".lock").c_str());
    }
  }
  SweepCache(const SweepCache&) = delete;
  SweepCache& operator=(const SweepCache&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool temporary_;
};

void measure_row(const Timer& timer, SweepRow& row, const SweepOptions& options, const std::string& cache, std::uint64_t seed) {
  const tuning::TuningProblem problem(row.shape, seed, timer.stream());
  tuning::ProblemShape ps = tuning::problem_shape(row.shape);
  ps.sm_count = detail::current_device_sm_count();
  std::vector<GemmTactic> candidates = tuning::candidate_tactics(ps);
  if (!options.tactics.empty())
    std::erase_if(candidates, [&](const GemmTactic& t) { return !row_selected(options.tactics, t.name()); });
  row.candidates = static_cast<int>(candidates.size());
  auto forced = [&](const GemmTactic& t) {
    return [&problem, t](cudaStream_t s) {
      GemmOptions o;
      o.tactic = &t;
      problem.run(o, s);
    };
  };
  // 2. The exhaustive sweep.
  for (const GemmTactic& t : candidates) {
    try {
      const double us = timer.time(forced(t), options.timing).median_us;
      row.swept.emplace_back(t, us);
      if (row.sweep_min_us == 0 || us < row.sweep_min_us) {
        row.sweep_min_us = us;
        row.best = t;
      }
    } catch (const std::exception& e) {
      // A tactic the entry point refuses is unusable; one that faults on the
      // device breaks the context for everything after it, so say which.
      cudaGetLastError();
      const cudaError_t sticky = cudaDeviceSynchronize();
      if (sticky != cudaSuccess)
        throw tuning::TuningAborted("the CUDA context failed while sweeping " + t.name() + " (" + cudaGetErrorName(sticky) +
                          "): " + e.what());
      ++row.unusable;
      if (row.first_unusable.empty()) row.first_unusable = t.name() + ": " + e.what();
    }
  }
  if (row.sweep_min_us == 0)
    throw Error(options.tactics.empty() ? "no tactic could run the row"
                                        : "no tactic named like '" + options.tactics + "' could run the row");
  if (!options.tactics.empty()) return;  // chosen tactics: their sweep times only
  // 3. Tune the row's bucket into the sweep's cache, then check the entry
  //    point picks the tuned tactic up from it.
  TuneOptions topt = options.tune;
  topt.cache_path = cache;
  topt.write_cache = true;
  const TuneResult tuned = tune({row.shape}, topt).front();
  if (!tuned.ok) throw Error("the tuner found no usable tactic");
  row.tuned = tuned.best;
  problem.run(GemmOptions{}, timer.stream());
  const detail::PlannedTactic& ran = detail::last_planned_tactic();
  // Where the tuned tactic cannot run this row (a tile past its token limit
  // inside the bucket), the entry point rightly runs the heuristic's.
  tuning::ProblemShape here = tuning::problem_shape(row.shape);
  here.sm_count = detail::current_device_sm_count();
  row.tuned_from_cache = tuning::check_tactic(here, row.tuned).ok()
                             ? ran.source == detail::PlannedTactic::Source::kCache && ran.tactic == row.tuned
                             : ran.source == detail::PlannedTactic::Source::kHeuristic;
  // 4. Final timing, interleaved. The heuristic's column is the entry point
  //    with the cache off, not the heuristic's tactic forced: where moe_dense_fc2
  //    splits off a tail (tuning::moe_tail_tokens), that is what runs.
  auto heuristic_plan = [&problem](cudaStream_t s) {
    const CacheLookupOff off;
    problem.run(GemmOptions{}, s);
  };
  heuristic_plan(timer.stream());
  const detail::PlannedTactic& planned = detail::last_planned_tactic();
  row.heuristic_plan = planned.ran_text();
  const std::vector<TimeStats> t = timer.time_interleaved(
      {heuristic_plan, [&problem](cudaStream_t s) { problem.run(GemmOptions{}, s); }, forced(row.best)},
      options.final_timing);
  row.heuristic_us = t[0].median_us;
  row.tuned_us = t[1].median_us;
  row.best_us = t[2].median_us;
}

std::string ratio_text(double r) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.3f", r);
  return buf;
}

}  // namespace

SweepOptions quick_sweep_options() {
  SweepOptions o;
  o.timing.warmup = 1;
  o.timing.reps = 5;
  o.tune.warmup = 1;
  o.tune.reps = 5;
  // The ratios rest on the final timing: it keeps more repeats (it times
  // three tactics per row, the sweep and the tuner a dozen or more each).
  o.final_timing.warmup = 1;
  o.final_timing.reps = 15;
  return o;
}

std::vector<SweepRow> run_sweep(const Timer& timer, const std::vector<std::pair<std::string, GemmRowSpec>>& specs,
                                const SweepOptions& options) {
  const SweepCache cache(options.cache_path);
  std::vector<SweepRow> rows;
  std::size_t total = 0;
  for (const auto& [suite, spec] : specs) total += row_selected(options.filter, spec.name);
  const std::uint64_t seed = std::random_device{}();
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [suite, spec] : specs) {
    if (!row_selected(options.filter, spec.name)) continue;
    SweepRow row;
    row.suite = suite;
    row.name = spec.name;
    row.shape = spec.shape;
    row.bucket = tuning::bucket_of(spec.shape.m);
    bool context_lost = false;
    try {
      measure_row(timer, row, options, cache.path(), seed + 7919 * rows.size());
    } catch (const tuning::TuningAborted& e) {  // the device context is gone: nothing after it can run
      row.error = e.what();
      context_lost = true;
    } catch (const std::exception& e) {
      row.error = e.what();
      cudaGetLastError();
    }
    rows.push_back(row);
    // Rows differ by 100x in cost (decode vs 8192^3), so the estimate is rough.
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double left = elapsed / double(rows.size()) * double(total - rows.size());
    if (row.error.empty()) {
      if (!options.tactics.empty()) {  // chosen tactics: no tuned or final timing to show
        std::fprintf(stderr, "[%zu/%zu %4.0fs, ~%.0fs left] %-44s (%d tactics named like '%s')\n", rows.size(), total,
                     elapsed, left, row.name.c_str(), row.candidates, options.tactics.c_str());
      } else {
        std::fprintf(stderr,
                     "[%zu/%zu %4.0fs, ~%.0fs left] %-44s heuristic %9.2f us  tuned %9.2f us  best %9.2f us  (%d tactics)%s\n",
                     rows.size(), total, elapsed, left, row.name.c_str(), row.heuristic_us, row.tuned_us, row.best_us,
                     row.candidates, row.tuned_from_cache ? "" : "  TUNED TACTIC NOT TAKEN FROM THE CACHE");
      }
      // Every tactic's sweep time: what the heuristic is fitted to.
      for (const auto& [tactic, us] : row.swept) std::fprintf(stderr, "      %-26s %10.2f us\n", tactic.name().c_str(), us);
      if (row.unusable)
        std::fprintf(stderr, "      %d tactic(s) refused; the first: %s\n", row.unusable, row.first_unusable.c_str());
    } else {
      std::fprintf(stderr, "[%zu/%zu %4.0fs, ~%.0fs left] %-44s failed: %s\n", rows.size(), total, elapsed, left,
                   row.name.c_str(), row.error.c_str());
    }
    if (context_lost) {
      std::fprintf(stderr, "fp4moe sweep: stopped; the device context cannot run the remaining %zu rows\n",
                   total - rows.size());
      break;
    }
  }
  return rows;
}

namespace {

/// `--tactics`: each row's chosen tactics and their sweep times.
void print_chosen_tactics(const std::vector<SweepRow>& rows, const SweepOptions& options) {
  std::printf("\n== sweep of the tactics named like '%s' (no tuning, no final timing) ==\n", options.tactics.c_str());
  std::printf("timing: CUDA events, %s L2, median of %d runs after %d warm-up\n\n", options.timing.cold_l2 ? "cold" : "warm",
              options.timing.reps, options.timing.warmup);
  std::printf("%-44s %-26s %10s\n", "row", "tactic", "us");
  for (const SweepRow& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-44s failed: %s\n", r.name.c_str(), r.error.c_str());
      continue;
    }
    for (const auto& [tactic, us] : r.swept) std::printf("%-44s %-26s %10.2f\n", r.name.c_str(), tactic.name().c_str(), us);
  }
}

}  // namespace

void print_sweep(const std::vector<SweepRow>& rows, const SweepOptions& options) {
  if (!options.tactics.empty()) {
    print_chosen_tactics(rows, options);
    return;
  }
  std::printf("\n== sweep: heuristic vs tuned vs best of the exhaustive sweep ==\n");
  std::printf("timing: CUDA events, %s L2; sweep: median of %d runs after %d warm-up; final timing interleaved, median "
              "of %d runs after %d warm-up; tuner: median of "
              "%d runs after %d warm-up\n",
              options.timing.cold_l2 ? "cold" : "warm", options.timing.reps, options.timing.warmup,
              options.final_timing.reps, options.final_timing.warmup, options.tune.reps,
              options.tune.warmup);
  std::printf("perf ratios are best_us / x_us (1.0 = as fast as the sweep's best); targets: tuned >= %.2f, heuristic >= %.2f\n\n",
              kTunedTarget, kHeuristicTarget);
  std::printf("%-44s %7s %10s %10s %10s %10s %7s %7s %5s  %-26s %-26s %s\n", "row", "bucket", "heur us", "tuned us", "best us",
              "sweep min", "tuned", "heur", "cands", "best tactic", "tuned tactic", "heuristic tactic");
  struct Tally {
    int rows = 0, tuned_ok = 0, heur_ok = 0, failed = 0, not_cached = 0;
    double min_tuned = 1e9, min_heur = 1e9;
  };
  std::map<std::string, Tally> by_suite;
  Tally all;
  for (const SweepRow& r : rows) {
    Tally& s = by_suite[r.suite];
    for (Tally* t : {&s, &all}) {
      ++t->rows;
      if (!r.error.empty()) {
        ++t->failed;
        continue;
      }
      t->tuned_ok += r.tuned_ratio() >= kTunedTarget;
      t->heur_ok += r.heuristic_ratio() >= kHeuristicTarget;
      t->not_cached += !r.tuned_from_cache;
      t->min_tuned = std::min(t->min_tuned, r.tuned_ratio());
      t->min_heur = std::min(t->min_heur, r.heuristic_ratio());
    }
    if (!r.error.empty()) {
      std::printf("%-44s %7lld  failed: %s\n", r.name.c_str(), static_cast<long long>(r.bucket), r.error.c_str());
      continue;
    }
    std::printf("%-44s %7lld %10.2f %10.2f %10.2f %10.2f %7s %7s %5d  %-26s %-26s %s%s\n", r.name.c_str(),
                static_cast<long long>(r.bucket), r.heuristic_us, r.tuned_us, r.best_us, r.sweep_min_us,
                ratio_text(r.tuned_ratio()).c_str(), ratio_text(r.heuristic_ratio()).c_str(), r.candidates,
                r.best.name().c_str(), r.tuned.name().c_str(), r.heuristic_plan.c_str(),
                r.tuned_from_cache ? "" : "  (tuned tactic NOT taken from the cache)");
  }
  std::printf("\n%-10s %5s %7s %14s %10s %18s %10s %8s\n", "suite", "rows", "failed", "tuned>=0.97", "min tuned",
              "heuristic>=0.90", "min heur", "uncached");
  auto line = [](const std::string& name, const Tally& t) {
    std::printf("%-10s %5d %7d %9d/%-4d %10.3f %13d/%-4d %10.3f %8d\n", name.c_str(), t.rows, t.failed, t.tuned_ok,
                t.rows - t.failed, t.rows > t.failed ? t.min_tuned : 0.0, t.heur_ok, t.rows - t.failed,
                t.rows > t.failed ? t.min_heur : 0.0, t.not_cached);
  };
  for (const auto& [name, t] : by_suite) line(name, t);
  line("all", all);
  const bool tuned_met = all.failed == 0 && all.tuned_ok == all.rows && all.not_cached == 0;
  const bool heur_met = all.failed == 0 && all.heur_ok == all.rows;
  std::printf("\ntarget tuned >= %.2f x best on every row: %s\ntarget heuristic >= %.2f x best on every row: %s\n",
              kTunedTarget, tuned_met ? "MET" : "NOT MET", kHeuristicTarget, heur_met ? "MET" : "NOT MET");
}

void write_sweep_markdown(const std::string& path, const std::vector<SweepRow>& rows, const std::string& header) {
  std::ofstream f(path);
  if (!f) throw Error("cannot write " + path);
  f << header << "\n\n";
  f << "| row | bucket | heuristic µs | tuned µs | sweep best µs | best/tuned | best/heuristic | best tactic | tuned tactic | "
       "heuristic tactic |\n";
  f << "|---|---:|---:|---:|---:|---:|---:|---|---|---|\n";
  char buf[512];
  for (const SweepRow& r : rows) {
    if (!r.error.empty()) {
      f << "| " << r.name << " | " << r.bucket << " | failed: " << r.error << " | | | | | | | |\n";
      continue;
    }
    std::snprintf(buf, sizeof buf, "| %s | %lld | %.2f | %.2f | %.2f | %.3f | %.3f | %s | %s%s | %s |\n", r.name.c_str(),
                  static_cast<long long>(r.bucket), r.heuristic_us, r.tuned_us, r.best_us, r.tuned_ratio(),
                  r.heuristic_ratio(), r.best.name().c_str(), r.tuned.name().c_str(),
                  r.tuned_from_cache ? "" : " (not from cache)", r.heuristic_plan.c_str());
    f << buf;
  }
}

}  // namespace fp4moe::bench
