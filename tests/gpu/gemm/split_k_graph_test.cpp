// Split-K inside a CUDA graph: the graph replays with the workspace address
// it was captured with, so that buffer must outlive a later call that grows
// the stream's workspace.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/sm90/gemm_registry.hpp"
#include "support/test_support.hpp"
#include "tuning/tuning_problem.hpp"

namespace fp4moe {
namespace {

std::vector<std::uint8_t> download(const tuning::TuningProblem& p) {
  return test::download_as<std::uint8_t>(p.output(), p.output_bytes());
}

TEST(SplitKGraph, ReplaysAfterTheWorkspaceGrew) {
  FP4MOE_REQUIRE_GPU();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  // The compiled 64- and 128-token swap-AB tiles (whatever their stages), split 2 and 8 ways.
  auto compiled = [](int block_n, int split_k) {
    for (const auto& e : kernels::kernel_registry())
      if (e.format == Fp4Format::kNVFP4 && e.layout == kernels::Layout::kDense && e.tactic.swap_ab &&
          e.tactic.block_n == block_n) {
        GemmTactic t = e.tactic;
        t.split_k = split_k;
        return t;
      }
    ADD_FAILURE() << "no compiled swap-AB tile with block_n " << block_n;
    return GemmTactic{};
  };
  const GemmTactic small_split = compiled(64, 2);
  const GemmTactic big_split = compiled(128, 8);
  GemmOptions small_opt, big_opt;
  small_opt.tactic = &small_split;
  big_opt.tactic = &big_split;
  const tuning::TuningProblem small({GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kFP32, 64, 256, 2048, 1}, 1, s);
  const tuning::TuningProblem big({GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kFP32, 128, 7168, 8192, 1}, 2, s);

  small.run(small_opt, s);  // makes this stream's workspace, small
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const std::vector<std::uint8_t> eager = download(small);

  const test::CapturedGraph graph(s, [&] { small.run(small_opt, s); });
  ASSERT_TRUE(graph.ok());

  big.run(big_opt, s);  // needs ~56x the partials: the workspace grows
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  // Memory freed by the growth would likely come back here; garbage in what
  // were the graph's tile counters would keep every tile from finishing.
  void* scratch = nullptr;
  ASSERT_EQ(cudaMalloc(&scratch, std::size_t(64) << 20), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(scratch, 0x5a, std::size_t(64) << 20, s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(const_cast<void*>(small.output()), 0xff, small.output_bytes(), s), cudaSuccess);

  ASSERT_EQ(graph.launch(s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_TRUE(download(small) == eager) << "the replay equals the eager call, bit for bit";

  cudaFree(scratch);
  test::destroy_stream(s);
}

}  // namespace
}  // namespace fp4moe
