// Everything a GEMM kernel launch needs besides its two tensor maps. Shared by
// the host launcher and the device code.
//
// Roles. The kernel multiplies an X operand (wgmma's M side, BM rows per CTA)
// by a Y operand (wgmma's N side, BN rows per CTA), both dequantised to BF16
// in shared memory. Without swap-AB X is A (tokens) and Y is B (weights);
// with swap-AB X is B and Y is A, and the accumulator tile is Dᵀ.
#pragma once

#include <cstdint>

#include "common/fast_divmod.hpp"

namespace fp4moe::kernels {

/// kMoeDense: one group like kDense, but K is E experts of W columns each and
/// D = Σ_e alpha[m, e]·A_e·B_eᵀ (moe_dense_fc2).
/// kMoeFc1: one group of tokens against E experts' stacked [2I, K] weights
/// (gate rows then up rows); an output tile of 128 columns of one expert
/// loads the matching 128 gate and 128 up rows, and the epilogue writes
/// silu(gate)·up (moe_dense_fc1_swiglu).
/// kMoeGather: moe_dense_fc2 with each expert's tokens gathered first
/// (kernels/moe/gather_tokens.hpp): a tile is BW weight rows × every token;
/// it walks the experts and, per expert, only the tokens that use it, and
/// adds alpha·(A_e·B_eᵀ) of each into a shared-memory accumulator of the
/// tile. Each weight is converted once, whatever M.
enum class Layout : std::uint8_t { kDense, kContiguous, kMasked, kMoeDense, kMoeFc1, kMoeGather };

/// Most groups (experts) a grouped GEMM takes: the masked scheduler keeps one
/// prefix count per group in shared memory.
constexpr int kMaxGroups = 1024;

struct OperandParams {
  const std::uint8_t* scales = nullptr;  ///< 128x4-tiled block scales
  std::int64_t scale_group_bytes = 0;    ///< bytes of one group's scales (0: one group)
  std::int32_t scale_chunks = 0;         ///< 512-byte chunks per 128-row band: ceil(K/block/4)
  const float* global = nullptr;         ///< NVFP4 decode scale(s); null for MXFP4
  std::int32_t rows_per_group = 0;       ///< rows of one group in the 2-D tensor map
};

struct GemmParams {
  OperandParams a, b;  ///< A = tokens [.., K], B = weights [.., K]
  std::int32_t m = 0;         ///< dense: M; contiguous: ΣM; masked: max M per group
  std::int32_t n = 0;
  std::int32_t k = 0;
  std::int32_t groups = 1;
  const std::int32_t* m_indices = nullptr;  ///< contiguous layout
  const std::int32_t* masked_m = nullptr;   ///< masked layout
  void* d = nullptr;
  std::int64_t ldd = 0;            ///< elements between rows of D
  std::int64_t d_group_stride = 0; ///< masked layout: elements between groups of D
  bool d_is_bf16 = true;
  bool d_tma = false;              ///< D is stored by TMA (the launcher built its tensor map: BF16, 16-byte rows)
  /// Division by the tile scheduler's weight blocks per group, set by the
  /// launcher (a work item's tile index splits into token and weight block
  /// by a multiply-high instead of a division sequence, per tile and thread).
  detail::FastDivmod n_blocks_div;
  std::int32_t split_k = 1;        ///< K slices per output tile; 0: stream-K (stream_k.hpp)
  std::int32_t split_slots = 1;    ///< partial tiles kept per output tile: split_k, or stream-K's max_slots
  float* split_partials = nullptr; ///< [output tiles][split_slots][BM·BN] FP32 (tiles with several contributors)
  std::int32_t* split_counters = nullptr;  ///< one per output tile, 0 between calls
  /// Weighted stream-K (MoE-dense): experts each token block uses, as
  /// [stream_k_blocks][stream_k_slices] partial counts (kernels/moe/block_experts.hpp);
  /// null: equal shares.
  const std::int32_t* stream_k_block_experts = nullptr;
  std::int32_t stream_k_blocks = 0;
  std::int32_t stream_k_slices = 0;
  // MoE-dense layout.
  std::int32_t experts = 1;        ///< E
  std::int32_t expert_width = 0;   ///< W: K columns per expert (a multiple of BK)
  const float* alpha = nullptr;    ///< [M, E], FP32
  // MoE FC1 (SwiGLU) layout: n = E·I output columns.
  std::int32_t fc1_inter = 0;              ///< I: output columns per expert (a multiple of 128)
  const float* fc1_expert_scale = nullptr; ///< [E] or null (1)
  // FC1 NVFP4 output (null fp4_data: BF16 output into d).
  std::uint8_t* fc1_fp4_data = nullptr;    ///< [M, E·I/2] packed E2M1
  std::uint8_t* fc1_fp4_scales = nullptr;  ///< 128x4-tiled E4M3, E·I/16 scale columns
  const float* fc1_encode_scale = nullptr; ///< g (device scalar)
  float* fc1_decode_out = nullptr;         ///< receives 1/g, the output's global decode scale
  std::int64_t alpha_stride_m = 0; ///< elements between tokens of alpha
  std::int64_t alpha_stride_e = 0; ///< elements between experts of alpha
  // MoE gather layout: A is the gathered rows [E·gather_capacity, W]; expert e
  // has gather_counts[e] tokens, its slot s is token gather_tokens[e·cap + s]
  // with weight gather_alpha[e·cap + s] (kernels/moe/gather_tokens.hpp). p.m
  // is M (the tokens of D), p.k is E·W (B's K).
  const std::int32_t* gather_counts = nullptr;
  const std::int32_t* gather_tokens = nullptr;
  const float* gather_alpha = nullptr;
  std::int32_t gather_capacity = 0;
  // Stream-K shares weighted by placement (docs/PERF.md stops 58-59): a
  // counter in the workspace (zero between launches; gather_stream_k_share)
  // and the first-placed CTAs' extra weight in 64ths (0: shares by CTA index).
  std::uint32_t* gather_rank = nullptr;
  std::int32_t gather_lead = 0;
#ifdef FP4MOE_PIPELINE_TRACE
  std::uint64_t* trace = nullptr;  ///< pipeline_trace.cuh: the traced launch's event buffer, else null
#endif
};

}  // namespace fp4moe::kernels
