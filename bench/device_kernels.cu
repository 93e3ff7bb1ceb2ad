#include "bench/device_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"

namespace fp4moe::bench {
namespace {

__device__ __forceinline__ std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ __forceinline__ float unit(std::uint64_t h) {  // [-1, 1)
  return static_cast<float>(static_cast<std::int32_t>(h >> 32)) * (1.0f / 2147483648.0f);
}

template <class F>
__global__ void fill_kernel(std::int64_t n, F f) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) f(i);
}

template <class F>
void launch_fill(std::int64_t n, F f, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>((n + 255) / 256, detail::current_device_sm_count() * 16LL)));
  fill_kernel<<<blocks, 256, 0, s>>>(n, f);
  FP4MOE_CHECK_LAUNCH();
}

}  // namespace

void fill_random_fp32(float* p, std::int64_t n, std::uint64_t seed, float scale, cudaStream_t s) {
  launch_fill(n, [=] __device__(std::int64_t i) { p[i] = scale * unit(mix(seed ^ mix(i))); }, s);
}

void fill_random_e4m3(void* p, std::int64_t n, std::uint64_t seed, cudaStream_t s) {
  auto* q = static_cast<__nv_fp8_storage_t*>(p);
  launch_fill(n, [=] __device__(std::int64_t i) {
    q[i] = __nv_cvt_float_to_fp8(2.0f * unit(mix(seed ^ mix(i))), __NV_SATFINITE, __NV_E4M3);
  }, s);
}

void fill_random_bytes(void* p, std::int64_t n, std::uint64_t seed, std::uint8_t lo, std::uint8_t hi, cudaStream_t s) {
  auto* q = static_cast<std::uint8_t*>(p);
  const unsigned span = unsigned(hi) - unsigned(lo) + 1;
  launch_fill(n, [=] __device__(std::int64_t i) { q[i] = static_cast<std::uint8_t>(lo + (mix(seed ^ mix(i)) >> 40) % span); }, s);
}

}  // namespace fp4moe::bench
