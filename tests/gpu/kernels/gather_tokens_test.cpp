// The gather step of moe_dense_fc2's gathered formulation against a host
// computation: every expert's tokens in token order with their alphas, and
// their rows of A's columns of that expert dequantised to BF16 (NVFP4 with
// the GEMM's 2^-9 offset) in both K orders, each written here from its
// definition in fp4_dequant.cuh's comments; NVFP4 and MXFP4, W = 128 and
// 256, token-major and expert-major alpha, an expert count that is not a
// multiple of 32, more tokens than one CTA step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>

#include "fp4moe/codec.hpp"
#include "fp4moe/scale_layout.hpp"
#include "gemm/gemm_test_util.hpp"
#include "kernels/moe/gather_tokens.hpp"

namespace fp4moe {
namespace {

/// Logical column (0..63) of real k r (0..63) of a 64-K group.
int logical_column(bool lane_blocks, int r) {
  if (lane_blocks) {  // r = 16j + 8w + 4e + t -> 16t + 8w + 2j + e
    const int j = r / 16, w = (r / 8) % 2, e = (r / 4) % 2, t = r % 4;
    return 16 * t + 8 * w + 2 * j + e;
  }
  // Chunk c = r / 32, q = r % 32 = 8j + 2s + h + 4e -> 32c + 16s + 8h + 2j + e.
  const int q = r % 32, j = q / 8, e = (q % 8) / 4, s = (q % 4) / 2, h = q % 2;
  return 32 * (r / 32) + 16 * s + 8 * h + 2 * j + e;
}

TEST(MoeGatherTokens, MatchesHost) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  struct Case {
    Fp4Format format;
    int m, e, w;
    bool expert_major;
  };
  const Case cases[] = {{Fp4Format::kNVFP4, 300, 37, 128, false},
                        {Fp4Format::kMXFP4, 300, 37, 256, true},
                        {Fp4Format::kNVFP4, 1, 5, 256, true},
                        {Fp4Format::kMXFP4, 513, 3, 128, false}};
  for (std::size_t ci = 0; ci < 2 * std::size(cases); ++ci) {  // every case in both K orders
    const Case& c = cases[ci / 2];
    const bool lane_blocks = ci % 2 == 1;
    SCOPED_TRACE(std::string(format_name(c.format)) + " m=" + std::to_string(c.m) + " e=" + std::to_string(c.e) +
                 " w=" + std::to_string(c.w) + (c.expert_major ? " expert-major" : " token-major") +
                 (lane_blocks ? ", lane-block order" : ", chunk order"));
    const int block = block_size(c.format), k = c.e * c.w;
    test::HostFp4 a(c.format, ScaleLayout::kTiled128x4, c.m, k);
    test::fill_random(a, rng);
    // Each token picks up to 4 experts; -0 is not a pick; expert 0 gets every
    // token of the last few, so some expert has many.
    std::vector<float> al(static_cast<std::size_t>(c.m) * c.e, 0.0f);
    for (int r = 0; r < c.m; ++r) {
      for (int j = 0; j < 4; ++j) al[static_cast<std::size_t>(r) * c.e + rng.integer(0, c.e - 1)] = rng.uniform(0.25f, 2.0f);
      if (r % 7 == 3) al[static_cast<std::size_t>(r) * c.e + c.e - 1] = -0.0f;
      if (r + 40 >= c.m) al[static_cast<std::size_t>(r) * c.e] = 1.5f;
    }
    const std::int64_t sm = c.expert_major ? 1 : c.e, se = c.expert_major ? c.m : 1;
    std::vector<float> stored(al.size());
    for (int r = 0; r < c.m; ++r)
      for (int x = 0; x < c.e; ++x) stored[static_cast<std::size_t>(r * sm + x * se)] = al[static_cast<std::size_t>(r) * c.e + x];

    test::DeviceFp4 da(a);
    da.upload(a);
    test::DeviceBuffer<float> dalpha(stored.size());
    dalpha.upload(stored);
    const kernels::GatherLayout l = kernels::gather_layout(c.m, c.e, c.w);
    EXPECT_EQ(l.capacity % 32, 0);
    EXPECT_GE(l.capacity, c.m);
    test::DeviceBuffer<std::uint8_t> ws(l.bytes);
    ws.fill_bytes(0xa5);
    kernels::GatherTokensParams p;
    p.alpha = dalpha.get();
    p.stride_m = sm;
    p.stride_e = se;
    p.tokens = c.m;
    p.experts = c.e;
    p.width = c.w;
    p.nvfp4 = c.format == Fp4Format::kNVFP4;
    p.lane_blocks = lane_blocks;
    p.a_data = static_cast<const std::uint8_t*>(da.t.data);
    p.a_scales = static_cast<const std::uint8_t*>(da.t.scales);
    p.workspace = ws.get();
    p.layout = l;
    kernels::launch_gather_tokens(p, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<std::uint8_t> got = ws.download();
    auto i32 = [&](std::size_t off) {
      std::int32_t v;
      std::memcpy(&v, got.data() + off, 4);
      return v;
    };
    auto f32 = [&](std::size_t off) {
      float v;
      std::memcpy(&v, got.data() + off, 4);
      return v;
    };
    // BF16 element (group g, row, column) of the copy, as a float.
    const std::int64_t rows = std::int64_t(c.e) * l.capacity;
    auto token_value = [&](std::int64_t row, int col) {
      std::uint16_t b;
      std::memcpy(&b, got.data() + l.data + ((col / 64) * rows + row) * 128 + (col % 64) * 2, 2);
      const std::uint32_t bits = std::uint32_t(b) << 16;
      float v;
      std::memcpy(&v, &bits, 4);
      return v;
    };
    const double offset = c.format == Fp4Format::kNVFP4 ? std::ldexp(1.0, -9) : 1.0;
    std::int64_t bad = 0;
    for (int x = 0; x < c.e; ++x) {
      std::vector<int> want;
      for (int r = 0; r < c.m; ++r)
        if (al[static_cast<std::size_t>(r) * c.e + x] != 0.0f) want.push_back(r);
      ASSERT_EQ(i32(l.counts + 4 * std::size_t(x)), static_cast<std::int32_t>(want.size())) << "count of expert " << x;
      for (std::size_t s = 0; s < want.size(); ++s) {
        const std::size_t slot = std::size_t(x) * l.capacity + s;
        bad += i32(l.tokens + 4 * slot) != want[s];
        bad += f32(l.alpha + 4 * slot) != al[static_cast<std::size_t>(want[s]) * c.e + x];
        for (int kk = 0; kk < c.w; ++kk) {
          const std::int64_t col = std::int64_t(x) * c.w + kk;  // A's column
          const std::uint8_t byte = a.data[std::size_t(want[s]) * (k / 2) + std::size_t(col / 2)];
          const unsigned code = col % 2 ? byte >> 4 : byte & 0xfu;
          const std::uint8_t sc = a.scales[tiled128x4_offset(want[s], col / block, k / block)];
          const double scale = c.format == Fp4Format::kNVFP4 ? decode_e4m3(sc) : decode_ue8m0(sc);
          const float expect = static_cast<float>(decode_e2m1(code) * scale * offset);
          const float v = token_value(std::int64_t(slot), 64 * (kk / 64) + logical_column(lane_blocks, kk % 64));
          const bool same = (std::isnan(expect) && std::isnan(v)) || (v == expect && std::signbit(v) == std::signbit(expect));
          if (!same && bad < 5)
            ADD_FAILURE() << "expert " << x << " slot " << s << " k " << kk << ": " << v << ", expected " << expect;
          bad += !same;
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

}  // namespace
}  // namespace fp4moe
