#include "bench/ceilings.hpp"

#include <algorithm>

#include "bench/cublaslt_peer.hpp"
#include "bench/device_kernels.hpp"
#include "common/cuda_check.hpp"

namespace fp4moe::bench {

Ceilings measure_ceilings(const Timer& timer, const TimingOptions& opt) {
  Ceilings c;
  const std::int64_t bytes = std::int64_t(2) << 30;  // 2 GiB: far past any L2
  void *a = nullptr, *b = nullptr;
  unsigned* sink = nullptr;
  FP4MOE_CUDA_CHECK(cudaMalloc(&a, bytes));
  FP4MOE_CUDA_CHECK(cudaMalloc(&b, bytes));
  FP4MOE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&sink), sizeof(unsigned)));
  fill_random_bytes(a, bytes, 7, 0, 255, timer.stream());
  const TimeStats rd = timer.time([&](cudaStream_t s) { read_sweep(a, bytes, sink, s); }, opt);
  c.read_gbps = double(bytes) / rd.median_us * 1e-3;
  const TimeStats cp = timer.time(
      [&](cudaStream_t s) { FP4MOE_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s)); }, opt);
  c.copy_gbps = 2.0 * double(bytes) / cp.median_us * 1e-3;
  cudaFree(a);
  cudaFree(b);
  cudaFree(sink);
  for (PeerType t : {PeerType::kBF16, PeerType::kFP8}) {
    const CublasLtGemm g(t, 8192, 8192, 8192, timer.stream());
    const TimeStats ts = timer.time([&](cudaStream_t s) { g.run(s); }, opt);
    (t == PeerType::kBF16 ? c.bf16_tflops : c.fp8_tflops) = g.flops() / ts.median_us * 1e-6;
  }
  return c;
}

Ceilings best_of(const Ceilings& a, const Ceilings& b) {
  return {std::max(a.read_gbps, b.read_gbps), std::max(a.copy_gbps, b.copy_gbps), std::max(a.bf16_tflops, b.bf16_tflops),
          std::max(a.fp8_tflops, b.fp8_tflops)};
}

}  // namespace fp4moe::bench
