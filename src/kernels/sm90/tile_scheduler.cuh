// The layouts as tile schedulers of the one GEMM engine. A tile is BT tokens ×
// BW weights of one group; CTAs take tiles persistently (tile += gridDim.x),
// weight blocks fastest so concurrent CTAs share token blocks and neighbouring
// weight tiles stay in L2. A CTA's work items (work(i, t)) are whole tiles,
// split-K slices of them (split_k ≥ 2: slice s of a tile covers units
// [s·U/split, (s+1)·U/split) of its U units, K blocks or experts), or
// stream-K segments (split_k = 0, stream_k.hpp; the 128 x 256 tiles after
// rounds of whole tiles: work_item); with two-CTA clusters, pairs of token
// blocks (cluster_work), shared the same way, both CTAs of a pair taking the
// same units.
//
//   dense       one group, M tokens
//   contiguous  ΣM token rows; the expert of a token block is m_indices of its
//               first row (−1: the whole block is padding, written as 0);
//               blocks never mix experts (rows are aligned per expert)
//   masked      G groups of max M rows; group g has masked_m[g] valid rows
//   moe-dense   tiles as dense; the K loop over experts (and which experts a
//               tile skips) is the kernel's moe producer
//   moe-fc1     one group of tokens; a tile is BW/2 output columns of one
//               expert (gate and up rows, BW weight rows in all)
//   moe-gather  a tile is BW weight rows × all M tokens; its K units are the
//               experts, and the producer (moe_gather_producer.cuh) walks
//               each expert's gathered tokens BT at a time (group = expert,
//               m0 = first slot, in the tiles it hands the loader)
#pragma once

#include <cstdint>

#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/ptx/timer.cuh"
#include "kernels/sm90/stream_k.hpp"

namespace fp4moe::kernels {

struct Tile {
  std::int32_t group;   ///< expert (−1: contiguous padding block)
  std::int32_t m0;      ///< first token row (contiguous: global row; masked: row in group)
  std::int32_t n0;      ///< first weight row within the group
  std::int32_t m_end;   ///< one past the last valid token row of this tile's group
  std::int32_t index;   ///< output tile (split-K counters and partials)
  std::int32_t unit_begin, unit_end;  ///< the K units (K blocks or experts) this work item covers
  std::int32_t slot, slots;           ///< its partial's slot among the tile's `slots` contributors
  /// slots > 1 on the kWholeRounds tiles: its partial tile (WorkItem::partial;
  /// clusters: · 2 + rank). Elsewhere the tile's own (index).
  std::int32_t partial;
  bool multicast;       ///< two-CTA clusters: the pair shares this weight tile (cluster_work)
};

/// MoE-dense stream-K's shared-memory tables after the weight prefix
/// (kMaxWeightedBlocks + 1 ints): every CTA's share boundary (weighted
/// shares only), then this CTA's segments (equal or weighted shares).
struct StreamKSegmentTable {
  std::int32_t count;
  StreamKSegment segment[kMaxStreamKSegments];
};
__device__ inline std::int32_t* stream_k_begins_table(std::int32_t* prefix) { return prefix + kMaxWeightedBlocks + 1; }
__device__ inline StreamKSegmentTable* stream_k_segment_table(const std::int32_t* prefix) {
  const std::int32_t* end = prefix + kMaxWeightedBlocks + 1 + kMaxWeightedCtas + 1;
  return reinterpret_cast<StreamKSegmentTable*>(const_cast<std::int32_t*>(end) + (reinterpret_cast<std::uintptr_t>(end) / 4) % 2);
}
/// Shared-memory bytes of the weight prefix and both tables (8-byte alignment slack included).
constexpr int kStreamKTableBytes = 4 * (kMaxWeightedBlocks + 1 + kMaxWeightedCtas + 1) + 4 + int(sizeof(StreamKSegmentTable));

/// kWholeRounds: stream-K (split_k 0) after whole rounds of tiles
/// (kernels::work_item; the 128 x 256 tiles), whose partial tiles are the
/// shared region's only (Tile::partial). Otherwise the work items as before
/// it: stream-K shares every tile's units, and a tile's partials are its
/// own.
template <Layout kLayout, int BT, int BW, bool kWholeRounds = false>
struct TileScheduler {
  /// Output columns a tile covers (FC1: half its weight rows are gate rows).
  static constexpr int kOutCols = kLayout == Layout::kMoeFc1 ? BW / 2 : BW;
  const GemmParams& p;
  std::int32_t n_blocks;    // weight blocks per group
  std::int32_t tiles;       // output tiles
  std::int32_t units;       // K units per tile
  // Shared memory. Masked: cumulative token blocks per group (masked_prefix).
  // MoE-dense: cumulative stream-K weights of the token blocks
  // (stream_k_weight_prefix), when p.stream_k_block_experts is set.
  const std::int32_t* prefix;
  // MoE-dense, split_k = 0: this CTA's segments, tabulated by the prologue
  // (stream_k_segments_into_table), equal or weighted shares alike. One
  // table read keeps the partition's arithmetic out of the consumers' loop:
  // with a second, computed path there the MoE-dense kernels spilled 20-280
  // bytes more (ptxas).
  const StreamKSegmentTable* stream_k_segments = nullptr;

