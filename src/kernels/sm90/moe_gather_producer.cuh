// The producer of the MoE gather layout (moe_dense_fc2 with gathered tokens):
// a tile is BW weight rows of B [N, E·W] against every token, and K is E
// experts of W columns. Per expert e the tokens that use it were gathered
// beforehand (kernels/moe/gather_tokens.hpp) into rows [e·cap, e·cap +
// count_e) of A's gathered copy; the producer hands them to the consumers BT
// at a time ("passes"), each pass W/BK stages of the expert's weights and of
// those BT token rows. Experts no token uses cost nothing: no stage, no byte.
//
// The consumer warpgroups take passes in turn (the pass's owner is in its
// first stage's header; the others only release its stages), so a pass's
// product accumulates in one warpgroup's registers and is added to the
// tile's shared-memory accumulator by that warpgroup alone, in pass order.
// A header-only stage ends each tile.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/producer_ring.cuh"
#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

namespace fp4moe::kernels {

/// The header of a pass's first stage, or of a tile's end (written by the
/// producer warp, read by the consumers after the stage's full barrier; a
/// pass's other stages follow in order, W/BK in all, with K blocks kb + 1,
/// kb + 2, ...).
struct GatherStageHeader {
  std::int32_t kb;      ///< B's K block (of BK columns, over all E·W) of the pass's first stage
  std::uint32_t flags;  ///< kGatherTileEnd, or 0
  std::int32_t owner;   ///< consumer warpgroup of the pass: pass number % kConsumers
  std::int32_t expert;  ///< e
  std::int32_t slot0;   ///< the pass's first slot of the expert's gathered tokens
  std::int32_t valid;   ///< slots of the pass holding tokens: min(BT, count_e − slot0)
  std::int32_t pad[2];
};
// (The consumers read a header as two 16-byte shared loads, fields in this order.)
static_assert(sizeof(GatherStageHeader) == 32 && offsetof(GatherStageHeader, flags) == 4 &&
                  offsetof(GatherStageHeader, owner) == 8 && offsetof(GatherStageHeader, expert) == 12 &&
                  offsetof(GatherStageHeader, slot0) == 16 && offsetof(GatherStageHeader, valid) == 20,
              "GatherStageHeader layout");
constexpr std::uint32_t kGatherTileEnd = 1;  ///< no data: the tile's epilogue follows

template <class Cfg, class Scheduler, class LoadStage>
__device__ void gather_produce(const GemmParams& p, const Scheduler& sched, std::uint8_t* smem, std::uint64_t* full,
                               std::uint64_t* empty, const LoadStage& load_stage) {
  constexpr int BT = Cfg::BT;
  const int lane = threadIdx.x % 32;
  const int kb_per_expert = p.expert_width / Cfg::BK;
  std::uint32_t pass = 0;
  ProducerRing<Cfg> stages{smem, empty};

  Tile t;
  for (std::int32_t i = 0; sched.work(i, t); ++i) {
    std::int32_t counts = 0;  // lane l: count of expert (e & ~31) + l
    for (int e = t.unit_begin; e < t.unit_end; ++e) {
      // Counts 32 experts at a time, one load per lane, so the walk waits on
      // memory once per 32 experts.
      if (e == t.unit_begin || e % 32 == 0) {
        const int ei = (e & ~31) + lane;
        counts = ei < t.unit_end ? p.gather_counts[ei] : 0;
      }
      const std::int32_t count = __shfl_sync(0xffffffffu, counts, e % 32);
      for (std::int32_t slot0 = 0; slot0 < count; slot0 += BT, ++pass) {
        Tile pt = t;
        pt.group = e;
        pt.m0 = slot0;
        for (int j = 0; j < kb_per_expert; ++j) {
          int s;
          GatherStageHeader* h = stages.template next<GatherStageHeader>(s);
          if (lane == 0) {
            if (j == 0) {
              h->kb = e * kb_per_expert;
              h->flags = 0;
              h->owner = static_cast<std::int32_t>(pass % Cfg::kConsumers);
              h->expert = e;
              h->slot0 = slot0;
              h->valid = min(BT, count - slot0);
            }
            load_stage(s, pt, e * kb_per_expert + j, j);  // the header is written before lane 0's arrive
          }
        }
      }
    }
    int s;
    GatherStageHeader* h = stages.template next<GatherStageHeader>(s);
    if (lane == 0) {
      h->flags = kGatherTileEnd;
      h->owner = 0;
      ptx::mbar_arrive(&full[s]);
    }
    __syncwarp();
  }
}

}  // namespace fp4moe::kernels
