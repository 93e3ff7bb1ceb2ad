// Where and when a CTA runs, for the pipeline trace (pipeline_trace.cuh):
// the GPU's global nanosecond timer (%globaltimer), which unlike clock64 is
// one clock for every SM, so the trace lines up its CTAs with it; and the
// SM a CTA runs on (%smid), so it can tell CTAs that share an SM.
#pragma once

#include <cstdint>

namespace fp4moe::ptx {

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// The SM this thread runs on (%smid: below %nsmid, and 0 .. 131 on the
/// H200 this was traced on; the PTX manual allows gaps, so it names an SM,
/// it does not count them).
__device__ __forceinline__ std::uint32_t sm_id() {
  std::uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

/// The warp slot this warp holds on its SM (%warpid; its scheduler is the
/// slot mod 4). Of two CTAs of 12 warps on an H200 SM, the one placed first
/// held slots 0-11 and the other 12-23 (scripts/device_warp_slots.py,
/// docs/PERF.md stop 58); the PTX manual calls it volatile (a warp may move
/// after a preemption), so it ranks a placement, it does not pin one.
__device__ __forceinline__ std::uint32_t warp_slot() {
  std::uint32_t id;
  asm volatile("mov.u32 %0, %%warpid;" : "=r"(id));
  return id;
}

}  // namespace fp4moe::ptx
