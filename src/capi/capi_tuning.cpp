// C entry points of include/fp4moe/tuning.hpp: the autotuner, shape lists,
// buckets and the tuning cache.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "capi/capi_guard.hpp"
#include "capi/capi_views.hpp"
#include "fp4moe/tuning.hpp"
#include "tuning/shape_list.hpp"

using fp4moe::GemmOp;
using fp4moe::GemmOutput;
using fp4moe::TuneOptions;
using fp4moe::TuneShape;
using fp4moe::capi::guarded;
using fp4moe::detail::ArgCheck;

// The C codes are the C++ enum values (the op codes are fp4moe_gemm_layout's).
static_assert(static_cast<int>(GemmOp::kDense) == FP4MOE_LAYOUT_DENSE &&
                  static_cast<int>(GemmOp::kContiguous) == FP4MOE_LAYOUT_CONTIGUOUS &&
                  static_cast<int>(GemmOp::kMasked) == FP4MOE_LAYOUT_MASKED &&
                  static_cast<int>(GemmOp::kMoeFc2) == FP4MOE_LAYOUT_MOE_DENSE &&
                  static_cast<int>(GemmOp::kMoeFc1) == FP4MOE_LAYOUT_MOE_FC1,
              "fp4moe_tune_shape::op codes must follow fp4moe::GemmOp");
static_assert(static_cast<int>(GemmOutput::kBF16) == FP4MOE_OUTPUT_BF16 &&
                  static_cast<int>(GemmOutput::kFP32) == FP4MOE_OUTPUT_FP32 &&
                  static_cast<int>(GemmOutput::kNVFP4) == FP4MOE_OUTPUT_NVFP4,
              "fp4moe_gemm_output must follow fp4moe::GemmOutput");

