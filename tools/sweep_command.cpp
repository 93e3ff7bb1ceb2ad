// `fp4moe sweep`: heuristic vs tuned vs exhaustive-sweep best for every
// GEMM/MoE row of the suites (bench/sweep.hpp says how).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "bench/sweep.hpp"
#include "commands.hpp"
#include "fp4moe/error.hpp"

#ifndef FP4MOE_GIT_COMMIT
#define FP4MOE_GIT_COMMIT "unknown"
#endif

namespace fp4moe::cli {
namespace {

void sweep_usage() {
  std::printf(
      "usage: fp4moe sweep [SUITE ...] [--reps N] [--warmup N] [--tune-reps N] [--filter TEXT] [--markdown FILE] [--cache FILE]\n"
      "  For every GEMM/MoE row of the suites (default: all that have them): times every tactic that can run the row\n"
      "  (the exhaustive sweep), tunes the row's bucket and checks the entry point then runs the tuned tactic from the\n"
      "  cache, and times heuristic, tuned and sweep-best side by side (interleaved). Prints best/tuned (target >= 0.97)\n"
      "  and best/heuristic (target >= 0.9) per row. Timing: cold L2, median of N runs (default 20, fewer than the\n"
      "  benchmark's 30 to keep the sweep short) after warm-up (default 3). The sweep tunes into a temporary cache\n"
      "  unless --cache FILE names one; the user's cache is not touched.\n");
}

}  // namespace

int sweep_command(const std::vector<std::string>& args) {
  bench::SweepOptions opt;
  opt.timing.reps = 20;
  std::vector<std::string> names;
  std::string markdown;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--help" || a == "-h") {
      sweep_usage();
      return 0;
    } else if (a == "--reps" && has_value) {
      opt.timing.reps = std::max(1, std::atoi(args[++i].c_str()));
    } else if (a == "--warmup" && has_value) {
      opt.timing.warmup = std::max(0, std::atoi(args[++i].c_str()));
      opt.tune.warmup = opt.timing.warmup;
    } else if (a == "--tune-reps" && has_value) {
      opt.tune.reps = std::max(1, std::atoi(args[++i].c_str()));
    } else if (a == "--filter" && has_value) {
      opt.filter = args[++i];
    } else if (a == "--markdown" && has_value) {
      markdown = args[++i];
    } else if (a == "--cache" && has_value) {
      opt.cache_path = args[++i];
    } else if (!a.empty() && a[0] != '-') {
      names.push_back(a);
    } else {
      std::fprintf(stderr, "fp4moe sweep: bad option '%s'\n", a.c_str());
      sweep_usage();
      return 2;
    }
  }
  std::vector<std::pair<std::string, bench::GemmRowSpec>> specs;
  for (const std::string& n : names) {
    bool ok = false;
    for (const bench::Suite& s : bench::all_suites()) ok = ok || (n == s.name && s.gemm_rows);
    if (!ok) {
      std::fprintf(stderr, "fp4moe sweep: '%s' is not a suite with GEMM rows\n", n.c_str());
      return 2;
    }
  }
  for (const bench::Suite& s : bench::all_suites()) {
    if (!s.gemm_rows) continue;
    if (!names.empty() && std::find(names.begin(), names.end(), s.name) == names.end()) continue;
    for (const bench::GemmRowSpec& r : s.gemm_rows()) specs.emplace_back(s.name, r);
  }
  if (!have_gpu("sweep")) return 2;
  try {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    const char* env_commit = std::getenv("FP4MOE_COMMIT");
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    const std::string header = std::string("fp4moe sweep | ") + prop.name + " (" + std::to_string(prop.multiProcessorCount) +
                               " SMs) | commit " + (env_commit ? env_commit : FP4MOE_GIT_COMMIT) + " | " + date;
    std::printf("%s\n", header.c_str());
    std::fflush(stdout);
    const bench::Timer timer;
    const std::vector<bench::SweepRow> rows = bench::run_sweep(timer, specs, opt);
    bench::print_sweep(rows, opt);
    if (!markdown.empty()) {
      bench::write_sweep_markdown(markdown, rows, header + " | sweep/final timing: median of " +
                                                     std::to_string(opt.timing.reps) + " runs, tuner: " +
                                                     std::to_string(opt.tune.reps));
      std::printf("wrote %s\n", markdown.c_str());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "fp4moe sweep: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace fp4moe::cli
