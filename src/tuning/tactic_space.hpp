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
};

/// Every tactic compiled for a format and layout.
std::vector<GemmTactic> compiled_tactics(Fp4Format format, kernels::Layout layout);

/// The heuristic's choice for a shape.
GemmTactic pick_tactic(const ProblemShape& shape);

}  // namespace fp4moe::tuning
