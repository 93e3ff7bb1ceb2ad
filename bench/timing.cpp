#include "bench/timing.hpp"

#include <algorithm>

#include "bench/device_kernels.hpp"
#include "common/cuda_check.hpp"

namespace fp4moe::bench {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Timer::Timer() {
  FP4MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  int dev = 0, l2 = 0;
  FP4MOE_CUDA_CHECK(cudaGetDevice(&dev));
  FP4MOE_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  flush_bytes_ = std::max<std::size_t>(std::size_t(l2) * 4, std::size_t(256) << 20);
  FP4MOE_CUDA_CHECK(cudaMalloc(&flush_, flush_bytes_));
  FP4MOE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&sink_), sizeof(unsigned)));
  fill_random_bytes(flush_, static_cast<std::int64_t>(flush_bytes_), 0x5eed, 0, 255, stream_);
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

Timer::~Timer() {
  cudaFree(flush_);
  cudaFree(sink_);
  cudaStreamDestroy(stream_);
}

void Timer::evict_l2() const { read_sweep(flush_, static_cast<std::int64_t>(flush_bytes_), sink_, stream_); }

TimeStats Timer::time(const std::function<void(cudaStream_t)>& op, const TimingOptions& opt) const {
  for (int i = 0; i < opt.warmup; ++i) op(stream_);
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const int reps = std::max(opt.reps, 1);
  std::vector<cudaEvent_t> ev(static_cast<std::size_t>(2 * reps));
  for (auto& e : ev) FP4MOE_CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    if (opt.cold_l2) evict_l2();
    FP4MOE_CUDA_CHECK(cudaEventRecord(ev[2 * i], stream_));
    op(stream_);
    FP4MOE_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1], stream_));
  }
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    FP4MOE_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    us.push_back(1000.0 * ms);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  TimeStats t;
  t.reps = reps;
  t.median_us = median(us);
  t.min_us = *std::min_element(us.begin(), us.end());
  t.max_us = *std::max_element(us.begin(), us.end());
  return t;
}

}  // namespace fp4moe::bench
