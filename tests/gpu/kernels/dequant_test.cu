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

/// out[scale][code] = BF16 value of code under the scale, through raw_pair<1> + apply_scale.
template <bool kNv>
__global__ void convert_all_kernel(std::uint16_t* out) {
  const unsigned scale = blockIdx.x, code = threadIdx.x;  // 16 threads: codes 0..15
  // `code` in elements 1 and 5, the other elements all ones (non-zero
  // neighbours: the masks must keep them out).
  const std::uint32_t q = (0xffffffffu & ~(0xfu << 4) & ~(0xfu << 20)) | (code << 4) | (code << 20);
  const PairScale s = kNv ? nvfp4_pair_scale(static_cast<std::uint8_t>(scale)) : mxfp4_pair_scale(static_cast<std::uint8_t>(scale));
  const std::uint32_t pair = apply_scale<kNv>(raw_pair<1>(q), s);
  out[scale * 16 + code] = static_cast<std::uint16_t>(pair & 0xffffu);
  // The high half (element 5) must equal the low half.
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

/// raw_pair<p> and raw_pair_at(p) for every p = 0..3 of arbitrary words
/// (random neighbours: zero ones once hid a selector bug); 0xdead where the
/// two forms differ.
__global__ void raw_pairs_kernel(const std::uint32_t* q, std::uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const std::uint32_t fixed[4] = {raw_pair<0>(q[i]), raw_pair<1>(q[i]), raw_pair<2>(q[i]), raw_pair<3>(q[i])};
  for (int p = 0; p < 4; ++p) out[4 * i + p] = fixed[p] == raw_pair_at(q[i], p) ? fixed[p] : 0xdeadu;
}

TEST(DequantDevice, RawPairsOfRandomWordsMatchTheHostDecoder) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const int n = 1 << 16;
  std::vector<std::uint32_t> q(n);
  for (auto& w : q) w = static_cast<std::uint32_t>(rng.integer(0, 0xffffffffll));
  test::DeviceBuffer<std::uint32_t> dq(n), dout(4 * n);
  dq.upload(q);
  raw_pairs_kernel<<<n / 256, 256>>>(dq.get(), dout.get(), n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint32_t> got = dout.download();
  const double two126 = std::ldexp(1.0, 126);
  for (int i = 0; i < n; ++i)
    for (int pr = 0; pr < 4; ++pr) {
      const unsigned first = (q[i] >> (4 * pr)) & 0xf, second = (q[i] >> (4 * pr + 16)) & 0xf;
      ASSERT_NE(got[4 * i + pr], 0xdeadu) << "raw_pair and raw_pair_at differ: " << std::hex << q[i] << " pair " << pr;
      const double lo = bf16_bits_to_float(static_cast<std::uint16_t>(got[4 * i + pr] & 0xffff)) * two126;
      const double hi = bf16_bits_to_float(static_cast<std::uint16_t>(got[4 * i + pr] >> 16)) * two126;
      ASSERT_EQ(lo, decode_e2m1(first)) << std::hex << q[i] << " pair " << pr;
      ASSERT_EQ(hi, decode_e2m1(second)) << std::hex << q[i] << " pair " << pr;
      ASSERT_EQ(std::signbit(lo), bool(first & 0x8)) << std::hex << q[i] << " pair " << pr;
      ASSERT_EQ(std::signbit(hi), bool(second & 0x8)) << std::hex << q[i] << " pair " << pr;
    }
}

/// logical_piece on random chunks: piece q holds real k in logical order.
__global__ void chunk_kernel(const uint4* in, uint4* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const PairScale one = nvfp4_pair_scale(0x38);  // 1.0 → pieces carry E2M1·2^-9
  for (int q = 0; q < 4; ++q) out[4 * i + q] = logical_piece<true>(in[i], q, one, one);
}

TEST(DequantDevice, LogicalPiecesPlaceEveryRealKAtItsLogicalSlot) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const int n = 4096;
  std::vector<uint4> in(n);
  for (auto& v : in)
    v = make_uint4(static_cast<unsigned>(rng.integer(0, 0xffffffffll)), static_cast<unsigned>(rng.integer(0, 0xffffffffll)),
                   static_cast<unsigned>(rng.integer(0, 0xffffffffll)), static_cast<unsigned>(rng.integer(0, 0xffffffffll)));
  test::DeviceBuffer<uint4> din(n), dout(4 * n);
  din.upload(in);
  chunk_kernel<<<n / 256, 256>>>(din.get(), dout.get(), n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint4> got = dout.download();
  for (int i = 0; i < n; ++i) {
    const std::uint32_t w[4] = {in[i].x, in[i].y, in[i].z, in[i].w};
    std::uint16_t logical[32];
    for (int q = 0; q < 4; ++q) {
      const std::uint32_t p[4] = {got[4 * i + q].x, got[4 * i + q].y, got[4 * i + q].z, got[4 * i + q].w};
      for (int e = 0; e < 8; ++e) logical[8 * q + e] = static_cast<std::uint16_t>(p[e / 2] >> (16 * (e % 2)));
    }
    for (int r = 0; r < 32; ++r) {
      const unsigned code = (w[r / 8] >> (4 * (r % 8))) & 0xf;
      ASSERT_EQ(double(bf16_bits_to_float(logical[logical_k(r)])), double(decode_e2m1(code)) * std::ldexp(1.0, -9))
          << "chunk " << i << " real k " << r;
    }
  }
}

TEST(DequantLayout, LogicalKIsABijectionWithTheDocumentedOrder) {
  bool seen[32] = {};
  for (int r = 0; r < 32; ++r) {
    const int l = logical_k(r);
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 32);
    EXPECT_FALSE(seen[l]);
    seen[l] = true;
  }
  // Real k 8j + 2s + h + 4e → logical 16s + 8h + 2j + e: a fragment pair
  // (logical 2j, 2j + 1 of a k16 step) is elements (p, p + 4) of word j.
  for (int j = 0; j < 4; ++j)
    for (int s = 0; s < 2; ++s)
      for (int h = 0; h < 2; ++h) {
        EXPECT_EQ(logical_k(8 * j + 2 * s + h), 16 * s + 8 * h + 2 * j);
        EXPECT_EQ(logical_k(8 * j + 2 * s + h + 4), 16 * s + 8 * h + 2 * j + 1);
      }
}

}  // namespace
}  // namespace fp4moe::kernels
