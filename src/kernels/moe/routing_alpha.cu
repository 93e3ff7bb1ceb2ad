// One thread per alpha element: it scans its token's top_k picks (a handful,
// cached) and sums the weights that chose its expert. Gathering rather than
// scattering writes every element exactly once, with no atomics, no prior
// zeroing, and a fixed summation order (bit-identical repeats).
#include "kernels/moe/routing_alpha.hpp"

#include "common/cuda_check.hpp"
#include "common/launch_kernel.cuh"

namespace fp4moe::kernels {
namespace {

__global__ void routing_alpha_kernel(RoutingAlphaParams p) {
  const std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= std::int64_t(p.tokens) * p.experts) return;
  // Consecutive threads take consecutive elements along alpha's unit-stride
  // dimension when it has one, so the stores coalesce.
  const bool expert_fastest = p.stride_e <= p.stride_m;
  const std::int32_t m = expert_fastest ? idx / p.experts : idx % p.tokens;
  const std::int32_t e = expert_fastest ? idx % p.experts : idx / p.tokens;
  float sum = 0.0f;
  for (int j = 0; j < p.top_k; ++j) {
    const std::int64_t at = std::int64_t(m) * p.top_k + j;
    if (__ldg(p.ids + at) == e) sum += __ldg(p.weights + at);
  }
  if (p.expert_scale) sum *= __ldg(p.expert_scale + e);
  p.alpha[std::int64_t(m) * p.stride_m + std::int64_t(e) * p.stride_e] = sum;
}

}  // namespace

void launch_routing_alpha(const RoutingAlphaParams& p, cudaStream_t stream) {
  const std::int64_t n = std::int64_t(p.tokens) * p.experts;
  if (n == 0) return;
  constexpr int kThreads = 256;
  detail::launch_kernel(routing_alpha_kernel, static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, stream, p);
}

}  // namespace fp4moe::kernels
