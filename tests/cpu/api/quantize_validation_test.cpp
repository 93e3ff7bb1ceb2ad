// One test per validation rule of the quantizer / dequantizer / converter entry
// points: the call throws InvalidArgument naming the argument, and no output
// byte changes. The GPU entry points are exercised with host buffers: their
// checks run before any CUDA call, so a missing check shows up as a CudaError
// (or a crash) instead of the expected InvalidArgument.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "support/refusal_cases.hpp"
#include "fp4moe/error.hpp"
#include "fp4moe/quantize.hpp"
#include "support/test_support.hpp"

namespace fp4moe {
namespace {

/// A valid quantize setup in host memory, every output filled with a sentinel.
struct QuantizeSetup {
  alignas(16) float input[4 * 64] = {};
  alignas(16) std::uint8_t data[4 * 32 + 16];
  alignas(16) std::uint8_t scales[4096];
  alignas(16) float global[4];
  alignas(16) float encode[4] = {1, 1, 1, 1};
  MatrixView src{input, DType::kFP32, 4, 64};
  Fp4Tensor dst;
  test::HostBuffers buffers;
  explicit QuantizeSetup(Fp4Format f) {
    std::fill(std::begin(data), std::end(data), 0x5a);
    std::fill(std::begin(scales), std::end(scales), 0x5a);
    std::fill(std::begin(global), std::end(global), 7.0f);
    for (int i = 0; i < 4 * 64; ++i) input[i] = static_cast<float>(i % 13) - 6.0f;
    buffers.keep(input, sizeof input);
    buffers.keep(data, sizeof data);
    buffers.keep(scales, sizeof scales);
    buffers.keep(global, sizeof global);
    buffers.keep(encode, sizeof encode);
    dst.data = data;
    dst.scales = scales;
    dst.global_scale = f == Fp4Format::kNVFP4 ? global : nullptr;
    dst.format = f;
    dst.rows = 4;
    dst.cols = 64;
  }
  QuantizeSetup(const QuantizeSetup&) = delete;  // dst points into itself
  QuantizeSetup& operator=(const QuantizeSetup&) = delete;
  /// No byte of any buffer changed: the outputs, or the input they alias.
  bool outputs_untouched() const { return buffers.unchanged(); }
};

struct Rule {
  const char* name;
  Fp4Format format;
  std::function<void(QuantizeSetup&, const float*&)> breaks;
  const char* argument;  // expected InvalidArgument::argument()
  const char* words = nullptr;  // where set, in the message too (rules that share an argument)
};

const Rule kQuantizeRules[] = {
    {"bad format", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.format = static_cast<Fp4Format>(9); }, "dst.format"},
    {"bad layout", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.scale_layout = static_cast<ScaleLayout>(9); }, "dst.scale_layout"},
    {"null data", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.data = nullptr; }, "dst.data"},
    {"null scales", Fp4Format::kMXFP4, [](QuantizeSetup& s, const float*&) { s.dst.scales = nullptr; }, "dst.scales"},
    {"negative rows", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.rows = -1; }, "dst.rows"},
    {"zero groups", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.groups = 0; }, "dst.groups"},
    {"zero cols", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.cols = 0; }, "dst.cols"},
    {"cols off nvfp4 block", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.cols = s.src.cols = 40; }, "dst.cols"},
    {"cols off mxfp4 block", Fp4Format::kMXFP4, [](QuantizeSetup& s, const float*&) { s.dst.cols = s.src.cols = 48; }, "dst.cols"},
    {"too large", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.rows = s.src.rows = std::int64_t(1) << 35; }, "dst", "2^40"},
    // 2^31 blocks of 16, within 2^40 elements and (on the GPU) 2^32 scale bytes.
    {"blocks past 31 bits", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.rows = s.src.rows = std::int64_t(1) << 29; }, "dst", "rows*cols/block"},
    {"nvfp4 without global", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.global_scale = nullptr; }, "dst.global_scale"},
    {"mxfp4 with global", Fp4Format::kMXFP4, [](QuantizeSetup& s, const float*&) { s.dst.global_scale = s.global; }, "dst.global_scale"},
    {"null src", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.src.data = nullptr; }, "src.data"},
    {"src dtype", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.src.dtype = DType::kI32; }, "src.dtype"},
    {"src col stride", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.src.col_stride = 2; }, "src.col_stride"},
    {"src row stride", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.src.row_stride = 128; }, "src.row_stride"},
    {"src group stride", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.src.group_stride = 1000; }, "src.group_stride"},
    {"rows mismatch", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.src.rows = 3; }, "src.rows"},
    {"cols mismatch", Fp4Format::kMXFP4, [](QuantizeSetup& s, const float*&) { s.src.cols = 32; }, "src.cols"},
    {"groups mismatch", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.src.groups = 2; }, "src.groups"},
    {"mxfp4 encode scale", Fp4Format::kMXFP4, [](QuantizeSetup& s, const float*& g) { g = s.encode; }, "encode_scale"},
    {"encode aliases global", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*& g) { g = s.global; }, "encode_scale"},
    {"data overlaps src", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.data = s.input; }, "dst.data"},
    {"scales overlap src", Fp4Format::kNVFP4, [](QuantizeSetup& s, const float*&) { s.dst.scales = s.input + 8; }, "dst.scales"},
};

