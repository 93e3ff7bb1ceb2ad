// The name and multiprocessor count of a CUDA device, queried once per device
// (a tuning cache belongs to one kind of device).
#pragma once

#include <string>

namespace fp4moe::detail {

struct DeviceIdentity {
  std::string name;  ///< cudaDeviceProp::name, e.g. "NVIDIA H200"
  int sm_count = 0;
  bool operator==(const DeviceIdentity&) const = default;
};

/// Identity of device `device` (cached after the first query; throws
/// CudaError when the device cannot be queried).
const DeviceIdentity& device_identity(int device);

}  // namespace fp4moe::detail