  __device__ TileScheduler(const GemmParams& params, const std::int32_t* smem_prefix, std::int32_t units_per_tile)
      : p(params), units(units_per_tile), prefix(smem_prefix) {
    n_blocks = (p.n + kOutCols - 1) / kOutCols;
    std::int32_t t_blocks;
    if constexpr (kLayout == Layout::kMasked) {
      t_blocks = prefix[p.groups];
    } else if constexpr (kLayout == Layout::kMoeGather) {
      t_blocks = 1;  // every token in one tile
    } else {
      t_blocks = (p.m + BT - 1) / BT;  // dense: M rows; contiguous: ΣM rows
    }
    tiles = t_blocks * n_blocks;
    if constexpr (kLayout == Layout::kMoeDense) {
      if (p.split_k == 0) stream_k_segments = stream_k_segment_table(prefix);
    }
  }

  /// This CTA's i-th work item; false when it has no more.
  __device__ bool work(std::int32_t i, Tile& t) const {
    if constexpr (kLayout == Layout::kMoeDense) {
      if (p.split_k == 0) {
        if (i >= stream_k_segments->count) return false;
        t = segment_tile(stream_k_segments->segment[i]);
        return true;
      }
    }
    if (p.split_k == 1) return whole_work<false>(i, 0, t);  // (no division)
    if constexpr (kLayout == Layout::kMoeGather && gather_cost_shares(BT)) {
      if (p.split_k == 0) {  // this CTA's share, worked out in the prologue (gather_stream_k_share)
        StreamKSegment s;
        const GatherShares* g = reinterpret_cast<const GatherShares*>(prefix);
        if (!g->own_segment(i, s)) return false;
        t = segment_tile(s);
        return true;
      }
    }
    if constexpr (!kWholeRounds) {
      // (The split arithmetic as before work_item: in 64 bits it made ptxas
      // spill 80-200 bytes more in the MoE-dense tiles.)
      if (p.split_k == 0) {
        StreamKSegment s;
        if (!StreamK{tiles, units, static_cast<std::int32_t>(gridDim.x)}.segment(blockIdx.x, i, s)) return false;
        t = segment_tile(s);
        return true;
      }
      const std::int32_t id = blockIdx.x + i * static_cast<std::int32_t>(gridDim.x);
      if (id >= tiles * p.split_k) return false;
      t = tile(id / p.split_k);
      t.slot = id % p.split_k;
      t.slots = p.split_k;
      t.unit_begin = static_cast<std::int32_t>(std::int64_t(units) * t.slot / p.split_k);
      t.unit_end = static_cast<std::int32_t>(std::int64_t(units) * (t.slot + 1) / p.split_k);
      return true;
    }
    WorkItem w;
    if (!work_item(tiles, units, blockIdx.x, static_cast<std::int32_t>(gridDim.x), i, w)) return false;
    t = tile(static_cast<std::int32_t>(w.tile));
    take_range(w, t);
    t.partial = static_cast<std::int32_t>(w.partial);
    return true;
  }

