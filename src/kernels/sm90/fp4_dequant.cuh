// FP4 (E2M1) → BF16 on the device, exactly, with the block scale applied.
//
// Raw conversion. An E2M1 code s|e1 e0|m placed as BF16 bits
// (s << 15) | (e1 e0 m << 6) is the BF16 number E2M1 · 2^-126 for every code:
// e ≥ 1 gives exponent field e (value 2^(e-127)·(1 + m/2)), e = 0 gives the
// subnormal m·2^-127 (= 0.5·m·2^-126). So one shift-and-mask builds an exact,
// scaled copy; the scale multiply fixes the 2^-126.
//
// Scales. NVFP4: one multiply by s·2^117 (an E4M3 s ≤ 448 keeps this below
// 2^126, inside BF16), giving E2M1·s·2^-9 exactly (6 significant bits); the
// GEMM epilogue multiplies by 2^18. MXFP4: a multiply by 2^126 (→ exact E2M1)
// and one by 2^e (exact while E2M1·2^e stays in BF16's range: e ≤ 125).
//
// Pairs. A 32-bit word q holds 8 codes, element 2b in the low nibble of byte b
// (the storage order). pair(q, b) is the BF16x2 register {element 2b (low
// half), element 2b+1 (high half)}.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/sm90/ptx/bit_ops.cuh"

namespace fp4moe::kernels {

/// Nibbles of the four bytes split into low and high nibble words:
/// lo = elements 0,2,4,6 (one per byte, in bits 0-3), hi = elements 1,3,5,7.
struct NibbleSplit {
  std::uint32_t lo, hi;
};
__device__ __forceinline__ NibbleSplit split_nibbles(std::uint32_t q) {
  return {q & 0x0f0f0f0fu, (q >> 4) & 0x0f0f0f0fu};
}

/// Raw BF16x2 (values E2M1·2^-126) of the two elements of one byte, from the
/// split nibbles of its word: `sel` (pair_selector) makes PRMT put lo's byte
/// at byte 0 and hi's at byte 2, with zero bytes 1 and 3 (nibble 0x8
/// replicates the sign of lo's byte 0, which is below 0x80; this needs
/// ptx::prmt, not __byte_perm). Then v·(2^6 + 2^12) lays each nibble's
/// magnitude at bits 6-8 / 22-24 and its sign at 15 / 31 (the two shifted
/// copies do not overlap, so the sum is an OR) and the mask keeps those bits.
__device__ __forceinline__ std::uint32_t raw_pair_from(std::uint32_t lo, std::uint32_t hi, std::uint32_t sel) {
  return (ptx::prmt(lo, hi, sel) * 4160u) & 0x81c081c0u;
}

/// The PRMT selector that picks byte b of the split nibbles (see raw_pair_from).
__host__ __device__ constexpr std::uint32_t pair_selector(int b) {
  return std::uint32_t(b) | (0x8u << 4) | ((4u + b) << 8) | (0x8u << 12);
}

__device__ __forceinline__ std::uint32_t bf16x2_mul(std::uint32_t a, std::uint32_t b) {
  const __nv_bfloat162 r = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&a), *reinterpret_cast<const __nv_bfloat162*>(&b));
  return *reinterpret_cast<const std::uint32_t*>(&r);
}

/// A block scale, prepared once per block as the BF16x2 factor(s) the raw
/// pairs are multiplied by (both halves equal).
struct PairScale {
  std::uint32_t first;   ///< NVFP4: s·2^117; MXFP4: 2^126
  std::uint32_t second;  ///< MXFP4: 2^e; unused for NVFP4
};

/// BF16 bits of a finite, exactly representable float (no rounding needed).
__device__ __forceinline__ std::uint32_t bf16_bits_exact(float f) { return __float_as_uint(f) >> 16; }

__device__ __forceinline__ PairScale nvfp4_pair_scale(std::uint8_t e4m3) {
  // E4M3 → float exactly (cvt via f16), then ·2^117 (exact, < 2^126); a NaN
  // scale (0x7F) stays NaN.
  const float s = __half2float(__half(__nv_cvt_fp8_to_halfraw(e4m3, __NV_E4M3))) * 1.6615349947311448e35f;  // 2^117
  const std::uint32_t b = bf16_bits_exact(s);
  return {b | (b << 16), 0};
}

__device__ __forceinline__ PairScale mxfp4_pair_scale(std::uint8_t ue8m0) {
  // 2^126 = BF16 0x7E80; 2^(e-127) = BF16 exponent field e (0: 2^-127 is the
  // subnormal 0x0040); 0xFF (NaN) → 0x7FC0.
  const std::uint32_t e = ue8m0 == 0 ? 0x0040u : (ue8m0 == 0xff ? 0x7fc0u : (std::uint32_t(ue8m0) << 7));
  return {0x7e807e80u, e | (e << 16)};
}

