// Mixture-of-Experts operations (DESIGN.md §3).
//
// moe_dense_fc2 runs an MoE layer's second GEMM as one dense GEMM over all
// experts: A holds, for every token, the FC1 output of every expert side by
// side ([M, E·W]), B every expert's down projection side by side ([N, E·W]),
// and alpha [M, E] the routing weight of each (token, expert), 0 where the
// token did not pick the expert. Two formulations, chosen by the tactic:
//   - dense: tiles of tokens × weights over all experts; a tile that no token
//     of the tile routed to expert e reads none of e's A or B bytes (expert
//     skipping), so sparse routing costs less than dense alpha;
//   - gathered (GemmTactic::moe_gather): each expert's tokens are gathered
//     first, dequantised to BF16 (a small kernel into a per-stream
//     workspace the library keeps beside split-K's, about four times A's FP4
//     bytes: run a call once before capturing it in a CUDA graph;
//     fp4moe/workspace.hpp measures and frees it), and
//     each expert's weights are multiplied by its own tokens
//     only, read and converted once however many tokens there are. For
//     top-k routing this is the faster one from one token per expert
//     (M·top_k/E; measured down to that), up to a few hundred tokens; the
//     heuristic takes it there when GemmOptions::moe_top_k says how sparse
//     alpha is.
//
// moe_dense_fc1_swiglu is the layer's first GEMM with the SwiGLU activation
// fused, writing BF16 or (quantised in the epilogue) the NVFP4 A of FC2.
//
// moe_routing_alpha builds alpha from top-k routing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "fp4moe/gemm.hpp"
#include "fp4moe/tensor.hpp"

namespace fp4moe {

/// D[m, :] = ga·gb·Σ_e alpha[m, e]·A[m, eW:(e+1)W]·B[:, eW:(e+1)W]ᵀ.
///   a      [M, E·W] FP4 (groups = 1), b [N, E·W] FP4, same format.
///   alpha  FP32 [M, E] on the device, any non-negative strides (token-major,
///          expert-major or a slice of something wider); E = alpha.cols.
///   expert_width  W: a multiple of 128, with E·W = K.
///   d      BF16 or FP32 [M, N], unit column stride.
/// Products are exact and each expert's partial sum is FP32; alpha is applied
/// to that partial sum in FP32 (acc += alpha·partial), so the result is within
/// FP32 accumulation error of the exact one and bit-exact on integer data.
/// Tactics: tile, swap-AB and split-K over whole experts, or the gathered
/// formulation (GemmTactic::moe_gather: M at most a few hundred, block_k
/// dividing W, split_k 1; the same sums in the same order per token, expert
/// by expert). Without a forced tactic, where the tactic for all M tokens is
/// the direct (not swap-AB) 128-token tile and M leaves 1-64 tokens past its
/// last whole tile (65-96 too where that tile has 256-K stages: the only
/// block_k of the 96-token swap-AB tile), those last tokens run as a second
/// launch on the same stream with the tactic picked for them (a swap-AB
/// tile): each output row still comes from one kernel, with the same
/// numerics. With 256-K stages, 145-192 tokens run instead as 96 tokens on
/// the 96-token tile and the rest on another swap-AB tile; the rest's block
/// scales are first copied to a 128-row band start (a small kernel; the
/// copy, one 128-row band of A's scales, lives in the per-stream workspace
/// of fp4moe/workspace.hpp). The FP8
/// route's tile (GemmTactic::fp8), even a cached one, never has its tail
/// split off.
void moe_dense_fc2(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& alpha, int expert_width, const MatrixView& d,
                   cudaStream_t stream, const GemmOptions& options = {});

/// out[m, eI + i] = silu(gate)·up·expert_scale[e], gate = ga·gb[e]·A[m]·B_e[i],
/// up = ga·gb[e]·A[m]·B_e[I + i], silu(x) = x / (1 + e^-x).
///   a             [M, K] FP4 (groups = 1).
///   b             E experts of [2I, K] (b.groups = E, b.rows = 2I): gate rows
///                 then up rows (the w13 order); I a multiple of 128. NVFP4:
///                 one global scale per expert.
///   expert_scale  FP32 [E] on the device, or null (1).
/// The GEMM is exact with FP32 accumulation; silu and the products are FP32.
/// Tactic: 128 tokens x (128 gate + 128 up rows) per tile.
void moe_dense_fc1_swiglu(const Fp4Tensor& a, const Fp4Tensor& b, const float* expert_scale, const MatrixView& d,
                          cudaStream_t stream, const GemmOptions& options = {});

/// The same with NVFP4 output, quantised in the epilogue by the rules of
/// DESIGN.md §2 with the caller's global encode scale g (`encode_scale`, a
/// device scalar), exactly as quantize_nvfp4 would quantise the FP32 result:
/// `out` is NVFP4 [M, E·I] with 128x4-tiled scales (padding rows 0), and
/// out.global_scale receives 1/g. It feeds moe_dense_fc2 directly (W = I).
void moe_dense_fc1_swiglu(const Fp4Tensor& a, const Fp4Tensor& b, const float* expert_scale, const Fp4Tensor& out,
                          const float* encode_scale, cudaStream_t stream, const GemmOptions& options = {});

/// alpha[m, e] = expert_scale[e]·Σ_{j : topk_ids[m, j] = e} topk_weights[m, j]
/// for every (m, e) of alpha (FP32 [M, E], non-negative strides with a
/// positive col_stride, so that each expert has an element of its own), so
/// every element is written (0 for experts the token did not pick).
///   topk_ids      int32 [M, top_k], row-major, device.
///   topk_weights  FP32 [M, top_k], row-major, device.
///   expert_scale  FP32 [E] or null (1).
/// Ids outside [0, E) (for example −1 for a dropped slot) select nothing: a
/// device array cannot be checked before launch without a synchronisation.
void moe_routing_alpha(const std::int32_t* topk_ids, const float* topk_weights, int top_k, const float* expert_scale,
                       const MatrixView& alpha, cudaStream_t stream);

}  // namespace fp4moe
