// An optional timeline of the gather layout's pipeline, for diagnosis only:
// compiled in when FP4MOE_PIPELINE_TRACE is defined (CMake option of the same
// name), otherwise every call below is empty and the kernels are unchanged.
//
// Each traced actor (the producer warp's lane 0, and thread 0 of each
// consumer warpgroup) of the first kTraceCtas CTAs appends 64-bit events to
// its own row of a global buffer: kind in bits 63..56, an argument (a stage
// or a flag) in 55..48, the SM's clock64 in 47..0. The host side
// (pipeline_trace_host.hpp) fills the buffer of one chosen launch and writes
// it to a file; scripts/pipeline_trace.py reads it. Clocks compare only
// within one CTA (one SM).
#pragma once

#include <cstdint>

#include "kernels/sm90/gemm_params.hpp"

namespace fp4moe::kernels {

enum TraceEvent : std::uint32_t {
  kTrPassWait = 1,   ///< consumer: before the wait on a pass's first stage (arg: stage)
  kTrPassGot = 2,    ///< consumer: that stage is full (arg: 1 if this warpgroup owns the pass)
  kTrMmaDone = 3,    ///< consumer: the pass's MMAs landed
  kTrOrderGot = 4,   ///< consumer: the pass-order token arrived
  kTrAdded = 5,      ///< consumer: the pass is in the shared accumulator
  kTrTileEnd = 6,    ///< consumer: the tile-end header read
  kTrStored = 7,     ///< consumer: the tile's epilogue finished
  kTrEmptyWait = 8,  ///< producer: before the wait for a free stage (arg: stage)
  kTrEmptyGot = 9,   ///< producer: the stage is free
  kTrIssued = 10,    ///< producer: the stage's loads are issued
};
constexpr int kTraceCtas = 16;
constexpr int kTraceActors = 5;  ///< producer, then up to four consumer warpgroups
constexpr int kTraceCap = 16384; ///< events per actor
constexpr std::int64_t kTraceWords = std::int64_t(kTraceCtas) * kTraceActors * kTraceCap;

struct TraceCursor {
#ifdef FP4MOE_PIPELINE_TRACE
  std::uint64_t* row = nullptr;
  std::uint32_t n = 0;
  __device__ void init(std::uint64_t* base, int actor) {
    if (base != nullptr && blockIdx.x < kTraceCtas) row = base + (std::int64_t(blockIdx.x) * kTraceActors + actor) * kTraceCap;
  }
  __device__ void mark(std::uint32_t event, std::uint32_t arg) {
    if (row != nullptr && n < kTraceCap)
      row[n++] = (std::uint64_t(event) << 56) | (std::uint64_t(arg & 0xffu) << 48) |
                 (static_cast<std::uint64_t>(clock64()) & 0xffffffffffffull);
  }
  __device__ static std::uint64_t* base(const GemmParams& p) { return p.trace; }
#else
  __device__ static std::uint64_t* base(const GemmParams&) { return nullptr; }
  __device__ void init(std::uint64_t*, int) {}
  __device__ void mark(std::uint32_t, std::uint32_t) {}
#endif
};

}  // namespace fp4moe::kernels
