#include "bench/fp4_problem.hpp"

#include "bench/device_kernels.hpp"
#include "common/cuda_check.hpp"
#include "common/upload.hpp"

namespace fp4moe::bench {

DeviceFp4Tensor::DeviceFp4Tensor(Fp4Format f, std::int64_t rows, std::int64_t cols, std::int64_t groups, std::uint64_t seed,
                                 ScaleData data, cudaStream_t s) {
  t_.format = f;
  t_.scale_layout = ScaleLayout::kTiled128x4;
  t_.rows = rows;
  t_.cols = cols;
  t_.groups = groups;
  FP4MOE_CUDA_CHECK(cudaMalloc(&t_.data, t_.data_bytes()));
  FP4MOE_CUDA_CHECK(cudaMalloc(&t_.scales, t_.scale_bytes_total()));
  fill_random_bytes(t_.data, t_.data_bytes(), seed, 0, 255, s);
  if (f == Fp4Format::kNVFP4) {
    fill_random_bytes(t_.scales, t_.scale_bytes_total(), seed + 1, 0x30, 0x48, s);  // E4M3 0.5 .. 4
    FP4MOE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&t_.global_scale), sizeof(float) * groups));
    // (FC1's tokens: 2^-9, so that a gate's spread is a few units: ScaleData::kGates.)
    std::vector<float> global(static_cast<std::size_t>(groups), data == ScaleData::kGates ? 0x1p-9f : 1.0f);
    detail::upload(t_.global_scale, global.data(), sizeof(float) * groups, s);
  } else {
    if (data == ScaleData::kGates) {
      fill_random_bytes(t_.scales, t_.scale_bytes_total(), seed + 1, 119, 123, s);  // 2^-8 .. 2^-4
    } else if (data == ScaleData::kWeights) {
      fill_random_bytes(t_.scales, t_.scale_bytes_total(), seed + 1, 118, 128, s);  // 2^-9 .. 2^1
    } else {
      fill_random_bytes(t_.scales, t_.scale_bytes_total(), seed + 1, 120, 130, s);  // 2^-7 .. 2^3
    }
  }
}

DeviceFp4Tensor::~DeviceFp4Tensor() {
  cudaFree(t_.data);
  cudaFree(t_.scales);
  cudaFree(t_.global_scale);
}

DeviceAlloc::DeviceAlloc(std::size_t bytes) { FP4MOE_CUDA_CHECK(cudaMalloc(&p, bytes)); }
DeviceAlloc::~DeviceAlloc() { cudaFree(p); }

}  // namespace fp4moe::bench
