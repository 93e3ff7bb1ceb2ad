// D's element stores, BF16 or FP32 as the call asked: one value, or two
// adjacent ones as a single 4- or 8-byte store where the caller knows the
// pair aligned (D's base and row stride even in elements, the column even).
// One place for the epilogues of the register tiles, their split-tile
// store and the gather tile's accumulator.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace fp4moe::kernels {

struct OutputStores {
  void* d;
  bool bf16;

  __device__ __forceinline__ void one(std::int64_t off, float v) const {
    if (bf16) {
      static_cast<__nv_bfloat16*>(d)[off] = __float2bfloat16_rn(v);
    } else {
      static_cast<float*>(d)[off] = v;
    }
  }
  __device__ __forceinline__ void pair(std::int64_t off, float v0, float v1) const {
    if (bf16) {
      *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(d) + off) = __floats2bfloat162_rn(v0, v1);
    } else {
      *reinterpret_cast<float2*>(static_cast<float*>(d) + off) = make_float2(v0, v1);
    }
  }
  /// Whether every pair at an even offset of a row is aligned: D's base
  /// and its row stride `ld` (elements).
  __device__ __forceinline__ bool pairs_aligned(std::int64_t ld) const {
    return reinterpret_cast<std::uintptr_t>(d) % (bf16 ? 4 : 8) == 0 && ld % 2 == 0;
  }
};

}  // namespace fp4moe::kernels
