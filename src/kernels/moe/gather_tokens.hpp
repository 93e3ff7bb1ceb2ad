// The first step of moe_dense_fc2's gathered formulation (the gather GEMM
// layout): for every expert, the tokens that use it (non-zero alpha), in
// token order, with their alphas and their rows of that expert's W columns,
// dequantised to BF16 (exactly: the values the GEMM's own conversion gives,
// with NVFP4's 2^-9 offset, fp4_dequant.cuh) and in the K order of the
// gather tile that reads them, so the GEMM's wgmmas read a stage's tokens
// as they land (gemm_config.cuh kTokensBf16).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fp4moe::kernels {

/// Where the gathered operand lives in one workspace (byte offsets, each
/// 256-byte aligned). Every expert has `capacity` slots (M rounded up to 32,
/// a multiple of every token block of the gather tiles, so a pass never
/// reads past its expert): slot s of expert e is row e·capacity + s. The
/// tokens are BF16 in column groups of 64: group g of row r is 128 bytes at
/// (g · rows + r) · 128, rows = E·capacity, so one TMA box of BK/64 groups
/// x BT rows is a stage's BK/64 sub-step buffers (moe_gather_producer.cuh).
struct GatherLayout {
  std::int64_t capacity = 0;           ///< slots per expert
  std::size_t counts = 0, tokens = 0, alpha = 0, data = 0;
  std::size_t bytes = 0;               ///< the whole workspace
};

/// The layout for M tokens and E experts of W columns (a multiple of 64).
GatherLayout gather_layout(std::int64_t tokens, std::int64_t experts, std::int64_t width);

struct GatherTokensParams {
  const float* alpha = nullptr;  ///< [M, E], any strides
  std::int64_t stride_m = 0, stride_e = 0;
  std::int32_t tokens = 0, experts = 0, width = 0;
  bool nvfp4 = true;                     ///< A's format (else MXFP4)
  /// The K order of the tile that reads the copy: the lane-block order
  /// inside each 64-K group (lane_block_logical_k), else the chunk order
  /// (logical_k inside each 32-K chunk); fp4_dequant.cuh.
  bool lane_blocks = false;
  const std::uint8_t* a_data = nullptr;    ///< A [M, E·W] packed E2M1
  const std::uint8_t* a_scales = nullptr;  ///< A's 128x4-tiled scales (E·W/block columns)
  std::uint8_t* workspace = nullptr;       ///< GatherLayout::bytes, 256-byte aligned
  GatherLayout layout;
};

/// One CTA per expert; writes every expert's count, and its slots below the
/// count (the rest keep whatever they held: no reader looks past a count;
/// a GEMM column of such a slot is never added anywhere).
void launch_gather_tokens(const GatherTokensParams& p, cudaStream_t stream);

}  // namespace fp4moe::kernels
