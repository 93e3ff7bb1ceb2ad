// Stream-K: every CTA of the grid takes an equal, contiguous share of all
// tiles' K work, so no SM idles in a last, partial wave of whole tiles.
//
// The work is tiles × units (a unit: a K block, or for moe_dense_fc2 one
// expert), numbered tile-major. CTA c of G owns units [begin(c), begin(c+1)),
// which it walks as segments, one per tile it touches. A tile's contributors
// are the CTAs whose shares meet it; each stores its partial in the slot
// c − (the tile's first contributor), and the last to arrive adds the slots
// in order, so repeats are bit-identical. Host and device share this
// arithmetic; the CPU tests check that the segments cover every unit once
// and agree with the slot counts. Every share must be non-empty (G ≤ N; the
// host launches at most one CTA per unit), or a tile would count a
// contributor that never arrives.
//
// Equal shares: begin(c) = c·N/G (N = tiles·units, rounded down).
//
// Weighted shares (moe_dense_fc2 with routed alpha): a tile whose tokens use
// few experts skips the others, so its units are cheaper. The tiles come in
// token blocks (tiles_per_block weight tiles each, block-major) and every
// unit of block b costs weight[b], the experts its tokens use, clamped to
// [l, h] = [units/kWeightSpread, units] so the slot bound stays small. CTA c
// begins at the unit where cost c·W/G falls (W the total). Only where a
// share's cost spans at least one of the heaviest units (N·l/G ≥ h), so no
// share is empty; with fewer units per CTA the shares are equal.
#pragma once

#include <cstdint>

#include "fp4moe/hostdevice.hpp"

namespace fp4moe::kernels {

/// Weighted shares: the heaviest unit costs at most this many times the lightest.
constexpr std::int32_t kWeightSpread = 4;
/// Weighted shares keep one prefix entry per token block and one share
/// boundary per CTA in shared memory: with more blocks or CTAs (or 2^31
/// units) the shares are equal.
constexpr std::int32_t kMaxWeightedBlocks = 256;
constexpr std::int32_t kMaxWeightedCtas = 512;
/// MoE-dense CTAs read their stream-K segments from a shared-memory table of
/// this many (tile_scheduler.cuh). Equal shares meet at most tiles/G + 3
/// tiles, so the host launches at least tiles/(kMaxStreamKSegments − 3)
/// CTAs (moe_stream_k_grid); weighted ones (at most kWeightSpread·N/G + 2
/// units) meet at most 4·tiles/G + 3, so with more tiles per CTA the
/// shares are equal.
constexpr std::int32_t kMaxStreamKSegments = 32;
/// The kernel's prologue sums a token block's expert count from one
/// partial per 32 experts (kernels/moe/block_experts.hpp): with more
/// experts, equal shares.
constexpr std::int32_t kMaxWeightedUnits = 1024;

/// n / d for n ≥ 0, d > 0: in 32 bits where both fit. On the GPU a 64-bit
/// division is a subroutine of ~70 instructions; GatherShares's prologue
/// (prepare_segments and the targets) takes a few, where the values fit 32
/// bits at every suite shape, and its work items none (own_segment).
FP4MOE_HD std::int64_t div_nonneg(std::int64_t n, std::int64_t d) {
  if (((n | d) >> 32) == 0) return static_cast<std::uint32_t>(n) / static_cast<std::uint32_t>(d);
  return n / d;
}

/// The cost of a unit of a token block whose tokens use `active` of `units` experts.
FP4MOE_HD std::int32_t stream_k_weight(std::int32_t active, std::int32_t units) {
  const std::int32_t floor = (units + kWeightSpread - 1) / kWeightSpread;
  return active < floor ? floor : (active > units ? units : active);
}

/// The CTAs a MoE-dense stream-K launch takes: every resident slot (at
/// most one per unit), and never so few that a CTA's equal share meets more
/// tiles than its segment table holds (CTAs past the resident ones run
/// later; stream-K never waits on another CTA, so that stays correct).
FP4MOE_HD std::int64_t moe_stream_k_grid(std::int64_t tiles, std::int32_t units, std::int64_t slots) {
  const std::int64_t work = tiles * units, fit = (tiles + kMaxStreamKSegments - 4) / (kMaxStreamKSegments - 3);
  std::int64_t g = slots < work ? slots : work;
  g = g > fit ? g : fit;
  return g > 1 ? g : 1;
}

struct StreamKSegment {
  std::int64_t tile;
  std::int32_t unit_begin, unit_end;  ///< units of the tile, [begin, end)
  std::int32_t slot, slots;           ///< this CTA's slot among the tile's contributors
};

struct StreamK {
  std::int64_t tiles = 0;
  std::int32_t units = 1;  ///< per tile
  std::int32_t ctas = 1;   ///< G
  /// Weighted shares: prefix[b] = Σ weight of blocks before b (blocks + 1
  /// entries). Null: equal shares.
  const std::int32_t* prefix = nullptr;
  std::int32_t blocks = 0;           ///< token blocks
  std::int32_t tiles_per_block = 0;  ///< tiles = blocks · tiles_per_block
  /// Weighted shares: weighted_begin(c) for c = 0 .. G, tabulated once (the
  /// kernel's prologue) so a segment costs table look-ups, not ~40 64-bit
  /// divisions (measured: ~10 us per work item). Null: equal shares.
  const std::int32_t* begins = nullptr;

