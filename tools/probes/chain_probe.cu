// Chain probe (not a product tool): what a GEMM costs alone (the suites'
// measure: cold L2, CUDA events around one launch) and what it costs in a
// chain of back-to-back GEMMs, as an inference engine runs its layers: R
// launches, each on its own weights (R of them, together far past the L2,
// so each reads its weights from memory), between one pair of events after
// one L2 eviction; the chain's time over R. The gap between the two is what
// a launch costs on its own: its start, its first loads, its last round;
// programmatic dependent launch (gemm_launch.cuh) lets a GEMM's start
// overlap the end of the one before. Build it before and after a change to
// compare. Rows: decode-suite shapes (masked) and one dense decode shape.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "bench/fp4_problem.hpp"
#include "bench/timing.hpp"
#include "common/cuda_check.hpp"
#include "fp4moe/gemm.hpp"

namespace {

using namespace fp4moe;
using namespace fp4moe::bench;

constexpr int kChain = 8;
constexpr int kReps = 15;

struct Row {
  const char* name;
  bool masked;
  std::int64_t groups, m, n, k;
};

}  // namespace

int main() {
  Timer timer;
  cudaStream_t s = timer.stream();
  const Row rows[] = {
      {"decode nvfp4 G8 1x7168x2048", true, 8, 1, 7168, 2048},
      {"decode nvfp4 G8 8x4096x7168", true, 8, 8, 4096, 7168},
      {"decode nvfp4 G32 1x7168x2048", true, 32, 1, 7168, 2048},
      {"dense nvfp4 64x2112x7168", false, 1, 64, 2112, 7168},
  };
  std::printf("%-32s %12s %12s %8s   (µs; chain: %d GEMMs on distinct weights, time / %d; median of %d)\n", "row",
              "alone", "in a chain", "ratio", kChain, kChain, kReps);
  for (const Row& r : rows) {
    DeviceFp4Tensor a(Fp4Format::kNVFP4, r.m, r.k, r.groups, 11, ScaleData::kTokens, s);
    std::vector<std::unique_ptr<DeviceFp4Tensor>> b;
    for (int i = 0; i < kChain; ++i)
      b.push_back(std::make_unique<DeviceFp4Tensor>(Fp4Format::kNVFP4, r.n, r.k, r.groups, 100 + i, ScaleData::kWeights, s));
    DeviceAlloc d(static_cast<std::size_t>(r.groups * r.m * r.n * 2));
    DeviceAlloc masked(static_cast<std::size_t>(r.groups * 4));
    std::vector<std::int32_t> mm(static_cast<std::size_t>(r.groups), static_cast<std::int32_t>(r.m));
    FP4MOE_CUDA_CHECK(cudaMemcpyAsync(masked.p, mm.data(), mm.size() * 4, cudaMemcpyHostToDevice, s));
    MatrixView dv{d.p, DType::kBF16, r.m, r.n};
    dv.groups = r.groups;
    auto gemm = [&](int i, cudaStream_t st) {
      if (r.masked) {
        m_grouped_fp4_gemm_nt_masked(a.tensor(), b[i]->tensor(), dv, static_cast<const std::int32_t*>(masked.p),
                                     static_cast<int>(r.m), st);
      } else {
        fp4_gemm_nt(a.tensor(), b[i]->tensor(), dv, st);
      }
    };
    TimingOptions opt;
    opt.reps = kReps;
    const TimeStats alone = timer.time([&](cudaStream_t st) { gemm(0, st); }, opt);
    const TimeStats chain = timer.time(
        [&](cudaStream_t st) {
          for (int i = 0; i < kChain; ++i) gemm(i, st);
        },
        opt);
    const double per = chain.median_us / kChain;
    std::printf("%-32s %12.2f %12.2f %8.3f\n", r.name, alone.median_us, per, per / alone.median_us);
  }
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(s));
  return 0;
}
