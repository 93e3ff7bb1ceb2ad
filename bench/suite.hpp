// A benchmark suite: a name, a description and a function that appends rows.
// The list of suites is bench/suites/registry.cpp.
#pragma once

#include <string>
#include <vector>

#include "bench/report.hpp"
#include "bench/row_filter.hpp"
#include "bench/timing.hpp"
#include "fp4moe/tuning.hpp"

namespace fp4moe::bench {

/// Rows are timed here; the fractions of the ceilings (measured before and
/// after the suites, see tools/fp4moe_main.cpp) are filled in at the end.
struct SuiteContext {
  const Timer& timer;
  TimingOptions timing;
  std::vector<Row>& rows;
  std::string filter;  ///< only rows whose name contains one of these run (bench/row_filter.hpp; empty: all)
  DataOptions data;
  /// Whether a row of this name is selected by the filter.
  bool wants(const std::string& name) const { return row_selected(filter, name); }
  /// Times `op` and appends the row; skips rows the filter excludes.
  Row& add(Row r, const std::function<void(cudaStream_t)>& op);
};

/// A GEMM or MoE row of a suite, described as the tuner describes a
/// problem: what `fp4moe tune SUITE` tunes and `fp4moe sweep` measures.
struct GemmRowSpec {
  std::string name;  ///< the row's name in the suite's table
  TuneShape shape;
};

struct Suite {
  const char* name;
  const char* description;
  void (*run)(SuiteContext&);
  /// The suite's GEMM/MoE rows (its run function times exactly these); null
  /// for suites without any (quantize).
  std::vector<GemmRowSpec> (*gemm_rows)() = nullptr;
};

/// Describes the tactic the last GEMM call of this thread ran, marking one
/// that came from the tuning cache: what a row's "tactic" column shows.
std::string last_tactic_text();

/// Every suite, in the order a default run executes them.
const std::vector<Suite>& all_suites();

}  // namespace fp4moe::bench