void PrintTo(const Rule& r, std::ostream* os) { *os << r.name; }

class QuantizeRule : public ::testing::TestWithParam<Rule> {};

TEST_P(QuantizeRule, CpuEntryPointRefusesAndWritesNothing) {
  const Rule& rule = GetParam();
  QuantizeSetup s(rule.format);
  const float* encode = nullptr;
  rule.breaks(s, encode);
  try {
    cpu::quantize(s.src, s.dst, encode);
    FAIL() << "accepted: " << rule.name;
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), rule.argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(rule.argument), std::string::npos);
    if (rule.words) {
      EXPECT_NE(std::string(e.what()).find(rule.words), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(s.outputs_untouched()) << rule.name;
}

TEST_P(QuantizeRule, GpuEntryPointRefusesBeforeAnyLaunch) {
  const Rule& rule = GetParam();
  QuantizeSetup s(rule.format);
  const float* encode = nullptr;
  rule.breaks(s, encode);
  try {
    quantize(s.src, s.dst, nullptr, encode);
    FAIL() << "accepted: " << rule.name;
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), rule.argument) << e.what();
    if (rule.words) {
      EXPECT_NE(std::string(e.what()).find(rule.words), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(s.outputs_untouched()) << rule.name;
}

INSTANTIATE_TEST_SUITE_P(Rules, QuantizeRule, ::testing::ValuesIn(kQuantizeRules),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& c : n) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(QuantizeRules, GpuEntryPointNeedsSixteenByteAlignment) {
  QuantizeSetup s(Fp4Format::kNVFP4);
  s.src.data = reinterpret_cast<char*>(s.input) + 4;
  s.src.cols = s.dst.cols = 32;
  try {
    quantize(s.src, s.dst, nullptr);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "src.data");
  }
  QuantizeSetup t(Fp4Format::kMXFP4);
  t.dst.data = t.data + 8;
  try {
    quantize(t.src, t.dst, nullptr);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dst.data");
  }
  EXPECT_TRUE(t.outputs_untouched());
}

// Rules of the GPU quantizer only (its kernels' index widths and stores);
// the CPU quantizer accepts these.
TEST(QuantizeRules, GpuEntryPointLimits) {
  auto expect_refused = [](QuantizeSetup& s, const char* argument) {
    try {
      quantize(s.src, s.dst, nullptr, s.encode);
      ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), argument) << e.what();
    }
    EXPECT_TRUE(s.outputs_untouched());
  };
  {
    QuantizeSetup s(Fp4Format::kNVFP4);  // 2^30 columns in one row
    s.src.rows = s.dst.rows = 1;
    s.src.cols = s.dst.cols = std::int64_t(1) << 30;
    expect_refused(s, "dst.cols");
  }
  {
    QuantizeSetup s(Fp4Format::kNVFP4);  // one row padded to 128: 128·(2^25 + 4) scale bytes
    s.src.rows = s.dst.rows = 1;
    s.src.cols = s.dst.cols = (std::int64_t(1) << 29) + 16;
    s.dst.scale_layout = ScaleLayout::kTiled128x4;
    expect_refused(s, "dst");
  }
  {
    QuantizeSetup s(Fp4Format::kNVFP4);
    s.dst.scales = s.scales + 1;
    expect_refused(s, "dst.scales");
  }
}

