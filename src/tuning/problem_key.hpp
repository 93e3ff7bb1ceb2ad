// The key of a tuning-cache entry: what distinguishes one tuned problem from
// another on one device and build (operation, formats, output, N, K, groups or
// experts, expert width, token bucket). Built the same way by the entry points
// (at run time) and by the tuner, from a TuneShape. Host only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fp4moe/tuning.hpp"

namespace fp4moe::tuning {

struct ProblemKey {
  GemmOp op = GemmOp::kDense;
  Fp4Format format = Fp4Format::kNVFP4;
  GemmOutput out = GemmOutput::kBF16;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t groups = 0;  ///< contiguous/masked: G; MoE: E; dense: 0
  std::int64_t width = 0;   ///< FC2: W; else 0
  std::int64_t bucket = 0;

  bool operator==(const ProblemKey&) const = default;
  std::string describe() const;  ///< "masked nvfp4 bf16 G=8 n=4096 k=7168 bucket=64"
};

struct ProblemKeyHash {
  std::size_t operator()(const ProblemKey& k) const noexcept;
};

/// The key of a call (bucket from call.m, no upper limit: the run time).
/// Fields that do not apply to the operation are zeroed.
ProblemKey key_of(const TuneShape& call);

/// Names of the enums as the cache file spells them, and back.
const char* format_key_name(Fp4Format f);
std::optional<GemmOp> parse_gemm_op(const std::string& s);
std::optional<Fp4Format> parse_format(const std::string& s);
std::optional<GemmOutput> parse_output(const std::string& s);

/// The call a key was tuned for (m = the bucket), for re-checking a cached
/// tactic against the shape.
TuneShape shape_of(const ProblemKey& key);

}  // namespace fp4moe::tuning