  /// A stream-K segment's tile, with its units and slot.
  __device__ Tile segment_tile(const StreamKSegment& s) const {
    Tile t = tile(static_cast<std::int32_t>(s.tile));
    t.unit_begin = s.unit_begin;
    t.unit_end = s.unit_end;
    t.slot = s.slot;
    t.slots = s.slots;
    return t;
  }

  /// A work item's units and slot into its tile.
  __device__ static void take_range(const WorkItem& w, Tile& t) {
    t.unit_begin = w.unit_begin;
    t.unit_end = w.unit_end;
    t.slot = w.slot;
    t.slots = w.slots;
  }

  /// Two-CTA clusters (dense and contiguous): cluster c's i-th work item is
  /// the pair of token blocks 2q, 2q + 1 against one weight block (pair
  /// c + i·C of C clusters, weight blocks fastest); the CTA of rank r takes
  /// block 2q + r. The pair shares the weight tile (t.multicast) where both
  /// blocks use one group's weights: always in the dense layout, where a
  /// block past M still loads its half for its peer, multiplies the zeros
  /// TMA fills in for its tokens and stores nothing; in the contiguous
  /// layout where both blocks lie inside ΣM with one expert. Otherwise each
  /// CTA loads its own weights, and a padding block (or one past ΣM) loads
  /// nothing but still takes every stage's turn, so the pair's stage rings
  /// stay in step.
  ///
  /// Stream-K (split_k 0; two-CTA clusters are 128 x 256 tiles, which take
  /// no fixed split): work_item over the pairs, both CTAs of a cluster
  /// taking the same units of their own tiles; a CTA's partial tile is the
  /// pair's times two plus its rank.
  __device__ bool cluster_work(std::int32_t i, std::uint32_t rank, Tile& t) const {
    static_assert(kLayout == Layout::kDense || kLayout == Layout::kContiguous, "clusters pair token blocks");
    static_assert(kWholeRounds, "two-CTA clusters: the 128 x 256 tiles");
    if (p.split_k == 1) return whole_work<true>(i, rank, t);
    WorkItem w;
    if (!work_item(pairs(), units, blockIdx.x / 2, static_cast<std::int32_t>(gridDim.x / 2), i, w)) return false;
    pair_tile(static_cast<std::int32_t>(w.tile), rank, t);
    take_range(w, t);
    t.partial = static_cast<std::int32_t>(2 * w.partial + rank);
    return true;
  }

  /// Pairs of token blocks against weight blocks (two-CTA clusters).
  __device__ std::int32_t pairs() const { return (tiles / n_blocks + 1) / 2 * n_blocks; }

  /// Whole tiles only (split_k 1): work(i, t), or with two-CTA clusters
  /// (kPair) cluster_work(i, rank, t), without the split work items'
  /// arithmetic.
  template <bool kPair>
  __device__ bool whole_work(std::int32_t i, std::uint32_t rank, Tile& t) const {
    if constexpr (kPair) {
      const std::int32_t id = static_cast<std::int32_t>(blockIdx.x / 2 + i * (gridDim.x / 2));
      if (id >= pairs()) return false;
      pair_tile(id, rank, t);
      return true;
    }
    const std::int32_t id = blockIdx.x + i * static_cast<std::int32_t>(gridDim.x);
    if (id >= tiles) return false;
    t = tile(id);
    return true;
  }

