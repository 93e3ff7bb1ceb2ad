// One test per validation rule of moe_dense_fc2, moe_dense_fc1_swiglu and
// moe_routing_alpha: the call throws InvalidArgument naming the argument and
// writes nothing. Host buffers stand in for device memory: every check runs
// before any CUDA call.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "support/refusal_cases.hpp"
#include "fp4moe/error.hpp"
#include "fp4moe/moe.hpp"
#include "kernels/sm90/gemm_registry.hpp"

namespace fp4moe {
namespace {

/// `p` moved by `bytes`: a misaligned pointer, never dereferenced.
template <class T>
T* shifted(T* p, int bytes) {
  return reinterpret_cast<T*>(reinterpret_cast<std::uintptr_t>(p) + bytes);
}

/// Test names from the rules' names.
template <class R>
std::string rule_name(const ::testing::TestParamInfo<R>& info) {
  std::string n = info.param.name;
  for (char& c : n) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

/// A valid NVFP4 operand with 128x4-tiled scales over the given buffers.
Fp4Tensor nvfp4_operand(void* data, void* scales, float* global, std::int64_t rows, std::int64_t cols,
                        std::int64_t groups = 1) {
  Fp4Tensor t;
  t.data = data;
  t.scales = scales;
  t.global_scale = global;
  t.scale_layout = ScaleLayout::kTiled128x4;
  t.rows = rows;
  t.cols = cols;
  t.groups = groups;
  return t;
}

/// A valid NVFP4 FC2 problem: M = 4 tokens, E = 2 experts of W = 128, N = 8.
struct Fc2Setup {
  static constexpr int kM = 4, kE = 2, kW = 128, kK = kE * kW, kN = 8;
  alignas(16) std::uint8_t a_data[kM * kK / 2];
  alignas(16) std::uint8_t b_data[kN * kK / 2];
  alignas(16) std::uint8_t a_scales[4096];
  alignas(16) std::uint8_t b_scales[4096];
  alignas(16) float ga[1] = {1};
  alignas(16) float gb[1] = {1};
  alignas(16) float alpha_data[kM * kE] = {};
  alignas(16) float out[kM * kN];
  int width = kW;
  Fp4Tensor a, b;
  MatrixView alpha, d;
  test::HostBuffers buffers;
  Fc2Setup() {
    std::fill(std::begin(out), std::end(out), 7.0f);
    for (const auto& [p, n] : {std::pair<void*, std::size_t>{a_data, sizeof a_data}, {b_data, sizeof b_data},
                               {a_scales, sizeof a_scales}, {b_scales, sizeof b_scales}})
      buffers.fill_and_keep(p, n);
    for (const auto& [p, n] : {std::pair<const void*, std::size_t>{ga, sizeof ga}, {gb, sizeof gb},
                               {alpha_data, sizeof alpha_data}, {out, sizeof out}})
      buffers.keep(p, n);
    a = nvfp4_operand(a_data, a_scales, ga, kM, kK);
    b = nvfp4_operand(b_data, b_scales, gb, kN, kK);
    alpha = MatrixView{alpha_data, DType::kFP32, kM, kE};
    d = MatrixView{out, DType::kFP32, kM, kN};
  }
  Fc2Setup(const Fc2Setup&) = delete;  // its views point into itself
  Fc2Setup& operator=(const Fc2Setup&) = delete;
  /// No byte of any buffer changed: the output, or an input it aliases.
  bool untouched() const { return buffers.unchanged(); }
};

struct Fc2Rule {
  const char* name;
  std::function<void(Fc2Setup&)> breaks;
  const char* argument;
};
void PrintTo(const Fc2Rule& r, std::ostream* os) { *os << r.name; }

const Fc2Rule kFc2Rules[] = {
    {"W not a multiple of 128", [](Fc2Setup& s) { s.width = 64; s.alpha.cols = 4; }, "expert_width"},
    {"W zero", [](Fc2Setup& s) { s.width = 0; }, "expert_width"},
    {"E times W differs from K", [](Fc2Setup& s) { s.alpha.cols = 3; }, "expert_width"},
    {"alpha rows differ from M", [](Fc2Setup& s) { s.alpha.rows = 3; }, "alpha.rows"},
    {"alpha without experts", [](Fc2Setup& s) { s.alpha.cols = 0; }, "alpha.cols"},
    {"alpha null", [](Fc2Setup& s) { s.alpha.data = nullptr; }, "alpha.data"},
    {"alpha not FP32", [](Fc2Setup& s) { s.alpha.dtype = DType::kBF16; }, "alpha.dtype"},
    {"alpha misaligned", [](Fc2Setup& s) { s.alpha.data = reinterpret_cast<char*>(s.alpha_data) + 2; }, "alpha.data"},
    {"alpha grouped", [](Fc2Setup& s) { s.alpha.groups = 2; }, "alpha.groups"},
    {"alpha negative stride", [](Fc2Setup& s) { s.alpha.col_stride = -1; }, "alpha.col_stride"},
    {"alpha negative row stride", [](Fc2Setup& s) { s.alpha.row_stride = -1; }, "alpha.row_stride"},
    {"a grouped", [](Fc2Setup& s) { s.a.groups = 2; }, "a.groups"},
    {"b grouped", [](Fc2Setup& s) { s.b.groups = 2; }, "b.groups"},
    {"K differs", [](Fc2Setup& s) { s.b.cols = 128; }, "b.cols"},
    {"d rows", [](Fc2Setup& s) { s.d.rows = 3; }, "d.rows"},
    {"d overlaps alpha", [](Fc2Setup& s) { s.d.data = s.alpha_data; s.d.rows = s.a.rows = s.alpha.rows = 1; }, "d.data"},
    {"a prepacked", [](Fc2Setup& s) { s.a.prepacked = true; }, "a.prepacked"},
};

class Fc2Rule_ : public ::testing::TestWithParam<Fc2Rule> {};

TEST_P(Fc2Rule_, RefusedBeforeAnyLaunch) {
  Fc2Setup s;
  test::expect_rule_refused<Fc2Setup>(s, GetParam(), [](Fc2Setup& g) { moe_dense_fc2(g.a, g.b, g.alpha, g.width, g.d, nullptr); });
}

INSTANTIATE_TEST_SUITE_P(Rules, Fc2Rule_, ::testing::ValuesIn(kFc2Rules), rule_name<Fc2Rule>);

/// moe_dense_fc2 with tactic t forced is refused naming options.tactic, with
/// `word` in the message, and writes nothing.
void expect_fc2_tactic_refused(const GemmTactic& t, const std::string& word) {
  Fc2Setup s;
  GemmOptions opt;
  opt.tactic = &t;
  try {
    moe_dense_fc2(s.a, s.b, s.alpha, s.width, s.d, nullptr, opt);
    ADD_FAILURE() << "accepted " << t.name();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "options.tactic") << e.what();
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
  EXPECT_TRUE(s.untouched());
}

TEST(MoeRules, Fc2SplitKNotAChoiceOrBeyondTheExperts) {
  struct Case {
    int split;
    const char* word;
  };
  for (const Case c : {Case{5, "split_k must be 1, 2, 3, 4, 6, 8 or 0"}, Case{3, "must not exceed the experts"}}) {
    GemmTactic t;  // E = 2
    t.swap_ab = true;
    t.block_n = 16;
    t.block_k = 128;
    t.stages = 5;
    t.split_k = c.split;
    expect_fc2_tactic_refused(t, c.word);
  }
}

// A stage holds one expert's columns: 256-K stages cannot serve W = 128.
TEST(MoeRules, Fc2StageWiderThanTheExpertIsRefused) {
  GemmTactic t;
  t.swap_ab = true;
  t.block_n = 16;
  t.block_k = 256;
  t.stages = 4;
  expect_fc2_tactic_refused(t, "must divide the expert width");
}

// The gathered formulation keeps every token's accumulator in shared
// memory: a forced gather tactic refuses more tokens than its kernel holds.
TEST(MoeRules, Fc2GatherHoldsAtMostItsTokens) {
  const kernels::KernelEntry* gather = nullptr;
  for (const auto& e : kernels::kernel_registry())
    if (e.tactic.moe_gather && e.format == Fp4Format::kNVFP4) gather = &e;
  ASSERT_NE(gather, nullptr);
  ASSERT_GT(gather->max_m, 0);
  const int m = gather->max_m + 1, kE = 2, kW = 128, kN = 8;
  std::vector<std::uint8_t> a_data(std::size_t(m) * kE * kW / 2 + 16), b_data(kN * kE * kW / 2 + 16);
  std::vector<std::uint8_t> a_scales(std::size_t(m + 128) * 16 + 16), b_scales(4096);
  std::vector<float> alpha(std::size_t(m) * kE), out(std::size_t(m) * kN, 7.0f), ga{1.0f}, gb{1.0f};
  auto al16 = [](void* p) { return reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(p) + 15) & ~std::uintptr_t(15)); };
  Fp4Tensor a;
  a.data = al16(a_data.data());
  a.scales = al16(a_scales.data());
  a.global_scale = ga.data();
  a.scale_layout = ScaleLayout::kTiled128x4;
  a.rows = m;
  a.cols = kE * kW;
  Fp4Tensor b = a;
  b.data = al16(b_data.data());
  b.scales = al16(b_scales.data());
  b.global_scale = gb.data();
  b.rows = kN;
  GemmTactic t = gather->tactic;
  GemmOptions opt;
  opt.tactic = &t;
  try {
    moe_dense_fc2(a, b, MatrixView{alpha.data(), DType::kFP32, m, kE}, kW, MatrixView{out.data(), DType::kFP32, m, kN},
                  nullptr, opt);
    ADD_FAILURE() << "accepted " << m << " tokens";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "options.tactic") << e.what();
    EXPECT_NE(std::string(e.what()).find("tokens"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](float v) { return v == 7.0f; }));
}

