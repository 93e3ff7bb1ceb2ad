// The subcommands of the `fp4moe` command line besides the benchmark.
#pragma once

#include <string>
#include <vector>

namespace fp4moe::cli {

/// fp4moe tune [SUITE ...] [--shapes FILE] [--cache FILE] [--reps N] [--warmup N] [--max-m M] [--warm-l2] [--show]
int tune_command(const std::vector<std::string>& args);
/// fp4moe cache show [--cache FILE] | fp4moe cache path
int cache_command(const std::vector<std::string>& args);
/// fp4moe sweep [SUITE ...] [--quick] [--reps N] [--final-reps N] [--tune-reps N] [--warmup N] [--filter TEXT]
///              [--markdown FILE] [--cache FILE]
int sweep_command(const std::vector<std::string>& args);

/// Whether a CUDA device is present; prints why not.
bool have_gpu(const char* command);
/// The commit the reports name: the one this binary was built from; where
/// the build could not tell ("unknown": a tree copied without .git),
/// $FP4MOE_COMMIT if set. A binary that knows its commit ignores the
/// variable, so a stale one cannot mislabel its runs.
std::string measured_commit();

}  // namespace fp4moe::cli
