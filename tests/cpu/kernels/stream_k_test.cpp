// kernels/sm90/stream_k.hpp on the host: the segments of all CTAs cover every
// unit of every tile exactly once, each tile's contributors take slots
// 0 .. slots-1 in CTA order and agree on the count, and max_slots bounds it;
// with equal shares and with weighted ones; owner() finds each unit's CTA;
// and the gather tiles' shares by cost (GatherShares).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/sm90/stream_k.hpp"
#include "support/gather_shares_reference.hpp"

namespace fp4moe::kernels {
namespace {

/// Checks the partition; `shares` (if given) receives each CTA's share in units.
void check_partition(const StreamK& sk, std::vector<std::int64_t>* shares = nullptr) {
  const std::int64_t tiles = sk.tiles;
  const std::int32_t units = sk.units, ctas = sk.ctas;
  const bool weighted = sk.begins != nullptr;
  SCOPED_TRACE("tiles " + std::to_string(tiles) + " units " + std::to_string(units) + " ctas " + std::to_string(ctas) +
               (weighted ? " weighted" : ""));
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
      EXPECT_LE(s.slots, sk.max_slots(weighted));
    }
    EXPECT_GE(share, 1) << "cta " << c << ": every share is non-empty when work >= ctas";
    if (weighted) {
      EXPECT_LE(i, kMaxStreamKSegments) << "cta " << c << ": the kernel's segment table";
    }
    if (!weighted) {  // equal shares differ by at most one unit
      EXPECT_GE(share, sk.work() / ctas);
      EXPECT_LE(share, (sk.work() + ctas - 1) / ctas);
    }
    // owner() inverts share_begin(): the share holding each unit is this CTA's.
    for (std::int64_t u = sk.share_begin(c); u < sk.share_begin(c + 1); ++u) ASSERT_EQ(sk.owner(u), c) << "unit " << u;
    if (shares) shares->push_back(share);
  }
  for (std::size_t u = 0; u < covered.size(); ++u) ASSERT_EQ(covered[u], 1) << "unit " << u;
  for (std::int64_t t = 0; t < tiles; ++t)
    EXPECT_EQ(static_cast<int>(contributors[static_cast<std::size_t>(t)].size()), slots_seen[static_cast<std::size_t>(t)])
        << "tile " << t;
}

void check_partition(std::int64_t tiles, std::int32_t units, std::int32_t ctas) { check_partition(StreamK{tiles, units, ctas}); }

/// Weighted shares over token blocks whose tokens use `active[b]` experts,
/// as the kernel makes them: the prefix of the weights, then (where weights
/// apply) the table of boundaries the scheduler reads.
struct Weighted {
  std::vector<std::int32_t> prefix, begins;
  StreamK sk;
  Weighted(const std::vector<std::int32_t>& active, std::int32_t tiles_per_block, std::int32_t units, std::int32_t ctas)
      : prefix(active.size() + 1, 0) {
    for (std::size_t b = 0; b < active.size(); ++b) prefix[b + 1] = prefix[b] + stream_k_weight(active[b], units);
    sk = StreamK{std::int64_t(active.size()) * tiles_per_block, units, ctas, prefix.data(),
                 static_cast<std::int32_t>(active.size()), tiles_per_block};
    if (sk.weighted()) {
      for (std::int32_t c = 0; c <= ctas; ++c) begins.push_back(static_cast<std::int32_t>(sk.weighted_begin(c)));
      sk.begins = begins.data();
    }
  }
  /// Cost of CTA c's share, by the weights.
  std::int64_t cost(std::int64_t c) const {
    std::int64_t total = 0;
    for (std::int64_t u = sk.share_begin(c); u < sk.share_begin(c + 1); ++u) {
      const std::int64_t b = u / (std::int64_t(sk.tiles_per_block) * sk.units);
      total += prefix[b + 1] - prefix[b];
    }
    return total;
  }
};

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
  EXPECT_EQ((StreamK{112, 256, 132}.max_slots(false)), 3);
}

