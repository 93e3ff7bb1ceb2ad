// Exhaustive and hand-computed tests of the E2M1 / E4M3 / UE8M0 / BF16 codecs,
// cross-checked against the host conversions of CUDA's cuda_fp4.h, cuda_fp8.h
// and cuda_bf16.h (an independent implementation).
#include <cuda_bf16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fp4moe/codec.hpp"

namespace fp4moe {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

/// Visits a spread of float bit patterns: a prime stride over all 2^32, plus
/// every pattern within ±256 ulps of each value in `centres` (both signs).
template <class F>
void sweep_floats(std::initializer_list<float> centres, F&& f) {
  for (std::uint64_t u = 0; u < (1ull << 32); u += 65521) f(bits_to_float(static_cast<std::uint32_t>(u)));
  for (float c : centres)
    for (std::uint32_t sign : {0u, 0x80000000u})
      for (int d = -256; d <= 256; ++d) f(bits_to_float((float_to_bits(c) + static_cast<std::uint32_t>(d)) ^ sign));
}

// ---------------------------------------------------------------- E2M1 ----

TEST(E2M1, DecodesEveryCode) {
  const float expect[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (unsigned c = 0; c < 16; ++c) {
    const float v = decode_e2m1(c);
    EXPECT_EQ(std::fabs(v), expect[c & 7]) << c;
    EXPECT_EQ(std::signbit(v), c >= 8) << c;
  }
}

TEST(E2M1, EncodeInvertsDecodeForEveryCode) {
  for (unsigned c = 0; c < 16; ++c) EXPECT_EQ(encode_e2m1(decode_e2m1(c)), c) << c;
}

TEST(E2M1, RoundsTiesToEvenAndSaturates) {
  struct Case { float x; unsigned code; };
  const Case cases[] = {{0.25f, 0}, {0.2500001f, 1}, {0.75f, 2}, {0.7499999f, 1}, {1.25f, 2},
                        {1.2500001f, 3}, {1.75f, 4}, {2.5f, 4}, {2.5000002f, 5}, {3.5f, 6},
                        {5.0f, 6}, {5.0000005f, 7}, {6.0f, 7}, {1e30f, 7}, {kInf, 7},
                        {-kInf, 15}, {kNaN, 7}, {-0.1f, 8}, {-0.0f, 8}, {-5.5f, 15}};
  for (const Case& c : cases) EXPECT_EQ(encode_e2m1(c.x), c.code) << c.x;
}

TEST(E2M1, MatchesCudaFp4HostConversion) {
  std::int64_t n = 0;
  sweep_floats({0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f}, [&](float x) {
    const unsigned ref = __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest);
    ASSERT_EQ(encode_e2m1(x), ref) << std::hexfloat << x;
    ++n;
  });
  EXPECT_GT(n, 60000);
}

// ---------------------------------------------------------------- E4M3 ----

TEST(E4M3, DecodesEveryCodeLikeCuda) {
  for (unsigned c = 0; c < 256; ++c) {
    const float mine = decode_e4m3(static_cast<std::uint8_t>(c));
    const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(c), __NV_E4M3);
    const float ref = __half2float(__half(h));
    if ((c & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(mine) && std::isnan(ref)) << c;
    } else {
      EXPECT_EQ(float_to_bits(mine), float_to_bits(ref)) << c;
    }
  }
  EXPECT_EQ(decode_e4m3(0x7e), 448.0f);
  EXPECT_EQ(decode_e4m3(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(decode_e4m3(0x08), std::ldexp(1.0f, -6));
}

TEST(E4M3, EncodeInvertsDecodeForEveryFiniteCode) {
  for (unsigned c = 0; c < 256; ++c)
    if ((c & 0x7f) != 0x7f) {
      EXPECT_EQ(encode_e4m3(decode_e4m3(static_cast<std::uint8_t>(c))), c) << c;
    }
}

TEST(E4M3, RoundsTiesToEvenAndSaturates) {
  EXPECT_EQ(encode_e4m3(464.0f), 0x7e);  // midpoint 448/480: even (448), and 480 does not exist
  EXPECT_EQ(encode_e4m3(1e9f), 0x7e);
  EXPECT_EQ(encode_e4m3(kInf), 0x7e);
  EXPECT_EQ(encode_e4m3(-kInf), 0xfe);
  EXPECT_EQ(encode_e4m3(kNaN), 0x7f);
  EXPECT_EQ(encode_e4m3(17.0f), encode_e4m3(16.0f));  // 17 = midpoint 16/18: even mantissa (16)
  EXPECT_EQ(encode_e4m3(19.0f), encode_e4m3(20.0f));  // 19 = midpoint 18/20: even mantissa (20)
  EXPECT_EQ(encode_e4m3(std::ldexp(1.0f, -10)), 0x00);        // half the smallest subnormal: ties to 0
  EXPECT_EQ(encode_e4m3(std::ldexp(1.5f, -9)), 0x02);         // 1.5 · 2^-9: ties to even 2
  EXPECT_EQ(encode_e4m3(std::ldexp(7.9f, -9)), 0x08);  // subnormal rounds up across 2^-6
}

TEST(E4M3, MatchesCudaFp8HostConversion) {
  sweep_floats({448.0f, 464.0f, 0.015625f, 0.001953125f, 1.0f, 240.0f}, [&](float x) {
    if (std::isnan(x)) return;
    const unsigned ref = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    ASSERT_EQ(encode_e4m3(x), ref) << std::hexfloat << x;
  });
}

// --------------------------------------------------------------- UE8M0 ----

TEST(UE8M0, DecodesEveryCode) {
  for (unsigned c = 0; c < 255; ++c) EXPECT_EQ(decode_ue8m0(static_cast<std::uint8_t>(c)), std::ldexp(1.0f, int(c) - 127)) << c;
  EXPECT_TRUE(std::isnan(decode_ue8m0(0xff)));
}

TEST(UE8M0, EncodeInvertsDecodeForEveryFiniteCode) {
  for (unsigned c = 0; c < 255; ++c) EXPECT_EQ(encode_ue8m0(decode_ue8m0(static_cast<std::uint8_t>(c))), c) << c;
}

TEST(UE8M0, RoundsToNearestPowerOfTwoTiesToEvenAndSaturates) {
  EXPECT_EQ(encode_ue8m0(1.5f), 128);    // between 2^0 (127) and 2^1 (128): even code
  EXPECT_EQ(encode_ue8m0(3.0f), 128);    // between 2^1 (128) and 2^2 (129): even code
  EXPECT_EQ(encode_ue8m0(1.4999999f), 127);
  EXPECT_EQ(encode_ue8m0(1.5000001f), 128);
  EXPECT_EQ(encode_ue8m0(0.7f), 126);
  EXPECT_EQ(encode_ue8m0(std::ldexp(1.7f, 127)), 0xfe);  // would be 2^128: saturates
  EXPECT_EQ(encode_ue8m0(kInf), 0xfe);
  EXPECT_EQ(encode_ue8m0(std::ldexp(1.0f, -127)), 0x00);
  EXPECT_EQ(encode_ue8m0(std::ldexp(1.5f, -127)), 0x00);  // subnormal tie: even code 0
  EXPECT_EQ(encode_ue8m0(std::ldexp(1.6f, -127)), 0x01);
  EXPECT_EQ(encode_ue8m0(std::ldexp(1.0f, -140)), 0x00);  // below the range: saturates
  EXPECT_EQ(encode_ue8m0(0.0f), 0x00);
  EXPECT_EQ(encode_ue8m0(-1.0f), 0xff);
  EXPECT_EQ(encode_ue8m0(kNaN), 0xff);
}

TEST(UE8M0, FloorLog2IsExactAtPowerOfTwoEdges) {
  for (int e = -149; e <= 127; ++e) {
    const float p = std::ldexp(1.0f, e);
    EXPECT_EQ(floor_log2(p), e);
    if (e > -149) {
      EXPECT_EQ(floor_log2(std::nextafter(p, 0.0f)), e - 1) << e;
    }
  }
}

// ---------------------------------------------------------------- BF16 ----

TEST(BF16, MatchesCudaHostRounding) {
  sweep_floats({1.0f, 3.0e38f, 1e-38f}, [&](float x) {
    const __nv_bfloat16_raw r = __nv_bfloat16_raw(__float2bfloat16_rn(x));
    if (std::isnan(x)) {
      EXPECT_EQ(float_to_bf16_bits(x), 0x7fff);
    } else {
      ASSERT_EQ(float_to_bf16_bits(x), r.x) << std::hexfloat << x;
    }
  });
}

}  // namespace
}  // namespace fp4moe
