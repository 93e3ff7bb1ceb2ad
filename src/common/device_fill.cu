#include "common/device_fill.hpp"

#include <cuda_bf16.h>

#include <algorithm>

#include "common/counter_random.cuh"
#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/launch_kernel.cuh"

namespace fp4moe::detail {
namespace {

__global__ void fill_bf16_kernel(__nv_bfloat16* p, std::int64_t n, std::uint64_t seed, float scale) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    p[i] = __float2bfloat16(scale * random_unit(random_bits(seed, i)));
  }
}

/// One 16-byte load: streaming (evict-first in L2) or L2-cached with the
/// normal policy.
template <bool kStreaming>
__device__ __forceinline__ uint4 sweep_load(const uint4* p) {
  return kStreaming ? __ldcs(p) : __ldcg(p);
}

/// Four independent 16-byte loads per thread per step keep enough bytes in
/// flight to saturate HBM (a weaker sweep would flatter every fraction).
template <bool kStreaming>
__global__ void read_sweep_kernel(const uint4* __restrict__ p, std::int64_t n, unsigned* sink) {
  unsigned acc = 0;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = sweep_load<kStreaming>(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n; i += stride) {
    const uint4 v = sweep_load<kStreaming>(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // practically never, but the compiler cannot know
}

}  // namespace

void fill_random_bf16(void* p, std::int64_t n, std::uint64_t seed, float scale, cudaStream_t s) {
  if (n <= 0) return;
  const unsigned blocks = static_cast<unsigned>(
      std::max<std::int64_t>(1, std::min<std::int64_t>((n + 255) / 256, current_device_sm_count() * 16LL)));
  launch_kernel(fill_bf16_kernel, blocks, 256, 0, s, static_cast<__nv_bfloat16*>(p), n, seed, scale);
}

void read_sweep(const void* p, std::int64_t bytes, unsigned* sink, cudaStream_t s, SweepLoads loads) {
  const std::int64_t n = bytes / 16;
  const unsigned blocks = static_cast<unsigned>(current_device_sm_count() * 8);
  const auto* words = static_cast<const uint4*>(p);
  if (loads == SweepLoads::kStreaming)
    launch_kernel(read_sweep_kernel<true>, blocks, 512, 0, s, words, n, sink);
  else
    launch_kernel(read_sweep_kernel<false>, blocks, 512, 0, s, words, n, sink);
}

}  // namespace fp4moe::detail
