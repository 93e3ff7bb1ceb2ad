// The prepacked weight bit order on the GPU: one word a thread per step, the
// same permutation as the CPU (weight_prepack.hpp). A one-time step at weight
// load, so plain 32-bit accesses.

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/launch_kernel.cuh"
#include "format/format_ops.hpp"
#include "format/weight_prepack.hpp"

namespace fp4moe::detail {
namespace {

__global__ void prepack_weights_kernel(const std::uint32_t* src, std::uint32_t* dst, std::int64_t words) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] = format::prepack_word(src[i]);
}

}  // namespace

void launch_prepack_weights(const std::uint8_t* src, std::uint8_t* dst, std::int64_t words, cudaStream_t stream) {
  constexpr int kThreads = 256;
  launch_kernel(prepack_weights_kernel, grid_stride_blocks(words, kThreads), kThreads, 0, stream,
                reinterpret_cast<const std::uint32_t*>(src), reinterpret_cast<std::uint32_t*>(dst), words);
}

}  // namespace fp4moe::detail
