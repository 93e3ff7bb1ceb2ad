// Faster formulations of the block rules for the GPU quantizer, each exactly
// equal to the literal rule in block_rules.hpp (which the CPU quantizer uses):
// the GPU-vs-CPU bit-identity tests and the exhaustive tests of this header
// check that.
//
// Why: the literal rules cost an IEEE division and seven compare-and-adds per
// element, which made the quantizer instruction-bound at a third of the copy
// bandwidth on an H200. These use only full-rate FP32 instructions.
#pragma once

#include <cmath>
#include <cstdint>

#include "fp4moe/codec.hpp"
#if defined(__CUDACC__)
#include "kernels/sm90/ptx/bit_ops.cuh"
#endif

namespace fp4moe::detail {

/// 1.5·2^23: x + kRound lies in [2^23, 2^24) for small x, where the float grid
/// is the integers, so the addition rounds x to an integer (ties to even) and
/// leaves that integer in the low mantissa bits.
constexpr float kRound = 12582912.0f;

FP4MOE_HD float fma_f(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// E2M1 magnitude code (0..7) of round-to-nearest-even-satfinite(y) for y ≥ 0;
/// NaN and +Inf give 7. Equal to encode_e2m1(y) & 7.
///
/// As a function of the value, the E2M1 code is concave and piecewise affine:
/// 2y below 2, y + 2 on [2, 4), y/2 + 4 from 4 on, capped at 7. So it is the
/// minimum of the three lines, each rounded to an integer:
///   code = min(rint(2y), rint(y) + 2, rint(min(y, 6)/2) + 4).
/// Rounding is monotone and adding an even constant keeps ties-to-even, so the
/// order of the lines survives rounding and ties go where E2M1's do; clamping
/// y at 6 before the last line caps it at 7 without moving the 5 → 4 tie.
/// Each line is one FMA against kRound, which leaves the integer in the low
/// mantissa bits; the results are positive floats, so their bit patterns
/// compare as integers. NaN: fminf(NaN, 6) is 6, and the NaN patterns of the
/// other two lines lie above every number, so NaN gives 7 (as does +Inf).
/// The low three bits of the result are the code; the rest is the exponent of
/// kRound (with_sign_of masks it off for free).
FP4MOE_HD std::uint32_t e2m1_magnitude_code_bits(float y) {
  const std::uint32_t a = float_to_bits(fma_f(y, 2.0f, kRound));
  const std::uint32_t b = float_to_bits(y + (kRound + 2.0f));
  const std::uint32_t c = float_to_bits(fma_f(fminf(y, 6.0f), 0.5f, kRound + 4.0f));
  const std::uint32_t m = a < b ? a : b;
  return m < c ? m : c;
}

FP4MOE_HD unsigned e2m1_magnitude_code(float y) { return e2m1_magnitude_code_bits(y) & 7u; }

/// e2m1_magnitude_code_bits without the clamp before the third line: equal to
/// it for 0 ≤ y < 7 (the third line first reaches 8 at y = 7), one
/// instruction fewer. The NVFP4 quantizer uses it for blocks whose scale
/// bounds every quotient below 7 (nvfp4_scale_bounds_quotient).
FP4MOE_HD std::uint32_t e2m1_magnitude_code_bits_below_7(float y) {
  const std::uint32_t a = float_to_bits(fma_f(y, 2.0f, kRound));
  const std::uint32_t b = float_to_bits(y + (kRound + 2.0f));
  const std::uint32_t c = float_to_bits(fma_f(y, 0.5f, kRound + 4.0f));
  const std::uint32_t m = a < b ? a : b;
  return m < c ? m : c;
}

/// Whether an NVFP4 block gets every quotient y = RN(RN(|x|·g) / s) below 7,
/// so the clamp-free encoder above applies. `u` is the value the scale code
/// was rounded from, u = RN(RN(amax/6)·g). True when the code is a normal,
/// positive E4M3 value (0x08..0x7E) and u < 512: then either s = RN(u), with
/// u ≤ s·(1 + 2^-4), or s = 448 saturated from u < 512, u/s < 8/7; with
/// |x| ≤ amax that gives y ≤ 6·(8/7)·(1 + 2^-20) < 6.9. Subnormal scales
/// (relative rounding error up to 1/2), u ≥ 512, NaN and the negative codes
/// of a negative g take the clamped encoder. Checked by a sweep in
/// fast_rules_test.
FP4MOE_HD bool nvfp4_scale_bounds_quotient(std::uint8_t code, float u) {
  return code >= 0x08u && code <= 0x7Eu && u < 512.0f;
}

/// The bit pattern of kRound: every e2m1_magnitude_code_bits result is
/// kRoundBits + code, code in 0..7.
constexpr std::uint32_t kRoundBits = 0x4B400000u;

/// Eight results of e2m1_magnitude_code_bits → their codes packed in nibbles
/// (element i in bits 4i..4i+2, bit 4i+3 clear for the sign). Each pattern is
/// kRoundBits + code, so Σ m_i·16^i = Σ code_i·16^i + kRoundBits·0x11111111
/// (mod 2^32): seven multiply-adds on the raw patterns and one subtraction,
/// with no masking of the exponent bits. Accumulated from element 0 up, so
/// each pattern is consumed as soon as it is made (fewer live registers).
constexpr std::uint32_t kPackedRoundBias = kRoundBits * 0x11111111u;
FP4MOE_HD std::uint32_t pack8_magnitude_codes(const std::uint32_t* m) {
  std::uint32_t w = m[0] - kPackedRoundBias;
  for (int i = 1; i < 8; ++i) w += m[i] << (4 * i);
  return w;
}

/// The E2M1 code (sign included) of a value whose magnitude code is the low
/// three bits of `mag_bits` and whose sign is the sign of x. bits(x) >> 28 is
/// at most 15 with the sign in bit 3, so (m & 7) | (s & ~7) is one 3-input
/// logic op.
FP4MOE_HD unsigned with_sign_of(std::uint32_t mag_bits, float x) {
#if defined(__CUDA_ARCH__)
  return ptx::bit_select(mag_bits, float_to_bits(x) >> 28, 7u);
#else
  return (mag_bits & 7u) | ((float_to_bits(x) >> 28) & ~7u);
#endif
}

/// a / d correctly rounded, given rcp = RN(1/d): Markstein's correction step
/// (q0 = a·rcp is within an ulp; the residual, exact through the FMA, fixes
/// the last bit). Valid away from overflow and underflow of the quotient; the
/// quantizer only relies on it for quotients in [2^-3, 2^4], where E2M1 codes
/// change, and maps everything else to codes 0 or 7 either way. Tested
/// exhaustively against IEEE division for every E4M3 divisor.
FP4MOE_HD float div_rn_with_reciprocal(float a, float d, float rcp) {
  const float q0 = a * rcp;
  const float r = fma_f(-q0, d, a);
  return fma_f(r, rcp, q0);
}

/// 1/d as an unevaluated sum hi + lo: hi = RN(1/d) and lo = RN(1/d − hi),
/// where 1/d − hi = (1 − hi·d)/d and the residual 1 − hi·d is exact through
/// the FMA.
struct ReciprocalPair {
  float hi, lo;
};

FP4MOE_HD ReciprocalPair reciprocal_pair(float d) {
  const float hi = 1.0f / d;
  return {hi, fma_f(-hi, d, 1.0f) / d};
}

/// a / d correctly rounded in two instructions, RN(a·hi + RN(a·lo)), given
/// d's reciprocal pair: the method of Brisebarre, Muller and Raina for a
/// divisor known in advance. It is not correctly rounded for every divisor,
/// but it is for the eight significands E4M3 has (1 + i/8): checked over
/// every dividend of a binade in fast_rules_test and, on the GPU, over every
/// dividend whose quotient lies in [2^-3, 2^4] for every E4M3 divisor. Both
/// sides scale exactly by powers of two, so one binade covers all while
/// a·lo stays a normal float (it does wherever E2M1 codes change).
FP4MOE_HD float div_rn_by_pair(float a, ReciprocalPair r) { return fma_f(a, r.hi, a * r.lo); }

/// amax / 6 correctly rounded: Markstein with RN(1/6) where the quotient is
/// a normal float (amax ≥ 2^-120, tested exhaustively), IEEE division below.
FP4MOE_HD float amax_over_6(float amax) {
  constexpr float kSixth = 0.16666667163372039795f;  // RN(1/6)
  if (amax < 7.52316384526264e-37f) return amax / 6.0f;  // 2^-120
  return div_rn_with_reciprocal(amax, 6.0f, kSixth);
}

}  // namespace fp4moe::detail
