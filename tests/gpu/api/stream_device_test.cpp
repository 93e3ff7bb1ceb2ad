// The stream rule of every GPU entry point: a stream of another device is
// refused (InvalidArgument naming `stream`) and nothing is written; every
// stream of the current device is taken. The refusal needs two GPUs and
// skips on one. The accepted calls run on any GPU: they show that each
// call's other arguments are valid, so the refusal can only be the stream's.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "common/device_info.hpp"
#include "fp4moe/error.hpp"
#include "fp4moe/gemm.hpp"
#include "fp4moe/moe.hpp"
#include "fp4moe/quantize.hpp"
#include "support/test_support.hpp"

namespace fp4moe {
namespace {

constexpr std::int64_t kM = 8, kK = 256, kN = 128, kE = 2, kW = kK / kE, kI = 128;
constexpr int kPoison = 0xA5;

/// A valid call of every GPU entry point on one device, its outputs carved
/// from one poisoned arena so that "nothing written" is one comparison.
struct EveryEntryPoint {
  test::Rng rng;
  test::HostFp4 ha{Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, kM, kK},
      ha2{Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, kM, kK, 2},
      hb{Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, kN, kK},
      hb2{Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, kN, kK, 2},
      hw13{Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, 2 * kI, kK, kE};
  test::DeviceFp4 a{ha}, a2{ha2}, b{hb}, b2{hb2}, w13{hw13};
  test::DeviceBuffer<std::int32_t> m_indices{kM}, masked_m{2}, topk_ids{kM * 2};
  test::DeviceBuffer<float> alpha{kM * kE}, topk_weights{kM * 2}, encode{1}, src{kM * kK};
  test::DeviceBuffer<std::uint8_t> arena{1 << 17};
  std::size_t used = 0;

  /// `bytes` of the arena, 256-byte aligned.
  void* carve(std::size_t bytes) {
    void* p = arena.get() + used;
    used += (bytes + 255) / 256 * 256;
    EXPECT_LE(used, arena.size());
    return p;
  }
  Fp4Tensor fp4_output(Fp4Format f) {
    Fp4Tensor t = ha.t;
    t.format = f;
    t.data = carve(static_cast<std::size_t>(t.data_bytes()));
    t.scales = carve(static_cast<std::size_t>(t.scale_bytes_total()));
    t.global_scale = f == Fp4Format::kNVFP4 ? static_cast<float*>(carve(sizeof(float))) : nullptr;
    return t;
  }

  std::vector<std::pair<std::string, std::function<void(cudaStream_t)>>> calls;

