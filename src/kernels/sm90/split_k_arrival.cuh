// Split-K and stream-K: after storing its partial tile in its slot, each
// contributor to a tile counts itself in; the one that arrives last adds the
// slots and runs the epilogue. One protocol for the register tiles
// (fp4_gemm_kernel.cuh) and the gather layout's shared-memory accumulator
// (gather_accumulator.cuh).
#pragma once

#include <cstdint>

#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

namespace fp4moe::kernels {

/// Run by every consumer thread (ctid 0 .. kConsumerThreads - 1) once its
/// part of the partial is stored: whether this contributor arrived last (then
/// every slot is readable, by ld.global.cg). The last one resets the tile's
/// counter for the next call.
///
/// The CTA's partial is published by thread 0 alone: the barrier orders
/// every consumer thread's stores before its add, whose release half
/// (cumulative) makes them visible before the count; its acquire half, in
/// the last contributor, orders the others' partials before the barrier
/// that hands the answer on, so before every thread's reads. (A
/// __threadfence in every thread, before and after, was 11% of the stall
/// samples of dense 64x2112x7168 on split-K 4: ncu, docs/PERF.md stop 34.)
template <class Cfg>
__device__ __forceinline__ bool split_k_arrived_last(const GemmParams& p, const Tile& t, int ctid) {
  ptx::named_barrier(Cfg::kConsumerBarrier, Cfg::kConsumerThreads);
  bool last = false;
  if (ctid == 0) {
    const int arrived = ptx::atom_add_acq_rel_gpu(p.split_counters + t.index, 1) + 1;
    last = arrived == t.slots;
    if (last) p.split_counters[t.index] = 0;
  }
  // Thread 0's answer to every consumer thread through the barrier's
  // reduction. (A flag in shared memory, written by thread 0 between two
  // barriers, drew a racecheck report in the gather layout.)
  return ptx::named_barrier_or(Cfg::kConsumerBarrier, Cfg::kConsumerThreads, last);
}

}  // namespace fp4moe::kernels