  /// Pair `id` (weight blocks fastest) as the CTA of rank `rank` sees it:
  /// its token block 2q + rank against weight block id mod n_blocks, all
  /// units.
  __device__ void pair_tile(std::int32_t id, std::uint32_t rank, Tile& t) const {
    const std::int32_t t_blocks = tiles / n_blocks;
    const std::int32_t q = static_cast<std::int32_t>(p.n_blocks_div.div(static_cast<std::uint32_t>(id)));
    const std::int32_t tb = 2 * q + static_cast<std::int32_t>(rank), wb = id - q * n_blocks;
    if constexpr (kLayout == Layout::kDense) {
      t = tile(tb * n_blocks + wb);
      t.multicast = true;
    } else {
      const std::int32_t peer = tb ^ 1;
      const std::int32_t peer_group = peer < t_blocks ? p.m_indices[peer * BT] : -1;
      t = tile((tb < t_blocks ? tb : 0) * n_blocks + wb);
      if (tb >= t_blocks) {  // past ΣM: nothing to load or store
        t.index = tb * n_blocks + wb;
        t.m0 = tb * BT;
        t.group = -1;
      }
      t.multicast = t.group >= 0 && t.group == peer_group;
    }
  }

  /// Output tile `index`, covering all its units.
  __device__ Tile tile(std::int32_t index) const {
    Tile t;
    t.index = index;
    t.unit_begin = 0;
    t.unit_end = units;
    t.slot = 0;
    t.slots = 1;
    t.partial = index;
    t.multicast = false;
    const std::int32_t tb = static_cast<std::int32_t>(p.n_blocks_div.div(static_cast<std::uint32_t>(index)));
    const std::int32_t wb = index - tb * n_blocks;
    t.n0 = wb * kOutCols;
    if constexpr (kLayout == Layout::kMasked) {
      // The group g with prefix[g] <= tb < prefix[g + 1] (groups without
      // blocks repeat a prefix value), by bisection: a linear walk cost ~16
      // shared loads a tile at 32 groups (ncu, docs/PERF.md stop 22).
      std::int32_t g = 0, hi = p.groups;
      while (hi - g > 1) {
        const std::int32_t mid = (g + hi) / 2;
        if (prefix[mid] <= tb) {
          g = mid;
        } else {
          hi = mid;
        }
      }
      t.group = g;
      t.m0 = (tb - prefix[g]) * BT;
      t.m_end = p.masked_m[g] < p.m ? p.masked_m[g] : p.m;
    } else if constexpr (kLayout == Layout::kContiguous) {
      t.m0 = tb * BT;
      t.group = p.m_indices[t.m0];
      t.m_end = p.m;
    } else {
      // FC1: n0 is an output column; its expert owns columns [eI, (e+1)I).
      t.group = kLayout == Layout::kMoeFc1 ? t.n0 / p.fc1_inter : 0;
      t.m0 = tb * BT;
      t.m_end = p.m;
    }
    return t;
  }

  /// Row of the tile's first token in A's 2-D tensor map.
  __device__ std::int32_t a_row(const Tile& t) const {
    if constexpr (kLayout == Layout::kMoeGather) return t.group * p.gather_capacity + t.m0;
    return kLayout == Layout::kMasked ? t.group * p.m + t.m0 : t.m0;
  }
  /// Row of the tile's first weight in B's 2-D tensor map (FC1: of its gate
  /// rows; the up rows follow fc1_inter rows later).
  __device__ std::int32_t b_row(const Tile& t) const {
    if constexpr (kLayout == Layout::kMoeFc1) return t.group * 2 * p.fc1_inter + t.n0 % p.fc1_inter;
    return kLayout == Layout::kDense || kLayout == Layout::kMoeGather ? t.n0 : t.group * p.n + t.n0;
  }
};

/// prefix[0] = 0, prefix[i + 1] = value(0) + ... + value(i) for i < n, by
/// one warp (32 values per step, a shuffle scan carrying the running sum).
template <class Value>
__device__ void warp_prefix_sum(std::int32_t n, const Value& value, std::int32_t* prefix) {
  const int lane = threadIdx.x % 32;
  std::int32_t carry = 0;
  if (lane == 0) prefix[0] = 0;
  for (std::int32_t base = 0; base < n; base += 32) {
    const std::int32_t i = base + lane;
    std::int32_t incl = i < n ? value(i) : 0;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      const std::int32_t v = __shfl_up_sync(0xffffffffu, incl, off);
      if (lane >= off) incl += v;
    }
    if (i < n) prefix[i + 1] = carry + incl;
    carry += __shfl_sync(0xffffffffu, incl, 31);
  }
}