TEST(StreamK, WeightsClampToTheSpread) {
  EXPECT_EQ(stream_k_weight(0, 256), 64);
  EXPECT_EQ(stream_k_weight(163, 256), 163);
  EXPECT_EQ(stream_k_weight(300, 256), 256);
  EXPECT_EQ(stream_k_weight(0, 2), 1);
  EXPECT_EQ(stream_k_weight(0, 1), 1);
}

TEST(StreamK, WeightedSegmentsCoverEveryUnitOnceOnRandomWeights) {
  std::mt19937 rng(7);
  int weighted_grids = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::int32_t blocks = 1 + static_cast<std::int32_t>(rng() % 5), per_block = 1 + static_cast<std::int32_t>(rng() % 6);
    const std::int32_t units = 2 + static_cast<std::int32_t>(rng() % 20);
    const std::int64_t work = std::int64_t(blocks) * per_block * units;
    // Mostly grids where weights apply (N/G ≥ kWeightSpread), some where they do not.
    const std::int64_t most = trial % 4 ? std::max<std::int64_t>(1, work / kWeightSpread) : work;
    const std::int32_t ctas = 1 + static_cast<std::int32_t>(rng() % std::min<std::int64_t>(most, 40));
    std::vector<std::int32_t> active(static_cast<std::size_t>(blocks));
    for (auto& a : active) a = static_cast<std::int32_t>(rng() % (units + 1));  // 0 .. units: the clamp's both ends
    const Weighted w(active, per_block, units, ctas);
    weighted_grids += w.sk.begins != nullptr;
    check_partition(w.sk);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(weighted_grids, 200) << "most trials exercise the weighted shares";
}

TEST(StreamK, WeightedSharesBalanceAShortLastTokenTile) {
  // moe_dense_fc2, E = 256, top-8, M = 160 in 128-token tiles: the first
  // token tile uses ~252 experts, the 32-token one ~163. Equal shares give
  // the CTAs on the short tile 0.65x the work of the others; weighted
  // shares cost the same to within a unit's weight, with at most 6 slots.
  const Weighted w({252, 163}, 56, 256, 132);
  std::vector<std::int64_t> shares;
  check_partition(w.sk, &shares);
  ASSERT_EQ(shares.size(), 132u);
  std::int64_t lo = w.cost(0), hi = lo;
  for (std::int64_t c = 0; c < 132; ++c) {
    lo = std::min(lo, w.cost(c));
    hi = std::max(hi, w.cost(c));
  }
  const double mean = double(w.prefix[2]) * 56 * 256 / 132;
  EXPECT_LT(double(hi), 1.02 * mean);
  EXPECT_GT(double(lo), 0.98 * mean);
  EXPECT_GT(shares.back(), shares.front()) << "the short tile's CTAs take more units";
  EXPECT_LE(w.sk.max_slots(true), 6);
  EXPECT_NE(w.sk.begins, nullptr);
  // Heavy and light extremes: every share still non-empty, slots bounded;
  // too many CTAs for the weights: equal shares.
  check_partition(Weighted({256, 0, 256, 0}, 3, 256, 12).sk);
  check_partition(Weighted({0, 0, 256}, 1, 8, 6).sk);
  EXPECT_NE((Weighted({0, 0, 256}, 1, 8, 6).sk.begins), nullptr);
  EXPECT_EQ((Weighted({0, 0, 256}, 1, 8, 24).sk.begins), nullptr);
  // More token blocks than the kernel's table holds: equal shares.
  EXPECT_EQ(Weighted(std::vector<std::int32_t>(kMaxWeightedBlocks + 1, 8), 1, 64, 64).sk.begins, nullptr);
  EXPECT_NE(Weighted(std::vector<std::int32_t>(kMaxWeightedBlocks, 8), 1, 64, 64).sk.begins, nullptr);
  check_partition(Weighted({0, 0, 256}, 1, 8, 24).sk);
}

