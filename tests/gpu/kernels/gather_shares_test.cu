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
__global__ void share_kernel(GemmParams p, GatherShares* out) {
  __shared__ GatherShares shares;
  if (threadIdx.x < 32) gather_stream_k_share<BT, kBw>(p, &shares);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = shares;
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

}  // namespace
}  // namespace fp4moe::kernels
