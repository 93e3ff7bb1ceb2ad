// One library call's view of the current device.
#pragma once

namespace fp4moe::detail {

/// While a scope lives on this thread, current_device() (device_info.hpp)
/// asks CUDA once and repeats the answer. A GEMM call asked about five
/// times, ~50 ns each (docs/PERF.md stops 70-71). Every entry point holds
/// one through its ArgCheck, and nothing inside a call changes the device.
/// Scopes nest; the answer is forgotten when the outermost one ends, so the
/// next call asks again (the caller may call cudaSetDevice between calls).
class CallDeviceScope {
 public:
  CallDeviceScope() noexcept;
  ~CallDeviceScope();
  CallDeviceScope(const CallDeviceScope&) = delete;
  CallDeviceScope& operator=(const CallDeviceScope&) = delete;
};

}  // namespace fp4moe::detail