TEST(StreamK, MoeGridKeepsEveryCtasSegmentsInTheTable) {
  // Equal shares with the host's MoE-dense grid: at most kMaxStreamKSegments
  // segments per CTA however many tiles, and every share non-empty.
  for (std::int64_t tiles : {1, 7, 112, 928, 3900, 4000, 20000, 100000}) {
    for (std::int32_t units : {2, 8, 256}) {
      const std::int64_t g = moe_stream_k_grid(tiles, units, 132);
      ASSERT_LE(g, tiles * units);
      const StreamK sk{tiles, units, static_cast<std::int32_t>(g)};
      for (std::int64_t c = 0; c < g; c += 1 + g / 64) {
        StreamKSegment s;
        int i = 0;
        while (sk.segment(c, i, s)) ++i;
        EXPECT_GE(i, 1) << "tiles " << tiles << " units " << units << " cta " << c;
        EXPECT_LE(i, kMaxStreamKSegments) << "tiles " << tiles << " units " << units << " cta " << c;
      }
    }
  }
  EXPECT_EQ(moe_stream_k_grid(112, 256, 132), 132);
  EXPECT_EQ(moe_stream_k_grid(2, 2, 132), 4) << "at most one CTA per unit";
}

/// work_item over G CTAs: every unit of every tile once; each tile's
/// contributors take slots 0 .. slots-1 once each and agree on the count, within
/// split_workspace_shape's slots; partial tiles below its count, one per
/// split tile; the whole rounds unsplit; and a CTA's split items within
/// three consecutive items (the 128 x 256 tiles keep one record per item %
/// 4: fp4_gemm_kernel.cuh).
void check_work_items(std::int64_t tiles, std::int32_t units, std::int32_t ctas) {
  SCOPED_TRACE("tiles " + std::to_string(tiles) + " units " + std::to_string(units) + " ctas " + std::to_string(ctas));
  const SplitWorkspaceShape ws = split_workspace_shape(tiles, units, ctas);
  const std::int64_t rounds = stream_k_whole_rounds(tiles, ctas);
  std::vector<int> covered(static_cast<std::size_t>(tiles * units), 0);
  std::vector<int> slots_seen(static_cast<std::size_t>(tiles), 0), contributors(static_cast<std::size_t>(tiles), 0);
  std::vector<std::int64_t> partial_of(static_cast<std::size_t>(tiles), -1);
  std::vector<std::vector<std::int32_t>> slots_taken(static_cast<std::size_t>(tiles));
  for (std::int64_t c = 0; c < ctas; ++c) {
    WorkItem w;
    std::vector<std::int32_t> split_items;
    for (std::int32_t i = 0; work_item(tiles, units, c, ctas, i, w); ++i) {
      ASSERT_GE(w.tile, 0);
      ASSERT_LT(w.tile, tiles);
      ASSERT_LT(w.unit_begin, w.unit_end);
      ASSERT_LE(w.unit_end, units);
      const auto t = static_cast<std::size_t>(w.tile);
      for (int u = w.unit_begin; u < w.unit_end; ++u) ++covered[t * units + static_cast<std::size_t>(u)];
      if (i < rounds) {
        EXPECT_EQ(w.slots, 1) << "whole rounds: item " << i;
      }
      ++contributors[t];
      slots_taken[t].push_back(w.slot);
      if (slots_seen[t] == 0) slots_seen[t] = w.slots;
      EXPECT_EQ(w.slots, slots_seen[t]) << "tile " << w.tile;
      EXPECT_LE(w.slots, ws.slots);
      if (w.slots > 1) {
        ASSERT_GE(w.partial, 0);
        ASSERT_LT(w.partial, ws.partial_tiles);
        if (partial_of[t] < 0) partial_of[t] = w.partial;
        EXPECT_EQ(w.partial, partial_of[t]) << "one partial tile a tile";
        split_items.push_back(i);
      }
    }
    if (!split_items.empty()) {  // within three consecutive items
      EXPECT_LE(split_items.back() - split_items.front(), 2) << "cta " << c;
    }
  }
  for (std::size_t u = 0; u < covered.size(); ++u) ASSERT_EQ(covered[u], 1) << "unit " << u;
  for (std::size_t t = 0; t < static_cast<std::size_t>(tiles); ++t) {
    EXPECT_EQ(contributors[t], slots_seen[t]) << "tile " << t;
    std::sort(slots_taken[t].begin(), slots_taken[t].end());
    for (std::size_t k = 0; k < slots_taken[t].size(); ++k) EXPECT_EQ(slots_taken[t][k], static_cast<int>(k)) << "tile " << t;
  }
  std::vector<std::int64_t> used;
  for (std::int64_t pt : partial_of)
    if (pt >= 0) used.push_back(pt);
  std::sort(used.begin(), used.end());
  EXPECT_EQ(std::adjacent_find(used.begin(), used.end()), used.end()) << "partial tiles are the tiles' own";
}