TEST(QuantizeRules, NamedEntryPointsCheckTheFormat) {
  QuantizeSetup mx(Fp4Format::kMXFP4), nv(Fp4Format::kNVFP4);
  const std::pair<const char*, std::function<void()>> calls[] = {
      {"cpu::quantize_nvfp4 of MXFP4", [&] { cpu::quantize_nvfp4(mx.src, mx.dst); }},
      {"quantize_nvfp4 of MXFP4", [&] { quantize_nvfp4(mx.src, mx.dst, nullptr); }},
      {"cpu::quantize_mxfp4 of NVFP4", [&] { cpu::quantize_mxfp4(nv.src, nv.dst); }},
      {"quantize_mxfp4 of NVFP4", [&] { quantize_mxfp4(nv.src, nv.dst, nullptr); }},
  };
  for (const auto& [name, call] : calls) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << name;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "dst.format") << name << ": " << e.what();
    }
  }
  EXPECT_TRUE(mx.outputs_untouched() && nv.outputs_untouched());
}

TEST(DequantizeRules, EachRuleRefusesAndWritesNothing) {
  QuantizeSetup s(Fp4Format::kNVFP4);
  alignas(16) float out[4 * 64];
  std::fill(std::begin(out), std::end(out), 3.0f);
  auto untouched = [&] { return std::all_of(std::begin(out), std::end(out), [](float v) { return v == 3.0f; }); };
  struct Case { const char* arg; std::function<void(Fp4Tensor&, MatrixView&)> f; };
  const Case cases[] = {
      {"src.data", [](Fp4Tensor& t, MatrixView&) { t.data = nullptr; }},
      {"src.global_scale", [](Fp4Tensor& t, MatrixView&) { t.global_scale = nullptr; }},
      {"dst.data", [](Fp4Tensor&, MatrixView& m) { m.data = nullptr; }},
      {"dst.dtype", [](Fp4Tensor&, MatrixView& m) { m.dtype = DType::kE4M3; }},
      {"dst.row_stride", [](Fp4Tensor&, MatrixView& m) { m.row_stride = 65; }},
      {"dst.rows", [](Fp4Tensor&, MatrixView& m) { m.rows = 5; }},
      {"dst.cols", [](Fp4Tensor&, MatrixView& m) { m.cols = 32; }},
      {"dst.groups", [](Fp4Tensor&, MatrixView& m) { m.groups = 2; }},
  };
  for (const Case& c : cases) {
    Fp4Tensor t = s.dst;
    MatrixView m{out, DType::kFP32, 4, 64};
    c.f(t, m);
    try {
      cpu::dequantize(t, m);
      ADD_FAILURE() << "accepted: " << c.arg;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), c.arg);
    }
    EXPECT_THROW(dequantize(t, m, nullptr), InvalidArgument) << c.arg;
    EXPECT_TRUE(untouched()) << c.arg;
  }
}

// The GPU kernels store 16-byte vectors; the CPU loops take any alignment.
TEST(DequantizeRules, GpuEntryPointNeedsSixteenByteAlignedOutput) {
  QuantizeSetup s(Fp4Format::kNVFP4);
  alignas(16) float out[4 * 64 + 4];
  std::fill(std::begin(out), std::end(out), 3.0f);
  try {
    dequantize(s.dst, MatrixView{out + 1, DType::kFP32, 4, 64}, nullptr);
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dst.data") << e.what();
  }
  EXPECT_TRUE(std::all_of(std::begin(out), std::end(out), [](float v) { return v == 3.0f; }));
}

