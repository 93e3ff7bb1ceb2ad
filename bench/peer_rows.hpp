// The cuBLASLt peers of a GEMM row: BF16 and FP8 on the same shape, timed in
// the same run, each appended as a row, and their time ratios written into
// the library's rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/suite.hpp"

namespace fp4moe::bench {

/// Times cuBLASLt BF16 and FP8 on `batch` GEMMs of m x n x k, appends a row
/// named `name` for each, and sets vs_bf16 / vs_fp8 of the rows at `ours`.
void add_peer_rows(SuiteContext& ctx, const std::string& suite, const std::string& name, std::int64_t m, std::int64_t n,
                   std::int64_t k, std::int64_t batch, const std::vector<std::size_t>& ours);

}  // namespace fp4moe::bench
