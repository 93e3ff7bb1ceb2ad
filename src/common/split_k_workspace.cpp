#include "common/split_k_workspace.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "fp4moe/error.hpp"

namespace fp4moe::detail {
namespace {

struct Buffer {
  void* base = nullptr;
  std::size_t partial_floats = 0;
  std::size_t counters = 0;
  std::size_t scratch = 0;
  bool in_graph = false;  ///< handed to a call under capture: a graph holds its address
};

constexpr std::size_t align_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  FP4MOE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  return capture != cudaStreamCaptureStatusNone;
}

}  // namespace

SplitKWorkspace split_k_workspace(cudaStream_t stream, std::size_t partial_floats, std::size_t counters,
                                  std::size_t scratch) {
  static std::mutex mutex;
  static std::map<std::pair<int, cudaStream_t>, Buffer> buffers;  // lives as long as the process
  static std::vector<void*> kept;  // outgrown buffers a captured graph may still use: never freed
  const std::lock_guard<std::mutex> lock(mutex);
  Buffer& b = buffers[{current_device(), stream}];
  const bool under_capture = capturing(stream);
  if (b.partial_floats < partial_floats || b.counters < counters || b.scratch < scratch) {
    if (under_capture)
      throw Error("split-K: the library's workspace for this stream must grow, which cannot happen during CUDA-graph "
                  "capture; run the same call once before capturing");
    // Grow what is short with headroom, so a sequence of slightly larger
    // calls does not reallocate each time; keep the rest as it is (doubling
    // every part whenever one grew took a GPU tests' sequence of calls to
    // 100+ GB). cudaFree waits for work still using the old one; a buffer a
    // graph was captured with stays allocated, since the graph replays with
    // its address.
    auto grown = [](std::size_t have, std::size_t need) { return have >= need ? have : std::max(need, have * 2); };
    const std::size_t want_partials = grown(b.partial_floats, partial_floats);
    const std::size_t want_counters = grown(b.counters, counters);
    const std::size_t want_scratch = grown(b.scratch, scratch);
    if (b.base && b.in_graph) kept.push_back(b.base);
    else if (b.base) FP4MOE_CUDA_CHECK(cudaFree(b.base));
    b = Buffer{};
    // [counters | scratch | partials]
    const std::size_t counter_bytes = align_up(want_counters * 4, 256), scratch_bytes = align_up(want_scratch * 4, 256);
    FP4MOE_CUDA_CHECK(cudaMalloc(&b.base, counter_bytes + scratch_bytes + want_partials * 4));
    FP4MOE_CUDA_CHECK(cudaMemsetAsync(b.base, 0, counter_bytes, stream));
    b.partial_floats = want_partials;
    b.counters = want_counters;
    b.scratch = want_scratch;
  }
  if (under_capture) b.in_graph = true;
  char* base = static_cast<char*>(b.base);
  const std::size_t counter_bytes = align_up(b.counters * 4, 256), scratch_bytes = align_up(b.scratch * 4, 256);
  return {reinterpret_cast<float*>(base + counter_bytes + scratch_bytes), reinterpret_cast<std::int32_t*>(base),
          reinterpret_cast<std::int32_t*>(base + counter_bytes)};
}

}  // namespace fp4moe::detail
