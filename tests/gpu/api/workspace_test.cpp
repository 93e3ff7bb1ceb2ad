// fp4moe/workspace.hpp on the GPU: what the split-K and gathered calls hold
// for a stream is measured and released, later calls grow it again with the
// same results, a graph keeps the buffer it was captured with, a stream
// under capture is refused, a growth refused under capture comes before
// any launch, each thread's per-thread stream has its own buffer, and a
// growth beside another thread's capture disturbs neither.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "fp4moe/error.hpp"
#include "fp4moe/workspace.hpp"
#include "kernels/sm90/gemm_registry.hpp"
#include "support/test_support.hpp"
#include "tuning/tuning_problem.hpp"

namespace fp4moe {
namespace {

/// The first compiled tactic of `layout` (NVFP4) that `pick` accepts.
template <class Pick>
GemmTactic compiled(kernels::Layout layout, Pick pick) {
  for (const auto& e : kernels::kernel_registry())
    if (e.format == Fp4Format::kNVFP4 && e.layout == layout && pick(e.tactic)) return e.tactic;
  ADD_FAILURE() << "no compiled tactic of the wanted kind";
  return GemmTactic{};
}

GemmTactic split_tactic(int split_k) {
  GemmTactic t = compiled(kernels::Layout::kDense, [](const GemmTactic& c) { return c.swap_ab && c.block_n == 64; });
  t.split_k = split_k;
  return t;
}

std::vector<std::uint8_t> output_of(const tuning::TuningProblem& p, cudaStream_t s) {
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  return test::download_as<std::uint8_t>(p.output(), p.output_bytes());
}

void poison(const tuning::TuningProblem& p, cudaStream_t s) {
  ASSERT_EQ(cudaMemsetAsync(const_cast<void*>(p.output()), 0xff, p.output_bytes(), s), cudaSuccess);
}

class Workspace : public ::testing::Test {
 protected:
  void SetUp() override {
    FP4MOE_REQUIRE_GPU();
    ASSERT_EQ(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), cudaSuccess);
    // A handle another test destroyed without a release may come back with
    // its buffers: start from none.
    release_workspace(s_);
  }
  void TearDown() override {
    if (!s_) return;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s_, &capture) == cudaSuccess && capture != cudaStreamCaptureStatusNone) {
      cudaGraph_t graph = nullptr;  // a test that failed mid-capture
      if (cudaStreamEndCapture(s_, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    }
    test::destroy_stream(s_);
  }
  cudaStream_t s_ = nullptr;
};

TEST_F(Workspace, ReleaseFreesWhatTheCallsHeldAndTheNextCallsGrowItAgain) {
  EXPECT_EQ(workspace_bytes(s_), 0u) << "a fresh stream holds nothing";
  EXPECT_EQ(release_workspace(s_), 0u) << "releasing nothing is no error";

  const GemmTactic split = split_tactic(4);
  // (The gathered kernels are registered under the MoE-dense layout.)
  const GemmTactic gather = compiled(kernels::Layout::kMoeDense, [](const GemmTactic& t) { return t.moe_gather; });
  GemmOptions split_opt, gather_opt;
  split_opt.tactic = &split;
  gather_opt.tactic = &gather;
  const tuning::TuningProblem dense({GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kFP32, 64, 256, 4096, 1}, 1, s_);
  const tuning::TuningProblem moe(
      {GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kFP32, 32, 256, 8 * 256, 8, 256, 2}, 2, s_);

  dense.run(split_opt, s_);
  const std::vector<std::uint8_t> dense_first = output_of(dense, s_);
  const std::size_t split_bytes = workspace_bytes(s_);
  // At least the partials of 4 slices of the 64 x 256 output.
  EXPECT_GE(split_bytes, std::size_t(4) * 64 * 256 * 4);
  moe.run(gather_opt, s_);
  const std::vector<std::uint8_t> moe_first = output_of(moe, s_);
  const std::size_t both_bytes = workspace_bytes(s_);
  // The gathered copy: 8 experts x 32 slots of 256 BF16 columns at least.
  EXPECT_GE(both_bytes, split_bytes + std::size_t(8) * 32 * 256 * 2);

  EXPECT_EQ(release_workspace(s_), both_bytes) << "every byte held is freed";
  EXPECT_EQ(workspace_bytes(s_), 0u);

  // The calls after the release allocate again and compute the same bits.
  poison(dense, s_);
  poison(moe, s_);
  dense.run(split_opt, s_);
  moe.run(gather_opt, s_);
  EXPECT_TRUE(output_of(dense, s_) == dense_first);
  EXPECT_TRUE(output_of(moe, s_) == moe_first);
  EXPECT_EQ(workspace_bytes(s_), both_bytes);
}

TEST_F(Workspace, AGraphKeepsItsBufferThroughARelease) {
  const GemmTactic split = split_tactic(2);
  GemmOptions opt;
  opt.tactic = &split;
  const tuning::TuningProblem p({GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kFP32, 64, 256, 2048, 1}, 3, s_);
  p.run(opt, s_);  // makes the stream's workspace before the capture
  const std::vector<std::uint8_t> eager = output_of(p, s_);

  const test::CapturedGraph graph(s_, [&] { p.run(opt, s_); });
  ASSERT_TRUE(graph.ok());

  EXPECT_EQ(release_workspace(s_), 0u) << "the graph's buffer is kept, not freed";
  EXPECT_EQ(workspace_bytes(s_), 0u) << "the stream no longer holds it";
  // Memory allocated now would reuse the graph's buffer had it been freed:
  // filled with garbage, it would reach the graph's tile counters. Then an
  // eager call gets a buffer of its own.
  void* scratch = nullptr;
  ASSERT_EQ(cudaMalloc(&scratch, std::size_t(64) << 20), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(scratch, 0x5a, std::size_t(64) << 20, s_), cudaSuccess);
  p.run(opt, s_);
  EXPECT_TRUE(output_of(p, s_) == eager);
  EXPECT_GT(workspace_bytes(s_), 0u);
  poison(p, s_);
  ASSERT_EQ(graph.launch(s_), cudaSuccess);
  EXPECT_TRUE(output_of(p, s_) == eager) << "the replay equals the eager call, bit for bit";
  cudaFree(scratch);
}

// A call of several launches reserves all of its workspace before the
// first: the gathered moe_dense_fc2 launches its token copy, then the GEMM,
// whose stream-K partials need the split-K buffer. Under capture, with the
// copy's buffer made by an eager split_k 1 call and the split-K one not,
// the refused growth must come before the copy was launched: the capture
// holds no kernel (it held the copy before the reservation moved ahead).
TEST_F(Workspace, AGrowthRefusedDuringCaptureComesBeforeAnyLaunch) {
  GemmTactic gather{};
  for (const auto& e : kernels::kernel_registry())
    if (e.format == Fp4Format::kNVFP4 && e.tactic.moe_gather && e.stream_k && (e.max_m == 0 || e.max_m >= 32)) {
      gather = e.tactic;
      break;
    }
  ASSERT_TRUE(gather.moe_gather) << "no gathered tile with stream-K";
  GemmOptions opt;
  opt.tactic = &gather;
  const tuning::TuningProblem moe(
      {GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kFP32, 32, 256, 8 * 256, 8, 256, 2}, 5, s_);
  moe.run(opt, s_);  // split_k 1: the gathered copy's buffer, no split-K one
  ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
  const std::size_t held = workspace_bytes(s_);
  ASSERT_GT(held, 0u);

  gather.split_k = 0;  // stream-K: 32 CTAs share 4 tiles, partials in the split-K buffer
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s_, cudaStreamCaptureModeGlobal), cudaSuccess);
  bool refused = false;
  try {
    moe.run(opt, s_);
  } catch (const InvalidArgument& e) {
    ADD_FAILURE() << "the tactic was refused, not the growth: " << e.what();
  } catch (const Error&) {
    refused = true;
  }
  ASSERT_EQ(cudaStreamEndCapture(s_, &graph), cudaSuccess);
  std::size_t nodes = 0;
  EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  if (graph) cudaGraphDestroy(graph);
  EXPECT_TRUE(refused) << "the split-K buffer had to grow during capture";
  EXPECT_EQ(nodes, 0u) << "nothing may be launched before a reservation that can fail";
  EXPECT_EQ(workspace_bytes(s_), held);
}

