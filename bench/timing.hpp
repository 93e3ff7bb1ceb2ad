// Kernel-only timing: CUDA events around each launch, a cold L2 before each
// timed run (a read sweep over a buffer several times the L2), median of the
// repeats. The library's tuning::Profiler does the work, so the benchmark and
// the tuner time alike.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

#include "tuning/profiler.hpp"

namespace fp4moe::bench {

struct TimeStats {
  double median_us = 0, min_us = 0, max_us = 0;
  int reps = 0;
};

struct TimingOptions {
  int warmup = 3;
  int reps = 30;       ///< timed runs; the median is reported (at least 20)
  bool cold_l2 = true; ///< evict L2 before each timed run
  /// Idle time before each row (SuiteContext::add): the board power-caps
  /// under these kernels, and without a pause a row that follows another
  /// shape's cuBLAS peers ran 5-15% slower than the same kernel timed second
  /// (H200, docs/PERF.md stop 20).
  int cooldown_ms = 200;
};

/// Owns the stream and the L2-eviction buffer of one benchmark run.
class Timer {
 public:
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  cudaStream_t stream() const { return stream_; }
  /// Times `op` (which enqueues its work on the given stream).
  TimeStats time(const std::function<void(cudaStream_t)>& op, const TimingOptions& opt) const;
  /// Times several ops round-robin (so clock drift affects them alike).
  std::vector<TimeStats> time_interleaved(const std::vector<std::function<void(cudaStream_t)>>& ops,
                                          const TimingOptions& opt) const;
  /// Reads the eviction buffer once (clean lines only: nothing to write back).
  void evict_l2() const;

 private:
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<tuning::Profiler> profiler_;
};

using tuning::median;  ///< median of a sample (copied)

}  // namespace fp4moe::bench
