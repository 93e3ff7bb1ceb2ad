// `fp4moe tune` and `fp4moe cache`: tune a suite's rows or a shape list into
// the tuning cache, with a progress bar; print the cache.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "bench/suite.hpp"
#include "commands.hpp"
#include "fp4moe/error.hpp"
#include "fp4moe/tuning.hpp"
#include "progress_bar.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/shape_list.hpp"

namespace fp4moe::cli {
namespace {

void tune_usage() {
  std::printf(
      "usage: fp4moe tune [SUITE ...] [--shapes FILE] [--cache FILE] [--reps N] [--warmup N] [--max-m M] [--warm-l2]\n"
      "       fp4moe tune --show [--cache FILE]     (also: fp4moe cache show [--cache FILE], fp4moe cache path)\n"
      "  Tunes every GEMM/MoE row of the named suites and/or every shape of FILE (its format: docs/TUNING.md;\n"
      "  one problem per line, e.g. 'masked nvfp4 bf16 groups=8 m=1-64 n=4096 k=7168') on the current GPU, and merges the\n"
      "  best tactic per bucket into the tuning cache (default: %s): the fastest, and for buckets past 128\n"
      "  the one with the smallest worst-case slowdown at b-96, b-32 and b.\n"
      "  Timing per tactic: CUDA events, cold L2, median of N runs (default 20) after warm-up (default 3).\n"
      "  --max-m M: the largest bucket tuned (default 8192; past it the heuristic decides).\n"
      "suites with GEMM rows:",
      tuning_cache_path().empty() ? "disabled" : tuning_cache_path().c_str());
  for (const bench::Suite& s : bench::all_suites())
    if (s.gemm_rows) std::printf(" %s", s.name);
  std::printf("\n");
}

bool parse_int(const std::string& text, long long lo, long long& out) {
  char* end = nullptr;
  out = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && *end == '\0' && out >= lo;
}

}  // namespace

bool have_gpu(const char* command) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    std::fprintf(stderr, "fp4moe %s: no CUDA device found; it needs an H100/H200 (sm_90a)\n", command);
    return false;
  }
  return true;
}

int cache_command(const std::vector<std::string>& args) {
  std::string path;
  std::string what;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--cache" && i + 1 < args.size()) path = args[++i];
    else if (what.empty() && (args[i] == "show" || args[i] == "path")) what = args[i];
    else {
      std::fprintf(stderr, "usage: fp4moe cache show [--cache FILE] | fp4moe cache path\n");
      return 2;
    }
  }
  if (what == "path") {
    const std::string p = path.empty() ? tuning_cache_path() : path;
    std::printf("%s\n", p.empty() ? "(disabled: FP4MOE_TUNING_CACHE=off, or no HOME)" : p.c_str());
    return 0;
  }
  std::printf("%s", describe_tuning_cache(path).c_str());
  return 0;
}

