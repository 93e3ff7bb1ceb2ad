// Shared helpers of the test suites: random data, owning host/device FP4
// buffers, and the GPU-availability skip.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fp4moe/tensor.hpp"

namespace fp4moe::test {

/// A seeded generator; each test gets a fresh seed (printed on failure) unless
/// FP4MOE_TEST_SEED is set.
class Rng {
 public:
  Rng();
  std::uint64_t seed() const { return seed_; }
  std::mt19937_64& engine() { return eng_; }
  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(eng_); }
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {  // inclusive
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(eng_);
  }
  float normal(float sigma = 1.0f) { return std::normal_distribution<float>(0.0f, sigma)(eng_); }

 private:
  std::uint64_t seed_;
  std::mt19937_64 eng_;
};

/// Owns host storage for an Fp4Tensor.
struct HostFp4 {
  std::vector<std::uint8_t> data, scales;
  std::vector<float> global;
  Fp4Tensor t;
  HostFp4(Fp4Format f, ScaleLayout l, std::int64_t rows, std::int64_t cols, std::int64_t groups = 1);
  HostFp4(const HostFp4&) = delete;
  HostFp4& operator=(const HostFp4&) = delete;
};

/// Kinds of random FP4 content.
enum class Fp4Content {
  kRandom,         ///< every E2M1 code, random block scales over a wide range
  kIntegerValued,  ///< decoded values are integers: sums are exact in FP32
};

/// Fills codes, block scales (padding of tiled layouts stays 0) and global
/// scales of `h` at random.
void fill_random(HostFp4& h, Rng& rng, Fp4Content content = Fp4Content::kRandom);

/// Random floats, normal with per-row magnitudes spread over several decades.
std::vector<float> random_matrix(Rng& rng, std::int64_t rows, std::int64_t cols, float spread_decades = 3);

std::vector<std::uint16_t> to_bf16(const std::vector<float>& x);

/// Whether a CUDA device is usable; the reason otherwise.
bool gpu_available(std::string* why = nullptr);

/// Whether GPU tests must fail rather than skip without a usable GPU
/// (FP4MOE_TEST_REQUIRE_GPU set and not "0"; the device scripts set it, so a
/// GPU machine whose CUDA does not start cannot report a green suite of skips).
bool gpu_required();

/// Whether the suite runs under compute-sanitizer (FP4MOE_TEST_UNDER_SANITIZER
/// set and not "0"; scripts/device_suite_shards.sh sets it with TOOL). The
/// tool serialises and checks every access, so a test that repeats a
/// launch many times to catch a rare timing runs it once, and a test that
/// races on purpose (to print what the race costs) leaves that part out.
bool under_sanitizer();

/// Under a sanitizer only: prints `what` and flushes, so a long test the
/// tool stops at a time limit shows how far it got (its cases ran clean).
void sanitizer_progress(const std::string& what);

/// A CUDA graph of what `record` enqueues on `stream` (global capture
/// mode), instantiated; owns both. ok() is false (with a test failure
/// recorded) if the capture or the instantiation failed.
class CapturedGraph {
 public:
  CapturedGraph(cudaStream_t stream, const std::function<void()>& record);
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  bool ok() const { return exec_ != nullptr; }
  cudaError_t launch(cudaStream_t stream) const { return cudaGraphLaunch(exec_, stream); }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

/// Releases the library's buffers for `stream` (fp4moe/workspace.hpp), then
/// destroys it: a handle a later test's cudaStreamCreate gets back then
/// starts with none.
void destroy_stream(cudaStream_t stream);

/// `bytes` of device memory at `p`, copied to the host as Ts (the caller has
/// synchronised the stream that wrote them).
template <class T>
std::vector<T> download_as(const void* p, std::size_t bytes) {
  std::vector<T> h(bytes / sizeof(T));
  EXPECT_EQ(cudaMemcpy(h.data(), p, h.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

/// RAII device buffer.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count = 0) { resize(count); }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void resize(std::size_t count) {
    cudaFree(ptr_);
    ptr_ = nullptr;
    count_ = count;
    if (count) {
      EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T)), cudaSuccess);
    }
  }
  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }
  // Both complete before returning: cudaMemcpy from pageable memory and
  // cudaMemset may return early, and a non-blocking stream does not wait for them.
  void upload(const std::vector<T>& h) {
    ASSERT_EQ(cudaMemcpy(ptr_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> h(count_);
    EXPECT_EQ(cudaMemcpy(h.data(), ptr_, count_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  void fill_bytes(int byte) {
    ASSERT_EQ(cudaMemset(ptr_, byte, count_ * sizeof(T)), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

/// Device mirror of a HostFp4 (same shape), with copies both ways.
struct DeviceFp4 {
  DeviceBuffer<std::uint8_t> data, scales;
  DeviceBuffer<float> global;
  Fp4Tensor t;
  explicit DeviceFp4(const HostFp4& like);
  void upload(const HostFp4& h);
  void download(HostFp4& h) const;
  void poison();  ///< 0xA5 everywhere, so unwritten bytes show
};

}  // namespace fp4moe::test

/// Skips the current test (with the reason) where no CUDA device is usable;
/// fails it instead where the GPU is required (test::gpu_required).
#define FP4MOE_REQUIRE_GPU()                                                   \
  do {                                                                         \
    std::string why_;                                                          \
    if (!::fp4moe::test::gpu_available(&why_)) {                               \
      if (::fp4moe::test::gpu_required()) FAIL() << "GPU required: " << why_;  \
      GTEST_SKIP() << why_;                                                    \
    }                                                                          \
  } while (0)

namespace fp4moe::test {

/// Sets element (group, row, k) of a host FP4 tensor to E2M1 code `code`.
void set_code(HostFp4& h, std::int64_t group, std::int64_t row, std::int64_t k, unsigned code);
/// Sets every element of a row to `code`.
void set_row_codes(HostFp4& h, std::int64_t group, std::int64_t row, unsigned code);
/// Sets block scale (group, row, block) to the raw code.
void set_scale(HostFp4& h, std::int64_t group, std::int64_t row, std::int64_t block, std::uint8_t code);
/// Sets every block scale of every row to `code`.
void set_all_scales(HostFp4& h, std::uint8_t code);

}  // namespace fp4moe::test