  FP4MOE_HD std::int64_t work() const { return tiles * units; }
  /// Whether weights would be used: every share spans a heaviest unit, and
  /// the CTAs' boundaries, segments and experts' bits fit the kernels' tables.
  FP4MOE_HD bool weights_apply() const {
    return ctas <= kMaxWeightedCtas && units <= kMaxWeightedUnits && work() < (std::int64_t(1) << 31) &&
           work() * stream_k_weight(0, units) / ctas >= units &&
           kWeightSpread * tiles <= std::int64_t(kMaxStreamKSegments - 3) * ctas;
  }
  /// Whether weighted_begin applies: weights given, for few enough blocks.
  FP4MOE_HD bool weighted() const { return prefix && blocks <= kMaxWeightedBlocks && weights_apply(); }

  /// First unit of CTA c's share (c ≤ G).
  FP4MOE_HD std::int64_t share_begin(std::int64_t c) const { return begins ? begins[c] : c * work() / ctas; }

  /// Weighted shares: the unit where cost c·W/G falls (c ≤ G).
  FP4MOE_HD std::int64_t weighted_begin(std::int64_t c) const {
    if (c >= ctas) return work();
    const std::int64_t block_units = std::int64_t(tiles_per_block) * units;
    const std::int64_t cost = c * (std::int64_t(prefix[blocks]) * block_units) / ctas;
    // The block the cost falls in: the last b with prefix[b]·block_units ≤ cost.
    std::int32_t lo = 0, hi = blocks - 1;
    while (lo < hi) {
      const std::int32_t mid = (lo + hi + 1) / 2;
      if (std::int64_t(prefix[mid]) * block_units <= cost) lo = mid;
      else hi = mid - 1;
    }
    return lo * block_units + (cost - std::int64_t(prefix[lo]) * block_units) / (prefix[lo + 1] - prefix[lo]);
  }

