#include "common/device_identity.hpp"

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>

#include "common/cuda_check.hpp"

namespace fp4moe::detail {

const DeviceIdentity& device_identity(int device) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<DeviceIdentity>> cache;  // entries never move or die
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[device];
  if (!slot) {
    cudaDeviceProp prop{};
    FP4MOE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    slot = std::make_unique<DeviceIdentity>(DeviceIdentity{prop.name, prop.multiProcessorCount});
  }
  return *slot;
}

}  // namespace fp4moe::detail
