// common/split_k_workspace.hpp on the GPU: a part that grows does not make
// the others grow, and a failed allocation is not reported again by the next
// launch check.
#include <gtest/gtest.h>

#include "common/cuda_check.hpp"
#include "common/split_k_workspace.hpp"
#include "fp4moe/error.hpp"
#include "support/test_support.hpp"

namespace fp4moe::detail {
namespace {

TEST(SplitKWorkspace, GrowingOnePartLeavesTheOthers) {
  FP4MOE_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  // 40 calls each needing one more scratch integer beside 64 MiB of
  // partials. Doubling every part on each growth would ask for 2^40 times
  // that by the end.
  const std::size_t partial_floats = std::size_t(1) << 24;
  for (std::size_t s = 1; s <= 40; ++s) {
    const SplitKWorkspace ws = split_k_workspace(stream, partial_floats, 64, s);
    ASSERT_NE(ws.partials, nullptr);
    ASSERT_NE(ws.scratch, nullptr);
  }
  // The counters stay zeroed for the next call.
  const SplitKWorkspace ws = split_k_workspace(stream, partial_floats, 64, 40);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  for (std::int32_t c : test::download_as<std::int32_t>(ws.counters, 64 * 4)) EXPECT_EQ(c, 0);
  test::destroy_stream(stream);
}

TEST(SplitKWorkspace, AnAllocationThatFailsIsReportedOnce) {
  FP4MOE_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  // Far past any GPU's memory: the allocation fails with CudaError ...
  EXPECT_THROW(split_k_workspace(stream, std::size_t(1) << 50, 64), CudaError);
  // ... and leaves nothing behind for the next launch check to report.
  EXPECT_NO_THROW(FP4MOE_CUDA_CHECK(cudaGetLastError()));
  EXPECT_NO_THROW(split_k_workspace(stream, 1024, 64));
  test::destroy_stream(stream);
}

}  // namespace
}  // namespace fp4moe::detail
