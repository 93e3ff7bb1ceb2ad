// Kernel-only timing: CUDA events around each launch, a cold L2 before each
// timed run (a read sweep over a buffer several times the L2), median of the
// repeats.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

namespace fp4moe::bench {

struct TimeStats {
  double median_us = 0, min_us = 0, max_us = 0;
  int reps = 0;
};

struct TimingOptions {
  int warmup = 3;
  int reps = 30;       ///< timed runs; the median is reported (at least 20)
  bool cold_l2 = true; ///< evict L2 before each timed run
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
  /// Reads the eviction buffer once (clean lines only: nothing to write back).
  void evict_l2() const;

 private:
  cudaStream_t stream_ = nullptr;
  void* flush_ = nullptr;
  std::size_t flush_bytes_ = 0;
  unsigned* sink_ = nullptr;
};

/// Median of a sample (copied).
double median(std::vector<double> v);

}  // namespace fp4moe::bench
