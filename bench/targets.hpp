// DESIGN.md §6's performance targets, read from a run's rows: for each, how
// many of the rows it covers meet it and the range they span. Printed after
// the rows and written to the JSON, so a run says where the library stands
// against its targets with no other tool. The figures in §6 are for an
// H200; on other devices they are printed all the same, for comparison.
#pragma once

#include <string>
#include <vector>

#include "bench/report.hpp"

namespace fp4moe::bench {

struct TargetCheck {
  std::string target;   ///< the target and the rows it covers, in words
  std::string unit;     ///< what `lo` and `hi` measure ("% of read bw", "x cuBLAS BF16", "us", ...)
  int rows = 0;         ///< rows the target covers in this run
  int met = 0;          ///< of those, rows that meet it
  double lo = 0, hi = 0;  ///< the measured range over those rows (in `unit`)
};

/// Every target with at least one row in `rows` (a filtered run covers
/// fewer), in DESIGN.md §6's order. Only fp4moe rows count, and of those the
/// library's own choice of tactic, on standard or prepacked weights
/// (Row::variant "" or "prepacked"), except where a target names a route.
std::vector<TargetCheck> check_targets(const std::vector<Row>& rows);

void print_targets(const std::vector<TargetCheck>& checks);

}  // namespace fp4moe::bench
