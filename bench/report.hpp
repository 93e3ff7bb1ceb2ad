// Benchmark rows, the measured ceilings they are compared with, and the two
// outputs: a readable table and JSON (--json FILE).
#pragma once

#include <string>
#include <vector>

#include "bench/fp4_problem.hpp"
#include "bench/timing.hpp"

namespace fp4moe::bench {

/// Ceilings measured on this device in this run.
struct Ceilings {
  double read_gbps = 0;    ///< read-only streaming
  double copy_gbps = 0;    ///< device-to-device copy, bytes read + written
  double bf16_tflops = 0;  ///< cuBLASLt BF16 8192³
  double fp8_tflops = 0;   ///< cuBLASLt FP8 8192³
};

enum class CeilingKind { kRead, kCopy, kBf16Tensor, kFp8Tensor };
const char* ceiling_name(CeilingKind k);
double ceiling_value(const Ceilings& c, CeilingKind k);

struct Row {
  std::string suite;
  std::string name;    ///< what ran (operation, format, shape)
  std::string impl;    ///< "fp4moe", "cublasLt-bf16", "cublasLt-fp8"
  std::string tactic;  ///< the tactic / algorithm that ran
  /// fp4moe GEMM and MoE rows: "" where the entry point chose the tactic
  /// (heuristic or tuning cache), "prepacked" for the same on prepacked
  /// weights, else the tactic the row forces ("cluster1", "cluster2",
  /// "fp8-route"), also the name's last word. The targets
  /// (bench/targets.hpp) read the first two.
  std::string variant;
  TimeStats time;
  double flops = 0;    ///< useful floating-point operations (0: not a GEMM)
  double bytes = 0;    ///< fewest bytes the operation must move
  CeilingKind ceiling = CeilingKind::kRead;
  /// When set, the ceiling is chosen after the run from the row's arithmetic
  /// intensity: read bandwidth if memory-bound, else this tensor ceiling.
  bool by_regime = false;
  CeilingKind tensor_ceiling = CeilingKind::kBf16Tensor;
  double fraction = 0;     ///< of the ceiling
  double vs_bf16 = 0;      ///< cuBLAS BF16 time / this time (0: no peer)
  double vs_fp8 = 0;       ///< cuBLAS FP8 time / this time (0: no peer)

  double tflops() const { return flops > 0 ? flops / time.median_us * 1e-6 : 0; }
  double gbps() const { return bytes / time.median_us * 1e-3; }
};

/// Marks an fp4moe row as `variant` (Row::variant), appending it to the
/// name as its last word: the one place the two are kept in step.
inline void set_variant(Row& r, const std::string& variant) {
  r.variant = variant;
  r.name += " " + variant;
}

/// Fills `fraction` (and, for by_regime rows, `ceiling`): bandwidth kinds
/// compare GB/s, tensor kinds compare TFLOP/s.
void set_fraction(Row& r, const Ceilings& c);

struct RunInfo {
  std::string device;
  int sm_count = 0;
  std::string commit;
  std::string date;
  TimingOptions timing;
  DataOptions data;
};

void print_header(const RunInfo& info, const Ceilings& c);
void print_rows(const std::vector<Row>& rows);
struct TargetCheck;
/// The run as JSON: its facts, ceilings, rows and target checks (bench/targets.hpp).
void write_json(const std::string& path, const RunInfo& info, const Ceilings& c, const std::vector<Row>& rows,
                const std::vector<TargetCheck>& targets);

}  // namespace fp4moe::bench
