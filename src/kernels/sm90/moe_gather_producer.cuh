// The producer of the MoE gather layout (moe_dense_fc2 with gathered tokens):
// a tile is BW weight rows of B [N, E·W] against every token, and K is E
// experts of W columns. Per expert e the tokens that use it were gathered
// beforehand (kernels/moe/gather_tokens.hpp) into rows [e·cap, e·cap +
// count_e) of A's gathered copy; the producer hands them to the consumers BT
// at a time ("passes"), each pass W/BK stages of the expert's weights and of
// those BT token rows. Experts no token uses cost nothing: no stage, no byte.
//
// The consumer warpgroups take passes in turn (padding passes, below,
// included), so a pass's product accumulates in one
// warpgroup's registers and is added to the tile's shared-memory
// accumulator by that warpgroup alone, in pass order. Each warpgroup waits
// only on its own passes' stages and releases them alone: stage n of the
// ring is warpgroup n mod kConsumers's, which needs a stage of the ring for
// every warpgroup (kConsumers <= kStages). A pass of S = W/BK stages: the
// producer takes the passes kConsumers at a time (a round) and interleaves
// their stages, K block by K block (round stage j·kConsumers + i is K block
// j of the round's pass i), so each warpgroup's stages stay every
// kConsumers-th. A round short of kConsumers passes (a tile's last) is
// filled with padding passes, S stages without data each, whose warpgroups
// release them and take their turn of the hand-over; with S = 1 the turns
// simply go on, unpadded. Each tile ends with one end stage per warpgroup,
// and the next tile's turns go on after them where they left off. (A
// warpgroup's next stage is never a ring lap ahead of the last one it saw
// filled, so a parity wait cannot mistake an older phase for it.) Before
// passes of several stages were interleaved (stop 39), every warpgroup
// waited on every stage of them, the others' passes unread: at W = 2048 a
// warpgroup spent 27-50% of its time walking past them (pipeline trace,
// moe-fc2 M = 32 and 384, docs/PERF.md stop 39).
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
/// pass's other stages follow every kConsumers-th stage, W/BK in all, with
/// K blocks kb + 1, kb + 2, ...).
struct GatherStageHeader {
  std::int32_t kb;      ///< B's K block (of BK columns, over all E·W) of the pass's first stage
  std::uint32_t flags;  ///< kGatherTileEnd, or 0
  /// Consumer warpgroup of the pass (stage number % kConsumers). No
  /// consumer reads it since stop 39 (each derives it); written all the same,
  /// as dropping the write reshuffled ptxas's allocation (a new spill in the
  /// two-CTA bn16 tile) on kernels there was no device time left to measure.
  std::int32_t owner;
  std::int32_t expert;  ///< e
  std::int32_t slot0;   ///< the pass's first slot of the expert's gathered tokens
  std::int32_t valid;   ///< slots of the pass holding tokens: min(BT, count_e − slot0); 0: a padding pass
  std::uint32_t seq;    ///< the stage's number in the ring's order (every stage: gather_stage_seq_checked)
  std::int32_t pad;
};
// (The consumers read a header as two 16-byte shared loads, fields in this order.)
static_assert(sizeof(GatherStageHeader) == 32 && offsetof(GatherStageHeader, flags) == 4 &&
                  offsetof(GatherStageHeader, owner) == 8 && offsetof(GatherStageHeader, expert) == 12 &&
                  offsetof(GatherStageHeader, slot0) == 16 && offsetof(GatherStageHeader, valid) == 20 &&
                  offsetof(GatherStageHeader, seq) == 24,
              "GatherStageHeader layout");
constexpr std::uint32_t kGatherTileEnd = 1;  ///< no data: the tile's epilogue follows

/// Whether a consumer checks each stage's number after its full wait. A
/// warpgroup waits on stage n (its fill f of slot n % kStages, parity f % 2)
/// having seen stage n - kConsumers full; the slot's previous fill, stage n -
/// kStages, was issued before that but may land after it (TMA copies
/// complete in any order), and while it is in flight the slot's phase
/// parity already reads as fill f done. Where kStages is a multiple of
/// kConsumers that previous fill is the warpgroup's own earlier stage, seen
/// full; otherwise it is another warpgroup's, and the consumer compares the
/// number the producer wrote with the stage (before its arrive) against n:
/// a mismatch is that older fill, so it waits for it to land and then for
/// fill f. (Without the check, passes of several stages, whose interleaved
/// stages are issued close together, faulted on the 6- and 3-stage rings;
/// stop 39.)
template <class Cfg>
constexpr bool gather_stage_seq_checked() {
  return Cfg::kStages % Cfg::kConsumers != 0;
}