TEST(ConvertScaleLayoutRules, EachRuleRefusesAndWritesNothing) {
  std::vector<std::uint8_t> src(1024, 1), dst(1024, 0x5a);
  struct Case { const char* arg; const void* s; void* d; int sl, dl; std::int64_t rows, cols, groups; };
  const Case cases[] = {
      {"src", nullptr, dst.data(), 0, 1, 4, 4, 1},
      {"dst", src.data(), nullptr, 0, 1, 4, 4, 1},
      {"src_layout", src.data(), dst.data(), 7, 1, 4, 4, 1},
      {"dst_layout", src.data(), dst.data(), 0, 7, 4, 4, 1},
      {"rows", src.data(), dst.data(), 0, 1, -1, 4, 1},
      {"cols", src.data(), dst.data(), 0, 1, 4, 0, 1},
      {"groups", src.data(), dst.data(), 0, 1, 4, 4, 0},
      {"dst", src.data(), src.data() + 8, 0, 1, 4, 4, 1},  // overlap
  };
  for (const Case& c : cases) {
    for (bool gpu : {false, true}) {
      try {
        if (gpu) {
          convert_scale_layout(c.s, static_cast<ScaleLayout>(c.sl), c.d, static_cast<ScaleLayout>(c.dl), c.rows, c.cols, c.groups, nullptr);
        } else {
          cpu::convert_scale_layout(c.s, static_cast<ScaleLayout>(c.sl), c.d, static_cast<ScaleLayout>(c.dl), c.rows, c.cols, c.groups);
        }
        ADD_FAILURE() << "accepted: " << c.arg;
      } catch (const InvalidArgument& e) {
        EXPECT_EQ(e.argument(), c.arg);
      }
    }
  }
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](std::uint8_t b) { return b == 0x5a; }));
  EXPECT_TRUE(std::all_of(src.begin(), src.end(), [](std::uint8_t b) { return b == 1; }));
}

// The GPU kernels give each group a grid row: more than 65535 groups is
// refused before anything is launched or written.
TEST(GpuGroupRules, EveryGpuEntryPointTakesAtMost65535Groups) {
  static constexpr std::int64_t kGroups = 65536;
  auto expect_refused = [](const std::function<void()>& call, const char* argument) {
    try {
      call();
      ADD_FAILURE() << "accepted " << kGroups << " groups";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), argument) << e.what();
    }
  };
  QuantizeSetup s(Fp4Format::kNVFP4);
  s.src.groups = s.dst.groups = kGroups;
  expect_refused([&] { quantize(s.src, s.dst, nullptr, s.encode); }, "dst.groups");
  alignas(16) float out[4 * 64];
  std::fill(std::begin(out), std::end(out), 3.0f);
  expect_refused([&] { dequantize(s.dst, MatrixView{out, DType::kFP32, 4, 64, 0, 1, kGroups}, nullptr); },
                 "src.groups");
  expect_refused([&] { compute_amax(MatrixView{s.input, DType::kFP32, 4, 64, 0, 1, kGroups}, out, nullptr); },
                 "src.groups");
  expect_refused([&] { convert_scale_layout(s.scales, ScaleLayout::kRowMajor, s.data, ScaleLayout::kTiled128x4, 4, 4,
                                            kGroups, nullptr); },
                 "groups");
  EXPECT_TRUE(s.outputs_untouched());
  EXPECT_TRUE(std::all_of(std::begin(out), std::end(out), [](float v) { return v == 3.0f; }));
}

TEST(ComputeAmaxRules, EachRuleRefusesAndWritesNothing) {
  alignas(16) float in[64] = {};
  float out = 5;
  const MatrixView m{in, DType::kFP32, 2, 32};
  auto with = [&](const std::function<void(MatrixView&)>& f) {
    MatrixView v = m;
    f(v);
    return v;
  };
  test::expect_each_refused({
      {"null amax", [&] { compute_amax(m, nullptr, nullptr); }, "amax"},
      {"zero groups", [&] { compute_amax(with([](MatrixView& v) { v.groups = 0; }), &out, nullptr); }, "src.groups"},
      {"negative rows", [&] { compute_amax(with([](MatrixView& v) { v.rows = -1; }), &out, nullptr); }, "src.rows"},
      {"zero cols", [&] { compute_amax(with([](MatrixView& v) { v.cols = 0; }), &out, nullptr); }, "src.cols"},
      {"ragged vectors", [&] { compute_amax(with([](MatrixView& v) { v.cols = 30; }), &out, nullptr); }, "src.cols"},
      // The CPU version returns one amax.
      {"cpu grouped", [&] { out = cpu::compute_amax(with([](MatrixView& v) { v.groups = 2; })); }, "src.groups"},
  });
  EXPECT_EQ(out, 5);
}

}  // namespace
}  // namespace fp4moe
