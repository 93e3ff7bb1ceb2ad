#include "bench/targets.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <regex>

namespace fp4moe::bench {
namespace {

bool own_choice(const Row& r) { return r.impl == "fp4moe" && (r.variant.empty() || r.variant == "prepacked"); }
bool has_word(const Row& r, const char* w) { return (" " + r.name + " ").find(std::string(" ") + w + " ") != std::string::npos; }
bool is_nvfp4(const Row& r) { return has_word(r, "nvfp4"); }
bool memory_bound(const Row& r) { return r.ceiling == CeilingKind::kRead; }
/// A MoE row's token count (the "M=..." word), or -1.
int moe_tokens(const Row& r) {
  static const std::regex m_word(" M=([0-9]+) ");
  std::smatch m;
  const std::string padded = " " + r.name + " ";
  return std::regex_search(padded, m, m_word) ? std::stoi(m[1]) : -1;
}

/// One target: the rows `covers` selects, each measured by `value` (NaN:
/// not measured in this run, left out) and met where `meets(value)`.
struct Rule {
  const char* target;
  const char* unit;
  std::function<bool(const Row&)> covers;
  std::function<double(const Row&)> value;
  std::function<bool(double)> meets;
};

double percent_of_ceiling(const Row& r) { return 100 * r.fraction; }
// (NaN, not counted, where the peer did not run: a --filter that left its
// row out. A ratio of 0 there made every such row a miss.)
double vs_bf16(const Row& r) { return r.vs_bf16 > 0 ? r.vs_bf16 : std::nan(""); }
double vs_fp8(const Row& r) { return r.vs_fp8 > 0 ? r.vs_fp8 : std::nan(""); }
double micros(const Row& r) { return r.time.median_us; }
auto at_least(double x) { return [x](double v) { return v >= x; }; }
auto at_most(double x) { return [x](double v) { return v <= x; }; }
auto above(double x) { return [x](double v) { return v > x; }; }

/// Decode and dense "by regime": memory-bound rows against the read
/// bandwidth, compute-bound ones as prefill (NVFP4 against cuBLAS BF16,
/// MXFP4 against cuBLAS FP8).
std::vector<Rule> by_regime(const char* suite, const char* mem, const char* nv, const char* mx) {
  const std::string s = suite;
  return {
      {mem, "% of read bw", [s](const Row& r) { return r.suite == s && own_choice(r) && memory_bound(r); },
       percent_of_ceiling, at_least(85)},
      {nv, "x cuBLAS BF16", [s](const Row& r) { return r.suite == s && own_choice(r) && !memory_bound(r) && is_nvfp4(r); },
       vs_bf16, at_least(0.9)},
      {mx, "x cuBLAS FP8", [s](const Row& r) { return r.suite == s && own_choice(r) && !memory_bound(r) && !is_nvfp4(r); },
       vs_fp8, at_least(1.0)},
  };
}

std::vector<Rule> rules() {
  std::vector<Rule> out;
  // The MoE targets are for DESIGN.md's workload, expert width 256 (not
  // a run with --moe-width).
  auto seed = [](const Row& r) { return r.suite == "seed-fc2" && has_word(r, "W=256"); };
  out.push_back({"seed-fc2 M <= 32: >= 90% of the read-bandwidth floor", "% of read bw",
                 [seed](const Row& r) { return seed(r) && own_choice(r) && moe_tokens(r) <= 32; }, percent_of_ceiling,
                 at_least(90)});
  out.push_back({"seed-fc2 M >= 64: >= 90% of the route's tensor rate (its regime's ceiling)", "% of ceiling",
                 [seed](const Row& r) { return seed(r) && own_choice(r) && moe_tokens(r) >= 64; }, percent_of_ceiling,
                 at_least(90)});
  out.push_back({"seed-fc2 MXFP4 on the FP8 route: faster than cuBLAS FP8", "x cuBLAS FP8",
                 [seed](const Row& r) { return seed(r) && r.impl == "fp4moe" && r.variant == "fp8-route"; }, vs_fp8,
                 above(1.0)});
  out.push_back({"moe-fc2: <= 65 us at every M", "us",
                 [](const Row& r) { return r.suite == "moe-fc2" && has_word(r, "W=256") && own_choice(r); }, micros,
                 at_most(65)});
  for (Rule& r : by_regime("decode", "decode, memory-bound rows: >= 85% of read bw",
                           "decode, compute-bound NVFP4 rows: >= 0.9x cuBLAS BF16",
                           "decode, compute-bound MXFP4 rows: >= cuBLAS FP8"))
    out.push_back(std::move(r));
  out.push_back({"prefill NVFP4: >= 0.9x cuBLAS BF16", "x cuBLAS BF16",
                 [](const Row& r) { return r.suite == "prefill" && own_choice(r) && is_nvfp4(r); }, vs_bf16, at_least(0.9)});
  out.push_back({"prefill MXFP4: >= cuBLAS FP8", "x cuBLAS FP8",
                 [](const Row& r) { return r.suite == "prefill" && own_choice(r) && !is_nvfp4(r); }, vs_fp8, at_least(1.0)});
  for (Rule& r : by_regime("dense", "dense, memory-bound rows: >= 85% of read bw",
                           "dense, compute-bound NVFP4 rows: >= 0.9x cuBLAS BF16",
                           "dense, compute-bound MXFP4 rows: >= cuBLAS FP8"))
    out.push_back(std::move(r));
  out.push_back({"quantize: >= 90% of copy bw", "% of copy bw",
                 [](const Row& r) { return r.suite == "quantize" && r.impl == "fp4moe"; }, percent_of_ceiling, at_least(90)});
  return out;
}

}  // namespace

std::vector<TargetCheck> check_targets(const std::vector<Row>& rows) {
  std::vector<TargetCheck> out;
  for (const Rule& rule : rules()) {
    TargetCheck c;
    c.target = rule.target;
    c.unit = rule.unit;
    for (const Row& r : rows) {
      if (!rule.covers(r)) continue;
      const double v = rule.value(r);
      if (std::isnan(v)) continue;
      c.lo = c.rows == 0 ? v : std::min(c.lo, v);
      c.hi = c.rows == 0 ? v : std::max(c.hi, v);
      ++c.rows;
      c.met += rule.meets(v) ? 1 : 0;
    }
    if (c.rows > 0) out.push_back(c);
  }
  return out;
}

void print_targets(const std::vector<TargetCheck>& checks) {
  if (checks.empty()) return;
  std::printf("== targets (DESIGN.md section 6; its figures are for an H200) ==\n%-76s %9s  %s\n", "target", "rows met",
              "measured");
  for (const TargetCheck& c : checks) {
    char met[32];
    std::snprintf(met, sizeof met, "%d / %d", c.met, c.rows);
    std::printf("%-76s %9s  %.2f - %.2f %s\n", c.target.c_str(), met, c.lo, c.hi, c.unit.c_str());
  }
  std::printf("\n");
}

}  // namespace fp4moe::bench
