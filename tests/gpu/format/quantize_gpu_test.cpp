// GPU quantizers, dequantizer, amax and layout converter: bit-identical to the
// CPU on random data of several shapes (fresh data every run, outputs poisoned
// before each launch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "fp4moe/codec.hpp"
#include "format/quantize_tma.hpp"
#include "fp4moe/quantize.hpp"
#include "support/test_support.hpp"

namespace fp4moe {
namespace {

using test::DeviceBuffer;
using test::DeviceFp4;
using test::HostFp4;

enum class Content { kSpread, kTies, kSpecials };

/// Random input of one of three kinds: values spread over decades; values on
/// a 0.25 grid with amax 6 (so E2M1 ties are frequent); spread values with
/// zero blocks, NaN and ±Inf sprinkled in.
std::vector<float> make_input(test::Rng& rng, std::int64_t rows, std::int64_t cols, Content content) {
  std::vector<float> x = test::random_matrix(rng, rows, cols);
  if (content == Content::kTies) {
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rng.integer(-24, 24)) * 0.25f;
    for (std::size_t i = 0; i < x.size(); i += 16) x[i] = 6.0f;
  } else if (content == Content::kSpecials) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (int n = 0; n < 8; ++n) {
      const std::size_t at = static_cast<std::size_t>(rng.integer(0, static_cast<std::int64_t>(x.size()) - 1));
      x[at] = n % 3 == 0 ? nan : (n % 3 == 1 ? inf : -inf);
    }
    // One zero block (32 elements, or 16 where the input is that small).
    const std::size_t span = x.size() >= 32 ? 32 : 16;
    const std::size_t z = static_cast<std::size_t>(rng.integer(0, static_cast<std::int64_t>(x.size() / span) - 1)) * span;
    std::fill(x.begin() + static_cast<std::ptrdiff_t>(z), x.begin() + static_cast<std::ptrdiff_t>(z + span), 0.0f);
  }
  return x;
}

struct Shape { std::int64_t rows, cols, groups; };

class QuantizeGpu : public ::testing::TestWithParam<std::tuple<Fp4Format, DType, ScaleLayout, bool>> {};