TEST(MoeRules, Fc2TopKHintWithinTheExperts) {
  for (int top_k : {-1, 3}) {  // E = 2
    Fc2Setup s;
    GemmOptions opt;
    opt.moe_top_k = top_k;
    try {
      moe_dense_fc2(s.a, s.b, s.alpha, s.width, s.d, nullptr, opt);
      ADD_FAILURE() << "accepted moe_top_k " << top_k;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "options.moe_top_k") << e.what();
    }
    EXPECT_TRUE(s.untouched());
  }
}

/// A valid NVFP4 FC1 problem: M = 4 tokens, K = 64, E = 2 experts of I = 128
/// (2I = 256 gate and up rows each), with both outputs: BF16 d and NVFP4 out,
/// [M, E*I] each.
struct Fc1Setup {
  static constexpr int kM = 4, kK = 64, kE = 2, kI = 128, kN = kE * kI;
  alignas(16) std::uint8_t a_data[kM * kK / 2];
  alignas(16) std::uint8_t b_data[kE * 2 * kI * kK / 2];
  alignas(16) std::uint8_t a_scales[128 * 4];
  alignas(16) std::uint8_t b_scales[kE * 2 * kI * 4];
  alignas(16) float ga[1] = {1};
  alignas(16) float gb[kE] = {1, 1};
  alignas(16) float scale[kE] = {1, 1};
  alignas(16) float encode[1] = {1};
  alignas(16) std::uint16_t d_data[kM * kN];
  alignas(16) std::uint8_t out_data[kM * kN / 2];
  alignas(16) std::uint8_t out_scales[128 * kN / 16];
  alignas(16) float out_global[1] = {7.0f};
  const float* expert_scale = scale;
  const float* encode_scale = encode;
  Fp4Tensor a, b, out;
  MatrixView d;
  test::HostBuffers buffers;
  Fc1Setup() {
    for (const auto& [p, n] : {std::pair<void*, std::size_t>{a_data, sizeof a_data}, {b_data, sizeof b_data},
                               {a_scales, sizeof a_scales}, {b_scales, sizeof b_scales}, {d_data, sizeof d_data},
                               {out_data, sizeof out_data}, {out_scales, sizeof out_scales}})
      buffers.fill_and_keep(p, n);
    for (const auto& [p, n] : {std::pair<const void*, std::size_t>{ga, sizeof ga}, {gb, sizeof gb}, {scale, sizeof scale},
                               {encode, sizeof encode}, {out_global, sizeof out_global}})
      buffers.keep(p, n);
    a = nvfp4_operand(a_data, a_scales, ga, kM, kK);
    b = nvfp4_operand(b_data, b_scales, gb, 2 * kI, kK, kE);
    out = nvfp4_operand(out_data, out_scales, out_global, kM, kN);
    d = MatrixView{d_data, DType::kBF16, kM, kN};
  }
  void run_bf16(const GemmOptions& opt = {}) { moe_dense_fc1_swiglu(a, b, expert_scale, d, nullptr, opt); }
  void run_nvfp4() { moe_dense_fc1_swiglu(a, b, expert_scale, out, encode_scale, nullptr); }
  Fc1Setup(const Fc1Setup&) = delete;  // its views point into itself
  Fc1Setup& operator=(const Fc1Setup&) = delete;
  /// No byte of any buffer changed: an output, or an input it aliases.
  bool untouched() const { return buffers.unchanged(); }
};