TEST(StreamK, WorkItemsCoverEveryUnitOnce) {
  for (std::int64_t tiles = 1; tiles <= 40; tiles += 3)
    for (std::int32_t units = 1; units <= 7; ++units)
      for (std::int32_t ctas : {1, 2, 5, 8, 13})
        if (ctas <= tiles * units) check_work_items(tiles, units, ctas);  // (at most one CTA per unit)
}

TEST(StreamK, WholeRoundsOnTheSuitesShapes) {
  // The 128 x 256 tile on 132 SMs: dense 8192³ (2048 tiles, 64 K blocks),
  // prefill G4 (4096 tiles, 56), G8 (896, 16); as pairs on 66 clusters.
  for (const auto& [tiles, units, ctas] : {std::tuple<std::int64_t, std::int32_t, std::int32_t>{2048, 64, 132},
                                           {4096, 56, 132}, {896, 16, 132}, {1024, 64, 66}, {448, 16, 66}, {1980, 64, 132}})
    check_work_items(tiles, units, ctas);
  EXPECT_EQ(stream_k_whole_rounds(2048, 132), 14);
  EXPECT_EQ(stream_k_whole_rounds(1980, 132), 14) << "whole waves: the last round's shares are whole tiles";
  EXPECT_EQ(stream_k_whole_rounds(200, 132), 0);
  EXPECT_EQ((split_workspace_shape(2048, 64, 132).partial_tiles), 2048 - 14 * 132);
}

TEST(StreamK, NoWorkHasNoSegments) {
  const StreamK sk{0, 256, 1};
  StreamKSegment s;
  EXPECT_FALSE(sk.segment(0, 0, s));
}

/// Gather shares by cost (GatherShares) as the kernel's prologue works them
/// out (gather_stream_k_share): every CTA's share from the unit costs.
struct GatherCase {
  std::vector<std::int32_t> cost, prefix;  // a tile's unit costs; prefix[e] = cost of units before e
  std::int64_t tiles;
  std::int32_t ctas;
  std::int32_t lead;
  bool applies = false;
  GatherCase(std::vector<std::int32_t> unit_cost, std::int64_t tiles_, std::int32_t ctas_, std::int32_t lead_ = 0)
      : cost(std::move(unit_cost)), prefix(cost.size() + 1, 0), tiles(tiles_), ctas(ctas_), lead(lead_) {
    for (std::size_t e = 0; e < cost.size(); ++e) prefix[e + 1] = prefix[e] + cost[e];
    applies = shares(0).tile_cost != 0;
  }
  std::int32_t units() const { return static_cast<std::int32_t>(cost.size()); }
  GatherShares shares(std::int64_t c) const { return test::reference_gather_shares(cost, tiles, ctas, c, lead); }
  /// Cost of units [b, e) (numbered tile-major).
  std::int64_t cost_of(std::int64_t b, std::int64_t e) const {
    std::int64_t total = 0;
    for (std::int64_t u = b; u < e; ++u) total += cost[static_cast<std::size_t>(u % units())];
    return total;
  }
};