TEST_P(QuantizeGpu, BitIdenticalToCpu) {
  FP4MOE_REQUIRE_GPU();
  const auto [format, in_dtype, layout, given_scale] = GetParam();
  test::Rng rng;
  // Ragged rows and columns for every tile shape of both kernels; NVFP4 also
  // takes cols ≡ 16 (mod 32), where a row ends inside a 64-byte task.
  const Shape shapes[] = {{1, 32, 1},  {7, 64, 1},     {129, 2112, 1}, {37, 512, 3},  {1000, 7168, 1},
                          {300, 96, 2}, {1, 16, 1},     {3, 48, 2},     {130, 4112, 2}, {33, 272, 1}};
  for (const Shape& s : shapes) {
    if (s.cols % block_size(format) != 0) continue;
    for (Content content : {Content::kSpread, Content::kTies, Content::kSpecials}) {
      SCOPED_TRACE(testing::Message() << s.rows << "x" << s.cols << "x" << s.groups << " content " << int(content));
      const std::int64_t n = s.rows * s.cols * s.groups;
      std::vector<float> x = make_input(rng, s.rows * s.groups, s.cols, content);
      std::vector<std::uint16_t> xb = test::to_bf16(x);
      // The CPU sees exactly the values the GPU reads.
      std::vector<float> seen(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) seen[i] = in_dtype == DType::kBF16 ? bf16_bits_to_float(xb[i]) : x[i];

      std::vector<float> g(static_cast<std::size_t>(s.groups));
      for (auto& v : g) v = content == Content::kTies ? 1.0f : rng.uniform(10.0f, 3000.0f);
      const bool use_g = given_scale && format == Fp4Format::kNVFP4;

      HostFp4 want(format, layout, s.rows, s.cols, s.groups);
      MatrixView hsrc{seen.data(), DType::kFP32, s.rows, s.cols, 0, 1, s.groups};
      cpu::quantize(hsrc, want.t, use_g ? g.data() : nullptr);

      DeviceBuffer<std::uint8_t> din(static_cast<std::size_t>(n * dtype_size(in_dtype)));
      ASSERT_EQ(cudaMemcpy(din.get(), in_dtype == DType::kBF16 ? static_cast<const void*>(xb.data()) : x.data(),
                           din.size(), cudaMemcpyHostToDevice), cudaSuccess);
      DeviceBuffer<float> dg(g.size());
      dg.upload(g);
      DeviceFp4 out(want);
      out.poison();
      quantize(MatrixView{din.get(), in_dtype, s.rows, s.cols, 0, 1, s.groups}, out.t, nullptr, use_g ? dg.get() : nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      HostFp4 got(format, layout, s.rows, s.cols, s.groups);
      out.download(got);
      ASSERT_EQ(got.data, want.data);
      ASSERT_EQ(got.scales, want.scales);
      for (std::size_t i = 0; i < want.global.size(); ++i)
        ASSERT_EQ(float_to_bits(got.global[i]), float_to_bits(want.global[i])) << i;
    }
  }
}

// Nothing outside the tensor is written, in particular where a row ends
// inside a thread's 64-byte task (NVFP4, cols ≡ 16 mod 32) on the last row.
TEST(QuantizeGpuBounds, WritesNothingPastTheTensor) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  constexpr std::size_t kGuard = 4096;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (ScaleLayout l : {ScaleLayout::kRowMajor, ScaleLayout::kTiled128x4})
      for (DType t : {DType::kBF16, DType::kFP32}) {
        const std::int64_t rows = 5, cols = f == Fp4Format::kNVFP4 ? 48 : 96, groups = 2;
        SCOPED_TRACE(testing::Message() << format_name(f) << " " << scale_layout_name(l) << " " << dtype_name(t));
        HostFp4 want(f, l, rows, cols, groups);
        const std::vector<float> x = test::random_matrix(rng, rows * groups, cols);
        std::vector<float> seen = x;
        const std::vector<std::uint16_t> xb = test::to_bf16(x);
        if (t == DType::kBF16)
          for (std::size_t i = 0; i < x.size(); ++i) seen[i] = bf16_bits_to_float(xb[i]);
        const std::vector<float> g(2, 700.0f);
        cpu::quantize(MatrixView{seen.data(), DType::kFP32, rows, cols, 0, 1, groups}, want.t,
                      f == Fp4Format::kNVFP4 ? g.data() : nullptr);

        DeviceBuffer<std::uint8_t> din(x.size() * static_cast<std::size_t>(dtype_size(t)));
        ASSERT_EQ(cudaMemcpy(din.get(), t == DType::kBF16 ? static_cast<const void*>(xb.data()) : x.data(), din.size(),
                             cudaMemcpyHostToDevice), cudaSuccess);
        DeviceBuffer<float> dg(2), global(2);
        dg.upload(g);
        DeviceBuffer<std::uint8_t> data(want.data.size() + kGuard), scales(want.scales.size() + kGuard);
        data.fill_bytes(0xa5);
        scales.fill_bytes(0xa5);
        Fp4Tensor out = want.t;
        out.data = data.get();
        out.scales = scales.get();
        out.global_scale = f == Fp4Format::kNVFP4 ? global.get() : nullptr;
        quantize(MatrixView{din.get(), t, rows, cols, 0, 1, groups}, out, nullptr,
                 f == Fp4Format::kNVFP4 ? dg.get() : nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<std::uint8_t> got_data = data.download(), got_scales = scales.download();
        EXPECT_TRUE(std::equal(want.data.begin(), want.data.end(), got_data.begin()));
        EXPECT_TRUE(std::equal(want.scales.begin(), want.scales.end(), got_scales.begin()));
        EXPECT_TRUE(std::all_of(got_data.begin() + static_cast<std::ptrdiff_t>(want.data.size()), got_data.end(),
                                [](std::uint8_t b) { return b == 0xa5; }));
        EXPECT_TRUE(std::all_of(got_scales.begin() + static_cast<std::ptrdiff_t>(want.scales.size()), got_scales.end(),
                                [](std::uint8_t b) { return b == 0xa5; }));
      }
}

// A stack quantized a slice of groups per launch (the NVFP4 TMA kernel's path
// for stacks of 2^31 tiles or more, here forced with a bound of 5 tiles: 2, 2
// and 1 groups of 2 tiles) gives the CPU's bytes, with each group's own g,
// given or derived from the group's amax.
TEST(QuantizeGpuSlices, GroupSlicesMatchTheCpu) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const std::int64_t rows = 40, cols = 96, groups = 5;
  for (ScaleLayout l : {ScaleLayout::kRowMajor, ScaleLayout::kTiled128x4})
    for (bool from_amax : {false, true}) {
      SCOPED_TRACE(testing::Message() << scale_layout_name(l) << (from_amax ? " g from amax" : " g given"));
      const std::vector<float> x = test::random_matrix(rng, rows * groups, cols);
      const std::vector<std::uint16_t> xb = test::to_bf16(x);
      std::vector<float> seen(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) seen[i] = bf16_bits_to_float(xb[i]);
      // What the kernel reads per group (g, or the amax g is derived from),
      // and the g the CPU reference is given.
      std::vector<float> source(groups), g(groups);
      for (std::int64_t i = 0; i < groups; ++i) {
        float amax = 0.0f;
        for (std::int64_t e = 0; e < rows * cols; ++e) amax = std::max(amax, std::fabs(seen[i * rows * cols + e]));
        source[i] = from_amax ? amax : rng.uniform(10.0f, 3000.0f);
        g[i] = from_amax ? nvfp4_global_encode_scale(amax) : source[i];
      }
      HostFp4 want(Fp4Format::kNVFP4, l, rows, cols, groups);
      cpu::quantize(MatrixView{seen.data(), DType::kFP32, rows, cols, 0, 1, groups}, want.t, g.data());

      DeviceBuffer<std::uint16_t> din(xb.size());
      din.upload(xb);
      DeviceBuffer<float> dsource(source.size());
      dsource.upload(source);
      DeviceFp4 out(want);
      out.poison();
      out.scales.fill_bytes(0);  // the internal launcher leaves the tiled padding to its caller
      const MatrixView src{din.get(), DType::kBF16, rows, cols, 0, 1, groups};
      detail::launch_quantize_nvfp4_bf16_tma(src, out.t, dsource.get(), from_amax, nullptr,
                                             /*max_tiles_per_launch=*/5);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      HostFp4 got(Fp4Format::kNVFP4, l, rows, cols, groups);
      out.download(got);
      EXPECT_EQ(got.data, want.data);
      EXPECT_EQ(got.scales, want.scales);
      if (!from_amax) {  // in amax mode a later kernel writes the decode scales
        for (std::int64_t i = 0; i < groups; ++i)
          EXPECT_EQ(float_to_bits(got.global[i]), float_to_bits(want.global[i])) << i;
      }
    }
}

