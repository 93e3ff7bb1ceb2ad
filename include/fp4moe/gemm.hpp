// The FP4 GEMM operations (DESIGN.md §3): dense, m-grouped contiguous and
// m-grouped masked, NVFP4 or MXFP4, BF16 or FP32 output. D = A·Bᵀ with A the
// activations (tokens) and B the weights, both K-major.
//
// Operand rules (checked before anything runs; a refused call writes nothing):
//   - A and B have the same format; their scales use ScaleLayout::kTiled128x4
//     (quantize writes it directly; convert_scale_layout converts).
//   - K = a.cols = b.cols is a multiple of 32 and of the block size; data
//     pointers are 16-byte aligned.
//   - NVFP4 global decode scales: A one value per A group, B one per B group
//     (per expert). MXFP4: none.
//   - D is BF16 or FP32, row-major with unit column stride.
// Every call is asynchronous on `stream` and does no host synchronisation,
// with one exception: a tactic (forced, cached or the heuristic's) that is
// split-K, stream-K or the gathered formulation uses the library's per-stream
// workspace (fp4moe/workspace.hpp), which the first such call on a stream
// allocates, and a later one that needs more grows (cudaFree of the buffer
// it outgrew, then cudaMalloc). Under CUDA-graph capture that is refused (an
// Error), so run the call once on the stream before capturing it: the
// captured call then finds the buffer big enough. `stream` and every
// pointer belong to the current device (cudaSetDevice): the library plans,
// keeps its workspace and launches there. A stream of another device is
// refused (InvalidArgument naming `stream`, as in every entry point that
// takes one), except while it captures a graph: CUDA does not tell a
// capturing stream's device. Pointers are not checked. Its kernel is a
// programmatic dependent launch: it may be scheduled while the kernel before
// it in the stream finishes, and reads and writes global memory only after
// that kernel has completed (README, "Operations").
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "fp4moe/tensor.hpp"

namespace fp4moe {

/// How a GEMM runs (never what it computes, beyond FP32 summation order).
/// No field value means "let the heuristic choose" (split_k = 0 is
/// stream-K): a forced tactic must equal a compiled one in every field but
/// split_k, which takes one of the values below that the tile allows. A null
/// GemmOptions::tactic leaves the choice to the tuning cache or the heuristic.
struct GemmTactic {
  /// Weights on wgmma's M side, tokens on N: the decode path.
  bool swap_ab = false;
  /// Rows of the shared-memory operand per CTA: tokens with swap_ab, weights
  /// without. With swap_ab, block_n = 8 (fp4_gemm_nt and the grouped GEMMs)
  /// is the CUDA-core route, named "dp4a": no tensor cores; each
  /// weight becomes int8 parts and meets each token in IDP.4A, exactly (the
  /// scale blocks' integer dot products, scaled and added in FP32). For one or
  /// two tokens a weight tile, where wgmma's columns would stand idle; B in
  /// the standard bit order only (not prepacked), no split-K.
  int block_n = 0;
  int block_k = 0;  ///< K per pipeline stage
  int stages = 0;   ///< pipeline depth
  /// K slices per output tile: 1, 2, 3, 4, 6 or 8 (at most the K blocks, or for
  /// moe_dense_fc2 the experts, there are to slice), or 0 for stream-K
  /// (every operation but the masked GEMM, whose tile count only the device
  /// knows): whole tiles for all but the last one-and-a-fraction waves of
  /// them, then every CTA takes an equal share of the rest's K blocks, so no
  /// SM idles in a last partial wave of tiles (moe_dense_fc2: every CTA an
  /// equal share of all tiles' experts). The 128 x 256 tiles take stream-K
  /// but no fixed split. For moe_dense_fc2 over several token tiles the share is of
  /// the cost, each tile's experts weighted by how many of them its tokens
  /// use (counted on the device by one small kernel on the same stream
  /// before the GEMM). The library reduces the slices itself, in a fixed order, so
  /// repeats are bit-identical; it keeps the scratch this needs per stream
  /// (allocated by the first split-K call on a stream that needs more than
  /// before; not during graph capture).
  int split_k = 1;
  /// moe_dense_fc2 only: the gathered formulation. The tokens of each expert
  /// (non-zero alpha) are first gathered into a copy of their rows,
  /// dequantised to BF16 (a small kernel on the same stream, into the
  /// library's per-stream workspace: about four times A's FP4 bytes); a
  /// CTA then takes 64 weight rows against every token and
  /// walks the experts, multiplying each only by its own tokens, block_n of
  /// them at a time. Each weight is read and converted once, however many
  /// tokens there are, where the dense formulation converts it once per
  /// token tile that uses it: for routed (top-k) alpha the faster one from a
  /// few tokens per expert up. Holds at most a few hundred tokens (M; the
  /// tile accumulator lives in shared memory) and runs with split_k = 1.
  bool moe_gather = false;
  /// MXFP4 without swap_ab only: the FP8 route. Operands become E4M3 (E2M1
  /// is exact in E4M3) without their scales; one FP8 wgmma per 32-K block
  /// into a block accumulator, which the CUDA cores add into the output
  /// tile's FP32 accumulators times the block's two scales (moe_dense_fc2:
  /// times alpha too, so no per-expert accumulator). Exact like the BF16
  /// route (block scales up to 2^121). The heuristic never picks it
  /// (slower than the BF16 route on the H200: docs/PERF.md); the tuner
  /// times it like any compiled tactic.
  bool fp8 = false;
  /// CTAs per cluster: 1, or 2 (the 128 x 256 tile of fp4_gemm_nt and of
  /// the contiguous grouped GEMM): the two CTAs take adjacent token blocks of
  /// one weight block, and where both use one group's weights each loads
  /// half the weight tile by TMA multicast into both, so the weights leave
  /// L2 once per pair. The heuristic picks it wherever it is compiled
  /// (measured 0.90-1.00x the time of one CTA: docs/PERF.md).
  int cluster = 1;

