// Host call probe (not a product tool): what an entry point costs the
// calling thread, piece by piece. Times, per call, on the host clock:
//   - the CUDA queries an entry point makes (cudaGetDevice; the stream
//     rule's: is the stream capturing, its device);
//   - the planning: the tuning-cache lookup, the heuristic and its check;
//   - a TMA descriptor encoded; cudaFuncSetAttribute; an empty kernel
//     launched with cudaLaunchKernelEx and the PDL attribute, as the GEMMs are;
//   - fp4_gemm_nt whole (NVFP4 8 x 128 x 256, FP32 out), on the legacy
//     default stream, on a created stream, and with the tactic forced.
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

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "fp4moe/gemm.hpp"
#include "kernels/sm90/tensor_map.hpp"
#include "tuning/runtime_cache.hpp"
#include "tuning/tactic_space.hpp"

namespace {

__global__ void empty_kernel(int* sink) {
  if (sink && threadIdx.x == 1024) *sink = 1;
}

/// Device bytes with random content (the GEMM's inputs; their values do not
/// change the host's work, but nothing here runs on zeros).
void* random_device_bytes(std::size_t n, std::mt19937& rng) {
  std::vector<std::uint8_t> h(n);
  for (auto& b : h) b = static_cast<std::uint8_t>(rng());
  void* p = nullptr;
  FP4MOE_CUDA_CHECK(cudaMalloc(&p, n));
  FP4MOE_CUDA_CHECK(cudaMemcpy(p, h.data(), n, cudaMemcpyHostToDevice));
  return p;
}

/// Median over rounds of the host nanoseconds a call of `f` takes.
double ns_per_call(const std::function<void()>& f, cudaStream_t sync_on) {
  constexpr int kBatch = 256, kRounds = 41;
  std::vector<double> per_call;
  for (int r = 0; r < kRounds; ++r) {
    FP4MOE_CUDA_CHECK(cudaStreamSynchronize(sync_on));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    if (r > 0) per_call.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kBatch);
  }
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(sync_on));
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
    FP4MOE_CUDA_CHECK(cudaMalloc(&t->scales, s.size()));
    FP4MOE_CUDA_CHECK(cudaMemcpy(t->scales, s.data(), s.size(), cudaMemcpyHostToDevice));
    float one = 1.0f;
    void* g = nullptr;
    FP4MOE_CUDA_CHECK(cudaMalloc(&g, sizeof one));
    FP4MOE_CUDA_CHECK(cudaMemcpy(g, &one, sizeof one, cudaMemcpyHostToDevice));
    t->global_scale = static_cast<float*>(g);
  }
  void* out = nullptr;
  FP4MOE_CUDA_CHECK(cudaMalloc(&out, m * n * 4));
  const MatrixView d{out, DType::kFP32, m, n};
  cudaStream_t created = nullptr;
  FP4MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));

  const TuneShape call{GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kFP32, m, n, k, 1};
  tuning::ProblemShape shape = tuning::problem_shape(call);
  shape.sm_count = detail::current_device_sm_count();
  const GemmTactic picked = tuning::pick_tactic(shape);
  GemmOptions forced;
  forced.tactic = &picked;

  cudaLaunchAttribute pdl{};
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(132);
  cfg.blockDim = dim3(384);
  cfg.stream = created;
  cfg.attrs = &pdl;
  cfg.numAttrs = 1;
  int* no_sink = nullptr;

  volatile std::int64_t sink = 0;
  struct Row {
    const char* what;
    std::function<void()> f;
    cudaStream_t sync;
  };
  const Row rows[] = {
      {"cudaGetDevice", [&] { sink = detail::current_device(); }, created},
      {"stream rule: capturing? + its device", [&] { sink = detail::stream_capturing(created) + detail::stream_device(created); }, created},
      {"tuning-cache lookup", [&] { sink = reinterpret_cast<std::intptr_t>(tuning::runtime_cache().lookup(0, tuning::key_of(call))); }, created},
      {"heuristic: pick_tactic + check_tactic", [&] { sink = tuning::check_tactic(shape, tuning::pick_tactic(shape)).ok(); }, created},
      {"TMA descriptor encoded", [&] { sink = kernels::make_fp4_tensor_map(b.data, n, k, 128, 256).opaque[0]; }, created},
      {"cudaFuncSetAttribute (smem)",
       [&] { FP4MOE_CUDA_CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024)); }, created},
      {"empty kernel, cudaLaunchKernelEx + PDL", [&] { FP4MOE_CUDA_CHECK(cudaLaunchKernelEx(&cfg, empty_kernel, no_sink)); }, created},
      {"fp4_gemm_nt, legacy default stream", [&] { fp4_gemm_nt(a, b, d, nullptr); }, nullptr},
      {"fp4_gemm_nt, created stream", [&] { fp4_gemm_nt(a, b, d, created); }, created},
      {"fp4_gemm_nt, created stream, tactic forced", [&] { fp4_gemm_nt(a, b, d, created, forced); }, created},
  };
  std::printf("host ns a call (median of 40 batches of 256); the heuristic's tactic: %s\n", picked.name().c_str());
  for (const Row& r : rows) std::printf("  %-45s %9.1f\n", r.what, ns_per_call(r.f, r.sync));
  FP4MOE_CUDA_CHECK(cudaStreamDestroy(created));
  return sink == -12345;
}
