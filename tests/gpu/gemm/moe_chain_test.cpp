// FC1 → routing → FC2 on the device with no host step between them: FC1's
// NVFP4 output (data, tiled scales, decode scale) is FC2's A as it stands, and
// alpha comes from moe_routing_alpha. Each step alone is checked against the
// reference elsewhere; this checks that the formats and layouts chain, by
// comparing FC2 with the float64 reference applied to the FP4 tensor FC1 wrote
// and to the alpha the routing helper wrote.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "fp4moe/codec.hpp"
#include "fp4moe/moe.hpp"
#include "fp4moe/quantize.hpp"
#include "gemm/gemm_test_util.hpp"
#include "reference/reference_gemm.hpp"

namespace fp4moe {
namespace {

TEST(MoeChain, Fc1Nvfp4OutputFeedsFc2Directly) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  struct Shape {
    int m, hidden, experts, inter, top_k;
  };
  for (const Shape s : {Shape{37, 256, 4, 128, 2}, Shape{130, 512, 8, 256, 8}}) {
    SCOPED_TRACE("M=" + std::to_string(s.m) + " E=" + std::to_string(s.experts) + " I=" + std::to_string(s.inter));
    const std::int64_t width = std::int64_t(s.experts) * s.inter;
    // FC1 operands: tokens [M, hidden], w13 [E, 2I, hidden].
    test::HostFp4 x(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, s.m, s.hidden);
    test::HostFp4 w13(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, 2 * s.inter, s.hidden, s.experts);
    // FC2 weights: w2 [hidden, E·I].
    test::HostFp4 w2(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, s.hidden, width);
    test::fill_random(x, rng);
    test::fill_random(w13, rng);
    test::fill_random(w2, rng);
    test::DeviceFp4 dx(x), dw13(w13), dw2(w2);
    dx.upload(x);
    dw13.upload(w13);
    dw2.upload(w2);

    // The global scale a deployment would calibrate: from the amax of FC1's
    // result (a BF16 run of FC1).
    test::DeviceBuffer<std::uint16_t> bf16(static_cast<std::size_t>(s.m * width));
    moe_dense_fc1_swiglu(dx.t, dw13.t, nullptr, MatrixView{bf16.get(), DType::kBF16, s.m, width}, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    float amax = 0.0f;
    for (std::uint16_t v : bf16.download()) amax = std::max(amax, std::fabs(bf16_bits_to_float(v)));
    const float g_host = nvfp4_global_encode_scale(amax);

    // FC1 into a poisoned NVFP4 intermediate.
    test::HostFp4 h(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, s.m, width);
    test::DeviceFp4 dh(h);
    dh.poison();
    test::DeviceBuffer<float> g(1);
    g.upload({g_host});
    moe_dense_fc1_swiglu(dx.t, dw13.t, nullptr, dh.t, g.get(), nullptr);

    // Routing: top-k distinct experts per token, random weights.
    std::vector<std::int32_t> ids(static_cast<std::size_t>(s.m) * s.top_k);
    std::vector<float> weights(ids.size());
    for (int r = 0; r < s.m; ++r)
      for (int j = 0; j < s.top_k; ++j) {
        ids[static_cast<std::size_t>(r) * s.top_k + j] = (r + 3 * j) % s.experts;
        weights[static_cast<std::size_t>(r) * s.top_k + j] = rng.uniform(0.0f, 1.0f);
      }
    test::DeviceBuffer<std::int32_t> dids(ids.size());
    test::DeviceBuffer<float> dweights(weights.size()), dalpha(static_cast<std::size_t>(s.m) * s.experts);
    dids.upload(ids);
    dweights.upload(weights);
    dalpha.fill_bytes(0xff);
    const MatrixView alpha{dalpha.get(), DType::kFP32, s.m, s.experts};
    moe_routing_alpha(dids.get(), dweights.get(), s.top_k, nullptr, alpha, nullptr);

    // FC2 on what the device holds.
    test::DeviceBuffer<float> dout(static_cast<std::size_t>(s.m) * s.hidden);
    dout.fill_bytes(0xff);
    moe_dense_fc2(dh.t, dw2.t, alpha, s.inter, MatrixView{dout.get(), DType::kFP32, s.m, s.hidden}, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

    // The reference on the intermediate and alpha the device wrote.
    dh.download(h);
    EXPECT_EQ(h.global[0], 1.0f / g_host) << "FC1 writes its output's decode scale 1/g";
    const std::vector<float> alpha_host = dalpha.download();
    for (float a : alpha_host) ASSERT_FALSE(std::isnan(a)) << "routing left alpha unwritten";
    const std::vector<double> ref =
        reference::moe_dense_fc2(h.t, w2.t, s.experts, MatrixView{const_cast<float*>(alpha_host.data()), DType::kFP32, s.m, s.experts});
    const std::vector<float> got = dout.download();
    test::OutputCheck check;
    check.rows = s.m;
    check.cols = s.hidden;
    check.ld = s.hidden;
    std::vector<std::uint8_t> bytes(got.size() * sizeof(float));
    std::memcpy(bytes.data(), got.data(), bytes.size());
    test::expect_gemm_ok_for("FC1 -> FC2 chain", DType::kFP32, test::Fp4Content::kRandom, test::compare_output(ref, bytes, check));
  }
}

}  // namespace
}  // namespace fp4moe
