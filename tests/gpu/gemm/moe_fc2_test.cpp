// moe_dense_fc2 against the float64 reference, and the routing helper against
// a host computation: every format × compiled tactic (and the heuristic) ×
// output dtype, across E, W, M and N of the issue, dense and top-k-sparse
// alpha, token-major and expert-major alpha, fresh random data, poisoned
// outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "api/gemm_dispatch.hpp"
#include "common/device_info.hpp"
#include "fp4moe/moe.hpp"
#include "fp4moe/quantize.hpp"
#include "gemm/gemm_test_util.hpp"
#include "kernels/moe/block_experts.hpp"
#include "kernels/sm90/gemm_registry.hpp"
#include "kernels/sm90/stream_k.hpp"
#include "reference/reference_gemm.hpp"
#include "support/gather_shares_reference.hpp"

namespace fp4moe {
namespace {

using test::Fp4Content;

enum class AlphaKind { kDense, kTopK };

struct Fc2Case {
  Fp4Format format = Fp4Format::kNVFP4;
  int experts = 4, width = 128, m = 1, n = 256;
  DType out = DType::kFP32;
  Fp4Content content = Fp4Content::kRandom;
  AlphaKind alpha = AlphaKind::kDense;
  bool expert_major = false;  ///< alpha stored [E, M] (viewed with strides)
  int idle_tokens = -1;  ///< top-k: the first this many tokens pick no expert (-1: 20 where M >= 40, else none)
  const GemmTactic* tactic = nullptr;
  int repeats = 1;  ///< runs of the same call; every repeat must be bit-identical to the first
  bool prepack_b = false;  ///< B goes through prepack_weights (in place on the device) first
  cudaStream_t stream = nullptr;
  std::vector<float>* alpha_seen = nullptr;  ///< receives alpha [M, E] as drawn (row-major)
  std::string describe() const {
    std::ostringstream o;
    o << format_name(format) << " E=" << experts << " W=" << width << " M=" << m << " N=" << n
      << " out=" << dtype_name(out) << (content == Fp4Content::kIntegerValued ? " int" : "")
      << (alpha == AlphaKind::kTopK ? " topk" : " dense") << (expert_major ? " expert-major" : " token-major")
      << " tactic=" << (tactic ? tactic->name() : "heuristic") << (prepack_b ? " prepacked" : "");
    return o.str();
  }
};

/// The tokens that pick no expert under top-k alpha (their rows must come out 0).
int idle_tokens(const Fc2Case& c) {
  if (c.alpha != AlphaKind::kTopK) return 0;
  return c.idle_tokens >= 0 ? c.idle_tokens : (c.m < 40 ? 0 : 20);
}

/// alpha [M, E] (row-major, host). Top-k: each token picks up to 8 distinct
/// experts (the first tokens pick none, so whole token tiles skip every
/// expert); integer content keeps alpha integer so sums stay exact.
std::vector<float> make_alpha(const Fc2Case& c, test::Rng& rng) {
  std::vector<float> al(static_cast<std::size_t>(c.m) * c.experts, 0.0f);
  auto value = [&] {
    return c.content == Fp4Content::kIntegerValued ? float(rng.integer(1, 2)) : rng.uniform(-1.5f, 1.5f);
  };
  for (int m = 0; m < c.m; ++m) {
    if (c.alpha == AlphaKind::kDense) {
      for (int e = 0; e < c.experts; ++e)
        al[static_cast<std::size_t>(m) * c.experts + e] = rng.integer(0, 7) == 0 ? 0.0f : value();
    } else if (m >= idle_tokens(c)) {
      const int k = std::min(8, c.experts);
      for (int j = 0; j < k; ++j) al[static_cast<std::size_t>(m) * c.experts + rng.integer(0, c.experts - 1)] = value();
    }
  }
  return al;
}

test::GemmResult run_fc2(const Fc2Case& c, test::Rng& rng) {
  const int k = c.experts * c.width;
  test::HostFp4 a(c.format, ScaleLayout::kTiled128x4, c.m, k), b(c.format, ScaleLayout::kTiled128x4, c.n, k);
  test::fill_random(a, rng, c.content);
  test::fill_random(b, rng, c.content);
  const std::vector<float> al = make_alpha(c, rng);
  if (c.alpha_seen) *c.alpha_seen = al;
  // Host and device alpha with the same strides.
  std::vector<float> stored(al.size());
  MatrixView host_alpha{stored.data(), DType::kFP32, c.m, c.experts};
  if (c.expert_major) {
    host_alpha.row_stride = 1;
    host_alpha.col_stride = c.m;
  }
  for (int m = 0; m < c.m; ++m)
    for (int e = 0; e < c.experts; ++e)
      stored[static_cast<std::size_t>(m * host_alpha.ld() + e * host_alpha.col_stride)] = al[static_cast<std::size_t>(m) * c.experts + e];
  const std::vector<double> ref = reference::moe_dense_fc2(a.t, b.t, c.experts, host_alpha);

  test::DeviceFp4 da(a), db(b);
  da.upload(a);
  db.upload(b);
  if (c.prepack_b) db.t = prepack_weights(db.t, db.t.data, nullptr);
  test::DeviceBuffer<float> dalpha(stored.size());
  dalpha.upload(stored);
  MatrixView dev_alpha = host_alpha;
  dev_alpha.data = dalpha.get();
  const std::int64_t ld = c.n + 8;
  test::DeviceBuffer<std::uint8_t> dd(static_cast<std::size_t>(c.m * ld * dtype_size(c.out)));
  dd.fill_bytes(0xff);
  GemmOptions opt;
  opt.tactic = c.tactic;
  moe_dense_fc2(da.t, db.t, dev_alpha, c.width, MatrixView{dd.get(), c.out, c.m, c.n, ld}, c.stream, opt);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << c.describe();
  const std::vector<std::uint8_t> first = dd.download();
  for (int rep = 1; rep < c.repeats; ++rep) {
    dd.fill_bytes(0xff);
    moe_dense_fc2(da.t, db.t, dev_alpha, c.width, MatrixView{dd.get(), c.out, c.m, c.n, ld}, c.stream, opt);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << c.describe();
    EXPECT_TRUE(dd.download() == first) << c.describe() << ": repeat " << rep << " differs from the first";
  }
  test::OutputCheck check;
  check.out = c.out;
  check.content = c.content;
  check.rows = c.m;
  check.cols = c.n;
  check.ld = ld;
  // A token that picked nothing has the row 0, exactly (not just close).
  const int idle = idle_tokens(c);
  check.must_be_zero = [idle](std::int64_t row) { return row < idle; };
  return test::compare_output(ref, first, check);
}

class MoeFc2AllTactics : public ::testing::TestWithParam<Fp4Format> {};

TEST_P(MoeFc2AllTactics, MatchesReference) {
  FP4MOE_REQUIRE_GPU();
  const Fp4Format format = GetParam();
  test::Rng rng;
  // The heuristic, then every compiled tile with split_k 1, 2, 4 and 8
  // (over whole experts; cases with fewer experts than slices run with
  // fewer) and stream-K (split_k 0).
  // Under compute-sanitizer (past 520 s a format under racecheck, stop 68)
  // the gather tiles are left to MoeFc2/GatherMultiStagePassesSmall, which
  // runs each of them apart, and integer-valued data and the largest shapes,
  // which check numbers, not code paths, are left out.
  const bool sanitizer = test::under_sanitizer();
  std::vector<GemmTactic> tactics;
  for (const auto& e : kernels::kernel_registry())
    if (e.format == format && e.layout == kernels::Layout::kMoeDense && !(sanitizer && e.tactic.moe_gather))
      for (int split : {1, 2, 4, 8, 0}) {
        if (split > e.max_split_k || (split == 0 && !e.stream_k)) continue;
        GemmTactic t = e.tactic;
        t.split_k = split;
        tactics.push_back(t);
      }
  ASSERT_FALSE(tactics.empty());
  std::vector<const GemmTactic*> choices = {nullptr};
  for (const GemmTactic& t : tactics) choices.push_back(&t);
  // (E, W, M, N): the values, combined so each case's reference
  // stays a few hundred million multiply-adds.
  struct Shape {
    int e, w, m, n;
  };
  const Shape shapes[] = {{1, 128, 1, 256},   {4, 256, 31, 256},  {8, 128, 127, 256}, {256, 128, 7, 256},
                          {2, 2048, 384, 256}, {4, 128, 256, 7168}, {256, 128, 1, 7168}, {8, 2048, 64, 256}};
  int ran = 0;
  for (const GemmTactic* t : choices) {
    for (DType out : {DType::kFP32, DType::kBF16}) {
      for (Fp4Content content : {Fp4Content::kRandom, Fp4Content::kIntegerValued}) {
        if (content == Fp4Content::kIntegerValued && (out == DType::kBF16 || sanitizer)) continue;
        for (AlphaKind kind : {AlphaKind::kDense, AlphaKind::kTopK}) {
          // The next shape whose W the tactic's stages divide (a stage
          // holds one expert's columns).
          // And whose M it holds (the gather tiles' token limit).
          auto fits = [&](const Shape& sh) {
            // (Under a sanitizer: not the N = 7168 and M = 384 shapes.)
            if (sanitizer && (sh.n > 256 || sh.m > 256)) return false;
            if (!t) return true;
            for (const auto& e : kernels::kernel_registry())
              if (e.format == format && e.layout == kernels::Layout::kMoeDense && e.tactic.moe_gather == t->moe_gather &&
                  e.tactic.swap_ab == t->swap_ab && e.tactic.block_n == t->block_n && e.tactic.block_k == t->block_k &&
                  e.tactic.stages == t->stages && e.tactic.fp8 == t->fp8)
                return sh.w % t->block_k == 0 && (e.max_m == 0 || sh.m <= e.max_m);
            return false;
          };
          int pick = ran % 8;
          while (!fits(shapes[pick])) pick = (pick + 1) % 8;
          const Shape& s = shapes[pick];
          Fc2Case c;
          c.format = format;
          c.experts = s.e;
          c.width = s.w;
          c.m = s.m;
          c.n = s.n;
          c.out = out;
          c.content = content;
          c.alpha = kind;
          c.expert_major = ran % 3 == 1;
          GemmTactic fitted;
          if (t) {  // no more slices than experts
            fitted = *t;
            fitted.split_k = std::min(fitted.split_k, s.e);
            while (fitted.split_k & (fitted.split_k - 1)) --fitted.split_k;  // keep a power of two
            if (fitted.split_k == 0 && s.e < 2) fitted.split_k = 1;          // stream-K needs two experts
          }
          c.tactic = t ? &fitted : nullptr;
          SCOPED_TRACE(c.describe());
          test::sanitizer_progress(c.describe());
          test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
          ++ran;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, MoeFc2AllTactics, ::testing::Values(Fp4Format::kNVFP4, Fp4Format::kMXFP4),
                         [](const auto& info) { return std::string(format_name(info.param)); });

/// fn(format, entry) for every compiled MoE-dense kernel of both formats
/// that keep(entry) accepts.
template <class Keep, class Fn>
void for_each_moe_dense_kernel(Keep keep, Fn fn) {
  for (Fp4Format format : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (const auto& e : kernels::kernel_registry())
      if (e.format == format && e.layout == kernels::Layout::kMoeDense && keep(e)) fn(format, e);
}

// Weights prepacked (prepack_weights): every tile of both formulations
// (the gathered one for routed alpha), split_k 1 and 2, against the float64
// reference.
TEST(MoeFc2, PrepackedWeightsEveryTile) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  // (The FP8 route reads the standard bit order only: GemmRules.PrepackedWeightsRefuseTheFp8Route.)
  for_each_moe_dense_kernel([](const auto& e) { return !e.tactic.fp8; }, [&](Fp4Format format, const auto& e) {
    ASSERT_NE(e.launch_prepacked, nullptr) << e.tactic.name();
    for (int split : {1, 2}) {
      if (split > e.max_split_k) continue;
      GemmTactic t = e.tactic;
      t.split_k = split;
      Fc2Case c;
      c.format = format;
      c.experts = 8;
      c.width = 256;
      // (A tile that holds fewer tokens, the 96-token one: one short of its limit.)
      c.m = e.tactic.moe_gather ? 40 : split == 1 ? 31 : e.max_m > 0 ? e.max_m - 1 : 127;
      c.n = 256;
      c.alpha = e.tactic.moe_gather || split == 2 ? AlphaKind::kTopK : AlphaKind::kDense;
      c.content = split == 1 ? Fp4Content::kIntegerValued : Fp4Content::kRandom;
      c.tactic = &t;
      c.prepack_b = true;
      SCOPED_TRACE(c.describe());
      test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
      ++ran;
    }
  });
  EXPECT_GE(ran, 2 * 10);
}

/// A case with routed (top-k) alpha on a fixed tactic, run three times
/// (every repeat bit-identical to the first).
Fc2Case routed_case(Fp4Format format, const GemmTactic& t, int experts, int width, int m, int n, bool expert_major,
                    DType out) {
  Fc2Case c;
  c.format = format;
  c.experts = experts;
  c.width = width;
  c.m = m;
  c.n = n;
  c.out = out;
  c.alpha = AlphaKind::kTopK;
  c.expert_major = expert_major;
  c.tactic = &t;
  c.repeats = 3;
  return c;
}

/// A routed case's shape (the gather tiles' share tests); the width is
/// rounded up to the tactic's K block.
struct RoutedShape {
  int experts, width, m, n;
  bool expert_major;
  DType out;
};
Fc2Case routed_case(Fp4Format format, const GemmTactic& t, const RoutedShape& k) {
  return routed_case(format, t, k.experts, k.width % t.block_k == 0 ? k.width : t.block_k, k.m, k.n, k.expert_major,
                     k.out);
}

// Stream-K over several token tiles with routed alpha shares the work by the
// experts each token tile uses (kernels/sm90/stream_k.hpp, weighted shares):
// every stream-K tile on shapes where those weights apply (asserted), with a
// short last token tile (a quarter tile, and one token), token-major and
// expert-major alpha, an expert count that is not a multiple of 32; against
// the reference, repeats bit-identical.
TEST(MoeFc2, WeightedStreamKMatchesReferenceAndRepeats) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const std::int64_t sms = detail::current_device_sm_count();
  int ran = 0;
  for (const auto& e : kernels::kernel_registry()) {
    // Tiles over several token tiles only (not the gather tiles; not the
    // 96-token tile, which serves one).
    if (e.layout != kernels::Layout::kMoeDense || e.max_split_k == 1 || e.tactic.moe_gather || e.max_m > 0) continue;
    GemmTactic t = e.tactic;
    t.split_k = 0;
    const int bt = t.swap_ab ? t.block_n : e.block_m, bw = t.swap_ab ? e.block_m : t.block_n;
    struct Case {
      int experts, last_rows, n;
      bool expert_major;
      DType out;
    };
    const Case cases[] = {{64, std::max(1, bt / 4), 1024, false, DType::kFP32},
                          {64, std::max(1, bt / 4), 1024, false, DType::kBF16},
                          {80, 1, 512, true, DType::kFP32}};
    for (const Case& k : cases) {
      // (>= 40 rows: the first 20 tokens pick nothing.) Stages hold whole experts.
      Fc2Case c = routed_case(e.format, t, k.experts, std::max(128, t.block_k),
                              2 * bt + k.last_rows + (bt < 40 ? 3 * bt : 0), k.n, k.expert_major, k.out);
      SCOPED_TRACE(c.describe());
      const std::int64_t tiles = std::int64_t((c.m + bt - 1) / bt) * ((c.n + bw - 1) / bw);
      const std::int64_t grid = kernels::moe_stream_k_grid(tiles, c.experts, sms * e.ctas_per_sm);
      ASSERT_TRUE((kernels::StreamK{tiles, c.experts, static_cast<std::int32_t>(grid)}.weights_apply()))
          << "the shape must take the weighted path";
      test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << "no MoE-dense stream-K tile over several token tiles";
}

// The 8-token gather tiles' stream-K shares by cost (kernels/sm90/
// stream_k.hpp, GatherShares), where routing leaves at least an eighth of
// the experts without a token: every such kernel, on shapes where the cost
// shares apply (asserted from the drawn alpha, with the launch's grid): one
// stage a pass and eight (W = 2048), a ragged N, expert-major alpha and
// BF16 out; against the reference, repeats bit-identical.
TEST(MoeFc2, GatherCostSharesMatchReferenceAndRepeat) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const std::int64_t sms = detail::current_device_sm_count();
  int ran = 0;
  for (const auto& e : kernels::kernel_registry()) {
    if (!e.tactic.moe_gather || !kernels::gather_cost_shares(e.tactic.block_n)) continue;
    GemmTactic t = e.tactic;
    t.split_k = 0;
    const RoutedShape cases[] = {{256, 128, 32, 1024, false, DType::kFP32},
                                 {64, 256, 5, 7168 + 64, true, DType::kBF16},
                                 {64, 2048, 8, 512, false, DType::kFP32}};
    for (const RoutedShape& k : cases) {
      Fc2Case c = routed_case(e.format, t, k);
      std::vector<float> alpha;
      c.alpha_seen = &alpha;
      SCOPED_TRACE(c.describe());
      test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
      // The shares the kernel took: by cost (the test's premise).
      std::vector<std::int32_t> cost(static_cast<std::size_t>(c.experts));
      for (int x = 0; x < c.experts; ++x) {
        int count = 0;
        for (int m = 0; m < c.m; ++m) count += alpha[static_cast<std::size_t>(m) * c.experts + x] != 0.0f;
        cost[static_cast<std::size_t>(x)] = test::gather_unit_cost(count, t.block_n);
      }
      const std::int64_t tiles = (c.n + e.block_m - 1) / e.block_m;
      const std::int64_t resident = e.resident_ctas ? e.resident_ctas() : sms * e.ctas_per_sm;
      const std::int64_t grid = std::min<std::int64_t>(resident, tiles * c.experts);
      // (The two-CTA tiles weigh their shares by placement: dispatch's lead.)
      const std::int32_t lead = e.ctas_per_sm == 2 ? kernels::gather_rank_lead(c.m) : 0;
      EXPECT_NE(test::reference_gather_shares(cost, tiles, static_cast<std::int32_t>(grid), 0, lead).tile_cost, 0)
          << "the shape must take the cost shares";
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << "no gather kernel shares by cost";
}

// The two-CTA 8-token gather tiles' shares by placement (a lead from
// kGatherRankLeadFromTokens tokens: kernels/sm90/stream_k.hpp): which CTA
// takes which share varies with the placement, the shares and their slots'
// order do not, so every repeat is bit-identical. By cost (an M = 64 draw
// with enough experts idle, W = 128) or weighted equal (M = 128), against
// the reference.
TEST(MoeFc2, GatherPlacementSharesMatchReferenceAndRepeat) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (const auto& e : kernels::kernel_registry()) {
    if (!e.tactic.moe_gather || !kernels::gather_cost_shares(e.tactic.block_n) || e.ctas_per_sm != 2) continue;
    GemmTactic t = e.tactic;
    t.split_k = 0;
    const RoutedShape cases[] = {{256, 128, 64, 1024, false, DType::kFP32},
                                 {256, 256, 128, 7168 + 64, true, DType::kBF16}};
    for (const RoutedShape& k : cases) {
      if (k.m > e.max_m) continue;
      ASSERT_GT(kernels::gather_rank_lead(k.m), 0) << "the case must take shares by placement";
      Fc2Case c = routed_case(e.format, t, k);
      SCOPED_TRACE(c.describe());
      test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << "no gather kernel shares by placement";
}

// Passes of several stages (W > BK: the producer interleaves a round of
// passes' stages, one per consumer warpgroup, and pads a tile's last round
// with passes without data) on calls small enough for compute-sanitizer
// racecheck (racecheck of GatherPassesAndTokenLimit, which covers them on
// larger shapes, never finished in 280 s as one test; this one took from seconds to
// minutes, docs/PERF.md stop 28): each gather kernel, W = 2048, dense
// alpha over three experts (so tiles of 3, 6 or 9 passes: last rounds of
// every length), whole tiles and stream-K. One test per kernel, named by
// its format and tactic, so a racecheck can take a few kernels at a time:
// all of them in one process outgrew a 500 s device call (docs/PERF.md
// stop 66).
class GatherMultiStagePassesSmall : public ::testing::TestWithParam<int> {};

/// Registry indices of the gather kernels.
std::vector<int> gather_kernel_indices() {
  std::vector<int> out;
  const auto& reg = kernels::kernel_registry();
  for (int i = 0; i < static_cast<int>(reg.size()); ++i)
    if (reg[i].tactic.moe_gather) out.push_back(i);
  return out;
}

/// A gather kernel's test name: its format and tactic.
std::string gather_kernel_name(const ::testing::TestParamInfo<int>& info) {
  const auto& e = kernels::kernel_registry()[static_cast<std::size_t>(info.param)];
  std::string name = std::string(format_name(e.format)) + "_" + e.tactic.name();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

TEST_P(GatherMultiStagePassesSmall, MatchesReferenceAndRepeats) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const auto& e = kernels::kernel_registry()[static_cast<std::size_t>(GetParam())];
  Fc2Case c;
  c.format = e.format;
  c.experts = 3;
  c.width = 2048;
  c.m = std::min(20, e.max_m);
  c.n = 64;
  c.repeats = 2;
  for (int split : {1, 0}) {
    GemmTactic t = e.tactic;
    t.split_k = split;
    c.tactic = &t;
    SCOPED_TRACE(c.describe());
    test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
  }
}

INSTANTIATE_TEST_SUITE_P(MoeFc2, GatherMultiStagePassesSmall, ::testing::ValuesIn(gather_kernel_indices()),
                         gather_kernel_name);

// The gathered formulation on the shapes that stress it: experts with more
// tokens than a pass holds (several passes, dense alpha), expert-major
// alpha, W = 2048, BF16 out, and the most tokens its kernel holds; whole
// tiles, 2 expert slices and stream-K (partial accumulators); repeats
// bit-identical (passes add into the shared accumulator in order, slices
// in slot order). One test per gather kernel, so compute-sanitizer can take
// them a few at a time (all in one process never finished under racecheck).
class GatherPassesAndTokenLimit : public ::testing::TestWithParam<int> {};

TEST_P(GatherPassesAndTokenLimit, MatchesReferenceAndRepeats) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const auto& e = kernels::kernel_registry()[static_cast<std::size_t>(GetParam())];
  struct Shape {
    int experts, width, m, n;
    AlphaKind alpha;
    bool expert_major;
    DType out;
  };
  const Shape shapes[] = {{8, 256, 200, 512, AlphaKind::kDense, false, DType::kFP32},
                          {3, 2048, 70, 320, AlphaKind::kTopK, true, DType::kBF16},
                          {256, 128, 384, 256, AlphaKind::kTopK, false, DType::kFP32},
                          {4, 128, e.max_m, 128, AlphaKind::kDense, true, DType::kFP32}};
  for (const Shape& sh : shapes) {
    Fc2Case c;
    c.format = e.format;
    c.experts = sh.experts;
    c.width = sh.width % e.tactic.block_k == 0 ? sh.width : e.tactic.block_k;  // stages hold whole experts
    c.m = std::min(sh.m, e.max_m);  // a two-CTA tile holds fewer tokens
    c.n = sh.n;
    c.alpha = sh.alpha;
    c.expert_major = sh.expert_major;
    c.out = sh.out;
    c.repeats = test::under_sanitizer() ? 1 : 3;
    for (int split : {1, 2, 0}) {
      GemmTactic t = e.tactic;
      t.split_k = split;
      c.tactic = &t;
      SCOPED_TRACE(c.describe());
      test::sanitizer_progress(c.describe());
      test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(MoeFc2, GatherPassesAndTokenLimit, ::testing::ValuesIn(gather_kernel_indices()),
                         gather_kernel_name);

// MXFP4's FP8 route applies alpha with every 32-K block's scale factors, so
// the producer writes the expert's alpha into every stage of it (the BF16
// route reads it on the expert's last stage only): experts of four stages
// (W = 512), two token tiles (the second short), dense and top-k alpha,
// whole tiles, split over experts and stream-K, integer-valued data bit
// for bit; small enough for compute-sanitizer racecheck.
TEST(MoeFc2, Fp8RouteAlphaOnEveryStage) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (const auto& e : kernels::kernel_registry()) {
    if (!e.tactic.fp8 || e.layout != kernels::Layout::kMoeDense) continue;
    for (int split : {1, 2, 0}) {
      GemmTactic t = e.tactic;
      t.split_k = split;
      Fc2Case c;
      c.format = e.format;
      c.experts = 4;
      c.width = 512;
      c.m = 130;
      c.n = 256;
      c.alpha = split == 1 ? AlphaKind::kDense : AlphaKind::kTopK;
      c.content = split == 2 ? Fp4Content::kIntegerValued : Fp4Content::kRandom;
      c.expert_major = split == 0;
      c.repeats = 2;
      c.tactic = &t;
      SCOPED_TRACE(c.describe());
      test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
      ++ran;
    }
  }
  EXPECT_EQ(ran, 3) << "one FP8-route MoE-dense tile (MXFP4)";
}

// On a fresh stream, a gathered call on stream-K right after a small
// split-K call: its GEMM needs more split-K partials than the stream's
// workspace has, and growing them must not move the tokens the gather step
// has just copied (they share a workspace no more: an illegal address in
// the benchmark at 35e65cd).
TEST(MoeFc2, GatherAfterASmallerSplitKCallOnAFreshStream) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  const kernels::KernelEntry* gather = nullptr;
  for (const auto& e : kernels::kernel_registry())
    if (e.tactic.moe_gather && e.format == Fp4Format::kNVFP4 && e.tactic.block_k == 128 && e.tactic.block_n == 16) gather = &e;
  ASSERT_NE(gather, nullptr);
  GemmTactic small = gather->tactic, big = gather->tactic;
  small.split_k = 2;
  big.split_k = 0;
  Fc2Case c;
  c.stream = stream;
  c.experts = 4;
  c.m = 8;
  c.n = 64;
  c.tactic = &small;
  test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
  c.experts = 64;
  c.m = 300;
  c.n = 1024;
  c.alpha = AlphaKind::kTopK;
  c.tactic = &big;
  test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
  test::destroy_stream(stream);
}

// Tokens whose alpha row is all 0 (top-k routing that picked nothing): the
// tiles holding only such tokens read no expert, yet their rows must be
// written as exact zeros over the poison. Every MoE-dense tile of both
// formats, with idle tokens before routed ones and with every token idle.
TEST(MoeFc2, EveryTokenTileSkippedWritesZeros) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (Fp4Format format : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    for (const auto& e : kernels::kernel_registry()) {
      if (e.format != format || e.layout != kernels::Layout::kMoeDense) continue;
      for (const bool all_idle : {false, true}) {
        // Partly idle: up to 256 idle tokens before routed ones, so every
        // token tile (8 to 128 tokens) within them skips every expert and
        // the tiles after them do not. All idle: no tile multiplies
        // anything, and the split-K / stream-K reductions still write 0.
        GemmTactic t = e.tactic;
        std::vector<int> splits = {1};
        if (all_idle) {
          splits.clear();
          if (e.max_split_k >= 2) splits.push_back(2);
          if (e.stream_k) splits.push_back(0);
          if (splits.empty()) splits.push_back(1);
        }
        for (const int split : splits) {
          t.split_k = split;
          Fc2Case c;
          c.format = format;
          c.experts = 4;
          c.width = std::max(128, e.tactic.block_k);  // stages hold whole experts
          c.m = e.max_m > 0 ? std::min(300, e.max_m) : 300;
          c.n = 256;
          c.alpha = AlphaKind::kTopK;
          c.idle_tokens = all_idle ? c.m : std::min(256, c.m - 8);
          c.out = ran % 2 ? DType::kBF16 : DType::kFP32;
          c.tactic = &t;
          SCOPED_TRACE(c.describe());
          test::sanitizer_progress(c.describe() + " idle=" + std::to_string(c.idle_tokens));
          test::expect_gemm_ok_for(c.describe() + " idle=" + std::to_string(c.idle_tokens), c.out, c.content,
                                   run_fc2(c, rng));
          ++ran;
        }
      }
    }
  }
  EXPECT_GT(ran, 8);
}

// Without a forced tactic, the tokens past the direct tile's last whole
// 128-token tile run as a call of their own where they are 1-64, or 65-96
// on the 256-K stage tiles (the 96-token tile; tuning::moe_tail_tokens),
// and there 145-192 tokens run as 96 and the rest, the second call's
// tokens starting inside a 128-row scale band (their scales copied to a
// band start first): every token's row against the reference, both halves'
// alpha and output rows (token-major and expert-major alpha), and the
// split recorded, on the 256-K and the 128-K stage tiles; on the 128-K ones
// 96 left over run with the rest.
TEST(MoeFc2, TailTokensRunOnTheirOwnTile) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  struct TailCase {
    int m, tail, tail_128k;  // the tail with 256-K and with 128-K stages
  };
  int ran = 0;
  for (Fp4Format format : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    for (const TailCase tc : {TailCase{160, 64, 32}, TailCase{192, 96, 64}, TailCase{150, 54, 22}, TailCase{300, 44, 44},
                              TailCase{129, 1, 1}, TailCase{224, 96, 0}}) {
      for (Fp4Content content : {Fp4Content::kRandom, Fp4Content::kIntegerValued}) {
        for (int width : {256, 128}) {  // 256-K and 128-K stage tiles
          Fc2Case c;
          c.format = format;
          c.experts = 8;
          c.width = width;
          c.m = tc.m;
          c.n = 256;
          c.content = content;
          c.alpha = ran % 2 ? AlphaKind::kTopK : AlphaKind::kDense;
          c.expert_major = ran % 3 == 1;
          c.out = ran % 4 == 3 && content == Fp4Content::kRandom ? DType::kBF16 : DType::kFP32;
          c.repeats = 2;
          SCOPED_TRACE(c.describe());
          test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
          const detail::PlannedTactic& ran_plan = detail::last_planned_tactic();
          EXPECT_FALSE(ran_plan.tactic.swap_ab) << c.describe();
          const int tail = c.width == 256 ? tc.tail : tc.tail_128k;
          EXPECT_EQ(ran_plan.tail_tokens, tail) << c.describe();
          if (tail > 0) {
            EXPECT_TRUE(ran_plan.tail.swap_ab) << c.describe() << ": " << ran_plan.tail.name();
            // The first call: the whole tiles, planned for their own tokens
            // (the direct tile), or 96 tokens (the 96-token swap-AB tile).
            const int head = tc.m - tail;
            EXPECT_EQ(ran_plan.head.swap_ab, head % 128 != 0) << c.describe() << ": " << ran_plan.head.name();
            if (head % 128 != 0) {
              EXPECT_EQ(ran_plan.head.block_n, head) << c.describe();
            }
          }
          ++ran;
        }
      }
    }
  }
  EXPECT_EQ(ran, 2 * 6 * 2 * 2);
}

// The split at 96 inside a CUDA graph: the copy of the second call's
// scales is one of the graph's kernels, so a replay after A changed (codes
// and scales, in the same buffers) multiplies with the new scales: it
// equals the eager call on the new data bit for bit, which it would not if
// it read the copy the warm-up call left.
TEST(MoeFc2, SplitAt96ReplaysInAGraph) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const int experts = 8, width = 256, m = 176, n = 256, k = experts * width;
  test::HostFp4 a(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, m, k), a2(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, m, k),
      b(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, n, k);
  test::fill_random(a, rng);
  test::fill_random(a2, rng);
  test::fill_random(b, rng);
  std::vector<float> alpha(static_cast<std::size_t>(m) * experts);
  for (float& v : alpha) v = rng.uniform(-1.5f, 1.5f);
  test::DeviceFp4 da(a), db(b);
  da.upload(a);
  db.upload(b);
  test::DeviceBuffer<float> dalpha(alpha.size()), dd(static_cast<std::size_t>(m) * n);
  dalpha.upload(alpha);
  auto call = [&] {
    moe_dense_fc2(da.t, db.t, MatrixView{dalpha.get(), DType::kFP32, m, experts}, width,
                  MatrixView{dd.get(), DType::kFP32, m, n}, s);
  };
  call();  // the warm-up: makes the stream's workspace
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const detail::PlannedTactic planned = detail::last_planned_tactic();
  ASSERT_EQ(planned.tail_tokens, m - 96) << planned.ran_text();
  ASSERT_EQ(planned.head.block_n, 96) << planned.ran_text();
  const std::vector<float> before = dd.download();

  const test::CapturedGraph graph(s, call);
  ASSERT_TRUE(graph.ok());
  da.upload(a2);
  dd.fill_bytes(0xff);
  ASSERT_EQ(graph.launch(s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const std::vector<float> replayed = dd.download();
  dd.fill_bytes(0xff);
  call();
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const std::vector<float> eager = dd.download();
  EXPECT_TRUE(replayed == eager) << "the replay equals the eager call on the new data, bit for bit";
  EXPECT_FALSE(eager == before) << "new data gives a new result";
  test::destroy_stream(s);
}

// The 96- and 128-token swap-AB tiles read an expert's alpha at its fold
// from the stage that ended the expert, which they release only after the
// fold (GemmConfig::kAlphaAtFold). With W = one stage every stage ends an
// expert, so every stage is held across the next one's first sub-step; with
// expert skipping (top-k alpha), tiles whose next stage is the tile's end
// fold last. Both formats, split 1, 2 and stream-K, a short token tile
// (M = 200 on the 128-token tile, 90 on the 96-token one, which holds one
// token tile), against the reference, repeats bit-identical. (A small case
// for compute-sanitizer racecheck.)
TEST(MoeFc2, WideSwapTilesFoldAlphaFromTheHeldStage) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  auto wide_swap = [](const auto& e) { return e.tactic.swap_ab && e.tactic.block_n >= 96 && !e.tactic.moe_gather; };
  for_each_moe_dense_kernel(wide_swap, [&](Fp4Format format, const auto& e) {
    for (int split : {1, 2, 0}) {
      GemmTactic t = e.tactic;
      t.split_k = split;
      Fc2Case c;
      c.format = format;
      c.experts = 8;
      c.width = t.block_k;
      c.m = e.max_m > 0 ? e.max_m - 6 : 200;
      c.n = 256;
      c.alpha = split == 2 ? AlphaKind::kTopK : AlphaKind::kDense;
      c.expert_major = split == 0;
      c.content = split == 1 ? Fp4Content::kIntegerValued : Fp4Content::kRandom;
      c.tactic = &t;
      c.repeats = 2;
      SCOPED_TRACE(c.describe());
      test::expect_gemm_ok_for(c.describe(), c.out, c.content, run_fc2(c, rng));
      ++ran;
    }
  });
  EXPECT_EQ(ran, 2 * 2 * 3);  // two tiles a format
}

TEST(MoeFc2, EmptyMWritesNothing) {
  FP4MOE_REQUIRE_GPU();
  test::HostFp4 a(Fp4Format::kMXFP4, ScaleLayout::kTiled128x4, 0, 256), b(Fp4Format::kMXFP4, ScaleLayout::kTiled128x4, 64, 256);
  test::DeviceFp4 da(a), db(b);
  test::DeviceBuffer<float> alpha(2), d(64);
  d.fill_bytes(0xff);
  Fp4Tensor empty = da.t;  // no rows, so any valid pointer will do
  empty.data = db.t.data;
  empty.scales = db.t.scales;
  moe_dense_fc2(empty, db.t, MatrixView{alpha.get(), DType::kFP32, 0, 2}, 128, MatrixView{d.get(), DType::kFP32, 0, 64},
                nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (float v : d.download()) EXPECT_TRUE(std::isnan(v));
}

// The expert counts weighted stream-K shares by: per block of tokens, the
// experts some token of the block has a non-zero alpha for; token-major and
// expert-major alpha, a short last block, an expert count that is not a
// multiple of 32.
TEST(MoeBlockExperts, MatchesHostCounts) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  for (const bool expert_major : {false, true}) {
    const int m = 150, e = 77, block = 64;
    std::vector<float> al(static_cast<std::size_t>(m) * e, 0.0f);
    for (int r = 0; r < m; ++r)
      for (int j = 0; j < 3; ++j) al[static_cast<std::size_t>(r) * e + rng.integer(0, e - 1)] = rng.uniform(0.5f, 1.0f);
    al[static_cast<std::size_t>(140) * e + 76] = -0.0f;  // -0 counts as zero, as the producer's test
    std::vector<float> stored(al.size());
    const std::int64_t sm = expert_major ? 1 : e, se = expert_major ? m : 1;
    for (int r = 0; r < m; ++r)
      for (int j = 0; j < e; ++j) stored[static_cast<std::size_t>(r * sm + j * se)] = al[static_cast<std::size_t>(r) * e + j];
    test::DeviceBuffer<float> dalpha(stored.size());
    dalpha.upload(stored);
    const int blocks = (m + block - 1) / block, slices = kernels::block_experts_slices(e);
    test::DeviceBuffer<std::int32_t> counts(static_cast<std::size_t>(blocks * slices));
    counts.fill_bytes(0xff);
    kernels::BlockExpertsParams p;
    p.alpha = dalpha.get();
    p.stride_m = sm;
    p.stride_e = se;
    p.tokens = m;
    p.experts = e;
    p.block_rows = block;
    p.counts = counts.get();
    kernels::launch_block_experts(p, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<std::int32_t> got = counts.download();
    for (int b = 0; b < blocks; ++b) {
      int want = 0;
      for (int j = 0; j < e; ++j) {
        bool used = false;
        for (int r = b * block; r < std::min(m, (b + 1) * block); ++r) used |= al[static_cast<std::size_t>(r) * e + j] != 0.0f;
        want += used;
      }
      int sum = 0;
      for (int sl = 0; sl < slices; ++sl) sum += got[static_cast<std::size_t>(b * slices + sl)];
      EXPECT_EQ(sum, want) << "block " << b << (expert_major ? " expert-major" : " token-major");
    }
  }
}

TEST(MoeRoutingAlpha, MatchesHostSums) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  for (int trial = 0; trial < 4; ++trial) {
    const int m = static_cast<int>(rng.integer(1, 300)), e = trial == 3 ? 256 : static_cast<int>(rng.integer(1, 64));
    const int k = static_cast<int>(rng.integer(1, 8));
    std::vector<std::int32_t> ids(static_cast<std::size_t>(m) * k);
    std::vector<float> w(ids.size()), scale(static_cast<std::size_t>(e));
    for (auto& v : ids) v = static_cast<std::int32_t>(rng.integer(-1, e));  // -1 and e select nothing; repeats sum
    for (auto& v : w) v = rng.uniform(0.0f, 1.0f);
    for (auto& v : scale) v = rng.uniform(0.5f, 2.0f);
    const bool expert_major = trial % 2 == 1, with_scale = trial != 2;
    MatrixView view{nullptr, DType::kFP32, m, e};
    if (expert_major) {
      view.row_stride = 1;
      view.col_stride = m;
    }
    test::DeviceBuffer<std::int32_t> d_ids(ids.size());
    test::DeviceBuffer<float> d_w(w.size()), d_scale(scale.size()), d_alpha(static_cast<std::size_t>(m) * e);
    d_ids.upload(ids);
    d_w.upload(w);
    d_scale.upload(scale);
    d_alpha.fill_bytes(0xff);
    view.data = d_alpha.get();
    moe_routing_alpha(d_ids.get(), d_w.get(), k, with_scale ? d_scale.get() : nullptr, view, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = d_alpha.download();
    std::int64_t bad = 0;
    for (int r = 0; r < m; ++r)
      for (int x = 0; x < e; ++x) {
        float want = 0.0f;
        for (int j = 0; j < k; ++j)
          if (ids[static_cast<std::size_t>(r) * k + j] == x) want += w[static_cast<std::size_t>(r) * k + j];
        if (with_scale) want *= scale[static_cast<std::size_t>(x)];
        const float have = got[static_cast<std::size_t>(r * view.ld() + x * view.col_stride)];
        bad += have != want;  // same FP32 operations in the same order
      }
    EXPECT_EQ(bad, 0) << "m=" << m << " e=" << e << " k=" << k << " expert_major=" << expert_major;
  }
}

}  // namespace
}  // namespace fp4moe
