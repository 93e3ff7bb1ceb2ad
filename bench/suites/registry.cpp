// The suites of `fp4moe bench`, in default order.
#include "bench/suite.hpp"

namespace fp4moe::bench {

void run_quantize_suite(SuiteContext&);
void run_dense_suite(SuiteContext&);
void run_decode_suite(SuiteContext&);
void run_prefill_suite(SuiteContext&);
void run_seed_fc2_suite(SuiteContext&);
void run_moe_fc2_suite(SuiteContext&);
void run_moe_fc1_suite(SuiteContext&);
std::vector<GemmRowSpec> dense_rows();
std::vector<GemmRowSpec> decode_rows();
std::vector<GemmRowSpec> prefill_rows();
std::vector<GemmRowSpec> seed_fc2_rows();
std::vector<GemmRowSpec> moe_fc2_rows();

const std::vector<Suite>& all_suites() {
  static const std::vector<Suite> suites = {
      {"decode", "masked FP4 GEMM, few tokens per expert (target: >= 85% of read bandwidth)", run_decode_suite, decode_rows},
      {"prefill", "contiguous FP4 GEMM, many tokens per expert (target: >= 0.9x cuBLAS BF16)", run_prefill_suite,
       prefill_rows},
      {"dense", "dense FP4 GEMM, DESIGN.md shapes, judged by regime", run_dense_suite, dense_rows},
      {"seed-fc2", "moe_dense_fc2, E=256 W=256 N=7168, dense alpha (targets: M<=32 ~65 us; else >= 90% of the route's tensor rate)",
       run_seed_fc2_suite, seed_fc2_rows},
      {"moe-fc2", "moe_dense_fc2 with top-8 routing, expert skipping (target: <= 65 us for M in 32..384)", run_moe_fc2_suite,
       moe_fc2_rows},
      {"moe-fc1", "moe_dense_fc1_swiglu, E=256 I=256 K=7168, BF16 and NVFP4 out (no target: what FC1 costs)",
       run_moe_fc1_suite},
      {"quantize", "BF16 -> NVFP4 / MXFP4, 1 and 4 GiB (target: >= 90% of copy bandwidth)", run_quantize_suite},
  };
  return suites;
}

}  // namespace fp4moe::bench
