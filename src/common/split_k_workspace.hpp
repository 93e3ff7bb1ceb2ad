// Device scratch for split-K, owned by the library so callers never allocate
// or pre-zero anything: one buffer per (device, stream), so concurrent calls
// on different streams never share partials. cudaStreamPerThread, one handle
// for a different stream in every thread, has a buffer per thread.
//
// The buffer grows on demand, which allocates (and therefore synchronises):
// the first split-K call on a stream, or one needing more than any before
// it. During CUDA-graph capture growing is refused with a clear error, so run
// the call once before capturing. A buffer a graph was captured with is
// never freed when a later call outgrows it (the graph replays with its
// address). A graph uses the workspace of the stream it was captured on: do
// not replay it on another stream concurrently with split-K calls on that
// one. The tile counters are zeroed when the buffer is made and every call
// leaves them zero again. The scratch integers (weighted stream-K's token
// block counts) are written by each call before its GEMM reads them. The
// gathered moe_dense_fc2 formulation keeps its copy of the tokens in a
// second buffer per (device, stream) with the same rules (and a call split
// at 96 tokens its second call's block scales, moved to a band start). Both live until
// release_workspace(stream) or the process's end.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace fp4moe::detail {

/// Held by a call from its first reservation to its last launch: growing a
/// buffer frees the old one, and another thread's growth (of the same
/// stream's buffer) must not come between a reservation and the launch that
/// uses its address. (The workspace's one lock, recursive: the reservations
/// inside take it again. Launches are asynchronous, so it is held for
/// microseconds.)
class WorkspaceHold {
 public:
  WorkspaceHold();
  ~WorkspaceHold();
  WorkspaceHold(const WorkspaceHold&) = delete;
  WorkspaceHold& operator=(const WorkspaceHold&) = delete;

 private:
  std::unique_lock<std::recursive_mutex> lock_;
};

struct SplitKWorkspace {
  float* partials;
  std::int32_t* counters;
  std::int32_t* scratch;
};

/// At least `partial_floats` floats, `counters` zeroed counters and
/// `scratch` integers for a call on `stream` of the current device. The
/// address stays valid while the caller holds a WorkspaceHold taken before.
SplitKWorkspace split_k_workspace(cudaStream_t stream, std::size_t partial_floats, std::size_t counters,
                                  std::size_t scratch = 0);

/// At least `bytes` (256-byte aligned) for the gathered moe_dense_fc2
/// formulation's copy of each expert's tokens, on `stream` of the current
/// device, under the same rules. A buffer of its own: the same call also
/// takes split-K's, and growing one must not move the other.
std::uint8_t* gather_workspace(cudaStream_t stream, std::size_t bytes);

/// fp4moe::workspace_bytes and fp4moe::release_workspace (fp4moe/workspace.hpp).
std::size_t workspace_bytes(cudaStream_t stream);
std::size_t release_workspace(cudaStream_t stream);

/// Releases the buffers of a stream the library (or its tools) created and
/// destroys it, before its handle can come back for another stream. Never
/// throws: in a failed context there is nothing more to free.
void destroy_own_stream(cudaStream_t stream) noexcept;

}  // namespace fp4moe::detail
