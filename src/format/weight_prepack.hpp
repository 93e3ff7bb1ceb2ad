// The prepacked weight bit order (prepack_weights, fp4moe/quantize.hpp).
//
// The GEMMs turn each 32-bit word of 8 E2M1 codes (element i in nibble i)
// into four BF16x2 "raw pairs" (fp4_dequant.cuh): pair p holds elements p
// and p + 4, each code s|e1 e0|m placed as BF16 bits sign 15, e1 e0 m at 8..6
// (and 31, 24..22 for the high half). From the standard order that takes a
// mask, a multiply and a mask per pair (13-14 integer instructions a word).
// Prepacking permutes the bits inside every word so that the pairs come out
// in 9, six of them on the integer ALU (the pipe the decode loop is bound
// by, docs/PERF.md stop 33) and three on the FMA pipe: pair 0 is stored in
// place (a mask), pair 1 three bits down and pair 2 six (a left shift, which
// ptxas issues as IMAD.SHL, and a mask), pair 3 scattered so that one
// shift right by 8, a mask, a multiply by 1 + 2^5 + 2^10 and a mask gather
// it (the three shifted copies of the masked bits do not overlap, so the
// sum is an OR). The previous order (stop 22) took 7 + 2: a rotate for pair
// 1 and two shifts for pair 3. No order makes all four pairs a single shift
// and mask: the eight bits a pair needs do not tile a 32-bit word by
// translation, and with left shifts only the twelve magnitude bits of the
// low halves would need twelve sources below bit 9 (an exhaustive search,
// stop 36, also found no order with two single-shift pairs and two
// mask-multiply-mask ones).
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
  const int high = element >= 4 ? 16 : 0;
  const int target = (bit == 3 ? 15 : 6 + bit) + high;
  switch (element % 4) {
    case 0: return target;      // in place
    case 1: return target - 3;  // shifted left by 3 when read
    case 2: return target - 6;  // shifted left by 6 when read
    default:
      // Read as ((w >> 8) & 0x006c006c) · (1 + 2^5 + 2^10): m by the 2^0
      // copy from bit 14, e0 and e1 by the 2^5 one from 10 and 11, the sign
      // by the 2^10 one from 13.
      return (bit == 0 ? 14 : bit == 1 ? 10 : bit == 2 ? 11 : 13) + high;
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
  r[1] = (w << 3) & 0x81c081c0u;
  r[2] = (w << 6) & 0x81c081c0u;
  r[3] = (((w >> 8) & 0x006c006cu) * 0x421u) & 0x81c081c0u;  // 0x421 = 1 + 2^5 + 2^10
}

}  // namespace fp4moe::format
