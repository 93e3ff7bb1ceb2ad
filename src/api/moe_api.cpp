// Public MoE entry points: moe_dense_fc2 on the GEMM engine's MoE-dense
// layout, and the routing helper.
#include <algorithm>
#include <string>

#include "api/gemm_dispatch.hpp"
#include "fp4moe/moe.hpp"
#include "kernels/moe/routing_alpha.hpp"

namespace fp4moe {
namespace {

using detail::ArgCheck;

/// Alpha is an FP32 [rows, experts] device view with any non-negative strides.
void check_alpha(const ArgCheck& c, const MatrixView& alpha, std::int64_t rows) {
  c.not_null(alpha.data, "alpha.data");
  c.dtype_in(alpha.dtype, {DType::kFP32}, "alpha.dtype");
  c.aligned(alpha.data, 4, "alpha.data");
  c.equal(alpha.rows, rows, "alpha.rows", "the tokens (rows of A)");
  c.positive(alpha.cols, "alpha.cols");
  c.require(alpha.groups == 1, "alpha.groups", "must be 1", std::to_string(alpha.groups));
  c.non_negative(alpha.row_stride, "alpha.row_stride");
  c.non_negative(alpha.col_stride, "alpha.col_stride");
}

/// Bytes spanned by an alpha view (for the overlap rule).
std::int64_t alpha_span_bytes(const MatrixView& alpha) {
  if (alpha.rows == 0 || alpha.cols == 0) return 0;
  return ((alpha.rows - 1) * alpha.ld() + (alpha.cols - 1) * alpha.col_stride + 1) * 4;
}

}  // namespace

void moe_dense_fc2(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& alpha, int expert_width, const MatrixView& d,
                   cudaStream_t stream, const GemmOptions& options) {
  const ArgCheck c("moe_dense_fc2");
  detail::check_operands(c, a, b);
  c.require(a.groups == 1, "a.groups", "must be 1 (A is [M, E*W])", std::to_string(a.groups));
  c.require(b.groups == 1, "b.groups", "must be 1 (B is [N, E*W])", std::to_string(b.groups));
  check_alpha(c, alpha, a.rows);
  c.positive(expert_width, "expert_width");
  c.multiple_of(expert_width, 128, "expert_width", "W must be whole 128-column pipeline stages");
  c.require(alpha.cols * expert_width == a.cols, "expert_width",
            "times the experts (alpha.cols = " + std::to_string(alpha.cols) + ") must equal K = a.cols = " +
                std::to_string(a.cols),
            std::to_string(expert_width));
  detail::check_output(c, d, a.rows, b.rows, 1, a, b);
  c.require(!detail::ranges_overlap(d.data, (d.rows - 1) * d.ld() * dtype_size(d.dtype) + d.cols * dtype_size(d.dtype),
                                    alpha.data, alpha_span_bytes(alpha)),
            "d.data", "must not overlap alpha.data");
  const auto pl = detail::plan_gemm(c, a.format, kernels::Layout::kMoeDense,
                                    static_cast<int>(std::min<std::int64_t>(a.rows, detail::kMax32)), a.rows, b.rows, a.cols,
                                    1, options, static_cast<int>(alpha.cols));
  if (a.rows == 0 || b.rows == 0) return;
  kernels::GemmParams p = detail::gemm_params(a, b, d, a.rows);
  p.experts = static_cast<std::int32_t>(alpha.cols);
  p.expert_width = expert_width;
  p.alpha = static_cast<const float*>(alpha.data);
  p.alpha_stride_m = alpha.ld();
  p.alpha_stride_e = alpha.col_stride;
  detail::launch_gemm(pl, a, b, p, stream);
}

void moe_routing_alpha(const std::int32_t* topk_ids, const float* topk_weights, int top_k, const float* expert_scale,
                       const MatrixView& alpha, cudaStream_t stream) {
  const ArgCheck c("moe_routing_alpha");
  c.not_null(topk_ids, "topk_ids");
  c.not_null(topk_weights, "topk_weights");
  c.aligned(topk_ids, 4, "topk_ids");
  c.aligned(topk_weights, 4, "topk_weights");
  c.aligned(expert_scale, 4, "expert_scale");
  c.positive(top_k, "top_k");
  c.non_negative(alpha.rows, "alpha.rows");
  check_alpha(c, alpha, alpha.rows);
  c.positive(alpha.col_stride, "alpha.col_stride");  // distinct experts, distinct elements
  c.require(alpha.rows <= detail::kMax32 && alpha.cols <= detail::kMax32, "alpha", "rows and cols must fit 32-bit indexing");
  kernels::RoutingAlphaParams p;
  p.ids = topk_ids;
  p.weights = topk_weights;
  p.expert_scale = expert_scale;
  p.alpha = static_cast<float*>(alpha.data);
  p.stride_m = alpha.ld();
  p.stride_e = alpha.col_stride;
  p.tokens = static_cast<std::int32_t>(alpha.rows);
  p.experts = static_cast<std::int32_t>(alpha.cols);
  p.top_k = top_k;
  kernels::launch_routing_alpha(p, stream);
}

}  // namespace fp4moe
