// One CTA per token block. Its threads read the block's alpha elements
// independently, in the order of alpha's unit-stride dimension (coalesced),
// and set the expert's bit in a shared mask when an element is non-zero (the
// test the MoE-dense producer skips an expert by); the count is the mask's
// population. No thread walks a column and stops at its first non-zero: that
// chain of dependent loads cost ~60 us on routed alpha (measured, H200).
#include "kernels/moe/block_experts.hpp"

#include "common/cuda_check.hpp"

namespace fp4moe::kernels {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) block_experts_kernel(BlockExpertsParams p) {
  extern __shared__ std::uint32_t used[];  // one bit per expert
  __shared__ std::int32_t count;
  const std::int32_t words = (p.experts + 31) / 32;
  for (std::int32_t w = threadIdx.x; w < words; w += kThreads) used[w] = 0;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  const std::int32_t m0 = blockIdx.x * p.block_rows;
  const std::int32_t rows = min(p.block_rows, p.tokens - m0);
  const bool expert_fastest = p.stride_e <= p.stride_m;
  const std::int32_t fast = expert_fastest ? p.experts : rows;
  const std::int64_t n = std::int64_t(rows) * p.experts;
  for (std::int64_t i = threadIdx.x; i < n; i += kThreads) {
    const std::int32_t slow_i = static_cast<std::int32_t>(i / fast), fast_i = static_cast<std::int32_t>(i % fast);
    const std::int32_t m = m0 + (expert_fastest ? slow_i : fast_i), e = expert_fastest ? fast_i : slow_i;
    if (__ldg(p.alpha + std::int64_t(m) * p.stride_m + std::int64_t(e) * p.stride_e) != 0.0f)
      atomicOr(&used[e / 32], 1u << (e % 32));
  }
  __syncthreads();
  for (std::int32_t w = threadIdx.x; w < words; w += kThreads) atomicAdd(&count, __popc(used[w]));
  __syncthreads();
  if (threadIdx.x == 0) p.counts[blockIdx.x] = count;
}

}  // namespace

void launch_block_experts(const BlockExpertsParams& p, cudaStream_t stream) {
  const std::int32_t blocks = (p.tokens + p.block_rows - 1) / p.block_rows;
  if (blocks == 0) return;
  const std::size_t smem = std::size_t((p.experts + 31) / 32) * 4;
  block_experts_kernel<<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(p);
  FP4MOE_CHECK_LAUNCH();
}

}  // namespace fp4moe::kernels
