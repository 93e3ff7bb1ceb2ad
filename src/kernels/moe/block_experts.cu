// One CTA per token block; its threads take experts in turn and scan the
// block's tokens until one has a non-zero alpha (the test the MoE-dense
// producer skips an expert by).
#include "kernels/moe/block_experts.hpp"

#include "common/cuda_check.hpp"

namespace fp4moe::kernels {
namespace {

__global__ void block_experts_kernel(BlockExpertsParams p) {
  __shared__ std::int32_t count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  const std::int32_t m0 = blockIdx.x * p.block_rows;
  const std::int32_t m1 = min(m0 + p.block_rows, p.tokens);
  std::int32_t mine = 0;
  for (std::int32_t e = threadIdx.x; e < p.experts; e += blockDim.x) {
    const float* col = p.alpha + std::int64_t(e) * p.stride_e;
    bool used = false;
    for (std::int32_t m = m0; m < m1 && !used; ++m) used = __ldg(col + std::int64_t(m) * p.stride_m) != 0.0f;
    mine += used;
  }
  atomicAdd(&count, mine);
  __syncthreads();
  if (threadIdx.x == 0) p.counts[blockIdx.x] = count;
}

}  // namespace

void launch_block_experts(const BlockExpertsParams& p, cudaStream_t stream) {
  const std::int32_t blocks = (p.tokens + p.block_rows - 1) / p.block_rows;
  if (blocks == 0) return;
  block_experts_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(p);
  FP4MOE_CHECK_LAUNCH();
}

}  // namespace fp4moe::kernels
