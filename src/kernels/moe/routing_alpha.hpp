// The routing helper's kernel: dense alpha [M, E] from top-k ids and weights.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fp4moe::kernels {

struct RoutingAlphaParams {
  const std::int32_t* ids = nullptr;   ///< [M, top_k]
  const float* weights = nullptr;      ///< [M, top_k]
  const float* expert_scale = nullptr; ///< [E] or null
  float* alpha = nullptr;
  std::int64_t stride_m = 0, stride_e = 0;
  std::int32_t tokens = 0, experts = 0, top_k = 0;
};

void launch_routing_alpha(const RoutingAlphaParams& p, cudaStream_t stream);

}  // namespace fp4moe::kernels