/// As check_partition, for gather shares: every unit once, slots in CTA
/// order and agreed, within max_slots; every share non-empty; by cost, each
/// share within one heaviest unit of W/G. Returns the heaviest share's cost
/// over the mean.
double check_gather_partition(const GatherCase& gc) {
  const std::int32_t units = gc.units();
  SCOPED_TRACE("tiles " + std::to_string(gc.tiles) + " units " + std::to_string(units) + " ctas " +
               std::to_string(gc.ctas) + (gc.applies ? " by cost" : " equal"));
  std::vector<int> covered(static_cast<std::size_t>(gc.tiles * units), 0);
  std::vector<std::vector<std::int64_t>> contributors(static_cast<std::size_t>(gc.tiles));
  std::vector<int> slots_seen(static_cast<std::size_t>(gc.tiles), -1);
  const std::int32_t bound =
      std::max(StreamK{gc.tiles, units, gc.ctas}.max_slots(false), GatherShares::max_slots(gc.tiles, gc.ctas, gc.lead));
  const std::int32_t heaviest = *std::max_element(gc.cost.begin(), gc.cost.end());
  const double mean = double(gc.prefix.back()) * double(gc.tiles) / gc.ctas;
  const double weights = double(GatherShares::weight_before(gc.ctas, gc.ctas, gc.lead));
  double worst = 0;
  for (std::int64_t c = 0; c < gc.ctas; ++c) {
    const GatherShares g = gc.shares(c);
    GatherShares prepared = g;  // the kernel's path: segments from what the prologue worked out
    prepared.prepare_segments(c);
    StreamKSegment s, own;
    std::int64_t share_cost = 0, share_units = 0;
    for (int i = 0;; ++i) {
      const bool more = g.segment(c, i, s);
      const bool own_more = prepared.own_segment(i, own);
      EXPECT_EQ(own_more, more) << "cta " << c << " segment " << i;
      if (!more || !own_more) break;
      EXPECT_EQ(own.tile, s.tile);
      EXPECT_EQ(own.unit_begin, s.unit_begin);
      EXPECT_EQ(own.unit_end, s.unit_end);
      EXPECT_EQ(own.slot, s.slot) << "cta " << c << " segment " << i;
      EXPECT_EQ(own.slots, s.slots) << "cta " << c << " segment " << i;
      EXPECT_LT(s.unit_begin, s.unit_end);
      for (int u = s.unit_begin; u < s.unit_end; ++u) ++covered[static_cast<std::size_t>(s.tile * units + u)];
      share_cost += gc.cost_of(s.tile * units + s.unit_begin, s.tile * units + s.unit_end);
      share_units += s.unit_end - s.unit_begin;
      auto& who = contributors[static_cast<std::size_t>(s.tile)];
      EXPECT_EQ(s.slot, static_cast<int>(who.size())) << "cta " << c << " tile " << s.tile << ": slots in CTA order";
      who.push_back(c);
      if (slots_seen[static_cast<std::size_t>(s.tile)] < 0) slots_seen[static_cast<std::size_t>(s.tile)] = s.slots;
      EXPECT_EQ(s.slots, slots_seen[static_cast<std::size_t>(s.tile)]) << "every contributor counts the same";
      EXPECT_LE(s.slots, bound);
    }
    EXPECT_GE(share_units, 1) << "cta " << c << ": a non-empty share";
    if (gc.applies) {  // (weighted: this share's part of the whole cost)
      const double own = double(gc.prefix.back()) * double(gc.tiles) *
                         double(GatherShares::weight_before(c + 1, gc.ctas, gc.lead) -
                                GatherShares::weight_before(c, gc.ctas, gc.lead)) /
                         weights;
      EXPECT_LE(std::abs(double(share_cost) - own), double(heaviest) + 1.0) << "cta " << c;
    }
    worst = std::max(worst, double(share_cost) / mean);
  }
  for (std::size_t u = 0; u < covered.size(); ++u) EXPECT_EQ(covered[u], 1) << "unit " << u;
  for (std::int64_t t = 0; t < gc.tiles; ++t)
    EXPECT_EQ(static_cast<int>(contributors[static_cast<std::size_t>(t)].size()), slots_seen[static_cast<std::size_t>(t)])
        << "tile " << t;
  return worst;
}

