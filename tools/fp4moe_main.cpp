// The `fp4moe` command line. With no arguments it runs every benchmark suite
// on the current GPU with default settings (the main job).
//
//   fp4moe [bench] [SUITE ...] [--json FILE] [--reps N] [--warm-l2] [--cooldown-ms N] [--list]
//   fp4moe tune [SUITE ...] [--shapes FILE] [--cache FILE] ...   (tools/tune_command.cpp)
//   fp4moe cache show|path [--cache FILE]
//   fp4moe sweep [SUITE ...] ...                                  (tools/sweep_command.cpp)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <chrono>
#include <cstring>
#include <thread>
#include <string>
#include <vector>

#include "bench/ceilings.hpp"
#include "bench/suite.hpp"
#include "bench/targets.hpp"
#include "commands.hpp"
#include "fp4moe_commit.hpp"  // FP4MOE_GIT_COMMIT (generated at build time)
#include "fp4moe/error.hpp"
#include "fp4moe/tuning.hpp"

namespace {

using namespace fp4moe::bench;

void usage() {
  std::printf(
      "usage: fp4moe [bench] [SUITE ...] [--json FILE] [--reps N] [--warm-l2] [--cooldown-ms N] [--filter TEXT] [--no-ceilings]\n"
      "                [--no-tuning-cache] [--wide-weight-scales] [--moe-width W] [--list]\n"
      "       fp4moe tune ... | fp4moe cache show|path | fp4moe sweep ...   (each with --help)\n"
      "  With no suite named, every suite runs. --filter: rows whose name contains TEXT, or any of A|B|....\n"
      "  Timing: CUDA events, cold L2, median of N runs (default 30), after\n"
      "  N ms idle before each row (default 200: the board power-caps; a row right after other kernels runs slower).\n"
      "  GEMM rows run the tactic the library picks: the tuning cache's if it has one (marked 'tuned'), else the\n"
      "  heuristic's; --no-tuning-cache runs the heuristic's everywhere.\n"
      "  Data: random FP4 codes; MXFP4 weights' block scales 2^-9..2^1 (as an MX quantizer gives weights), tokens'\n"
      "  2^-7..2^3; --wide-weight-scales gives the weights the tokens' range. --moe-width W: the expert width of the\n"
      "  seed-fc2 and moe-fc2 suites and moe-fc1's I (default 256, the seed workload; a multiple of 128, e.g. 2048\n"
      "  for DeepSeek-V3's experts; E = 256 and N = K = 7168 stay; `tune` and `sweep` keep 256).\n"
      "suites:\n");
  for (const Suite& s : all_suites()) std::printf("  %-10s %s\n", s.name, s.description);
}

std::string today_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

struct CliOptions {
  std::vector<std::string> suites;
  std::string json, filter;
  TimingOptions timing;
  bool ceilings = true;
  bool tuning_cache = true;
  DataOptions data;
};

int run_bench(const CliOptions& opt) {
  const std::vector<std::string>& names = opt.suites;
  const std::string& json = opt.json;
  const TimingOptions& timing = opt.timing;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "fp4moe: no CUDA device found; the benchmark needs an H100/H200 (sm_90a)\n");
    return 2;
  }
  std::vector<const Suite*> chosen;
  for (const Suite& s : all_suites())
    if (names.empty() || std::find(names.begin(), names.end(), s.name) != names.end()) chosen.push_back(&s);
  for (const std::string& n : names) {
    bool known = false;
    for (const Suite& s : all_suites()) known = known || n == s.name;
    if (!known) {
      std::fprintf(stderr, "fp4moe: unknown suite '%s'\n", n.c_str());
      usage();
      return 2;
    }
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  RunInfo info;
  info.device = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.commit = fp4moe::cli::measured_commit();
  info.date = today_utc();
  info.timing = timing;
  info.data = opt.data;

  fp4moe::set_tuning_cache_enabled(opt.tuning_cache);
  if (opt.tuning_cache) {
    const std::string cache = fp4moe::tuning_cache_path();
    std::printf("tuning cache: %s\n", cache.empty() ? "disabled" : cache.c_str());
  } else {
    std::printf("tuning cache: not used (--no-tuning-cache)\n");
  }
  Timer timer;
  // Ceilings before and after the suites, keeping the higher of each: the GPU
  // clocks down under sustained load (cuBLAS 8192^3 measured 10-25% lower
  // after the suites than before them), and a throttled ceiling would flatter
  // every fraction. A pause after the first measurement lets the first rows
  // start cool.
  Ceilings ceilings = opt.ceilings ? measure_ceilings(timer, timing) : Ceilings{};
  if (opt.ceilings) std::this_thread::sleep_for(std::chrono::seconds(5));
  std::vector<Row> rows;
  SuiteContext ctx{timer, timing, rows, opt.filter, opt.data};
  for (const Suite* s : chosen) {
    std::printf("running suite %s ...\n", s->name);
    std::fflush(stdout);
    s->run(ctx);
  }
  if (opt.ceilings) ceilings = best_of(ceilings, measure_ceilings(timer, timing));
  for (Row& r : rows) set_fraction(r, ceilings);
  print_header(info, ceilings);
  print_rows(rows);
  // The targets read fractions of the ceilings: none without them.
  const std::vector<TargetCheck> targets = opt.ceilings ? check_targets(rows) : std::vector<TargetCheck>{};
  print_targets(targets);
  if (!json.empty()) {
    write_json(json, info, ceilings, rows, targets);
    std::printf("wrote %s\n", json.c_str());
  }
  return 0;
}

}  // namespace

