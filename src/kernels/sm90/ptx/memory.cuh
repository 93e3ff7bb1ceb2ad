// Shared-memory loads, bulk copies, mbarriers and ordering, as thin wrappers
// (CCCL's cuda::ptx where it has the instruction, inline PTX where not).
#pragma once

#include <cuda/ptx>

#include <cstdint>

namespace fp4moe::ptx {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint4 lds128(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint2 lds64(std::uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}
__device__ __forceinline__ std::uint32_t lds32(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}
/// A volatile shared load: ptxas neither forwards it from a store nor
/// assumes its value.
__device__ __forceinline__ std::uint32_t lds32_volatile(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.volatile.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ std::uint32_t lds16(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ std::uint32_t lds8(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.u8 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ void sts32(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void sts64(std::uint32_t addr, uint2 v) {
  asm volatile("st.shared.v2.u32 [%0], {%1, %2};\n" ::"r"(addr), "r"(v.x), "r"(v.y) : "memory");
}
__device__ __forceinline__ void sts128(std::uint32_t addr, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// ------------------------------------------------------------- mbarrier ----

__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t count) {
  cuda::ptx::mbarrier_init(bar, count);
}
/// Makes mbarrier initialisation visible to the async proxy (TMA).
__device__ __forceinline__ void fence_mbarrier_init() { cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster); }

__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
/// mbar_arrive, issued only once `dep` is computed: the barrier's address
/// takes `dep` through a select on `never`, a run-time value the caller knows
/// is false, so the arrive cannot be scheduled before the loads `dep` derives
/// from have returned. For a stage a TMA (async-proxy) write refills once the
/// barrier completes: a plain arrive issued behind shared loads still in
/// flight lets that write land before them (tests/gpu/kernels/
/// stage_release_test.cu: 18% of the words read on an H200).
__device__ __forceinline__ void mbar_arrive_after(std::uint64_t* bar, std::uint32_t dep, bool never) {
  const std::uint32_t addr = smem_addr(bar) + (never ? (dep | 1u) : 0u);
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(addr) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
/// Spins until the phase with the given parity has completed.
/// Waits for the phase of `bar` with this parity to complete. Each try_wait
/// suspends the thread until the phase completes or a time limit passes; an
/// explicit 10 ms limit, because with the default one (short, on an H200) a
/// waiting producer warp re-issued its try_wait loop ~1.3 M times in a 125 µs
/// decode GEMM, 9% of all instructions the kernel executed, all on one SM
/// sub-partition (ncu, docs/PERF.md stop 22).
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity), "n"(10000000)
      : "memory");
}

// ------------------------------------------------------------ bulk copy ----

/// 2-D TMA tile load into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const void* tensor_map, std::int32_t x, std::int32_t y,
                                            std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_addr(dst)),
      "l"(tensor_map), "r"(x), "r"(y), "r"(smem_addr(bar))
      : "memory");
}
/// 3-D TMA tile load into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load_3d(void* dst, const void* tensor_map, std::int32_t x, std::int32_t y,
                                            std::int32_t z, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(
          smem_addr(dst)),
      "l"(tensor_map), "r"(x), "r"(y), "r"(z), "r"(smem_addr(bar))
      : "memory");
}
/// Contiguous bulk copy global → shared (bytes multiple of 16, 16-aligned).
__device__ __forceinline__ void bulk_load(void* dst, const void* src, std::uint32_t bytes, std::uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}
/// 2-D TMA tile store shared → global (the box at (x, y) of `tensor_map`;
/// parts outside the tensor are not written), tracked by this thread's bulk
/// groups (bulk_commit_group, bulk_wait_read / bulk_wait).
__device__ __forceinline__ void tma_store_2d(const void* tensor_map, std::uint32_t src, std::int32_t x, std::int32_t y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(tensor_map), "r"(src),
               "r"(x), "r"(y)
               : "memory");
}
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/// Waits until at most kPending of this thread's bulk groups still read their shared-memory source.
template <int kPending>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
}
/// Waits until at most kPending of this thread's bulk groups are incomplete (their writes done).
template <int kPending>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(kPending) : "memory");
}
/// 4-byte global → shared copy (cp.async, tracked by commit groups). With
/// src_bytes = 0 nothing is read and the destination is zero-filled.
__device__ __forceinline__ void cp_async_4(std::uint32_t dst, const void* src, std::uint32_t src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/// Waits until at most kPending of this thread's commit groups are in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
__device__ __forceinline__ void prefetch_tensor_map(const void* tensor_map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tensor_map) : "memory");
}

// ------------------------------------------------------------- ordering ----

/// Makes this thread's generic-proxy shared-memory writes visible to the
/// async proxy (wgmma reads, TMA); needed before the barrier that hands
/// ordinary stores over to wgmma.
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/// atom.add.acq_rel.gpu on a global int: returns the old value. Its release
/// half orders before it every write that happens-before it, the writes
/// of the threads that met this one at a CTA barrier included (release is
/// cumulative); its acquire half orders after it the reads of whatever
/// other threads released before their own add. One thread's add after a
/// barrier thus publishes a whole CTA's stores, where a fence in every
/// thread (__threadfence, fence.sc) cost each of them a wait.
__device__ __forceinline__ int atom_add_acq_rel_gpu(int* p, int v) {
  int old;
  asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

/// Named barrier over `threads` threads (a multiple of 32).
__device__ __forceinline__ void named_barrier(std::uint32_t id, std::uint32_t threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/// bar.sync with an OR reduction: every participant gets whether any of
/// them passed `pred` (a flag handed to all without shared memory).
__device__ __forceinline__ bool named_barrier_or(std::uint32_t id, std::uint32_t threads, bool pred) {
  std::uint32_t any;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.u32 q, %1, 0;\n bar.red.or.pred p, %2, %3, q;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(any)
      : "r"(std::uint32_t(pred)), "r"(id), "r"(threads)
      : "memory");
  return any != 0;
}

template <std::uint32_t kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <std::uint32_t kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

}  // namespace fp4moe::ptx
