// The gather step of moe_dense_fc2's gathered formulation against a host
// computation: every expert's tokens in token order with their alphas, and
// their FP4 rows and scale words copied from A's columns of that expert;
// NVFP4 and MXFP4, W = 128 and 256, token-major and expert-major alpha, an
// expert count that is not a multiple of 32, more tokens than one CTA step.
#include <gtest/gtest.h>

#include <cstring>

#include "fp4moe/scale_layout.hpp"
#include "gemm/gemm_test_util.hpp"
#include "kernels/moe/gather_tokens.hpp"

namespace fp4moe {
namespace {

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
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(format_name(c.format)) + " m=" + std::to_string(c.m) + " e=" + std::to_string(c.e) +
                 " w=" + std::to_string(c.w) + (c.expert_major ? " expert-major" : " token-major"));
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
    const kernels::GatherLayout l = kernels::gather_layout(c.m, c.e, c.w, block);
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
    p.block = block;
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
    const int row_bytes = c.w / 2, cols_w = c.w / block;
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
        bad += std::memcmp(got.data() + l.data + slot * row_bytes,
                           a.data.data() + std::size_t(want[s]) * (k / 2) + std::size_t(x) * row_bytes, row_bytes) != 0;
        for (int col = 0; col < cols_w; ++col)
          bad += got[l.scales + std::size_t(x) * l.scale_group_bytes + tiled128x4_offset(std::int64_t(s), col, cols_w)] !=
                 a.scales[tiled128x4_offset(want[s], std::int64_t(x) * cols_w + col, k / block)];
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

}  // namespace
}  // namespace fp4moe
