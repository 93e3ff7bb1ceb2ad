// The CPU quantizers on hand-computed cases (DESIGN.md §2 rules), plus a
// quantize→dequantize error bound on random data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "fp4moe/codec.hpp"
#include "fp4moe/quantize.hpp"
#include "support/test_support.hpp"

namespace fp4moe {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

/// One row of K floats quantized on the CPU; codes unpacked for inspection.
struct Quantized {
  std::vector<unsigned> codes;
  std::vector<std::uint8_t> scales;
  float decode_scale = 1.0f;
};

Quantized quantize_row(Fp4Format f, std::vector<float> x, const float* g = nullptr) {
  const std::int64_t k = static_cast<std::int64_t>(x.size());
  test::HostFp4 h(f, ScaleLayout::kRowMajor, 1, k);
  MatrixView src{x.data(), DType::kFP32, 1, k};
  cpu::quantize(src, h.t, g);
  Quantized q;
  for (std::int64_t i = 0; i < k; ++i) q.codes.push_back((h.data[i / 2] >> ((i & 1) * 4)) & 0xfu);
  q.scales = h.scales;
  if (f == Fp4Format::kNVFP4) q.decode_scale = h.global[0];
  return q;
}

// ---------------------------------------------------------------- NVFP4 ----

TEST(QuantizeNvfp4, AllZeroTensorGetsUnitGlobalScaleAndZeroBlocks) {
  const Quantized q = quantize_row(Fp4Format::kNVFP4, std::vector<float>(32, 0.0f));
  EXPECT_EQ(q.decode_scale, 1.0f);
  for (auto s : q.scales) EXPECT_EQ(s, 0);
  for (auto c : q.codes) EXPECT_EQ(c, 0u);
}

TEST(QuantizeNvfp4, AllZeroBlockBesideNonZeroBlock) {
  std::vector<float> x(32, 0.0f);
  x[20] = 3.0f;  // second block only
  const Quantized q = quantize_row(Fp4Format::kNVFP4, x);
  EXPECT_EQ(q.scales[0], 0);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(q.codes[i], 0u);
  EXPECT_EQ(q.scales[1], 0x7e);  // the tensor amax block: scale 448
  EXPECT_EQ(q.codes[20], 7u);    // 3·g/448 = 6
}

TEST(QuantizeNvfp4, TensorAmaxBlockSitsAtTheSaturationEdge) {
  // amax/6·g = amax/6 · 2688/amax = 448 up to one float rounding: always code 0x7E.
  for (float amax : {1.0f, 3.7f, 1e-3f, 12345.678f, 0.1f, 7.0f}) {
    std::vector<float> x(16, amax / 3);
    x[5] = -amax;
    const Quantized q = quantize_row(Fp4Format::kNVFP4, x);
    EXPECT_EQ(q.scales[0], 0x7e) << amax;
    EXPECT_EQ(q.codes[5], 15u) << amax;  // -6
    EXPECT_EQ(q.codes[0], 4u) << amax;   // (amax/3)·g/448 = 2
    EXPECT_EQ(q.decode_scale, 1.0f / (2688.0f / amax)) << amax;
  }
}

TEST(QuantizeNvfp4, SubnormalE4M3BlockScale) {
  const float g = 1.0f;
  std::vector<float> x(16, 0.0f);
  x[0] = 6 * std::ldexp(1.0f, -8);     // block amax/6 = 2^-8 = 2·2^-9: subnormal code 2
  x[1] = 1.5f * std::ldexp(1.0f, -8);  // / 2^-8 = 1.5 → code 3
  x[2] = -0.2f * std::ldexp(1.0f, -8);  // 0.2 → -0 (code 8)
  const Quantized q = quantize_row(Fp4Format::kNVFP4, x, &g);
  EXPECT_EQ(q.scales[0], 0x02);
  EXPECT_EQ(q.codes[0], 7u);
  EXPECT_EQ(q.codes[1], 3u);
  EXPECT_EQ(q.codes[2], 8u);
  EXPECT_EQ(q.decode_scale, 1.0f);
}

TEST(QuantizeNvfp4, SubnormalScaleTiesToEven) {
  const float g = 1.0f;
  std::vector<float> x(16, 0.0f);
  x[3] = 6 * 3.5f * std::ldexp(1.0f, -9);  // amax/6 = 3.5·2^-9: tie between codes 3 and 4 → 4
  const Quantized q = quantize_row(Fp4Format::kNVFP4, x, &g);
  EXPECT_EQ(q.scales[0], 0x04);
  EXPECT_EQ(q.codes[3], 7u);  // 21·2^-9 / (4·2^-9) = 5.25 → 6 (code 7)
}

TEST(QuantizeNvfp4, BlockScaleRoundsUpAcrossPowerOfTwo) {
  const float g = 1.0f;
  std::vector<float> x(16, 0.0f);
  x[0] = 6 * 15.9f;  // amax/6 = 15.9 → E4M3 16 (exponent carries): code 0x58
  x[1] = 15.9f;      // 15.9/16 = 0.99375 → 1.0
  const Quantized q = quantize_row(Fp4Format::kNVFP4, x, &g);
  EXPECT_EQ(q.scales[0], 0x58);
  EXPECT_EQ(decode_e4m3(q.scales[0]), 16.0f);
  EXPECT_EQ(q.codes[0], 7u);  // 95.4/16 = 5.9625 → 6
  EXPECT_EQ(q.codes[1], 2u);
}

TEST(QuantizeNvfp4, NonFiniteInputPoisonsOnlyItsBlock) {
  for (float bad : {kNaN, kInf, -kInf}) {
    std::vector<float> x(48, 1.0f);
    x[17] = bad;   // block 1
    x[40] = 2.0f;  // block 2 holds the finite amax
    const Quantized q = quantize_row(Fp4Format::kNVFP4, x);
    EXPECT_EQ(q.scales[1], 0x7f) << bad;  // NaN scale
    for (int i = 16; i < 32; ++i) EXPECT_EQ(q.codes[i], 0u) << bad;
    EXPECT_EQ(q.decode_scale, 1.0f / (2688.0f / 2.0f)) << bad;  // amax over finite values
    EXPECT_EQ(q.scales[2], 0x7e) << bad;
    EXPECT_TRUE(std::isnan(decode_e4m3(q.scales[1])));
  }
}

TEST(QuantizeNvfp4, CallerGlobalScaleIsUsedAndInverted) {
  const float g = 100.0f;
  std::vector<float> x(16, 0.0f);
  x[0] = 0.3f;  // amax/6·g = 5 → E4M3 5 (code 0x4A); 0.3·100/5 = 6
  const Quantized q = quantize_row(Fp4Format::kNVFP4, x, &g);
  EXPECT_EQ(decode_e4m3(q.scales[0]), 5.0f);
  EXPECT_EQ(q.codes[0], 7u);
  EXPECT_EQ(q.decode_scale, 1.0f / 100.0f);
}

// ---------------------------------------------------------------- MXFP4 ----

TEST(QuantizeMxfp4, AllZeroBlockGetsSmallestScale) {
  const Quantized q = quantize_row(Fp4Format::kMXFP4, std::vector<float>(32, 0.0f));
  EXPECT_EQ(q.scales[0], 0);  // 2^-127
  for (auto c : q.codes) EXPECT_EQ(c, 0u);
}

TEST(QuantizeMxfp4, SharedExponentIsFloorLog2MinusTwo) {
  struct Case { float amax; std::uint8_t scale; unsigned code; };
  const Case cases[] = {
      {7.999f, 127, 7},  // floor(log2) = 2 → 2^0; 7.999 saturates to 6
      {8.0f, 128, 6},    // floor(log2) = 3 → 2^1; 8/2 = 4
      {0.75f, 124, 7},   // floor(log2) = -1 → 2^-3; 0.75·8 = 6
      {6.0f, 127, 7},
      {1.0f, 125, 6},    // 2^-2 → 4
  };
  for (const Case& c : cases) {
    std::vector<float> x(32, 0.0f);
    x[9] = c.amax;
    const Quantized q = quantize_row(Fp4Format::kMXFP4, x);
    EXPECT_EQ(q.scales[0], c.scale) << c.amax;
    EXPECT_EQ(q.codes[9], c.code) << c.amax;
  }
}

TEST(QuantizeMxfp4, TinyAmaxClampsTheExponent) {
  std::vector<float> x(64, 0.0f);
  x[0] = 1e-40f;                   // block 0: subnormal amax, floor(log2) = -133 → -135 → clamp -127
  x[32] = std::ldexp(1.0f, -125);  // block 1: e = -127 exactly; ·2^127 = 4 → code 6
  x[33] = 1e-40f;                  // ·2^127 ≈ 0.017 → 0
  const Quantized q = quantize_row(Fp4Format::kMXFP4, x);
  EXPECT_EQ(q.scales[0], 0);
  EXPECT_EQ(q.codes[0], 0u);
  EXPECT_EQ(q.scales[1], 0);
  EXPECT_EQ(q.codes[32], 6u);
  EXPECT_EQ(q.codes[33], 0u);
}

TEST(QuantizeMxfp4, NonFiniteInputPoisonsOnlyItsBlock) {
  for (float bad : {kNaN, kInf}) {
    std::vector<float> x(64, 1.0f);
    x[33] = bad;
    const Quantized q = quantize_row(Fp4Format::kMXFP4, x);
    EXPECT_EQ(q.scales[1], 0xff) << bad;
    for (int i = 32; i < 64; ++i) EXPECT_EQ(q.codes[i], 0u);
    EXPECT_EQ(q.scales[0], 125);  // 1.0: 2^-2
  }
}

// ------------------------------------------------------------ properties ----

/// Whether E4M3 `code` (positive, finite) is a nearest E4M3 value to v (a
/// tie either way): none of its neighbours is closer.
bool nearest_e4m3(std::uint8_t code, float v) {
  const double d = std::fabs(decode_e4m3(code) - double(v));
  for (int n : {code - 1, code + 1})
    if (n >= 0 && n <= 0x7e && std::fabs(decode_e4m3(std::uint8_t(n)) - double(v)) < d * (1 - 1e-7)) return false;
  return true;
}

// Every block's scale against DESIGN.md §2's rule, worked out here and not
// read from what the quantizer chose (the error bound below is relative to
// that choice, so it alone would pass any scale).
TEST(QuantizeRoundTrip, EveryBlockScaleFollowsTheRule) {
  test::Rng rng;
  const std::int64_t rows = 37, cols = 256;
  std::vector<float> x = test::random_matrix(rng, rows, cols);
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    test::HostFp4 h(f, ScaleLayout::kRowMajor, rows, cols);
    cpu::quantize(MatrixView{x.data(), DType::kFP32, rows, cols}, h.t);
    const int bs = block_size(f);
    float tensor_amax = 0;
    for (float v : x) tensor_amax = std::max(tensor_amax, std::fabs(v));
    const float g = 448.0f * 6.0f / tensor_amax;  // NVFP4's global encode scale
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols / bs; ++c) {
        float amax = 0;
        for (int j = 0; j < bs; ++j) amax = std::max(amax, std::fabs(x[r * cols + c * bs + j]));
        const std::uint8_t code = h.scales[r * (cols / bs) + c];
        if (f == Fp4Format::kNVFP4) {
          // s = E4M3(amax / 6 · g), the nearest, saturating at 448.
          const float v = std::min(amax / 6.0f * g, 448.0f);
          EXPECT_TRUE(nearest_e4m3(code, v)) << "row " << r << " block " << c << ": code " << int(code) << " for " << v;
        } else {
          // 2^(floor(log2 amax) - 2), the exponent clamped to E8M0's [-127, 127].
          int e = 0;
          std::frexp(amax, &e);  // amax = m·2^e, m in [0.5, 1): floor(log2 amax) = e - 1
          const int want = amax == 0 ? 0 : std::clamp(e - 1 - 2, -127, 127) + 127;
          EXPECT_EQ(int(code), want) << "row " << r << " block " << c << ", amax " << amax;
        }
      }
  }
}

