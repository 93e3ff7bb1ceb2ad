// The suites of `fp4moe bench`, in default order.
#include "bench/suite.hpp"

namespace fp4moe::bench {

void run_quantize_suite(SuiteContext&);

const std::vector<Suite>& all_suites() {
  static const std::vector<Suite> suites = {
      {"quantize", "BF16 -> NVFP4 / MXFP4, 1 and 4 GiB (target: >= 90% of copy bandwidth)", run_quantize_suite},
  };
  return suites;
}

}  // namespace fp4moe::bench
