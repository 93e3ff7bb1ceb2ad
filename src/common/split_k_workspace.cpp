#include "common/split_k_workspace.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "fp4moe/error.hpp"

namespace fp4moe::detail {
namespace {

/// One per-stream buffer of kParts parts, each 256-byte aligned; part 0 is
/// zeroed when the buffer is made (split-K's tile counters).
template <std::size_t kParts>
struct Buffer {
  void* base = nullptr;
  std::array<std::size_t, kParts> bytes{};
  bool in_graph = false;  ///< handed to a call under capture: a graph holds its address
};

constexpr std::size_t align256(std::size_t x) { return (x + 255) / 256 * 256; }

/// The key of a stream's buffers: the device, the handle, and for
/// cudaStreamPerThread (one handle for every thread's own stream) the
/// thread. (Not cudaStreamGetId's unique ID: a query the capture rules may
/// not allow while the stream captures, and the key is needed then.)
using StreamKey = std::tuple<int, cudaStream_t, std::thread::id>;
StreamKey key_of(cudaStream_t stream) {
  return {current_device(), stream, stream == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id{}};
}

/// This thread in relaxed capture mode while it lives: a buffer made or
/// freed for a stream that is not capturing must not fail (nor invalidate)
/// another thread's capture in global mode, which prohibits cudaMalloc and
/// cudaFree process-wide.
class RelaxedCapture {
 public:
  RelaxedCapture() { FP4MOE_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode_)); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

std::recursive_mutex& workspace_mutex() {
  static std::recursive_mutex m;
  return m;
}
std::vector<void*>& kept_buffers() {  // outgrown buffers a captured graph may still use: never freed
  static std::vector<void*> kept;
  return kept;
}

/// The buffers of one kind, by (device, stream); they live until
/// release_workspace or the process's end. Use with the mutex held.
template <int Kind, std::size_t kParts>
std::map<StreamKey, Buffer<kParts>>& buffers_of_kind() {
  static std::map<StreamKey, Buffer<kParts>> buffers;
  return buffers;
}
// The two kinds: split-K's [counters | scratch | partials], and the gathered
// moe_dense_fc2 formulation's copy of the tokens.
constexpr int kSplitK = 0, kGather = 1;
constexpr std::size_t kSplitKParts = 3, kGatherParts = 1;

/// The buffer of kind `Kind` for (current device, stream), at least `need`
/// bytes per part; returns each part's address. Call with the mutex held.
template <int Kind, std::size_t kParts>
std::array<char*, kParts> reserve(cudaStream_t stream, const std::array<std::size_t, kParts>& need, const char* who) {
  Buffer<kParts>& b = buffers_of_kind<Kind, kParts>()[key_of(stream)];
  const bool under_capture = stream_capturing(stream);
  bool short_of = false;
  for (std::size_t i = 0; i < kParts; ++i) short_of |= b.bytes[i] < align256(need[i]);
  if (short_of) {
    if (under_capture)
      throw Error(std::string(who) + ": the library's workspace for this stream must grow, which cannot happen during "
                  "CUDA-graph capture; run the same call once before capturing");
    // Grow what is short with headroom, so a sequence of slightly larger
    // calls does not reallocate each time; keep the rest as it is (doubling
    // every part whenever one grew took a GPU tests' sequence of calls to
    // 100+ GB). cudaFree waits for work still using the old one; a buffer a
    // graph was captured with stays allocated, since the graph replays with
    // its address.
    const RelaxedCapture relaxed;
    std::array<std::size_t, kParts> want{};
    std::size_t total = 0;
    for (std::size_t i = 0; i < kParts; ++i) {
      const std::size_t n = align256(need[i]);
      want[i] = b.bytes[i] >= n ? b.bytes[i] : align256(std::max(n, b.bytes[i] * 2));
      total += want[i];
    }
    if (b.base && b.in_graph) kept_buffers().push_back(b.base);
    else if (b.base) FP4MOE_CUDA_CHECK(cudaFree(b.base));
    b = Buffer<kParts>{};
    FP4MOE_CUDA_CHECK(cudaMalloc(&b.base, std::max<std::size_t>(total, 256)));
    FP4MOE_CUDA_CHECK(cudaMemsetAsync(b.base, 0, want[0], stream));
    b.bytes = want;  // (after the zeroing: should it fail, the next call finds the buffer short and makes it again)
  }
  if (under_capture) b.in_graph = true;
  std::array<char*, kParts> at{};
  char* p = static_cast<char*>(b.base);
  for (std::size_t i = 0; i < kParts; ++i) {
    at[i] = p;
    p += b.bytes[i];
  }
  return at;
}

template <std::size_t kParts>
std::size_t total_bytes(const Buffer<kParts>& b) {
  std::size_t total = 0;
  for (std::size_t n : b.bytes) total += n;
  return total;
}

/// Bytes of kind `Kind` held for (current device, stream). Mutex held.
template <int Kind, std::size_t kParts>
std::size_t held(cudaStream_t stream) {
  auto& buffers = buffers_of_kind<Kind, kParts>();
  const auto it = buffers.find(key_of(stream));
  return it == buffers.end() ? 0 : total_bytes(it->second);
}

/// Drops the (current device, stream) buffer of kind `Kind`: frees it, or
/// keeps it allocated where a captured graph holds its address. Returns the
/// bytes freed. Mutex held.
template <int Kind, std::size_t kParts>
std::size_t drop(cudaStream_t stream) {
  auto& buffers = buffers_of_kind<Kind, kParts>();
  const auto it = buffers.find(key_of(stream));
  if (it == buffers.end()) return 0;
  const Buffer<kParts> b = it->second;
  buffers.erase(it);
  if (!b.base) return 0;
  if (b.in_graph) {
    kept_buffers().push_back(b.base);
    return 0;
  }
  FP4MOE_CUDA_CHECK(cudaFree(b.base));
  return total_bytes(b);
}

}  // namespace

SplitKWorkspace split_k_workspace(cudaStream_t stream, std::size_t partial_floats, std::size_t counters,
                                  std::size_t scratch) {
  const std::lock_guard<std::recursive_mutex> lock(workspace_mutex());
  // [counters | scratch | partials]
  const auto at = reserve<kSplitK, kSplitKParts>(stream, {counters * 4, scratch * 4, partial_floats * 4}, "split-K");
  return {reinterpret_cast<float*>(at[2]), reinterpret_cast<std::int32_t*>(at[0]), reinterpret_cast<std::int32_t*>(at[1])};
}

std::uint8_t* gather_workspace(cudaStream_t stream, std::size_t bytes) {
  const std::lock_guard<std::recursive_mutex> lock(workspace_mutex());
  return reinterpret_cast<std::uint8_t*>(reserve<kGather, kGatherParts>(stream, {bytes}, "moe_dense_fc2 (gathered)")[0]);
}

WorkspaceHold::WorkspaceHold() : lock_(workspace_mutex()) {}
WorkspaceHold::~WorkspaceHold() = default;

std::size_t workspace_bytes(cudaStream_t stream) {
  const std::lock_guard<std::recursive_mutex> lock(workspace_mutex());
  return held<kSplitK, kSplitKParts>(stream) + held<kGather, kGatherParts>(stream);
}

std::size_t release_workspace(cudaStream_t stream) {
  if (stream_capturing(stream))
    throw InvalidArgument("release_workspace", "stream",
                          "is capturing a CUDA graph; release its workspace after the capture ends");
  // The buffers are this stream's alone: once its queued work is done,
  // nothing uses them (a captured graph's buffer is kept, in drop). The wait
  // comes before the lock, so other streams' calls do not wait for it.
  const RelaxedCapture relaxed;  // (the wait and the frees, beside another thread's capture)
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::lock_guard<std::recursive_mutex> lock(workspace_mutex());
  return drop<kSplitK, kSplitKParts>(stream) + drop<kGather, kGatherParts>(stream);
}

void destroy_own_stream(cudaStream_t stream) noexcept {
  try {
    release_workspace(stream);
  } catch (const std::exception&) {
  }
  cudaStreamDestroy(stream);
}

}  // namespace fp4moe::detail
