// Measures the ceilings every row is compared with (see report.hpp).
#pragma once

#include "bench/report.hpp"
#include "bench/timing.hpp"

namespace fp4moe::bench {

Ceilings measure_ceilings(const Timer& timer, const TimingOptions& opt);

/// The higher of each ceiling.
Ceilings best_of(const Ceilings& a, const Ceilings& b);

}  // namespace fp4moe::bench