struct Fc1Rule {
  const char* name;
  std::function<void(Fc1Setup&)> breaks;
  const char* argument;
};
void PrintTo(const Fc1Rule& r, std::ostream* os) { *os << r.name; }

void expect_fc1_refused(const Fc1Rule& r, const std::function<void(Fc1Setup&)>& run) {
  Fc1Setup s;
  test::expect_rule_refused(s, r, run);
}

// Rules of the operands, which both overloads check.
const Fc1Rule kFc1SharedRules[] = {
    {"b prepacked", [](Fc1Setup& s) { s.b.prepacked = true; }, "b.prepacked"},
    {"a grouped", [](Fc1Setup& s) { s.a.groups = 2; }, "a.groups"},
    {"b rows not 2I with I a multiple of 128", [](Fc1Setup& s) { s.b.rows = 128; }, "b.rows"},
    {"expert_scale misaligned", [](Fc1Setup& s) { s.expert_scale = shifted(s.scale, 2); }, "expert_scale"},
};

const Fc1Rule kFc1Bf16Rules[] = {
    {"d not BF16", [](Fc1Setup& s) { s.d.dtype = DType::kFP32; }, "d.dtype"},
    // (2-byte aligned is enough for BF16, but the epilogue stores column pairs.)
    {"d not 4-byte aligned", [](Fc1Setup& s) { s.d.data = shifted(s.d_data, 2); }, "d.data"},
    {"d odd row stride", [](Fc1Setup& s) { s.d.row_stride = Fc1Setup::kN + 1; }, "d.row_stride"},
};