// cudaStreamPerThread is one handle for a different stream in every thread:
// it has a buffer per thread, so one thread's split-K partials are not
// another's (keyed by the handle alone, two threads' concurrent calls
// shared partials and tile counters).
TEST_F(Workspace, EachThreadsPerThreadStreamHasItsOwnBuffer) {
  const GemmTactic split = split_tactic(2);
  GemmOptions opt;
  opt.tactic = &split;
  const tuning::TuningProblem p({GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kFP32, 64, 256, 2048, 1}, 6,
                                cudaStreamPerThread);
  std::size_t held_here = 0, seen_there = 1, held_there = 0;
  release_workspace(cudaStreamPerThread);
  p.run(opt, cudaStreamPerThread);
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  held_here = workspace_bytes(cudaStreamPerThread);
  std::thread other([&] {
    seen_there = workspace_bytes(cudaStreamPerThread);  // before its own call
    p.run(opt, cudaStreamPerThread);
    cudaStreamSynchronize(cudaStreamPerThread);
    held_there = workspace_bytes(cudaStreamPerThread);
    release_workspace(cudaStreamPerThread);
  });
  other.join();
  EXPECT_GT(held_here, 0u);
  EXPECT_EQ(seen_there, 0u) << "another thread's per-thread stream starts with no buffer";
  EXPECT_EQ(held_there, held_here);
  EXPECT_EQ(workspace_bytes(cudaStreamPerThread), held_here) << "the other thread's release left this one's";
  release_workspace(cudaStreamPerThread);
}

