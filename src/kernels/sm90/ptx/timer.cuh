// The GPU's global nanosecond timer (%globaltimer): unlike clock64, one
// clock for every SM, so the pipeline trace (pipeline_trace.cuh) lines up
// its CTAs with it.
#pragma once

#include <cstdint>

namespace fp4moe::ptx {

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace fp4moe::ptx
