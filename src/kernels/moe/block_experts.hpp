// How many experts each block of tokens uses: the experts a moe_dense_fc2
// tile of those tokens does not skip. Weighted stream-K shares its work by
// these counts (kernels/sm90/stream_k.hpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp4moe::kernels {

struct BlockExpertsParams {
  const float* alpha = nullptr;  ///< [M, E], any strides
  std::int64_t stride_m = 0, stride_e = 0;
  std::int32_t tokens = 0, experts = 0;
  std::int32_t block_rows = 1;    ///< tokens per block (the tile's)
  std::int32_t* counts = nullptr; ///< [ceil(M / block_rows)]: experts with a non-zero alpha in the block
};

void launch_block_experts(const BlockExpertsParams& p, cudaStream_t stream);

}  // namespace fp4moe::kernels
