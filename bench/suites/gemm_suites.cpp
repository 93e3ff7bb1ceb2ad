// Suites `dense`, `decode` and `prefill` (DESIGN.md §6): the FP4 GEMMs with the
// tactic the heuristic picks, and cuBLASLt BF16 and FP8 on the same shapes
// (batched for the grouped layouts) in the same run.
#include <string>

#include "bench/fp4_problem.hpp"
#include "bench/peer_rows.hpp"
#include "bench/suite.hpp"
#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "fp4moe/gemm.hpp"
#include "tuning/tactic_space.hpp"

namespace fp4moe::bench {
namespace {

/// One GEMM problem of a suite: `groups` GEMMs of [m, k] x [n, k]ᵀ.
struct Shape {
  std::int64_t groups, m, n, k;
};

std::string shape_text(const Shape& s) {
  std::string t = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
  return s.groups > 1 ? "G" + std::to_string(s.groups) + " " + t : t;
}

/// Times the fp4moe row, then the two peers, and fills the ratios.
void run_shape(SuiteContext& ctx, const std::string& suite, Fp4Format f, kernels::Layout layout, const Shape& s) {
  const std::string name = suite + " " + format_name(f) + " " + shape_text(s);
  if (!ctx.wants(name)) return;
  cudaStream_t st = ctx.timer.stream();
  const std::int64_t a_rows = s.groups * s.m;
  const bool grouped = layout != kernels::Layout::kDense;
  DeviceFp4Tensor a(f, layout == kernels::Layout::kMasked ? s.m : a_rows, s.k, layout == kernels::Layout::kMasked ? s.groups : 1, 101, st);
  DeviceFp4Tensor b(f, s.n, s.k, grouped ? s.groups : 1, 202, st);
  DeviceAlloc d(static_cast<std::size_t>(a_rows * s.n * 2));
  std::vector<std::int32_t> host_aux;
  if (layout == kernels::Layout::kContiguous) {
    for (std::int64_t g = 0; g < s.groups; ++g)
      for (std::int64_t r = 0; r < s.m; ++r) host_aux.push_back(static_cast<std::int32_t>(g));
  } else if (layout == kernels::Layout::kMasked) {
    host_aux.assign(static_cast<std::size_t>(s.groups), static_cast<std::int32_t>(s.m));
  }
  DeviceAlloc aux(std::max<std::size_t>(4, host_aux.size() * 4));
  if (!host_aux.empty()) FP4MOE_CUDA_CHECK(cudaMemcpy(aux.p, host_aux.data(), host_aux.size() * 4, cudaMemcpyHostToDevice));
  const auto* aux_i = static_cast<const std::int32_t*>(aux.p);
  const MatrixView dv{d.p, DType::kBF16, layout == kernels::Layout::kMasked ? s.m : a_rows, s.n, 0, 1,
                      layout == kernels::Layout::kMasked ? s.groups : 1, 0};
  auto op = [&](cudaStream_t stream) {
    if (layout == kernels::Layout::kDense) {
      fp4_gemm_nt(a.tensor(), b.tensor(), dv, stream);
    } else if (layout == kernels::Layout::kContiguous) {
      m_grouped_fp4_gemm_nt_contiguous(a.tensor(), b.tensor(), dv, aux_i, stream);
    } else {
      m_grouped_fp4_gemm_nt_masked(a.tensor(), b.tensor(), dv, aux_i, static_cast<int>(s.m), stream);
    }
  };
  tuning::ProblemShape shape{f, layout, static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k),
                             static_cast<int>(s.groups)};
  shape.sm_count = detail::current_device_sm_count();
  const GemmTactic tactic = tuning::pick_tactic(shape);  // what the entry point runs
  Row r;
  r.suite = suite;
  r.name = name;
  r.impl = "fp4moe";
  r.tactic = tactic.name();
  r.flops = 2.0 * double(a_rows) * double(s.n) * double(s.k);
  r.bytes = a.bytes() + b.bytes() + 2.0 * double(a_rows) * double(s.n);
  // Memory-bound rows are judged against read bandwidth, compute-bound rows
  // against the tensor rate of the route (BF16 for the exact FP4 routes).
  r.by_regime = true;
  r.tensor_ceiling = CeilingKind::kBf16Tensor;
  ctx.add(r, op);
  add_peer_rows(ctx, suite, name, s.m, s.n, s.k, s.groups, {ctx.rows.size() - 1});
}

}  // namespace

void run_dense_suite(SuiteContext& ctx) {
  const Shape shapes[] = {{1, 64, 2112, 7168}, {1, 128, 7168, 16384}, {1, 4096, 7168, 16384}, {1, 4096, 4096, 7168}, {1, 8192, 8192, 8192}};
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (const Shape& s : shapes) run_shape(ctx, "dense", f, kernels::Layout::kDense, s);
}

void run_decode_suite(SuiteContext& ctx) {
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (std::int64_t g : {8, 32})
      for (std::int64_t m : {1, 8, 32, 64})
        for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{4096, 7168}, {7168, 2048}})
          run_shape(ctx, "decode", f, kernels::Layout::kMasked, {g, m, n, k});
}

void run_prefill_suite(SuiteContext& ctx) {
  const Shape shapes[] = {{4, 8192, 4096, 7168}, {8, 4096, 7168, 2048}};
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (const Shape& s : shapes) run_shape(ctx, "prefill", f, kernels::Layout::kContiguous, s);
}

}  // namespace fp4moe::bench