// A global-mode capture forbids cudaMalloc and cudaFree in every thread
// unless that thread relaxes it: a call that makes its stream's first
// buffer beside another thread's capture must neither fail nor break it.
TEST_F(Workspace, AGrowthBesideAnotherThreadsCaptureBreaksNeither) {
  const GemmTactic split = split_tactic(2);
  GemmOptions opt;
  opt.tactic = &split;
  const tuning::TuningProblem p({GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kFP32, 64, 256, 2048, 1}, 7, s_);
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s_, cudaStreamCaptureModeGlobal), cudaSuccess);
  std::string error;
  std::thread grower([&] {
    try {
      p.run(opt, other);  // the stream's first split-K call: cudaMalloc
      {  // (the test's own wait, relaxed as the library's are)
        cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        cudaThreadExchangeStreamCaptureMode(&mode);
        if (cudaStreamSynchronize(other) != cudaSuccess) error = "the call's kernels failed";
        cudaThreadExchangeStreamCaptureMode(&mode);
      }
      release_workspace(other);  // cudaFree
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  grower.join();
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(s_, &graph), cudaSuccess) << "the capture survived";
  if (graph) cudaGraphDestroy(graph);
  EXPECT_EQ(error, "");
  test::destroy_stream(other);
}

TEST_F(Workspace, ReleaseIsRefusedWhileTheStreamCaptures) {
  const GemmTactic split = split_tactic(2);
  GemmOptions opt;
  opt.tactic = &split;
  const tuning::TuningProblem p({GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kFP32, 64, 256, 2048, 1}, 4, s_);
  p.run(opt, s_);
  ASSERT_EQ(cudaStreamSynchronize(s_), cudaSuccess);
  const std::size_t held = workspace_bytes(s_);
  ASSERT_GT(held, 0u);

  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s_, cudaStreamCaptureModeGlobal), cudaSuccess);
  try {
    release_workspace(s_);
    ADD_FAILURE() << "release_workspace during capture was not refused";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.function(), "release_workspace");
    EXPECT_EQ(e.argument(), "stream");
  }
  EXPECT_EQ(workspace_bytes(s_), held) << "a refused release frees nothing";
  ASSERT_EQ(cudaStreamEndCapture(s_, &graph), cudaSuccess);
  if (graph) cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace fp4moe
