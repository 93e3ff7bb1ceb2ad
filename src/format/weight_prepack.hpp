// The prepacked weight bit order (prepack_weights, fp4moe/quantize.hpp).
//
// The GEMMs turn each 32-bit word of 8 E2M1 codes (element i in nibble i)
// into four BF16x2 "raw pairs" (fp4_dequant.cuh): pair p holds elements p
// and p + 4, each code s|e1 e0|m placed as BF16 bits sign 15, e1 e0 m at 8..6
// (and 31, 24..22 for the high half). From the standard order that takes a
// mask, a multiply and a mask per pair (13-14 integer instructions a word).
// Prepacking permutes the bits inside every word so that the pairs come out
// in 9: pair 0 is stored in place (one mask), pair 1 rotated 4 bits up (a
// rotate and a mask), pair 2 six bits down (a shift and a mask), pair 3 in
// two parts (two shifts, two masks). No order makes all four pairs a single
// shift and mask: the eight bits a pair needs do not tile a 32-bit word by
// translation (an exhaustive search over rotations and byte permutations).
//
// A word holds the same 8 elements of the same 16- or 32-element scale block
// either way, so scales, rows and K are untouched: only the bits move.
#pragma once

#include <cstdint>

#include "fp4moe/hostdevice.hpp"

namespace fp4moe::format {

/// Where the prepacked order stores bit b (0: m, 1: e0, 2: e1, 3: sign) of
/// element i of a word.
FP4MOE_HD int prepacked_bit(int element, int bit) {
  // Target of the bit in its raw pair: m, e0, e1 at 6, 7, 8; sign at 15; the
  // pair's high element 16 higher.
  const int target = (bit == 3 ? 15 : 6 + bit) + (element >= 4 ? 16 : 0);
  switch (element % 4) {
    case 0: return target;                              // in place
    case 1: return (target + 4) % 32;                   // rotated right by 4 when read
    case 2: return target - 6;                          // shifted left by 6 when read
    default: return bit == 2 ? target + 6 : target - 2;  // e1 shifted right by 6, the rest left by 2
  }
}

/// A standard word in the prepacked order.
FP4MOE_HD std::uint32_t prepack_word(std::uint32_t w) {
  std::uint32_t out = 0;
  for (int i = 0; i < 8; ++i)
    for (int b = 0; b < 4; ++b) out |= ((w >> (4 * i + b)) & 1u) << prepacked_bit(i, b);
  return out;
}

/// The inverse of prepack_word.
FP4MOE_HD std::uint32_t unprepack_word(std::uint32_t w) {
  std::uint32_t out = 0;
  for (int i = 0; i < 8; ++i)
    for (int b = 0; b < 4; ++b) out |= ((w >> prepacked_bit(i, b)) & 1u) << (4 * i + b);
  return out;
}

/// The four raw pairs of a prepacked word (pair p: elements p, p + 4), the
/// same values the standard order's mask-multiply-mask gives.
FP4MOE_HD void raw_pairs_prepacked(std::uint32_t w, std::uint32_t (&r)[4]) {
  r[0] = w & 0x81c081c0u;
  r[1] = ((w >> 4) | (w << 28)) & 0x81c081c0u;  // a rotate (one funnel shift)
  r[2] = (w << 6) & 0x81c081c0u;
  r[3] = ((w << 2) & 0x80c080c0u) | ((w >> 6) & 0x01000100u);
}

}  // namespace fp4moe::format
