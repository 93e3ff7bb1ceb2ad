// ptx::global_timer_ns (kernels/sm90/ptx/timer.cuh): around a spin of 10^5
// SM clock cycles (50-70 µs at the H100/H200's 1.4-2 GHz), the global
// timer advances by a plausible number of nanoseconds in every CTA, and
// the CTAs' readings overlap in time (one clock for all SMs). ptx::sm_id:
// one CTA an SM (each fills an SM's shared memory) gives every CTA a
// different SM, each below %nsmid and below 256 (the trace stores it in 8
// bits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/sm90/ptx/timer.cuh"
#include "support/test_support.hpp"

namespace fp4moe::ptx {
namespace {

__global__ void timer_kernel(std::uint64_t* out) {
  const std::uint64_t t0 = global_timer_ns();
  const long long c0 = clock64();
  while (clock64() - c0 < 100000) {
  }
  const std::uint64_t t1 = global_timer_ns();
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = t0;
    out[2 * blockIdx.x + 1] = t1;
  }
}

TEST(GlobalTimer, AdvancesWithTheClockAndAgreesAcrossSms) {
  FP4MOE_REQUIRE_GPU();
  constexpr int kCtas = 64;
  test::DeviceBuffer<std::uint64_t> out(2 * kCtas);
  timer_kernel<<<kCtas, 32>>>(out.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint64_t> t = out.download();
  std::uint64_t latest_start = 0, earliest_end = ~std::uint64_t(0);
  for (int c = 0; c < kCtas; ++c) {
    const std::uint64_t dt = t[2 * c + 1] - t[2 * c];
    EXPECT_GE(dt, 20000u) << "CTA " << c;     // 10^5 cycles at 5 GHz at most
    EXPECT_LE(dt, 10000000u) << "CTA " << c;  // and not 10 ms
    latest_start = std::max(latest_start, t[2 * c]);
    earliest_end = std::min(earliest_end, t[2 * c + 1]);
  }
  // 64 CTAs run at once on 132 SMs: with one clock, their spans overlap.
  EXPECT_LT(latest_start, earliest_end);
}

__global__ void sm_id_kernel(std::uint32_t* out) {
  extern __shared__ std::uint8_t fill[];
  fill[threadIdx.x] = 0;  // (the allocation is what keeps a second CTA off this SM)
  const long long c0 = clock64();
  while (clock64() - c0 < 100000) {  // alive until every CTA has been placed
  }
  std::uint32_t bound;
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(bound));
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = sm_id();
    out[2 * blockIdx.x + 1] = bound;
  }
}

TEST(SmId, OneCtaAnSmGivesDistinctIds) {
  FP4MOE_REQUIRE_GPU();
  int sms = 0, smem = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), cudaSuccess);
  ASSERT_EQ(cudaFuncSetAttribute(sm_id_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), cudaSuccess);
  test::DeviceBuffer<std::uint32_t> out(2 * sms);
  sm_id_kernel<<<sms, 32, smem>>>(out.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint32_t> got = out.download();
  std::vector<std::uint32_t> ids;
  for (int c = 0; c < sms; ++c) {
    EXPECT_LT(got[2 * c], got[2 * c + 1]) << "CTA " << c << ": %smid not below %nsmid";
    EXPECT_LT(got[2 * c], 256u) << "CTA " << c;
    ids.push_back(got[2 * c]);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end()) << "two CTAs reported one SM";
}

}  // namespace
}  // namespace fp4moe::ptx