  EveryEntryPoint() {
    for (test::HostFp4* h : {&ha, &ha2, &hb, &hb2, &hw13}) test::fill_random(*h, rng);
    a.upload(ha);
    a2.upload(ha2);
    b.upload(hb);
    b2.upload(hb2);
    w13.upload(hw13);
    m_indices.upload(std::vector<std::int32_t>{0, 0, 0, 0, 0, 0, -1, -1});  // expert 1: none
    masked_m.upload({3, kM});
    std::vector<std::int32_t> ids;
    for (std::int64_t m = 0; m < kM; ++m) ids.insert(ids.end(), {0, 1});
    topk_ids.upload(ids);
    topk_weights.upload(std::vector<float>(kM * 2, 0.5f));
    alpha.upload(std::vector<float>(kM * kE, 0.5f));
    encode.upload({1.0f});
    src.upload(test::random_matrix(rng, kM, kK));
    arena.fill_bytes(kPoison);

    const MatrixView d{carve(kM * kN * 4), DType::kFP32, kM, kN};
    const MatrixView d2{carve(2 * kM * kN * 4), DType::kFP32, kM, kN, 0, 1, 2};
    const MatrixView fc2_d{carve(kM * kN * 4), DType::kFP32, kM, kN};
    const MatrixView fc1_d{carve(kM * kE * kI * 2), DType::kBF16, kM, kE * kI};
    Fp4Tensor fc1_out = fp4_output(Fp4Format::kNVFP4);
    fc1_out.cols = kE * kI;
    const MatrixView routed{carve(kM * 4 * 4), DType::kFP32, kM, 4};
    const Fp4Tensor q_nv = fp4_output(Fp4Format::kNVFP4), q_mx = fp4_output(Fp4Format::kMXFP4);
    float* amax = static_cast<float*>(carve(sizeof(float)));
    const MatrixView deq{carve(kM * kK * 4), DType::kFP32, kM, kK};
    void* converted = carve(static_cast<std::size_t>(scale_bytes(ScaleLayout::kRowMajor, kM, kK / 16)));
    void* packed = carve(static_cast<std::size_t>(hb.t.data_bytes()));
    const MatrixView x{src.get(), DType::kFP32, kM, kK};

    calls = {
        {"fp4_gemm_nt", [=, this](cudaStream_t s) { fp4_gemm_nt(a.t, b.t, d, s); }},
        {"contiguous", [=, this](cudaStream_t s) { m_grouped_fp4_gemm_nt_contiguous(a.t, b2.t, d, m_indices.get(), s); }},
        {"masked", [=, this](cudaStream_t s) { m_grouped_fp4_gemm_nt_masked(a2.t, b2.t, d2, masked_m.get(), 4, s); }},
        {"moe_dense_fc2",
         [=, this](cudaStream_t s) {
           moe_dense_fc2(a.t, b.t, MatrixView{alpha.get(), DType::kFP32, kM, kE}, kW, fc2_d, s);
         }},
        {"moe_dense_fc1_swiglu (BF16)", [=, this](cudaStream_t s) { moe_dense_fc1_swiglu(a.t, w13.t, nullptr, fc1_d, s); }},
        {"moe_dense_fc1_swiglu (NVFP4)",
         [=, this](cudaStream_t s) { moe_dense_fc1_swiglu(a.t, w13.t, nullptr, fc1_out, encode.get(), s); }},
        {"moe_routing_alpha",
         [=, this](cudaStream_t s) { moe_routing_alpha(topk_ids.get(), topk_weights.get(), 2, nullptr, routed, s); }},
        {"quantize_nvfp4", [=](cudaStream_t s) { quantize_nvfp4(x, q_nv, s); }},
        {"quantize_mxfp4", [=](cudaStream_t s) { quantize_mxfp4(x, q_mx, s); }},
        {"compute_amax", [=](cudaStream_t s) { compute_amax(x, amax, s); }},
        {"dequantize", [=, this](cudaStream_t s) { dequantize(a.t, deq, s); }},
        {"convert_scale_layout",
         [=, this](cudaStream_t s) {
           convert_scale_layout(a.t.scales, ScaleLayout::kTiled128x4, converted, ScaleLayout::kRowMajor, kM, kK / 16, 1, s);
         }},
        {"prepack_weights", [=, this](cudaStream_t s) { prepack_weights(b.t, packed, s); }},
    };
  }
  EveryEntryPoint(const EveryEntryPoint&) = delete;
  EveryEntryPoint& operator=(const EveryEntryPoint&) = delete;

  bool arena_untouched() const {
    const std::vector<std::uint8_t> h = arena.download();
    return std::all_of(h.begin(), h.end(), [](std::uint8_t v) { return v == kPoison; });
  }
};

TEST(StreamDevice, EveryStreamOfTheCurrentDeviceIsTaken) {
  FP4MOE_REQUIRE_GPU();
  EveryEntryPoint every;
  cudaStream_t created = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking), cudaSuccess);
  for (cudaStream_t s : {cudaStream_t{nullptr}, cudaStreamLegacy, cudaStreamPerThread, created}) {
    EXPECT_EQ(detail::stream_device(s), detail::current_device());
    for (const auto& [name, call] : every.calls) {
      SCOPED_TRACE(name);
      EXPECT_NO_THROW(call(s));
    }
    EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  }
  test::destroy_stream(created);
  // The calls wrote (so each is a call that runs, not one refused elsewhere).
  EXPECT_FALSE(every.arena_untouched());
}

TEST(StreamDevice, AStreamOfAnotherDeviceIsRefusedAndNothingWritten) {
  FP4MOE_REQUIRE_GPU();
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count < 2) GTEST_SKIP() << "needs two GPUs (" << count << " here)";
  const int current = detail::current_device(), other = current == 0 ? 1 : 0;
  EveryEntryPoint every;
  cudaStream_t foreign = nullptr;
  ASSERT_EQ(cudaSetDevice(other), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&foreign, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(current), cudaSuccess);
  EXPECT_EQ(detail::stream_device(foreign), other);
  for (const auto& [name, call] : every.calls) {
    try {
      call(foreign);
      ADD_FAILURE() << "accepted a stream of device " << other << ": " << name;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "stream") << name << ": " << e.what();
    }
  }
  EXPECT_EQ(cudaSetDevice(other), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(foreign), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(foreign), cudaSuccess);
  EXPECT_EQ(cudaSetDevice(current), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(every.arena_untouched());
}

}  // namespace
}  // namespace fp4moe
