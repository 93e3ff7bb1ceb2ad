// Structured inputs that expose the engine's K and row mappings: A row r holds
// a single 1 at k = r % K, B row n a single 1 at k = n % K, so D must be the
// 0/1 matrix [r % K == n % K]. A failure prints, for the first rows, the
// columns where the 1s actually landed — the permutation that went wrong.
#include <gtest/gtest.h>

#include <sstream>

#include "fp4moe/codec.hpp"
#include "fp4moe/gemm.hpp"
#include "kernels/sm90/gemm_registry.hpp"
#include "support/test_support.hpp"

namespace fp4moe {
namespace {

void one_hot_rows(test::HostFp4& h, int k) {
  std::fill(h.data.begin(), h.data.end(), 0);
  const std::uint8_t one_scale = h.t.format == Fp4Format::kNVFP4 ? 0x38 : 127;  // 1.0
  test::set_all_scales(h, one_scale);
  for (std::int64_t r = 0; r < h.t.rows; ++r) test::set_code(h, 0, r, r % k, 2);  // E2M1 code 2 = 1.0
}

TEST(GemmStructure, OneHotRowsGiveTheIdentityPattern) {
  FP4MOE_REQUIRE_GPU();
  const int m = 128, n = 128, k = 128;
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4}) {
    for (const auto& e : kernels::kernel_registry()) {
      if (e.format != f || e.layout != kernels::Layout::kDense) continue;
      test::HostFp4 a(f, ScaleLayout::kTiled128x4, m, k), b(f, ScaleLayout::kTiled128x4, n, k);
      one_hot_rows(a, k);
      one_hot_rows(b, k);
      test::DeviceFp4 da(a), db(b);
      da.upload(a);
      db.upload(b);
      test::DeviceBuffer<float> d(static_cast<std::size_t>(m * n));
      d.fill_bytes(0xff);
      GemmOptions opt;
      opt.tactic = &e.tactic;
      fp4_gemm_nt(da.t, db.t, MatrixView{d.get(), DType::kFP32, m, n}, nullptr, opt);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> got = d.download();
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
      EXPECT_EQ(bad, 0) << format_name(f) << " " << e.tactic.name() << where.str();
    }
  }
}

}  // namespace
}  // namespace fp4moe
