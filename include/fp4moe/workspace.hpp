// The device memory the library keeps per stream, and how to give it back.
//
// Split-K and stream-K partial sums, their tile counters, and the gathered
// moe_dense_fc2 formulation's BF16 copy of the tokens (about four times A's
// FP4 bytes) live in buffers the library allocates per (device, stream) on
// the first call that needs them, grows when a call needs more, and
// otherwise keeps until the process ends. cudaStreamPerThread gives each
// thread a buffer of its own. Making or freeing a buffer for a stream that
// is not capturing does not disturb another thread's graph capture. An engine that retires a stream, or
// wants the memory back between phases, releases them here; the next call
// that needs a buffer allocates it again (which synchronises, so not during
// CUDA-graph capture: run the call once before capturing).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace fp4moe {

/// Bytes the library holds for `stream` on the current device (0 if none).
std::size_t workspace_bytes(cudaStream_t stream);

/// Waits for the work queued on `stream`, then frees the library's buffers
/// for `stream` on the current device and returns how many bytes it freed
/// (no other stream's work uses them).
///   - Call it before cudaStreamDestroy: the buffers are keyed by the stream
///     handle, which a later cudaStreamCreate may return again, and the
///     handle passed here must still be a live stream.
///   - Not concurrently with a library call on the same stream (that call's
///     kernels may be queued after the wait).
///   - A buffer that a CUDA graph was captured with stays allocated until
///     the process ends, even once the graph is destroyed (the library
///     cannot tell), and is not counted as freed; the stream gets a new one
///     when it next needs one. So a loop of warm-up, capture and release
///     keeps one buffer a capture.
///   - Refused (InvalidArgument) while `stream` itself is capturing.
std::size_t release_workspace(cudaStream_t stream);

}  // namespace fp4moe
