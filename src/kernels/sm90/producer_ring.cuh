// The producer's side of the stage ring, for the producers that write a
// header with each stage (MoE-dense, gather): the next stage in
// ring order, once its consumers have released it.
#pragma once

#include <cstdint>

#include "kernels/sm90/ptx/memory.cuh"

namespace fp4moe::kernels {

template <class Cfg>
struct ProducerRing {
  std::uint8_t* smem;
  std::uint64_t* empty;
  std::uint32_t it = 0;  ///< stages taken so far

  /// Waits until the next stage is free; sets s to it and returns its header.
  template <class Header>
  __device__ Header* next(int& s) {
    s = it % Cfg::kStages;
    ptx::mbar_wait(&empty[s], ((it / Cfg::kStages) & 1) ^ 1);
    ++it;
    // (MoE-dense's header in its stage in this form: written as
    // header_offset(s), the same address, ptxas scheduled the MoE-dense
    // kernels differently, and they were not re-measured.)
    if constexpr (Cfg::kGather) return reinterpret_cast<Header*>(smem + Cfg::header_offset(s));
    return reinterpret_cast<Header*>(smem + s * Cfg::kStageBytes + Cfg::kOffHeader);
  }
  /// Passes over the next stage (another producer warp's to fill).
  __device__ void skip() { ++it; }
};

}  // namespace fp4moe::kernels
