// One test per validation rule of the GEMM entry points: the call throws
// InvalidArgument naming the argument, and no buffer changes (the output,
// or the input an aliasing output points into).
// Host buffers stand in for device memory: every check runs before any CUDA
// call, so a missing check surfaces as a CudaError instead.
#include <gtest/gtest.h>

#include <functional>
#include <utility>

#include "fp4moe/error.hpp"
#include "fp4moe/gemm.hpp"
#include "support/refusal_cases.hpp"

namespace fp4moe {
namespace {

/// A valid dense NVFP4 problem M=4, N=8, K=64 in host memory.
struct GemmSetup {
  alignas(16) std::uint8_t a_data[4 * 32];
  alignas(16) std::uint8_t b_data[8 * 32];
  alignas(16) std::uint8_t a_scales[2048];
  alignas(16) std::uint8_t b_scales[2048];
  alignas(16) float ga[4] = {1, 1, 1, 1};
  alignas(16) float gb[4] = {1, 1, 1, 1};
  alignas(16) float out[4 * 8 * 4];
  alignas(16) std::int32_t aux[512] = {};
  const std::int32_t* indices = aux;  ///< m_indices or masked_m of the grouped GEMMs
  Fp4Tensor a, b;
  MatrixView d;
  test::HostBuffers buffers;
  GemmSetup() {
    std::fill(std::begin(out), std::end(out), 7.0f);
    buffers.fill_and_keep(a_data, sizeof a_data);
    buffers.fill_and_keep(b_data, sizeof b_data);
    buffers.fill_and_keep(a_scales, sizeof a_scales);
    buffers.fill_and_keep(b_scales, sizeof b_scales);
    for (const auto& [p, n] : {std::pair<const void*, std::size_t>{ga, sizeof ga}, {gb, sizeof gb}, {out, sizeof out}, {aux, sizeof aux}})
      buffers.keep(p, n);
    a.data = a_data;
    a.scales = a_scales;
    a.global_scale = ga;
    a.scale_layout = ScaleLayout::kTiled128x4;
    a.rows = 4;
    a.cols = 64;
    b = a;
    b.data = b_data;
    b.scales = b_scales;
    b.global_scale = gb;
    b.rows = 8;
    d = MatrixView{out, DType::kFP32, 4, 8};
  }
  const std::int32_t* misaligned_aux() const {
    return reinterpret_cast<const std::int32_t*>(reinterpret_cast<const char*>(aux) + 2);
  }
  GemmSetup(const GemmSetup&) = delete;  // its views point into itself
  GemmSetup& operator=(const GemmSetup&) = delete;
  /// No byte of any buffer changed: the output, or an input it aliases.
  bool untouched() const { return buffers.unchanged(); }
};

struct Rule {
  const char* name;
  std::function<void(GemmSetup&)> breaks;
  const char* argument;
};

void expect_refused(GemmSetup& s, const Rule& r, const std::function<void(GemmSetup&)>& call) {
  test::expect_rule_refused(s, r, call);
}

const Rule kDenseRules[] = {
    {"null a.data", [](GemmSetup& s) { s.a.data = nullptr; }, "a.data"},
    {"null b.scales", [](GemmSetup& s) { s.b.scales = nullptr; }, "b.scales"},
    {"formats differ", [](GemmSetup& s) { s.b.format = Fp4Format::kMXFP4; s.b.global_scale = nullptr; }, "b.format"},
    {"a row-major scales", [](GemmSetup& s) { s.a.scale_layout = ScaleLayout::kRowMajor; }, "a.scale_layout"},
    {"b row-major scales", [](GemmSetup& s) { s.b.scale_layout = ScaleLayout::kRowMajor; }, "b.scale_layout"},
    {"K differs", [](GemmSetup& s) { s.b.cols = 32; }, "b.cols"},
    {"K not multiple of 32", [](GemmSetup& s) { s.a.cols = s.b.cols = 48; }, "a.cols"},
    {"K off block", [](GemmSetup& s) { s.a.cols = s.b.cols = 40; }, "a.cols"},
    {"misaligned a.data", [](GemmSetup& s) { s.a.data = s.a_data + 4; }, "a.data"},
    {"misaligned a.scales", [](GemmSetup& s) { s.a.scales = s.a_scales + 8; }, "a.scales"},
    {"misaligned b.scales", [](GemmSetup& s) { s.b.scales = s.b_scales + 1; }, "b.scales"},
    {"nvfp4 without global", [](GemmSetup& s) { s.a.global_scale = nullptr; }, "a.global_scale"},
    {"rows past 32 bits", [](GemmSetup& s) { s.a.rows = s.d.rows = std::int64_t(1) << 31; }, "a"},
    {"b rows past 32 bits", [](GemmSetup& s) { s.b.rows = std::int64_t(1) << 31; }, "b"},
    // No rows, so rows*cols stays below 2^40 and only K is too wide.
    {"K past 32 bits", [](GemmSetup& s) { s.a.rows = 0; s.a.cols = s.b.cols = std::int64_t(1) << 31; }, "a.cols"},
    {"a grouped", [](GemmSetup& s) { s.a.groups = 2; }, "a.groups"},
    {"b grouped", [](GemmSetup& s) { s.b.groups = 2; }, "b.groups"},
    {"null d", [](GemmSetup& s) { s.d.data = nullptr; }, "d.data"},
    {"d dtype", [](GemmSetup& s) { s.d.dtype = DType::kI32; }, "d.dtype"},
    {"d rows", [](GemmSetup& s) { s.d.rows = 3; }, "d.rows"},
    {"d cols", [](GemmSetup& s) { s.d.cols = 9; }, "d.cols"},
    {"d col stride", [](GemmSetup& s) { s.d.col_stride = 2; }, "d.col_stride"},
    {"d row stride", [](GemmSetup& s) { s.d.row_stride = 4; }, "d.row_stride"},
    {"d misaligned", [](GemmSetup& s) { s.d.data = reinterpret_cast<char*>(s.out) + 2; }, "d.data"},
    {"d overlaps a", [](GemmSetup& s) { s.d.data = s.a_data; s.d.dtype = DType::kBF16; }, "d.data"},
    {"d overlaps b scales", [](GemmSetup& s) { s.d.data = s.b_scales; }, "d.data"},
    {"a prepacked", [](GemmSetup& s) { s.a.prepacked = true; }, "a.prepacked"},
};

class DenseRule : public ::testing::TestWithParam<Rule> {};
void PrintTo(const Rule& r, std::ostream* os) { *os << r.name; }

TEST_P(DenseRule, RefusedBeforeAnyLaunch) {
  GemmSetup s;
  expect_refused(s, GetParam(), [](GemmSetup& g) { fp4_gemm_nt(g.a, g.b, g.d, nullptr); });
}

INSTANTIATE_TEST_SUITE_P(Rules, DenseRule, ::testing::ValuesIn(kDenseRules), [](const auto& info) {
  std::string n = info.param.name;
  for (char& c : n) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

using TacticCall = std::function<void(GemmSetup&, const GemmOptions&)>;

/// The call (fp4_gemm_nt by default) with tactic t forced is refused naming
/// options.tactic, with `word` in the message, and writes nothing.
void expect_tactic_refused(GemmSetup& s, const GemmTactic& t, const std::string& word,
                           const TacticCall& call = [](GemmSetup& g, const GemmOptions& o) {
                             fp4_gemm_nt(g.a, g.b, g.d, nullptr, o);
                           }) {
  GemmOptions opt;
  opt.tactic = &t;
  try {
    call(s, opt);
    ADD_FAILURE() << "accepted " << t.name();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "options.tactic") << e.what();
    EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
  EXPECT_TRUE(s.untouched());
}

TEST(GemmRules, UncompiledTacticOverrideIsRefused) {
  GemmSetup s;
  GemmTactic t;
  t.swap_ab = true;
  t.block_n = 24;  // not compiled
  t.block_k = 256;
  t.stages = 3;
  expect_tactic_refused(s, t, "compiled");
}

TEST(GemmRules, FixedSplitOnThe128x256TileIsRefused) {
  GemmSetup s;
  GemmTactic t;  // the two-CTA 128 x 256 tile: stream-K, but no fixed split
  t.block_n = 256;
  t.block_k = 128;
  t.stages = 3;
  t.cluster = 2;
  t.split_k = 2;
  expect_tactic_refused(s, t, "no fixed split");
}

TEST(GemmRules, PrepackedWeightsRefuseTheFp8Route) {
  GemmSetup s;
  s.a.format = s.b.format = Fp4Format::kMXFP4;
  s.a.global_scale = s.b.global_scale = nullptr;
  s.b.prepacked = true;
  GemmTactic t;
  t.block_n = 128;
  t.block_k = 128;
  t.stages = 8;
  t.fp8 = true;
  expect_tactic_refused(s, t, "prepacked");
}

/// The CUDA-core route's tile (dp4a bn8 bk256 st4).
GemmTactic dp4a_tactic(int split_k = 1) {
  GemmTactic t;
  t.swap_ab = true;
  t.block_n = 8;
  t.block_k = 256;
  t.stages = 4;
  t.split_k = split_k;
  return t;
}

TEST(GemmRules, PrepackedWeightsRefuseTheCudaCoreRoute) {
  GemmSetup s;  // NVFP4
  s.b.prepacked = true;
  expect_tactic_refused(s, dp4a_tactic(), "prepacked");  // (it reads the standard bit order)
}

TEST(GemmRules, SplitOfTheCudaCoreRouteIsRefused) {
  GemmSetup s;
  expect_tactic_refused(s, dp4a_tactic(2), "split");
}

/// The 16-token swap-AB tile (256-K stages), on stream-K.
GemmTactic stream_k_tactic() {
  GemmTactic t;
  t.swap_ab = true;
  t.block_n = 16;
  t.block_k = 256;
  t.stages = 4;
  t.split_k = 0;
  return t;
}

TEST(GemmRules, StreamKNeedsTwoKBlocksPerTile) {
  GemmSetup s;  // K = 64: one 256-K block
  expect_tactic_refused(s, stream_k_tactic(), "needs at least 2");
}

// The masked layout's tile count is known only on the device.
TEST(GemmRules, StreamKIsRefusedOnTheMaskedLayout) {
  GemmSetup s;
  s.a.groups = s.b.groups = s.d.groups = 2;
  s.a.rows = s.d.rows = 2;
  expect_tactic_refused(s, stream_k_tactic(), "masked", [](GemmSetup& g, const GemmOptions& o) {
    m_grouped_fp4_gemm_nt_masked(g.a, g.b, g.d, g.indices, 2, nullptr, o);
  });
}

TEST(GemmRules, MoeTopKHintIsRefusedOutsideMoeFc2) {
  GemmSetup s;
  GemmOptions opt;
  opt.moe_top_k = 8;
  try {
    fp4_gemm_nt(s.a, s.b, s.d, nullptr, opt);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "options.moe_top_k") << e.what();
  }
  EXPECT_TRUE(s.untouched());
}

TEST(GemmRules, ContiguousRules) {
  const Rule rules[] = {
      {"a grouped", [](GemmSetup& s) { s.a.groups = 2; }, "a.groups"},
      {"too many experts", [](GemmSetup& s) { s.b.groups = 1025; }, "b.groups"},
      {"null m_indices", [](GemmSetup& s) { s.indices = nullptr; }, "m_indices"},
      {"misaligned m_indices", [](GemmSetup& s) { s.indices = s.misaligned_aux(); }, "m_indices"},
  };
  for (const Rule& r : rules) {
    GemmSetup s;
    s.b.groups = 2;
    expect_refused(s, r, [](GemmSetup& g) { m_grouped_fp4_gemm_nt_contiguous(g.a, g.b, g.d, g.indices, nullptr); });
  }
}

TEST(GemmRules, MaskedRules) {
  const Rule rules[] = {
      {"groups differ", [](GemmSetup& s) { s.b.groups = 3; }, "a.groups"},
      {"too many groups", [](GemmSetup& s) { s.a.groups = s.b.groups = s.d.groups = 1025; }, "b.groups"},
      {"d groups", [](GemmSetup& s) { s.d.groups = 1; }, "d.groups"},
      {"d group stride", [](GemmSetup& s) { s.d.group_stride = 8; }, "d.group_stride"},
      {"null masked_m", [](GemmSetup& s) { s.indices = nullptr; }, "masked_m"},
      {"misaligned masked_m", [](GemmSetup& s) { s.indices = s.misaligned_aux(); }, "masked_m"},
  };
  for (const Rule& r : rules) {
    GemmSetup s;
    s.a.groups = s.b.groups = s.d.groups = 2;
    s.d.rows = 2;
    s.a.rows = 2;
    expect_refused(s, r, [](GemmSetup& g) { m_grouped_fp4_gemm_nt_masked(g.a, g.b, g.d, g.indices, 2, nullptr); });
  }
  GemmSetup s;
  s.a.groups = s.b.groups = s.d.groups = 2;
  s.d.rows = s.a.rows = 2;
  try {
    m_grouped_fp4_gemm_nt_masked(s.a, s.b, s.d, s.aux, -1, nullptr);
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "expected_m");
  }
  EXPECT_TRUE(s.untouched());
}

}  // namespace
}  // namespace fp4moe
