// ptx::named_barrier_or (kernels/sm90/ptx/memory.cuh): 256 of a CTA's 384
// threads (the consumer warpgroups; the first 128 stay out, as the producer
// does) meet on a named barrier several times in a row, with the predicate
// set in no thread, in one chosen thread or in all; every participant must
// get the OR, and each round's answer must not leak into the next.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/sm90/ptx/memory.cuh"
#include "support/test_support.hpp"

namespace fp4moe::ptx {
namespace {

constexpr int kRounds = 6;
constexpr int kParticipants = 256;

/// Round r: thread `setter[r]` (a participant index; -1 none, 256 all)
/// passes true. out[r * 256 + i]: what participant i got.
__global__ void barrier_or_kernel(const int* setter, int* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x < 128) return;
  const int i = threadIdx.x - 128;
  for (int r = 0; r < kRounds; ++r) {
    const bool mine = setter[r] == kParticipants || setter[r] == i;
    out[r * kParticipants + i] = named_barrier_or(3, kParticipants, mine) ? 1 : 0;
  }
#endif
}

TEST(NamedBarrierOr, EveryParticipantGetsTheOrOfItsRound) {
  FP4MOE_REQUIRE_GPU();
  const std::vector<int> setter = {-1, 0, 255, -1, 131, kParticipants};
  test::DeviceBuffer<int> ds(setter.size()), dout(kRounds * kParticipants);
  ds.upload(setter);
  dout.fill_bytes(0xff);
  barrier_or_kernel<<<1, 384>>>(ds.get(), dout.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<int> got = dout.download();
  for (int r = 0; r < kRounds; ++r)
    for (int i = 0; i < kParticipants; ++i)
      ASSERT_EQ(got[r * kParticipants + i], setter[r] >= 0 ? 1 : 0) << "round " << r << ", participant " << i;
}

}  // namespace
}  // namespace fp4moe::ptx
