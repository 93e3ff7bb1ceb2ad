#include "bench/suite.hpp"

#include <chrono>
#include <string>
#include <thread>

#include "api/gemm_dispatch.hpp"

namespace fp4moe::bench {

std::string last_tactic_text() {
  const detail::PlannedTactic& p = detail::last_planned_tactic();
  return p.ran_text() + (p.source == detail::PlannedTactic::Source::kCache ? " (tuned)" : "");
}

Row& SuiteContext::add(Row r, const std::function<void(cudaStream_t)>& op) {
  static Row skipped;
  if (!wants(r.name)) return skipped;
  if (timing.cooldown_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(timing.cooldown_ms));
  r.time = timer.time(op, timing);
  rows.push_back(std::move(r));
  return rows.back();
}

}  // namespace fp4moe::bench
