#include "common/device_info.hpp"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>

#include "common/call_device_scope.hpp"
#include "common/cuda_check.hpp"

namespace fp4moe::detail {

namespace {
thread_local int t_call_scopes = 0;
thread_local int t_call_device = -1;  ///< the answer within the scopes (-1: not asked yet)
}  // namespace

CallDeviceScope::CallDeviceScope() noexcept { ++t_call_scopes; }
CallDeviceScope::~CallDeviceScope() {
  if (--t_call_scopes == 0) t_call_device = -1;
}

int current_device() {
  if (t_call_device >= 0) return t_call_device;  // (set only inside a scope)
  int dev = 0;
  FP4MOE_CUDA_CHECK(cudaGetDevice(&dev));
  if (t_call_scopes > 0) t_call_device = dev;
  return dev;
}

int stream_device(cudaStream_t stream) {
  if (follows_current_device(stream)) return current_device();
  int dev = 0;
  FP4MOE_CUDA_CHECK(cudaStreamGetDevice(stream, &dev));
  return dev;
}

bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  FP4MOE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  return capture != cudaStreamCaptureStatusNone;
}

int current_device_sm_count() {
  // Lock-free cache: a race only repeats the query.
  static std::array<std::atomic<int>, 64> cache{};
  const int dev = current_device();
  if (dev < 0 || dev >= static_cast<int>(cache.size())) {
    int n = 0;
    FP4MOE_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }
  int n = cache[static_cast<std::size_t>(dev)].load(std::memory_order_relaxed);
  if (n == 0) {
    FP4MOE_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    cache[static_cast<std::size_t>(dev)].store(n, std::memory_order_relaxed);
  }
  return n;
}

}  // namespace fp4moe::detail
