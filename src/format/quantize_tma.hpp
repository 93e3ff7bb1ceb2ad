// The BF16 → NVFP4 quantizer (quantize_tma.cu), called by launch_quantize.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "fp4moe/tensor.hpp"

namespace fp4moe::detail {

/// Tile indices in the kernel are 32-bit.
constexpr std::int64_t kMaxQuantizeTilesPerLaunch = (std::int64_t(1) << 31) - 1;

/// BF16 → NVFP4 through a TMA ring in shared memory; the contract of
/// launch_quantize (format_ops.hpp), scale padding excepted (the caller
/// zeroes it). A stack whose tiles exceed `max_tiles_per_launch` is quantized
/// in slices of whole groups, one launch each (a parameter so that tests can
/// make the slices small).
void launch_quantize_nvfp4_bf16_tma(const MatrixView& src, const Fp4Tensor& dst, const float* g_source,
                                    bool g_source_is_amax, cudaStream_t stream,
                                    std::int64_t max_tiles_per_launch = kMaxQuantizeTilesPerLaunch);

}  // namespace fp4moe::detail
