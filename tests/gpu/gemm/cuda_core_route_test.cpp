// The CUDA-core route alone (kernels/sm90/dp4a_gemv.cuh): its 8-token tile
// runs one and two tokens through loops compiled for them and three to eight
// with the count at run time, so every count from 1 to 8 is a case here
// (masked groups, dense M), in both formats; the contiguous layout's tiles
// always run their 8 rows (padding rows included, written as 0). On integer-valued operands the route must be
// bit-exact (each scale block's dot product is an exact integer sum, as on
// the tensor cores). K = 2080 ends on a stage holding one scale block, so
// the blocks past K (which must add nothing) are exercised too. Short enough
// for compute-sanitizer (scripts/device_run.sh SANITIZE_FILTER).
#include <gtest/gtest.h>

#include "gemm/gemm_test_util.hpp"
#include "kernels/sm90/gemm_registry.hpp"
#include "tuning/tactic_space.hpp"

namespace fp4moe {
namespace {

using test::Fp4Content;
using test::GemmCase;
using test::GemmLayout;

const GemmTactic* cuda_core_tactic(Fp4Format format, kernels::Layout layout) {
  for (const auto& e : kernels::kernel_registry())
    if (e.format == format && e.layout == layout && tuning::is_dp4a(e.tactic)) return &e.tactic;
  return nullptr;
}

GemmCase route_case(Fp4Format format, GemmLayout layout, const GemmTactic* tactic) {
  GemmCase c;
  c.format = format;
  c.layout = layout;
  c.tactic = tactic;
  c.content = Fp4Content::kIntegerValued;
  c.n = 384;
  c.k = 2080;
  return c;
}

TEST(GemmCudaCoreRoute, EveryTokenCountOfTheTileIsExact) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  for (Fp4Format format : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    const GemmTactic* dense = cuda_core_tactic(format, kernels::Layout::kDense);
    const GemmTactic* contiguous = cuda_core_tactic(format, kernels::Layout::kContiguous);
    const GemmTactic* masked = cuda_core_tactic(format, kernels::Layout::kMasked);
    ASSERT_TRUE(dense && contiguous && masked) << "a layout without the CUDA-core tile";
    for (int m : {1, 2, 3, 8, 13}) {  // 13: a whole tile of 8, then 5
      GemmCase c = route_case(format, GemmLayout::kDense, dense);
      c.m = m;
      SCOPED_TRACE(c.describe());
      expect_gemm_ok(c, test::run_gemm_case(c, rng));
    }
    {  // one group per count, and an empty one
      GemmCase c = route_case(format, GemmLayout::kMasked, masked);
      c.groups = 9;
      c.m = 8;
      c.masked_m = {1, 2, 3, 4, 5, 6, 7, 8, 0};
      SCOPED_TRACE(c.describe());
      expect_gemm_ok(c, test::run_gemm_case(c, rng));
    }
    {  // each expert's rows padded to 128: tiles mixing tokens and padding rows, and of padding alone
      GemmCase c = route_case(format, GemmLayout::kContiguous, contiguous);
      c.groups = 4;
      c.expert_rows = {1, 2, 0, 6};
      SCOPED_TRACE(c.describe());
      expect_gemm_ok(c, test::run_gemm_case(c, rng));
    }
  }
}

}  // namespace
}  // namespace fp4moe
