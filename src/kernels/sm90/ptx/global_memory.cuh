// Global-memory access wrappers for streaming kernels.
#pragma once

#include <cstdint>

namespace fp4moe::ptx {

/// 16-byte read-only load that does not allocate in L1: data read once (the
/// quantizer's input) should not evict anything that is reused.
__device__ __forceinline__ uint4 ld_stream_v4(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

}  // namespace fp4moe::ptx
