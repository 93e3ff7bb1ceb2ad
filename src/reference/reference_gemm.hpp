// CPU reference GEMMs for every operation of DESIGN.md §3: the oracle of the
// tests and of `fp4moe verify`.
//
// Operands are decoded exactly (e2m1 · block scale, in double: MXFP4 scales
// reach 2^±127, past float's range once multiplied), products are summed in
// float64, and the global scales are applied to the sum. All pointers are host
// pointers; results are float64 so a test can compare against them at any
// precision. Work is spread over the hardware threads.
#pragma once

#include <cstdint>
#include <vector>

#include "fp4moe/tensor.hpp"

namespace fp4moe::reference {

/// D[M, N] = ga·gb·A·Bᵀ with A [M, K], B [N, K] (groups = 1 each).
std::vector<double> gemm_nt(const Fp4Tensor& a, const Fp4Tensor& b);

/// D[ΣM, N]: row r uses expert m_indices[r] of B [G, N, K] (B's global scale is
/// per expert, G values); m_indices[r] = −1 marks a padding row, which is 0.
std::vector<double> grouped_contiguous(const Fp4Tensor& a, const Fp4Tensor& b,
                                       const std::int32_t* m_indices);

/// A [G, maxM, K] (groups = G), B [G, N, K]. Writes rows m < masked_m[g] of
/// d [G, maxM, N] and leaves every other row of d untouched.
void grouped_masked(const Fp4Tensor& a, const Fp4Tensor& b, const std::int32_t* masked_m, double* d);

/// D[m, :] = ga·gb·Σ_e alpha[m, e]·A[m, eW:(e+1)W]·B[:, eW:(e+1)W]ᵀ with
/// A [M, E·W], B [N, E·W], alpha an FP32 [M, E] view with any strides.
std::vector<double> moe_dense_fc2(const Fp4Tensor& a, const Fp4Tensor& b, std::int64_t experts,
                                  const MatrixView& alpha);

/// out[m, eI + i] = silu(gate)·up·out_scale[e] with B a stack of E matrices
/// [2I, K] (gate rows then up rows), gate = ga·gb[e]·A[m]·B_e[i],
/// up = ga·gb[e]·A[m]·B_e[I + i]. out_scale may be null (1).
std::vector<double> moe_dense_fc1_swiglu(const Fp4Tensor& a, const Fp4Tensor& b,
                                         const float* out_scale);

/// The exact decoded value e2m1 · block scale (no global scale) of element
/// (row, k) of group `group`.
double decoded_element(const Fp4Tensor& t, std::int64_t group, std::int64_t row, std::int64_t k);

/// Global decode scale of group g (1 for MXFP4).
double global_scale(const Fp4Tensor& t, std::int64_t group);

}  // namespace fp4moe::reference
