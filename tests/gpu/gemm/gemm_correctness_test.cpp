// The GEMM engine against the float64 reference: every layout × format ×
// output dtype × compiled tactic (and the heuristic's own choice), on shapes
// at and off tile multiples, with fresh random data and poisoned outputs.
#include <gtest/gtest.h>

#include <cstring>

#include "gemm/gemm_test_util.hpp"
#include "reference/reference_gemm.hpp"
#include "kernels/sm90/gemm_registry.hpp"

namespace fp4moe {
namespace {

using test::GemmCase;
using test::GemmLayout;
using test::Fp4Content;

kernels::Layout test_layout(GemmLayout l) {
  return l == GemmLayout::kDense ? kernels::Layout::kDense
         : l == GemmLayout::kContiguous ? kernels::Layout::kContiguous
                                        : kernels::Layout::kMasked;
}

std::vector<GemmTactic> tactics_for(Fp4Format f, GemmLayout l) {
  std::vector<GemmTactic> out;
  for (const auto& e : kernels::kernel_registry())
    if (e.format == f && e.layout == test_layout(l)) out.push_back(e.tactic);
  return out;
}

class GemmAllTactics : public ::testing::TestWithParam<std::tuple<Fp4Format, GemmLayout>> {};

TEST_P(GemmAllTactics, MatchesReference) {
  FP4MOE_REQUIRE_GPU();
  const auto [format, layout] = GetParam();
  test::Rng rng;
  const std::vector<GemmTactic> tactics = tactics_for(format, layout);
  ASSERT_FALSE(tactics.empty());
  std::vector<const GemmTactic*> choices = {nullptr};
  for (const GemmTactic& t : tactics) choices.push_back(&t);
  int ran = 0;
  for (const GemmTactic* t : choices) {
    for (DType out : {DType::kFP32, DType::kBF16}) {
      for (Fp4Content content : {Fp4Content::kRandom, Fp4Content::kIntegerValued}) {
        if (out == DType::kBF16 && content == Fp4Content::kIntegerValued) continue;
        GemmCase c;
        c.format = format;
        c.layout = layout;
        c.out = out;
        c.content = content;
        c.tactic = t;
        c.ld_pad = ran % 2 ? 8 : 0;
        if (layout == GemmLayout::kDense) {
          const int ms[] = {1, 7, 64, 127, 300};
          c.m = ms[ran % 5];
          c.n = ran % 3 == 0 ? 256 : 200;
          c.k = ran % 2 ? 512 : 480;
        } else if (layout == GemmLayout::kContiguous) {
          c.groups = 4;
          c.expert_rows = {130, 0, 5, 256};
          c.n = ran % 2 ? 256 : 136;
          c.k = 384;
        } else {
          c.groups = 3;
          c.m = ran % 2 ? 64 : 130;
          c.masked_m = {0, 1, c.m};
          c.n = ran % 2 ? 128 : 264;
          c.k = 256 + 32 * (ran % 3);
        }
        SCOPED_TRACE(c.describe());
        expect_gemm_ok(c, run_gemm_case(c, rng));
        ++ran;
      }
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<GemmAllTactics::ParamType>& info) {
  return std::string(format_name(std::get<0>(info.param))) + "_" + test::layout_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(All, GemmAllTactics,
                         ::testing::Combine(::testing::Values(Fp4Format::kNVFP4, Fp4Format::kMXFP4),
                                            ::testing::Values(GemmLayout::kDense, GemmLayout::kContiguous, GemmLayout::kMasked)),
                         case_name);

// Weights prepacked (prepack_weights): every tactic compiled for them, on
// shapes at and off tile multiples (dense: split_k 2 too where the tile has
// split-K), against the float64 reference.
TEST(GemmPrepackedWeights, EveryTacticMatchesReference) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (Fp4Format format : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (GemmLayout layout : {GemmLayout::kDense, GemmLayout::kContiguous, GemmLayout::kMasked})
      for (const auto& e : kernels::kernel_registry()) {
        if (e.format != format || e.layout != test_layout(layout) || !e.launch_prepacked) continue;
        GemmTactic split2 = e.tactic;
        split2.split_k = 2;
        const bool with_split = layout == GemmLayout::kDense && e.max_split_k > 1;
        for (Fp4Content content : {Fp4Content::kRandom, Fp4Content::kIntegerValued}) {
          GemmCase c;
          c.format = format;
          c.layout = layout;
          c.out = ran % 3 == 2 && content == Fp4Content::kRandom ? DType::kBF16 : DType::kFP32;
          c.content = content;
          c.tactic = with_split && content == Fp4Content::kIntegerValued ? &split2 : &e.tactic;
          c.prepack_b = true;
          if (layout == GemmLayout::kDense) {
            c.m = ran % 2 ? 64 : 7;
            c.n = ran % 2 ? 256 : 200;
            c.k = ran % 2 ? 512 : 480;
          } else if (layout == GemmLayout::kContiguous) {
            c.groups = 3;
            c.expert_rows = {130, 0, 5};
            c.n = 256;
            c.k = 384;
          } else {
            c.groups = 2;
            c.m = 64;
            c.masked_m = {1, 64};
            c.n = 136;
            c.k = 288;
          }
          SCOPED_TRACE(c.describe());
          expect_gemm_ok(c, run_gemm_case(c, rng));
          ++ran;
        }
      }
  EXPECT_GE(ran, 2 * 2 * 3 * 5);  // every layout's five BF16-route tiles, both formats, both contents
}

// Outputs the epilogue's paired stores must not assume: D one element past
// an aligned address with rows an odd number of elements apart (every pair
// stored one by one), and an aligned D with N odd (pairs, then the last
// column alone), every tactic.
TEST(GemmUnalignedOutput, OddOffsetStridesAndNMatchReference) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (Fp4Format format : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (GemmLayout layout : {GemmLayout::kDense, GemmLayout::kContiguous, GemmLayout::kMasked})
      for (const GemmTactic& t : tactics_for(format, layout))
        for (DType out : {DType::kFP32, DType::kBF16})
          for (bool misaligned : {true, false}) {
            GemmCase c;
            c.format = format;
            c.layout = layout;
            c.out = out;
            c.tactic = &t;
            c.n = misaligned ? 200 : 201;
            c.ld_pad = 1;  // misaligned: odd row stride; else 202, even
            c.d_offset = misaligned ? 1 : 0;
            c.k = 256;
            c.m = 70;
            if (layout == GemmLayout::kContiguous) {
              c.groups = 2;
              c.expert_rows = {70, 3};
            } else if (layout == GemmLayout::kMasked) {
              c.groups = 2;
              c.masked_m = {70, 9};
            }
            SCOPED_TRACE(c.describe());
            expect_gemm_ok(c, run_gemm_case(c, rng));
            ++ran;
          }
  EXPECT_GT(ran, 24) << "every layout and format has tactics";
}

// BF16 D with aligned rows and padding after each row (checked untouched),
// every tactic: N a multiple of 8 (the 128 x 256 tile stores by TMA, which
// must clip at N and at the last row) and N = 4 (mod 8), where a TMA store
// would write the padding (the 16-byte piece holding column N - 1 whole), so
// the tile stores from registers.
TEST(GemmPaddedRows, RowPaddingAfterNIsLeftAlone) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (Fp4Format format : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (GemmLayout layout : {GemmLayout::kDense, GemmLayout::kContiguous})
      for (const GemmTactic& t : tactics_for(format, layout))
        for (int n : {264, 260}) {
          GemmCase c;
          c.format = format;
          c.layout = layout;
          c.out = DType::kBF16;
          c.tactic = &t;
          c.n = n;
          c.ld_pad = 272 - n;  // rows 272 elements apart: 16-byte aligned
          c.k = 256;
          c.m = 200;
          if (layout == GemmLayout::kContiguous) {
            c.groups = 2;
            c.expert_rows = {130, 70};
          }
          SCOPED_TRACE(c.describe());
          expect_gemm_ok(c, run_gemm_case(c, rng));
          ++ran;
        }
  EXPECT_GT(ran, 8) << "every layout and format has tactics";
}

// Masked decode-sized groups whose rows past masked_m hold NaN block scales,
// over every tactic: those rows are loaded with the tile (they lie inside the
// group's maxM rows) but reach no output, as DESIGN.md's masked layout
// promises (7168 weight rows: more tiles than CTAs, so CTAs take tiles of
// several groups in turn).
TEST(GemmMaskedRows, RowsPastMaskedMReachNoOutput) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (Fp4Format format : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    for (const GemmTactic& t : tactics_for(format, GemmLayout::kMasked)) {
      GemmCase c;
      c.format = format;
      c.layout = GemmLayout::kMasked;
      c.tactic = &t;
      c.groups = 6;
      c.m = 16;
      c.masked_m = {16, 1, 5, 9, 0, 3};
      c.nan_past_masked_m = true;
      c.n = 7168;
      c.k = 512;
      SCOPED_TRACE(c.describe());
      expect_gemm_ok(c, run_gemm_case(c, rng));
      ++ran;
    }
  }
  EXPECT_GT(ran, 2) << "both formats have masked tactics";
}

// K past the last whole stage (2080: 8 x 256 + 32, so the last stage of
// every tile holds one 32-K block, one of its scale chunks partly padding
// and the rest not loaded) with NaN codes in both operands' scale padding,
// every layout x format x compiled tactic: nothing past K or past the rows
// may reach an output (the kernels clear the codes past K of such a stage).
TEST(GemmScalePadding, NanPaddingPastKReachesNoOutput) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (Fp4Format format : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (GemmLayout layout : {GemmLayout::kDense, GemmLayout::kContiguous, GemmLayout::kMasked})
      for (const GemmTactic& t : tactics_for(format, layout)) {
        GemmCase c;
        c.format = format;
        c.layout = layout;
        c.tactic = &t;
        c.nan_scale_padding = true;
        c.content = ran % 2 ? Fp4Content::kIntegerValued : Fp4Content::kRandom;
        c.k = 2080;
        c.n = 200;
        if (layout == GemmLayout::kDense) {
          c.m = ran % 3 ? 7 : 130;
        } else if (layout == GemmLayout::kContiguous) {
          c.groups = 2;
          c.expert_rows = {5, 130};
        } else {
          c.groups = 2;
          c.m = 40;
          c.masked_m = {40, 3};
        }
        SCOPED_TRACE(c.describe());
        expect_gemm_ok(c, run_gemm_case(c, rng));
        ++ran;
      }
  EXPECT_GE(ran, 2 * 3 * 5);
}

// M = 4099 (past 32 row tiles, not a multiple of anything) in every layout:
// dense; contiguous with a 4099-row expert beside 1, 0 and 127 rows; masked
// with maxM 4099 and masked_m {4099, 7, 0}. The heuristic's tactic.
TEST(GemmLargeM, M4099MatchesReferenceInEveryLayout) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    for (GemmLayout layout : {GemmLayout::kDense, GemmLayout::kContiguous, GemmLayout::kMasked}) {
      GemmCase c;
      c.format = f;
      c.layout = layout;
      c.n = 264;
      c.k = 1024;
      if (layout == GemmLayout::kDense) {
        c.m = 4099;
      } else if (layout == GemmLayout::kContiguous) {
        c.groups = 4;
        c.expert_rows = {4099, 1, 0, 127};
      } else {
        c.groups = 3;
        c.m = 4099;
        c.masked_m = {4099, 7, 0};
      }
      SCOPED_TRACE(c.describe());
      expect_gemm_ok(c, run_gemm_case(c, rng));
    }
  }
}

// M = 4099 on every compiled tile of every layout and format (the test
// above runs the heuristic's tile on a deeper K): N off every tile multiple,
// FP32 and BF16 output by turns.
TEST(GemmLargeM, M4099MatchesReferenceOnEveryTile) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (GemmLayout layout : {GemmLayout::kDense, GemmLayout::kContiguous, GemmLayout::kMasked})
      for (const GemmTactic& t : tactics_for(f, layout)) {
        GemmCase c;
        c.format = f;
        c.layout = layout;
        c.tactic = &t;
        c.out = ran % 2 ? DType::kBF16 : DType::kFP32;
        c.n = 136;
        c.k = 256;
        if (layout == GemmLayout::kDense) {
          c.m = 4099;
        } else if (layout == GemmLayout::kContiguous) {
          c.groups = 3;
          c.expert_rows = {4099, 0, 5};
        } else {
          c.groups = 2;
          c.m = 4099;
          c.masked_m = {4099, 1};
        }
        SCOPED_TRACE(c.describe());
        expect_gemm_ok(c, run_gemm_case(c, rng));
        ++ran;
      }
  EXPECT_GT(ran, 30) << "every layout and format has tiles";
}

// Split-K (library-owned reduction): every layout × format × compiled tile
// with split_k 2, 3, 4, 6 and 8, and for the dense layout stream-K (split_k 0:
// on these small shapes a tile's K blocks spread over up to 9 CTAs), on K
// deep enough for 8 slices of the widest stage, FP32 and BF16 output,
// integer data bit-exact, and a second run bit-identical to the first.
class GemmSplitK : public ::testing::TestWithParam<std::tuple<Fp4Format, GemmLayout>> {};

TEST_P(GemmSplitK, MatchesReference) {
  FP4MOE_REQUIRE_GPU();
  const auto [format, layout] = GetParam();
  test::Rng rng;
  int ran = 0;
  for (const auto& e : kernels::kernel_registry()) {
    if (e.format != format || e.layout != test_layout(layout) || (e.max_split_k == 1 && !e.stream_k)) continue;
    GemmTactic t = e.tactic;
    for (int split : {2, 3, 4, 6, 8, 0}) {
      if (split > e.max_split_k) continue;  // (the 128 x 256 tiles split by stream-K alone)
      if (split == 0 && (layout == GemmLayout::kMasked || !e.stream_k)) continue;  // stream-K: not the masked layout
      t.split_k = split;
      GemmCase c;
      c.format = format;
      c.layout = layout;
      c.tactic = &t;
      c.out = ran % 3 == 2 ? DType::kBF16 : DType::kFP32;
      c.content = ran % 3 == 1 ? Fp4Content::kIntegerValued : Fp4Content::kRandom;
      c.k = 2048 + (ran % 2) * 256;
      if (layout == GemmLayout::kDense) {
        c.m = ran % 2 ? 7 : 130;
        c.n = 200;
      } else if (layout == GemmLayout::kContiguous) {
        c.groups = 3;
        c.expert_rows = {5, 0, 140};
        c.n = 136;
      } else {
        c.groups = 3;
        c.m = 40;
        c.masked_m = {0, 1, 40};
        c.n = 128;
      }
      c.repeats = 2;
      SCOPED_TRACE(c.describe());
      expect_gemm_ok(c, run_gemm_case(c, rng));
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << "no split-K tile of this format and layout in the registry";
}

INSTANTIATE_TEST_SUITE_P(All, GemmSplitK,
                         ::testing::Combine(::testing::Values(Fp4Format::kNVFP4, Fp4Format::kMXFP4),
                                            ::testing::Values(GemmLayout::kDense, GemmLayout::kContiguous, GemmLayout::kMasked)),
                         case_name);

// Stream-K after whole rounds (kernels::work_item) on the 128 x 256 tiles,
// one-CTA and two-CTA: 2.06 waves of tiles on 132 SMs, so one round of
// whole tiles, then every CTA's share of the rest, whose last contributors
// add the partials after their tile loop. Dense (M past a 128-row block,
// so a cluster's second block lies past M in the last row of pairs) and
// contiguous with padding rows and pairs of two experts; BF16 and FP32.
TEST(GemmStreamK, WholeRoundsThenSharedTiles) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (const auto& e : kernels::kernel_registry()) {
    if (e.tactic.block_n != 256 || !e.stream_k || e.tactic.swap_ab ||
        (e.layout != kernels::Layout::kDense && e.layout != kernels::Layout::kContiguous))
      continue;
    GemmTactic t = e.tactic;
    t.split_k = 0;
    GemmCase c;
    c.format = e.format;
    c.layout = e.layout == kernels::Layout::kDense ? GemmLayout::kDense : GemmLayout::kContiguous;
    c.tactic = &t;
    c.out = ran % 2 ? DType::kBF16 : DType::kFP32;
    c.content = ran % 4 < 2 ? Fp4Content::kIntegerValued : Fp4Content::kRandom;
    c.k = 384;  // three 128-K units a tile
    c.n = 16 * 256;
    if (c.layout == GemmLayout::kDense) {
      c.m = 16 * 128 + 100;  // 17 token blocks x 16 = 272 tiles
    } else {
      c.groups = 3;
      c.expert_rows = {1000, 0, 1076};  // 8 + 9 blocks of 128 rows (padding rows in each expert's last)
    }
    SCOPED_TRACE(c.describe() + " " + t.name());
    expect_gemm_ok(c, run_gemm_case(c, rng));
    ++ran;
  }
  EXPECT_GE(ran, 8);  // direct and cluster2 tiles, dense and contiguous, both formats
}

// The split-K and stream-K reductions add partials in a fixed order
// whichever finishes last: repeats of the same call are bit-identical, and
// the first matches the float64 reference (else a kernel that wrote nothing
// would repeat its poison bit for bit).
TEST(GemmSplitKDeterminism, RepeatsAreBitIdentical) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  test::HostFp4 a(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, 200, 8192), b(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, 512, 8192);
  test::fill_random(a, rng);
  test::fill_random(b, rng);
  test::DeviceFp4 da(a), db(b);
  da.upload(a);
  db.upload(b);
  test::DeviceBuffer<float> d(200 * 512);
  // A tile with fixed split-K, and the two-CTA 128 x 256 tile (stream-K
  // only: its last contributors add the partials after the tile loop).
  GemmTactic split_tile, wide_tile;
  for (const auto& e : kernels::kernel_registry()) {
    if (e.format != Fp4Format::kNVFP4 || e.layout != kernels::Layout::kDense) continue;
    if (e.max_split_k == 8) split_tile = e.tactic;
    if (e.tactic.block_n == 256 && e.tactic.cluster == 2 && e.stream_k) wide_tile = e.tactic;
  }
  ASSERT_GT(split_tile.block_n, 0);
  ASSERT_GT(wide_tile.block_n, 0);
  const std::vector<double> ref = reference::gemm_nt(a.t, b.t);
  test::OutputCheck check;
  check.rows = 200;
  check.cols = check.ld = 512;
  for (int run = 0; run < 3; ++run) {
    GemmTactic t = run == 2 ? wide_tile : split_tile;
    t.split_k = run == 0 ? 8 : 0;
    SCOPED_TRACE(t.name());
    GemmOptions opt;
    opt.tactic = &t;
    std::vector<float> first;
    for (int rep = 0; rep < 5; ++rep) {
      d.fill_bytes(0xff);
      fp4_gemm_nt(da.t, db.t, MatrixView{d.get(), DType::kFP32, 200, 512}, nullptr, opt);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> got = d.download();
      if (rep == 0) {
        first = got;
        std::vector<std::uint8_t> bytes(got.size() * 4);
        std::memcpy(bytes.data(), got.data(), bytes.size());
        test::expect_gemm_ok_for(t.name(), DType::kFP32, test::Fp4Content::kRandom, test::compare_output(ref, bytes, check));
      } else {
        EXPECT_EQ(std::memcmp(first.data(), got.data(), got.size() * 4), 0) << "repeat " << rep;
      }
    }
  }
}

}  // namespace
}  // namespace fp4moe
