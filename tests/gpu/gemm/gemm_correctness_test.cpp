// The GEMM engine against the float64 reference: every layout × format ×
// output dtype × compiled tactic (and the heuristic's own choice), on shapes
// at and off tile multiples, with fresh random data and poisoned outputs.
#include <gtest/gtest.h>

#include "gemm/gemm_test_util.hpp"
#include "kernels/sm90/gemm_registry.hpp"

namespace fp4moe {
namespace {

using test::GemmCase;
using test::GemmLayout;
using test::Fp4Content;

std::vector<GemmTactic> tactics_for(Fp4Format f, GemmLayout l) {
  const kernels::Layout kl = l == GemmLayout::kDense ? kernels::Layout::kDense
                             : l == GemmLayout::kContiguous ? kernels::Layout::kContiguous
                                                            : kernels::Layout::kMasked;
  std::vector<GemmTactic> out;
  for (const auto& e : kernels::kernel_registry())
    if (e.format == f && e.layout == kl) out.push_back(e.tactic);
  return out;
}

class GemmAllTactics : public ::testing::TestWithParam<std::tuple<Fp4Format, GemmLayout>> {};

TEST_P(GemmAllTactics, MatchesReference) {
  FP4MOE_REQUIRE_GPU();
  const auto [format, layout] = GetParam();
  test::Rng rng;
  const std::vector<GemmTactic> tactics = tactics_for(format, layout);
  ASSERT_FALSE(tactics.empty());
  std::vector<const GemmTactic*> choices = {nullptr};
  for (const GemmTactic& t : tactics) choices.push_back(&t);
  int ran = 0;
  for (const GemmTactic* t : choices) {
    for (DType out : {DType::kFP32, DType::kBF16}) {
      for (Fp4Content content : {Fp4Content::kRandom, Fp4Content::kIntegerValued}) {
        if (out == DType::kBF16 && content == Fp4Content::kIntegerValued) continue;
        GemmCase c;
        c.format = format;
        c.layout = layout;
        c.out = out;
        c.content = content;
        c.tactic = t;
        c.ld_pad = ran % 2 ? 8 : 0;
        if (layout == GemmLayout::kDense) {
          const int ms[] = {1, 7, 64, 127, 300};
          c.m = ms[ran % 5];
          c.n = ran % 3 == 0 ? 256 : 200;
          c.k = ran % 2 ? 512 : 480;
        } else if (layout == GemmLayout::kContiguous) {
          c.groups = 4;
          c.expert_rows = {130, 0, 5, 256};
          c.n = ran % 2 ? 256 : 136;
          c.k = 384;
        } else {
          c.groups = 3;
          c.m = ran % 2 ? 64 : 130;
          c.masked_m = {0, 1, c.m};
          c.n = ran % 2 ? 128 : 264;
          c.k = 256 + 32 * (ran % 3);
        }
        SCOPED_TRACE(c.describe());
        expect_gemm_ok(c, run_gemm_case(c, rng));
        ++ran;
      }
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<GemmAllTactics::ParamType>& info) {
  return std::string(format_name(std::get<0>(info.param))) + "_" + test::layout_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(All, GemmAllTactics,
                         ::testing::Combine(::testing::Values(Fp4Format::kNVFP4, Fp4Format::kMXFP4),
                                            ::testing::Values(GemmLayout::kDense, GemmLayout::kContiguous, GemmLayout::kMasked)),
                         case_name);

TEST(GemmLargeM, DenseM4099MatchesReference) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    GemmCase c;
    c.format = f;
    c.m = 4099;
    c.n = 264;
    c.k = 1024;
    SCOPED_TRACE(c.describe());
    expect_gemm_ok(c, run_gemm_case(c, rng));
  }
}

}  // namespace
}  // namespace fp4moe
