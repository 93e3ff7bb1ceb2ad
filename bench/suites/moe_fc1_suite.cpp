// Suite `moe-fc1` (no target in DESIGN.md §6; the rows say what the first
// MoE GEMM costs): moe_dense_fc1_swiglu on the seed workload's FC1, E = 256
// experts of I = 256 (the benchmark's --moe-width sets I, as it sets the
// FC2 suites' W), hidden K = 7168, every token against every expert's gate
// and up rows (B: E·2I = 131072 rows), writing BF16 or NVFP4 (FC2's A), with
// a per-expert scale; cuBLASLt BF16 and FP8 on the same dense M x E·2I x K
// GEMM (without the SwiGLU) in the same run. FC1 has one tile, 128 tokens
// by 128 gate and 128 up rows, so a call of fewer tokens pads its token
// tile: the rows below 128 tokens show what that costs. The tokens' scales
// put a gate's spread at a few units (ScaleData::kGates), so silu is a curve, as in
// a served model; with the other suites' token scales every gate was in the
// hundreds.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/fp4_problem.hpp"
#include "bench/peer_rows.hpp"
#include "bench/suite.hpp"
#include "common/upload.hpp"
#include "fp4moe/moe.hpp"

namespace fp4moe::bench {
namespace {

constexpr std::int64_t kExperts = 256, kHidden = 7168, kMaxM = 384;
constexpr std::int64_t kTokenCounts[] = {8, 32, 128, 384};
constexpr Fp4Format kFormats[] = {Fp4Format::kNVFP4, Fp4Format::kMXFP4};

}  // namespace

void run_moe_fc1_suite(SuiteContext& ctx) {
  const std::int64_t inter = ctx.data.moe_width, out_cols = kExperts * inter;
  cudaStream_t st = ctx.timer.stream();
  std::vector<std::unique_ptr<DeviceFp4Tensor>> a_of, b_of;
  for (Fp4Format f : kFormats) {
    a_of.push_back(std::make_unique<DeviceFp4Tensor>(f, kMaxM, kHidden, 1, 505, ScaleData::kGates, st));
    b_of.push_back(std::make_unique<DeviceFp4Tensor>(f, 2 * inter, kHidden, kExperts, 606, ctx.data.weights(), st));
  }
  // Per-expert scales 0.5..2 and the NVFP4 output's encode scale: the
  // quantizing epilogue's work does not depend on their values, but nothing
  // here runs on ones.
  std::mt19937_64 rng(2027);
  std::uniform_real_distribution<float> scale(0.5f, 2.0f);
  std::vector<float> host_scales(kExperts + 1);
  for (float& v : host_scales) v = scale(rng);
  DeviceAlloc scales(host_scales.size() * 4), decode_out(4);
  detail::upload(scales.p, host_scales.data(), host_scales.size() * 4, st);
  const auto* expert_scale = static_cast<const float*>(scales.p);
  const float* encode = expert_scale + kExperts;
  DeviceAlloc d(static_cast<std::size_t>(kMaxM * out_cols * 2));
  Fp4Tensor q;  // the NVFP4 output, FC2's A
  q.format = Fp4Format::kNVFP4;
  q.scale_layout = ScaleLayout::kTiled128x4;
  q.rows = kMaxM;
  q.cols = out_cols;
  DeviceAlloc q_data(static_cast<std::size_t>(q.data_bytes())), q_scales(static_cast<std::size_t>(q.scale_bytes_total()));
  q.data = q_data.p;
  q.scales = q_scales.p;
  q.global_scale = static_cast<float*>(decode_out.p);
  for (std::int64_t m : kTokenCounts) {
    const std::string shape = "M=" + std::to_string(m) + " K=7168 E=256 I=" + std::to_string(inter);
    std::vector<std::size_t> ours;
    for (std::size_t fi = 0; fi < 2; ++fi) {
      Fp4Tensor a = a_of[fi]->tensor();
      a.rows = m;
      const Fp4Tensor& b = b_of[fi]->tensor();
      for (bool fp4_out : {false, true}) {
        Row r;
        r.suite = "moe-fc1";
        r.name = std::string("moe-fc1 ") + format_name(kFormats[fi]) + " " + shape + (fp4_out ? " out=nvfp4" : " out=bf16");
        r.impl = "fp4moe";
        if (!ctx.wants(r.name)) continue;
        r.flops = 2.0 * double(m) * double(2 * out_cols) * kHidden;
        const double out_bytes = fp4_out ? double(m) * out_cols * (0.5 + 1.0 / 16) : double(m) * out_cols * 2;
        r.bytes = a_of[fi]->bytes() * double(m) / kMaxM + b_of[fi]->bytes() + out_bytes;
        r.by_regime = true;
        r.tensor_ceiling = CeilingKind::kBf16Tensor;
        Fp4Tensor qm = q;
        qm.rows = m;
        const MatrixView dv{d.p, DType::kBF16, m, out_cols};
        Row& added = ctx.add(r, [&](cudaStream_t s) {
          if (fp4_out)
            moe_dense_fc1_swiglu(a, b, expert_scale, qm, encode, s);
          else
            moe_dense_fc1_swiglu(a, b, expert_scale, dv, s);
        });
        added.tactic = last_tactic_text();
        ours.push_back(ctx.rows.size() - 1);
      }
    }
    if (ours.empty()) continue;
    add_peer_rows(ctx, "moe-fc1", "moe-fc1 dense " + shape, m, 2 * out_cols, kHidden, 1, ours);
  }
}

}  // namespace fp4moe::bench
