// wgmma support: fences, commit/wait and the shared-memory matrix descriptor.
// The per-shape mma wrappers are generated (wgmma_generated.cuh).
//
// Fragment layout of m64nNk16 (PTX ISA "Register Fragments"), for thread t
// of warp w in the warpgroup, g = t / 4, j = t % 4:
//   A from registers (WgmmaRS), a[0..3], two 16-bit values each, low half
//   first:
//     a[0] = A[16w+g  ][2j, 2j+1]     a[1] = A[16w+g+8][2j, 2j+1]
//     a[2] = A[16w+g  ][2j+8, 2j+9]   a[3] = A[16w+g+8][2j+8, 2j+9]
//   accumulators:
//     d[4i + {0,1,2,3}] = D[16w+g][8i+2j], D[16w+g][8i+2j+1],
//                         D[16w+g+8][8i+2j], D[16w+g+8][8i+2j+1]
// m64nNk32 with 8-bit inputs (WgmmaRS<E4M3, N>) has the same shape with four
// bytes where k16 has a pair, low byte first:
//     a[0] = A[16w+g  ][4j .. 4j+3]       a[1] = A[16w+g+8][4j .. 4j+3]
//     a[2] = A[16w+g  ][16+4j .. 16+4j+3] a[3] = A[16w+g+8][16+4j .. 16+4j+3]
// and the same accumulators.
// tests/gpu/kernels/wgmma_fragment_test.cu checks them; the GEMM relies on
// them (its one-hot structure test checks them end to end too).
#pragma once

#include <cstdint>

#include "kernels/sm90/ptx/wgmma_generated.cuh"

namespace fp4moe::ptx {

/// Orders this warpgroup's register accesses before the next wgmma.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
/// Waits until at most N committed wgmma groups of this warpgroup are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/// Keeps the compiler from moving accesses of a register across wgmma
/// instructions that read or write it asynchronously.
__device__ __forceinline__ void fence_register(float& r) { asm volatile("" : "+f"(r)::"memory"); }

/// Descriptor of a K-major operand tile in shared memory stored with the
/// swizzle of its row width: rows of kRowBytes (128 or 64), 8-row atoms,
/// atom after atom along N. `smem` is the byte address of the first element
/// this wgmma reads (a k16 step of 16-bit elements, or a k32 step of 8-bit
/// ones, adds 32 bytes inside a row).
template <int kRowBytes>
__device__ __forceinline__ std::uint64_t smem_desc_k_major_swizzled(std::uint32_t smem) {
  static_assert(kRowBytes == 128 || kRowBytes == 64, "128B or 64B swizzle");
  std::uint64_t d = 0;
  d |= (smem & 0x3ffffu) >> 4;                           // start address, 16-byte units
  d |= std::uint64_t(1) << 16;                           // leading byte offset: unused for swizzled K-major
  d |= std::uint64_t(8 * kRowBytes >> 4) << 32;          // stride byte offset: one 8-row atom
  d |= std::uint64_t(kRowBytes == 128 ? 1 : 2) << 62;    // swizzle mode: 128B (1) or 64B (2)
  return d;
}
/// 128B swizzle: rows of 128 bytes (64 16-bit elements of K), atoms of 1024 bytes.
__device__ __forceinline__ std::uint64_t smem_desc_k_major_sw128(std::uint32_t smem) {
  return smem_desc_k_major_swizzled<128>(smem);
}
/// The same descriptor split in two: its low word, which holds the address
/// (a loop can step it with 32-bit adds), and the constant high word.
__device__ __forceinline__ std::uint32_t smem_desc_k_major_sw128_lo(std::uint32_t smem) {
  return std::uint32_t(smem_desc_k_major_sw128(smem));
}
__device__ __forceinline__ std::uint64_t smem_desc_sw128_from_lo(std::uint32_t lo) {
  return (smem_desc_k_major_sw128(0) & 0xffffffff00000000ull) | lo;
}

/// 64B swizzle: rows of 64 bytes (64 8-bit elements of K), atoms of 512
/// bytes (16-byte chunk c of row r at chunk c ^ ((r / 2) % 4)); the tile
/// starts 512-aligned.
__device__ __forceinline__ std::uint64_t smem_desc_k_major_sw64(std::uint32_t smem) {
  return smem_desc_k_major_swizzled<64>(smem);
}

}  // namespace fp4moe::ptx
