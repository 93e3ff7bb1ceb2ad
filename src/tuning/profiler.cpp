#include "tuning/profiler.hpp"

#include <algorithm>

#include "common/cuda_check.hpp"
#include "common/device_fill.hpp"
#include "common/device_info.hpp"

namespace fp4moe::tuning {
namespace {

/// Events of one timing run, destroyed however the run ends.
class EventPairs {
 public:
  explicit EventPairs(std::size_t pairs) : ev_(2 * pairs, nullptr) {
    for (auto& e : ev_) FP4MOE_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~EventPairs() {
    for (auto& e : ev_)
      if (e) cudaEventDestroy(e);
  }
  EventPairs(const EventPairs&) = delete;
  EventPairs& operator=(const EventPairs&) = delete;
  cudaEvent_t start(std::size_t i) const { return ev_[2 * i]; }
  cudaEvent_t stop(std::size_t i) const { return ev_[2 * i + 1]; }
  double us(std::size_t i) const {
    float ms = 0;
    FP4MOE_CUDA_CHECK(cudaEventElapsedTime(&ms, start(i), stop(i)));
    return 1000.0 * ms;
  }

 private:
  std::vector<cudaEvent_t> ev_;
};

ProfileStats stats_of(const std::vector<double>& us) {
  ProfileStats s;
  s.reps = static_cast<int>(us.size());
  if (us.empty()) return s;
  s.median_us = median(us);
  s.min_us = *std::min_element(us.begin(), us.end());
  s.max_us = *std::max_element(us.begin(), us.end());
  return s;
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Profiler::Profiler(cudaStream_t stream) : stream_(stream) {
  int dev = 0, l2 = 0;
  FP4MOE_CUDA_CHECK(cudaGetDevice(&dev));
  FP4MOE_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  flush_bytes_ = std::max<std::size_t>(std::size_t(l2) * 4, std::size_t(256) << 20);
  FP4MOE_CUDA_CHECK(cudaMalloc(&flush_, flush_bytes_));
  FP4MOE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&sink_), sizeof(unsigned)));
  detail::fill_random_bf16(flush_, static_cast<std::int64_t>(flush_bytes_ / 2), 0x5eed, 1.0f, stream_);
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

Profiler::~Profiler() {
  cudaFree(flush_);
  cudaFree(sink_);
}

void Profiler::evict_l2() const {
  // (Normal-policy loads: a streaming sweep's evict-first lines would push
  // out little of what the last run left, docs/PERF.md stop 68.)
  detail::read_sweep(flush_, static_cast<std::int64_t>(flush_bytes_), sink_, stream_, detail::SweepLoads::kEvicting);
}

ProfileStats Profiler::time(const StreamOp& op, const ProfileOptions& opt) const {
  return time_interleaved({op}, opt).front();
}

std::vector<ProfileStats> Profiler::time_interleaved(const std::vector<StreamOp>& ops, const ProfileOptions& opt) const {
  for (int i = 0; i < opt.warmup; ++i)
    for (const StreamOp& op : ops) op(stream_);
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const std::size_t reps = static_cast<std::size_t>(std::max(opt.reps, 1));
  EventPairs ev(reps * ops.size());
  for (std::size_t r = 0; r < reps; ++r)
    for (std::size_t o = 0; o < ops.size(); ++o) {
      const std::size_t i = r * ops.size() + o;
      if (opt.cold_l2) evict_l2();
      FP4MOE_CUDA_CHECK(cudaEventRecord(ev.start(i), stream_));
      ops[o](stream_);
      FP4MOE_CUDA_CHECK(cudaEventRecord(ev.stop(i), stream_));
    }
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::vector<ProfileStats> out;
  for (std::size_t o = 0; o < ops.size(); ++o) {
    std::vector<double> us;
    for (std::size_t r = 0; r < reps; ++r) us.push_back(ev.us(r * ops.size() + o));
    out.push_back(stats_of(us));
  }
  return out;
}

}  // namespace fp4moe::tuning
