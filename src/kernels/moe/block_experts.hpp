// How many experts each block of tokens uses: the experts a moe_dense_fc2
// tile of those tokens does not skip. Weighted stream-K shares its work by
// these counts (kernels/sm90/stream_k.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp4moe::kernels {

/// Experts per slice: one CTA counts one slice of one token block.
constexpr int kBlockExpertsSlice = 32;

struct BlockExpertsParams {
  const float* alpha = nullptr;  ///< [M, E], any strides
  std::int64_t stride_m = 0, stride_e = 0;
  std::int32_t tokens = 0, experts = 0;
  std::int32_t block_rows = 1;  ///< tokens per block (the tile's)
  /// [blocks][slices]: experts of slice s (kBlockExpertsSlice of them) with a
  /// non-zero alpha in block b; a block's count is the sum over its slices.
  std::int32_t* counts = nullptr;
};

inline std::int32_t block_experts_slices(std::int32_t experts) { return (experts + kBlockExpertsSlice - 1) / kBlockExpertsSlice; }

void launch_block_experts(const BlockExpertsParams& p, cudaStream_t stream);

}  // namespace fp4moe::kernels
