// One CTA per expert e walks alpha's column e in blocks of 256 tokens: a
// ballot per warp and the warps' counts give each token that uses e its slot
// (token order, so the result never depends on timing), then the CTA copies
// those tokens' rows of A's columns [eW, (e+1)W): 16-byte pieces of data, and
// per 4 scale columns the 4-byte word the 128x4 tiled layout keeps together.
#include "kernels/moe/gather_tokens.hpp"

#include "common/cuda_check.hpp"
#include "fp4moe/scale_layout.hpp"

namespace fp4moe::kernels {
namespace {

constexpr int kWarps = 8, kThreads = 32 * kWarps;

std::size_t align256(std::size_t x) { return (x + 255) / 256 * 256; }

__global__ void __launch_bounds__(kThreads) gather_tokens_kernel(GatherTokensParams p) {
  __shared__ std::int32_t warp_count[kWarps];
  __shared__ std::int32_t list[kThreads];
  const GatherLayout& l = p.layout;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int32_t e = blockIdx.x;
  const std::int64_t cap = l.capacity;
  const std::int32_t row_bytes = p.width / 2;
  const std::int64_t a_row_bytes = std::int64_t(p.experts) * row_bytes;
  const std::int32_t cols_w = p.width / p.block, chunks_w = cols_w / 4;  // scale columns (4-column words) of one expert
  const std::int64_t a_cols = std::int64_t(p.experts) * cols_w;
  auto* counts = reinterpret_cast<std::int32_t*>(p.workspace + l.counts);
  auto* tokens = reinterpret_cast<std::int32_t*>(p.workspace + l.tokens) + e * cap;
  auto* alpha = reinterpret_cast<float*>(p.workspace + l.alpha) + e * cap;
  std::uint8_t* data = p.workspace + l.data + e * cap * row_bytes;
  std::uint8_t* scales = p.workspace + l.scales + e * l.scale_group_bytes;

  std::int32_t running = 0;
  for (std::int32_t base = 0; base < p.tokens; base += kThreads) {
    const std::int32_t m = base + threadIdx.x;
    const float a = m < p.tokens ? __ldg(p.alpha + m * p.stride_m + std::int64_t(e) * p.stride_e) : 0.0f;
    const bool used = a != 0.0f;
    const std::uint32_t mask = __ballot_sync(0xffffffffu, used);
    if (lane == 0) warp_count[warp] = __popc(mask);
    __syncthreads();
    std::int32_t before = 0, total = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      before += w < warp ? warp_count[w] : 0;
      total += warp_count[w];
    }
    if (used) {
      const std::int32_t i = before + __popc(mask & ((1u << lane) - 1u));
      tokens[running + i] = m;
      alpha[running + i] = a;
      list[i] = m;
    }
    __syncthreads();
    const std::int32_t pieces = row_bytes / 16;
    for (std::int32_t i = threadIdx.x; i < total * pieces; i += kThreads) {
      const std::int32_t r = i / pieces, q = i % pieces;
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(p.a_data + list[r] * a_row_bytes + std::int64_t(e) * row_bytes) + q);
      reinterpret_cast<uint4*>(data + (running + r) * std::int64_t(row_bytes))[q] = v;
    }
    for (std::int32_t i = threadIdx.x; i < total * chunks_w; i += kThreads) {
      const std::int32_t r = i / chunks_w, ch = i % chunks_w;
      // The tiled layout keeps a row's 4 columns of a chunk in one word.
      const std::uint32_t v = __ldg(reinterpret_cast<const std::uint32_t*>(
          p.a_scales + tiled128x4_offset(list[r], std::int64_t(e) * cols_w + 4 * ch, a_cols)));
      *reinterpret_cast<std::uint32_t*>(scales + tiled128x4_offset(running + r, 4 * ch, cols_w)) = v;
    }
    running += total;
    __syncthreads();  // list and warp_count are reused
  }
  if (threadIdx.x == 0) counts[e] = running;
}

}  // namespace

GatherLayout gather_layout(std::int64_t tokens, std::int64_t experts, std::int64_t width, int block) {
  GatherLayout l;
  l.capacity = (tokens + 31) / 32 * 32;
  l.scale_group_bytes = scale_bytes(ScaleLayout::kTiled128x4, l.capacity, width / block);  // as Fp4Tensor's
  std::size_t at = 0;
  auto take = [&](std::size_t bytes) {
    const std::size_t here = at;
    at = align256(at + bytes);
    return here;
  };
  const auto slots = static_cast<std::size_t>(experts * l.capacity);
  l.counts = take(static_cast<std::size_t>(experts) * 4);
  l.tokens = take(slots * 4);
  l.alpha = take(slots * 4);
  l.data = take(slots * static_cast<std::size_t>(width / 2));
  l.scales = take(static_cast<std::size_t>(experts * l.scale_group_bytes));
  l.bytes = at;
  return l;
}

void launch_gather_tokens(const GatherTokensParams& p, cudaStream_t stream) {
  if (p.experts <= 0) return;
  gather_tokens_kernel<<<static_cast<unsigned>(p.experts), kThreads, 0, stream>>>(p);
  FP4MOE_CHECK_LAUNCH();
}

}  // namespace fp4moe::kernels
