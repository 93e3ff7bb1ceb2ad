#include "bench/device_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "common/counter_random.cuh"
#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/launch_kernel.cuh"

namespace fp4moe::bench {
namespace {

template <class F>
__global__ void fill_kernel(std::int64_t n, F f) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) f(i);
}

template <class F>
void launch_fill(std::int64_t n, F f, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>((n + 255) / 256, detail::current_device_sm_count() * 16LL)));
  detail::launch_kernel(fill_kernel<F>, blocks, 256, 0, s, n, f);
}

}  // namespace

void fill_random_fp32(float* p, std::int64_t n, std::uint64_t seed, float scale, cudaStream_t s) {
  launch_fill(n, [=] __device__(std::int64_t i) { p[i] = scale * detail::random_unit(detail::random_bits(seed, i)); }, s);
}

void fill_random_e4m3(void* p, std::int64_t n, std::uint64_t seed, cudaStream_t s) {
  auto* q = static_cast<__nv_fp8_storage_t*>(p);
  launch_fill(n, [=] __device__(std::int64_t i) {
    q[i] = __nv_cvt_float_to_fp8(2.0f * detail::random_unit(detail::random_bits(seed, i)), __NV_SATFINITE, __NV_E4M3);
  }, s);
}

void fill_random_bytes(void* p, std::int64_t n, std::uint64_t seed, std::uint8_t lo, std::uint8_t hi, cudaStream_t s) {
  auto* q = static_cast<std::uint8_t*>(p);
  const unsigned span = unsigned(hi) - unsigned(lo) + 1;
  launch_fill(n, [=] __device__(std::int64_t i) { q[i] = static_cast<std::uint8_t>(lo + (detail::random_bits(seed, i) >> 40) % span); }, s);
}

}  // namespace fp4moe::bench
