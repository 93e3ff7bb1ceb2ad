#include "bench/suite.hpp"

namespace fp4moe::bench {

Row& SuiteContext::add(Row r, const std::function<void(cudaStream_t)>& op) {
  static Row skipped;
  if (!wants(r.name)) return skipped;
  r.time = timer.time(op, timing);
  rows.push_back(std::move(r));
  return rows.back();
}

}  // namespace fp4moe::bench