// Enough tiles that every CTA of the NVFP4 TMA kernel goes round its ring of
// 12 slots more than twice (8192x4096: 4096 tiles for 132 CTAs), so a wrong
// slot phase shows.
TEST(QuantizeGpuRing, ManyTurnsOfTheRingMatchTheCpu) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const std::int64_t rows = 8192, cols = 4096;
  const std::vector<float> x = test::random_matrix(rng, rows, cols);
  const std::vector<std::uint16_t> xb = test::to_bf16(x);
  std::vector<float> seen(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) seen[i] = bf16_bits_to_float(xb[i]);
  const float g = 448.0f;
  DeviceBuffer<std::uint16_t> din(xb.size());
  din.upload(xb);
  DeviceBuffer<float> dg(1);
  dg.upload(std::vector<float>{g});
  for (ScaleLayout l : {ScaleLayout::kRowMajor, ScaleLayout::kTiled128x4}) {
    SCOPED_TRACE(scale_layout_name(l));
    HostFp4 want(Fp4Format::kNVFP4, l, rows, cols);
    cpu::quantize(MatrixView{seen.data(), DType::kFP32, rows, cols}, want.t, &g);
    DeviceFp4 out(want);
    out.poison();
    quantize(MatrixView{din.get(), DType::kBF16, rows, cols}, out.t, nullptr, dg.get());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    HostFp4 got(Fp4Format::kNVFP4, l, rows, cols);
    out.download(got);
    EXPECT_EQ(got.data, want.data);
    EXPECT_EQ(got.scales, want.scales);
  }
}

std::string quantize_case_name(const ::testing::TestParamInfo<QuantizeGpu::ParamType>& info) {
  const Fp4Format f = std::get<0>(info.param);
  const DType t = std::get<1>(info.param);
  const ScaleLayout l = std::get<2>(info.param);
  return std::string(format_name(f)) + "_" + dtype_name(t) + "_" + (l == ScaleLayout::kRowMajor ? "rowmajor" : "tiled") +
         (std::get<3>(info.param) ? "_given_g" : "_amax_g");
}

