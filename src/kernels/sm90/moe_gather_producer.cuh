// The producer of the MoE gather layout (moe_dense_fc2 with gathered tokens):
// a tile is BW weight rows of B [N, E·W] against every token, and K is E
// experts of W columns. Per expert e the tokens that use it were gathered
// beforehand (kernels/moe/gather_tokens.hpp) into rows [e·cap, e·cap +
// count_e) of A's gathered copy; the producer hands them to the consumers BT
// at a time ("passes"), each pass W/BK stages of the expert's weights and of
// those BT token rows. Experts no token uses cost nothing: no stage, no byte.
//
// The consumer warpgroups take passes in turn (the pass's owner is in its
// first stage's header), so a pass's product accumulates in one
// warpgroup's registers and is added to the tile's shared-memory
// accumulator by that warpgroup alone, in pass order. Header-only stages
// end each tile. Two ways to hand the passes out (gather_direct):
// - direct, where a pass is one stage and the ring holds a stage per
//   warpgroup (W = BK, kConsumers <= kStages): each warpgroup waits only on
//   its own passes' stages (stage n is warpgroup n % kConsumers's), releases
//   them alone, and each tile ends with one end stage per warpgroup. (Its
//   next stage is never a ring lap ahead of the last one it saw filled, so
//   a parity wait cannot mistake an older phase for it.)
// - walking, otherwise: every warpgroup waits on every stage and releases
//   it, the others' passes unread, and one end stage ends a tile. A
//   warpgroup spent about a third of its time walking past the others'
//   passes (pipeline trace, moe-fc2 M = 384, docs/PERF.md stop 27).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/pipeline_trace.cuh"
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

/// The loads of a gather tile's stages. What a tile, an expert or a pass
/// fixes is worked out once there, so a stage costs its four copies and
/// little else: the producer warp's path per stage set the pipeline's pace
/// (a pipeline trace, docs/PERF.md stop 27). Every stage carries the same
/// bytes: W is a multiple of BK (the tactic check), so a stage's scale
/// chunks are never cut short, and the tile's weight band and a pass's
/// token band always exist.
template <class Cfg>
struct GatherStageLoads {
  static_assert(Cfg::kYBands == 1, "one token scale band a stage");
  static constexpr std::uint32_t kChunkBytes = 512 * Cfg::kChunksPerStage;
  static constexpr std::uint32_t kBytes = Cfg::kXBytes + Cfg::BN * Cfg::kRowBytes + 2 * kChunkBytes;

  const void* tmap_w;  ///< B, the weights (X)
  const void* tmap_t;  ///< the gathered token rows of A (Y)
  std::uint8_t* smem;
  std::uint64_t* full;

  /// Stage s: K block kb of weight rows [w_row, w_row + BM) with their scale
  /// band's chunks from w_scales, and column block j of gathered rows
  /// [t_row, t_row + BN) with their band's chunks from t_scales.
  __device__ __forceinline__ void load(int s, std::int32_t w_row, const std::uint8_t* w_scales, std::int32_t kb,
                                       std::int32_t t_row, const std::uint8_t* t_scales, std::int32_t j) const {
    std::uint8_t* st = smem + s * Cfg::kStageBytes;
    ptx::mbar_arrive_expect_tx(&full[s], kBytes);
    ptx::tma_load_2d(st, tmap_w, kb * Cfg::kRowBytes, w_row, &full[s]);
    ptx::tma_load_2d(st + Cfg::kOffY, tmap_t, j * Cfg::kRowBytes, t_row, &full[s]);
    ptx::bulk_load(st + Cfg::kOffXScale, w_scales + kb * kChunkBytes, kChunkBytes, &full[s]);
    ptx::bulk_load(st + Cfg::kOffYScale, t_scales + j * kChunkBytes, kChunkBytes, &full[s]);
  }
};

/// Whether the passes are handed out directly (above): one stage a pass,
/// and a stage of the ring for every consumer warpgroup.
template <class Cfg>
__device__ __forceinline__ bool gather_direct(const GemmParams& p) {
  return p.expert_width == Cfg::BK && Cfg::kConsumers <= Cfg::kStages;
}

/// Producer warps: two in the one-CTA tiles whose ring has an even number
/// of stages. Each walks every pass and fills the stages of its own parity
/// (stage n: warp n % 2), so a stage is only ever refilled by one warp, in
/// order, and its parity waits stay exact; and in the direct way a
/// warpgroup's stage n + kConsumers - kStages, which it relies on being
/// filled when stage n is, is the same warp's (kConsumers is even). One
/// warp at about 70 instructions a stage set the four-warpgroup tiles'
/// pace; in the two-CTA tiles a second warp cost 0-2% (docs/PERF.md stop
/// 27).
template <class Cfg>
constexpr std::uint32_t gather_producer_warps() {
  return Cfg::kCtasPerSm == 1 && Cfg::kStages % 2 == 0 && Cfg::kConsumers % 2 == 0 ? 2 : 1;
}