const Fc1Rule kFc1Nvfp4Rules[] = {
    {"out not NVFP4", [](Fc1Setup& s) { s.out.format = Fp4Format::kMXFP4; }, "out.format"},
    {"out row-major scales", [](Fc1Setup& s) { s.out.scale_layout = ScaleLayout::kRowMajor; }, "out.scale_layout"},
    {"null out.data", [](Fc1Setup& s) { s.out.data = nullptr; }, "out.data"},
    {"null out.scales", [](Fc1Setup& s) { s.out.scales = nullptr; }, "out.scales"},
    {"null out.global_scale", [](Fc1Setup& s) { s.out.global_scale = nullptr; }, "out.global_scale"},
    {"null encode_scale", [](Fc1Setup& s) { s.encode_scale = nullptr; }, "encode_scale"},
    {"encode_scale misaligned", [](Fc1Setup& s) { s.encode_scale = shifted(s.encode, 2); }, "encode_scale"},
    {"out.global_scale misaligned", [](Fc1Setup& s) { s.out.global_scale = shifted(s.out_global, 2); }, "out.global_scale"},
    {"out rows differ from A", [](Fc1Setup& s) { s.out.rows = 3; }, "out.rows"},
    {"out cols not E times I", [](Fc1Setup& s) { s.out.cols = Fc1Setup::kI; }, "out.cols"},
    {"out grouped", [](Fc1Setup& s) { s.out.groups = 2; }, "out.groups"},
    {"out.data overlaps a.data", [](Fc1Setup& s) { s.out.data = s.a_data; }, "out.data"},
    {"out.data overlaps b.data", [](Fc1Setup& s) { s.out.data = s.b_data; }, "out.data"},
    {"out.scales overlap a.scales", [](Fc1Setup& s) { s.out.scales = s.a_scales; }, "out.scales"},
    {"out.scales overlap b.scales", [](Fc1Setup& s) { s.out.scales = s.b_scales; }, "out.scales"},
};

class Fc1SharedRule : public ::testing::TestWithParam<Fc1Rule> {};
class Fc1Bf16Rule : public ::testing::TestWithParam<Fc1Rule> {};
class Fc1Nvfp4Rule : public ::testing::TestWithParam<Fc1Rule> {};

const auto kBf16Output = [](Fc1Setup& s) { s.run_bf16(); };
const auto kNvfp4Output = [](Fc1Setup& s) { s.run_nvfp4(); };

