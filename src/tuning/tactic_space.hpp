// The compiled tactic set and the heuristic that picks from it. Host only;
// device code never sees this file.
#pragma once

#include <vector>

#include "fp4moe/gemm.hpp"
#include "kernels/sm90/gemm_params.hpp"

namespace fp4moe::tuning {

/// What the heuristic needs to know about a problem.
struct ProblemShape {
  Fp4Format format;
  kernels::Layout layout;
  int m;            ///< tokens per group (dense: M; contiguous: ΣM / groups; masked: expected_m)
  int n;
  int k;
  int groups;
  int experts = 0;  ///< MoE-dense: E (split-K slices whole experts)
  int sm_count = 132;
};

/// Split-K values every kernel accepts at run time.
constexpr int kSplitKChoices[] = {1, 2, 4, 8};

/// The units split-K divides a tile's K loop into: whole experts for
/// MoE-dense, else K blocks of the tactic.
int split_k_units(const ProblemShape& shape, const GemmTactic& tactic);

/// Every tactic compiled for a format and layout (listed with split_k = 1;
/// each also runs with any of kSplitKChoices).
std::vector<GemmTactic> compiled_tactics(Fp4Format format, kernels::Layout layout);

/// The heuristic's choice for a shape.
GemmTactic pick_tactic(const ProblemShape& shape);

}  // namespace fp4moe::tuning
