// The GPU quantizer's fast formulations against the literal rules, swept over
// every float where the answer changes.
#include <gtest/gtest.h>

#include <cmath>
#include <atomic>
#include <limits>

#include "common/fast_divmod.hpp"
#include "common/parallel_for.hpp"
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

TEST(FastRules, SignComesFromTheInput) {
  EXPECT_EQ(with_sign_of(5, -0.0f), 13u);
  EXPECT_EQ(with_sign_of(5, 3.0f), 5u);
  EXPECT_EQ(with_sign_of(7, -1e30f), 15u);
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
