// Integer bit-manipulation wrappers whose single-instruction form the compiler
// does not always find on its own.
#pragma once

#include <cstdint>

namespace fp4moe::ptx {

/// (a & mask) | (b & ~mask) in one LOP3 (truth table 0xE4 for a=0xF0,
/// b=0xCC, c=0xAA).
__device__ __forceinline__ std::uint32_t bit_select(std::uint32_t a, std::uint32_t b, std::uint32_t mask) {
  std::uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xE4;" : "=r"(d) : "r"(a), "r"(b), "r"(mask));
  return d;
}


/// prmt.b32 in its default mode: result byte i is byte (sel nibble i & 7) of
/// {b:a}; when the nibble's bit 3 is set, the byte is instead filled with the
/// sign bit of the selected byte. (__byte_perm uses only the low 3 bits, so it
/// has no sign-fill mode.)
__device__ __forceinline__ std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t sel) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

/// x, through a volatile move ptxas cannot see through: what derives from
/// it is computed where it is used, not hoisted out of the loop around it
/// (where a loop-invariant address set would hold registers across the
/// loop, and spill them).
__device__ __forceinline__ std::uint32_t unhoisted(std::uint32_t x) {
  std::uint32_t d;
  asm volatile("mov.b32 %0, %1;" : "=r"(d) : "r"(x));
  return d;
}

}  // namespace fp4moe::ptx
