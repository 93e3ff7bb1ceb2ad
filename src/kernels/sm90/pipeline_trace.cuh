// An optional timeline of the GEMM kernels' pipeline, for diagnosis only:
// compiled in when FP4MOE_PIPELINE_TRACE is defined (CMake option of the same
// name), otherwise every call below is empty and the kernels are unchanged.
//
// Each traced actor (the producer's first lane, and thread 0 of each
// consumer warpgroup) of the first kTraceCtas CTAs appends 64-bit events to
// its own row of a global buffer: kind in bits 63..56, an argument (a stage
// or a flag) in 55..48, the SM's clock64 in 47..0 (kTrGlobalTime: the
// global nanosecond timer instead, which compares across CTAs). The host
// side (pipeline_trace_host.hpp) fills the buffer of one chosen launch and
// writes it to a file; scripts/pipeline_trace.py reads a gather trace,
// scripts/tile_trace.py one of the other layouts. Clocks compare only within
// one CTA (one SM).
#pragma once

#include <cstdint>

#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/ptx/timer.cuh"

namespace fp4moe::kernels {

enum TraceEvent : std::uint32_t {
  kTrPassWait = 1,   ///< consumer: before the wait on a pass's first stage (register tiles: a work item's; arg: stage)
  kTrPassGot = 2,    ///< consumer: that stage is full (arg: non-zero if this warpgroup owns the pass;
                     ///< gather tiles: the pass's tokens, 255 a padding pass)
  kTrMmaDone = 3,    ///< consumer: the pass's MMAs landed
  kTrOrderGot = 4,   ///< consumer: the pass-order token arrived
  kTrAdded = 5,      ///< consumer: the pass is in the shared accumulator
  kTrTileEnd = 6,    ///< consumer: the tile-end header read
  kTrStored = 7,     ///< consumer: the tile's epilogue finished
  kTrEmptyWait = 8,  ///< producer: before the wait for a free stage (arg: stage)
  kTrEmptyGot = 9,   ///< producer: the stage is free
  kTrIssued = 10,    ///< producer: the stage's loads are issued
  // The register tiles (every layout but gather):
  kTrItemStart = 11,    ///< consumer: a work item begins (arg: its split-K / stream-K slot)
  kTrFirstFull = 12,    ///< consumer: the item's first stage is full
  kTrArrived = 13,      ///< consumer: the split-K arrival answered (arg: 1 if this contributor was last)
  kTrReduced = 14,      ///< consumer: the partials are added
  kTrKernelStart = 15,  ///< any actor: the kernel's first instruction (clock taken then, marked later; arg: the SM)
  kTrPrologueDone = 16, ///< any actor: past the prologue's barrier
  kTrGlobalTime = 17,   ///< any actor: %globaltimer (ns), taken with kTrKernelStart (arg 0) or at the end (arg 1)
  kTrRoleStart = 18,    ///< producer (arg 0) / consumer (arg 1): its role's first instruction past setmaxnreg (gather producer: before it)
  kTrFirstWork = 19,    ///< producer: its first work item known (the scheduler answered), before its loads are planned
  kTrWatchFull = 20,    ///< watcher (a producer-warpgroup thread on the last actor row): stage `arg`'s first fill seen (gather tiles: every fill)
  kTrAskWork = 21,      ///< consumer: before it asks the scheduler for its next work item (the epilogue's stores done)
  kTrSlabFree = 22,     ///< consumer, TMA-store epilogue: its warp's slab is free for part `arg` (the wait on the last stores' reads returned)
  kTrPartIssued = 23,   ///< consumer, TMA-store epilogue: part `arg`'s stores issued
  kTrCopyIssued = 24,   ///< gather producer: copy `arg` of a stage issued (0 weights, 1 tokens, 2 the weights' scales)
  kTrWatchEnd = 25,     ///< gather watcher: its last clock, marked just before the global timer (kTrGlobalTime arg 1)
  kTrRegsReleased = 26, ///< gather producer: past its setmaxnreg.dec (kTrRoleStart: the clock before it)
  kTrShare = 27,        ///< gather producer, 8-token tiles: its stream-K share index in the value (arg: its warp slot, %warpid)
  // The gather epilogue (gather_store_tile), between kTrTileEnd and kTrStored; kTrArrived and kTrReduced as above.
  kTrEpiLapped = 28,    ///< consumer: every pass of the work item added (the epilogue's first hand-over)
  kTrPartialStored = 29,  ///< consumer: its part of the partial stored and the accumulator zeroed (before the arrival)
};
constexpr int kTraceCtas = 264;  ///< every CTA of one wave of two-CTA tiles on 132 SMs
constexpr int kTraceActors = 5;  ///< producer, then up to four consumer warpgroups
constexpr int kTraceCap = 8192;  ///< events per actor
constexpr std::int64_t kTraceWords = std::int64_t(kTraceCtas) * kTraceActors * kTraceCap;

struct TraceCursor {
#ifdef FP4MOE_PIPELINE_TRACE
  std::uint64_t* row = nullptr;
  std::uint32_t n = 0;
  __device__ void init(std::uint64_t* base, int actor) {
    if (base != nullptr && blockIdx.x < kTraceCtas) row = base + (std::int64_t(blockIdx.x) * kTraceActors + actor) * kTraceCap;
  }
  __device__ void mark(std::uint32_t event, std::uint32_t arg) { mark_at(event, arg, static_cast<std::uint64_t>(clock64())); }
  /// An event with its own 48-bit value (a clock taken earlier, or the global timer).
  __device__ void mark_at(std::uint32_t event, std::uint32_t arg, std::uint64_t value) {
    if (row != nullptr && n < kTraceCap)
      row[n++] = (std::uint64_t(event) << 56) | (std::uint64_t(arg & 0xffu) << 48) | (value & 0xffffffffffffull);
  }
  __device__ static std::uint64_t* base(const GemmParams& p) { return p.trace; }
  __device__ static std::uint64_t clock() { return static_cast<std::uint64_t>(clock64()); }
  __device__ static std::uint64_t global_time() { return ptx::global_timer_ns(); }
  __device__ static std::uint32_t sm() { return ptx::sm_id(); }
#else
  __device__ static std::uint64_t* base(const GemmParams&) { return nullptr; }
  __device__ void init(std::uint64_t*, int) {}
  __device__ void mark(std::uint32_t, std::uint32_t) {}
  __device__ void mark_at(std::uint32_t, std::uint32_t, std::uint64_t) {}
  __device__ static std::uint64_t clock() { return 0; }
  __device__ static std::uint64_t global_time() { return 0; }
  __device__ static std::uint32_t sm() { return 0; }
#endif
};

/// The kernel's start and the prologue's end, taken before any actor has
/// its row and marked once it has (register tiles).
struct TraceStart {
  std::uint64_t entry = 0, entry_ns = 0, prologue_done = 0;
  std::uint32_t sm = 0;
  __device__ void mark_into(TraceCursor& trace) const {
    trace.mark_at(kTrKernelStart, sm, entry);
    trace.mark_at(kTrGlobalTime, 0, entry_ns);
    trace.mark_at(kTrPrologueDone, 0, prologue_done);
  }
};

}  // namespace fp4moe::kernels