namespace {

/// *s as a TuneShape; the enum codes are checked here (naming `name`.op and
/// so on), every other rule by the C++ function that receives it.
TuneShape tune_shape(const ArgCheck& c, const fp4moe_tune_shape* s, const std::string& name) {
  c.require(s != nullptr, name, "must not be null (the fp4moe_tune_shape descriptor)");
  c.require(s->op >= FP4MOE_LAYOUT_DENSE && s->op <= FP4MOE_LAYOUT_MOE_FC1, name + ".op",
            "must be an fp4moe_gemm_layout code (0..4)", std::to_string(s->op));
  TuneShape t;
  t.op = static_cast<GemmOp>(s->op);
  t.format = fp4moe::capi::fp4_format(c, s->format, name + ".format");
  c.require(s->out >= FP4MOE_OUTPUT_BF16 && s->out <= FP4MOE_OUTPUT_NVFP4, name + ".out",
            "must be an fp4moe_gemm_output code (0..2)", std::to_string(s->out));
  t.out = static_cast<GemmOutput>(s->out);
  t.top_k = s->top_k;
  t.m = s->m;
  t.n = s->n;
  t.k = s->k;
  t.groups = s->groups;
  t.expert_width = s->expert_width;
  return t;
}

fp4moe_tune_shape c_shape(const TuneShape& t) {
  return fp4moe_tune_shape{static_cast<int32_t>(t.op), static_cast<int32_t>(t.format), static_cast<int32_t>(t.out), t.top_k,
                           t.m, t.n, t.k, t.groups, t.expert_width};
}

fp4moe_tactic c_tactic(const fp4moe::GemmTactic& t) {
  return fp4moe_tactic{t.swap_ab ? 1 : 0, t.block_n, t.block_k, t.stages, t.split_k, t.moe_gather ? 1 : 0, t.fp8 ? 1 : 0, t.cluster};
}

/// Copies `text` out by the header's (buf, size, *length) rule.
void copy_out(const ArgCheck& c, const std::string& text, char* buf, int64_t size, int64_t* length) {
  c.not_null(length, "length");
  c.non_negative(size, "size");
  c.require(size == 0 || buf != nullptr, "buf", "must not be null when size is positive");
  if (size > 0) {
    const std::size_t n = std::min(text.size(), static_cast<std::size_t>(size - 1));
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  *length = static_cast<int64_t>(text.size());
}

fp4moe_tune_options default_options() {
  const TuneOptions d;
  fp4moe_tune_options o{};
  o.warmup = d.warmup;
  o.reps = d.reps;
  o.cold_l2 = d.cold_l2 ? 1 : 0;
  o.write_cache = d.write_cache ? 1 : 0;
  o.max_m = d.max_m;
  return o;
}

/// The C options as TuneOptions; a progress callback returning non-zero
/// throws from TuneOptions::progress, which stops tune() (tuning.hpp).
TuneOptions tune_options(const ArgCheck& c, const fp4moe_tune_options* in) {
  const fp4moe_tune_options o = in ? *in : default_options();
  c.require(o.cold_l2 == 0 || o.cold_l2 == 1, "options.cold_l2", "must be 0 or 1", std::to_string(o.cold_l2));
  c.require(o.write_cache == 0 || o.write_cache == 1, "options.write_cache", "must be 0 or 1", std::to_string(o.write_cache));
  TuneOptions t;
  t.warmup = o.warmup;
  t.reps = o.reps;
  t.cold_l2 = o.cold_l2 == 1;
  t.write_cache = o.write_cache == 1;
  t.max_m = o.max_m;
  if (o.cache_path) t.cache_path = o.cache_path;
  if (o.progress) {
    const fp4moe_tune_progress_fn fn = o.progress;
    void* user = o.progress_user;
    t.progress = [fn, user](const fp4moe::TuneProgress& p) {
      if (fn(static_cast<int64_t>(p.shape_index), static_cast<int64_t>(p.shapes), static_cast<int64_t>(p.tactic_index),
             static_cast<int64_t>(p.tactics), p.elapsed_s, user) != 0)
        throw fp4moe::Error("tune: stopped by the progress callback at shape " + std::to_string(p.shape_index) + " of " +
                            std::to_string(p.shapes) + " (the shapes finished before it are in the cache)");
    };
  }
  return t;
}

}  // namespace

extern "C" {

fp4moe_status fp4moe_tune_options_default(fp4moe_tune_options* options) {
  return guarded([&] {
    ArgCheck("tune_options_default").not_null(options, "options");
    *options = default_options();
  });
}

fp4moe_status fp4moe_tune(const fp4moe_tune_shape* shapes, int32_t count, const fp4moe_tune_options* options,
                          fp4moe_tune_result* results) {
  return guarded([&] {
    const ArgCheck c("tune");
    c.positive(count, "count");
    c.not_null(shapes, "shapes");
    std::vector<TuneShape> list;
    for (int32_t i = 0; i < count; ++i) list.push_back(tune_shape(c, &shapes[i], "shapes[" + std::to_string(i) + "]"));
    const TuneOptions opt = tune_options(c, options);
    const std::vector<fp4moe::TuneResult> r = fp4moe::tune(list, opt);
    if (!results) return;
    for (std::size_t i = 0; i < r.size(); ++i) {
      fp4moe_tune_result& out = results[i];
      out = fp4moe_tune_result{};
      out.bucket = r[i].bucket;
      out.ok = r[i].ok ? 1 : 0;
      out.candidates = static_cast<int32_t>(r[i].timings.size());
      out.unusable = static_cast<int32_t>(
          std::count_if(r[i].timings.begin(), r[i].timings.end(), [](const fp4moe::TacticTiming& t) { return !t.usable; }));
      if (r[i].ok) out.best = c_tactic(r[i].best);
      out.best_us = r[i].best_us;
      out.heuristic = c_tactic(r[i].heuristic);
      out.heuristic_us = r[i].heuristic_us;
    }
  });
}

fp4moe_status fp4moe_parse_shape_list(const char* text, const char* name, int64_t max_m, fp4moe_tune_shape* out,
                                       int32_t capacity, int32_t* count) {
  return guarded([&] {
    const ArgCheck c("parse_shape_list");
    c.not_null(text, "text");
    c.not_null(count, "count");
    c.non_negative(capacity, "capacity");
    c.require(capacity == 0 || out != nullptr, "out", "must not be null when capacity is positive");
    c.require(max_m == 0 || (max_m >= 128 && max_m % 128 == 0), "max_m", "must be 0 or a multiple of 128, at least 128",
              std::to_string(max_m));
    TuneOptions opt;
    if (max_m != 0) opt.max_m = max_m;
    std::vector<TuneShape> shapes;
    try {
      shapes = fp4moe::tuning::parse_shape_list(text, name && *name ? name : "shapes", opt);
    } catch (const fp4moe::InvalidArgument&) {
      throw;
    } catch (const fp4moe::Error& e) {
      // A malformed list is a bad argument; the message says the line and the rule.
      c.require(false, "text", e.what());
    }
    c.require(shapes.size() <= static_cast<std::size_t>(INT32_MAX), "text", "holds more than 2^31 - 1 shapes");
    const auto n = static_cast<int32_t>(shapes.size());
    for (int32_t i = 0; i < std::min(n, capacity); ++i) out[i] = c_shape(shapes[static_cast<std::size_t>(i)]);
    *count = n;
  });
}

fp4moe_status fp4moe_tuning_bucket(int64_t m, int64_t max_m, int64_t* bucket) {
  return guarded([&] {
    ArgCheck("tuning_bucket").not_null(bucket, "bucket");
    *bucket = fp4moe::tuning_bucket(m, max_m);
  });
}

fp4moe_status fp4moe_set_tuning_cache_path(const char* path) {
  return guarded([&] { fp4moe::set_tuning_cache_path(path ? path : ""); });
}

fp4moe_status fp4moe_tuning_cache_path(char* buf, int64_t size, int64_t* length) {
  return guarded([&] { copy_out(ArgCheck("tuning_cache_path"), fp4moe::tuning_cache_path(), buf, size, length); });
}

fp4moe_status fp4moe_set_tuning_cache_enabled(int32_t enabled) {
  return guarded([&] {
    ArgCheck("set_tuning_cache_enabled")
        .require(enabled == 0 || enabled == 1, "enabled", "must be 0 or 1", std::to_string(enabled));
    fp4moe::set_tuning_cache_enabled(enabled == 1);
  });
}

fp4moe_status fp4moe_load_tuning_cache(int64_t* entries) {
  return guarded([&] {
    ArgCheck("load_tuning_cache").not_null(entries, "entries");
    *entries = static_cast<int64_t>(fp4moe::load_tuning_cache());
  });
}

fp4moe_status fp4moe_reload_tuning_cache(void) {
  return guarded([] { fp4moe::reload_tuning_cache(); });
}

fp4moe_status fp4moe_cached_tactic(const fp4moe_tune_shape* shape, fp4moe_tactic* tactic, int32_t* found) {
  return guarded([&] {
    const ArgCheck c("cached_tactic");
    const TuneShape s = tune_shape(c, shape, "shape");
    c.not_null(tactic, "tactic");
    c.not_null(found, "found");
    fp4moe::GemmTactic t;
    const bool hit = fp4moe::cached_tactic(s, &t);
    if (hit) *tactic = c_tactic(t);
    *found = hit ? 1 : 0;
  });
}

fp4moe_status fp4moe_describe_tuning_cache(const char* path, char* buf, int64_t size, int64_t* length) {
  return guarded([&] {
    const ArgCheck c("describe_tuning_cache");
    c.not_null(length, "length");  // before the file is read
    copy_out(c, fp4moe::describe_tuning_cache(path ? path : ""), buf, size, length);
  });
}

fp4moe_status fp4moe_tactic_space_version(char* buf, int64_t size, int64_t* length) {
  return guarded([&] { copy_out(ArgCheck("tactic_space_version"), fp4moe::tactic_space_version(), buf, size, length); });
}

}  // extern "C"
