#include "bench/report.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench/targets.hpp"
#include "common/json.hpp"
#include "fp4moe/error.hpp"

namespace fp4moe::bench {

const char* ceiling_name(CeilingKind k) {
  switch (k) {
    case CeilingKind::kRead: return "read-bw";
    case CeilingKind::kCopy: return "copy-bw";
    case CeilingKind::kBf16Tensor: return "bf16-tensor";
    case CeilingKind::kFp8Tensor: return "fp8-tensor";
  }
  return "?";
}

double ceiling_value(const Ceilings& c, CeilingKind k) {
  switch (k) {
    case CeilingKind::kRead: return c.read_gbps;
    case CeilingKind::kCopy: return c.copy_gbps;
    case CeilingKind::kBf16Tensor: return c.bf16_tflops;
    case CeilingKind::kFp8Tensor: return c.fp8_tflops;
  }
  return 0;
}

void set_fraction(Row& r, const Ceilings& c) {
  if (r.by_regime && c.read_gbps > 0 && r.bytes > 0) {
    const double balance = ceiling_value(c, r.tensor_ceiling) * 1e12 / (c.read_gbps * 1e9);
    r.ceiling = r.flops / r.bytes < balance ? CeilingKind::kRead : r.tensor_ceiling;
  }
  const double cap = ceiling_value(c, r.ceiling);
  const bool bandwidth = r.ceiling == CeilingKind::kRead || r.ceiling == CeilingKind::kCopy;
  r.fraction = cap > 0 ? (bandwidth ? r.gbps() : r.tflops()) / cap : 0;
}

void print_header(const RunInfo& info, const Ceilings& c) {
  std::printf("fp4moe benchmark | %s (%d SMs) | commit %s | %s\n", info.device.c_str(), info.sm_count,
              info.commit.c_str(), info.date.c_str());
  std::printf("timing: CUDA events, kernel only, %s L2, median of %d runs after %d warm-up\n",
              info.timing.cold_l2 ? "cold" : "warm", info.timing.reps, info.timing.warmup);
  std::printf("data: random E2M1 codes; MXFP4 scales: tokens 2^-7..2^3, weights %s; MoE suites' expert width %lld\n",
              info.data.wide_weight_scales ? "2^-7..2^3 (--wide-weight-scales)" : "2^-9..2^1",
              static_cast<long long>(info.data.moe_width));
  std::printf("ceilings: read %.0f GB/s | copy %.0f GB/s (read+write) | cuBLASLt 8192^3 bf16 %.0f TFLOP/s, fp8 %.0f TFLOP/s\n\n",
              c.read_gbps, c.copy_gbps, c.bf16_tflops, c.fp8_tflops);
}

void print_rows(const std::vector<Row>& rows) {
  std::string suite;
  for (const Row& r : rows) {
    if (r.suite != suite) {
      suite = r.suite;
      std::printf("\n== %s ==\n%-44s %-14s %10s %8s %8s %12s %6s %6s  %s\n", suite.c_str(), "row", "impl", "time(us)",
                  "TFLOP/s", "GB/s", "of ceiling", "vsBF16", "vsFP8", "tactic");
    }
    char frac[32], vb[16] = "", vf[16] = "", tf[16] = "-";
    std::snprintf(frac, sizeof frac, "%5.1f%% %s", 100 * r.fraction,
                  r.ceiling == CeilingKind::kRead ? "rd" : r.ceiling == CeilingKind::kCopy ? "cp"
                  : r.ceiling == CeilingKind::kBf16Tensor ? "bf" : "f8");
    if (r.vs_bf16 > 0) std::snprintf(vb, sizeof vb, "%.2fx", r.vs_bf16);
    if (r.vs_fp8 > 0) std::snprintf(vf, sizeof vf, "%.2fx", r.vs_fp8);
    if (r.flops > 0) std::snprintf(tf, sizeof tf, "%.1f", r.tflops());
    std::printf("%-44s %-14s %10.2f %8s %8.0f %12s %6s %6s  %s\n", r.name.c_str(), r.impl.c_str(), r.time.median_us, tf,
                r.gbps(), frac, vb, vf, r.tactic.c_str());
  }
  std::printf("\n");
}

void write_json(const std::string& path, const RunInfo& info, const Ceilings& c, const std::vector<Row>& rows,
                const std::vector<TargetCheck>& targets) {
  // Through the library's JSON writer (common/json.hpp): escaped strings,
  // locale-independent numbers that read back exactly, null where a number
  // is not finite (a row whose time is 0).
  json::Array row_values;
  for (const Row& r : rows)
    row_values.push_back(json::Object{
        {"suite", r.suite}, {"name", r.name}, {"impl", r.impl}, {"tactic", r.tactic}, {"variant", r.variant},
        {"median_us", r.time.median_us}, {"min_us", r.time.min_us}, {"max_us", r.time.max_us},
        {"reps", double(r.time.reps)}, {"flops", r.flops}, {"bytes", r.bytes}, {"tflops", r.tflops()},
        {"gbps", r.gbps()}, {"ceiling", ceiling_name(r.ceiling)}, {"fraction", r.fraction},
        {"vs_cublas_bf16", r.vs_bf16}, {"vs_cublas_fp8", r.vs_fp8}});
  json::Array target_values;
  for (const TargetCheck& t : targets)
    target_values.push_back(json::Object{{"target", t.target}, {"unit", t.unit}, {"rows", double(t.rows)},
                                         {"met", double(t.met)}, {"min", t.lo}, {"max", t.hi}});
  const json::Object doc{
      {"device", info.device},
      {"sm_count", double(info.sm_count)},
      {"commit", info.commit},
      {"date", info.date},
      {"timing", json::Object{{"reps", double(info.timing.reps)},
                              {"warmup", double(info.timing.warmup)},
                              {"cold_l2", info.timing.cold_l2}}},
      {"data", json::Object{{"wide_weight_scales", info.data.wide_weight_scales},
                            {"moe_width", double(info.data.moe_width)}}},
      {"ceilings", json::Object{{"read_gbps", c.read_gbps},
                                {"copy_gbps", c.copy_gbps},
                                {"bf16_tflops", c.bf16_tflops},
                                {"fp8_tflops", c.fp8_tflops}}},
      {"rows", std::move(row_values)},
      {"targets", std::move(target_values)}};
  std::ofstream f(path);
  if (!f) throw Error("cannot write " + path);
  f << json::write(doc) << "\n";
  if (!f) throw Error("cannot write " + path);
}

}  // namespace fp4moe::bench
