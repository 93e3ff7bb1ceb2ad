// Facts about the current CUDA device (the SM count cached once per device)
// and about a stream: its device, whether it captures.
#pragma once

#include <cuda_runtime_api.h>

namespace fp4moe::detail {

/// Multiprocessor count of the current device.
int current_device_sm_count();
/// Index of the current device.
int current_device();
/// The legacy default stream (nullptr, cudaStreamLegacy) and
/// cudaStreamPerThread: handles that name the current device's stream,
/// whichever device is current.
inline bool follows_current_device(cudaStream_t stream) {
  return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
}
/// Index of the device `stream` belongs to. Not while `stream` captures:
/// CUDA refuses the query then, and the refusal invalidates the capture.
int stream_device(cudaStream_t stream);
/// Whether `stream` is capturing a CUDA graph.
bool stream_capturing(cudaStream_t stream);

}  // namespace fp4moe::detail