// The commit the binary was built from. FP4MOE_COMMIT names it only where
// the build could not (a copy of the tree without .git: "unknown"); a
// binary that knows its commit keeps it, so a stale label in the
// environment cannot mislabel a run (one did, docs/PERF.md stop 32).
std::string fp4moe::cli::measured_commit() {
  const std::string built = FP4MOE_GIT_COMMIT;
  const char* env_commit = std::getenv("FP4MOE_COMMIT");
  return built == "unknown" && env_commit ? env_commit : built;
}

int main(int argc, char** argv) {
  if (argc > 1) {
    const std::string command = argv[1];
    const std::vector<std::string> rest(argv + 2, argv + argc);
    if (command == "tune") return fp4moe::cli::tune_command(rest);
    if (command == "cache") return fp4moe::cli::cache_command(rest);
    if (command == "sweep") return fp4moe::cli::sweep_command(rest);
  }
  CliOptions opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "bench") continue;
    if (a == "--help" || a == "-h") {
      usage();
      return 0;
    }
    if (a == "--list") {
      for (const Suite& s : all_suites()) std::printf("%s\n", s.name);
      return 0;
    }
    if (a == "--json" && i + 1 < argc) {
      opt.json = argv[++i];
    } else if (a == "--reps" && i + 1 < argc) {
      opt.timing.reps = std::max(20, std::atoi(argv[++i]));
    } else if (a == "--warm-l2") {
      opt.timing.cold_l2 = false;
    } else if (a == "--cooldown-ms" && i + 1 < argc) {
      opt.timing.cooldown_ms = std::max(0, std::atoi(argv[++i]));
    } else if (a == "--filter" && i + 1 < argc) {
      opt.filter = argv[++i];
    } else if (a == "--no-ceilings") {
      opt.ceilings = false;
    } else if (a == "--no-tuning-cache") {
      opt.tuning_cache = false;
    } else if (a == "--wide-weight-scales") {
      opt.data.wide_weight_scales = true;
    } else if (a == "--moe-width" && i + 1 < argc) {
      const long long w = std::atoll(argv[++i]);
      if (w < 128 || w % 128 != 0 || w > 65536) {
        std::fprintf(stderr, "fp4moe: --moe-width must be a multiple of 128 from 128 to 65536 (got '%s')\n", argv[i]);
        return 2;
      }
      opt.data.moe_width = w;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "fp4moe: unknown option '%s'\n", a.c_str());
      usage();
      return 2;
    } else {
      opt.suites.push_back(a);
    }
  }
  try {
    return run_bench(opt);
  } catch (const fp4moe::Error& e) {
    std::fprintf(stderr, "fp4moe: %s\n", e.what());
    return 1;
  }
}