/// The per-code word a scale table holds (one 32-bit entry per scale code,
/// built once per CTA so the main loop turns a code into its factor with one
/// shared-memory load): NVFP4 the factor s·2^117, MXFP4 2^e (its other factor,
/// 2^126, is the same for every code).
template <bool kNvfp4>
__device__ __forceinline__ std::uint32_t scale_table_entry(std::uint8_t code) {
  return kNvfp4 ? nvfp4_pair_scale(code).first : mxfp4_pair_scale(code).second;
}
template <bool kNvfp4>
__device__ __forceinline__ PairScale pair_scale_from_table(std::uint32_t entry) {
  return kNvfp4 ? PairScale{entry, 0u} : PairScale{0x7e807e80u, entry};
}

template <bool kNvfp4>
__device__ __forceinline__ std::uint32_t apply_scale(std::uint32_t raw, const PairScale& s) {
  if constexpr (kNvfp4) {
    return bf16x2_mul(raw, s.first);
  } else {
    return bf16x2_mul(bf16x2_mul(raw, s.first), s.second);
  }
}

/// The GEMM epilogue factor that undoes the offset the scaled pairs carry:
/// 2^18 for NVFP4 (each operand carries 2^-9), 1 for MXFP4.
template <bool kNvfp4>
__device__ __forceinline__ constexpr float dequant_offset_correction() {
  return kNvfp4 ? 262144.0f : 1.0f;
}

// ------------------------------------------------------------------------
// Operand tiles. The GEMM permutes K inside every 32-element chunk, the same
// way for both operands (so the product is unchanged): real k r = 8j + 4s +
// 2h + e goes to logical position 16s + 8h + 2j + e. That order lets one
// 16-byte FP4 chunk become four 16-byte BF16 pieces with byte selects only
// (logical_piece), where the plain order would need nibble shuffles. (It
// was chosen when one operand came from ldmatrix registers, whose fragment
// layout it matches.)

/// Logical piece q ∈ 0..3 of one 32-k chunk of one row: the chunk's 16 FP4
/// bytes are words w[0..3] (storage order), split into nibbles in n[]; piece
/// q is 8 BF16 values, real k {2q, 2q+1, 2q+8, 2q+9, 2q+16, 2q+17, 2q+24,
/// 2q+25} = byte q of w[0], w[1], w[2], w[3]. NVFP4: the first two pairs lie
/// in the chunk's first 16-block (scale s0), the last two in the second (s1);
/// MXFP4: one block (s0 = s1).
template <bool kNvfp4>
__device__ __forceinline__ uint4 logical_piece(const NibbleSplit (&n)[4], int q, const PairScale& s0, const PairScale& s1) {
  const std::uint32_t sel = pair_selector(q);
  return make_uint4(apply_scale<kNvfp4>(raw_pair_from(n[0].lo, n[0].hi, sel), s0),
                    apply_scale<kNvfp4>(raw_pair_from(n[1].lo, n[1].hi, sel), s0),
                    apply_scale<kNvfp4>(raw_pair_from(n[2].lo, n[2].hi, sel), s1),
                    apply_scale<kNvfp4>(raw_pair_from(n[3].lo, n[3].hi, sel), s1));
}

/// The four scaled BF16x2 pairs of one FP4 word (pair b = byte b: elements
/// 2b, 2b+1). For an operand fed to wgmma from registers (ptx/wgmma.cuh has
/// the fragment layout) the K permutation above puts real k 8j..8j+7 of a
/// chunk, which is word j of its 16 bytes, in the fragments of quad lane j:
/// k16 step s of the chunk takes pair 2s as a[0] (row g) / a[1] (row g+8),
/// logical 2j, 2j+1, and pair 2s+1 as a[2] / a[3], logical 2j+8, 2j+9. One
/// word lies in one scale block (16 or 32 elements).
template <bool kNvfp4>
__device__ __forceinline__ void scaled_pairs(std::uint32_t q, const PairScale& s, std::uint32_t (&out)[4]) {
  const NibbleSplit n = split_nibbles(q);
#pragma unroll
  for (int b = 0; b < 4; ++b) out[b] = apply_scale<kNvfp4>(raw_pair_from(n.lo, n.hi, pair_selector(b)), s);
}

/// Logical position (0..31) of real k r (0..31) inside a chunk.
__host__ __device__ constexpr int logical_k(int r) {
  return 16 * ((r % 8) / 4) + 8 * ((r % 4) / 2) + 2 * (r / 8) + r % 2;
}

}  // namespace fp4moe::kernels
