// Division by a run-time constant as a multiply-high and a shift (the
// round-up method of Hacker's Delight §10): for device loops that split a flat
// index into (row, column) once per element group.
#pragma once

#include <cstdint>

#include "fp4moe/hostdevice.hpp"

namespace fp4moe::detail {

struct FastDivmod {
  std::uint32_t divisor = 1, mul = 0, shift = 0;

  FastDivmod() = default;
  /// divisor ≥ 1; quotients are exact for dividends below 2^31.
  explicit FastDivmod(std::uint32_t d) : divisor(d) {
    if (d == 1) return;
    while ((std::uint64_t(1) << shift) < d) ++shift;
    mul = static_cast<std::uint32_t>(((std::uint64_t(1) << 32) * ((std::uint64_t(1) << shift) - d)) / d + 1);
  }

  FP4MOE_HD std::uint32_t div(std::uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t hi = __umulhi(n, mul);
#else
    const std::uint32_t hi = static_cast<std::uint32_t>((std::uint64_t(n) * mul) >> 32);
#endif
    return (hi + n) >> shift;
  }
  FP4MOE_HD void divmod(std::uint32_t n, std::uint32_t& q, std::uint32_t& r) const {
    q = div(n);
    r = n - q * divisor;
  }
};

}  // namespace fp4moe::detail
