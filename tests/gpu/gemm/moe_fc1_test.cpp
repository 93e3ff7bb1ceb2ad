// moe_dense_fc1_swiglu against the float64 reference: BF16 output within its
// rounding, and NVFP4 output equal to the CPU quantizer applied to the
// reference result, except elements (or block scales) whose reference value
// lies within FP32 rounding of a quantisation boundary; those are counted
// and reported, everything else must match byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "format/block_rules.hpp"
#include "fp4moe/codec.hpp"
#include "fp4moe/moe.hpp"
#include "fp4moe/quantize.hpp"
#include "gemm/gemm_test_util.hpp"
#include "reference/reference_gemm.hpp"

namespace fp4moe {
namespace {

struct Fc1Shape {
  int m, k, experts, inter;
};
const Fc1Shape kShapes[] = {{1, 256, 1, 128}, {31, 512, 4, 128}, {127, 256, 2, 256}, {300, 384, 3, 128}};

std::string describe(Fp4Format f, const Fc1Shape& s, bool scaled) {
  std::ostringstream o;
  o << format_name(f) << " M=" << s.m << " K=" << s.k << " E=" << s.experts << " I=" << s.inter
    << (scaled ? " expert_scale" : "");
  return o.str();
}

/// Redraws the block scales of `h` near 1 (2^-2..2^2; MXFP4's even 128-row
/// bands up to 2^1, as fill_random keeps them) and multiplies every value by
/// 2^level (NVFP4 through the global scales, MXFP4 through the exponents).
/// Why: with fill_random's wide scales a gate is in the thousands, so silu
/// is either the identity or underflows to 0 and its curve between the two
/// is never tested (stop 69 counted ~44% of the reference at 0).
void narrow_scales(test::HostFp4& h, test::Rng& rng, int level) {
  const bool nv = h.t.format == Fp4Format::kNVFP4;
  const std::int64_t scols = h.t.scale_cols();
  for (std::int64_t g = 0; g < h.t.groups; ++g)
    for (std::int64_t r = 0; r < h.t.rows; ++r)
      for (std::int64_t c = 0; c < scols; ++c) {
        const bool mx_small = (r / 128) % 2 == 0;
        h.scales[static_cast<std::size_t>(g * h.t.scale_bytes_per_group() + scale_offset(h.t.scale_layout, r, c, scols))] =
            nv ? encode_e4m3(std::exp2(rng.uniform(-2.0f, 2.0f)))
               : static_cast<std::uint8_t>(127 + level + rng.integer(-2, mx_small ? 1 : 2));
      }
  for (float& v : h.global) v = std::ldexp(rng.uniform(0.5f, 2.0f), level);
}

/// The power of two that puts the gates' spread near 5 for K: a gate sums K
/// products of values whose mean square is ~25 (NVFP4: E2M1 codes 8.6, its
/// scales 2.9) or ~36 (MXFP4's scales 4.3) with the scales above.
int gate_level(Fp4Format f, int k) {
  const double mean_square = f == Fp4Format::kNVFP4 ? 24.6 : 36.5;
  return static_cast<int>(std::lround(std::log2(5.0 / (mean_square * std::sqrt(double(k))))));
}

struct Fc1Data {
  test::HostFp4 a, b;
  std::vector<float> scale;
  std::vector<double> ref;
  test::DeviceFp4 da, db;
  test::DeviceBuffer<float> dscale;
  Fc1Data(Fp4Format f, const Fc1Shape& s, bool scaled, test::Rng& rng)
      : a(f, ScaleLayout::kTiled128x4, s.m, s.k),
        b(f, ScaleLayout::kTiled128x4, 2 * s.inter, s.k, s.experts),
        da(a),
        db(b),
        dscale(static_cast<std::size_t>(s.experts)) {
    test::fill_random(a, rng);
    test::fill_random(b, rng);
    narrow_scales(a, rng, gate_level(f, s.k));
    narrow_scales(b, rng, 0);
    for (int e = 0; e < s.experts; ++e) scale.push_back(rng.uniform(0.5f, 2.0f));
    ref = reference::moe_dense_fc1_swiglu(a.t, b.t, scaled ? scale.data() : nullptr);
    // The data reach silu's curve: few reference values are (nearly) 0.
    const auto zeros = std::count_if(ref.begin(), ref.end(), [](double v) { return std::fabs(v) < 1e-20; });
    EXPECT_LE(zeros, std::ssize(ref) / 50) << "reference values at 0: the gates saturate silu";
    da.upload(a);
    db.upload(b);
    dscale.upload(scale);
  }
};

TEST(MoeFc1, Bf16MatchesReference) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  int ran = 0;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (const Fc1Shape& s : kShapes) {
      const bool scaled = ran++ % 2 == 0;
      SCOPED_TRACE(describe(f, s, scaled));
      Fc1Data x(f, s, scaled, rng);
      const std::int64_t cols = std::int64_t(s.experts) * s.inter, ld = cols + 8;
      test::DeviceBuffer<std::uint8_t> d(static_cast<std::size_t>(s.m * ld * 2));
      d.fill_bytes(0xff);
      moe_dense_fc1_swiglu(x.da.t, x.db.t, scaled ? x.dscale.get() : nullptr, MatrixView{d.get(), DType::kBF16, s.m, cols, ld},
                           nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      test::OutputCheck check;
      check.out = DType::kBF16;
      check.rows = s.m;
      check.cols = cols;
      check.ld = ld;
      test::expect_gemm_ok_for(describe(f, s, scaled), DType::kBF16, test::Fp4Content::kRandom,
                               test::compare_output(x.ref, d.download(), check));
    }
}

/// Whether the GPU's code `got` for x (block scale sf, global g) is
/// explained by FP32 error `delta` in its value: x ± delta give different
/// codes, and `got` is one of them (not any code near a boundary).
bool element_on_edge(float x, float g, float sf, double delta, unsigned got) {
  const unsigned hi = detail::nvfp4_element_code(static_cast<float>(x + delta), g, sf),
                 lo = detail::nvfp4_element_code(static_cast<float>(x - delta), g, sf);
  return hi != lo && (got == hi || got == lo);
}

TEST(MoeFc1, Nvfp4OutputIsTheQuantizedReference) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  // FP32 error of an element: accumulation error is relative to the sum of
  // |products|, not to the (possibly cancelled) result, so it is bounded
  // like the BF16 comparison: 1e-5 of the output's RMS, plus 1e-6 relative.
  constexpr double kAbsOfRms = 1e-5, kRel = 1e-6;
  std::int64_t blocks = 0, edge_cases = 0;
  int ran = 0;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (const Fc1Shape& s : kShapes) {
      const bool scaled = ran++ % 2 == 1;
      SCOPED_TRACE(describe(f, s, scaled));
      Fc1Data x(f, s, scaled, rng);
      const std::int64_t cols = std::int64_t(s.experts) * s.inter;
      // The CPU quantizer on the reference result, with a g that puts the
      // tensor's amax near the top of the E4M3 x E2M1 range.
      std::vector<float> ref_f(x.ref.begin(), x.ref.end());
      float amax = 0;
      double rms = 0;
      for (float v : ref_f) {
        amax = std::max(amax, std::fabs(v));
        rms += double(v) * v;
      }
      rms = std::sqrt(rms / double(ref_f.size()));
      auto delta = [&](double v) { return kAbsOfRms * rms + kRel * std::fabs(v); };
      const float g = nvfp4_global_encode_scale(amax) * 0.75f;
      test::HostFp4 want(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, s.m, cols);
      cpu::quantize_nvfp4(MatrixView{ref_f.data(), DType::kFP32, s.m, cols}, want.t, &g);
      // The GPU, into poisoned buffers.
      test::HostFp4 got(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, s.m, cols);
      test::DeviceFp4 out(got);
      out.poison();
      test::DeviceBuffer<float> dg(1);
      dg.upload({g});
      moe_dense_fc1_swiglu(x.da.t, x.db.t, scaled ? x.dscale.get() : nullptr, out.t, dg.get(), nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      out.download(got);
      EXPECT_EQ(got.global[0], want.global[0]) << "decode scale 1/g";
      EXPECT_EQ(got.scales.size(), want.scales.size());
      std::int64_t unexplained = 0;
      const std::int64_t scols = cols / 16;
      for (std::int64_t r = 0; r < s.m; ++r)
        for (std::int64_t bcol = 0; bcol < scols; ++bcol) {
          ++blocks;
          const auto off = static_cast<std::size_t>(tiled128x4_offset(r, bcol, scols));
          const std::uint8_t ws = want.scales[off], gs = got.scales[off];
          float bamax = 0;
          for (int i = 0; i < 16; ++i) bamax = std::max(bamax, std::fabs(ref_f[static_cast<std::size_t>(r * cols + bcol * 16 + i)]));
          if (ws != gs) {
            // Explained only where bamax ± delta give different scales and the GPU's is one of them.
            const std::uint8_t s_hi = detail::nvfp4_scale_code(detail::abs_bits(static_cast<float>(bamax + delta(bamax))), g),
                               s_lo = detail::nvfp4_scale_code(detail::abs_bits(static_cast<float>(bamax - delta(bamax))), g);
            const bool scale_edge = s_hi != s_lo && (gs == s_hi || gs == s_lo);
            (scale_edge ? edge_cases : unexplained) += 1;
            continue;
          }
          const float sf = detail::decode_block_scale(true, ws);
          for (int i = 0; i < 16; ++i) {
            const std::int64_t c = bcol * 16 + i;
            const std::size_t byte = static_cast<std::size_t>((r * cols + c) / 2);
            const unsigned wc = (want.data[byte] >> (4 * (c % 2))) & 0xf, gc = (got.data[byte] >> (4 * (c % 2))) & 0xf;
            if (wc == gc) continue;
            const bool edge = !detail::nvfp4_block_is_zeroed(ws) &&
                              element_on_edge(ref_f[static_cast<std::size_t>(r * cols + c)], g, sf,
                                              delta(ref_f[static_cast<std::size_t>(r * cols + c)]), gc);
            (edge ? edge_cases : unexplained) += 1;
          }
        }
      // Padding rows of the last scale band.
      for (std::int64_t r = s.m; r < (s.m + 127) / 128 * 128; ++r)
        for (std::int64_t bcol = 0; bcol < scols; ++bcol)
          unexplained += got.scales[static_cast<std::size_t>(tiled128x4_offset(r, bcol, scols))] != 0;
      EXPECT_EQ(unexplained, 0);
    }
  std::printf("FC1 NVFP4 output: %lld blocks, %lld elements/scales within FP32 rounding of a boundary differ\n",
              static_cast<long long>(blocks), static_cast<long long>(edge_cases));
  EXPECT_LE(edge_cases, blocks / 100) << "more boundary cases than FP32 rounding explains";
}

}  // namespace
}  // namespace fp4moe
