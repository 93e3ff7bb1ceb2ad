// Counter-based random numbers for device fills: value i depends only on
// (seed, i), so a fill is reproducible whatever its launch shape.
#pragma once

#include <cstdint>

namespace fp4moe::detail {

/// The splitmix64 finaliser.
__device__ __forceinline__ std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The 64 random bits of element i.
__device__ __forceinline__ std::uint64_t random_bits(std::uint64_t seed, std::int64_t i) {
  return mix(seed ^ mix(static_cast<std::uint64_t>(i)));
}

/// Uniform in [-1, 1) from the high 32 bits.
__device__ __forceinline__ float random_unit(std::uint64_t bits) {
  return static_cast<float>(static_cast<std::int32_t>(bits >> 32)) * (1.0f / 2147483648.0f);
}

}  // namespace fp4moe::detail
