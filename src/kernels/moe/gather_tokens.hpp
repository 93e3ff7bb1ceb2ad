// The first step of moe_dense_fc2's gathered formulation (the gather GEMM
// layout): for every expert, the tokens that use it (non-zero alpha), in
// token order, with their alphas and a copy of their FP4 rows of that
// expert's W columns (data and block scales), so the GEMM can load one
// expert's tokens as consecutive rows. Nothing is dequantised: the copy is
// of FP4 bytes and scale bytes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fp4moe::kernels {

/// Where the gathered operand lives in one workspace (byte offsets, each
/// 256-byte aligned). Every expert has `capacity` slots (M rounded up to 32,
/// a multiple of every token block of the gather tiles, so a pass never
/// reads past its expert): slot s of expert e is row e·capacity + s.
struct GatherLayout {
  std::int64_t capacity = 0;           ///< slots per expert
  std::int64_t scale_group_bytes = 0;  ///< 128x4-tiled scales of one expert's slots
  std::size_t counts = 0, tokens = 0, alpha = 0, data = 0, scales = 0;
  std::size_t bytes = 0;               ///< the whole workspace
};

/// The layout for M tokens, E experts of W columns, scale blocks of `block`
/// elements (16 NVFP4, 32 MXFP4).
GatherLayout gather_layout(std::int64_t tokens, std::int64_t experts, std::int64_t width, int block);

struct GatherTokensParams {
  const float* alpha = nullptr;  ///< [M, E], any strides
  std::int64_t stride_m = 0, stride_e = 0;
  std::int32_t tokens = 0, experts = 0, width = 0;
  std::int32_t block = 16;               ///< scale block (elements)
  const std::uint8_t* a_data = nullptr;    ///< A [M, E·W] packed E2M1
  const std::uint8_t* a_scales = nullptr;  ///< A's 128x4-tiled scales (E·W/block columns)
  std::uint8_t* workspace = nullptr;       ///< GatherLayout::bytes, 256-byte aligned
  GatherLayout layout;
};

/// One CTA per expert; writes every expert's count, and its slots below the
/// count (the rest keep whatever they held: no reader looks past a count).
void launch_gather_tokens(const GatherTokensParams& p, cudaStream_t stream);

}  // namespace fp4moe::kernels
