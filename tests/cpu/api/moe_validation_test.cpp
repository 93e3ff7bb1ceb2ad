// One test per validation rule of moe_dense_fc2 and moe_routing_alpha: the
// call throws InvalidArgument naming the argument and writes nothing. Host
// buffers stand in for device memory: every check runs before any CUDA call.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "fp4moe/error.hpp"
#include "fp4moe/moe.hpp"
#include "kernels/sm90/gemm_registry.hpp"

namespace fp4moe {
namespace {

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
  Fc2Setup() {
    std::fill(std::begin(out), std::end(out), 7.0f);
    a.data = a_data;
    a.scales = a_scales;
    a.global_scale = ga;
    a.scale_layout = ScaleLayout::kTiled128x4;
    a.rows = kM;
    a.cols = kK;
    b = a;
    b.data = b_data;
    b.scales = b_scales;
    b.global_scale = gb;
    b.rows = kN;
    alpha = MatrixView{alpha_data, DType::kFP32, kM, kE};
    d = MatrixView{out, DType::kFP32, kM, kN};
  }
  bool untouched() const {
    return std::all_of(std::begin(out), std::end(out), [](float v) { return v == 7.0f; });
  }
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
  const Fc2Rule& r = GetParam();
  r.breaks(s);
  try {
    moe_dense_fc2(s.a, s.b, s.alpha, s.width, s.d, nullptr);
    ADD_FAILURE() << "accepted: " << r.name;
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), r.argument) << r.name << ": " << e.what();
  }
  EXPECT_TRUE(s.untouched()) << r.name;
}

INSTANTIATE_TEST_SUITE_P(Rules, Fc2Rule_, ::testing::ValuesIn(kFc2Rules), [](const auto& info) {
  std::string n = info.param.name;
  for (char& c : n) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

TEST(MoeRules, Fc2SplitKBeyondTheExpertsOrNotAPowerOfTwo) {
  for (int split : {3, 4}) {  // 3: not 1/2/4/8; 4: more slices than the 2 experts
    Fc2Setup s;
    GemmTactic t;
    t.swap_ab = true;
    t.block_n = 16;
    t.block_k = 128;
    t.stages = 5;
    t.split_k = split;
    GemmOptions opt;
    opt.tactic = &t;
    try {
      moe_dense_fc2(s.a, s.b, s.alpha, s.width, s.d, nullptr, opt);
      ADD_FAILURE() << "accepted split_k " << split;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "options.tactic") << e.what();
      EXPECT_NE(std::string(e.what()).find("split_k"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(s.untouched());
  }
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

TEST(MoeRules, Fc1RefusesPrepackedWeights) {
  Fc2Setup s;  // its A and B serve as FC1 operands: the rule is checked first
  s.b.prepacked = true;
  alignas(16) float scale[1] = {1};
  try {
    moe_dense_fc1_swiglu(s.a, s.b, scale, s.d, nullptr);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "b.prepacked") << e.what();
  }
  EXPECT_TRUE(s.untouched());
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

TEST(MoeRules, RoutingAlphaRules) {
  alignas(16) std::int32_t ids[8] = {};
  alignas(16) float weights[8] = {};
  alignas(16) float alpha_data[16];
  std::fill(std::begin(alpha_data), std::end(alpha_data), 7.0f);
  const MatrixView alpha{alpha_data, DType::kFP32, 4, 4};
  struct Case {
    const char* name;
    std::function<void()> call;
    const char* argument;
  };
  const Case cases[] = {
      {"null ids", [&] { moe_routing_alpha(nullptr, weights, 2, nullptr, alpha, nullptr); }, "topk_ids"},
      {"null weights", [&] { moe_routing_alpha(ids, nullptr, 2, nullptr, alpha, nullptr); }, "topk_weights"},
      {"top_k zero", [&] { moe_routing_alpha(ids, weights, 0, nullptr, alpha, nullptr); }, "top_k"},
      {"misaligned scale",
       [&] { moe_routing_alpha(ids, weights, 2, reinterpret_cast<const float*>(reinterpret_cast<const char*>(weights) + 1), alpha, nullptr); },
       "expert_scale"},
      {"alpha not FP32",
       [&] {
         MatrixView v = alpha;
         v.dtype = DType::kBF16;
         moe_routing_alpha(ids, weights, 2, nullptr, v, nullptr);
       },
       "alpha.dtype"},
      {"alpha zero column stride",
       [&] {
         MatrixView v = alpha;
         v.col_stride = 0;
         moe_routing_alpha(ids, weights, 2, nullptr, v, nullptr);
       },
       "alpha.col_stride"},
  };
  for (const Case& c : cases) {
    try {
      c.call();
      ADD_FAILURE() << "accepted: " << c.name;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), c.argument) << c.name << ": " << e.what();
    }
  }
  EXPECT_TRUE(std::all_of(std::begin(alpha_data), std::end(alpha_data), [](float v) { return v == 7.0f; }));
}

}  // namespace
}  // namespace fp4moe
