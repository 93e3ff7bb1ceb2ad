// The 128x4 tiled scale layout: the offset formula on hand-computed points, its
// bijectivity on ragged shapes, CPU conversions both ways, and a window of
// rows moved to a band start.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format/scale_convert.hpp"
#include "fp4moe/quantize.hpp"
#include "fp4moe/scale_layout.hpp"
#include "support/test_support.hpp"

namespace fp4moe {
namespace {

TEST(Tiled128x4, OffsetsOfHandPickedPoints) {
  // cols = 8 scale columns → 2 column tiles of 512 bytes per 128-row band.
  EXPECT_EQ(tiled128x4_offset(0, 0, 8), 0);
  EXPECT_EQ(tiled128x4_offset(0, 3, 8), 3);
  EXPECT_EQ(tiled128x4_offset(1, 0, 8), 16);
  EXPECT_EQ(tiled128x4_offset(31, 0, 8), 31 * 16);
  EXPECT_EQ(tiled128x4_offset(32, 0, 8), 4);
  EXPECT_EQ(tiled128x4_offset(97, 2, 8), 1 * 16 + 3 * 4 + 2);
  EXPECT_EQ(tiled128x4_offset(0, 4, 8), 512);
  EXPECT_EQ(tiled128x4_offset(128, 0, 8), 1024);
  EXPECT_EQ(tiled128x4_offset(130, 5, 8), 1024 + 512 + 2 * 16 + 1);
  // Columns pad to 4: 5 columns occupy 2 tiles per band.
  EXPECT_EQ(tiled128x4_offset(128, 0, 5), 1024);
  EXPECT_EQ(scale_bytes(ScaleLayout::kTiled128x4, 129, 5), 256 * 8);
  EXPECT_EQ(scale_bytes(ScaleLayout::kRowMajor, 129, 5), 129 * 5);
}

class RaggedShapes : public ::testing::TestWithParam<std::pair<std::int64_t, std::int64_t>> {};

TEST_P(RaggedShapes, TiledOffsetIsABijectionOntoThePaddedBuffer) {
  const auto [rows, cols] = GetParam();
  const std::int64_t prow = round_up(rows, 128), pcol = round_up(cols, 4);
  std::set<std::int64_t> seen;
  for (std::int64_t r = 0; r < prow; ++r)
    for (std::int64_t c = 0; c < pcol; ++c) {
      const std::int64_t o = tiled128x4_offset(r, c, cols);
      ASSERT_LT(o, prow * pcol);
      ASSERT_TRUE(seen.insert(o).second) << r << "," << c;
      std::int64_t r2, c2;
      detail::tiled128x4_coords(o, cols, r2, c2);
      ASSERT_EQ(r2, r);
      ASSERT_EQ(c2, c);
    }
}

TEST_P(RaggedShapes, CpuConversionRoundTripsAndZeroesPadding) {
  const auto [rows, cols] = GetParam();
  test::Rng rng;
  const std::int64_t groups = 3;
  std::vector<std::uint8_t> row_major(static_cast<std::size_t>(groups * rows * cols));
  for (auto& b : row_major) b = static_cast<std::uint8_t>(rng.integer(1, 255));
  std::vector<std::uint8_t> tiled(static_cast<std::size_t>(groups * scale_bytes(ScaleLayout::kTiled128x4, rows, cols)), 0xcc);
  cpu::convert_scale_layout(row_major.data(), ScaleLayout::kRowMajor, tiled.data(), ScaleLayout::kTiled128x4, rows, cols, groups);
  const std::int64_t per = scale_bytes(ScaleLayout::kTiled128x4, rows, cols);
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t r = 0; r < round_up(rows, 128); ++r)
      for (std::int64_t c = 0; c < round_up(cols, 4); ++c) {
        const std::uint8_t got = tiled[g * per + tiled128x4_offset(r, c, cols)];
        const std::uint8_t want = (r < rows && c < cols) ? row_major[g * rows * cols + r * cols + c] : 0;
        ASSERT_EQ(got, want) << g << "," << r << "," << c;
      }
  std::vector<std::uint8_t> back(row_major.size(), 0xcc);
  cpu::convert_scale_layout(tiled.data(), ScaleLayout::kTiled128x4, back.data(), ScaleLayout::kRowMajor, rows, cols, groups);
  EXPECT_EQ(back, row_major);
}

INSTANTIATE_TEST_SUITE_P(Shapes, RaggedShapes,
                         ::testing::Values(std::pair<std::int64_t, std::int64_t>{1, 1}, std::pair<std::int64_t, std::int64_t>{7, 3},
                                           std::pair<std::int64_t, std::int64_t>{127, 4}, std::pair<std::int64_t, std::int64_t>{128, 5},
                                           std::pair<std::int64_t, std::int64_t>{129, 8}, std::pair<std::int64_t, std::int64_t>{300, 13}));

// A window of rows moved to a band start (moe_dense_fc2's split at 96
// tokens), word by word, against the same rows taken from the row-major
// form and tiled again: windows that start inside a band, cross one, end at
// the matrix's last row or before it.
TEST(Tiled128x4, RowWindowEqualsItsRowsTiledAgain) {
  test::Rng rng;
  const std::int64_t rows = 300, cols = 13;  // (13: padding columns too)
  std::vector<std::uint8_t> row_major(static_cast<std::size_t>(rows * cols));
  for (auto& b : row_major) b = static_cast<std::uint8_t>(rng.integer(1, 255));
  std::vector<std::uint32_t> tiled(static_cast<std::size_t>(scale_bytes(ScaleLayout::kTiled128x4, rows, cols) / 4));
  cpu::convert_scale_layout(row_major.data(), ScaleLayout::kRowMajor, tiled.data(), ScaleLayout::kTiled128x4, rows, cols, 1);
  for (const auto& [first, count] : {std::pair<std::int64_t, std::int64_t>{96, 64}, {96, 96}, {5, 130}, {128, 44}, {250, 50}}) {
    SCOPED_TRACE(std::to_string(first) + " + " + std::to_string(count));
    std::vector<std::uint32_t> want(static_cast<std::size_t>(scale_bytes(ScaleLayout::kTiled128x4, count, cols) / 4));
    cpu::convert_scale_layout(row_major.data() + first * cols, ScaleLayout::kRowMajor, want.data(),
                              ScaleLayout::kTiled128x4, count, cols, 1);
    for (std::size_t q = 0; q < want.size(); ++q)
      ASSERT_EQ(detail::tiled_rows_word(tiled.data(), first, count, cols, static_cast<std::int64_t>(q)), want[q])
          << "word " << q;
  }
}

TEST(ScaleLayout, QuantizerWritesTheSameScalesInBothLayouts) {
  test::Rng rng;
  const std::int64_t rows = 133, cols = 96;
  std::vector<float> x = test::random_matrix(rng, rows, cols);
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    test::HostFp4 a(f, ScaleLayout::kRowMajor, rows, cols), b(f, ScaleLayout::kTiled128x4, rows, cols);
    std::fill(b.scales.begin(), b.scales.end(), 0xcc);
    cpu::quantize(MatrixView{x.data(), DType::kFP32, rows, cols}, a.t);
    cpu::quantize(MatrixView{x.data(), DType::kFP32, rows, cols}, b.t);
    EXPECT_EQ(a.data, b.data);
    std::vector<std::uint8_t> converted(b.scales.size());
    cpu::convert_scale_layout(a.scales.data(), ScaleLayout::kRowMajor, converted.data(), ScaleLayout::kTiled128x4, rows,
                              a.t.scale_cols(), 1);
    EXPECT_EQ(converted, b.scales);  // padding included: both write 0 there
  }
}

}  // namespace
}  // namespace fp4moe
