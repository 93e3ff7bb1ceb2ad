// Small device kernels the benchmark needs: random fills (never time on
// zeros) and the read sweep behind both the read-bandwidth ceiling and the L2
// eviction (the BF16 fill and the read sweep are the library's, shared with
// the tuner: common/device_fill.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/device_fill.hpp"

namespace fp4moe::bench {

using detail::fill_random_bf16;  ///< uniform random BF16 in [-scale, scale)
using detail::read_sweep;        ///< L2 eviction and the read-bandwidth ceiling

/// Uniform random FP32 values in [-scale, scale).
void fill_random_fp32(float* p, std::int64_t n, std::uint64_t seed, float scale, cudaStream_t s);
/// Random E4M3 values in [-2, 2] (never NaN): FP8 GEMM operands.
void fill_random_e4m3(void* p, std::int64_t n, std::uint64_t seed, cudaStream_t s);
/// Random bytes in [lo, hi] (FP4 codes: 0..255; E4M3 scales; UE8M0 scales).
void fill_random_bytes(void* p, std::int64_t n, std::uint64_t seed, std::uint8_t lo, std::uint8_t hi, cudaStream_t s);

}  // namespace fp4moe::bench
