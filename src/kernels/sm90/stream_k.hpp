// Stream-K: every CTA of the grid takes an equal, contiguous share of all
// tiles' K work, so no SM idles in a last, partial wave of whole tiles.
//
// The work is tiles × units (a unit: a K block, or for moe_dense_fc2 one
// expert), numbered tile-major. CTA c of G owns units [c·N/G, (c+1)·N/G)
// (N = tiles·units, rounded down), which it walks as segments, one per tile
// it touches. A tile's contributors are the CTAs whose shares meet it; each
// stores its partial in the slot c − (the tile's first contributor), and the
// last to arrive adds the slots in order, so repeats are bit-identical.
// Host and device share this arithmetic; the CPU tests check that the
// segments cover every unit once and agree with the slot counts. Every
// share must be non-empty (G ≤ N; the host launches at most one CTA per
// unit), or a tile would count a contributor that never arrives.
#pragma once

#include <cstdint>

#include "fp4moe/hostdevice.hpp"

namespace fp4moe::kernels {

struct StreamKSegment {
  std::int64_t tile;
  std::int32_t unit_begin, unit_end;  ///< units of the tile, [begin, end)
  std::int32_t slot, slots;           ///< this CTA's slot among the tile's contributors
};

struct StreamK {
  std::int64_t tiles = 0;
  std::int32_t units = 1;  ///< per tile
  std::int32_t ctas = 1;   ///< G

  FP4MOE_HD std::int64_t work() const { return tiles * units; }
  /// First unit of CTA c's share.
  FP4MOE_HD std::int64_t share_begin(std::int64_t c) const { return c * work() / ctas; }
  /// The CTA whose share holds unit u: the largest c with share_begin(c) ≤ u.
  FP4MOE_HD std::int64_t owner(std::int64_t u) const { return ((u + 1) * ctas + work() - 1) / work() - 1; }

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

  /// The most contributors any tile has: a tile of `units` units meets at
  /// most (units − 1) / q + 2 shares of at least q = ⌊N/G⌋ units each.
  FP4MOE_HD std::int32_t max_slots() const {
    const std::int64_t q = work() / ctas;
    const std::int64_t bound = q == 0 ? ctas : (units - 1) / q + 2;
    return static_cast<std::int32_t>(bound < ctas ? bound : ctas);
  }
};

}  // namespace fp4moe::kernels