/// Gather layout, stream-K (split_k 0), tiles of gather_cost_shares(BT):
/// this CTA's share by cost (stream_k.hpp: GatherShares) into `out` (shared
/// memory), or where costs do not apply (a unit of cost 1 has no token) the
/// weighted equal share (p.gather_lead > 0) or the equal one; the share is
/// its index's, or with p.gather_rank its placement's (below), and its
/// segments are prepared for own_segment. Run by one warp after the grid
/// dependency (the gather kernel wrote the counts); the scheduler reads it.
template <int BT, int BW>
__device__ void gather_stream_k_share(const GemmParams& p, GatherShares* out) {
  const int lane = threadIdx.x % 32;
  GatherShares g;
  g.tiles = (p.n + BW - 1) / BW;  // every token in one tile: the weight blocks
  g.units = p.experts;
  g.ctas = static_cast<std::int32_t>(gridDim.x);
  auto cost = [&](std::int32_t e) { return e < g.units ? gather_unit_cost(p.gather_counts[e], BT) : 0; };
  // The share this CTA takes (docs/PERF.md stops 58-59): its index, or
  // with p.gather_rank one by its placement, the CTAs placed first on their
  // SMs (warp 0 in the SM's first warp slots: they run faster) numbering up
  // from 0 and the others down from G − 1, a bijection whatever the ranks
  // read. One counter holds both counts (the first-placed in its low 16
  // bits, the others in its high: the host keeps G < 2^16), so one relaxed
  // atomic numbers a CTA and tells the launch's last, which zeroes it for
  // the next launch: every other CTA's add came before its own in the
  // counter's order, and its store after (the same address, the same
  // thread). The next launch reads it after its grid dependency. Taken
  // first, so that the atomic's round trip overlaps the counts' loads
  // below. (stop 59: three counters with an ordered atomic to find the
  // last cost a round trip more, and done at the producer's end instead,
  // made ptxas spill in the consumers.)
  std::int32_t self = static_cast<std::int32_t>(blockIdx.x);
  if (p.gather_rank != nullptr && lane == 0) {
    const bool first_placed = ptx::warp_slot() < blockDim.x / 32;
    const std::uint32_t old = atomicAdd(p.gather_rank, first_placed ? 1u : 0x10000u);
    const auto ups = static_cast<std::int32_t>(old & 0xffffu), downs = static_cast<std::int32_t>(old >> 16);
    // A counter left nonzero (a launch sharing this workspace while this
    // one runs: a misuse) would give indices past G − 1 or twice: stop.
    if (ups + downs >= g.ctas) __trap();
    self = first_placed ? ups : g.ctas - 1 - downs;
    if (ups + downs == g.ctas - 1) *p.gather_rank = 0;
  }
  // Lane l holds the costs of units [8l, 8l + 8) of the first 256, loaded
  // at once, so the prologue waits on memory once and a lane's prefix over
  // its own units needs no shuffle: the search below takes one warp scan
  // where 32 units a lane-row took eight (with eight ballots and shuffles
  // each). Units past 256 are read again, 32 at a time, one a lane. The
  // whole CTA waits for this prologue at its barrier: with one unit of
  // every 32 a lane it ended ~2.7 µs after the other warps arrived at M =
  // 32, ~0.9 µs sooner this way (traces, docs/PERF.md stop 57).
  constexpr int kHeld = 8;
  std::int32_t held[kHeld];
#pragma unroll
  for (int j = 0; j < kHeld; ++j) held[j] = cost(kHeld * lane + j);
  // A tile's cost and its heaviest unit. The sum is taken in 32 bits
  // (unsigned, so a wrap is defined): GatherShares::applies takes cost
  // shares only where it cannot wrap (at most 1024 units of at most 2^20).
  std::int32_t own = 0, heaviest = 0, idle = 0;  // own: this lane's held units
#pragma unroll
  for (int j = 0; j < kHeld; ++j) {
    own += held[j];
    heaviest = max(heaviest, held[j]);
    idle += held[j] == 1;
  }
  std::uint32_t sum = static_cast<std::uint32_t>(own);
  for (std::int32_t base = 32 * kHeld; base < g.units; base += 32) {
    const std::int32_t c = cost(base + lane);
    sum += static_cast<std::uint32_t>(c);
    heaviest = max(heaviest, c);
    idle += c == 1;
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    sum += __shfl_xor_sync(0xffffffffu, sum, off);
    heaviest = max(heaviest, __shfl_xor_sync(0xffffffffu, heaviest, off));
    idle += __shfl_xor_sync(0xffffffffu, idle, off);
  }
  g.self = p.gather_rank != nullptr ? __shfl_sync(0xffffffffu, self, 0) : self;
  g.tile_cost = sum;
  g.last_prefix = g.tile_cost - cost(g.units - 1);  // (every lane loads the same cost)
  if (!GatherShares::applies(g.tiles, g.tile_cost, heaviest, idle, g.units, g.ctas, p.gather_lead)) {
    if (GatherShares::applies_uniform(g.tiles, g.units, g.ctas, p.gather_lead)) {
      g.take_weighted_equal(g.self, p.gather_lead);
    } else {
      g.tile_cost = 0;  // equal shares
    }
  } else {
    g.lead = p.gather_lead;
    // begin(c) = the first unit u with cum(u) ≥ target(c): in tile
    // target / T, the first unit e whose prefix P[e] reaches the rest (e =
    // units: the next tile's first).
    const std::int64_t targets[2] = {g.target(g.self), g.target(g.self + 1)};
    std::int64_t tile_of[2];
    std::int32_t rest[2], first[2] = {-1, -1};
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      tile_of[k] = div_nonneg(targets[k], g.tile_cost);
      rest[k] = static_cast<std::int32_t>(targets[k] - tile_of[k] * g.tile_cost);
      if (rest[k] == 0) first[k] = 0;
    }
    // The first 256 units: P at this lane's first unit, then along its own.
    std::int32_t incl = own;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      const std::int32_t v = __shfl_up_sync(0xffffffffu, incl, off);
      if (lane >= off) incl += v;
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      int at = kHeld;  // this lane's first held unit whose P reaches rest[k]
      std::int32_t before = incl - own;  // P[e]
#pragma unroll
      for (int j = 0; j < kHeld; ++j) {
        if (at == kHeld && before >= rest[k] && kHeld * lane + j < g.units) at = j;
        before += held[j];
      }
      const std::uint32_t hit = __ballot_sync(0xffffffffu, at < kHeld);
      const int src = hit ? __ffs(hit) - 1 : 0;
      const int src_at = __shfl_sync(0xffffffffu, at, src);
      if (first[k] < 0 && hit) first[k] = kHeld * src + src_at;
    }
    // Past 256 units: 32 at a time, one a lane.
    std::int32_t carry = __shfl_sync(0xffffffffu, incl, 31);  // P at the chunk's first unit
    for (std::int32_t base = 32 * kHeld; base < g.units; base += 32) {
      const std::int32_t c = cost(base + lane);
      std::int32_t chunk = c;
#pragma unroll
      for (int off = 1; off < 32; off *= 2) {
        const std::int32_t v = __shfl_up_sync(0xffffffffu, chunk, off);
        if (lane >= off) chunk += v;
      }
      const std::int32_t before = carry + chunk - c;  // P[e]
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const std::uint32_t hit = __ballot_sync(0xffffffffu, base + lane < g.units && before >= rest[k]);
        if (first[k] < 0 && hit) first[k] = base + __ffs(hit) - 1;
      }
      carry += __shfl_sync(0xffffffffu, chunk, 31);
    }
    g.begin = tile_of[0] * g.units + (first[0] < 0 ? g.units : first[0]);
    g.end = tile_of[1] * g.units + (first[1] < 0 ? g.units : first[1]);
  }
  if (lane == 0) {
    g.prepare_segments(g.self);
    *out = g;
  }
}