  bool operator==(const GemmTactic&) const = default;
  std::string name() const;
};

struct GemmOptions {
  /// Forces a tactic: one of the compiled tiles, which gemm_tactics
  /// (fp4moe/tuning.hpp), the C function fp4moe_gemm_tactics and Python's
  /// fp4moe.gemm_tactics list, with a split_k its tile allows; a tactic that
  /// is not compiled, or that the call's shape rules out, is refused
  /// (InvalidArgument). Null: the tuning cache's tactic for the call
  /// if it has one (fp4moe/tuning.hpp), else the heuristic's.
  const GemmTactic* tactic = nullptr;
  /// moe_dense_fc2 only: how many experts each token routes to, where the
  /// caller knows (top-k routing); 0 (the default): unknown, planned as if
  /// every token used every expert. A hint for choosing the tactic (with
  /// sparse alpha, smaller token tiles skip more experts); alpha alone
  /// decides what is computed. Must be in [0, E] for moe_dense_fc2 and 0
  /// for every other operation.
  int moe_top_k = 0;
};

/// D[M, N] = ga·gb·A·Bᵀ. A [M, K], B [N, K] (groups = 1), D [M, N].
void fp4_gemm_nt(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& d, cudaStream_t stream,
                 const GemmOptions& options = {});

/// Row r of A [ΣM, K] uses expert m_indices[r] of B [G, N, K]; m_indices[r] = −1
/// marks a padding row, written as 0. The rows of each expert start at a
/// multiple of kContiguousAlignment (pad with −1 rows). D [ΣM, N].
void m_grouped_fp4_gemm_nt_contiguous(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& d,
                                      const std::int32_t* m_indices, cudaStream_t stream,
                                      const GemmOptions& options = {});
constexpr int kContiguousAlignment = 128;

/// A [G, maxM, K] (a.groups = G), B [G, N, K], D [G, maxM, N] (d.groups = G).
/// Rows m ≥ masked_m[g] (device array) of group g are not written.
/// expected_m is a host hint of the typical masked_m, used to pick a tactic.
/// At expected_m <= 2 (standard weights) that is the CUDA-core tile, the
/// fastest for groups of one or two tokens; a group of three or four tokens
/// takes it 1.3-1.7x the time the tensor-core tile would (H200, docs/PERF.md
/// stops 54-55). Where such groups are common, pass a larger expected_m or a
/// tactic.
void m_grouped_fp4_gemm_nt_masked(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& d,
                                  const std::int32_t* masked_m, int expected_m, cudaStream_t stream,
                                  const GemmOptions& options = {});

}  // namespace fp4moe
