// Distributed-shared-memory probe (not a product tool): how fast the two CTAs
// of a cluster can hand each other a block of shared memory, the exchange a
// two-CTA tile splitting its weight conversion would make every 64-K
// sub-step (16 KB of BF16 rows each way; docs/PERF.md stop 48). Each CTA
// sends `bytes` to its peer and waits for the peer's, `iters` times in a
// row, by one bulk copy (cp.async.bulk shared::cta -> shared::cluster) or by
// 16-byte st.async from every thread, both completing on the receiver's
// mbarrier. Timed with events over the whole launch, for one cluster (the
// hand-over's latency) and for a cluster on every pair of SMs (the
// network's throughput when every SM exchanges at once).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "kernels/sm90/ptx/cluster.cuh"
#include "kernels/sm90/ptx/memory.cuh"

namespace {

constexpr int kThreads = 128;
constexpr int kRecvOffset = 32 * 1024;  // the receive area, after the send area
constexpr int kSmem = 2 * kRecvOffset + 1024;

template <bool kBulk>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads) exchange(int bytes, int iters, unsigned* sink) {
  extern __shared__ __align__(1024) std::uint8_t smem[];
  auto* bar = reinterpret_cast<std::uint64_t*>(smem + 2 * kRecvOffset);
  const std::uint32_t base = fp4moe::ptx::smem_addr(smem);
  const std::uint32_t rank = fp4moe::ptx::cluster_rank();
  const std::uint32_t peer_delta = fp4moe::ptx::map_to_rank(base, rank ^ 1u) - base;
  for (int i = threadIdx.x; i < kRecvOffset / 4; i += kThreads) reinterpret_cast<std::uint32_t*>(smem)[i] = i * 2654435761u;
  if (threadIdx.x == 0) {
    fp4moe::ptx::mbar_init(bar, 1);
    fp4moe::ptx::fence_mbarrier_init();
  }
  fp4moe::ptx::fence_proxy_async_smem();
  fp4moe::ptx::cluster_sync();
  const std::uint32_t peer_bar = fp4moe::ptx::smem_addr(bar) + peer_delta;
  for (int it = 0; it < iters; ++it) {
    if (threadIdx.x == 0) fp4moe::ptx::mbar_arrive_expect_tx(bar, bytes);
    if constexpr (kBulk) {
      if (threadIdx.x == 0) fp4moe::ptx::bulk_copy_to_peer(base + kRecvOffset + peer_delta, base, bytes, peer_bar);
    } else {
      for (int off = 16 * threadIdx.x; off < bytes; off += 16 * kThreads)
        fp4moe::ptx::st_async_16(base + kRecvOffset + off + peer_delta, fp4moe::ptx::lds128(base + off), peer_bar);
    }
    fp4moe::ptx::mbar_wait(bar, it & 1);
  }
  fp4moe::ptx::cluster_sync();  // no CTA leaves while its peer may still write to it
  if (threadIdx.x == 0) atomicAdd(sink, fp4moe::ptx::lds32(base + kRecvOffset));
}

template <bool kBulk>
double time_us(int clusters, int bytes, int iters, unsigned* sink) {
  cudaFuncSetAttribute(exchange<kBulk>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  exchange<kBulk><<<2 * clusters, kThreads, kSmem>>>(bytes, iters, sink);  // warm-up
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float best = 1e30f;
  for (int rep = 0; rep < 5; ++rep) {
    cudaEventRecord(a);
    exchange<kBulk><<<2 * clusters, kThreads, kSmem>>>(bytes, iters, sink);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    best = ms < best ? ms : best;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return 1000.0 * best;
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned* sink = nullptr;
  cudaMalloc(&sink, sizeof(unsigned));
  constexpr int kIters = 2000;
  std::printf("DSMEM exchange: each CTA of a 2-CTA cluster sends B bytes to its peer and waits for the peer's, %d times\n",
              kIters);
  std::printf("%-8s %8s %9s %14s %22s\n", "method", "B", "clusters", "us / exchange", "GB/s sent per SM");
  for (int clusters : {1, sms / 2})
    for (int bytes : {4096, 16384, 32768})
      for (int bulk = 1; bulk >= 0; --bulk) {
        const double us = bulk ? time_us<true>(clusters, bytes, kIters, sink) : time_us<false>(clusters, bytes, kIters, sink);
        const double per = us / kIters;
        std::printf("%-8s %8d %9d %14.3f %22.1f\n", bulk ? "bulk" : "st.async", bytes, clusters, per, bytes / per / 1000.0);
      }
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("%s\n", e == cudaSuccess ? "ok" : cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
