// Device operands of one FP4 GEMM benchmark problem, filled with random data
// (every E2M1 code; block scales over a moderate range; unit global scales).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "fp4moe/tensor.hpp"

namespace fp4moe::bench {

class DeviceFp4Tensor {
 public:
  DeviceFp4Tensor(Fp4Format f, std::int64_t rows, std::int64_t cols, std::int64_t groups, std::uint64_t seed,
                  cudaStream_t s);
  ~DeviceFp4Tensor();
  DeviceFp4Tensor(const DeviceFp4Tensor&) = delete;
  DeviceFp4Tensor& operator=(const DeviceFp4Tensor&) = delete;
  const Fp4Tensor& tensor() const { return t_; }
  /// Bytes of data and scales: what a GEMM must read.
  double bytes() const { return double(t_.data_bytes() + t_.scale_bytes_total()); }

 private:
  Fp4Tensor t_;
};

/// A device buffer freed on destruction.
struct DeviceAlloc {
  void* p = nullptr;
  explicit DeviceAlloc(std::size_t bytes);
  ~DeviceAlloc();
  DeviceAlloc(const DeviceAlloc&) = delete;
  DeviceAlloc& operator=(const DeviceAlloc&) = delete;
};

}  // namespace fp4moe::bench
