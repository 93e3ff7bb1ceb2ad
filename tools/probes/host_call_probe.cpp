// Host call probe (not a product tool): what an entry point costs the calling
// thread, and what of it the stream rule (the stream's device against the
// current one: two CUDA queries for a created stream, none for the default
// streams) adds. Times, per call, on the host clock:
//   - the stream rule's queries alone, on a created stream;
//   - fp4_gemm_nt enqueued (NVFP4 8 x 128 x 256, the heuristic's tactic) on
//     the legacy default stream and on a created stream.
// Calls go in batches of 256 with a synchronisation between batches, so the
// launch queue never fills and the time is the host's, not the GPU's.
// Run on the GPU machine: build/tools/fp4moe_host_call_probe.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "common/device_info.hpp"
#include "fp4moe/gemm.hpp"
#include "fp4moe/scale_layout.hpp"

namespace {

#define CHECK(x)                                                   \
  do {                                                             \
    const cudaError_t e = (x);                                     \
    if (e != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); \
      std::exit(1);                                                \
    }                                                              \
  } while (0)

/// Device bytes with random content (the GEMM's inputs; their values do not
/// change the host's work, but nothing here runs on zeros).
void* random_device_bytes(std::size_t n, std::mt19937& rng) {
  std::vector<std::uint8_t> h(n);
  for (auto& b : h) b = static_cast<std::uint8_t>(rng());
  void* p = nullptr;
  CHECK(cudaMalloc(&p, n));
  CHECK(cudaMemcpy(p, h.data(), n, cudaMemcpyHostToDevice));
  return p;
}

/// Median over rounds of the host nanoseconds a call of `f` takes.
double ns_per_call(const std::function<void()>& f, cudaStream_t sync_on) {
  constexpr int kBatch = 256, kRounds = 41;
  std::vector<double> per_call;
  for (int r = 0; r < kRounds; ++r) {
    CHECK(cudaStreamSynchronize(sync_on));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    if (r > 0) per_call.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kBatch);
  }
  CHECK(cudaStreamSynchronize(sync_on));
  std::nth_element(per_call.begin(), per_call.begin() + per_call.size() / 2, per_call.end());
  return per_call[per_call.size() / 2];
}

}  // namespace

int main() {
  using namespace fp4moe;
  std::mt19937 rng(20261129);
  constexpr std::int64_t m = 8, n = 128, k = 256;
  Fp4Tensor a, b;
  a.format = b.format = Fp4Format::kNVFP4;
  a.scale_layout = b.scale_layout = ScaleLayout::kTiled128x4;
  a.rows = m;
  b.rows = n;
  a.cols = b.cols = k;
  a.data = random_device_bytes(static_cast<std::size_t>(a.data_bytes()), rng);
  b.data = random_device_bytes(static_cast<std::size_t>(b.data_bytes()), rng);
  // Block scales 2^-1..2^1 as E4M3 bytes (0x30, 0x38, 0x40), global scales 1.
  for (Fp4Tensor* t : {&a, &b}) {
    std::vector<std::uint8_t> s(static_cast<std::size_t>(t->scale_bytes_total()));
    for (auto& v : s) v = static_cast<std::uint8_t>(0x30 + 8 * (rng() % 3));
    CHECK(cudaMalloc(&t->scales, s.size()));
    CHECK(cudaMemcpy(t->scales, s.data(), s.size(), cudaMemcpyHostToDevice));
    float one = 1.0f;
    void* g = nullptr;
    CHECK(cudaMalloc(&g, sizeof one));
    CHECK(cudaMemcpy(g, &one, sizeof one, cudaMemcpyHostToDevice));
    t->global_scale = static_cast<float*>(g);
  }
  void* out = nullptr;
  CHECK(cudaMalloc(&out, m * n * 4));
  const MatrixView d{out, DType::kFP32, m, n};
  cudaStream_t created = nullptr;
  CHECK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));

  volatile int sink = 0;
  const double query = ns_per_call([&] { sink = detail::stream_device(created) == detail::current_device(); }, created);
  const double on_default = ns_per_call([&] { fp4_gemm_nt(a, b, d, nullptr); }, nullptr);
  const double on_created = ns_per_call([&] { fp4_gemm_nt(a, b, d, created); }, created);
  std::printf("host ns a call (median of 40 batches of 256):\n");
  std::printf("  stream rule's queries (created stream)  %8.1f\n", query);
  std::printf("  fp4_gemm_nt on the legacy default stream %8.1f\n", on_default);
  std::printf("  fp4_gemm_nt on a created stream          %8.1f\n", on_created);
  CHECK(cudaStreamDestroy(created));
  return sink < 0;
}
