// Public MoE entry points: moe_dense_fc2 on the GEMM engine's MoE-dense
// layout, and the routing helper.
#include <algorithm>
#include <string>

#include "api/gemm_dispatch.hpp"
#include "common/split_k_workspace.hpp"
#include "format/format_ops.hpp"
#include "fp4moe/moe.hpp"
#include "kernels/moe/gather_tokens.hpp"
#include "kernels/moe/routing_alpha.hpp"
#include "tuning/tactic_space.hpp"

namespace fp4moe {
namespace {

using detail::ArgCheck;

/// Alpha is an FP32 [tokens, experts] device view with any non-negative
/// strides (its rows are checked by the caller: A's tokens, or themselves).
void check_alpha(const ArgCheck& c, const MatrixView& alpha) {
  c.not_null(alpha.data, "alpha.data");
  c.dtype_in(alpha.dtype, {DType::kFP32}, "alpha.dtype");
  c.aligned(alpha.data, 4, "alpha.data");
  c.positive(alpha.cols, "alpha.cols");
  c.require(alpha.groups == 1, "alpha.groups", "must be 1", alpha.groups);
  c.non_negative(alpha.row_stride, "alpha.row_stride");
  c.non_negative(alpha.col_stride, "alpha.col_stride");
}

/// Bytes spanned by an alpha view (for the overlap rule).
std::int64_t alpha_span_bytes(const MatrixView& alpha) {
  if (alpha.rows == 0 || alpha.cols == 0) return 0;
  return ((alpha.rows - 1) * alpha.ld() + (alpha.cols - 1) * alpha.col_stride + 1) * 4;
}

/// The gathered formulation (GemmTactic::moe_gather): each expert's tokens
/// and their rows, dequantised to BF16 in the tile's K order, into the
/// library's per-stream workspace, then the gather GEMM over that copy (A)
/// and B.
void run_gathered_fc2(const detail::GemmPlan& pl, const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& alpha,
                      int expert_width, const MatrixView& d, cudaStream_t stream) {
  const kernels::GatherLayout gl = kernels::gather_layout(a.rows, alpha.cols, expert_width);
  std::uint8_t* ws = detail::gather_workspace(stream, gl.bytes);
  kernels::GatherTokensParams gp;
  gp.alpha = static_cast<const float*>(alpha.data);
  gp.stride_m = alpha.ld();
  gp.stride_e = alpha.col_stride;
  gp.tokens = static_cast<std::int32_t>(a.rows);
  gp.experts = static_cast<std::int32_t>(alpha.cols);
  gp.width = expert_width;
  gp.nvfp4 = a.format == Fp4Format::kNVFP4;
  gp.lane_blocks = pl.kernel->gather_lane_blocks;
  gp.a_data = static_cast<const std::uint8_t*>(a.data);
  gp.a_scales = static_cast<const std::uint8_t*>(a.scales);
  gp.workspace = ws;
  gp.layout = gl;
  kernels::launch_gather_tokens(gp, stream);

  // The gathered copy as a grouped operand: expert e's slots are group e.
  // (Its data is BF16 now, read through the gather tiles' own tensor map;
  // the operand keeps A's format and global scale, which the epilogue uses.)
  Fp4Tensor gathered = a;
  gathered.data = ws + gl.data;
  gathered.scales = nullptr;
  gathered.rows = gl.capacity;
  gathered.cols = expert_width;
  gathered.groups = alpha.cols;
  kernels::GemmParams p = detail::gemm_params(gathered, b, d, a.rows);
  p.k = static_cast<std::int32_t>(a.cols);
  p.groups = 1;
  p.experts = static_cast<std::int32_t>(alpha.cols);
  p.expert_width = expert_width;
  p.gather_counts = reinterpret_cast<const std::int32_t*>(ws + gl.counts);
  p.gather_tokens = reinterpret_cast<const std::int32_t*>(ws + gl.tokens);
  p.gather_alpha = reinterpret_cast<const float*>(ws + gl.alpha);
  p.gather_capacity = static_cast<std::int32_t>(gl.capacity);
  detail::launch_gemm(pl, gathered, b, p, stream);
}

/// Bytes of the gathered copy a planned call takes of the gather workspace (0: none).
std::size_t gathered_bytes(const detail::GemmPlan& pl, std::int64_t tokens, std::int64_t experts, int expert_width) {
  return pl.kernel->tactic.moe_gather ? kernels::gather_layout(tokens, experts, expert_width).bytes : 0;
}

/// Reserves what one planned moe_dense_fc2 call takes of the per-stream
/// workspace (the gathered copy, the split-K partials), launching nothing.
/// A call run as two launches reserves for both before the first, and the
/// gathered formulation before its copy: no reservation can then fail (out
/// of memory, or growth refused during graph capture) after a launch.
void reserve_fc2(const detail::GemmPlan& pl, std::int64_t tokens, std::int64_t experts, int expert_width,
                 cudaStream_t stream) {
  if (const std::size_t bytes = gathered_bytes(pl, tokens, experts, expert_width)) detail::gather_workspace(stream, bytes);
  detail::reserve_gemm_workspace(pl, static_cast<std::int32_t>(tokens), stream);
}

/// One planned moe_dense_fc2 call: the gathered formulation or the MoE-dense
/// layout. (Its workspace reserved by reserve_fc2 first.)
void run_fc2(const detail::GemmPlan& pl, const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& alpha, int expert_width,
             const MatrixView& d, cudaStream_t stream) {
  if (pl.kernel->tactic.moe_gather) {
    run_gathered_fc2(pl, a, b, alpha, expert_width, d, stream);
    return;
  }
  kernels::GemmParams p = detail::gemm_params(a, b, d, a.rows);
  p.experts = static_cast<std::int32_t>(alpha.cols);
  p.expert_width = expert_width;
  p.alpha = static_cast<const float*>(alpha.data);
  p.alpha_stride_m = alpha.ld();
  p.alpha_stride_e = alpha.col_stride;
  detail::launch_gemm(pl, a, b, p, stream);
}

/// Rows [first, first + count) of a single FP4 matrix. Its scales: where
/// `first` starts a 128-row scale band, the band's; otherwise `retiled`, a
/// copy of the rows' scales that starts a band (the kernels read an
/// operand's scales in whole bands from its first row), which the caller
/// fills (launch_copy_tiled_scale_rows) before the call reads it.
Fp4Tensor fp4_rows(const Fp4Tensor& t, std::int64_t first, std::int64_t count, std::uint8_t* retiled = nullptr) {
  Fp4Tensor r = t;
  r.data = static_cast<std::uint8_t*>(t.data) + first * (t.cols / 2);
  r.scales = first % 128 == 0 ? static_cast<std::uint8_t*>(t.scales) + scale_offset(t.scale_layout, first, 0, t.scale_cols())
                              : retiled;
  r.rows = count;
  return r;
}

/// Rows [first, first + count) of a matrix view.
MatrixView view_rows(const MatrixView& v, std::int64_t first, std::int64_t count) {
  MatrixView r = v;
  r.data = static_cast<std::uint8_t*>(v.data) + first * v.ld() * dtype_size(v.dtype);
  r.rows = count;
  return r;
}

}  // namespace

void moe_dense_fc2(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& alpha, int expert_width, const MatrixView& d,
                   cudaStream_t stream, const GemmOptions& options) {
  const ArgCheck c("moe_dense_fc2");
  detail::check_operands(c, a, b, /*b_prepacked_ok=*/true);
  c.require(a.groups == 1, "a.groups", "must be 1 (A is [M, E*W])", a.groups);
  c.require(b.groups == 1, "b.groups", "must be 1 (B is [N, E*W])", b.groups);
  check_alpha(c, alpha);
  c.equal(alpha.rows, a.rows, "alpha.rows", "the tokens (rows of A)");
  c.positive(expert_width, "expert_width");
  c.multiple_of(expert_width, 128, "expert_width", "W must be whole 128-column pipeline stages");
  c.require(alpha.cols * expert_width == a.cols, "expert_width",
            [&] {
              return "times the experts (alpha.cols = " + std::to_string(alpha.cols) + ") must equal K = a.cols = " +
                     std::to_string(a.cols);
            },
            expert_width);
  detail::check_output(c, d, a.rows, b.rows, 1, a, b);
  c.require(!detail::ranges_overlap(d.data, detail::output_span_bytes(d, a.rows, b.rows, 1), alpha.data,
                                    alpha_span_bytes(alpha)),
            "d.data", "must not overlap alpha.data");
  TuneShape call{GemmOp::kMoeFc2, a.format, detail::output_of(d.dtype), a.rows, b.rows, a.cols, alpha.cols};
  call.expert_width = expert_width;
  const auto pl = detail::plan_gemm(c, call, a.rows, options, b.prepacked);
  c.stream_on_current_device(stream);
  if (a.rows == 0 || b.rows == 0) return;
  // The tokens past the direct tile's last whole tile, where few, as a call
  // of their own, or 145-192 tokens as 96 and the rest (tuning::
  // moe_tail_tokens); both halves are planned, each for its own tokens, and
  // all workspace reserved before anything launches.
  const detail::PlannedTactic whole = detail::last_planned_tactic();
  const int tail = whole.source == detail::PlannedTactic::Source::kForced
                       ? 0
                       : tuning::moe_tail_tokens(tuning::problem_shape(call), whole.tactic, pl.block_tokens);
  // Held from the first reservation to the last launch (common/split_k_workspace.hpp).
  const detail::WorkspaceHold hold;
  if (tail == 0) {
    reserve_fc2(pl, a.rows, alpha.cols, expert_width, stream);
    run_fc2(pl, a, b, alpha, expert_width, d, stream);
    return;
  }
  const std::int64_t head = a.rows - tail;
  TuneShape head_call = call, tail_call = call;
  head_call.m = head;
  tail_call.m = tail;
  const auto head_plan = detail::plan_gemm(c, head_call, head, options, b.prepacked);
  detail::PlannedTactic noted = whole;
  noted.head = detail::last_planned_tactic().tactic;
  const auto tail_plan = detail::plan_gemm(c, tail_call, tail, options, b.prepacked);
  noted.tail = detail::last_planned_tactic().tactic;
  noted.tail_tokens = tail;
  detail::set_last_planned_tactic(noted);
  reserve_fc2(head_plan, head, alpha.cols, expert_width, stream);
  reserve_fc2(tail_plan, tail, alpha.cols, expert_width, stream);
  // A tail that starts inside a scale band (the split at 96) reads a copy of
  // its scales, kept in the gather workspace past what either call's
  // gathered copy takes there (each call runs its gathering first).
  std::uint8_t* retiled = nullptr;
  if (head % 128 != 0) {
    const std::size_t at = (std::max(gathered_bytes(head_plan, head, alpha.cols, expert_width),
                                     gathered_bytes(tail_plan, tail, alpha.cols, expert_width)) +
                            255) / 256 * 256;
    const auto bytes = static_cast<std::size_t>(scale_bytes(ScaleLayout::kTiled128x4, tail, a.scale_cols()));
    retiled = detail::gather_workspace(stream, at + bytes) + at;
    detail::launch_copy_tiled_scale_rows(static_cast<const std::uint8_t*>(a.scales), head, tail, a.scale_cols(), retiled,
                                         stream);
  }
  run_fc2(head_plan, fp4_rows(a, 0, head), b, view_rows(alpha, 0, head), expert_width, view_rows(d, 0, head), stream);
  run_fc2(tail_plan, fp4_rows(a, head, tail, retiled), b, view_rows(alpha, head, tail), expert_width,
          view_rows(d, head, tail), stream);
}

namespace {

/// Rules shared by both FC1 overloads; returns I.
std::int64_t check_fc1(const ArgCheck& c, const Fp4Tensor& a, const Fp4Tensor& b, const float* expert_scale) {
  detail::check_operands(c, a, b);
  c.require(a.groups == 1, "a.groups", "must be 1 (A is [M, K])", a.groups);
  c.multiple_of(b.rows, 256, "b.rows", "2I with I a multiple of 128: gate and up rows per expert");
  c.aligned(expert_scale, 4, "expert_scale");
  // (E·I fits 32-bit indexing: check_operands bounds b.rows·b.groups = 2·E·I.)
  return b.rows / 2;
}

void run_fc1(const ArgCheck& c, const Fp4Tensor& a, const Fp4Tensor& b, const float* expert_scale, const MatrixView& d,
             std::uint8_t* fp4_data, std::uint8_t* fp4_scales, const float* encode, float* decode_out, cudaStream_t stream,
             const GemmOptions& options) {
  const std::int64_t inter = b.rows / 2, out_cols = b.groups * inter;
  // Tiles are planned over all 2·E·I weight rows: one tile is 256 of them
  // (128 output columns).
  const TuneShape call{GemmOp::kMoeFc1, a.format, fp4_data ? GemmOutput::kNVFP4 : GemmOutput::kBF16, a.rows, b.rows, a.cols,
                       b.groups};
  const auto pl = detail::plan_gemm(c, call, a.rows, options);
  c.stream_on_current_device(stream);
  if (a.rows == 0 || b.rows == 0) return;
  kernels::GemmParams p = detail::gemm_params(a, b, d, a.rows);
  p.n = static_cast<std::int32_t>(out_cols);
  p.fc1_inter = static_cast<std::int32_t>(inter);
  p.fc1_expert_scale = expert_scale;
  p.fc1_fp4_data = fp4_data;
  p.fc1_fp4_scales = fp4_scales;
  p.fc1_encode_scale = encode;
  p.fc1_decode_out = decode_out;
  detail::launch_gemm(pl, a, b, p, stream);
}

}  // namespace

void moe_dense_fc1_swiglu(const Fp4Tensor& a, const Fp4Tensor& b, const float* expert_scale, const MatrixView& d,
                          cudaStream_t stream, const GemmOptions& options) {
  const ArgCheck c("moe_dense_fc1_swiglu");
  const std::int64_t inter = check_fc1(c, a, b, expert_scale);
  c.dtype_in(d.dtype, {DType::kBF16}, "d.dtype");
  detail::check_output(c, d, a.rows, b.groups * inter, 1, a, b);
  c.aligned(d.data, 4, "d.data");
  c.multiple_of(d.ld(), 2, "d.row_stride", "rows start 4-byte aligned (column pairs are stored together)");
  run_fc1(c, a, b, expert_scale, d, nullptr, nullptr, nullptr, nullptr, stream, options);
}

void moe_dense_fc1_swiglu(const Fp4Tensor& a, const Fp4Tensor& b, const float* expert_scale, const Fp4Tensor& out,
                          const float* encode_scale, cudaStream_t stream, const GemmOptions& options) {
  const ArgCheck c("moe_dense_fc1_swiglu");
  const std::int64_t inter = check_fc1(c, a, b, expert_scale);
  c.require(out.format == Fp4Format::kNVFP4, "out.format", "must be kNVFP4");
  c.require(out.scale_layout == ScaleLayout::kTiled128x4, "out.scale_layout", "must be kTiled128x4 (what FC2 reads)");
  c.not_null(out.data, "out.data");
  c.not_null(out.scales, "out.scales");
  c.not_null(out.global_scale, "out.global_scale");
  c.not_null(encode_scale, "encode_scale");
  c.aligned(encode_scale, 4, "encode_scale");
  c.aligned(out.global_scale, 4, "out.global_scale");
  c.equal(out.rows, a.rows, "out.rows", "the rows of A");
  c.equal(out.cols, b.groups * inter, "out.cols", "E*I");
  c.require(out.groups == 1, "out.groups", "must be 1", out.groups);
  for (const Fp4Tensor* t : {&a, &b}) {
    const char* name = t == &a ? "a" : "b";
    c.require(!detail::ranges_overlap(out.data, out.data_bytes(), t->data, t->data_bytes()), "out.data",
              [&] { return std::string("must not overlap ") + name + ".data"; });
    c.require(!detail::ranges_overlap(out.scales, out.scale_bytes_total(), t->scales, t->scale_bytes_total()), "out.scales",
              [&] { return std::string("must not overlap ") + name + ".scales"; });
  }
  const MatrixView none{};
  run_fc1(c, a, b, expert_scale, none, static_cast<std::uint8_t*>(out.data), static_cast<std::uint8_t*>(out.scales),
          encode_scale, out.global_scale, stream, options);
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
  check_alpha(c, alpha);
  c.positive(alpha.col_stride, "alpha.col_stride");  // distinct experts, distinct elements
  c.require(alpha.rows <= detail::kMax32 && alpha.cols <= detail::kMax32, "alpha", "rows and cols must fit 32-bit indexing",
            [&] { return std::to_string(alpha.rows) + " x " + std::to_string(alpha.cols); });
  c.stream_on_current_device(stream);
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
