// The CPU reference GEMMs against products computed by hand.
//
// Codes used below: E2M1 2 = 1.0, 3 = 1.5, 4 = 2.0, 7 = 6.0, 10 = -1.0;
// E4M3 0x38 = 1.0, 0x40 = 2.0, 0x30 = 0.5; UE8M0 127 = 1, 128 = 2, 126 = 0.5.
#include <gtest/gtest.h>

#include <cmath>

#include "reference/reference_gemm.hpp"
#include "support/test_support.hpp"

namespace fp4moe {
namespace {

using test::HostFp4;

TEST(ReferenceGemm, DenseNvfp4SmallProduct) {
  HostFp4 a(Fp4Format::kNVFP4, ScaleLayout::kRowMajor, 2, 32), b(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, 3, 32);
  test::set_all_scales(a, 0x38);
  test::set_all_scales(b, 0x38);
  test::set_row_codes(a, 0, 0, 2);   // row 0: all 1.0
  test::set_row_codes(a, 0, 1, 10);  // row 1: all -1.0
  test::set_scale(a, 0, 1, 1, 0x40); // second block of row 1 scaled by 2
  test::set_row_codes(b, 0, 0, 4);   // 2.0
  test::set_row_codes(b, 0, 1, 3);   // 1.5
  test::set_row_codes(b, 0, 2, 0);   // 0
  test::set_scale(b, 0, 2, 0, 0x30);
  a.global[0] = 0.5f;
  b.global[0] = 3.0f;
  const std::vector<double> d = reference::gemm_nt(a.t, b.t);
  ASSERT_EQ(d.size(), 6u);
  // row 0 · row 0: 32 · 1 · 2 = 64, × 0.5 · 3 = 96
  EXPECT_EQ(d[0], 96.0);
  EXPECT_EQ(d[1], 32 * 1.5 * 1.5);
  EXPECT_EQ(d[2], 0.0);
  // row 1: 16 · (-1) + 16 · (-2) = -48 per unit of b
  EXPECT_EQ(d[3], -48 * 2.0 * 1.5);
  EXPECT_EQ(d[4], -48 * 1.5 * 1.5);
}

TEST(ReferenceGemm, DenseMxfp4UsesPowerOfTwoScalesBeyondFloatRange) {
  HostFp4 a(Fp4Format::kMXFP4, ScaleLayout::kRowMajor, 1, 32), b(Fp4Format::kMXFP4, ScaleLayout::kRowMajor, 1, 32);
  test::set_row_codes(a, 0, 0, 7);  // 6
  test::set_row_codes(b, 0, 0, 7);
  test::set_all_scales(a, 254);     // 2^127
  test::set_all_scales(b, 200);     // 2^73: the product 36·32·2^200 overflows float, not double
  const std::vector<double> d = reference::gemm_nt(a.t, b.t);
  EXPECT_EQ(d[0], 36.0 * 32 * std::ldexp(1.0, 200));
}

TEST(ReferenceGemm, ContiguousUsesEachRowsExpertAndZeroesPadding) {
  HostFp4 a(Fp4Format::kNVFP4, ScaleLayout::kRowMajor, 3, 16), b(Fp4Format::kNVFP4, ScaleLayout::kRowMajor, 2, 16, 2);
  test::set_all_scales(a, 0x38);
  test::set_all_scales(b, 0x38);
  for (int r = 0; r < 3; ++r) test::set_row_codes(a, 0, r, 2);  // 1.0
  test::set_row_codes(b, 0, 0, 2);
  test::set_row_codes(b, 0, 1, 4);
  test::set_row_codes(b, 1, 0, 3);
  test::set_row_codes(b, 1, 1, 7);
  b.global = {1.0f, 0.25f};
  const std::int32_t m_indices[3] = {1, -1, 0};
  const std::vector<double> d = reference::grouped_contiguous(a.t, b.t, m_indices);
  EXPECT_EQ(d[0], 16 * 1.5 * 0.25);
  EXPECT_EQ(d[1], 16 * 6.0 * 0.25);
  EXPECT_EQ(d[2], 0.0);
  EXPECT_EQ(d[3], 0.0);
  EXPECT_EQ(d[4], 16.0);
  EXPECT_EQ(d[5], 32.0);
}

TEST(ReferenceGemm, MaskedLeavesRowsPastMaskedMUntouched) {
  HostFp4 a(Fp4Format::kMXFP4, ScaleLayout::kRowMajor, 3, 32, 2), b(Fp4Format::kMXFP4, ScaleLayout::kRowMajor, 2, 32, 2);
  test::set_all_scales(a, 127);
  test::set_all_scales(b, 128);  // 2
  for (int g = 0; g < 2; ++g)
    for (int r = 0; r < 3; ++r) test::set_row_codes(a, g, r, static_cast<unsigned>(2 + r));
  for (int g = 0; g < 2; ++g)
    for (int n = 0; n < 2; ++n) test::set_row_codes(b, g, n, 2);
  const std::int32_t masked_m[2] = {0, 2};
  std::vector<double> d(2 * 3 * 2, -7.0);
  reference::grouped_masked(a.t, b.t, masked_m, d.data());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(d[i], -7.0);  // group 0: masked_m = 0
  EXPECT_EQ(d[6], 32 * 1.0 * 2);                       // group 1 row 0: codes 2 (1.0)
  EXPECT_EQ(d[8], 32 * 1.5 * 2);                       // row 1: codes 3 (1.5)
  EXPECT_EQ(d[10], -7.0);                              // row 2 untouched
  EXPECT_EQ(d[11], -7.0);
}

TEST(ReferenceGemm, MoeDenseFc2WeightsEachExpertByAlphaWithAnyStrides) {
  const std::int64_t m = 2, e = 2, w = 16;
  HostFp4 a(Fp4Format::kNVFP4, ScaleLayout::kRowMajor, m, e * w), b(Fp4Format::kNVFP4, ScaleLayout::kRowMajor, 1, e * w);
  test::set_all_scales(a, 0x38);
  test::set_all_scales(b, 0x38);
  test::set_row_codes(a, 0, 0, 2);  // 1.0 everywhere
  test::set_row_codes(a, 0, 1, 4);  // 2.0
  test::set_row_codes(b, 0, 0, 2);
  for (int k = w; k < 2 * w; ++k) test::set_code(b, 0, 0, k, 3);  // expert 1 of B: 1.5
  a.global[0] = 2.0f;
  // alpha stored expert-major: alpha[m, e] at e·m_count + m.
  std::vector<float> alpha = {0.5f, 0.0f, /*e=1*/ 1.0f, 3.0f};
  MatrixView av{alpha.data(), DType::kFP32, m, e, /*row_stride=*/1, /*col_stride=*/m};
  const std::vector<double> d = reference::moe_dense_fc2(a.t, b.t, e, av);
  EXPECT_EQ(d[0], 2.0 * (0.5 * 16 * 1.0 + 1.0 * 16 * 1.5));
  EXPECT_EQ(d[1], 2.0 * (0.0 + 3.0 * 16 * 2.0 * 1.5));
}

TEST(ReferenceGemm, MoeDenseFc1AppliesSiluGateTimesUp) {
  const std::int64_t inter = 1;
  HostFp4 a(Fp4Format::kMXFP4, ScaleLayout::kRowMajor, 1, 32), b(Fp4Format::kMXFP4, ScaleLayout::kRowMajor, 2 * inter, 32, 2);
  test::set_all_scales(a, 127);
  test::set_all_scales(b, 122);  // 2^-5: sums of 32 ones become 1
  test::set_row_codes(a, 0, 0, 2);
  test::set_row_codes(b, 0, 0, 2);   // gate = 1
  test::set_row_codes(b, 0, 1, 4);   // up = 2
  test::set_row_codes(b, 1, 0, 10);  // gate = -1
  test::set_row_codes(b, 1, 1, 2);   // up = 1
  const float out_scale[2] = {1.0f, 4.0f};
  const std::vector<double> d = reference::moe_dense_fc1_swiglu(a.t, b.t, out_scale);
  const double silu1 = 1.0 / (1.0 + std::exp(-1.0)), silum1 = -1.0 / (1.0 + std::exp(1.0));
  EXPECT_DOUBLE_EQ(d[0], silu1 * 2.0);
  EXPECT_DOUBLE_EQ(d[1], silum1 * 1.0 * 4.0);
}

TEST(ReferenceGemm, LargerRandomProductMatchesNaiveLoop) {
  test::Rng rng;
  HostFp4 a(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, 45, 2112), b(Fp4Format::kNVFP4, ScaleLayout::kRowMajor, 37, 2112);
  test::fill_random(a, rng);
  test::fill_random(b, rng);
  const std::vector<double> d = reference::gemm_nt(a.t, b.t);
  for (std::int64_t i = 0; i < 45; i += 11)
    for (std::int64_t j = 0; j < 37; j += 7) {
      double s = 0;
      for (std::int64_t k = 0; k < 2112; ++k) s += reference::decoded_element(a.t, 0, i, k) * reference::decoded_element(b.t, 0, j, k);
      EXPECT_DOUBLE_EQ(d[i * 37 + j], s * a.global[0] * b.global[0]) << i << "," << j;
    }
}

}  // namespace
}  // namespace fp4moe
