// Device kernels the tuner and the benchmark share: a seeded random BF16 fill
// (operands are never zeros) and the read sweep that evicts L2 (and measures
// read bandwidth). Host-callable; asynchronous on the given stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp4moe::detail {

/// Uniform random BF16 values in [-scale, scale): element i depends only on
/// (seed, i).
void fill_random_bf16(void* p, std::int64_t n, std::uint64_t seed, float scale, cudaStream_t s);

/// Reads `bytes` (a multiple of 16) with 16-byte streaming loads; folds them
/// into *sink only under a condition that never holds, so the reads cannot be
/// elided. Leaves only clean lines in L2 (nothing to write back later).
void read_sweep(const void* p, std::int64_t bytes, unsigned* sink, cudaStream_t s);

}  // namespace fp4moe::detail
