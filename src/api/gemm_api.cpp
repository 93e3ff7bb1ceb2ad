// Public GEMM entry points: check every argument, pick the tactic (or take the
// caller's), find its compiled kernel and launch it.
#include <algorithm>
#include <string>

#include "api/gemm_dispatch.hpp"

namespace fp4moe {

using detail::ArgCheck;

void fp4_gemm_nt(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& d, cudaStream_t stream, const GemmOptions& options) {
  const ArgCheck c("fp4_gemm_nt");
  detail::check_operands(c, a, b, /*b_prepacked_ok=*/true);
  c.require(a.groups == 1, "a.groups", "must be 1 (dense GEMM)", a.groups);
  c.require(b.groups == 1, "b.groups", "must be 1 (dense GEMM)", b.groups);
  detail::check_output(c, d, a.rows, b.rows, 1, a, b);
  const TuneShape call{GemmOp::kDense, a.format, detail::output_of(d.dtype), a.rows, b.rows, a.cols, 1};
  const auto pl = detail::plan_gemm(c, call, a.rows, options, b.prepacked);
  c.stream_on_current_device(stream);
  if (a.rows == 0 || b.rows == 0) return;
  detail::launch_gemm(pl, a, b, detail::gemm_params(a, b, d, a.rows), stream);
}

void m_grouped_fp4_gemm_nt_contiguous(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& d, const std::int32_t* m_indices,
                                      cudaStream_t stream, const GemmOptions& options) {
  const ArgCheck c("m_grouped_fp4_gemm_nt_contiguous");
  detail::check_operands(c, a, b, /*b_prepacked_ok=*/true);
  c.require(a.groups == 1, "a.groups", "must be 1 (A is [sum M, K])", a.groups);
  c.require(b.groups <= kernels::kMaxGroups, "b.groups",
            [] { return "must be at most " + std::to_string(kernels::kMaxGroups); }, b.groups);
  c.not_null(m_indices, "m_indices");
  c.aligned(m_indices, 4, "m_indices");
  detail::check_output(c, d, a.rows, b.rows, 1, a, b);
  // Tokens per expert as the heuristic and the tuning buckets see it: rows
  // (padding included) over experts.
  const TuneShape call{GemmOp::kContiguous, a.format, detail::output_of(d.dtype), std::max<std::int64_t>(1, a.rows / b.groups),
                       b.rows, a.cols, b.groups};
  const auto pl = detail::plan_gemm(c, call, a.rows, options, b.prepacked);
  c.stream_on_current_device(stream);
  if (a.rows == 0 || b.rows == 0) return;
  kernels::GemmParams p = detail::gemm_params(a, b, d, a.rows);
  p.m_indices = m_indices;
  detail::launch_gemm(pl, a, b, p, stream);
}

void m_grouped_fp4_gemm_nt_masked(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& d, const std::int32_t* masked_m,
                                  int expected_m, cudaStream_t stream, const GemmOptions& options) {
  const ArgCheck c("m_grouped_fp4_gemm_nt_masked");
  detail::check_operands(c, a, b, /*b_prepacked_ok=*/true);
  c.equal(a.groups, b.groups, "a.groups", "b.groups");
  c.require(b.groups <= kernels::kMaxGroups, "b.groups",
            [] { return "must be at most " + std::to_string(kernels::kMaxGroups); }, b.groups);
  c.not_null(masked_m, "masked_m");
  c.aligned(masked_m, 4, "masked_m");
  c.require(expected_m >= 0, "expected_m", "must not be negative", expected_m);
  detail::check_output(c, d, a.rows, b.rows, a.groups, a, b);
  const TuneShape call{GemmOp::kMasked, a.format, detail::output_of(d.dtype), expected_m > 0 ? expected_m : a.rows, b.rows,
                       a.cols, b.groups};
  const auto pl = detail::plan_gemm(c, call, a.rows, options, b.prepacked);
  c.stream_on_current_device(stream);
  if (a.rows == 0 || b.rows == 0) return;
  kernels::GemmParams p = detail::gemm_params(a, b, d, a.rows);
  p.masked_m = masked_m;
  detail::launch_gemm(pl, a, b, p, stream);
}

}  // namespace fp4moe
