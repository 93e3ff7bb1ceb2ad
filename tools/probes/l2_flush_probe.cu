// L2 flush probe (not a product tool): does the profiler's eviction leave L2
// cold? A buffer of S bytes is read once (so L2 holds what fits of it), then
// one of: nothing, a read sweep of the profiler's size with streaming loads
// (evict-first lines: the flush before stop 68), the same with normal-policy
// loads (the flush since stop 68), or a memset of that size (dirty lines);
// then the buffer is read again, timed by CUDA events. A cold re-read runs at
// HBM speed; a re-read served from L2 runs several times faster.
// Run on the GPU machine: build/tools/fp4moe_l2_flush_probe.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/device_fill.hpp"

namespace {

#define CHECK(x)                                                                  \
  do {                                                                            \
    const cudaError_t e = (x);                                                    \
    if (e != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));                \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

enum class Between { kNothing, kStreamingSweep, kEvictingSweep, kMemset };
const char* name(Between b) {
  switch (b) {
    case Between::kNothing: return "nothing";
    case Between::kStreamingSweep: return "streaming sweep (.cs)";
    case Between::kEvictingSweep: return "evicting sweep (.cg)";
    case Between::kMemset: return "memset";
  }
  return "?";
}

}  // namespace

int main() {
  using fp4moe::detail::read_sweep;
  using fp4moe::detail::SweepLoads;
  int dev = 0, l2 = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  const std::size_t flush_bytes = std::max<std::size_t>(std::size_t(l2) * 4, std::size_t(256) << 20);  // the profiler's
  const std::size_t max_bytes = std::size_t(64) << 20;
  void *flush = nullptr, *data = nullptr;
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMalloc(&data, max_bytes));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  fp4moe::detail::fill_random_bf16(flush, std::int64_t(flush_bytes / 2), 1, 1.0f, nullptr);
  fp4moe::detail::fill_random_bf16(data, std::int64_t(max_bytes / 2), 2, 1.0f, nullptr);
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::printf("L2 %d MiB, flush %zu MiB; re-read of S MiB, median of 30 (us, GB/s)\n", l2 >> 20, flush_bytes >> 20);
  for (const std::size_t mib : {8, 24, 40, 64}) {
    const std::size_t bytes = mib << 20;
    for (const Between b : {Between::kNothing, Between::kStreamingSweep, Between::kEvictingSweep, Between::kMemset}) {
      std::vector<float> us;
      for (int r = 0; r < 30; ++r) {
        read_sweep(data, std::int64_t(bytes), sink, nullptr, SweepLoads::kEvicting);  // what fits stays in L2
        if (b == Between::kStreamingSweep) read_sweep(flush, std::int64_t(flush_bytes), sink, nullptr, SweepLoads::kStreaming);
        if (b == Between::kEvictingSweep) read_sweep(flush, std::int64_t(flush_bytes), sink, nullptr, SweepLoads::kEvicting);
        if (b == Between::kMemset) CHECK(cudaMemsetAsync(flush, r, flush_bytes));
        CHECK(cudaEventRecord(start));
        read_sweep(data, std::int64_t(bytes), sink, nullptr, SweepLoads::kEvicting);
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        us.push_back(ms * 1e3f);
      }
      std::sort(us.begin(), us.end());
      const float median = 0.5f * (us[14] + us[15]);
      std::printf("S = %2zu MiB after %-22s %8.2f us %7.0f GB/s\n", mib, name(b), median, double(bytes) / median * 1e-3);
    }
  }
  return 0;
}
