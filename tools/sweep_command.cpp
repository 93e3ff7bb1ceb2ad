// `fp4moe sweep`: heuristic vs tuned vs exhaustive-sweep best for every
// GEMM/MoE row of the suites (bench/sweep.hpp says how).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "bench/sweep.hpp"
#include "commands.hpp"
#include "fp4moe/error.hpp"
#include "tuning/shape_list.hpp"

namespace fp4moe::cli {
namespace {

void sweep_usage() {
  std::printf(
      "usage: fp4moe sweep [SUITE ...] [--shapes FILE] [--quick] [--reps N] [--final-reps N] [--tune-reps N] [--warmup N]\n"
      "                    [--filter TEXT] [--tactics TEXT] [--markdown FILE] [--cache FILE]\n"
      "  For every GEMM/MoE row of the suites (default: all that have them, unless --shapes names problems) and every\n"
      "  problem of the shape files (`fp4moe tune`'s format, docs/TUNING.md; m=M is timed at M itself, m=LO-HI at each\n"
      "  bucket's top): times every tactic that can run the row\n"
      "  (the exhaustive sweep), tunes the row's bucket and checks the entry point then runs the tuned tactic from the\n"
      "  cache, and times heuristic, tuned and sweep-best side by side (interleaved). Prints best/tuned (target >= 0.97)\n"
      "  and best/heuristic (target >= 0.9) per row. Timing: cold L2, median of N runs (default 20, fewer than the\n"
      "  benchmark's 30 to keep the sweep short) after warm-up (default 3); --reps sets the sweep's and the final\n"
      "  timing's, --final-reps the final timing's alone, --tune-reps the tuner's (default 20).\n"
      "  --quick: every row and every tactic still, with fewer repeats (sweep and tuner 5, final 15, warm-up 1) to fit\n"
      "  a few minutes of device time; the other options refine it.\n"
      "  --tactics TEXT: only the tactics whose name contains TEXT or one of its '|'-separated parts (e.g. 'sk8',\n"
      "  'swapAB bn64 bk256 st5', 'gather bn8 bk256 st6|gather bn16'), timed by the sweep alone: no tuning and no\n"
      "  final timing (for profiling or comparing chosen tactics).\n"
      "  The sweep tunes into a temporary cache unless --cache FILE names one; the user's cache is not touched.\n");
}

bool positive_int(const std::string& text, int& out) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0 || v > 1000000) return false;
  out = static_cast<int>(v);
  return true;
}

}  // namespace

int sweep_command(const std::vector<std::string>& args) {
  // --quick is the starting point wherever it stands; the other options refine it.
  const bool quick = std::find(args.begin(), args.end(), "--quick") != args.end();
  bench::SweepOptions opt = quick ? bench::quick_sweep_options() : bench::SweepOptions{};
  if (!quick) opt.timing.reps = opt.final_timing.reps = 20;
  std::vector<std::string> names, shape_files;
  std::string markdown;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    int v = 0;
    if (a == "--help" || a == "-h") {
      sweep_usage();
      return 0;
    } else if (a == "--quick") {
      continue;  // applied above
    } else if (a == "--reps" && has_value && positive_int(args[i + 1], v) && v >= 1) {
      opt.timing.reps = opt.final_timing.reps = v;
      ++i;
    } else if (a == "--final-reps" && has_value && positive_int(args[i + 1], v) && v >= 1) {
      opt.final_timing.reps = v;
      ++i;
    } else if (a == "--warmup" && has_value && positive_int(args[i + 1], v)) {
      opt.timing.warmup = opt.final_timing.warmup = opt.tune.warmup = v;
      ++i;
    } else if (a == "--tune-reps" && has_value && positive_int(args[i + 1], v) && v >= 1) {
      opt.tune.reps = v;
      ++i;
    } else if (a == "--filter" && has_value) {
      opt.filter = args[++i];
    } else if (a == "--tactics" && has_value) {
      opt.tactics = args[++i];
    } else if (a == "--shapes" && has_value) {
      shape_files.push_back(args[++i]);
    } else if (a == "--markdown" && has_value) {
      markdown = args[++i];
    } else if (a == "--cache" && has_value) {
      opt.cache_path = args[++i];
    } else if (!a.empty() && a[0] != '-') {
      names.push_back(a);
    } else {
      std::fprintf(stderr, "fp4moe sweep: bad option '%s'%s\n", a.c_str(),
                   a.rfind("--", 0) == 0 && a.find("reps") != std::string::npos ? " (a count of at least 1)" : "");
      sweep_usage();
      return 2;
    }
  }
  if (!opt.tactics.empty() && !markdown.empty()) {
    std::fprintf(stderr, "fp4moe sweep: --markdown writes the full sweep's table; --tactics has no tuned or final column\n");
    return 2;
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
  // The suites' rows (every suite's where neither suites nor shape files are named), then the files' problems.
  for (const bench::Suite& s : bench::all_suites()) {
    if (!s.gemm_rows) continue;
    if (names.empty() ? !shape_files.empty() : std::find(names.begin(), names.end(), s.name) == names.end()) continue;
    for (const bench::GemmRowSpec& r : s.gemm_rows()) specs.emplace_back(s.name, r);
  }
  try {
    for (const std::string& f : shape_files)
      for (const TuneShape& shape : tuning::read_shape_list(f, opt.tune))
        specs.emplace_back("shapes", bench::GemmRowSpec{shape.describe(), shape});
  } catch (const Error& e) {
    std::fprintf(stderr, "fp4moe sweep: %s\n", e.what());
    return 2;
  }
  if (!have_gpu("sweep")) return 2;
  try {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    const std::string header = std::string("fp4moe sweep | ") + prop.name + " (" + std::to_string(prop.multiProcessorCount) +
                               " SMs) | commit " + measured_commit() + " | " + date;
    std::printf("%s\n", header.c_str());
    std::fflush(stdout);
    const bench::Timer timer;
    const std::vector<bench::SweepRow> rows = bench::run_sweep(timer, specs, opt);
    bench::print_sweep(rows, opt);
    if (!markdown.empty()) {
      bench::write_sweep_markdown(markdown, rows,
                                  header + " | median of " + std::to_string(opt.timing.reps) + " runs (sweep), " +
                                      std::to_string(opt.tune.reps) + " (tuner), " +
                                      std::to_string(opt.final_timing.reps) + " (final, interleaved); cold L2");
      std::printf("wrote %s\n", markdown.c_str());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "fp4moe sweep: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace fp4moe::cli
