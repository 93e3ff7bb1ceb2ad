// The device FP4 → BF16 conversion (kernels/sm90/fp4_dequant.cuh) for every
// E2M1 code × every block scale code, against the host decoders; and the
// logical K order of the shared-memory operand.
#include <gtest/gtest.h>

#include <cmath>

#include "fp4moe/codec.hpp"
#include "kernels/sm90/fp4_dequant.cuh"
#include "support/test_support.hpp"

namespace fp4moe::kernels {
namespace {

/// out[scale][code] = BF16 value of code under the scale, through raw_pair + apply_scale.
template <bool kNv>
__global__ void convert_all_kernel(std::uint16_t* out) {
  const unsigned scale = blockIdx.x, code = threadIdx.x;  // 16 threads: codes 0..15
  // Byte with `code` in both nibbles, in byte position 1 of the word.
  const std::uint32_t q = (code | (code << 4)) << 8;
  const PairScale s = kNv ? nvfp4_pair_scale(static_cast<std::uint8_t>(scale)) : mxfp4_pair_scale(static_cast<std::uint8_t>(scale));
  const std::uint32_t pair = apply_scale<kNv>(raw_pair<1>(split_nibbles(q)), s);
  out[scale * 16 + code] = static_cast<std::uint16_t>(pair & 0xffffu);
  // The high half (element 3, the high nibble) must equal the low half.
  if ((pair >> 16) != (pair & 0xffffu)) out[scale * 16 + code] = 0xdead;
}

template <bool kNv>
void check_all_codes() {
  test::DeviceBuffer<std::uint16_t> out(256 * 16);
  out.fill_bytes(0);
  convert_all_kernel<kNv><<<256, 16>>>(out.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint16_t> got = out.download();
  for (unsigned sc = 0; sc < 256; ++sc) {
    if (kNv && (sc & 0x80)) continue;  // negative E4M3 scales are not NVFP4 scales
    for (unsigned code = 0; code < 16; ++code) {
      const float e2m1 = decode_e2m1(code);
      const double scale = kNv ? double(decode_e4m3(static_cast<std::uint8_t>(sc))) * std::ldexp(1.0, -9)
                               : double(decode_ue8m0(static_cast<std::uint8_t>(sc)));
      const double want = double(e2m1) * scale;
      const float have = bf16_bits_to_float(got[sc * 16 + code]);
      ASSERT_NE(got[sc * 16 + code], 0xdead) << "halves differ, scale " << sc << " code " << code;
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(have)) << sc << " " << code;
      } else if (!kNv && std::fabs(want) > 3.3e38) {
        continue;  // MXFP4 6·2^127 and 4·2^127 overflow BF16 (documented)
      } else {
        ASSERT_EQ(double(have), want) << "scale code " << sc << " e2m1 code " << code;
      }
    }
  }
}

TEST(DequantDevice, Nvfp4EveryCodeEveryScaleIsExact) {
  FP4MOE_REQUIRE_GPU();
  check_all_codes<true>();
}

TEST(DequantDevice, Mxfp4EveryCodeEveryScaleIsExact) {
  FP4MOE_REQUIRE_GPU();
  check_all_codes<false>();
}

TEST(DequantLayout, LogicalKIsABijectionMatchingTheRegisterFragment) {
  bool seen[32] = {};
  for (int r = 0; r < 32; ++r) {
    const int l = logical_k(r);
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 32);
    EXPECT_FALSE(seen[l]);
    seen[l] = true;
  }
  // ldmatrix gives thread j bytes 4j..4j+3 = real k 8j..8j+7; byte 2s of
  // them must fill slots (2j, 2j+1) of step s, byte 2s+1 slots (2j+8, 2j+9).
  for (int j = 0; j < 4; ++j)
    for (int s = 0; s < 2; ++s) {
      EXPECT_EQ(logical_k(8 * j + 4 * s + 0), 16 * s + 2 * j);
      EXPECT_EQ(logical_k(8 * j + 4 * s + 1), 16 * s + 2 * j + 1);
      EXPECT_EQ(logical_k(8 * j + 4 * s + 2), 16 * s + 2 * j + 8);
      EXPECT_EQ(logical_k(8 * j + 4 * s + 3), 16 * s + 2 * j + 9);
    }
}

}  // namespace
}  // namespace fp4moe::kernels
