// One CTA per (token block, slice of 32 experts): lane l of every warp
// watches expert 32s + l, warp w the block's rows w, w + 8, ...; each thread
// issues its loads back to back (independent, so they overlap) and ORs
// "non-zero" (the test the MoE-dense producer skips an expert by); a ballot
// and a population count give the slice's count. Earlier forms, a column
// walk stopping at the first non-zero and a loop with a shared atomic per
// element, kept one load in flight per thread: 60-90 us on an H200 where
// this takes a launch.
#include "kernels/moe/block_experts.hpp"

#include "common/cuda_check.hpp"
#include "common/launch_kernel.cuh"

namespace fp4moe::kernels {
namespace {

constexpr int kWarps = 8;

__global__ void __launch_bounds__(32 * kWarps) block_experts_kernel(BlockExpertsParams p) {
  __shared__ std::uint32_t warp_used[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int32_t e = blockIdx.y * kBlockExpertsSlice + lane;
  const std::int32_t m0 = blockIdx.x * p.block_rows, m1 = min(m0 + p.block_rows, p.tokens);
  bool used = false;
  if (e < p.experts) {
    const float* col = p.alpha + std::int64_t(e) * p.stride_e;
    constexpr int kBatch = 8;  // loads in flight per thread
    for (std::int32_t m = m0 + warp; m < m1; m += kWarps * kBatch) {
      float v[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        const std::int32_t r = m + i * kWarps;
        v[i] = r < m1 ? __ldg(col + std::int64_t(r) * p.stride_m) : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kBatch; ++i) used |= v[i] != 0.0f;
    }
  }
  const std::uint32_t mask = __ballot_sync(0xffffffffu, used);
  if (lane == 0) warp_used[warp] = mask;
  __syncthreads();
  if (threadIdx.x == 0) {
    std::uint32_t all = 0;
    for (int w = 0; w < kWarps; ++w) all |= warp_used[w];
    p.counts[std::int64_t(blockIdx.x) * gridDim.y + blockIdx.y] = __popc(all);
  }
}

}  // namespace

void launch_block_experts(const BlockExpertsParams& p, cudaStream_t stream) {
  const std::int32_t blocks = (p.tokens + p.block_rows - 1) / p.block_rows;
  if (blocks == 0 || p.experts == 0) return;
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(block_experts_slices(p.experts)));
  detail::launch_kernel(block_experts_kernel, grid, 32 * kWarps, 0, stream, p);
}

}  // namespace fp4moe::kernels
