// The cluster wrappers (kernels/sm90/ptx/cluster.cuh) in one two-CTA
// cluster: each CTA multicasts its half of a global buffer into both CTAs'
// shared memory (bulk_load_multicast, completing on each CTA's own
// mbarrier), so each must end up holding the whole buffer; then each
// arrives on the other's mbarrier (mbar_arrive_remote, then _release) and
// waits on its own. Then each sends the peer a block of its shared memory,
// half by one bulk copy (bulk_copy_to_peer) and half by 16-byte st.async
// stores (st_async_16), both completing on the peer's mbarrier, so each
// must end up holding the other's block. tma_load_2d_multicast is
// exercised end to end by the GEMM tests of the cluster2 tactic.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/sm90/ptx/cluster.cuh"
#include "kernels/sm90/ptx/memory.cuh"
#include "support/test_support.hpp"

namespace fp4moe::ptx {
namespace {

constexpr int kHalfWords = 256;  // 1 KB per CTA

__global__ void __cluster_dims__(2, 1, 1) multicast_kernel(const std::uint32_t* in, std::uint32_t* out, std::uint32_t* ranks) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(128) std::uint32_t buf[2 * kHalfWords];
  __shared__ __align__(8) std::uint64_t full, remote[2];
  const std::uint32_t rank = cluster_rank();
  if (threadIdx.x == 0) {
    mbar_init(&full, 1);
    mbar_init(&remote[0], 1);
    mbar_init(&remote[1], 1);
    fence_mbarrier_init();
  }
  cluster_sync();  // both CTAs' barriers exist before any copy or arrival reaches them
  if (threadIdx.x == 0) {
    mbar_arrive_expect_tx(&full, 2 * kHalfWords * 4);  // this CTA's half and the peer's
    bulk_load_multicast(smem_addr(buf + rank * kHalfWords), in + rank * kHalfWords, kHalfWords * 4, smem_addr(&full), 0x3);
  }
  mbar_wait(&full, 0);
  for (int i = threadIdx.x; i < 2 * kHalfWords; i += blockDim.x) out[blockIdx.x * 2 * kHalfWords + i] = buf[i];
  if (threadIdx.x == 0) {
    const std::uint32_t peer = rank ^ 1u;
    mbar_arrive_remote(map_to_rank(smem_addr(&remote[0]), peer));
    mbar_arrive_remote_release(map_to_rank(smem_addr(&remote[1]), peer));
    ranks[blockIdx.x] = rank;
  }
  mbar_wait_acquire_cluster(smem_addr(&remote[0]), 0);
  mbar_wait_acquire_cluster(smem_addr(&remote[1]), 0);
#endif
}

TEST(ClusterWrappers, MulticastFillsBothCtasAndRemoteArrivalsComplete) {
  FP4MOE_REQUIRE_GPU();
  std::vector<std::uint32_t> in(2 * kHalfWords);
  for (int i = 0; i < 2 * kHalfWords; ++i) in[i] = 0x9e3779b9u * (i + 1);
  test::DeviceBuffer<std::uint32_t> din(in.size()), dout(2 * in.size()), dranks(2);
  din.upload(in);
  dout.fill_bytes(0);
  dranks.fill_bytes(0xff);
  multicast_kernel<<<2, 128>>>(din.get(), dout.get(), dranks.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint32_t> got = dout.download(), ranks = dranks.download();
  EXPECT_EQ(ranks[0], 0u);
  EXPECT_EQ(ranks[1], 1u);
  for (int cta = 0; cta < 2; ++cta)
    for (int i = 0; i < 2 * kHalfWords; ++i) ASSERT_EQ(got[cta * 2 * kHalfWords + i], in[i]) << "CTA " << cta << ", word " << i;
}

constexpr int kSendWords = 512;  // 2 KB: the first half by bulk copy, the second by st.async

__global__ void __cluster_dims__(2, 1, 1) peer_copy_kernel(std::uint32_t* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(128) std::uint32_t send[kSendWords], recv[kSendWords];
  __shared__ __align__(8) std::uint64_t landed;
  const std::uint32_t rank = cluster_rank(), peer = rank ^ 1u;
  for (int i = threadIdx.x; i < kSendWords; i += blockDim.x) {
    send[i] = 0x9e3779b9u * (i + 1) + rank;
    recv[i] = 0xdeadbeefu;
  }
  if (threadIdx.x == 0) {
    mbar_init(&landed, 1);
    fence_mbarrier_init();
  }
  fence_proxy_async_smem();  // the bulk copy reads `send` through the async proxy
  cluster_sync();            // both CTAs' buffers and barriers are ready
  const std::uint32_t peer_bar = map_to_rank(smem_addr(&landed), peer);
  constexpr int kHalfBytes = kSendWords * 2;
  if (threadIdx.x == 0) {
    mbar_arrive_expect_tx(&landed, kSendWords * 4);  // the peer's two halves
    bulk_copy_to_peer(map_to_rank(smem_addr(recv), peer), smem_addr(send), kHalfBytes, peer_bar);
  }
  for (int off = kHalfBytes + 16 * threadIdx.x; off < kSendWords * 4; off += 16 * blockDim.x)
    st_async_16(map_to_rank(smem_addr(recv) + off, peer), lds128(smem_addr(send) + off), peer_bar);
  mbar_wait(&landed, 0);
  for (int i = threadIdx.x; i < kSendWords; i += blockDim.x) out[blockIdx.x * kSendWords + i] = recv[i];
  cluster_sync();  // neither CTA leaves while its peer may still write to it
#endif
}

TEST(ClusterWrappers, BulkCopyAndStAsyncReachThePeer) {
  FP4MOE_REQUIRE_GPU();
  test::DeviceBuffer<std::uint32_t> dout(2 * kSendWords);
  dout.fill_bytes(0);
  peer_copy_kernel<<<2, 128>>>(dout.get());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<std::uint32_t> got = dout.download();
  for (int cta = 0; cta < 2; ++cta)  // CTA c holds rank (c ^ 1)'s block (ranks are the block indices in a 1-D grid)
    for (int i = 0; i < kSendWords; ++i)
      ASSERT_EQ(got[cta * kSendWords + i], 0x9e3779b9u * (i + 1) + std::uint32_t(cta ^ 1)) << "CTA " << cta << ", word " << i;
}

}  // namespace
}  // namespace fp4moe::ptx
