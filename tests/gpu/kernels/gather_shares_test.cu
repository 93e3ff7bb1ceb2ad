// gather_stream_k_share (kernels/sm90/tile_scheduler.cuh) on the device: each
// CTA of a grid of G works out its stream-K share of the gather tiles from
// the experts' token counts; every CTA's result equals the host's reading of
// stream_k.hpp's rule (the first unit whose cost before it reaches
// target(c)); equal shares where one expert outweighs a share or too few
// experts are idle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/sm90/tile_scheduler.cuh"
#include "support/gather_shares_reference.hpp"
#include "support/test_support.hpp"

namespace fp4moe::kernels {
namespace {

constexpr int kBw = 64;

template <int BT>
__global__ void share_kernel(GemmParams p, GatherShares* out, std::uint32_t* slots = nullptr) {
  __shared__ GatherShares shares;
  if (threadIdx.x < 32) gather_stream_k_share<BT, kBw>(p, &shares);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = shares;
  if (threadIdx.x == 0 && slots != nullptr) slots[blockIdx.x] = ptx::warp_slot();  // (warp 0's, as the prologue read it)
}

/// The segments the prologue prepared (prepare_segments) against the host's
/// for the same share.
void expect_prepared(const GatherShares& got, GatherShares want, std::int64_t share) {
  want.prepare_segments(share);
  EXPECT_EQ(got.begin, want.begin) << "share " << share;
  EXPECT_EQ(got.end, want.end) << "share " << share;
  EXPECT_EQ(got.first_tile, want.first_tile) << "share " << share;
  EXPECT_EQ(got.head_slot, want.head_slot) << "share " << share;
  EXPECT_EQ(got.head_slots, want.head_slots) << "share " << share;
  EXPECT_EQ(got.tail_slots, want.tail_slots) << "share " << share;
}

template <int BT>
void check_shares(const std::vector<std::int32_t>& counts, std::int32_t n, std::int32_t ctas, bool by_cost) {
  SCOPED_TRACE("experts " + std::to_string(counts.size()) + " n " + std::to_string(n) + " ctas " + std::to_string(ctas));
  test::DeviceBuffer<std::int32_t> dev_counts(counts.size());
  dev_counts.upload(counts);
  test::DeviceBuffer<GatherShares> out(static_cast<std::size_t>(ctas));
  GemmParams p;
  p.n = n;
  p.experts = static_cast<std::int32_t>(counts.size());
  p.gather_counts = dev_counts.get();
  share_kernel<BT><<<ctas, 64>>>(p, out.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<GatherShares> got = out.download();
  const std::int64_t tiles = (n + kBw - 1) / kBw;
  std::vector<std::int32_t> cost(counts.size());
  for (std::size_t e = 0; e < counts.size(); ++e) cost[e] = test::gather_unit_cost(counts[e], BT);
  for (std::int32_t c = 0; c < ctas; ++c) {
    const GatherShares want = test::reference_gather_shares(cost, tiles, ctas, c);
    const GatherShares& g = got[static_cast<std::size_t>(c)];
    ASSERT_EQ(g.tiles, tiles);
    ASSERT_EQ(g.units, want.units);
    ASSERT_EQ(g.ctas, ctas);
    ASSERT_EQ(g.tile_cost, want.tile_cost) << "cta " << c;
    ASSERT_EQ(g.tile_cost != 0, by_cost);
    expect_prepared(g, want, c);  // (equal shares too: begin and end from StreamK)
    if (!by_cost) continue;
    ASSERT_EQ(g.last_prefix, want.last_prefix) << "cta " << c;
    ASSERT_EQ(g.begin, want.begin) << "cta " << c;
    ASSERT_EQ(g.end, want.end) << "cta " << c;
  }
}

TEST(GatherStreamKShare, MatchesTheHostRuleOnRoutedCounts) {
  FP4MOE_REQUIRE_GPU();
  std::mt19937 rng(3);
  // The suite's shapes (N = 7168: 112 tiles; 264 CTAs), a ragged N, experts
  // not a multiple of 32, and more CTAs than units; equal shares where
  // fewer than an eighth of the experts have no token (M = 128, 384).
  check_shares<8>(test::routed_counts(rng, 32, 256, 8), 7168, 264, true);
  check_shares<8>(test::routed_counts(rng, 128, 256, 8), 7168, 264, false);
  check_shares<16>(test::routed_counts(rng, 384, 256, 8), 7168, 132, false);
  check_shares<8>(test::routed_counts(rng, 7, 1000, 4), 7168 + 40, 264, true);
  check_shares<16>(test::routed_counts(rng, 5, 37, 2), 256, 5, true);
  check_shares<8>(test::routed_counts(rng, 3, 8, 2), 64 * 80, 150, true);
}

TEST(GatherStreamKShare, EqualWhereOneExpertOutweighsAShare) {
  FP4MOE_REQUIRE_GPU();
  std::vector<std::int32_t> counts(64, 0);
  counts[5] = 4096;  // 512 passes: more than a share of 2 tiles over 24 CTAs
  check_shares<8>(counts, 128, 24, false);
}

TEST(GatherStreamKShare, EqualPastTheUnitLimit) {
  FP4MOE_REQUIRE_GPU();
  // Half the experts idle, but more of them than the 32-bit tile cost
  // allows (GatherShares::applies): equal shares; at the limit, by cost.
  std::vector<std::int32_t> counts(kMaxWeightedUnits + 1, 0);
  for (std::size_t e = 0; e < counts.size(); e += 2) counts[e] = 3;
  check_shares<8>(counts, 7168, 264, false);
  counts.pop_back();
  check_shares<8>(counts, 7168, 264, true);
}

// Shares by placement (docs/PERF.md stops 58-59): with the workspace's
// counters and a lead, each CTA takes a share index by its placement (the
// first placed on an SM from 0 up, the other from G - 1 down); over the
// grid the indices are each taken once, every CTA's share is the host rule
// for its index and lead (by cost, or weighted equal where the costs do not
// apply), the CTAs whose warp 0 sat in the SM's first slots hold the
// lowest indices, and the counter is zero again after the launch, twice.
TEST(GatherStreamKShare, PlacementSharesPartitionAndReset) {
  FP4MOE_REQUIRE_GPU();
  std::mt19937 rng(7);
  for (const int m : {32, 128}) {
    const std::vector<std::int32_t> counts = test::routed_counts(rng, m, 256, 8);
    test::DeviceBuffer<std::int32_t> dev_counts(counts.size());
    dev_counts.upload(counts);
    test::DeviceBuffer<std::uint32_t> rank(1);
    rank.upload(std::vector<std::uint32_t>(1, 0));
    constexpr std::int32_t kCtas = 264, kN = 7168;
    test::DeviceBuffer<GatherShares> out(kCtas);
    test::DeviceBuffer<std::uint32_t> slots(kCtas);
    GemmParams p;
    p.n = kN;
    p.experts = static_cast<std::int32_t>(counts.size());
    p.gather_counts = dev_counts.get();
    p.gather_rank = rank.get();
    p.gather_lead = kGatherRankLead;
    std::vector<std::int32_t> cost(counts.size());
    for (std::size_t e = 0; e < counts.size(); ++e) cost[e] = test::gather_unit_cost(counts[e], 8);
    ASSERT_EQ(cudaFuncSetAttribute(share_kernel<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024), cudaSuccess);
    for (int launch = 0; launch < 2; ++launch) {
      // (384 threads and 100 KB of shared memory: two CTAs an SM, as the tiles.)
      share_kernel<8><<<kCtas, 384, 100 * 1024>>>(p, out.get(), slots.get());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(rank.download(), std::vector<std::uint32_t>(1, 0)) << "counter zero after launch " << launch;
      const std::vector<GatherShares> got = out.download();
      const std::vector<std::uint32_t> slot = slots.download();
      // The first-placed (warp 0 in slots 0-11 of 384-thread CTAs) take 0 .. F - 1.
      const auto first = static_cast<std::int32_t>(std::count_if(slot.begin(), slot.end(), [](std::uint32_t w) { return w < 12; }));
      EXPECT_GT(first, 0);
      for (int c = 0; c < kCtas; ++c)
        EXPECT_EQ(got[static_cast<std::size_t>(c)].self < first, slot[static_cast<std::size_t>(c)] < 12) << "cta " << c;
      std::vector<int> taken(kCtas, 0);
      for (const GatherShares& g : got) {
        ASSERT_GE(g.self, 0);
        ASSERT_LT(g.self, kCtas);
        ++taken[static_cast<std::size_t>(g.self)];
        const GatherShares want =
            test::reference_placement_shares(cost, (kN + kBw - 1) / kBw, kCtas, g.self, kGatherRankLead);
        ASSERT_NE(want.tile_cost, 0) << "weighted shares (by cost, or equal ones)";
        ASSERT_EQ(g.tile_cost, want.tile_cost) << "share " << g.self;
        ASSERT_EQ(g.begin, want.begin) << "share " << g.self;
        ASSERT_EQ(g.end, want.end) << "share " << g.self;
        expect_prepared(g, want, g.self);
      }
      for (int c = 0; c < kCtas; ++c) EXPECT_EQ(taken[static_cast<std::size_t>(c)], 1) << "share " << c;
    }
  }
}

}  // namespace
}  // namespace fp4moe::kernels