using test::routed_counts;

TEST(GatherShares, CoverEveryUnitOnceOnSmallGrids) {
  std::mt19937 rng(11);
  int by_cost = 0;
  for (std::int64_t tiles = 1; tiles <= 9; ++tiles)
    for (std::int32_t units = 1; units <= 9; ++units)
      for (std::int32_t ctas = 1; ctas <= tiles * units && ctas <= 24; ++ctas) {
        std::vector<std::int32_t> cost(static_cast<std::size_t>(units));
        for (auto& c : cost) c = gather_unit_cost(static_cast<std::int32_t>(rng() % 3 == 0 ? 0 : rng() % 20), 8);
        const GatherCase gc(cost, tiles, ctas);
        by_cost += gc.applies;
        check_gather_partition(gc);
        if (HasFailure()) return;
      }
  EXPECT_GT(by_cost, 500) << "most grids share by cost";
}

TEST(GatherShares, BalanceTheSuitesRouting) {
  // moe-fc2: N = 7168 in 64-row tiles (112), E = 256 experts, top-8, 264
  // CTAs (two an SM). At M = 32 a third of the experts have no token: equal
  // shares give the busiest CTA 1.04-1.16x the mean passes, cost shares
  // stay within one expert's cost. At M = 64 (~13% idle: 34 of 256 on
  // average) by cost where a draw leaves at least an eighth idle; at M =
  // 128 (2% idle) and 384 the shares are equal.
  std::mt19937 rng(5);
  int by_cost_64 = 0;
  for (int trial = 0; trial < 4; ++trial) {
    for (const auto& [m, bt] : {std::pair{32, 8}, std::pair{64, 8}, std::pair{128, 8}, std::pair{384, 16}}) {
      const std::vector<std::int32_t> counts = routed_counts(rng, m, 256, 8);
      std::vector<std::int32_t> cost(counts.size());
      for (std::size_t e = 0; e < counts.size(); ++e) cost[e] = gather_unit_cost(counts[e], bt);
      const GatherCase gc(cost, 112, 264);
      const double worst = check_gather_partition(gc);
      const auto idle = std::count(counts.begin(), counts.end(), 0);
      ASSERT_EQ(gc.applies, m == 32 || (m == 64 && idle >= 32)) << "M " << m << ", " << idle << " idle";
      by_cost_64 += m == 64 && gc.applies;
      if (!gc.applies) continue;
      EXPECT_LT(worst, 1.02) << "M " << m;
      // The same costs under equal shares (the fallback).
      double equal_worst = 0;
      const StreamK sk{112, 256, 264};
      for (std::int64_t c = 0; c < 264; ++c)
        equal_worst = std::max(equal_worst, double(gc.cost_of(sk.share_begin(c), sk.share_begin(c + 1))) /
                                                (double(gc.prefix.back()) * 112 / 264));
      if (m == 32) {
        EXPECT_GT(equal_worst, 1.03) << "the imbalance cost shares remove";
      }
      EXPECT_LE(worst, equal_worst + 1e-9);
    }
  }
  EXPECT_GE(by_cost_64, 1) << "some M = 64 draws share by cost";
  EXPECT_EQ(GatherShares::max_slots(112, 264), 4);
}

