// Kernel timing for the tuner (and the benchmark): CUDA events around each
// run, L2 evicted before each timed run by a read sweep over a buffer several
// times the L2 (clean lines, so the timed kernel writes nothing back), warm-up
// runs first, median of the repeats.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace fp4moe::tuning {

struct ProfileOptions {
  int warmup = 3;
  int reps = 20;
  bool cold_l2 = true;
};

struct ProfileStats {
  double median_us = 0, min_us = 0, max_us = 0;
  int reps = 0;
};

using StreamOp = std::function<void(cudaStream_t)>;

/// Owns the L2-eviction buffer; times work enqueued on `stream`.
class Profiler {
 public:
  explicit Profiler(cudaStream_t stream);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  cudaStream_t stream() const { return stream_; }
  /// Warm-up runs, then `reps` timed runs; exceptions from `op` propagate.
  ProfileStats time(const StreamOp& op, const ProfileOptions& opt) const;
  /// Times several ops round-robin (op 0, op 1, ..., op 0, ...), so drifting
  /// clocks affect them alike; one result per op.
  std::vector<ProfileStats> time_interleaved(const std::vector<StreamOp>& ops, const ProfileOptions& opt) const;
  /// Reads the eviction buffer once.
  void evict_l2() const;

 private:
  cudaStream_t stream_;
  void* flush_ = nullptr;
  std::size_t flush_bytes_ = 0;
  unsigned* sink_ = nullptr;
};

/// Median of a sample (copied); 0 for an empty one.
double median(std::vector<double> v);

}  // namespace fp4moe::tuning
