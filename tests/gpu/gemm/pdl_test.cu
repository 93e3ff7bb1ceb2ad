// Programmatic dependent launch: every GEMM is launched so that it may be
// scheduled while the kernel before it in the stream still runs
// (gemm_launch.cuh), and waits for that kernel before its first global
// access (ptx/grid_dependency.cuh). Here the kernel before it (one warp, so
// the GEMM's CTAs find every other SM free) lets its dependents be
// scheduled at once, then spins ~1 ms and only then writes the GEMM's
// inputs (they hold other values until then): a GEMM that read anything
// before its wait would compute from the stale inputs and miss the
// reference. (With the wait compiled out these tests fail: checked on an
// H200, docs/PERF.md stop 41.) Dense (A late), masked (A and masked_m late; masked_m is
// read in the prologue), and the dense case captured in a CUDA graph and
// replayed (programmatic edges).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fp4moe/gemm.hpp"
#include "gemm/gemm_test_util.hpp"
#include "kernels/sm90/ptx/grid_dependency.cuh"
#include "kernels/sm90/ptx/timer.cuh"
#include "reference/reference_gemm.hpp"
#include "support/test_support.hpp"

namespace fp4moe {
namespace {

// Far longer than the GEMMs here run, and than the host takes to launch one
// once it is planned (each test runs its GEMM once first, untimed: planning).
constexpr unsigned long long kLateNs = 1000000;

struct Copy {
  const std::uint8_t* src;
  std::uint8_t* dst;
  std::int64_t bytes;
};

/// Lets its dependents be scheduled, waits kLateNs, then does the copies.
__global__ void late_copies(Copy c0, Copy c1, Copy c2) {
  ptx::launch_dependents();
  const unsigned long long t0 = ptx::global_timer_ns();
  while (ptx::global_timer_ns() < t0 + kLateNs) {
  }
  const Copy copies[3] = {c0, c1, c2};
  for (const Copy& c : copies)
    for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < c.bytes;
         i += std::int64_t(gridDim.x) * blockDim.x)
      c.dst[i] = c.src[i];
}

class Stream {
 public:
  Stream() { EXPECT_EQ(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), cudaSuccess); }
  ~Stream() { test::destroy_stream(s_); }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

/// The operands of one case: B uploaded, A's real bytes in a staging copy
/// and A itself holding other (valid, random) bytes until late_copies runs.
struct LateOperands {
  test::HostFp4 a, b;
  test::DeviceFp4 da, db, staged;
  LateOperands(test::Rng& rng, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t groups, std::int64_t b_groups)
      : a(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, m, k, groups),
        b(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, n, k, b_groups),
        da(a),
        db(b),
        staged(a) {
    test::fill_random(a, rng);
    test::fill_random(b, rng);
    staged.upload(a);
    db.upload(b);
    test::HostFp4 stale(Fp4Format::kNVFP4, ScaleLayout::kTiled128x4, m, k, groups);
    test::fill_random(stale, rng);
    stale.global = a.global;  // (the global scales are not written late)
    da.upload(stale);
  }
  Copy data() const { return {staged.data.get(), da.data.get(), static_cast<std::int64_t>(da.data.size())}; }
  Copy scales() const { return {staged.scales.get(), da.scales.get(), static_cast<std::int64_t>(da.scales.size())}; }
};

void expect_matches(const std::string& what, const std::vector<double>& ref, const test::DeviceBuffer<std::uint8_t>& d,
                    std::int64_t groups, std::int64_t rows, std::int64_t cols,
                    std::function<bool(std::int64_t, std::int64_t)> written = nullptr) {
  test::OutputCheck check;
  check.out = DType::kFP32;
  check.groups = groups;
  check.rows = rows;
  check.cols = cols;
  check.ld = cols;
  check.written = std::move(written);
  test::expect_gemm_ok_for(what, DType::kFP32, test::Fp4Content::kRandom, test::compare_output(ref, d.download(), check));
}

TEST(Pdl, DenseGemmWaitsForALateWriterOfA) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const std::int64_t m = 64, n = 512, k = 1024;
  LateOperands ops(rng, m, n, k, 1, 1);
  const std::vector<double> ref = reference::gemm_nt(ops.a.t, ops.b.t);
  test::DeviceBuffer<std::uint8_t> d(static_cast<std::size_t>(m * n * 4));
  d.fill_bytes(0xff);
  Stream s;
  fp4_gemm_nt(ops.da.t, ops.db.t, MatrixView{d.get(), DType::kFP32, m, n}, s.get());  // planned, on stale A
  ASSERT_EQ(cudaStreamSynchronize(s.get()), cudaSuccess);
  d.fill_bytes(0xff);
  late_copies<<<1, 32, 0, s.get()>>>(ops.data(), ops.scales(), Copy{nullptr, nullptr, 0});
  fp4_gemm_nt(ops.da.t, ops.db.t, MatrixView{d.get(), DType::kFP32, m, n}, s.get());
  ASSERT_EQ(cudaStreamSynchronize(s.get()), cudaSuccess);
  expect_matches("dense 64x512x1024 after a late writer (seed " + std::to_string(rng.seed()) + ")", ref, d, 1, m, n);
}

