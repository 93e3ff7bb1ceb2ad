// Device kernels the tuner and the benchmark share: a seeded random BF16 fill
// (operands are never zeros) and the read sweep that evicts L2 (and, with
// streaming loads, measures read bandwidth). Host-callable; asynchronous on the given stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp4moe::detail {

/// Uniform random BF16 values in [-scale, scale): element i depends only on
/// (seed, i).
void fill_random_bf16(void* p, std::int64_t n, std::uint64_t seed, float scale, cudaStream_t s);

/// How read_sweep's loads enter L2.
enum class SweepLoads {
  kStreaming,  ///< ld.global.cs: evict-first lines (the read-bandwidth ceiling)
  kEvicting,   ///< ld.global.cg: normal lines, which push out what L2 held
};

/// Reads `bytes` (a multiple of 16) with 16-byte loads; folds them into *sink
/// only under a condition that never holds, so the reads cannot be elided.
/// Leaves only clean lines in L2 (nothing to write back later). To evict L2
/// use kEvicting over several times its size: evict-first lines are the
/// first victims of the lines that follow them, so a streaming sweep may
/// replace little of what L2 held before it.
void read_sweep(const void* p, std::int64_t bytes, unsigned* sink, cudaStream_t s,
                SweepLoads loads = SweepLoads::kStreaming);

}  // namespace fp4moe::detail