/// The loads of a gather tile's stages. What a tile, an expert or a pass
/// fixes is worked out once there, so a stage costs its three copies and
/// little else: the producer warp's path per stage set the pipeline's pace
/// (a pipeline trace, docs/PERF.md stop 27). Every stage carries the same
/// bytes: W is a multiple of BK (the tactic check), so a stage's scale
/// chunks are never cut short, and the tile's weight band always exists.
/// The tokens are the gathered BF16 copy ([W/64][E·cap][64],
/// gemm_config.cuh kTokensBf16): one 3-D box of BK/64 column groups x BN
/// rows lands as the stage's BK/64 sub-step buffers.
template <class Cfg>
struct GatherStageLoads {
  static_assert(Cfg::kTokensBf16, "the gathered tokens in BF16");
  static constexpr std::uint32_t kChunkBytes = 512 * Cfg::kChunksPerStage;
  static constexpr std::uint32_t kBytes = Cfg::kXBytes + Cfg::kYBytes + kChunkBytes;

  const void* tmap_w;  ///< B, the weights (X)
  const void* tmap_t;  ///< the gathered BF16 token rows (Y)
  std::uint8_t* smem;
  std::uint64_t* full;

  /// Stage s: K block kb of weight rows [w_row, w_row + BM) with their scale
  /// band's chunks from w_scales, and K block j of the expert's columns of
  /// gathered rows [t_row, t_row + BN).
  /// (trace: each copy's issue marked, in a trace build. Under moe-fc2's
  /// load each copy took 140-275 cycles and a stage's four ~850, spent on
  /// the ~14 instructions around each copy (elect, moves to uniform
  /// registers), not in the copy engine: ncu, docs/PERF.md stop 55.)
  __device__ __forceinline__ void load(int s, std::int32_t w_row, const std::uint8_t* w_scales, std::int32_t kb,
                                       std::int32_t t_row, std::int32_t j, TraceCursor& trace) const {
    std::uint8_t* st = smem + s * Cfg::kStageBytes;
    ptx::mbar_arrive_expect_tx(&full[s], kBytes);
    ptx::tma_load_2d(st, tmap_w, kb * Cfg::kRowBytes, w_row, &full[s]);
    trace.mark(kTrCopyIssued, 0);
    ptx::tma_load_3d(st + Cfg::kOffY, tmap_t, 0, t_row, j * (Cfg::BK / 64), &full[s]);
    trace.mark(kTrCopyIssued, 1);
    ptx::bulk_load(st + Cfg::kOffXScale, w_scales + kb * kChunkBytes, kChunkBytes, &full[s]);
    trace.mark(kTrCopyIssued, 2);
  }
};

/// Producer warps: two in the one-CTA tiles whose ring has an even number
/// of stages. Each walks every pass and fills the stages of its own parity
/// (stage n: warp n % 2), so a stage is only ever refilled by one warp, in
/// order, and its parity waits stay exact; and a warpgroup's stage n +
/// kConsumers - kStages, which it relies on being filled when stage n is, is
/// the same warp's (kConsumers is even). One warp at about 70 instructions
/// a stage set the four-warpgroup tiles' pace; in the two-CTA tiles a
/// second warp cost 0-2% (docs/PERF.md stop 27).
template <class Cfg>
constexpr std::uint32_t gather_producer_warps() {
  return Cfg::kCtasPerSm == 1 && Cfg::kStages % 2 == 0 && Cfg::kConsumers % 2 == 0 ? 2 : 1;
}

