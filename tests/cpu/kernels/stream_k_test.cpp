// kernels/sm90/stream_k.hpp on the host: the segments of all CTAs cover every
// unit of every tile exactly once, each tile's contributors take slots
// 0 .. slots-1 in CTA order and agree on the count, and max_slots bounds it.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/sm90/stream_k.hpp"

namespace fp4moe::kernels {
namespace {

void check_partition(std::int64_t tiles, std::int32_t units, std::int32_t ctas) {
  SCOPED_TRACE("tiles " + std::to_string(tiles) + " units " + std::to_string(units) + " ctas " + std::to_string(ctas));
  const StreamK sk{tiles, units, ctas};
  std::vector<int> covered(static_cast<std::size_t>(tiles * units), 0);
  std::vector<std::vector<std::int64_t>> contributors(static_cast<std::size_t>(tiles));
  std::vector<int> slots_seen(static_cast<std::size_t>(tiles), -1);
  for (std::int64_t c = 0; c < ctas; ++c) {
    StreamKSegment s;
    int i = 0;
    std::int64_t share = 0;
    for (; sk.segment(c, i, s); ++i) {
      ASSERT_GE(s.tile, 0);
      ASSERT_LT(s.tile, tiles);
      ASSERT_LT(s.unit_begin, s.unit_end);
      ASSERT_LE(s.unit_end, units);
      for (int u = s.unit_begin; u < s.unit_end; ++u) ++covered[static_cast<std::size_t>(s.tile * units + u)];
      share += s.unit_end - s.unit_begin;
      auto& who = contributors[static_cast<std::size_t>(s.tile)];
      EXPECT_EQ(s.slot, static_cast<int>(who.size())) << "slots in CTA order";
      who.push_back(c);
      if (slots_seen[static_cast<std::size_t>(s.tile)] < 0) slots_seen[static_cast<std::size_t>(s.tile)] = s.slots;
      EXPECT_EQ(s.slots, slots_seen[static_cast<std::size_t>(s.tile)]) << "every contributor counts the same";
      EXPECT_LE(s.slots, sk.max_slots());
    }
    // Shares differ by at most one unit, and none is empty when work ≥ ctas.
    EXPECT_GE(share, sk.work() / ctas);
    EXPECT_LE(share, (sk.work() + ctas - 1) / ctas);
  }
  for (std::size_t u = 0; u < covered.size(); ++u) ASSERT_EQ(covered[u], 1) << "unit " << u;
  for (std::int64_t t = 0; t < tiles; ++t)
    EXPECT_EQ(static_cast<int>(contributors[static_cast<std::size_t>(t)].size()), slots_seen[static_cast<std::size_t>(t)])
        << "tile " << t;
}

TEST(StreamK, SegmentsCoverEveryUnitOnceOnSmallGrids) {
  for (std::int64_t tiles = 1; tiles <= 12; ++tiles)
    for (std::int32_t units = 1; units <= 9; ++units)
      for (std::int32_t ctas = 1; ctas <= tiles * units && ctas <= 20; ++ctas) check_partition(tiles, units, ctas);
}

TEST(StreamK, TheShapesItIsTunedFor) {
  // moe_dense_fc2 E = 256 on 132 SMs: 2 token tiles x 56 weight tiles; a
  // dense decode shape in K blocks; more CTAs than tiles and fewer.
  check_partition(112, 256, 132);
  check_partition(56, 256, 132);
  check_partition(224, 28, 132);
  check_partition(3, 7, 21);
  check_partition(1000, 3, 132);
  EXPECT_EQ((StreamK{112, 256, 132}.max_slots()), 3);
}

TEST(StreamK, NoWorkHasNoSegments) {
  const StreamK sk{0, 256, 1};
  StreamKSegment s;
  EXPECT_FALSE(sk.segment(0, 0, s));
}

}  // namespace
}  // namespace fp4moe::kernels
