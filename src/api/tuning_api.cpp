// Public tuning entry points (include/fp4moe/tuning.hpp): argument checks,
// then the autotuner, the cache file and the run-time cache.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "api/check.hpp"
#include "common/device_identity.hpp"
#include "common/device_info.hpp"
#include "fp4moe/tuning.hpp"
#include "tuning/autotuner.hpp"
#include "tuning/buckets.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/runtime_cache.hpp"
#include "tuning/tactic_space.hpp"
#include "tuning/tuning_cache.hpp"

namespace fp4moe {

using detail::ArgCheck;

std::vector<TuneResult> tune(const std::vector<TuneShape>& shapes, const TuneOptions& options) {
  tuning::check_tune_options(options);
  std::vector<TuneShape> checked;
  for (std::size_t i = 0; i < shapes.size(); ++i) checked.push_back(tuning::checked_shape(shapes[i], i, options));
  return tuning::run_tuning(checked, options);
}

std::int64_t tuning_bucket(std::int64_t m, std::int64_t max_m) {
  ArgCheck("tuning_bucket")
      .require(tuning::valid_max_bucket(max_m), "max_m", "must be a multiple of 128, at least 128", std::to_string(max_m));
  return tuning::bucket_of(m, max_m);
}

std::vector<std::int64_t> tuning_buckets(std::int64_t lo, std::int64_t hi, std::int64_t max_m) {
  const ArgCheck c("tuning_buckets");
  c.require(tuning::valid_max_bucket(max_m), "max_m", "must be a multiple of 128, at least 128", std::to_string(max_m));
  c.require(lo <= hi, "lo", "must not exceed hi (" + std::to_string(hi) + ")", std::to_string(lo));
  return tuning::buckets_between(lo, hi, max_m);
}

void set_tuning_cache_path(const std::string& path) { tuning::set_cache_path_override(path); }

std::string tuning_cache_path() { return tuning::cache_path(); }

void set_tuning_cache_enabled(bool enabled) { tuning::runtime_cache().set_enabled(enabled); }

std::size_t load_tuning_cache() {
  tuning::runtime_cache().invalidate();
  return tuning::runtime_cache().load(detail::current_device())->size();
}

void reload_tuning_cache() { tuning::runtime_cache().invalidate(); }

bool cached_tactic(const TuneShape& shape, GemmTactic* tactic) {
  const ArgCheck c("cached_tactic");
  c.require(shape.op <= GemmOp::kMoeFc1, "shape.op", "must be a GemmOp", std::to_string(int(shape.op)));
  c.require(detail::valid_format(shape.format), "shape.format", "must be kNVFP4 or kMXFP4");
  c.require(shape.out <= GemmOutput::kNVFP4, "shape.out", "must be a GemmOutput", std::to_string(int(shape.out)));
  c.not_null(tactic, "tactic");
  TuneShape s = shape;
  if (s.op == GemmOp::kMoeFc2 && s.k == 0) s.k = s.groups * s.expert_width;
  const GemmTactic* hit = tuning::runtime_cache().lookup(detail::current_device(), tuning::key_of(s));
  if (hit) *tactic = *hit;
  return hit != nullptr;
}

std::string tactic_space_version() { return tuning::tactic_space_version(); }

std::vector<GemmTactic> gemm_tactics(Fp4Format format, GemmOp op) {
  const ArgCheck c("gemm_tactics");
  c.require(detail::valid_format(format), "format", "must be kNVFP4 or kMXFP4", std::to_string(int(format)));
  c.require(op <= GemmOp::kMoeFc1, "op", "must be a GemmOp", std::to_string(int(op)));
  return tuning::compiled_tactics(format, tuning::layout_of(op));
}

namespace {

std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::string describe_tuning_cache(const std::string& path_in) {
  const std::string path = path_in.empty() ? tuning::cache_path() : path_in;
  if (path.empty()) return "tuning cache: disabled (FP4MOE_TUNING_CACHE=off) or no location (no HOME)\n";
  std::string out = "tuning cache " + path + "\n";
  // Compare with this build and, where there is one, this device.
  tuning::CacheHeader here{library_version(), tuning::tactic_space_version(), "", 0};
  bool have_device = false;
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) {
    try {
      const detail::DeviceIdentity& id = detail::device_identity(detail::current_device());
      here.device = id.name;
      here.sm_count = id.sm_count;
      have_device = true;
    } catch (const std::exception&) {
    }
  }
  cudaGetLastError();
  tuning::LoadResult r = tuning::read_cache_file(path, here);
  if (r.status == tuning::LoadStatus::kMismatch && !have_device) {
    // Without a device only the build can be compared: read it again against its own device.
    tuning::CacheHeader build_only = here;
    build_only.device = r.file.header.device;
    build_only.sm_count = r.file.header.sm_count;
    r = tuning::read_cache_file(path, build_only);
  }
  switch (r.status) {
    case tuning::LoadStatus::kMissing: return out + "  no such file (nothing tuned yet)\n";
    case tuning::LoadStatus::kUnreadable:
    case tuning::LoadStatus::kCorrupt: return out + "  unusable: " + r.message + "\n";
    case tuning::LoadStatus::kMismatch: return out + "  refused here: " + r.message + "\n";
    case tuning::LoadStatus::kOk: break;
  }
  out += "  written for " + r.file.header.describe() + "\n";
  out += have_device ? "  usable on this device with this build\n"
                     : "  matches this build (no CUDA device here to compare the device with)\n";
  out += "  " + std::to_string(r.file.entries.size()) + " entries\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-10s %-5s %-5s %6s %5s %7s %7s %7s  %-26s %10s %10s\n", "op", "fmt", "out", "G/E", "W",
                "n", "k", "bucket", "tactic", "us", "heur. us");
  out += line;
  for (const tuning::CacheEntry& e : r.file.entries) {
    std::snprintf(line, sizeof line, "  %-10s %-5s %-5s %6lld %5lld %7lld %7lld %7lld  %-26s %10s %10s\n",
                  gemm_op_name(e.key.op), format_name(e.key.format), gemm_output_name(e.key.out),
                  static_cast<long long>(e.key.groups), static_cast<long long>(e.key.width), static_cast<long long>(e.key.n),
                  static_cast<long long>(e.key.k), static_cast<long long>(e.key.bucket), e.tactic.name().c_str(),
                  fixed(e.median_us, 2).c_str(), e.heuristic_us > 0 ? fixed(e.heuristic_us, 2).c_str() : "-");
    out += line;
    for (const std::string& u : e.unusable) out += "      unusable: " + u + "\n";
  }
  return out;
}

}  // namespace fp4moe
