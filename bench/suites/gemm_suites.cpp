// Suites `dense`, `decode` and `prefill` (DESIGN.md §6): the FP4 GEMMs with the
// tactic the entry point picks (the tuning cache's if it has one, else the
// heuristic's), and cuBLASLt BF16 and FP8 on the same shapes (batched for the
// grouped layouts) in the same run. Rows the direct tile serves are timed on
// the direct-tile tactics the heuristic did not pick too, each as an extra
// row: MXFP4's FP8 route ("fp8-route") and, dense and contiguous, the tile
// on one CTA ("cluster1") where the heuristic picked two-CTA clusters, or in
// clusters ("cluster2") where it did not. Every shape also runs with its
// weights prepacked (prepack_weights, the one-time step an inference engine
// takes at weight load) on the entry point's own tactic: the "prepacked" row.
#include <string>

#include "bench/fp4_problem.hpp"
#include "bench/peer_rows.hpp"
#include "bench/suite.hpp"
#include "common/cuda_check.hpp"
#include "common/upload.hpp"
#include "fp4moe/gemm.hpp"
#include "fp4moe/quantize.hpp"
#include "tuning/tactic_space.hpp"

namespace fp4moe::bench {
namespace {

std::string shape_text(const TuneShape& s) {
  std::string t = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
  return s.groups > 1 ? std::string("G").append(std::to_string(s.groups)).append(" ").append(t) : t;
}

GemmRowSpec row(const std::string& suite, GemmOp op, Fp4Format f, std::int64_t groups, std::int64_t m, std::int64_t n,
                std::int64_t k) {
  GemmRowSpec r;
  r.shape = TuneShape{op, f, GemmOutput::kBF16, m, n, k, groups};
  r.name = suite + " " + format_name(f) + " " + shape_text(r.shape);
  return r;
}

/// Times the fp4moe row, then the two peers, and fills the ratios.
void run_shape(SuiteContext& ctx, const std::string& suite, const GemmRowSpec& spec) {
  const std::string& name = spec.name;
  if (!ctx.wants(name)) return;
  const Fp4Format f = spec.shape.format;
  const kernels::Layout layout = tuning::layout_of(spec.shape.op);
  const TuneShape& s = spec.shape;
  cudaStream_t st = ctx.timer.stream();
  const std::int64_t a_rows = s.groups * s.m;
  const bool grouped = layout != kernels::Layout::kDense;
  DeviceFp4Tensor a(f, layout == kernels::Layout::kMasked ? s.m : a_rows, s.k, layout == kernels::Layout::kMasked ? s.groups : 1, 101,
                    ScaleData::kTokens, st);
  DeviceFp4Tensor b(f, s.n, s.k, grouped ? s.groups : 1, 202, ctx.data.weights(), st);
  DeviceAlloc d(static_cast<std::size_t>(a_rows * s.n * 2));
  std::vector<std::int32_t> host_aux;
  if (layout == kernels::Layout::kContiguous) {
    for (std::int64_t g = 0; g < s.groups; ++g)
      for (std::int64_t r = 0; r < s.m; ++r) host_aux.push_back(static_cast<std::int32_t>(g));
  } else if (layout == kernels::Layout::kMasked) {
    host_aux.assign(static_cast<std::size_t>(s.groups), static_cast<std::int32_t>(s.m));
  }
  DeviceAlloc aux(std::max<std::size_t>(4, host_aux.size() * 4));
  detail::upload(aux.p, host_aux.data(), host_aux.size() * 4, st);
  const auto* aux_i = static_cast<const std::int32_t*>(aux.p);
  const MatrixView dv{d.p, DType::kBF16, layout == kernels::Layout::kMasked ? s.m : a_rows, s.n, 0, 1,
                      layout == kernels::Layout::kMasked ? s.groups : 1, 0};
  DeviceAlloc b_prepacked_data(static_cast<std::size_t>(b.tensor().data_bytes()));
  const Fp4Tensor b_prepacked = prepack_weights(b.tensor(), b_prepacked_data.p, st);
  auto run_with = [&](const Fp4Tensor& bt, cudaStream_t stream, const GemmOptions& options) {
    if (layout == kernels::Layout::kDense) {
      fp4_gemm_nt(a.tensor(), bt, dv, stream, options);
    } else if (layout == kernels::Layout::kContiguous) {
      m_grouped_fp4_gemm_nt_contiguous(a.tensor(), bt, dv, aux_i, stream, options);
    } else {
      m_grouped_fp4_gemm_nt_masked(a.tensor(), bt, dv, aux_i, static_cast<int>(s.m), stream, options);
    }
  };
  auto run = [&](cudaStream_t stream, const GemmOptions& options) { run_with(b.tensor(), stream, options); };
  auto op = [&](cudaStream_t stream) { run(stream, GemmOptions{}); };
  Row r;
  r.suite = suite;
  r.name = name;
  r.impl = "fp4moe";
  r.flops = 2.0 * double(a_rows) * double(s.n) * double(s.k);
  r.bytes = a.bytes() + b.bytes() + 2.0 * double(a_rows) * double(s.n);
  // Memory-bound rows are judged against read bandwidth, compute-bound rows
  // against the tensor rate of the route (BF16 for the exact FP4 routes).
  r.by_regime = true;
  r.tensor_ceiling = CeilingKind::kBf16Tensor;
  // What the entry point ran (heuristic or tuned), read after the row ran:
  // in `ctx.add(r, op).tactic = last_tactic_text()` C++17 evaluates the right
  // side first, which labelled every row with the previous row's tactic.
  Row& added = ctx.add(r, op);
  added.tactic = last_tactic_text();
  std::vector<std::size_t> ours{ctx.rows.size() - 1};
  Row rp = r;
  set_variant(rp, "prepacked");
  Row& added_p = ctx.add(rp, [&](cudaStream_t stream) { run_with(b_prepacked, stream, GemmOptions{}); });
  added_p.tactic = last_tactic_text();
  ours.push_back(ctx.rows.size() - 1);
  const tuning::ProblemShape ps = tuning::problem_shape(s);
  const GemmTactic picked = tuning::pick_tactic(ps);
  if (!picked.swap_ab) {
    for (GemmTactic t : tuning::compiled_tactics(f, layout)) {
      if (t.swap_ab || t.moe_gather || t == picked) continue;
      Row r8 = r;
      set_variant(r8, t.fp8 ? "fp8-route" : t.cluster == 2 ? "cluster2" : "cluster1");
      if (t.fp8) r8.tensor_ceiling = CeilingKind::kFp8Tensor;
      GemmOptions forced;
      forced.tactic = &t;
      ctx.add(r8, [&](cudaStream_t stream) { run(stream, forced); }).tactic = t.name();
      ours.push_back(ctx.rows.size() - 1);
    }
  }
  add_peer_rows(ctx, suite, name, s.m, s.n, s.k, s.groups, ours);
}

}  // namespace

std::vector<GemmRowSpec> dense_rows() {
  std::vector<GemmRowSpec> rows;
  const std::int64_t shapes[][3] = {{64, 2112, 7168}, {128, 7168, 16384}, {4096, 7168, 16384}, {4096, 4096, 7168}, {8192, 8192, 8192}};
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (const auto& s : shapes) rows.push_back(row("dense", GemmOp::kDense, f, 1, s[0], s[1], s[2]));
  return rows;
}

std::vector<GemmRowSpec> decode_rows() {
  std::vector<GemmRowSpec> rows;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (std::int64_t g : {8, 32})
      for (std::int64_t m : {1, 8, 32, 64})
        for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{4096, 7168}, {7168, 2048}})
          rows.push_back(row("decode", GemmOp::kMasked, f, g, m, n, k));
  return rows;
}

std::vector<GemmRowSpec> prefill_rows() {
  std::vector<GemmRowSpec> rows;
  const std::int64_t shapes[][4] = {{4, 8192, 4096, 7168}, {8, 4096, 7168, 2048}};
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (const auto& s : shapes) rows.push_back(row("prefill", GemmOp::kContiguous, f, s[0], s[1], s[2], s[3]));
  return rows;
}

void run_dense_suite(SuiteContext& ctx) {
  for (const GemmRowSpec& r : dense_rows()) run_shape(ctx, "dense", r);
}

void run_decode_suite(SuiteContext& ctx) {
  for (const GemmRowSpec& r : decode_rows()) run_shape(ctx, "decode", r);
}

void run_prefill_suite(SuiteContext& ctx) {
  for (const GemmRowSpec& r : prefill_rows()) run_shape(ctx, "prefill", r);
}

}  // namespace fp4moe::bench
