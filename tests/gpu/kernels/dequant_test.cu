// The device FP4 → BF16 conversion (kernels/sm90/fp4_dequant.cuh) for every
// E2M1 code × every block scale code, against the host decoders; the FP8
// route's E2M1 → E4M3 conversion and scale factors; and the logical K orders
// of both routes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "fp4moe/codec.hpp"
#include "kernels/sm90/fp4_dequant.cuh"
#include "support/test_support.hpp"

namespace fp4moe::kernels {
namespace {

/// out[scale][code] = BF16 value of code under the scale, through raw_pair<1> + apply_scale;
/// kOneMultiply (MXFP4): through mxfp4_one_multiply_factor instead, for the
/// codes it covers (the others stay 0, skipped by the check).
template <bool kNv, bool kOneMultiply = false>
__global__ void convert_all_kernel(std::uint16_t* out) {
  const unsigned scale = blockIdx.x, code = threadIdx.x;  // 16 threads: codes 0..15
  // `code` in elements 1 and 5, the other elements all ones (non-zero
  // neighbours: the masks must keep them out).
  const std::uint32_t q = (0xffffffffu & ~(0xfu << 4) & ~(0xfu << 20)) | (code << 4) | (code << 20);
  std::uint32_t pair;
  if constexpr (kOneMultiply) {
    if (scale > kMxfp4OneMultiplyMaxCode) return;
    pair = bf16x2_mul(raw_pair<1>(q), mxfp4_one_multiply_factor(scale));
  } else {
    const PairScale s =
        kNv ? nvfp4_pair_scale(static_cast<std::uint8_t>(scale)) : mxfp4_pair_scale(static_cast<std::uint8_t>(scale));
    pair = apply_scale<kNv>(raw_pair<1>(q), s);
  }
  out[scale * 16 + code] = static_cast<std::uint16_t>(pair & 0xffffu);
  // The high half (element 5) must equal the low half.
  if ((pair >> 16) != (pair & 0xffffu)) out[scale * 16 + code] = 0xdead;
}

template <bool kNv, bool kOneMultiply = false>
void check_all_codes() {
  test::DeviceBuffer<std::uint16_t> out(256 * 16);
  // Poison 0xfefe: a finite BF16 (-1.984375·2^126) no E2M1 value times a
  // power of two can equal, so an element left unwritten fails the check
  // (0 would pass for codes 0 and 8, a NaN for NVFP4's NaN scale).
  out.fill_bytes(0xfe);
  convert_all_kernel<kNv, kOneMultiply><<<256, 16>>>(out.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint16_t> got = out.download();
  for (unsigned sc = 0; sc < 256; ++sc) {
    if (kNv && (sc & 0x80)) continue;  // negative E4M3 scales are not NVFP4 scales
    if (kOneMultiply && sc > kMxfp4OneMultiplyMaxCode) continue;
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

// The swap-AB tiles' one-multiply MXFP4 weights: every code, every scale
// code up to 128 (every E2M1 value times 2^-127 .. 2^1, subnormal results
// included).
TEST(DequantDevice, Mxfp4OneMultiplyEveryCodeIsExactUpToScale2) {
  FP4MOE_REQUIRE_GPU();
  check_all_codes<false, true>();
}

// The decode tiles' stage codes (fp4_gemm_kernel.cuh, kXStageCodes): a word
// of four UE8M0 codes is tested for "every code allows one multiply" in two
// integer operations, and each code's factor is built from the word with a
// prmt. The test: every byte value in every position among random
// neighbours that allow it, and among ones that do not.
TEST(DequantLayout, Mxfp4CodesPastOneMultiplyFlagsExactlyTheBytesAbove0x80) {
  test::Rng rng;
  for (int b = 0; b < 4; ++b)
    for (std::uint32_t code = 0; code < 256; ++code)
      for (int trial = 0; trial < 8; ++trial) {
        std::uint32_t w = 0;
        for (int o = 0; o < 4; ++o) {
          const std::uint32_t other = static_cast<std::uint32_t>(rng.integer(0, trial % 2 ? 255 : 0x80));
          w |= (o == b ? code : other) << (8 * o);
        }
        std::uint32_t want = 0;
        for (int o = 0; o < 4; ++o)
          if (((w >> (8 * o)) & 0xffu) > kMxfp4OneMultiplyMaxCode) want |= 0x80u << (8 * o);
        ASSERT_EQ(mxfp4_codes_past_one_multiply(w), want) << std::hex << w;
      }
}

/// out[4·i + b]: mxfp4_one_multiply_factor_of_pair(mxfp4_code_pair(words[i], b)).
__global__ void code_pair_factor_kernel(const std::uint32_t* words, std::uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int b = 0; b < 4; ++b) out[4 * i + b] = mxfp4_one_multiply_factor_of_pair(mxfp4_code_pair(words[i], b));
}

TEST(DequantDevice, Mxfp4FactorFromACodeWordMatchesTheFactorOfTheCode) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  // Every code up to kMxfp4OneMultiplyMaxCode in every byte, random neighbours.
  const int codes = int(kMxfp4OneMultiplyMaxCode) + 1, n = 4 * codes;
  std::vector<std::uint32_t> words(n);
  for (int i = 0; i < n; ++i) {
    const int b = i / codes;
    std::uint32_t w = static_cast<std::uint32_t>(rng.integer(0, 0xffffffffll));
    w = (w & ~(0xffu << (8 * b))) | (std::uint32_t(i % codes) << (8 * b));
    words[i] = w;
  }
  test::DeviceBuffer<std::uint32_t> dw(n), dout(4 * n);
  dw.upload(words);
  dout.fill_bytes(0xff);  // (unwritten: fails the check)
  code_pair_factor_kernel<<<(n + 127) / 128, 128>>>(dw.get(), dout.get(), n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint32_t> got = dout.download();
  for (int i = 0; i < n; ++i)
    for (int b = 0; b < 4; ++b) {
      const std::uint32_t code = (words[i] >> (8 * b)) & 0xffu;
      if (code > kMxfp4OneMultiplyMaxCode) continue;  // a neighbour past the one-multiply range
      // The per-code form, written out: BF16 exponent field code + 126 in both halves.
      ASSERT_EQ(got[4 * i + b], code * 0x00800080u + 0x3f003f00u) << std::hex << words[i] << " byte " << b;
    }
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
  dout.fill_bytes(0xff);  // (unwritten: NaN halves, fail the check; 0 would pass for codes 0 and 8)
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
  dout.fill_bytes(0xff);  // (unwritten: NaN, fails the check)
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

/// Expects `order` (real k → logical position inside a 32-k chunk) to be a permutation of 0..31.
template <class Order>
void expect_permutation_of_32(Order order) {
  bool seen[32] = {};
  for (int r = 0; r < 32; ++r) {
    const int l = order(r);
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 32);
    EXPECT_FALSE(seen[l]) << "real k " << r;
    seen[l] = true;
  }
}

TEST(DequantLayout, LogicalKIsABijectionWithTheDocumentedOrder) {
  expect_permutation_of_32([](int r) { return logical_k(r); });
  // Real k 8j + 2s + h + 4e → logical 16s + 8h + 2j + e: a fragment pair
  // (logical 2j, 2j + 1 of a k16 step) is elements (p, p + 4) of word j.
  for (int j = 0; j < 4; ++j)
    for (int s = 0; s < 2; ++s)
      for (int h = 0; h < 2; ++h) {
        EXPECT_EQ(logical_k(8 * j + 2 * s + h), 16 * s + 8 * h + 2 * j);
        EXPECT_EQ(logical_k(8 * j + 2 * s + h + 4), 16 * s + 8 * h + 2 * j + 1);
      }
}

/// out[2i], out[2i + 1] = e4m3_even / e4m3_odd of word in[i]; factors[c] =
/// the FP8 scale table entry of code c.
__global__ void e4m3_kernel(const std::uint32_t* in, std::uint32_t* out, std::uint32_t* factors, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 256) factors[i] = fp8_scale_table_entry(static_cast<std::uint8_t>(i));
  if (i >= n) return;
  out[2 * i] = e4m3_even(in[i]);
  out[2 * i + 1] = e4m3_odd(in[i]);
}

TEST(DequantDevice, Fp8RouteEveryCodeInEveryPositionIsExactE4M3) {
  FP4MOE_REQUIRE_GPU();
  // Every code in every nibble, beside random neighbours (the masks must
  // keep them out), and random words.
  test::Rng rng;
  std::vector<std::uint32_t> in;
  for (unsigned code = 0; code < 16; ++code)
    for (int e = 0; e < 8; ++e)
      for (int rep = 0; rep < 8; ++rep) {
        const std::uint32_t noise = static_cast<std::uint32_t>(rng.integer(0, 0xffffffffll));
        in.push_back((noise & ~(0xfu << (4 * e))) | (code << (4 * e)));
      }
  const int n = static_cast<int>(in.size());
  test::DeviceBuffer<std::uint32_t> din(n), dout(2 * n), dfac(256);
  din.upload(in);
  dout.fill_bytes(0xff);  // (unwritten: E4M3 NaN bytes, fail the check)
  dfac.fill_bytes(0);     // (unwritten: 0, fails every factor's check)
  e4m3_kernel<<<(n + 255) / 256, 256>>>(din.get(), dout.get(), dfac.get(), n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint32_t> got = dout.download();
  for (int i = 0; i < n; ++i)
    for (int e = 0; e < 8; ++e) {
      const unsigned code = (in[i] >> (4 * e)) & 0xf;
      const std::uint8_t byte = static_cast<std::uint8_t>(got[2 * i + e % 2] >> (8 * (e / 2)));
      ASSERT_EQ(double(decode_e4m3(byte)), double(decode_e2m1(code)) * std::ldexp(1.0, -6))
          << "word " << std::hex << in[i] << std::dec << " element " << e;
    }
  // Factors: 2^(code - 121), exact up to code 248; +inf past it; NaN for 0xFF.
  const std::vector<std::uint32_t> fac = dfac.download();
  for (unsigned c = 0; c < 256; ++c) {
    float f;
    std::memcpy(&f, &fac[c], 4);
    if (c == 255) {
      EXPECT_TRUE(std::isnan(f));
    } else if (c > 248) {
      EXPECT_TRUE(std::isinf(f) && f > 0) << c;
    } else {
      ASSERT_EQ(double(f), double(decode_ue8m0(static_cast<std::uint8_t>(c))) * 64.0) << c;
    }
  }
}

TEST(DequantLayout, Fp8LogicalKPutsWordJInQuadLaneJsFragments) {
  expect_permutation_of_32([](int r) { return fp8_logical_k(r); });
  // Real k 8j + 2t + h → logical 16h + 4j + t: byte t of e4m3_even (h = 0) or
  // e4m3_odd (h = 1) of word j.
  for (int j = 0; j < 4; ++j)
    for (int t = 0; t < 4; ++t)
      for (int h = 0; h < 2; ++h) EXPECT_EQ(fp8_logical_k(8 * j + 2 * t + h), 16 * h + 4 * j + t);
}

}  // namespace
}  // namespace fp4moe::kernels