/// Masked layout: cumulative token-block counts per group into shared memory
/// (prefix[0] = 0, prefix[g+1] = prefix[g] + ceil(min(masked_m[g], M) / BT)).
/// Run by one warp before the roles split.
template <int BT>
__device__ void masked_prefix(const GemmParams& p, std::int32_t* prefix) {
  warp_prefix_sum(p.groups, [&](std::int32_t g) {
    std::int32_t valid = p.masked_m[g];
    valid = valid < 0 ? 0 : (valid > p.m ? p.m : valid);
    return (valid + BT - 1) / BT;
  }, prefix);
}

/// MoE-dense, weighted stream-K, step 1: prefix[b] = Σ stream_k_weight of
/// the token blocks before b (prefix[0] = 0, stream_k_blocks + 1 entries,
/// stream_k_blocks ≤ kMaxWeightedBlocks). Run by one warp before the roles
/// split.
__device__ inline void stream_k_weight_prefix(const GemmParams& p, std::int32_t* prefix) {
  warp_prefix_sum(p.stream_k_blocks, [&](std::int32_t b) {
    std::int32_t active = 0;
    for (std::int32_t s = 0; s < p.stream_k_slices; ++s) active += p.stream_k_block_experts[b * p.stream_k_slices + s];
    return stream_k_weight(active, p.experts);
  }, prefix);
}

