// One CTA per expert e walks alpha's column e in blocks of 256 tokens: a
// ballot per warp and the warps' counts give each token that uses e its slot
// (token order, so the result never depends on timing), then the CTA
// dequantises those tokens' rows of A's columns [eW, (e+1)W): a thread a
// 64-column group of a row (32 FP4 bytes and its scale codes in, 128 BF16
// bytes out), with the GEMM's own conversion functions, so the values are
// exactly those the GEMM's conversion of the FP4 rows would give.
#include "kernels/moe/gather_tokens.hpp"

#include "common/cuda_check.hpp"
#include "common/launch_kernel.cuh"
#include "fp4moe/scale_layout.hpp"
#include "kernels/sm90/fp4_dequant.cuh"

namespace fp4moe::kernels {
namespace {

constexpr int kWarps = 8, kThreads = 32 * kWarps;

std::size_t align256(std::size_t x) { return (x + 255) / 256 * 256; }

// Each logical pair of a 64-K group is a raw pair of one FP4 word (the
// conversion below relies on it), and each order is a permutation.
constexpr bool orders_are_pairs_of_words() {
  for (bool lb : {false, true}) {
    bool seen[64] = {};
    for (int c = 0; c < 64; ++c) {
      const int r = sub_step_real_k(lb, c);
      if (r < 0 || seen[r]) return false;
      seen[r] = true;
      if (c % 2 == 1 && (r != sub_step_real_k(lb, c - 1) + 4 || (r - 4) % 8 >= 4)) return false;
    }
  }
  return true;
}
static_assert(orders_are_pairs_of_words(), "a logical pair is elements p, p + 4 of one word");

/// One 64-column group of one row: 32 FP4 bytes at `src`, their scale
/// codes (NVFP4: four, one a 16-block, bytes of `codes`; MXFP4: two, one a
/// 32-block, bytes 0 and 1), into 64 BF16 at `dst` in the tile's K order.
template <bool kNvfp4, bool kLaneBlocks>
__device__ __forceinline__ void dequantise_group(const std::uint8_t* src, std::uint32_t codes, std::uint8_t* dst) {
  const uint4 lo = __ldg(reinterpret_cast<const uint4*>(src)), hi = __ldg(reinterpret_cast<const uint4*>(src) + 1);
  const std::uint32_t words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  constexpr int kBlocks = kNvfp4 ? 4 : 2;
  PairScale scale[kBlocks];
#pragma unroll
  for (int b = 0; b < kBlocks; ++b) {
    const std::uint8_t code = (codes >> (8 * b)) & 0xffu;
    scale[b] = kNvfp4 ? nvfp4_pair_scale(code) : mxfp4_pair_scale(code);
  }
  std::uint32_t pairs[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int r = sub_step_real_k(kLaneBlocks, 2 * i);
    pairs[i] = apply_scale<kNvfp4>(raw_pair_at(words[r / 8], r % 8), scale[r / (kNvfp4 ? 16 : 32)]);
  }
#pragma unroll
  for (int q = 0; q < 8; ++q)
    reinterpret_cast<uint4*>(dst)[q] = make_uint4(pairs[4 * q], pairs[4 * q + 1], pairs[4 * q + 2], pairs[4 * q + 3]);
}

template <bool kNvfp4, bool kLaneBlocks>
__global__ void __launch_bounds__(kThreads) gather_tokens_kernel(GatherTokensParams p) {
  __shared__ std::int32_t warp_count[kWarps];
  __shared__ std::int32_t list[kThreads];
  const GatherLayout& l = p.layout;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int32_t e = blockIdx.x;
  const std::int64_t cap = l.capacity, rows = cap * p.experts;
  constexpr int kBlock = kNvfp4 ? 16 : 32;
  const std::int32_t groups = p.width / 64;  // 64-column groups of one expert
  const std::int64_t a_row_bytes = std::int64_t(p.experts) * p.width / 2;
  const std::int64_t a_cols = std::int64_t(p.experts) * p.width / kBlock;  // A's scale columns
  auto* counts = reinterpret_cast<std::int32_t*>(p.workspace + l.counts);
  auto* tokens = reinterpret_cast<std::int32_t*>(p.workspace + l.tokens) + e * cap;
  auto* alpha = reinterpret_cast<float*>(p.workspace + l.alpha) + e * cap;
  std::uint8_t* data = p.workspace + l.data;

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
    // Item i: group i / total of the i % total-th token (consecutive threads
    // write consecutive 128-byte rows of one group).
    for (std::int32_t i = threadIdx.x; i < total * groups; i += kThreads) {
      const std::int32_t r = i % total, g = i / total;
      const std::int64_t col = std::int64_t(e) * p.width + 64 * g;  // A's first column of the group
      // The 128x4 layout keeps a row's four scale columns 4c..4c+3 in one
      // word: NVFP4's group is one word, MXFP4's half of one.
      const std::int64_t scale_col = col / kBlock;
      const std::uint32_t word = __ldg(reinterpret_cast<const std::uint32_t*>(
          p.a_scales + tiled128x4_offset(list[r], scale_col & ~std::int64_t(3), a_cols)));
      const std::uint32_t codes = kNvfp4 ? word : word >> (8 * (scale_col % 4));
      dequantise_group<kNvfp4, kLaneBlocks>(p.a_data + list[r] * a_row_bytes + col / 2, codes,
                                            data + (g * rows + e * cap + running + r) * 128);
    }
    running += total;
    __syncthreads();  // list and warp_count are reused
  }
  if (threadIdx.x == 0) counts[e] = running;
}

}  // namespace

GatherLayout gather_layout(std::int64_t tokens, std::int64_t experts, std::int64_t width) {
  GatherLayout l;
  l.capacity = (tokens + 31) / 32 * 32;
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
  l.data = take(slots * static_cast<std::size_t>(width) * 2);
  l.bytes = at;
  return l;
}

void launch_gather_tokens(const GatherTokensParams& p, cudaStream_t stream) {
  if (p.experts <= 0) return;
  const auto grid = static_cast<unsigned>(p.experts);
  if (p.nvfp4) {
    detail::launch_kernel(p.lane_blocks ? gather_tokens_kernel<true, true> : gather_tokens_kernel<true, false>, grid,
                          kThreads, 0, stream, p);
  } else {
    detail::launch_kernel(p.lane_blocks ? gather_tokens_kernel<false, true> : gather_tokens_kernel<false, false>, grid,
                          kThreads, 0, stream, p);
  }
}

}  // namespace fp4moe::kernels