  /// The CTA whose share holds unit u: the largest c with share_begin(c) ≤ u.
  FP4MOE_HD std::int64_t owner(std::int64_t u) const {
    if (!begins) return ((u + 1) * ctas + work() - 1) / work() - 1;
    std::int32_t lo = 0, hi = ctas - 1;
    while (lo < hi) {
      const std::int32_t mid = (lo + hi + 1) / 2;
      if (begins[mid] <= u) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /// CTA c's i-th segment; false past its share.
  FP4MOE_HD bool segment(std::int64_t c, int i, StreamKSegment& s) const {
    const std::int64_t begin = share_begin(c), end = share_begin(c + 1);
    const std::int64_t start = i == 0 ? begin : (begin / units + i) * units;
    if (start >= end) return false;
    s.tile = start / units;
    const std::int64_t tile_begin = s.tile * units;
    s.unit_begin = static_cast<std::int32_t>(start - tile_begin);
    const std::int64_t tile_end = tile_begin + units;
    s.unit_end = static_cast<std::int32_t>((end < tile_end ? end : tile_end) - tile_begin);
    const std::int64_t first = owner(tile_begin);
    s.slot = static_cast<std::int32_t>(c - first);
    s.slots = static_cast<std::int32_t>(owner(tile_end - 1) - first + 1);
    return true;
  }

  /// The i-th segment of the share [begin, end) of units: its tile and
  /// units (not its slots); false past the share. (segment() above spells
  /// the same steps out: through this helper ptxas scheduled every stream-K
  /// kernel differently, stop 56. Only GatherShares calls it.)
  FP4MOE_HD static bool segment_units(std::int64_t begin, std::int64_t end, std::int32_t units, int i,
                                      StreamKSegment& s) {
    const std::int64_t start = i == 0 ? begin : (div_nonneg(begin, units) + i) * units;
    if (start >= end) return false;
    s.tile = div_nonneg(start, units);
    const std::int64_t tile_begin = s.tile * units, tile_end = tile_begin + units;
    s.unit_begin = static_cast<std::int32_t>(start - tile_begin);
    s.unit_end = static_cast<std::int32_t>((end < tile_end ? end : tile_end) - tile_begin);
    return true;
  }

  /// The most contributors any tile has, for equal shares or (weighted) for
  /// any weights stream_k_weight can give: a tile of `units` units meets at
  /// most (units − 1) / q + 2 shares of at least q units each.
  ///   Equal: q = ⌊N/G⌋.
  ///   Weighted, weights in [l, h]: consecutive shares' costs differ by at
  ///   least D = ⌊N·l/G⌋ (W ≥ N·l), so a share spans at least q = ⌊D/h⌋
  ///   units (≥ 1 where weights_apply).
  /// The host sizes the split-K workspace by it.
  FP4MOE_HD std::int32_t max_slots(bool weighted) const {
    const std::int64_t n = work();
    std::int64_t q = n / ctas;
    if (weighted && weights_apply()) q = n * stream_k_weight(0, units) / ctas / units;
    const std::int64_t bound = q == 0 ? ctas : (units - 1) / q + 2;
    return static_cast<std::int32_t>(bound < ctas ? bound : ctas);
  }
};

/// Stream-K of the gather tiles (moe_dense_fc2 with gathered tokens) by cost.
/// Every tile there is the same experts (units) against the same tokens, so
/// a unit's cost repeats tile by tile: kGatherPassCost per pass of BT
/// tokens, plus one for the walk past it. Equal shares of units give a CTA
/// whichever experts its stretch holds; at M = 32 (top-8 of 256, a third of
/// the experts without a token) the busiest of 264 CTAs drew ~8% more
/// passes than the mean (a simulation of the suite's routing, docs/PERF.md
/// stop 56). Here CTA c begins at the first unit u whose cost before it,
/// cum(u) = (u / units)·T + P[u % units] (T a tile's cost, P the prefix
/// within a tile), reaches target(c) = ceil(c·W/G), W = tiles·T. Then the
/// share holding unit u is the last c with target(c) ≤ cum(u), which needs
/// no table: owner_at(cum(u)) = min(G − 1, ⌊cum(u)·G/W⌋). Every share is
/// non-empty when no unit costs more than ⌊W/G⌋ (applies()); a tile meets
/// at most ⌊G/tiles⌋ + 2 shares (max_slots). (Weighted shares, `lead`:
/// the same with c·W/G read as B(c)·W/B(G), B the weight before a share.)
/// The kernel's prologue works out its own share (gather_stream_k_share,
/// tile_scheduler.cuh), for its index or, with a lead, for the index its
/// placement gave it; where the costs do not apply it takes the weighted
/// equal share (a lead) or the equal share (none).
///
/// Measured (docs/PERF.md stop 56): moe-fc2 M = 32 ran 0.95-0.98x the time
/// with cost shares, M = 64-128 0.98-1.01x, and the 16-token tiles (M >=
/// 160) ran 1.00-1.05x with the prologue in them. So only the 8-token
/// tiles (gather_cost_shares) compile it, and they share by cost only when
/// at least 1/kGatherIdleShare of the experts have no token: a quarter
/// until stop 58, an eighth since, which adds M = 64 (~36 of 256 idle),
/// whose passes a CTA had spread 87-100 on equal shares: 0.986-0.994x the
/// time (H200, docs/PERF.md stop 58). (Its code in those tiles still costs
/// their plain MXFP4 rows at M = 96-128 ~1.3%, where the shares come out
/// equal: two A/Bs, stop 56.)
constexpr std::int32_t kGatherPassCost = 16;
constexpr std::int32_t kGatherIdleShare = 8;
/// The heaviest unit cost shares take (2^20: 65536 passes of one expert).
constexpr std::int32_t kMaxGatherUnitCost = std::int32_t(1) << 20;
/// A gather unit's cost from its expert's token count: kGatherPassCost a
/// pass of bt tokens, plus one for the walk past it (an idle expert costs 1).
FP4MOE_HD std::int32_t gather_unit_cost(std::int32_t count, std::int32_t bt) {
  return kGatherPassCost * ((count + bt - 1) / bt) + 1;
}
/// The two-CTA 8-token gather tiles' weight for the CTAs placed first on
/// their SMs, in 64ths (GatherShares::lead), from kGatherRankLeadFromTokens
/// tokens up; below, shares by CTA index. Measured (docs/PERF.md stop 59,
/// H200, moe-fc2): the first-placed CTAs run a pass ~13% faster than their
/// SM's other at M = 32 and ~25% at M = 128; lead 8 (weights 72:56) took
/// M = 96-128 to 0.95-0.99x and M = 64 to 0.97-1.00x, and cost M = 32 up
/// to 1.4%.
constexpr std::int32_t kGatherRankLead = 8;
constexpr std::int32_t kGatherRankLeadFromTokens = 64;
constexpr std::int32_t gather_rank_lead(std::int64_t tokens) {
  return tokens >= kGatherRankLeadFromTokens ? kGatherRankLead : 0;
}
/// Whether a gather tile of BT-token passes shares stream-K by cost.
constexpr bool gather_cost_shares(int bt) { return bt == 8; }

/// Weighted shares (`lead` > 0, in 64ths; docs/PERF.md stops 58-59):
/// share c of the first ⌊G/2⌋ weighs 64 + lead, of the rest 64 − lead, so
/// that where the kernel gives the first half of the share indices to the
/// CTAs placed first on their SMs (which run faster: stops 36 and 58) an
/// SM's two CTAs end together. With lead 0 every share weighs one, as
/// before.
struct GatherShares {
  std::int64_t tiles = 0;
  std::int32_t units = 1, ctas = 1;
  std::int64_t tile_cost = 0;    ///< T; 0: equal shares (StreamK)
  std::int64_t last_prefix = 0;  ///< P[units − 1]: a tile's cost before its last unit
  std::int64_t begin = 0, end = 0;  ///< the CTA's share [begin(c), begin(c + 1)) in units
  std::int32_t lead = 0;         ///< the first half's extra weight, in 64ths (0 ≤ lead < 64)
  std::int32_t self = 0;         ///< the share this CTA takes (its index, or its placement's: tile_scheduler.cuh)
  // The share's segments as prepare_segments works them out once, so that
  // a work item's segment (own_segment) takes no division (segment() takes
  // two owner_at a work item, each a 64-bit division where the weighted
  // products pass 2^32: a ~70-instruction subroutine).
  std::int64_t first_tile = 0;   ///< the share's first tile
  std::int32_t head_slot = 0;    ///< this CTA's slot in its first tile
  std::int32_t head_slots = 1;   ///< that tile's contributors
  std::int32_t tail_slots = 1;   ///< its last tile's, where that is not its first (this CTA is slot 0 there)

  FP4MOE_HD std::int64_t total() const { return tiles * tile_cost; }
  /// Weights of a first-half and a second-half share.
  FP4MOE_HD static std::int64_t first_weight(std::int32_t lead) { return lead > 0 ? 64 + lead : 1; }
  FP4MOE_HD static std::int64_t second_weight(std::int32_t lead) { return lead > 0 ? 64 - lead : 1; }
  /// The weight of shares 0 .. c − 1 (c ≤ G).
  FP4MOE_HD static std::int64_t weight_before(std::int64_t c, std::int32_t ctas, std::int32_t lead) {
    const std::int64_t h = ctas / 2;
    return c <= h ? c * first_weight(lead) : h * first_weight(lead) + (c - h) * second_weight(lead);
  }
  FP4MOE_HD std::int64_t weight_before(std::int64_t c) const { return weight_before(c, ctas, lead); }
  /// Whether cost shares apply for unit costs of at most `max_cost`, `idle`
  /// of a tile's units without a token: enough idle units to matter, each
  /// share spanning a heaviest unit, cum·G far inside 64 bits, and a tile's
  /// cost inside 32 bits (at most kMaxWeightedUnits units of at most
  /// kMaxGatherUnitCost: 2^30), the width the prologue sums it in. The
  /// limits are checked on the units and the heaviest unit, not on the sum,
  /// which may have wrapped where they fail.
  /// (Weighted, `lead` > 0: the lightest share must span a heaviest unit,
  /// and cost times the total weight must stay inside 63 bits.)
  FP4MOE_HD static bool applies(std::int64_t tiles, std::int64_t tile_cost, std::int64_t max_cost, std::int32_t idle,
                                std::int32_t units, std::int32_t ctas, std::int32_t lead = 0) {
    const std::int64_t w = tiles * tile_cost;
    const bool base = std::int64_t(idle) * kGatherIdleShare >= units && units <= kMaxWeightedUnits &&
                      max_cost <= kMaxGatherUnitCost && tile_cost > 0 && tiles < (std::int64_t(1) << 20) &&
                      max_cost <= div_nonneg(w, ctas);
    if (!base || lead == 0) return base;
    const std::int64_t weights = weight_before(ctas, ctas, lead);
    return lead < 64 && w < (std::int64_t(1) << 62) / weights && max_cost <= div_nonneg(w * second_weight(lead), weights);
  }
  /// Weighted equal shares (every unit of cost one) for `lead`: each share
  /// non-empty and the arithmetic inside 63 bits.
  FP4MOE_HD static bool applies_uniform(std::int64_t tiles, std::int32_t units, std::int32_t ctas, std::int32_t lead) {
    const std::int64_t w = tiles * units, weights = weight_before(ctas, ctas, lead);
    return lead > 0 && lead < 64 && tiles < (std::int64_t(1) << 20) && units <= kMaxWeightedUnits &&
           w < (std::int64_t(1) << 62) / weights && div_nonneg(w * second_weight(lead), weights) >= 1;
  }
  /// Share c as weighted equal shares for `lead` (applies_uniform): every
  /// unit of cost one, so a share begins at its target.
  FP4MOE_HD void take_weighted_equal(std::int64_t c, std::int32_t lead_) {
    lead = lead_;
    tile_cost = units;
    last_prefix = units - 1;
    begin = target(c);
    end = target(c + 1);
  }
  /// The cost before CTA c's first unit (c ≤ G): ⌈B(c)·W / B(G)⌉, B the
  /// weight before a share.
  FP4MOE_HD std::int64_t target(std::int64_t c) const {
    const std::int64_t weights = weight_before(ctas);
    return div_nonneg(weight_before(c) * total() + weights - 1, weights);
  }
  /// The CTA whose share holds a unit with `cost_before` before it: the last
  /// c with target(c) ≤ cost_before, i.e. with B(c) ≤ ⌊cost_before·B(G)/W⌋.
  FP4MOE_HD std::int64_t owner_at(std::int64_t cost_before) const {
    const std::int64_t x = div_nonneg(cost_before * weight_before(ctas), total());
    const std::int64_t h = ctas / 2, first = h * first_weight(lead);
    const std::int64_t c = x < first ? div_nonneg(x, first_weight(lead)) : h + div_nonneg(x - first, second_weight(lead));
    return c < ctas - 1 ? c : ctas - 1;
  }
  /// The CTA's i-th segment (c: its index); false past its share.
  FP4MOE_HD bool segment(std::int64_t c, int i, StreamKSegment& s) const {
    if (tile_cost == 0) return StreamK{tiles, units, ctas}.segment(c, i, s);
    if (!StreamK::segment_units(begin, end, units, i, s)) return false;
    const std::int64_t first = owner_at(s.tile * tile_cost);
    s.slot = static_cast<std::int32_t>(c - first);
    s.slots = static_cast<std::int32_t>(owner_at(s.tile * tile_cost + last_prefix) - first + 1);
    return true;
  }
  /// Share c's first and last tiles' owners, into the fields above; equal
  /// shares (tile_cost 0) also set begin and end here. A tile between them
  /// is this share's alone (slot 0 of 1).
  FP4MOE_HD void prepare_segments(std::int64_t c) {
    const StreamK sk{tiles, units, ctas};
    if (tile_cost == 0) {
      begin = sk.share_begin(c);
      end = sk.share_begin(c + 1);
    }
    first_tile = div_nonneg(begin, units);
    if (begin >= end) return;
    auto first_owner = [&](std::int64_t t) { return tile_cost ? owner_at(t * tile_cost) : sk.owner(t * units); };
    auto last_owner = [&](std::int64_t t) {
      return tile_cost ? owner_at(t * tile_cost + last_prefix) : sk.owner(t * units + units - 1);
    };
    const std::int64_t head_first = first_owner(first_tile);
    head_slot = static_cast<std::int32_t>(c - head_first);
    head_slots = static_cast<std::int32_t>(last_owner(first_tile) - head_first + 1);
    tail_slots = static_cast<std::int32_t>(last_owner(div_nonneg(end - 1, units)) - c + 1);
  }
  /// This share's i-th segment from what prepare_segments worked out (the
  /// same as segment(self, i, s)); false past the share.
  FP4MOE_HD bool own_segment(int i, StreamKSegment& s) const {
    const std::int64_t tile = first_tile + i, tile_begin = tile * units, tile_end = tile_begin + units;
    const std::int64_t start = i == 0 ? begin : tile_begin;
    if (start >= end) return false;
    s.tile = tile;
    s.unit_begin = static_cast<std::int32_t>(start - tile_begin);
    s.unit_end = static_cast<std::int32_t>((end < tile_end ? end : tile_end) - tile_begin);
    s.slot = i == 0 ? head_slot : 0;
    s.slots = i == 0 ? head_slots : (tile_end >= end ? tail_slots : 1);
    return true;
  }
  /// The most contributors a tile has under cost shares (any costs that
  /// apply): a tile's cost over the lightest share's, plus two.
  FP4MOE_HD static std::int32_t max_slots(std::int64_t tiles, std::int32_t ctas, std::int32_t lead = 0) {
    const std::int64_t bound = weight_before(ctas, ctas, lead) / (second_weight(lead) * tiles) + 2;
    return static_cast<std::int32_t>(bound < ctas ? bound : ctas);
  }
};

/// Stream-K over many tiles (the 128 x 256 tiles: KernelEntry::
/// stream_k_whole_rounds): whole tiles, CTA c taking tile c + r·G in round r, for all
/// but the last one-and-a-fraction waves, and stream-K's equal shares over
/// those. Only the partial wave costs anything to take back (a CTA with one
/// tile fewer idles for a tile's time), and sharing 1 + f waves instead of
/// f keeps every tile's contributors to two or three, where a short last wave
/// over G CTAs would split its few tiles G ways.
FP4MOE_HD std::int64_t stream_k_whole_rounds(std::int64_t tiles, std::int32_t ctas) {
  const std::int64_t waves = tiles / ctas;
  return waves >= 2 ? waves - 1 : 0;
}

/// A CTA's (or a two-CTA cluster's) stream-K work item: units [unit_begin,
/// unit_end) of one tile, slot `slot` of its `slots` contributors, and the
/// partial tile it stores where slots > 1: the tile's index past the whole
/// rounds, so the workspace holds only the shared region's tiles.
struct WorkItem {
  std::int64_t tile;
  std::int32_t unit_begin, unit_end;
  std::int32_t slot, slots;
  std::int64_t partial;
};

/// Stream-K work item i of CTA c of G over `tiles` tiles of `units` units
/// each: stream_k_whole_rounds whole rounds (tile c + i·G), then stream-K's
/// equal shares of the rest. False past the CTA's last item. (The 128 x 256
/// tiles take no fixed split, and run whole tiles without this arithmetic:
/// TileScheduler::whole_work.)
FP4MOE_HD bool work_item(std::int64_t tiles, std::int32_t units, std::int64_t c, std::int32_t ctas, std::int32_t i,
                         WorkItem& w) {
  w.slot = 0;
  w.slots = 1;
  w.unit_begin = 0;
  w.unit_end = units;
  const std::int64_t rounds = stream_k_whole_rounds(tiles, ctas);
  if (i < rounds) {
    w.tile = c + std::int64_t(i) * ctas;
    w.partial = 0;
    return true;
  }
  const std::int64_t first = rounds * ctas;
  StreamKSegment s;
  if (!StreamK{tiles - first, units, ctas}.segment(c, static_cast<int>(i - rounds), s)) return false;
  w.tile = first + s.tile;
  w.unit_begin = s.unit_begin;
  w.unit_end = s.unit_end;
  w.slot = s.slot;
  w.slots = s.slots;
  w.partial = s.tile;
  return true;
}

/// What a stream-K launch's partial tiles take under work_item (the 128 x
/// 256 tiles): the most contributors a tile has (split_slots) and the
/// partial tiles the workspace holds, per CTA of a tile's cluster.
struct SplitWorkspaceShape {
  std::int32_t slots;
  std::int64_t partial_tiles;
};
FP4MOE_HD SplitWorkspaceShape split_workspace_shape(std::int64_t tiles, std::int32_t units, std::int32_t ctas) {
  const std::int64_t shared = tiles - stream_k_whole_rounds(tiles, ctas) * ctas;
  return {StreamK{shared, units, ctas}.max_slots(false), shared};
}

}  // namespace fp4moe::kernels
