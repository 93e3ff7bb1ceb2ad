// The prepacked weight bit order (src/format/weight_prepack.hpp): a bijection
// on words whose cheap extraction gives the standard order's raw pairs, and
// cpu::prepack_weights with its rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "format/weight_prepack.hpp"
#include "fp4moe/error.hpp"
#include "fp4moe/quantize.hpp"

namespace fp4moe {
namespace {

/// Raw pair p of a standard word, from the definition: element p's code
/// s|e1 e0|m as BF16 bits sign 15, e1 e0 m at 8..6; element p + 4 the same
/// 16 bits higher.
std::uint32_t standard_raw_pair(std::uint32_t w, int p) {
  auto half = [&](int element) {
    const std::uint32_t code = (w >> (4 * element)) & 0xfu;
    return ((code & 8u) << 12) | ((code & 7u) << 6);
  };
  return half(p) | (half(p + 4) << 16);
}

TEST(WeightPrepack, EveryBitHasItsOwnPlace) {
  std::uint32_t seen = 0;
  for (int b = 0; b < 32; ++b) {
    const std::uint32_t moved = format::prepack_word(1u << b);
    ASSERT_EQ(__builtin_popcount(moved), 1) << b;
    EXPECT_EQ(seen & moved, 0u) << "two bits share a place: " << b;
    seen |= moved;
    EXPECT_EQ(format::unprepack_word(moved), 1u << b);
  }
  EXPECT_EQ(seen, 0xffffffffu);
}

TEST(WeightPrepack, ExtractionGivesTheStandardRawPairs) {
  std::mt19937 rng(7);
  std::vector<std::uint32_t> words = {0u, 0xffffffffu, 0x88888888u, 0x77777777u, 0x12345678u};
  for (int i = 0; i < 20000; ++i) words.push_back(rng());
  for (std::uint32_t w : words) {
    std::uint32_t r[4];
    format::raw_pairs_prepacked(format::prepack_word(w), r);
    for (int p = 0; p < 4; ++p) ASSERT_EQ(r[p], standard_raw_pair(w, p)) << std::hex << w << " pair " << p;
    ASSERT_EQ(format::unprepack_word(format::prepack_word(w)), w);
  }
}

struct PrepackSetup {
  alignas(16) std::uint8_t data[4 * 32];
  alignas(16) std::uint8_t out[4 * 32];
  alignas(16) std::uint8_t scales[512] = {};
  alignas(16) float global[1] = {1.0f};
  Fp4Tensor w;
  PrepackSetup() {
    for (int i = 0; i < 128; ++i) data[i] = static_cast<std::uint8_t>(37 * i + 11);
    std::fill(std::begin(out), std::end(out), 0x5a);
    w.data = data;
    w.scales = scales;
    w.global_scale = global;
    w.scale_layout = ScaleLayout::kTiled128x4;
    w.rows = 4;
    w.cols = 64;
  }
};

TEST(WeightPrepack, CpuPrepackPermutesEveryWordAndMarksTheView) {
  PrepackSetup s;
  const Fp4Tensor p = cpu::prepack_weights(s.w, s.out);
  EXPECT_TRUE(p.prepacked);
  EXPECT_EQ(p.data, s.out);
  EXPECT_EQ(p.scales, s.w.scales);
  for (int i = 0; i < 32; ++i) {
    std::uint32_t in, got;
    std::memcpy(&in, s.data + 4 * i, 4);
    std::memcpy(&got, s.out + 4 * i, 4);
    EXPECT_EQ(got, format::prepack_word(in)) << i;
  }
  // In place gives the same bytes.
  cpu::prepack_weights(s.w, s.data);
  EXPECT_EQ(std::memcmp(s.data, s.out, sizeof s.out), 0);
}

TEST(WeightPrepack, RulesRefuseAndWriteNothing) {
  struct Case { const char* arg; std::function<void(PrepackSetup&, void*&)> f; };
  const Case cases[] = {
      {"weights.prepacked", [](PrepackSetup& s, void*&) { s.w.prepacked = true; }},
      {"weights.data", [](PrepackSetup& s, void*&) { s.w.data = nullptr; }},
      {"weights.global_scale", [](PrepackSetup& s, void*&) { s.w.global_scale = nullptr; }},
      {"dst_data", [](PrepackSetup&, void*& d) { d = nullptr; }},
      {"dst_data", [](PrepackSetup& s, void*& d) { d = s.data + 16; }},  // overlaps without being in place
      {"dst_data", [](PrepackSetup& s, void*& d) { d = s.scales; }},
  };
  for (const Case& c : cases) {
    PrepackSetup s;
    void* dst = s.out;
    c.f(s, dst);
    try {
      cpu::prepack_weights(s.w, dst);
      ADD_FAILURE() << "accepted: " << c.arg;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), c.arg) << e.what();
    }
    EXPECT_TRUE(std::all_of(std::begin(s.out), std::end(s.out), [](std::uint8_t b) { return b == 0x5a; })) << c.arg;
  }
  // The GPU entry point checks before any CUDA call (host buffers here).
  PrepackSetup s;
  s.w.prepacked = true;
  EXPECT_THROW(prepack_weights(s.w, s.out, nullptr), InvalidArgument);
}

// The GPU kernel stores 16-byte vectors; the CPU loop takes any alignment.
TEST(WeightPrepack, GpuEntryPointNeedsSixteenByteAlignedDestination) {
  PrepackSetup s;
  alignas(16) std::uint8_t dst[4 * 32 + 16];
  std::fill(std::begin(dst), std::end(dst), 0x5a);
  try {
    prepack_weights(s.w, dst + 4, nullptr);
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dst_data") << e.what();
    EXPECT_NE(std::string(e.what()).find("aligned"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::all_of(std::begin(dst), std::end(dst), [](std::uint8_t b) { return b == 0x5a; }));
}

TEST(WeightPrepack, OtherEntryPointsRefusePrepackedTensors) {
  PrepackSetup s;
  s.w.prepacked = true;
  alignas(16) float out[4 * 64];
  try {
    cpu::dequantize(s.w, MatrixView{out, DType::kFP32, 4, 64});
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "src.prepacked") << e.what();
  }
}

}  // namespace
}  // namespace fp4moe
