// The per-block quantization rules of DESIGN.md §2, written once for the CPU
// and the GPU (FP4MOE_HD): the two quantizers call exactly these functions, so
// bit-identity between them holds by construction and is tested anyway.
//
// Block amax is carried as the bits of |x| (a uint32): for non-negative floats
// integer order is float order, and every NaN/Inf pattern is above every finite
// one, so one integer max finds both the amax and whether the block holds a
// non-finite value.
#pragma once

#include <cfloat>
#include <cstdint>

#include "fp4moe/codec.hpp"

namespace fp4moe::detail {

constexpr std::uint32_t kNonFiniteBits = 0x7f800000u;  // |x| bits at or above: Inf/NaN
constexpr std::uint8_t kE4M3NaN = 0x7f;
constexpr std::uint8_t kUE8M0NaN = 0xff;

FP4MOE_HD std::uint32_t abs_bits(float x) { return float_to_bits(x) & 0x7fffffffu; }

/// g = 448·6 / amax (NVFP4 global encode scale); 1 when amax is 0 or not finite;
/// FLT_MAX where the quotient overflows.
FP4MOE_HD float nvfp4_encode_scale_from_amax(float amax) {
  if (!(amax > 0.0f) || !is_finite_bits(float_to_bits(amax))) return 1.0f;
  const float g = 2688.0f / amax;
  return is_finite_bits(float_to_bits(g)) ? g : FLT_MAX;
}

// ---------------------------------------------------------------- NVFP4 ----

/// E4M3 block-scale code for a block whose amax bits are `amax_bits`.
FP4MOE_HD std::uint8_t nvfp4_scale_code(std::uint32_t amax_bits, float g) {
  if (amax_bits >= kNonFiniteBits) return kE4M3NaN;
  return encode_e4m3(bits_to_float(amax_bits) / 6.0f * g);
}

/// Whether the elements of a block with this scale code are all written as 0
/// (scale 0, or the NaN scale of a block with non-finite input).
FP4MOE_HD bool nvfp4_block_is_zeroed(std::uint8_t scale_code) {
  return scale_code == 0 || scale_code == kE4M3NaN;
}

/// E2M1 code of element x, given g and the decoded block scale sf (> 0).
FP4MOE_HD unsigned nvfp4_element_code(float x, float g, float sf) {
  return encode_e2m1(x * g / sf);
}

// ---------------------------------------------------------------- MXFP4 ----

/// UE8M0 block-scale code: floor(log2(amax)) − 2 clamped to [−127, 127], + 127.
FP4MOE_HD std::uint8_t mxfp4_scale_code(std::uint32_t amax_bits) {
  if (amax_bits >= kNonFiniteBits) return kUE8M0NaN;
  if (amax_bits == 0) return 0;  // all-zero block: 2^-127
  int e = floor_log2(bits_to_float(amax_bits)) - 2;
  if (e < -127) e = -127;
  if (e > 127) e = 127;  // unreachable for finite float32 (at most 125), kept for clarity
  return static_cast<std::uint8_t>(e + 127);
}

/// 2^-(code-127), the factor that divides a block by its scale. Exact: x / 2^e
/// and x · 2^-e are the same correctly-rounded product. Valid for codes up to
/// 252, which is all mxfp4_scale_code produces for finite input.
FP4MOE_HD float mxfp4_inverse_scale(std::uint8_t code) {
  return bits_to_float(static_cast<std::uint32_t>(254 - code) << 23);
}

FP4MOE_HD unsigned mxfp4_element_code(float x, float inverse_scale) {
  return encode_e2m1(x * inverse_scale);
}

// ------------------------------------------------------------- decoding ----

/// Decoded block scale (E4M3 for NVFP4, UE8M0 for MXFP4).
FP4MOE_HD float decode_block_scale(bool nvfp4, std::uint8_t code) {
  return nvfp4 ? decode_e4m3(code) : decode_ue8m0(code);
}

/// The decoded value of one element: (e2m1 · block scale) · global. The first
/// product is exact; the global scale (1 for MXFP4) rounds once.
FP4MOE_HD float dequantize_element(unsigned code, float block_scale, float global_scale) {
  return decode_e2m1(code) * block_scale * global_scale;
}

}  // namespace fp4moe::detail
