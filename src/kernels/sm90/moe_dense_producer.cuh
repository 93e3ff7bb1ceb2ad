// The producer of the MoE-dense layout (moe_dense_fc2): K is E experts of W
// columns, and D[m] = Σ_e alpha[m, e]·A_e[m]·B_eᵀ.
//
// One warp walks each tile's experts in order. For every expert it looks at
// the expert's alpha column over the tile's tokens; if all are zero (no token
// of the tile picked the expert) it loads nothing for it: neither A_e nor B_e
// bytes move (expert skipping). Otherwise it loads the expert's W/BK stages
// and tells the consumers, through a header at the start of each stage, which
// K block the stage holds, and, on the expert's last stage, the alpha column,
// so the consumers can fold alpha·(A_e·B_eᵀ) into the tile's accumulator (the
// FP8 route, which applies alpha with each block's scales, gets it on every
// stage). A
// header-only stage ends each tile, so a tile whose experts were all skipped
// still reaches the epilogue (and is written as zeros).
//
// The alpha columns come through a small shared-memory ring filled with
// cp.async kAlphaLookahead experts ahead, so the skip decision costs a
// shared-memory read, not a trip to memory.
#pragma once

#include <cstdint>

#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/producer_ring.cuh"
#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

namespace fp4moe::kernels {

/// The start of a MoE-dense stage (written by the producer warp, read by
/// the consumers after the stage's full barrier).
struct MoeStageHeader {
  std::int32_t kb;        ///< K block (of BK columns) the stage holds
  std::uint32_t flags;    ///< kEndsExpert | kEndsTile
  std::int32_t pad[2];
  // followed by float alpha[BT] on kEndsExpert stages (every stage on the FP8
  // route): alpha[m0 + i, expert]
};
__device__ __forceinline__ float* moe_alpha(MoeStageHeader* h) { return reinterpret_cast<float*>(h + 1); }
__device__ __forceinline__ const float* moe_alpha(const MoeStageHeader* h) { return reinterpret_cast<const float*>(h + 1); }
constexpr std::uint32_t kEndsExpert = 1;  ///< fold this expert after the stage
constexpr std::uint32_t kEndsTile = 2;    ///< no data: the tile's epilogue follows

/// tile_loads(t): what a work item's loads keep (its rows and scale bands),
/// worked out once; load_tile_stage(s, loads, kb, y_kb): one stage's.
template <class Cfg, class Scheduler, class TileLoadsOf, class LoadTileStage>
__device__ void moe_produce(const GemmParams& p, const Scheduler& sched, std::uint8_t* smem, std::uint64_t* full,
                            std::uint64_t* empty, const TileLoadsOf& tile_loads, const LoadTileStage& load_tile_stage) {
  constexpr int BT = Cfg::BT, L = Cfg::kAlphaLookahead, kPerLane = (BT + 31) / 32;
  const int lane = threadIdx.x % 32;
  const int kb_per_expert = p.expert_width / Cfg::BK;
  const std::uint32_t ring = ptx::smem_addr(smem + Cfg::kOffAlphaRing);
  const float* ring_f = reinterpret_cast<const float*>(smem + Cfg::kOffAlphaRing);

  ProducerRing<Cfg> stages{smem, empty};

  Tile t;
  for (std::int32_t i = 0; sched.work(i, t); ++i) {
    // A work item's units are whole experts (split-K slices and stream-K
    // segments alike).
    const int e_begin = t.unit_begin, e_end = t.unit_end;
    const auto loads = tile_loads(t);
    // One commit group per expert (empty past the last one), so "group e is
    // done" is always cp.async.wait_group L-1.
    auto fetch = [&](int e) {
      if (e < e_end) {
        for (int i = lane; i < BT; i += 32) {
          const std::int32_t m = t.m0 + i;
          const bool ok = m < t.m_end;
          const float* src = p.alpha + (ok ? std::int64_t(m) * p.alpha_stride_m + std::int64_t(e) * p.alpha_stride_e : 0);
          ptx::cp_async_4(ring + 4 * ((e % L) * BT + i), src, ok ? 4u : 0u);  // rows past M read as 0
        }
      }
      ptx::cp_async_commit();
    };
    for (int e = e_begin; e < e_begin + L; ++e) fetch(e);

    for (int e = e_begin; e < e_end; ++e) {
      ptx::cp_async_wait<L - 1>();
      __syncwarp();  // every lane's part of column e has landed
      float a[kPerLane];
      bool any = false;
#pragma unroll
      for (int r = 0; r < kPerLane; ++r) {
        const int i = lane + 32 * r;
        a[r] = i < BT ? ring_f[(e % L) * BT + i] : 0.0f;
        any |= a[r] != 0.0f;
      }
      __syncwarp();  // column e is read before its slot is refilled
      fetch(e + L);
      if (!__any_sync(0xffffffffu, any)) continue;  // no token of the tile uses expert e

      for (int j = 0; j < kb_per_expert; ++j) {
        int s;
        MoeStageHeader* h = stages.template next<MoeStageHeader>(s);
        const bool last = j == kb_per_expert - 1;
        if (last || Cfg::kFp8) {
#pragma unroll
          for (int r = 0; r < kPerLane; ++r)
            if (lane + 32 * r < BT) moe_alpha(h)[lane + 32 * r] = a[r];
        }
        const int kb = e * kb_per_expert + j;
        if (lane == 0) {
          h->kb = kb;
          h->flags = last ? kEndsExpert : 0u;
        }
        // Every lane arrives on the stage's full barrier (kFullArrivals), so
        // each releases its own header writes (lane 0 with the loads'
        // expect_tx): with one arrive after a __syncwarp, racecheck reported
        // the FP8 route's reads of alpha against the other lanes' writes.
        if (lane == 0) {
          load_tile_stage(s, loads, kb, kb);
        } else {
          ptx::mbar_arrive(&full[s]);
        }
      }
    }
    ptx::cp_async_wait<0>();

    int s;
    MoeStageHeader* h = stages.template next<MoeStageHeader>(s);
    if (lane == 0) {
      h->kb = 0;
      h->flags = kEndsTile;
    }
    ptx::mbar_arrive(&full[s]);
    __syncwarp();
  }
}

}  // namespace fp4moe::kernels
