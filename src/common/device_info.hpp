// Cached facts about the current CUDA device (queried once per device).
#pragma once

namespace fp4moe::detail {

/// Multiprocessor count of the current device.
int current_device_sm_count();
/// Index of the current device.
int current_device();

}  // namespace fp4moe::detail