/// Run by each of the gather_producer_warps<Cfg>() producer warps.
template <class Cfg, class Scheduler>
__device__ void gather_produce(const GemmParams& p, const Scheduler& sched, const GatherStageLoads<Cfg>& loads,
                               std::uint8_t* smem, std::uint64_t* full, std::uint64_t* empty) {
  constexpr int BT = Cfg::BT;
  const int lane = threadIdx.x % 32;
  const std::uint32_t warp = threadIdx.x / 32;
  constexpr std::uint32_t kWarps = gather_producer_warps<Cfg>();
  const int kb_per_expert = p.expert_width / Cfg::BK;
  const std::int64_t band_bytes_w = std::int64_t(p.b.scale_chunks) * 512;  // one 128-row band of B's scales
  const std::int64_t band_bytes_t = std::int64_t(p.a.scale_chunks) * 512;  // of the gathered rows' scales
  std::uint32_t pass = 0;
  ProducerRing<Cfg> stages{smem, empty};
  TraceCursor trace;
  if (lane == 0 && warp == 0) trace.init(TraceCursor::base(p), 0);

  Tile t;
  for (std::int32_t i = 0; sched.work(i, t); ++i) {
    const std::int32_t w_row = sched.b_row(t);
    const std::uint8_t* w_scales = p.b.scales + (t.n0 / 128) * band_bytes_w;
    std::int32_t counts = 0;  // lane l: count of expert (e & ~31) + l
    for (int e = t.unit_begin; e < t.unit_end; ++e) {
      // Counts 32 experts at a time, one load per lane, so the walk waits on
      // memory once per 32 experts.
      if (e == t.unit_begin || e % 32 == 0) {
        const int ei = (e & ~31) + lane;
        counts = ei < t.unit_end ? p.gather_counts[ei] : 0;
      }
      const std::int32_t count = __shfl_sync(0xffffffffu, counts, e % 32);
      const std::uint8_t* t_scales_e = p.a.scales + std::int64_t(e) * p.a.scale_group_bytes;
      for (std::int32_t slot0 = 0; slot0 < count; slot0 += BT, ++pass) {
        const std::int32_t t_row = e * p.gather_capacity + slot0;
        const std::uint8_t* t_scales = t_scales_e + (slot0 / 128) * band_bytes_t;
        for (int j = 0; j < kb_per_expert; ++j) {
          if (stages.it % kWarps != warp) {
            stages.skip();
            continue;
          }
          int s;
          trace.mark(kTrEmptyWait, stages.it % Cfg::kStages);
          stages.template next<GatherStageHeader>(s);
          trace.mark(kTrEmptyGot, s);
          if (lane == 0) {
            if (j == 0) {  // the header, written before the arrive in load()
              const std::uint32_t hdr = ptx::smem_addr(smem + s * Cfg::kStageBytes + Cfg::kOffHeader);
              ptx::sts128(hdr, make_uint4(std::uint32_t(e * kb_per_expert), 0u, pass % Cfg::kConsumers, std::uint32_t(e)));
              ptx::sts64(hdr + 16, make_uint2(std::uint32_t(slot0), std::uint32_t(min(BT, count - slot0))));
            }
            loads.load(s, w_row, w_scales, e * kb_per_expert + j, t_row, t_scales, j);
            trace.mark(kTrIssued, s);
          }
        }
      }
    }
    // The tile's end: one stage, or direct one a warpgroup (the passes'
    // turns go on after them where they left off).
    for (int k = 0; k < (gather_direct<Cfg>(p) ? Cfg::kConsumers : 1); ++k) {
      if (stages.it % kWarps != warp) {
        stages.skip();
        continue;
      }
      int s;
      trace.mark(kTrEmptyWait, stages.it % Cfg::kStages);
      stages.template next<GatherStageHeader>(s);
      trace.mark(kTrEmptyGot, s);
      if (lane == 0) {
        const std::uint32_t hdr = ptx::smem_addr(smem + s * Cfg::kStageBytes + Cfg::kOffHeader);
        ptx::sts128(hdr, make_uint4(0u, kGatherTileEnd, 0u, 0u));
        ptx::mbar_arrive(&full[s]);
        trace.mark(kTrIssued, s);
      }
      __syncwarp();
    }
  }
}

}  // namespace fp4moe::kernels