/// MoE-dense stream-K as the prologue sees it: the scheduler's tiles, with
/// the weights' prefix attached when the host counted experts (weighted()
/// then says whether the weights apply).
template <int BT, int BW>
__device__ StreamK moe_stream_k(const GemmParams& p, const std::int32_t* prefix, std::int32_t units) {
  const std::int32_t t_blocks = (p.m + BT - 1) / BT, n_blocks = (p.n + BW - 1) / BW;  // as TileScheduler (kOutCols = BW)
  StreamK sk{std::int64_t(t_blocks) * n_blocks, units, static_cast<std::int32_t>(gridDim.x)};
  if (p.stream_k_block_experts) {
    sk.prefix = prefix;
    sk.blocks = p.stream_k_blocks;
    sk.tiles_per_block = n_blocks;
  }
  return sk;
}

/// Step 2, after the prefix is visible to the CTA: every CTA's share
/// boundary into the table after it (begins[c], c = 0 .. G), by all threads,
/// where the weights apply.
template <int BT, int BW>
__device__ void stream_k_weighted_begins(const GemmParams& p, std::int32_t* prefix, std::int32_t units) {
  const StreamK sk = moe_stream_k<BT, BW>(p, prefix, units);
  if (!sk.weighted()) return;
  std::int32_t* begins = stream_k_begins_table(prefix);
  for (std::int32_t c = threadIdx.x; c <= sk.ctas; c += blockDim.x) begins[c] = static_cast<std::int32_t>(sk.weighted_begin(c));
}

/// MoE-dense stream-K, after step 2 where weights are given: this CTA's
/// segments (weighted shares where they apply, else equal) into the
/// segment table, by one warp (lane i: segment i).
template <int BT, int BW>
__device__ void stream_k_segments_into_table(const GemmParams& p, std::int32_t* prefix, std::int32_t units) {
  StreamK sk = moe_stream_k<BT, BW>(p, prefix, units);
  if (sk.weighted()) sk.begins = stream_k_begins_table(prefix);
  StreamKSegmentTable* table = stream_k_segment_table(prefix);
  const int lane = threadIdx.x % 32;
  std::int32_t count = 0;
  for (int base = 0; base < kMaxStreamKSegments; base += 32) {
    StreamKSegment s;
    const bool has = sk.segment(blockIdx.x, base + lane, s);
    if (has) table->segment[base + lane] = s;
    count += __popc(__ballot_sync(0xffffffffu, has));
  }
  StreamKSegment past;
  if (sk.segment(blockIdx.x, kMaxStreamKSegments, past)) __trap();  // the host's grid bounds the segments
  if (lane == 0) table->count = count;
}

}  // namespace fp4moe::kernels