/// Run by each of the gather_producer_warps<Cfg>() producer warps.
template <class Cfg, class Scheduler>
__device__ void gather_produce(const GemmParams& p, const Scheduler& sched, const GatherStageLoads<Cfg>& loads,
                               std::uint8_t* smem, std::uint64_t* full, std::uint64_t* empty,
                               [[maybe_unused]] const TraceStart& trace_start = {},
                               [[maybe_unused]] std::uint64_t before_regs = 0) {
  static_assert(Cfg::kConsumers <= Cfg::kStages, "a stage of the ring for every consumer warpgroup");
  constexpr int BT = Cfg::BT;
  const int lane = threadIdx.x % 32;
  const std::uint32_t warp = threadIdx.x / 32;
  constexpr std::uint32_t kWarps = gather_producer_warps<Cfg>();
  const int kb_per_expert = p.expert_width / Cfg::BK;
  const std::int64_t band_bytes_w = std::int64_t(p.b.scale_chunks) * 512;  // one 128-row band of B's scales
  ProducerRing<Cfg> stages{smem, empty};
  TraceCursor trace;
  if (lane == 0 && warp == 0) trace.init(TraceCursor::base(p), 0);
  trace_start.mark_into(trace);
  trace.mark_at(kTrRoleStart, 0, before_regs);  // (trace builds: the clock before setmaxnreg.dec)
  trace.mark(kTrRegsReleased, 0);
#ifdef FP4MOE_PIPELINE_TRACE  // (%warpid is volatile: read in trace builds only)
  if constexpr (Cfg::kGatherCostShares) {  // which share the placement gave this CTA
    if (p.split_k == 0) trace.mark_at(kTrShare, ptx::warp_slot(), reinterpret_cast<const GatherShares*>(sched.prefix)->self);
  }
#endif

  Tile t;
  for (std::int32_t i = 0; sched.work(i, t); ++i) {
    if (i == 0) trace.mark(kTrFirstWork, 0);
    const std::int32_t w_row = sched.b_row(t);
    const std::uint8_t* w_scales = p.b.scales + (t.n0 / 128) * band_bytes_w;
    // The tile's passes in order: expert by expert (those without tokens
    // skipped), BT gathered slots at a time. Counts are read 32 experts at a
    // time, one load per lane, so the walk waits on memory once per 32.
    std::int32_t counts = 0;  // lane l: count of expert (e & ~31) + l
    int ce = t.unit_begin, cslot = 0, ccount = -1;  // the cursor (ccount -1: not read yet)
    auto next_pass = [&](int& e, int& slot0, int& count) {
      for (; ce < t.unit_end; ++ce, ccount = -1) {
        if (ccount < 0) {
          if (ce == t.unit_begin || ce % 32 == 0) {
            const int ei = (ce & ~31) + lane;
            counts = ei < t.unit_end ? p.gather_counts[ei] : 0;
          }
          ccount = __shfl_sync(0xffffffffu, counts, ce % 32);
          cslot = 0;
        }
        if (cslot < ccount) {
          e = ce;
          slot0 = cslot;
          count = ccount;
          cslot += BT;
          return true;
        }
      }
      return false;
    };
    // Takes the next stage of the ring if it is this warp's (else passes
    // over it): true with s set.
    auto take = [&](int& s) {
      if (stages.it % kWarps != warp) {
        stages.skip();
        return false;
      }
      trace.mark(kTrEmptyWait, stages.it % Cfg::kStages);
      stages.template next<GatherStageHeader>(s);
      trace.mark(kTrEmptyGot, s);
      if (gather_stage_seq_checked<Cfg>() && lane == 0)  // (before the stage's arrive, below)
        ptx::sts32(ptx::smem_addr(smem + Cfg::header_offset(s) + offsetof(GatherStageHeader, seq)),
                   stages.it - 1);
      return true;
    };
    auto header = [&](int s, std::uint32_t kb, std::uint32_t flags, std::int32_t e, std::int32_t slot0, std::int32_t valid) {
      const std::uint32_t hdr = ptx::smem_addr(smem + Cfg::header_offset(s));
      const std::uint32_t owner = (stages.it - 1) % Cfg::kConsumers;
      ptx::sts128(hdr, make_uint4(kb, flags, owner, std::uint32_t(e)));
      ptx::sts64(hdr + 16, make_uint2(std::uint32_t(slot0), std::uint32_t(valid)));
    };
    // A pass's stage j (K block j of its expert), its header with the first.
    auto pass_stage = [&](int s, int e, int slot0, int valid, int j) {
      if (j == 0) header(s, std::uint32_t(e * kb_per_expert), 0u, e, slot0, valid);
      loads.load(s, w_row, w_scales, e * kb_per_expert + j, e * p.gather_capacity + slot0, j, trace);
      trace.mark(kTrIssued, s);
    };
    int e, slot0, count, s;
    if (kb_per_expert == 1) {  // one stage a pass: the passes in turn as they come
      while (next_pass(e, slot0, count))
        if (take(s) && lane == 0) pass_stage(s, e, slot0, min(BT, count - slot0), 0);
    } else {
      // Rounds of kConsumers passes (the last padded), their stages
      // interleaved. Lane 0 keeps a round's passes in shared memory (the
      // prefix region, after the stream-K share; kept there as registers spilled the producer's loop
      // state to local memory): its expert with its valid slots in the top
      // byte (E < 2^24, as E·W < 2^31), and its first slot.
      const std::uint32_t round = ptx::smem_addr(smem + Cfg::kOffGatherRound) + 8 * Cfg::kConsumers * warp;
      for (bool more = true; more;) {
        int q = 0;
#pragma unroll
        for (int k = 0; k < Cfg::kConsumers; ++k) {
          if (q == k && next_pass(e, slot0, count)) {
            if (lane == 0)
              ptx::sts64(round + 8 * k, make_uint2(std::uint32_t(e) | std::uint32_t(min(BT, count - slot0)) << 24,
                                                   std::uint32_t(slot0)));
            ++q;
          }
        }
        more = q == Cfg::kConsumers;
        if (q == 0) break;
        for (int j = 0; j < kb_per_expert; ++j) {
          for (int k = 0; k < Cfg::kConsumers; ++k) {
            if (!take(s) || lane != 0) continue;
            if (k < q) {
              const uint2 pass = ptx::lds64(round + 8 * k);
              pass_stage(s, int(pass.x & 0xffffffu), int(pass.y), int(pass.x >> 24), j);
            } else {  // a padding pass: no data (its header, written before the arrive, says so)
              if (j == 0) header(s, 0u, 0u, 0, 0, 0);
              ptx::mbar_arrive(&full[s]);
              trace.mark(kTrIssued, s);
            }
          }
        }
      }
    }
    // The tile's end: one stage a warpgroup.
    for (int k = 0; k < Cfg::kConsumers; ++k) {
      int s;
      if (!take(s)) continue;
      if (lane == 0) {
        header(s, 0u, kGatherTileEnd, 0, 0, 0);
        ptx::mbar_arrive(&full[s]);
        trace.mark(kTrIssued, s);
      }
      __syncwarp();
    }
  }
}

}  // namespace fp4moe::kernels