TEST(GatherShares, EqualWhereAUnitOutweighsAShare) {
  // One expert holding every pass: its cost is past W/G, so the shares are
  // equal (every share non-empty all the same).
  std::vector<std::int32_t> cost(16, 1);
  cost[3] = gather_unit_cost(4096, 8);
  const GatherCase gc(cost, 2, 24);
  EXPECT_FALSE(gc.applies);
  check_gather_partition(gc);
  // Lighter: by cost, and the heavy unit's tile meets more CTAs.
  const GatherCase light(cost, 64, 24);
  EXPECT_TRUE(light.applies);
  check_gather_partition(light);
}

TEST(GatherShares, ByCostFromAnEighthOfTheUnitsIdle) {
  // 256 units of cost 17 (one pass) or 1 (idle), 112 tiles, 264 CTAs: cost
  // shares from 32 idle units (an eighth), equal shares at 31.
  for (const int idle : {31, 32, 64}) {
    std::vector<std::int32_t> cost(256, gather_unit_cost(5, 8));
    for (int e = 0; e < idle; ++e) cost[static_cast<std::size_t>(7 * e % 256)] = gather_unit_cost(0, 8);
    const GatherCase gc(cost, 112, 264);
    EXPECT_EQ(gc.applies, idle >= 32) << "idle " << idle;
    check_gather_partition(gc);
  }
}

TEST(GatherShares, WeightedSharesCoverEveryUnitOnce) {
  // The first half of the share indices weighs 64 + lead, the rest 64 −
  // lead: every unit once, slots within max_slots for the lead, each share
  // within one heaviest unit of its weighted part; lead 0 is the unweighted
  // partition, unit for unit.
  std::mt19937 rng(17);
  int by_cost = 0;
  for (const std::int32_t lead : {0, 2, kGatherRankLead, 12})
    for (std::int64_t tiles = 1; tiles <= 7; ++tiles)
      for (std::int32_t units = 1; units <= 9; ++units)
        for (std::int32_t ctas = 1; ctas <= tiles * units && ctas <= 20; ++ctas) {
          std::vector<std::int32_t> cost(static_cast<std::size_t>(units));
          for (auto& c : cost) c = gather_unit_cost(static_cast<std::int32_t>(rng() % 3 == 0 ? 0 : rng() % 20), 8);
          const GatherCase gc(cost, tiles, ctas, lead);
          by_cost += gc.applies && lead > 0;
          check_gather_partition(gc);
          if (lead == 0 && gc.applies) {  // the unweighted rule: ⌈c·W/G⌉, owner ⌊x·G/W⌋
            const GatherShares g = gc.shares(0);
            for (std::int64_t c = 0; c <= ctas; ++c)
              EXPECT_EQ(g.target(c), (c * g.total() + ctas - 1) / ctas) << "c " << c;
            for (std::int64_t x = 0; x < g.total(); x += 1 + g.total() / 97)
              EXPECT_EQ(g.owner_at(x), std::min<std::int64_t>(x * ctas / g.total(), ctas - 1)) << "x " << x;
          }
          if (HasFailure()) return;
        }
  EXPECT_GT(by_cost, 300) << "most weighted grids share by cost";
  // The suite's routing at M = 32 and 64 around the shipped lead (kGatherRankLead).
  std::mt19937 routing(5);
  for (const int m : {32, 64}) {
    const std::vector<std::int32_t> counts = routed_counts(routing, m, 256, 8);
    std::vector<std::int32_t> cost(counts.size());
    for (std::size_t e = 0; e < counts.size(); ++e) cost[e] = gather_unit_cost(counts[e], 8);
    for (const std::int32_t lead : {4, kGatherRankLead, 12}) {
      const GatherCase gc(cost, 112, 264, lead);
      check_gather_partition(gc);
      if (gc.applies) {
        EXPECT_GT(gc.shares(0).end - gc.shares(0).begin, 0);
      }
    }
  }
  EXPECT_EQ(GatherShares::max_slots(112, 264, kGatherRankLead), 4);
}

