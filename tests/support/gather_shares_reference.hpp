// The host's reading of the gather tiles' cost shares (kernels/sm90/
// stream_k.hpp, GatherShares), shared by the CPU tests of the partition and
// the GPU test of the kernel prologue that works them out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/sm90/stream_k.hpp"

namespace fp4moe::test {

using kernels::gather_unit_cost;

/// Expert token counts of M tokens each routed to `top` distinct experts of E at random.
inline std::vector<std::int32_t> routed_counts(std::mt19937& rng, int m, int experts, int top) {
  std::vector<std::int32_t> counts(static_cast<std::size_t>(experts), 0);
  std::vector<int> ids(static_cast<std::size_t>(experts));
  for (int t = 0; t < m; ++t) {
    for (int i = 0; i < experts; ++i) ids[static_cast<std::size_t>(i)] = i;
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int k = 0; k < top; ++k) ++counts[static_cast<std::size_t>(ids[static_cast<std::size_t>(k)])];
  }
  return counts;
}

/// CTA c's shares for a tile's unit costs (a unit of cost 1 has no token):
/// by cost where GatherShares::applies, begin(c) the first unit whose cost
/// before it reaches target(c) (weighted by `lead`); else tile_cost 0 (the
/// equal shares, or with a lead reference_placement_shares's fallback).
inline kernels::GatherShares reference_gather_shares(const std::vector<std::int32_t>& cost, std::int64_t tiles,
                                                     std::int32_t ctas, std::int64_t c, std::int32_t lead = 0) {
  std::vector<std::int64_t> prefix(cost.size() + 1, 0);
  for (std::size_t e = 0; e < cost.size(); ++e) prefix[e + 1] = prefix[e] + cost[e];
  kernels::GatherShares g;
  g.tiles = tiles;
  g.units = static_cast<std::int32_t>(cost.size());
  g.ctas = ctas;
  const auto idle = static_cast<std::int32_t>(std::count(cost.begin(), cost.end(), 1));
  if (!kernels::GatherShares::applies(tiles, prefix.back(), *std::max_element(cost.begin(), cost.end()), idle, g.units,
                                      ctas, lead))
    return g;
  g.lead = lead;
  g.tile_cost = prefix.back();
  g.last_prefix = prefix[cost.size() - 1];
  auto begin = [&](std::int64_t cta) {
    const std::int64_t t = g.target(cta);
    return t / g.tile_cost * g.units + (std::lower_bound(prefix.begin(), prefix.end(), t % g.tile_cost) - prefix.begin());
  };
  g.begin = begin(c);
  g.end = begin(c + 1);
  return g;
}

/// As the kernel's prologue takes share c with a lead: by cost where that
/// applies, else the weighted equal shares where they apply, else the equal
/// shares (tile_cost 0).
inline kernels::GatherShares reference_placement_shares(const std::vector<std::int32_t>& cost, std::int64_t tiles,
                                                        std::int32_t ctas, std::int64_t c, std::int32_t lead) {
  kernels::GatherShares g = reference_gather_shares(cost, tiles, ctas, c, lead);
  if (g.tile_cost == 0 && kernels::GatherShares::applies_uniform(tiles, g.units, ctas, lead)) g.take_weighted_equal(c, lead);
  return g;
}

}  // namespace fp4moe::test
