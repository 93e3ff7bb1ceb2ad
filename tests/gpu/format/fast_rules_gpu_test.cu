// Exhaustive device checks of the divisions the GPU quantizer uses: for every
// positive finite E4M3 divisor and every float dividend whose quotient lies in
// [2^-3, 2^4] (where E2M1 codes change), the reciprocal-pair quotient equals
// the IEEE-rounded one; amax/6 (Markstein) for every float; the e2m1 fast
// code over all non-negative floats.
#include <gtest/gtest.h>

#include "format/block_rules.hpp"
#include "format/fast_rules.hpp"
#include "support/test_support.hpp"

namespace fp4moe::detail {
namespace {

__global__ void pair_division_kernel(unsigned long long* mismatches) {
  const std::uint8_t code = static_cast<std::uint8_t>(blockIdx.y + 1);  // 1..126
  const float d = decode_e4m3(code);
  const ReciprocalPair r = reciprocal_pair(d);
  const std::uint32_t lo = __float_as_uint(d * 0.125f), hi = __float_as_uint(d * 16.0f);
  unsigned long long bad = 0;
  for (std::uint32_t u = lo + blockIdx.x * blockDim.x + threadIdx.x; u <= hi; u += gridDim.x * blockDim.x) {
    const float a = __uint_as_float(u);
    bad += __float_as_uint(div_rn_by_pair(a, r)) != __float_as_uint(__fdiv_rn(a, d));
  }
  if (bad) atomicAdd(mismatches, bad);
}

__global__ void e2m1_code_kernel(unsigned long long* mismatches) {
  unsigned long long bad = 0;
  for (std::uint32_t u = blockIdx.x * blockDim.x + threadIdx.x; u < 0x7f800000u; u += gridDim.x * blockDim.x) {
    const float y = __uint_as_float(u);
    bad += e2m1_magnitude_code(y) != (encode_e2m1(y) & 7u);
  }
  if (bad) atomicAdd(mismatches, bad);
}

__global__ void amax_over_6_kernel(unsigned long long* mismatches) {
  unsigned long long bad = 0;
  for (std::uint32_t u = blockIdx.x * blockDim.x + threadIdx.x; u < 0x7f800000u; u += gridDim.x * blockDim.x) {
    const float a = __uint_as_float(u);
    bad += __float_as_uint(amax_over_6(a)) != __float_as_uint(__fdiv_rn(a, 6.0f));
  }
  if (bad) atomicAdd(mismatches, bad);
}

TEST(FastRulesGpu, AmaxOverSixIsIeeeForEveryNonNegativeFloat) {
  FP4MOE_REQUIRE_GPU();
  test::DeviceBuffer<unsigned long long> bad(1);
  bad.fill_bytes(0);
  amax_over_6_kernel<<<1056, 256>>>(bad.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(bad.download()[0], 0ull);
}

TEST(FastRulesGpu, PairQuotientIsIeeeForEveryE4M3Divisor) {
  FP4MOE_REQUIRE_GPU();
  test::DeviceBuffer<unsigned long long> bad(1);
  bad.fill_bytes(0);
  pair_division_kernel<<<dim3(264, 126), 256>>>(bad.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(bad.download()[0], 0ull);
}

TEST(FastRulesGpu, E2M1FastCodeEqualsEncoderOnEveryNonNegativeFloat) {
  FP4MOE_REQUIRE_GPU();
  test::DeviceBuffer<unsigned long long> bad(1);
  bad.fill_bytes(0);
  e2m1_code_kernel<<<1056, 256>>>(bad.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(bad.download()[0], 0ull);
}

}  // namespace
}  // namespace fp4moe::detail