TEST(GatherShares, WeightedEqualSharesCoverEveryUnitOnce) {
  // moe-fc2 M = 128 (2% of the experts idle: no cost shares) with the
  // shipped lead: the prologue's fallback, weighted equal shares
  // (reference_placement_shares), covers every unit once, and each
  // prepared share's segments are segment()'s.
  std::mt19937 rng(23);
  const std::vector<std::int32_t> counts = routed_counts(rng, 128, 256, 8);
  std::vector<std::int32_t> cost(counts.size());
  for (std::size_t e = 0; e < counts.size(); ++e) cost[e] = gather_unit_cost(counts[e], 8);
  constexpr std::int64_t kTiles = 112;
  constexpr std::int32_t kCtas = 264;
  ASSERT_EQ(test::reference_gather_shares(cost, kTiles, kCtas, 0, kGatherRankLead).tile_cost, 0) << "no cost shares";
  std::vector<int> covered(static_cast<std::size_t>(kTiles * 256), 0);
  for (std::int64_t c = 0; c < kCtas; ++c) {
    GatherShares g = test::reference_placement_shares(cost, kTiles, kCtas, c, kGatherRankLead);
    ASSERT_EQ(g.tile_cost, 256) << "weighted equal shares";
    const GatherShares by_index = g;
    g.prepare_segments(c);
    StreamKSegment s, want;
    for (int i = 0; g.own_segment(i, s); ++i) {
      ASSERT_TRUE(by_index.segment(c, i, want));
      EXPECT_EQ(s.tile, want.tile);
      EXPECT_EQ(s.unit_begin, want.unit_begin);
      EXPECT_EQ(s.unit_end, want.unit_end);
      EXPECT_EQ(s.slot, want.slot);
      EXPECT_EQ(s.slots, want.slots);
      EXPECT_LE(s.slots, GatherShares::max_slots(kTiles, kCtas, kGatherRankLead));
      for (int u = s.unit_begin; u < s.unit_end; ++u) ++covered[static_cast<std::size_t>(s.tile * 256 + u)];
    }
  }
  for (std::size_t u = 0; u < covered.size(); ++u) ASSERT_EQ(covered[u], 1) << "unit " << u;
}

TEST(GatherShares, EqualPastThirtyTwoBitTileCosts) {
  // The prologue sums a tile's costs in 32 bits; cost shares apply only
  // where that sum cannot wrap: at most kMaxWeightedUnits units, none
  // heavier than kMaxGatherUnitCost.
  std::vector<std::int32_t> cost(kMaxWeightedUnits, 1);
  for (std::size_t e = 0; e < cost.size(); e += 2) cost[e] = gather_unit_cost(8, 8);
  EXPECT_TRUE(GatherCase(cost, 112, 264).applies) << "at the unit limit";
  cost.push_back(1);
  const GatherCase past_units(cost, 112, 264);
  EXPECT_FALSE(past_units.applies) << "one unit past the limit";
  check_gather_partition(past_units);
  // The heaviest unit at and past the cost limit (applies() alone: a
  // partition of 2^20-cost units is not walked here).
  const std::int64_t tiles = 1 << 12;
  EXPECT_TRUE(GatherShares::applies(tiles, 4 * std::int64_t(kMaxGatherUnitCost), kMaxGatherUnitCost, 3, 4, 8));
  EXPECT_FALSE(GatherShares::applies(tiles, 4 * (std::int64_t(kMaxGatherUnitCost) + 1), kMaxGatherUnitCost + 1, 3, 4, 8));
}

}  // namespace
}  // namespace fp4moe::kernels
