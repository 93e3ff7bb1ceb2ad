// Suites `seed-fc2` and `moe-fc2` (DESIGN.md §6): moe_dense_fc2 on the seed
// workload (E = 256 experts of W = 256, N = 7168, M = 32..384; the benchmark's
// --moe-width sets another W, the tuner's rows keep 256), with dense
// alpha and with alpha from uniform random top-8 routing, and cuBLASLt BF16
// and FP8 on the same dense M x N x K shape in the same run. The tactic is
// the entry point's (tuning cache, else heuristic). Every row has a
// "prepacked" twin: the same call on weights prepacked by prepack_weights.
// seed-fc2's MXFP4 rows also time the FP8 route ("fp8-route": the FP8-wgmma
// tile forced, with the split the heuristic gives that tile).
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/fp4_problem.hpp"
#include "bench/peer_rows.hpp"
#include "bench/suite.hpp"
#include "common/cuda_check.hpp"
#include "common/upload.hpp"
#include "fp4moe/quantize.hpp"
#include "api/gemm_dispatch.hpp"
#include "fp4moe/moe.hpp"
#include "tuning/tactic_space.hpp"

namespace fp4moe::bench {
namespace {

constexpr std::int64_t kExperts = 256, kSeedWidth = 256, kN = 7168, kMaxM = 384, kTopK = 8;
constexpr Fp4Format kFormats[] = {Fp4Format::kNVFP4, Fp4Format::kMXFP4};

/// The token counts of the suites: 32..384 step 32.
std::vector<std::int64_t> token_counts() {
  std::vector<std::int64_t> ms;
  for (std::int64_t m = 32; m <= kMaxM; m += 32) ms.push_back(m);
  return ms;
}

std::string shape_text(std::int64_t m, std::int64_t width) {
  return "M=" + std::to_string(m) + " N=7168 E=256 W=" + std::to_string(width);
}

GemmRowSpec fc2_row(const std::string& suite, Fp4Format f, std::int64_t m, bool top_k, std::int64_t width) {
  GemmRowSpec r;
  r.name = suite + " " + format_name(f) + " " + shape_text(m, width);
  r.shape = TuneShape{GemmOp::kMoeFc2, f, GemmOutput::kBF16, m, kN, kExperts * width, kExperts, width, top_k ? int(kTopK) : 0};
  return r;
}

/// Routing of M tokens: dense (every token uses every expert) or top-8.
std::vector<float> make_alpha(std::int64_t m, bool top_k, std::mt19937_64& rng) {
  std::vector<float> alpha(static_cast<std::size_t>(m * kExperts), 0.0f);
  std::uniform_real_distribution<float> w(0.05f, 1.0f);
  for (std::int64_t t = 0; t < m; ++t) {
    if (!top_k) {
      for (std::int64_t e = 0; e < kExperts; ++e) alpha[static_cast<std::size_t>(t * kExperts + e)] = w(rng);
      continue;
    }
    std::vector<int> ids(kExperts);
    for (int e = 0; e < kExperts; ++e) ids[static_cast<std::size_t>(e)] = e;
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int j = 0; j < kTopK; ++j) alpha[static_cast<std::size_t>(t * kExperts + ids[static_cast<std::size_t>(j)])] = w(rng);
  }
  return alpha;
}

/// The fewest bytes the call must read with expert skipping at a token tile
/// of `bt` rows: each expert's B slice once if any tile uses it, and each
/// tile's A slice of every expert that tile uses (data plus block scales),
/// plus D written once.
double skipping_bytes(const std::vector<float>& alpha, std::int64_t m, std::int64_t bt, Fp4Format f, std::int64_t width) {
  const double per_elem = 0.5 + 1.0 / double(block_size(f));
  std::vector<bool> used(static_cast<std::size_t>(kExperts), false);
  double a_bytes = 0;
  for (std::int64_t t0 = 0; t0 < m; t0 += bt) {
    const std::int64_t rows = std::min(bt, m - t0);
    for (std::int64_t e = 0; e < kExperts; ++e) {
      bool any = false;
      for (std::int64_t t = t0; t < t0 + rows; ++t) any |= alpha[static_cast<std::size_t>(t * kExperts + e)] != 0.0f;
      if (!any) continue;
      used[static_cast<std::size_t>(e)] = true;
      a_bytes += double(rows) * width * per_elem;
    }
  }
  const double b_bytes = double(std::count(used.begin(), used.end(), true)) * kN * width * per_elem;
  return a_bytes + b_bytes + 2.0 * double(m) * kN;
}

void run_fc2_suite(SuiteContext& ctx, const std::string& suite, bool top_k) {
  const std::int64_t width = ctx.data.moe_width, k_all = kExperts * width;  // K = E·W
  cudaStream_t st = ctx.timer.stream();
  std::mt19937_64 rng(2026);
  // Operands for the largest M; smaller M use the leading rows (the 128x4
  // scale layout of the first M rows is a prefix).
  // Each B also prepacked (prepack_weights): every row has a "prepacked"
  // twin timed right after it.
  std::vector<std::unique_ptr<DeviceFp4Tensor>> a_of, b_of;
  std::vector<std::unique_ptr<DeviceAlloc>> b_prepacked_data;
  std::vector<Fp4Tensor> b_prepacked;
  for (Fp4Format f : kFormats) {
    a_of.push_back(std::make_unique<DeviceFp4Tensor>(f, kMaxM, k_all, 1, 303, ScaleData::kTokens, st));
    b_of.push_back(std::make_unique<DeviceFp4Tensor>(f, kN, k_all, 1, 404, ctx.data.weights(), st));
    b_prepacked_data.push_back(std::make_unique<DeviceAlloc>(static_cast<std::size_t>(b_of.back()->tensor().data_bytes())));
    b_prepacked.push_back(prepack_weights(b_of.back()->tensor(), b_prepacked_data.back()->p, st));
  }
  DeviceAlloc d(static_cast<std::size_t>(kMaxM * kN * 2));
  DeviceAlloc alpha_dev(static_cast<std::size_t>(kMaxM * kExperts * 4));
  for (std::int64_t m : token_counts()) {
    const std::string shape = shape_text(m, width);
    const std::vector<float> alpha = make_alpha(m, top_k, rng);
    detail::upload(alpha_dev.p, alpha.data(), alpha.size() * 4, st);
    const MatrixView av{alpha_dev.p, DType::kFP32, m, kExperts};
    const MatrixView dv{d.p, DType::kBF16, m, kN};
    std::vector<std::size_t> ours;
    for (std::size_t fi = 0; fi < 2; ++fi) {
      const Fp4Format f = kFormats[fi];
      const GemmRowSpec spec = fc2_row(suite, f, m, top_k, width);
      if (!ctx.wants(spec.name)) continue;
      Fp4Tensor a = a_of[fi]->tensor();
      a.rows = m;
      const Fp4Tensor& b = b_of[fi]->tensor();
      Row r;
      r.suite = suite;
      r.name = spec.name;
      r.impl = "fp4moe";
      r.flops = 2.0 * double(m) * kN * k_all;  // the dense formulation's work
      r.by_regime = true;
      r.tensor_ceiling = CeilingKind::kBf16Tensor;  // exact FP4 on the BF16 route
      GemmOptions options;  // the routing, as an engine that knows its top-k says
      options.moe_top_k = top_k ? int(kTopK) : 0;
      for (const Fp4Tensor* bt : {&b, static_cast<const Fp4Tensor*>(&b_prepacked[fi])}) {
        Row rb = r;
        if (bt->prepacked) set_variant(rb, "prepacked");
        Row& added = ctx.add(rb, [&](cudaStream_t s) { moe_dense_fc2(a, *bt, av, width, dv, s, options); });
        // What moe_dense_fc2 ran (the tuning cache's tactic or the heuristic's),
        // and the fewest bytes at its token tile.
        // The gathered formulation reads every used expert's B slice and
        // every token's rows of its experts once (a token tile of one), and
        // multiplies only those rows: its work is 2·nnz(alpha)·N·W.
        const GemmTactic& ran = detail::last_planned_tactic().tactic;
        added.tactic = last_tactic_text() + (top_k && !ran.moe_gather ? " skip" : "");
        added.bytes = skipping_bytes(alpha, m, ran.moe_gather ? 1 : ran.swap_ab ? ran.block_n : 128, f, width);
        if (ran.moe_gather)
          added.flops = 2.0 * double(std::count_if(alpha.begin(), alpha.end(), [](float v) { return v != 0.0f; })) * kN * width;
        ours.push_back(ctx.rows.size() - 1);
      }
      if (f == Fp4Format::kMXFP4 && !top_k) {
        const tuning::ProblemShape ps = tuning::problem_shape(spec.shape);
        for (GemmTactic t : tuning::compiled_tactics(f, kernels::Layout::kMoeDense)) {
          if (!t.fp8) continue;
          t.split_k = tuning::heuristic_split_k(ps, t);
          Row r8 = r;
          set_variant(r8, "fp8-route");
          r8.tensor_ceiling = CeilingKind::kFp8Tensor;
          GemmOptions forced = options;
          forced.tactic = &t;
          Row& added = ctx.add(r8, [&](cudaStream_t s) { moe_dense_fc2(a, b, av, width, dv, s, forced); });
          added.tactic = t.name();
          added.bytes = skipping_bytes(alpha, m, 128, f, width);  // (the direct tile: 128 tokens)
          ours.push_back(ctx.rows.size() - 1);
        }
      }
    }
    if (ours.empty()) continue;
    add_peer_rows(ctx, suite, suite + " dense " + shape, m, kN, k_all, 1, ours);
  }
}

}  // namespace

void run_seed_fc2_suite(SuiteContext& ctx) { run_fc2_suite(ctx, "seed-fc2", /*top_k=*/false); }
void run_moe_fc2_suite(SuiteContext& ctx) { run_fc2_suite(ctx, "moe-fc2", /*top_k=*/true); }

namespace {

std::vector<GemmRowSpec> fc2_rows(const std::string& suite, bool top_k) {
  std::vector<GemmRowSpec> rows;
  for (std::int64_t m : token_counts())
    for (Fp4Format f : kFormats) rows.push_back(fc2_row(suite, f, m, top_k, kSeedWidth));
  return rows;
}

}  // namespace

std::vector<GemmRowSpec> seed_fc2_rows() { return fc2_rows("seed-fc2", false); }
std::vector<GemmRowSpec> moe_fc2_rows() { return fc2_rows("moe-fc2", true); }

}  // namespace fp4moe::bench
