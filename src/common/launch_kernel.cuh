// Launching the library's own kernels (not the GEMMs, which launch through
// kernels/sm90/gemm_launch.cuh with their attributes).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"

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

/// Blocks of `threads` for a grid-stride loop over `items`: one item a
/// thread, at most eight blocks an SM (the loop takes the rest), at least one.
inline unsigned grid_stride_blocks(std::int64_t items, int threads) {
  const std::int64_t blocks = std::min<std::int64_t>((items + threads - 1) / threads, current_device_sm_count() * 8LL);
  return static_cast<unsigned>(std::max<std::int64_t>(blocks, 1));
}

/// cudaFuncSetAttribute(kernel, MaxDynamicSharedMemorySize, bytes), once per
/// device and process: the attribute only bounds what a launch may ask, and
/// setting it at every launch cost ~350 ns of host time (H200, docs/PERF.md
/// stop 70). Each kernel (and bound) keeps its own `allowed` flags. (A
/// cudaDeviceReset would clear the attribute, as it frees the library's
/// per-stream workspaces: the library is not used across one.)
template <class... Params>
void allow_dynamic_smem(void (*kernel)(Params...), int bytes, std::array<std::atomic<bool>, 64>& allowed) {
  const int device = current_device();
  const bool cached = device >= 0 && device < static_cast<int>(allowed.size());
  if (cached && allowed[static_cast<std::size_t>(device)].load(std::memory_order_acquire)) return;
  FP4MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  if (cached) allowed[static_cast<std::size_t>(device)].store(true, std::memory_order_release);
}

}  // namespace fp4moe::detail