INSTANTIATE_TEST_SUITE_P(All, QuantizeGpu,
                         ::testing::Combine(::testing::Values(Fp4Format::kNVFP4, Fp4Format::kMXFP4),
                                            ::testing::Values(DType::kBF16, DType::kFP32),
                                            ::testing::Values(ScaleLayout::kRowMajor, ScaleLayout::kTiled128x4),
                                            ::testing::Bool()),
                         quantize_case_name);

TEST(DequantizeGpu, BitIdenticalToCpu) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (ScaleLayout l : {ScaleLayout::kRowMajor, ScaleLayout::kTiled128x4})
      for (DType out_t : {DType::kFP32, DType::kBF16}) {
        const std::int64_t rows = 131, cols = 1024, groups = 2;
        HostFp4 h(f, l, rows, cols, groups);
        test::fill_random(h, rng);
        std::vector<std::uint8_t> want(static_cast<std::size_t>(rows * cols * groups * dtype_size(out_t)));
        cpu::dequantize(h.t, MatrixView{want.data(), out_t, rows, cols, 0, 1, groups});
        DeviceFp4 d(h);
        d.upload(h);
        DeviceBuffer<std::uint8_t> out(want.size());
        out.fill_bytes(0xa5);
        dequantize(d.t, MatrixView{out.get(), out_t, rows, cols, 0, 1, groups}, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(out.download(), want) << format_name(f) << " " << scale_layout_name(l) << " " << dtype_name(out_t);
      }
}

TEST(ConvertScaleLayoutGpu, MatchesCpuBothWays) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1}, {127, 5}, {129, 448}, {4099, 224}};
  for (auto [rows, cols] : shapes) {
    const std::int64_t groups = 2;
    std::vector<std::uint8_t> rm(static_cast<std::size_t>(groups * rows * cols));
    for (auto& b : rm) b = static_cast<std::uint8_t>(rng.integer(0, 255));
    std::vector<std::uint8_t> tiled(static_cast<std::size_t>(groups * scale_bytes(ScaleLayout::kTiled128x4, rows, cols)));
    cpu::convert_scale_layout(rm.data(), ScaleLayout::kRowMajor, tiled.data(), ScaleLayout::kTiled128x4, rows, cols, groups);
    DeviceBuffer<std::uint8_t> d_rm(rm.size()), d_tiled(tiled.size()), d_back(rm.size());
    d_rm.upload(rm);
    d_tiled.fill_bytes(0xa5);
    d_back.fill_bytes(0xa5);
    convert_scale_layout(d_rm.get(), ScaleLayout::kRowMajor, d_tiled.get(), ScaleLayout::kTiled128x4, rows, cols, groups, nullptr);
    convert_scale_layout(d_tiled.get(), ScaleLayout::kTiled128x4, d_back.get(), ScaleLayout::kRowMajor, rows, cols, groups, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(d_tiled.download(), tiled) << rows << "x" << cols;
    EXPECT_EQ(d_back.download(), rm) << rows << "x" << cols;
  }
}

TEST(ComputeAmaxGpu, MatchesCpuIgnoringNonFinite) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  for (DType t : {DType::kBF16, DType::kFP32}) {
    const std::int64_t rows = 3001, cols = 4096;
    std::vector<float> x = make_input(rng, rows, cols, Content::kSpecials);
    std::vector<std::uint16_t> xb = test::to_bf16(x);
    std::vector<float> seen(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) seen[i] = t == DType::kBF16 ? bf16_bits_to_float(xb[i]) : x[i];
    const float want = cpu::compute_amax(MatrixView{seen.data(), DType::kFP32, rows, cols});
    DeviceBuffer<std::uint8_t> din(x.size() * static_cast<std::size_t>(dtype_size(t)));
    ASSERT_EQ(cudaMemcpy(din.get(), t == DType::kBF16 ? static_cast<const void*>(xb.data()) : x.data(), din.size(),
                         cudaMemcpyHostToDevice), cudaSuccess);
    DeviceBuffer<float> out(1);
    out.fill_bytes(0xa5);
    compute_amax(MatrixView{din.get(), t, rows, cols}, out.get(), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(out.download()[0], want) << dtype_name(t);
    EXPECT_TRUE(std::isfinite(want));
  }
}

}  // namespace
}  // namespace fp4moe
