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
  const NibbleSplit n = split_nibbles(q);
  const std::uint32_t pair = apply_scale<kNv>(raw_pair_from(n.lo, n.hi, pair_selector(1)), s);
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

/// raw_pair_from for every byte b = 0..3 of arbitrary words, with every other
/// byte non-zero (zero neighbours once hid a selector bug).
__global__ void raw_pairs_kernel(const std::uint32_t* q, std::uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const NibbleSplit s = split_nibbles(q[i]);
  for (int b = 0; b < 4; ++b) out[4 * i + b] = raw_pair_from(s.lo, s.hi, pair_selector(b));
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
    for (int b = 0; b < 4; ++b) {
      const unsigned byte = (q[i] >> (8 * b)) & 0xff;
      const double lo = bf16_bits_to_float(static_cast<std::uint16_t>(got[4 * i + b] & 0xffff)) * two126;
      const double hi = bf16_bits_to_float(static_cast<std::uint16_t>(got[4 * i + b] >> 16)) * two126;
      ASSERT_EQ(lo, decode_e2m1(byte & 0xf)) << std::hex << q[i] << " byte " << b;
      ASSERT_EQ(hi, decode_e2m1(byte >> 4)) << std::hex << q[i] << " byte " << b;
      ASSERT_EQ(std::signbit(lo), bool(byte & 0x8)) << std::hex << q[i] << " byte " << b;
    }
}

/// logical_piece on random chunks: piece q holds real k in logical order.
__global__ void chunk_kernel(const uint4* in, uint4* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const NibbleSplit w[4] = {split_nibbles(in[i].x), split_nibbles(in[i].y), split_nibbles(in[i].z), split_nibbles(in[i].w)};
  const PairScale one = nvfp4_pair_scale(0x38);  // 1.0 → pieces carry E2M1·2^-9
  for (int q = 0; q < 4; ++q) out[4 * i + q] = logical_piece<true>(w, q, one, one);
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
  // Real k 8j + 4s + {0,1} → logical 16s + 2j + {0,1}; + {2,3} → + 8.
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
