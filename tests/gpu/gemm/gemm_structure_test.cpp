// Structured inputs that expose the engine's K and row mappings: A row r holds
// a single 1 at k = r % K, B row n a single 1 at k = n % K, so D must be the
// 0/1 matrix [r % K == n % K]. A failure prints, for the first rows, the
// columns where the 1s actually landed — the permutation that went wrong.
#include <gtest/gtest.h>

#include <sstream>

#include "fp4moe/codec.hpp"
#include "fp4moe/gemm.hpp"
#include "kernels/sm90/gemm_registry.hpp"
#include "reference/reference_gemm.hpp"
#include "support/test_support.hpp"

namespace fp4moe {
namespace {

/// Row r holds a single 1.0 at k = 37·r mod K (37 is odd, so rows < K get
/// distinct positions spread over every pipeline stage).
void one_hot_rows(test::HostFp4& h, int k) {
  std::fill(h.data.begin(), h.data.end(), 0);
  const std::uint8_t one_scale = h.t.format == Fp4Format::kNVFP4 ? 0x38 : 127;  // 1.0
  test::set_all_scales(h, one_scale);
  for (std::int64_t r = 0; r < h.t.rows; ++r) test::set_code(h, 0, r, (37 * r) % k, 2);  // E2M1 code 2 = 1.0
}

/// Runs fp4_gemm_nt on host operands with a forced tactic; FP32 [m, n] result.
std::vector<float> run_dense(const test::HostFp4& a, const test::HostFp4& b, const GemmTactic& tactic) {
  test::DeviceFp4 da(a), db(b);
  da.upload(a);
  db.upload(b);
  const std::int64_t m = a.t.rows, n = b.t.rows;
  test::DeviceBuffer<float> d(static_cast<std::size_t>(m * n));
  d.fill_bytes(0xff);
  GemmOptions opt;
  opt.tactic = &tactic;
  fp4_gemm_nt(da.t, db.t, MatrixView{d.get(), DType::kFP32, m, n}, nullptr, opt);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return d.download();
}

TEST(GemmStructure, OneHotRowsGiveTheIdentityPattern) {
  FP4MOE_REQUIRE_GPU();
  for (int k : {128, 512}) {
  const int m = 128, n = 128;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    for (const auto& e : kernels::kernel_registry()) {
      if (e.format != f || e.layout != kernels::Layout::kDense) continue;
      test::HostFp4 a(f, ScaleLayout::kTiled128x4, m, k), b(f, ScaleLayout::kTiled128x4, n, k);
      one_hot_rows(a, k);
      one_hot_rows(b, k);
      const std::vector<float> got = run_dense(a, b, e.tactic);
      int bad = 0;
      std::ostringstream where;
      for (int r = 0; r < m; ++r) {
        bool row_bad = false;
        for (int c = 0; c < n; ++c) row_bad |= got[r * n + c] != (r == c ? 1.0f : 0.0f);
        if (!row_bad) continue;
        if (++bad <= 24) {
          where << "\n  row " << r << ": ones at";
          for (int c = 0; c < n; ++c)
            if (got[r * n + c] != 0.0f) where << " " << c << "(" << got[r * n + c] << ")";
        }
      }
      EXPECT_EQ(bad, 0) << format_name(f) << " " << e.tactic.name() << " K=" << k << where.str();
    }
  }
  }
}

/// Diagnostic for a random product: which output rows and columns are wrong.
TEST(GemmStructure, RandomProductErrorMap) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const int m = 128, n = 128, k = 512;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    for (const auto& e : kernels::kernel_registry()) {
      if (e.format != f || e.layout != kernels::Layout::kDense) continue;
      test::HostFp4 a(f, ScaleLayout::kTiled128x4, m, k), b(f, ScaleLayout::kTiled128x4, n, k);
      test::fill_random(a, rng, test::Fp4Content::kIntegerValued);
      test::fill_random(b, rng, test::Fp4Content::kIntegerValued);
      const std::vector<double> ref = reference::gemm_nt(a.t, b.t);
      const std::vector<float> got = run_dense(a, b, e.tactic);
      std::string rows(m, '.'), cols(n, '.');
      int bad = 0;
      for (int r = 0; r < m; ++r)
        for (int c = 0; c < n; ++c)
          if (double(got[r * n + c]) != ref[r * n + c]) {
            rows[r] = 'x';
            cols[c] = 'x';
            ++bad;
          }
      EXPECT_EQ(bad, 0) << format_name(f) << " " << e.tactic.name() << "\n rows " << rows << "\n cols " << cols
                        << "\n d[0][0..3] = " << got[0] << " " << got[1] << " " << got[2] << " " << got[3]
                        << " ref " << ref[0] << " " << ref[1] << " " << ref[2] << " " << ref[3];
    }
  }
}

}  // namespace
}  // namespace fp4moe