TEST(Pdl, MaskedGemmWaitsForALateWriterOfAAndMaskedM) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const std::int64_t groups = 4, m = 16, n = 512, k = 1024;
  LateOperands ops(rng, m, n, k, groups, groups);
  const std::vector<std::int32_t> masked_m = {16, 3, 0, 9};
  std::vector<double> ref(static_cast<std::size_t>(groups * m * n));
  reference::grouped_masked(ops.a.t, ops.b.t, masked_m.data(), ref.data());
  test::DeviceBuffer<std::int32_t> staged_mm(masked_m.size()), mm(masked_m.size());
  staged_mm.upload(masked_m);
  mm.upload(std::vector<std::int32_t>(masked_m.size(), 0));  // until the late write: no rows at all
  test::DeviceBuffer<std::uint8_t> d(static_cast<std::size_t>(groups * m * n * 4));
  d.fill_bytes(0xff);
  Stream s;
  MatrixView dv{d.get(), DType::kFP32, m, n};
  dv.groups = groups;
  m_grouped_fp4_gemm_nt_masked(ops.da.t, ops.db.t, dv, mm.get(), 16, s.get());  // planned; masked_m 0 writes nothing
  ASSERT_EQ(cudaStreamSynchronize(s.get()), cudaSuccess);
  late_copies<<<1, 32, 0, s.get()>>>(ops.data(), ops.scales(),
                                     Copy{reinterpret_cast<const std::uint8_t*>(staged_mm.get()),
                                          reinterpret_cast<std::uint8_t*>(mm.get()),
                                          static_cast<std::int64_t>(masked_m.size() * 4)});
  m_grouped_fp4_gemm_nt_masked(ops.da.t, ops.db.t, dv, mm.get(), 16, s.get());
  ASSERT_EQ(cudaStreamSynchronize(s.get()), cudaSuccess);
  expect_matches("masked G4 16x512x1024 after a late writer (seed " + std::to_string(rng.seed()) + ")", ref, d, groups, m,
                 n, [&](std::int64_t g, std::int64_t r) { return r < masked_m[static_cast<std::size_t>(g)]; });
}

TEST(Pdl, GraphOfALateWriterAndADenseGemmReplays) {
  FP4MOE_REQUIRE_GPU();
  test::Rng rng;
  const std::int64_t m = 64, n = 512, k = 1024;
  LateOperands ops(rng, m, n, k, 1, 1);
  const std::vector<double> ref = reference::gemm_nt(ops.a.t, ops.b.t);
  test::DeviceBuffer<std::uint8_t> d(static_cast<std::size_t>(m * n * 4));
  Stream s;
  fp4_gemm_nt(ops.da.t, ops.db.t, MatrixView{d.get(), DType::kFP32, m, n}, s.get());  // plans outside the capture
  ASSERT_EQ(cudaStreamSynchronize(s.get()), cudaSuccess);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeGlobal), cudaSuccess);
  // Each replay: A back to stale bytes, the output poisoned, then the late writer and the GEMM.
  ASSERT_EQ(cudaMemsetAsync(ops.da.data.get(), 0x5a, ops.da.data.size(), s.get()), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d.get(), 0xff, d.size(), s.get()), cudaSuccess);
  late_copies<<<1, 32, 0, s.get()>>>(ops.data(), ops.scales(), Copy{nullptr, nullptr, 0});
  fp4_gemm_nt(ops.da.t, ops.db.t, MatrixView{d.get(), DType::kFP32, m, n}, s.get());
  ASSERT_EQ(cudaStreamEndCapture(s.get(), &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) {
    ASSERT_EQ(cudaGraphLaunch(exec, s.get()), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s.get()), cudaSuccess);
    expect_matches("graph replay " + std::to_string(replay) + " (seed " + std::to_string(rng.seed()) + ")", ref, d, 1, m,
                   n);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace fp4moe