TEST_P(Fc1SharedRule, Bf16OutputRefusedBeforeAnyLaunch) { expect_fc1_refused(GetParam(), kBf16Output); }
TEST_P(Fc1SharedRule, Nvfp4OutputRefusedBeforeAnyLaunch) { expect_fc1_refused(GetParam(), kNvfp4Output); }
TEST_P(Fc1Bf16Rule, RefusedBeforeAnyLaunch) { expect_fc1_refused(GetParam(), kBf16Output); }
TEST_P(Fc1Nvfp4Rule, RefusedBeforeAnyLaunch) { expect_fc1_refused(GetParam(), kNvfp4Output); }

INSTANTIATE_TEST_SUITE_P(Rules, Fc1SharedRule, ::testing::ValuesIn(kFc1SharedRules), rule_name<Fc1Rule>);
INSTANTIATE_TEST_SUITE_P(Rules, Fc1Bf16Rule, ::testing::ValuesIn(kFc1Bf16Rules), rule_name<Fc1Rule>);
INSTANTIATE_TEST_SUITE_P(Rules, Fc1Nvfp4Rule, ::testing::ValuesIn(kFc1Nvfp4Rules), rule_name<Fc1Rule>);

// A tile compiled without split-K (FC1's: its shapes fill the SMs with whole
// tiles) refuses a fixed split.
TEST(MoeRules, Fc1TileWithoutSplitKRefusesASplit) {
  const kernels::KernelEntry* tile = nullptr;
  for (const auto& e : kernels::kernel_registry())
    if (e.layout == kernels::Layout::kMoeFc1 && e.format == Fp4Format::kNVFP4 && e.max_split_k == 1 && !e.stream_k)
      tile = &e;
  ASSERT_NE(tile, nullptr);
  GemmTactic t = tile->tactic;
  t.split_k = 2;
  GemmOptions opt;
  opt.tactic = &t;
  Fc1Setup s;
  try {
    s.run_bf16(opt);
    ADD_FAILURE() << "accepted " << t.name();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "options.tactic") << e.what();
    EXPECT_NE(std::string(e.what()).find("compiled without split-K"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(s.untouched());
}

TEST(MoeRules, RoutingAlphaRules) {
  alignas(16) std::int32_t ids[8] = {};
  alignas(16) float weights[8] = {};
  alignas(16) float alpha_data[16];
  std::fill(std::begin(alpha_data), std::end(alpha_data), 7.0f);
  const MatrixView alpha{alpha_data, DType::kFP32, 4, 4};
  // The call with alpha changed by `change`.
  auto with_alpha = [&](void (*change)(MatrixView&)) {
    return [&, change] {
      MatrixView v = alpha;
      change(v);
      moe_routing_alpha(ids, weights, 2, nullptr, v, nullptr);
    };
  };
  test::expect_each_refused({
      {"null ids", [&] { moe_routing_alpha(nullptr, weights, 2, nullptr, alpha, nullptr); }, "topk_ids"},
      {"null weights", [&] { moe_routing_alpha(ids, nullptr, 2, nullptr, alpha, nullptr); }, "topk_weights"},
      {"misaligned ids", [&] { moe_routing_alpha(shifted(ids, 2), weights, 2, nullptr, alpha, nullptr); }, "topk_ids"},
      {"misaligned weights", [&] { moe_routing_alpha(ids, shifted(weights, 2), 2, nullptr, alpha, nullptr); }, "topk_weights"},
      {"top_k zero", [&] { moe_routing_alpha(ids, weights, 0, nullptr, alpha, nullptr); }, "top_k"},
      {"misaligned scale",
       [&] { moe_routing_alpha(ids, weights, 2, reinterpret_cast<const float*>(reinterpret_cast<const char*>(weights) + 1), alpha, nullptr); },
       "expert_scale"},
      {"alpha not FP32", with_alpha([](MatrixView& v) { v.dtype = DType::kBF16; }), "alpha.dtype"},
      {"alpha zero column stride", with_alpha([](MatrixView& v) { v.col_stride = 0; }), "alpha.col_stride"},
      {"alpha negative rows", with_alpha([](MatrixView& v) { v.rows = -1; }), "alpha.rows"},
      {"alpha rows past 32 bits", with_alpha([](MatrixView& v) { v.rows = std::int64_t(1) << 31; }), "alpha"},
      {"alpha cols past 32 bits", with_alpha([](MatrixView& v) { v.cols = std::int64_t(1) << 31; }), "alpha"},
  });
  EXPECT_TRUE(std::all_of(std::begin(alpha_data), std::end(alpha_data), [](float v) { return v == 7.0f; }));
}

}  // namespace
}  // namespace fp4moe
