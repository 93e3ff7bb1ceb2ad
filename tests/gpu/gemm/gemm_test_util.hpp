// Running one GEMM case end to end: random operands, the float64 reference,
// the GPU call on a poisoned output, and the comparison.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fp4moe/gemm.hpp"
#include "support/test_support.hpp"

namespace fp4moe::test {

enum class GemmLayout { kDense, kContiguous, kMasked };
const char* layout_name(GemmLayout l);

struct GemmCase {
  Fp4Format format = Fp4Format::kNVFP4;
  GemmLayout layout = GemmLayout::kDense;
  int m = 1;            ///< dense: M; masked: max M per group; contiguous: ignored (see expert_rows)
  int n = 256;
  int k = 256;
  int groups = 1;
  DType out = DType::kFP32;
  Fp4Content content = Fp4Content::kRandom;
  std::vector<int> expert_rows;   ///< contiguous: valid rows per expert (each padded to 128)
  std::vector<int> masked_m;      ///< masked: valid rows per group
  bool nan_past_masked_m = false;  ///< masked: rows past masked_m get NaN block scales (must reach no output)
  bool nan_scale_padding = false;  ///< both operands' 128x4 scale padding (columns past K, rows past the tensor) holds NaN codes
  const GemmTactic* tactic = nullptr;
  int ld_pad = 0;                 ///< extra elements per row of D (checked untouched)
  int d_offset = 0;               ///< D starts this many elements into its buffer (those checked untouched)
  bool prepack_b = false;         ///< B goes through prepack_weights (in place on the device) first
  int repeats = 1;                ///< runs of the same call on fresh poison; each must be bit-identical to the first
  std::string describe() const;
};

struct GemmResult {
  double rel_error = 0;      ///< relative Frobenius error over written elements
  /// The worst 128 x 128 output tile's own relative Frobenius error (tiles
  /// of 16 or more elements; all-zero reference: infinite unless exactly 0).
  double max_tile_rel_error = 0;
  std::int64_t mismatches = 0;  ///< integer content: elements not bit-exact
  std::int64_t bad_untouched = 0;  ///< elements that should keep the poison but changed
  std::int64_t bad_padding = 0;    ///< contiguous padding rows not exactly 0
  std::int64_t non_finite = 0;     ///< written elements that are NaN/Inf
  double max_bf16_excess = 0;      ///< BF16: worst |got-ref| / (2^-8|ref| + 1e-5·rms(ref of its tile)), ≤ 1 passes
};

/// Runs the case with fresh random data and returns the comparison.
GemmResult run_gemm_case(const GemmCase& c, Rng& rng);

/// Which elements of an output [groups, rows, cols] (row stride ld) a call
/// writes, and how. Elements not written (and columns past cols) must keep
/// the 0xff poison.
struct OutputCheck {
  DType out = DType::kFP32;
  Fp4Content content = Fp4Content::kRandom;
  std::int64_t groups = 1, rows = 0, cols = 0, ld = 0;
  std::function<bool(std::int64_t group, std::int64_t row)> written;  ///< null: every row
  std::function<bool(std::int64_t row)> must_be_zero;                 ///< null: none
};

/// Compares a downloaded output against the float64 reference [groups, rows, cols].
GemmResult compare_output(const std::vector<double>& ref, const std::vector<std::uint8_t>& got, const OutputCheck& check);

/// Asserts the result against the numerics contract (DESIGN.md §4).
void expect_gemm_ok(const GemmCase& c, const GemmResult& r);
/// The same for any operation: `what` names the case in failures.
void expect_gemm_ok_for(const std::string& what, DType out, Fp4Content content, const GemmResult& r);

}  // namespace fp4moe::test
