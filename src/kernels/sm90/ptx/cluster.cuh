// Thread-block-cluster wrappers: rank, a peer CTA's shared memory (mapa),
// TMA loads multicast to the CTAs of a cluster, arrivals on a peer's
// mbarrier and the cluster barrier. tests/gpu/kernels/cluster_test.cu
// checks each in a two-CTA cluster.
#pragma once

#include <cstdint>

namespace fp4moe::ptx {

/// This CTA's rank in its cluster.
__device__ __forceinline__ std::uint32_t cluster_rank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
/// The shared::cluster address of `smem` (a shared::cta address of this CTA)
/// in the CTA of rank `rank`: the same offset in that CTA's shared memory.
__device__ __forceinline__ std::uint32_t map_to_rank(std::uint32_t smem, std::uint32_t rank) {
  std::uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(smem), "r"(rank));
  return r;
}
/// 2-D TMA tile load into the shared memory of every CTA in `mask` (at the
/// offset of `dst`), each completing bytes on its own mbarrier at the offset
/// of `bar`. Addresses are this CTA's shared::cta addresses.
__device__ __forceinline__ void tma_load_2d_multicast(std::uint32_t dst, const void* tensor_map, std::int32_t x,
                                                      std::int32_t y, std::uint32_t bar, std::uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(tensor_map), "r"(x), "r"(y), "r"(bar), "h"(mask)
      : "memory");
}
/// Contiguous bulk copy global → the shared memory of every CTA in `mask`, as above.
__device__ __forceinline__ void bulk_load_multicast(std::uint32_t dst, const void* src, std::uint32_t bytes,
                                                    std::uint32_t bar, std::uint16_t mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;\n" ::"r"(
          dst),
      "l"(src), "r"(bytes), "r"(bar), "h"(mask)
      : "memory");
}
/// An arrival on the mbarrier at shared::cluster address `bar` (a peer's)
/// that publishes nothing (a stage of shared memory is free again): default
/// semantics, no cluster-scope fence (which costs a MEMBAR.ALL.GPU).
__device__ __forceinline__ void mbar_arrive_remote(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/// The same with release at cluster scope: this thread's earlier accesses
/// to the peer are performed before the arrival is seen.
__device__ __forceinline__ void mbar_arrive_remote_release(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/// Waits for a phase of this CTA's mbarrier, acquire at cluster scope (with
/// mbar_wait's suspend-time hint: a producer polling here shares its
/// schedulers with the consumers).
__device__ __forceinline__ void mbar_wait_acquire_cluster(std::uint32_t bar, std::uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1, %2;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(bar),
      "r"(parity), "n"(10000000)
      : "memory");
}
/// 16 bytes into a peer's shared memory at shared::cluster address `dst`,
/// completing 16 bytes of transaction on the peer's mbarrier at `bar` (a
/// shared::cluster address in the same CTA as dst): the peer waits on its
/// own mbarrier, no fence on this side.
__device__ __forceinline__ void st_async_16(std::uint32_t dst, uint4 v, std::uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(dst),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(bar)
               : "memory");
}
/// Bulk copy of `bytes` (a multiple of 16) from this CTA's shared memory
/// (shared::cta address src) to a peer's (shared::cluster address dst),
/// completing the bytes on the peer's mbarrier at `bar` (shared::cluster).
/// The source is read through the async proxy: fence the generic writes of
/// it first (fence_proxy_async_smem) and synchronise the writers.
__device__ __forceinline__ void bulk_copy_to_peer(std::uint32_t dst, std::uint32_t src, std::uint32_t bytes, std::uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "r"(src), "r"(bytes), "r"(bar)
               : "memory");
}
/// Every thread of the cluster: arrive, then wait for all the others.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

}  // namespace fp4moe::ptx
