// The compiled tactic set and the heuristic that picks from it. Host only;
// device code never sees this file.
#pragma once

#include <string>
#include <vector>

#include "fp4moe/gemm.hpp"
#include "fp4moe/tuning.hpp"
#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/gemm_registry.hpp"

namespace fp4moe::tuning {

/// What the heuristic needs to know about a problem.
struct ProblemShape {
  Fp4Format format;
  kernels::Layout layout;
  int m;            ///< tokens per group (dense: M; contiguous: ΣM / groups; masked: expected_m)
  int n;
  int k;
  int groups;
  int experts = 0;  ///< MoE-dense: E (split-K slices whole experts); FC1: E (informational)
  int top_k = 0;    ///< MoE-dense: experts per token when known (0: every token uses every expert)
  int sm_count = 132;
  /// B in the prepacked bit order: the heuristic picks only tiles with a
  /// kernel for it (the CUDA-core route reads the standard order).
  bool b_prepacked = false;
};

/// The CUDA-core route (kernels/sm90/dp4a_gemv.cuh): the 8-token swap-AB tile
/// of the dense, contiguous and masked layouts, both formats.
bool is_dp4a(const GemmTactic& t);

/// The most tokens a weight tile (M; masked: expected_m) for which the
/// heuristic takes the CUDA-core route: at one and two tokens it ran 0.69-0.82x
/// the 16-token wgmma tile's time, at four 1.3-1.5x (a probe, H200,
/// docs/PERF.md stop 53).
constexpr int kDp4aMaxTokens = 2;

/// The kernel layout that runs an operation.
kernels::Layout layout_of(GemmOp op);

/// The heuristic's view of a call described as a TuneShape (what both the
/// entry points and the tuner describe a call with): FC1 runs as one group of
/// E·2I weight rows. sm_count is left at its default.
ProblemShape problem_shape(const TuneShape& call);

/// split_k = 0: stream-K, whole tiles for all but the last one-and-a-fraction
/// waves, then every CTA of the grid takes an equal share of the rest's K
/// units (MoE-dense: of all tiles' experts; kernels/sm90/stream_k.hpp). Not
/// the masked layout: the share needs the exact tile count on the host.
constexpr int kStreamK = 0;

/// Split-K values every kernel compiled with split-K accepts at run time.
/// 3 and 6 fill the GPU where the tiles are a sixth or a third of its CTA
/// slots (dense 64x2112x7168: 17 tiles, 68 CTAs on split 4, 102 on 6;
/// docs/PERF.md stop 35).
constexpr int kSplitKChoices[] = {1, 2, 3, 4, 6, 8, kStreamK};

/// The units split-K divides a tile's K loop into: whole experts for
/// MoE-dense, else K blocks of the tactic.
int split_k_units(const ProblemShape& shape, const GemmTactic& tactic);

/// Every tactic compiled for a format and layout (listed with split_k = 1;
/// each also runs with any of kSplitKChoices).
std::vector<GemmTactic> compiled_tactics(Fp4Format format, kernels::Layout layout);

/// The heuristic's choice for a shape.
GemmTactic pick_tactic(const ProblemShape& shape);

/// The split_k the heuristic gives `tile` (a compiled tile; its split_k is
/// ignored) on `shape`: what pick_tactic does after choosing a tile, for a
/// tile chosen by someone else (the benchmark's rows of other routes).
int heuristic_split_k(const ProblemShape& shape, const GemmTactic& tile);

/// moe_dense_fc2's token tail: where `picked` (the tactic for all M tokens,
/// not forced by the caller) is the direct BF16 tile of `block_tokens`
/// tokens and M leaves at most 64 tokens past its last whole tile (96 where
/// the 96-token tile serves picked's stages), the entry point runs those
/// tail tokens as a call of their own (a swap-AB tile, picked for them),
/// after the whole tiles: their padded tile costs as much as a full one, the
/// swap-AB tiles less. Where the 96-token tile serves the stages, 145-192
/// tokens split at 96 instead (two swap-AB calls; the tail then starts
/// inside a 128-row scale band). Returns the tail's tokens, 0 for no split.
int moe_tail_tokens(const ProblemShape& shape, const GemmTactic& picked, int block_tokens);

/// Why a tactic cannot run a shape: the rules the entry points enforce on
/// GemmOptions::tactic, and the tuner's filter of its candidates.
enum class TacticFault {
  kNone,
  kNotCompiled,        ///< no kernel of this (format, layout, tile)
  kSplitKChoice,       ///< split_k is not 1, 2, 3, 4, 6, 8 or 0 (stream-K)
  kSplitKNotCompiled,  ///< the tile is compiled without split-K (stream-K included)
  kSplitKUnits,        ///< more slices than experts (MoE-dense) or K blocks; stream-K with one
  kStreamKLayout,      ///< stream-K on the masked layout
  kTooManyTokens,      ///< more tokens (M) than the kernel holds (the gather tiles, the 96-token tile)
  kExpertWidth,        ///< MoE-dense: block_k does not divide the expert width W
};

struct TacticCheck {
  const kernels::KernelEntry* kernel = nullptr;  ///< set unless kNotCompiled
  TacticFault fault = TacticFault::kNone;
  int units = 0;  ///< what split-K slices (experts or K blocks)
  int max_m = 0;  ///< the kernel's token limit (0: none)
  bool ok() const { return fault == TacticFault::kNone; }
};

/// Checks `tactic` against `shape` (no CUDA calls; any M).
TacticCheck check_tactic(const ProblemShape& shape, const GemmTactic& tactic);

/// The tactic space of a shape: every compiled tile of its format and layout
/// × every split_k of kSplitKChoices, keeping those check_tactic accepts.
std::vector<GemmTactic> candidate_tactics(const ProblemShape& shape);

/// A version of the compiled tactic set: a hash of every registry entry
/// (format, layout, tile, stages, CTAs per SM, split-K limit) and of the
/// split-K choices, as 16 hex digits. Adding or changing a tactic changes it,
/// which invalidates tuning caches written before.
std::string tactic_space_version();

}  // namespace fp4moe::tuning
