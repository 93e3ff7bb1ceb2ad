// D's element stores, BF16 or FP32 as the call asked: one value, or two
// adjacent ones as a single 4- or 8-byte store where the caller knows the
// pair aligned (output_pairs_aligned, and an even column). Used by the
// split-tile store (split_tile_store.cuh) and the gather epilogue
// (gather_accumulator.cuh); the register tiles' own epilogue spells the
// same stores out, as through these functions ptxas rescheduled six of
// its masked kernels (fp4_gemm_kernel.cuh). Free functions on D's pointer
// and type as each caller reads them at the store: a struct holding the
// two kept them live across the register tiles' loop and rescheduled all
// of those kernels.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace fp4moe::kernels {

__device__ __forceinline__ void store_output(void* d, bool bf16, std::int64_t off, float v) {
  if (bf16) {
    static_cast<__nv_bfloat16*>(d)[off] = __float2bfloat16_rn(v);
  } else {
    static_cast<float*>(d)[off] = v;
  }
}

__device__ __forceinline__ void store_output_pair(void* d, bool bf16, std::int64_t off, float v0, float v1) {
  if (bf16) {
    *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(d) + off) = __floats2bfloat162_rn(v0, v1);
  } else {
    *reinterpret_cast<float2*>(static_cast<float*>(d) + off) = make_float2(v0, v1);
  }
}

/// Whether every pair at an even offset of a row is aligned: D's base and
/// its row stride `ld` (elements).
__device__ __forceinline__ bool output_pairs_aligned(const void* d, bool bf16, std::int64_t ld) {
  const int elem = bf16 ? 2 : 4;
  return reinterpret_cast<std::uintptr_t>(d) % (2 * elem) == 0 && ld % 2 == 0;
}

}  // namespace fp4moe::kernels