TEST(QuantizeRoundTrip, ErrorStaysWithinHalfTheLargestE2M1Gap) {
  // Each element lands on the nearest of 0..6 times the block step s (decoded
  // block scale × global decode scale), or saturates at 6s: so the error is at
  // most max(1·s, amax − 6s) (the largest gap, 4→6, is 2s).
  test::Rng rng;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    const std::int64_t rows = 37, cols = 256;
    std::vector<float> x = test::random_matrix(rng, rows, cols);
    test::HostFp4 h(f, ScaleLayout::kTiled128x4, rows, cols);
    cpu::quantize(MatrixView{x.data(), DType::kFP32, rows, cols}, h.t);
    std::vector<float> y(x.size());
    cpu::dequantize(h.t, MatrixView{y.data(), DType::kFP32, rows, cols});
    const int bs = block_size(f);
    const float gd = f == Fp4Format::kNVFP4 ? h.global[0] : 1.0f;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols / bs; ++c) {
        const std::uint8_t code = h.scales[tiled128x4_offset(r, c, cols / bs)];
        const double s = (f == Fp4Format::kNVFP4 ? decode_e4m3(code) : decode_ue8m0(code)) * double(gd);
        double amax = 0;
        for (int j = 0; j < bs; ++j) amax = std::max(amax, double(std::fabs(x[r * cols + c * bs + j])));
        const double bound = std::max(s, amax - 6 * s) * (1 + 1e-6);
        for (int j = 0; j < bs; ++j) {
          const std::int64_t i = r * cols + c * bs + j;
          EXPECT_LE(std::fabs(double(y[i]) - x[i]), bound) << format_name(f) << " element " << i;
        }
      }
  }
}

}  // namespace
}  // namespace fp4moe
