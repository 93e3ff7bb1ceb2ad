// Launching the library's own kernels (not the GEMMs, which launch through
// kernels/sm90/gemm_launch.cuh with their attributes).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "common/cuda_check.hpp"

namespace fp4moe::detail {

/// kernel<<<grid, block, smem, stream>>>(args...), throwing CudaError if
/// this launch fails. Checked through the launch's own result, not
/// cudaGetLastError: that would report, and clear, an error that a
/// caller's earlier launch left pending.
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                   Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  FP4MOE_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace fp4moe::detail
