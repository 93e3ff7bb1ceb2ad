// The GPU quantizer's fast formulations against the literal rules, swept over
// every float where the answer changes.
#include <gtest/gtest.h>

#include <cmath>
#include <atomic>
#include <limits>

#include "common/fast_divmod.hpp"
#include "common/parallel_for.hpp"
#include "format/block_rules.hpp"
#include "format/fast_rules.hpp"

namespace fp4moe::detail {
namespace {

TEST(FastRules, E2M1MagnitudeCodeMatchesEncoderOnEveryFloatWhereItChanges) {
  // Every float in [2^-3, 2^4): all seven rounding thresholds lie inside.
  const std::uint32_t lo = float_to_bits(0.125f), hi = float_to_bits(16.0f);
  std::atomic<std::int64_t> bad{0};
  parallel_for(hi - lo, [&](std::int64_t i) {
    const float y = bits_to_float(lo + static_cast<std::uint32_t>(i));
    if (e2m1_magnitude_code(y) != (encode_e2m1(y) & 7u)) ++bad;
  }, 1 << 20);
  EXPECT_EQ(bad.load(), 0);
}

TEST(FastRules, E2M1MagnitudeCodeAtTheEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float y : {0.0f, 1e-45f, 1e-30f, 0.1f, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 7.0f, 1e6f, 3e38f, inf})
    EXPECT_EQ(e2m1_magnitude_code(y), encode_e2m1(y) & 7u) << y;
  EXPECT_EQ(e2m1_magnitude_code(std::numeric_limits<float>::quiet_NaN()), 7u);
  // A strided sweep over all non-negative floats.
  for (std::uint32_t u = 0; u < 0x7f800000u; u += 4099) EXPECT_EQ(e2m1_magnitude_code(bits_to_float(u)), encode_e2m1(bits_to_float(u)) & 7u) << u;
}

TEST(FastRules, ClampFreeEncoderMatchesBelowSeven) {
  // The two differ only in the clamp at 6, so below 6 they agree by
  // construction: every float in [6, 7), and a strided sweep below.
  const std::uint32_t lo = float_to_bits(6.0f), hi = float_to_bits(7.0f);
  for (std::uint32_t u = 0; u < lo; u += 997) ASSERT_EQ(e2m1_magnitude_code_bits_below_7(bits_to_float(u)), e2m1_magnitude_code_bits(bits_to_float(u))) << u;
  std::atomic<std::int64_t> bad{0};
  parallel_for(hi - lo, [&](std::int64_t i) {
    const float y = bits_to_float(lo + static_cast<std::uint32_t>(i));
    if (e2m1_magnitude_code_bits_below_7(y) != e2m1_magnitude_code_bits(y)) ++bad;
  }, 1 << 18);
  EXPECT_EQ(bad.load(), 0);
  // And it does need the bound: from 7 on the third line gives code 8.
  EXPECT_NE(e2m1_magnitude_code_bits_below_7(7.0f), e2m1_magnitude_code_bits(7.0f));
}

TEST(FastRules, ScaleCodesThatBoundTheQuotientDo) {
  // For block amaxes over every binade (a strided sweep of positive floats)
  // and several global scales: when nvfp4_scale_bounds_quotient accepts a
  // block, its largest element's quotient RN(RN(amax·g)/s) is below 7.
  int accepted = 0, refused = 0, saturated_accepted = 0;
  for (float g : {1.0f, 0.37f, 2688.0f, 1e-3f, 7.3e5f, 3.0e-30f, 1.7e30f, 128.5f}) {
    for (std::uint32_t u = 1; u < 0x7f800000u; u += 65521) {
      const float amax = bits_to_float(u);
      const std::uint8_t code = nvfp4_scale_code(u, g);
      if (!nvfp4_scale_bounds_quotient(code, amax / 6.0f * g)) {
        ++refused;
        continue;
      }
      ++accepted;
      saturated_accepted += code == 0x7e;
      const float y = (amax * g) / decode_e4m3(code);
      ASSERT_LT(y, 7.0f) << "amax " << amax << " g " << g << " code " << int(code);
    }
  }
  // The edge of the saturated case: u just below 512 with s = 448.
  for (float amax = 27.0f; amax < 28.0f; amax += 1.0f / 1024) {
    const float g = 112.0f, u = amax / 6.0f * g;
    const std::uint8_t code = nvfp4_scale_code(float_to_bits(amax), g);
    if (!nvfp4_scale_bounds_quotient(code, u)) continue;
    ++saturated_accepted;
    ASSERT_LT((amax * g) / decode_e4m3(code), 7.0f) << amax;
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(refused, 1000);  // subnormal, saturated and zero scales exist in the sweep
  EXPECT_GT(saturated_accepted, 10);
  EXPECT_FALSE(nvfp4_scale_bounds_quotient(0x7e, 512.0f));  // u may be far above 448
  EXPECT_FALSE(nvfp4_scale_bounds_quotient(0x07, 0.01f));   // largest subnormal
  EXPECT_TRUE(nvfp4_scale_bounds_quotient(0x08, 0.015625f));  // smallest normal
  EXPECT_FALSE(nvfp4_scale_bounds_quotient(0x88, -0.015625f));  // negative g
}

TEST(FastRules, PackingRawMagnitudePatternsGivesTheCodes) {
  std::uint32_t state = 12345;
  for (int rep = 0; rep < 1000; ++rep) {
    std::uint32_t m[8], expect = 0;
    for (int i = 0; i < 8; ++i) {
      state = state * 1664525u + 1013904223u;
      const float y = bits_to_float((state >> 1) % float_to_bits(8.0f));
      m[i] = e2m1_magnitude_code_bits(y);
      expect |= e2m1_magnitude_code(y) << (4 * i);
    }
    ASSERT_EQ(pack8_magnitude_codes(m), expect);
  }
  EXPECT_EQ(float_to_bits(kRound), kRoundBits);
  const std::uint32_t sevens[8] = {kRoundBits + 7, kRoundBits + 7, kRoundBits + 7, kRoundBits + 7,
                                   kRoundBits + 7, kRoundBits + 7, kRoundBits + 7, kRoundBits + 7};
  EXPECT_EQ(pack8_magnitude_codes(sevens), 0x77777777u);
}

TEST(FastRules, SignComesFromTheInput) {
  EXPECT_EQ(with_sign_of(5, -0.0f), 13u);
  EXPECT_EQ(with_sign_of(5, 3.0f), 5u);
  EXPECT_EQ(with_sign_of(7, -1e30f), 15u);
}

TEST(FastRules, PairDivisionIsIeeeForEveryE4M3SignificandOverABinade) {
  // Every dividend in [1, 2) against the eight E4M3 significands 1 + i/8;
  // both sides scale exactly by powers of two (the GPU test covers every
  // E4M3 divisor directly).
  for (int i = 0; i < 8; ++i) {
    const float d = 1.0f + float(i) / 8.0f;
    const ReciprocalPair r = reciprocal_pair(d);
    const std::uint32_t lo = float_to_bits(1.0f), hi = float_to_bits(2.0f);
    std::atomic<std::int64_t> bad{0};
    parallel_for(hi - lo, [&](std::int64_t j) {
      const float a = bits_to_float(lo + static_cast<std::uint32_t>(j));
      if (float_to_bits(div_rn_by_pair(a, r)) != float_to_bits(a / d)) ++bad;
    }, 1 << 20);
    EXPECT_EQ(bad.load(), 0) << "significand " << d;
  }
  // The low half matters: the product with RN(1/d) alone is often wrong.
  std::int64_t wrong = 0;
  const ReciprocalPair r{reciprocal_pair(1.125f).hi, 0.0f};
  for (std::uint32_t u = float_to_bits(1.0f); u < float_to_bits(2.0f); u += 7) {
    const float a = bits_to_float(u);
    wrong += float_to_bits(div_rn_by_pair(a, r)) != float_to_bits(a / 1.125f);
  }
  EXPECT_GT(wrong, 1000);
}

TEST(FastRules, MarksteinDivisionMatchesIeeeOnASample) {
  // The exhaustive version of this runs on the GPU (fast_rules_gpu_test).
  for (unsigned code = 1; code < 0x7f; code += 3) {
    const float d = decode_e4m3(static_cast<std::uint8_t>(code)), rcp = 1.0f / d;
    for (std::uint32_t u = float_to_bits(d / 8); u < float_to_bits(d * 16); u += 997) {
      const float a = bits_to_float(u);
      ASSERT_EQ(float_to_bits(div_rn_with_reciprocal(a, d, rcp)), float_to_bits(a / d)) << a << "/" << d;
    }
  }
}

TEST(FastRules, AmaxOverSixMatchesIeeeOnAStridedSweep) {
  // Exhaustive on the GPU (fast_rules_gpu_test).
  for (std::uint32_t u = 0; u < 0x7f800000u; u += 1021) {
    const float a = bits_to_float(u);
    ASSERT_EQ(float_to_bits(amax_over_6(a)), float_to_bits(a / 6.0f)) << a;
  }
}

TEST(FastDivmod, ExactForManyDivisorsAndDividends) {
  for (std::uint32_t d : {1u, 2u, 3u, 4u, 7u, 56u, 112u, 224u, 448u, 1000u, 4095u, 65537u, 1u << 30}) {
    const FastDivmod f(d);
    for (std::uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d - 1, 123456789u, (1u << 31) - 1}) {
      std::uint32_t q, r;
      f.divmod(n, q, r);
      EXPECT_EQ(q, n / d) << n << "/" << d;
      EXPECT_EQ(r, n % d) << n << "%" << d;
    }
    for (std::uint32_t n = 0; n < (1u << 31) - 40000u; n += 39989u) ASSERT_EQ(f.div(n), n / d) << n << "/" << d;
  }
}

}  // namespace
}  // namespace fp4moe::detail
