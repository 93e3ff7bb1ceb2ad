// The BF16 → NVFP4 quantizer (quantize_tma.cu), called by launch_quantize.
#pragma once

#include <cuda_runtime_api.h>

#include "fp4moe/tensor.hpp"

namespace fp4moe::detail {

/// BF16 → NVFP4 through a TMA ring in shared memory; the contract of
/// launch_quantize (format_ops.hpp), scale padding excepted (the caller
/// zeroes it).
void launch_quantize_nvfp4_bf16_tma(const MatrixView& src, const Fp4Tensor& dst, const float* g_source,
                                    bool g_source_is_amax, cudaStream_t stream);

}  // namespace fp4moe::detail
