// Scalar encoders and decoders of the three small formats (DESIGN.md §2).
//
// All encoders round to nearest, ties to even. Rules for values a format cannot
// hold:
//   E2M1  (no Inf/NaN): |x| > 6 saturates to ±6; NaN encodes as +6 (the rule of
//         CUDA's cuda_fp4.h and of cvt.rn.satfinite); a value that rounds to zero
//         keeps its sign (-0 is code 8).
//   E4M3  (OCP "fn": no Inf, 0x7F/0xFF are NaN): finite |x| > 448 and ±Inf
//         saturate to ±448; NaN encodes as 0x7F.
//   UE8M0 (2^(e-127), e in 0..254, 0xFF NaN, no zero, no sign): positive values
//         round to the nearest power of two (a value exactly halfway, 1.5·2^k,
//         goes to the even code); above 2^127 and +Inf saturate to 0xFE; +0,
//         -0 and positive values below 2^-127 saturate to 0x00; negative values
//         and NaN encode as 0xFF.
// Decoders are exact (every code maps to one float; UE8M0 0 is the float32
// subnormal 2^-127).
#pragma once

#include <cstdint>
#include <cstring>

#include "fp4moe/hostdevice.hpp"

namespace fp4moe {

FP4MOE_HD std::uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

FP4MOE_HD float bits_to_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

FP4MOE_HD bool is_nan_bits(std::uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }
FP4MOE_HD bool is_finite_bits(std::uint32_t u) { return (u & 0x7f800000u) != 0x7f800000u; }

// ---------------------------------------------------------------- E2M1 ----

/// Magnitudes of E2M1 codes 0..7 (codes 8..15 are their negatives).
FP4MOE_HD float e2m1_magnitude(unsigned code3) {
  // 0, 0.5, 1, 1.5, 2, 3, 4, 6 without a table (tables cost a local-memory
  // array on the device): exponent field e = code>>1, mantissa m = code&1.
  const unsigned e = (code3 >> 1) & 3u, m = code3 & 1u;
  if (e == 0) return m ? 0.5f : 0.0f;
  return static_cast<float>((2u + m) << (e - 1)) * 0.5f;
}

FP4MOE_HD float decode_e2m1(unsigned code) {
  const float v = e2m1_magnitude(code & 7u);
  return (code & 8u) ? -v : v;
}

/// Round-to-nearest-even, saturating E2M1 encoder. The comparisons are the
/// rounding thresholds: midpoints between neighbouring E2M1 values, with the
/// tie going to the even code (0.25→0, 0.75→1.0, 1.25→1.0, 1.75→2.0, 2.5→2.0,
/// 3.5→4.0, 5→4.0).
FP4MOE_HD unsigned encode_e2m1(float x) {
  const std::uint32_t bits = float_to_bits(x);
  if (is_nan_bits(bits)) return 0x7u;
  const unsigned sign = (bits >> 28) & 8u;
  const float a = bits_to_float(bits & 0x7fffffffu);
  const unsigned code = unsigned(a > 0.25f) + unsigned(a >= 0.75f) + unsigned(a > 1.25f) +
                        unsigned(a >= 1.75f) + unsigned(a > 2.5f) + unsigned(a >= 3.5f) +
                        unsigned(a > 5.0f);
  return sign | code;
}

// ---------------------------------------------------------------- E4M3 ----

FP4MOE_HD float decode_e4m3(std::uint8_t code) {
  const unsigned e = (code >> 3) & 0xfu, m = code & 7u;
  float v;
  if ((code & 0x7fu) == 0x7fu) {
    v = bits_to_float(0x7fc00000u);
  } else if (e == 0) {
    v = static_cast<float>(m) * 0.001953125f;  // m/8 · 2^-6 = m · 2^-9
  } else {
    v = bits_to_float(((e + 120u) << 23) | (m << 20));  // bias 7 → bias 127
  }
  return (code & 0x80u) ? -v : v;
}

/// Round-to-nearest-even, saturating (satfinite) E4M3 encoder.
FP4MOE_HD std::uint8_t encode_e4m3(float x) {
  const std::uint32_t bits = float_to_bits(x);
  if (is_nan_bits(bits)) return 0x7f;
  const std::uint8_t sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  const std::uint32_t abits = bits & 0x7fffffffu;
  // 464 is the midpoint between 448 (max) and the would-be 480: from there on
  // (and for Inf) saturate. Exactly 464 rounds to even 448 as well.
  if (abits >= 0x43e80000u) return sign | 0x7e;
  const int exp = static_cast<int>(abits >> 23);  // biased float exponent
  std::uint32_t code;
  if (exp >= 121) {  // |x| >= 2^-6: normal E4M3 range
    const std::uint32_t mant = abits & 0x7fffffu;
    code = (static_cast<std::uint32_t>(exp - 120) << 3) | (mant >> 20);
    const std::uint32_t rest = mant & 0xfffffu, half = 0x80000u;
    if (rest > half || (rest == half && (code & 1u))) ++code;  // may carry into the exponent
  } else {
    // Subnormal E4M3: value = m · 2^-9. Scale |x| by 2^9 (exact: a power of
    // two and no overflow here) and round to an integer, ties to even.
    const float scaled = bits_to_float(abits) * 512.0f;
    const std::uint32_t sbits = float_to_bits(scaled);
    const int sexp = static_cast<int>(sbits >> 23) - 127;  // unbiased
    if (sexp < -1) {
      code = 0;  // below 0.5: rounds to 0
    } else {
      // scaled in [0.5, 8): integer part and remainder from the significand.
      const std::uint32_t sig = (sbits & 0x7fffffu) | 0x800000u;
      const int shift = 23 - sexp;  // 21..24
      const std::uint32_t ipart = sig >> shift;
      const std::uint32_t rest = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
      code = ipart + ((rest > half || (rest == half && (ipart & 1u))) ? 1u : 0u);
    }
  }
  return static_cast<std::uint8_t>(sign | code);
}

// --------------------------------------------------------------- UE8M0 ----

FP4MOE_HD float decode_ue8m0(std::uint8_t code) {
  if (code == 0xff) return bits_to_float(0x7fc00000u);
  if (code == 0) return bits_to_float(0x00400000u);  // 2^-127, a float32 subnormal
  return bits_to_float(static_cast<std::uint32_t>(code) << 23);
}

/// floor(log2(x)) for finite x > 0, exact (read off the bits, subnormals too).
FP4MOE_HD int floor_log2(float x) {
  const std::uint32_t bits = float_to_bits(x) & 0x7fffffffu;
  const int e = static_cast<int>(bits >> 23);
  if (e != 0) return e - 127;
  // Subnormal: value = mant · 2^-149; floor(log2) = index of the top set bit - 149.
  std::uint32_t m = bits;
  int top = -1;
  while (m) {
    ++top;
    m >>= 1;
  }
  return top - 149;
}

/// Round-to-nearest-even, saturating UE8M0 encoder (rules in the file comment).
FP4MOE_HD std::uint8_t encode_ue8m0(float x) {
  const std::uint32_t bits = float_to_bits(x);
  if (is_nan_bits(bits) || (bits >> 31 && (bits & 0x7fffffffu) != 0)) return 0xff;
  if ((bits & 0x7fffffffu) == 0) return 0x00;
  if (!is_finite_bits(bits)) return 0xfe;
  int k = floor_log2(x);
  // x = 2^k · (1 + f): go up when f > 1/2, or f == 1/2 and the upper code is even.
  std::uint32_t frac;  // the 23 bits of f, aligned as a float32 mantissa
  if ((bits >> 23) != 0) {
    frac = bits & 0x7fffffu;
  } else {
    const int shift = -126 - k;  // subnormal: normalise the significand
    frac = (bits << shift) & 0x7fffffu;
  }
  const std::uint32_t half = 0x400000u;
  if (frac > half || (frac == half && ((k + 1 + 127) & 1) == 0)) ++k;
  if (k > 127) return 0xfe;
  if (k < -127) return 0x00;
  return static_cast<std::uint8_t>(k + 127);
}

// ---------------------------------------------------------------- BF16 ----

/// float → bfloat16 bits, round to nearest even; every NaN becomes 0x7FFF (the
/// canonical NaN the device's cvt.rn.bf16.f32 produces).
FP4MOE_HD std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t u = float_to_bits(f);
  if (is_nan_bits(u)) return 0x7fff;
  const std::uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

FP4MOE_HD float bf16_bits_to_float(std::uint16_t b) {
  return bits_to_float(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace fp4moe
