// GPU scale-layout converter: one thread per destination byte, the same
// gather as the CPU (scale_convert.hpp).
#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/launch_kernel.cuh"
#include "format/format_ops.hpp"
#include "format/scale_convert.hpp"

namespace fp4moe::detail {
namespace {

__global__ void convert_scale_layout_kernel(const std::uint8_t* __restrict__ src, ScaleLayout src_layout,
                                            std::uint8_t* __restrict__ dst, std::int64_t rows,
                                            std::int64_t cols, std::int64_t src_bytes,
                                            std::int64_t dst_bytes) {
  const std::int64_t g = blockIdx.y;
  for (std::int64_t p = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < dst_bytes;
       p += std::int64_t(gridDim.x) * blockDim.x)
    dst[g * dst_bytes + p] = converted_scale_byte(src + g * src_bytes, src_layout, p, rows, cols);
}

__global__ void copy_tiled_scale_rows_kernel(const std::uint32_t* __restrict__ src, std::int64_t first,
                                             std::int64_t rows, std::int64_t cols, std::uint32_t* __restrict__ dst,
                                             std::int64_t words) {
  for (std::int64_t q = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < words;
       q += std::int64_t(gridDim.x) * blockDim.x)
    dst[q] = tiled_rows_word(src, first, rows, cols, q);
}

}  // namespace

void launch_copy_tiled_scale_rows(const std::uint8_t* src, std::int64_t first, std::int64_t rows, std::int64_t cols,
                                  std::uint8_t* dst, cudaStream_t stream) {
  const std::int64_t words = scale_bytes(ScaleLayout::kTiled128x4, rows, cols) / 4;
  constexpr int kThreads = 256;
  launch_kernel(copy_tiled_scale_rows_kernel, dim3(grid_stride_blocks(words, kThreads)), kThreads, 0, stream, reinterpret_cast<const std::uint32_t*>(src), first, rows, cols,
                reinterpret_cast<std::uint32_t*>(dst), words);
}

void launch_convert_scale_layout(const std::uint8_t* src, ScaleLayout src_layout, std::uint8_t* dst,
                                 ScaleLayout dst_layout, std::int64_t rows, std::int64_t cols,
                                 std::int64_t groups, cudaStream_t stream) {
  const std::int64_t src_bytes = scale_bytes(src_layout, rows, cols);
  const std::int64_t dst_bytes = scale_bytes(dst_layout, rows, cols);
  if (src_layout == dst_layout) {
    FP4MOE_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(groups * src_bytes),
                                      cudaMemcpyDeviceToDevice, stream));
    return;
  }
  constexpr int kThreads = 256;
  const dim3 grid(grid_stride_blocks(dst_bytes, kThreads), static_cast<unsigned>(groups));
  launch_kernel(convert_scale_layout_kernel, grid, kThreads, 0, stream, src, src_layout, dst, rows, cols, src_bytes, dst_bytes);
}

}  // namespace fp4moe::detail