int tune_command(const std::vector<std::string>& args) {
  TuneOptions opt;
  std::vector<std::string> suites;
  std::vector<std::string> shape_files;
  bool show = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    long long v = 0;
    const bool has_value = i + 1 < args.size();
    if (a == "--help" || a == "-h") {
      tune_usage();
      return 0;
    } else if (a == "--show") {
      show = true;
    } else if (a == "--shapes" && has_value) {
      shape_files.push_back(args[++i]);
    } else if (a == "--cache" && has_value) {
      opt.cache_path = args[++i];
    } else if (a == "--reps" && has_value && parse_int(args[i + 1], 1, v)) {
      opt.reps = static_cast<int>(v);
      ++i;
    } else if (a == "--warmup" && has_value && parse_int(args[i + 1], 0, v)) {
      opt.warmup = static_cast<int>(v);
      ++i;
    } else if (a == "--max-m" && has_value && parse_int(args[i + 1], 128, v) && v % 128 == 0) {
      opt.max_m = v;
      ++i;
    } else if (a == "--warm-l2") {
      opt.cold_l2 = false;
    } else if (!a.empty() && a[0] != '-') {
      suites.push_back(a);
    } else {
      std::fprintf(stderr, "fp4moe tune: bad option '%s'%s\n", a.c_str(),
                   a == "--max-m" ? " (a multiple of 128, at least 128)" : "");
      tune_usage();
      return 2;
    }
  }
  if (show) {
    std::printf("%s", describe_tuning_cache(opt.cache_path).c_str());
    return 0;
  }
  // The problems: every suite's GEMM rows, then every shape file.
  std::vector<TuneShape> shapes;
  for (const std::string& name : suites) {
    const bench::Suite* found = nullptr;
    for (const bench::Suite& s : bench::all_suites())
      if (name == s.name) found = &s;
    if (!found || !found->gemm_rows) {
      std::fprintf(stderr, "fp4moe tune: '%s' is not a suite with GEMM rows\n", name.c_str());
      tune_usage();
      return 2;
    }
    for (const bench::GemmRowSpec& r : found->gemm_rows()) shapes.push_back(r.shape);
  }
  try {
    for (const std::string& f : shape_files)
      for (const TuneShape& s : tuning::read_shape_list(f, opt)) shapes.push_back(s);
  } catch (const Error& e) {
    std::fprintf(stderr, "fp4moe tune: %s\n", e.what());
    return 2;
  }
  if (shapes.empty()) {
    std::fprintf(stderr, "fp4moe tune: nothing to tune: name suites or --shapes FILE\n");
    tune_usage();
    return 2;
  }
  // One tuning per cache key: rows in the same bucket share it. A key tuned
  // twice with different FC2 routing keeps the last (alpha is not in the key).
  std::vector<TuneShape> unique;
  std::map<std::string, std::size_t> index;
  for (const TuneShape& s : shapes) {
    TuneShape at = s;
    if (at.op == GemmOp::kMoeFc2 && at.k == 0) at.k = at.groups * at.expert_width;
    const std::string key = tuning::key_of(at).describe();
    const auto it = index.find(key);
    if (it == index.end()) {
      index.emplace(key, unique.size());
      unique.push_back(s);
    } else {
      if (unique[it->second].top_k != s.top_k)
        std::fprintf(stderr, "fp4moe tune: note: %s is tuned with top_k=%d, not %d (routing is not part of the key)\n",
                     key.c_str(), s.top_k, unique[it->second].top_k);
      unique[it->second] = s;
    }
  }
  if (!have_gpu("tune")) return 2;
  const std::string path = opt.cache_path.empty() ? tuning_cache_path() : opt.cache_path;
  std::fprintf(stderr, "fp4moe tune: %zu problems (%zu rows) into %s\n", unique.size(), shapes.size(), path.c_str());
  ProgressBar bar;
  opt.progress = [&bar](const TuneProgress& p) { bar.update(p); };
  std::vector<TuneResult> results;
  try {
    results = tune(unique, opt);
  } catch (const Error& e) {
    bar.finish();
    std::fprintf(stderr, "fp4moe tune: %s\n", e.what());
    return 1;
  }
  bar.finish();
  int failed = 0;
  std::printf("%-56s %7s  %-26s %10s  %-26s %10s %7s %5s\n", "problem", "bucket", "tuned tactic", "us", "heuristic tactic", "us",
              "speedup", "bad");
  for (const TuneResult& r : results) {
    int bad = 0;
    for (const TacticTiming& t : r.timings) bad += !t.usable;
    if (!r.ok) {
      ++failed;
      std::printf("%-56s %7lld  no usable tactic (%zu tried)\n", r.shape.describe().c_str(), static_cast<long long>(r.bucket),
                  r.timings.size());
      for (const TacticTiming& t : r.timings) std::printf("    %s: %s\n", t.tactic.name().c_str(), t.error.c_str());
      continue;
    }
    std::printf("%-56s %7lld  %-26s %10.2f  %-26s %10.2f %7.3f %5d\n", r.shape.describe().c_str(),
                static_cast<long long>(r.bucket), r.best.name().c_str(), r.best_us, r.heuristic.name().c_str(),
                r.heuristic_us, r.heuristic_us > 0 ? r.heuristic_us / r.best_us : 0.0, bad);
  }
  std::printf("\n%zu problems tuned, %d without a usable tactic; cache: %s\n", results.size() - std::size_t(failed), failed,
              path.c_str());
  return failed ? 1 : 0;
}

}  // namespace fp4moe::cli
