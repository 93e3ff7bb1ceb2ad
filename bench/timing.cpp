#include "bench/timing.hpp"

#include "common/cuda_check.hpp"
#include "common/split_k_workspace.hpp"

namespace fp4moe::bench {
namespace {

tuning::ProfileOptions profile_options(const TimingOptions& opt) { return {opt.warmup, opt.reps, opt.cold_l2}; }

TimeStats time_stats(const tuning::ProfileStats& p) { return {p.median_us, p.min_us, p.max_us, p.reps}; }

}  // namespace

Timer::Timer() {
  FP4MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  profiler_ = std::make_unique<tuning::Profiler>(stream_);
}

Timer::~Timer() {
  profiler_.reset();
  detail::destroy_own_stream(stream_);  // (the library's buffers for it too)
}

void Timer::evict_l2() const { profiler_->evict_l2(); }

TimeStats Timer::time(const std::function<void(cudaStream_t)>& op, const TimingOptions& opt) const {
  return time_stats(profiler_->time(op, profile_options(opt)));
}

std::vector<TimeStats> Timer::time_interleaved(const std::vector<std::function<void(cudaStream_t)>>& ops,
                                               const TimingOptions& opt) const {
  std::vector<TimeStats> out;
  for (const auto& p : profiler_->time_interleaved(ops, profile_options(opt))) out.push_back(time_stats(p));
  return out;
}

}  // namespace fp4moe::bench
