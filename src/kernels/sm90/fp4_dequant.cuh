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
// Pairs. A 32-bit word q holds 8 codes, element i in nibble i (bits 4i..4i+3,
// the storage order). raw_pair_at(q, p), p = 0..3, is the BF16x2 register
// {element p (low half), element p + 4 (high half)}: two nibbles 16 bits
// apart, which one multiply can place at once.
//
// The FP8 route's K order inside a 32-K block (fp8_logical_k) differs: real
// k 8j + 2t + h goes to logical 16h + 4j + t, so word j of a chunk is the
// E4M3 words e4m3_even (logical 4j..4j+3) and e4m3_odd (16+4j..16+4j+3):
// exactly the bytes of quad lane j's k32 A fragments (ptx/wgmma.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "format/weight_prepack.hpp"
#include "kernels/sm90/ptx/bit_ops.cuh"

namespace fp4moe::kernels {

/// Raw BF16x2 (values E2M1·2^-126) of elements p and p + 4 of word q, p a
/// run-time value. Shifted down by 4p, the two nibbles sit at bits 0-3 and
/// 16-19; masked out alone and multiplied by 2^6 + 2^12, each nibble's
/// magnitude lands at bits 6-8 / 22-24 and its sign at 15 / 31, the four
/// shifted copies do not overlap (so the sum is an OR), and the mask keeps
/// those bits.
__device__ __forceinline__ std::uint32_t raw_pair_at(std::uint32_t q, int p) {
  return (((q >> (4 * p)) & 0x000f000fu) * 4160u) & 0x81c081c0u;
}

/// raw_pair_at for a compile-time p, one instruction cheaper for odd p: the
/// nibbles at bits 4-7 and 20-23 need no shift, only the multiplier 2^2 + 2^8.
/// 13 instructions for a word's four pairs.
template <int P>
__device__ __forceinline__ std::uint32_t raw_pair(std::uint32_t q) {
  const std::uint32_t w = P >= 2 ? q >> 8 : q;
  return P % 2 == 0 ? ((w & 0x000f000fu) * 4160u) & 0x81c081c0u : ((w & 0x00f000f0u) * 260u) & 0x81c081c0u;
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

/// ue8m0: a code, below 256 (a shared byte load's 32-bit result needs no mask).
__device__ __forceinline__ PairScale mxfp4_pair_scale(std::uint32_t ue8m0) {
  // 2^126 = BF16 0x7E80; 2^(e-127) = BF16 exponent field e (0: 2^-127 is the
  // subnormal 0x0040); 0xFF (NaN) → 0x7FC0.
  const std::uint32_t e = ue8m0 == 0 ? 0x0040u : (ue8m0 == 0xff ? 0x7fc0u : ue8m0 << 7);
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

/// MXFP4 in one multiply. The raw pairs carry 2^-126, so a block's whole
/// factor is 2^(e-1) (e the UE8M0 code), one BF16 number for codes up to 128
/// (scales up to 2: a block amax below 16, where weights' blocks lie); past
/// 128 it overflows BF16 and a pair takes apply_scale's two multiplies. The
/// factor is arithmetic, no table load: BF16 exponent field code + 126 in
/// both halves (code · (2^7 + 2^23) cannot carry between them).
constexpr std::uint32_t kMxfp4OneMultiplyMaxCode = 128;
/// The factor from the code already in both halves (code | code << 16:
/// mxfp4_code_pair).
__device__ __forceinline__ std::uint32_t mxfp4_one_multiply_factor_of_pair(std::uint32_t code_pair) {
  return code_pair * 0x80u + 0x3f003f00u;
}
__device__ __forceinline__ std::uint32_t mxfp4_one_multiply_factor(std::uint32_t code) {
  return mxfp4_one_multiply_factor_of_pair(code * 0x00010001u);
}
/// Byte b of a word of four scale codes as code | code << 16 (one prmt:
/// bytes b, zero, b, zero).
__device__ __forceinline__ std::uint32_t mxfp4_code_pair(std::uint32_t codes, int b) {
  return ptx::prmt(codes, 0u, std::uint32_t(b) * 0x0101u + 0x4040u);
}
/// Bit 7 of each byte of the result is set where that byte of a word of
/// four codes is past kMxfp4OneMultiplyMaxCode (0x80): its bit 7 is set and
/// its low seven bits are not zero (plus 0x7f they carry into bit 7, never
/// out of the byte). Zero: every code of the word allows one multiply.
__host__ __device__ constexpr std::uint32_t mxfp4_codes_past_one_multiply(std::uint32_t codes) {
  static_assert(kMxfp4OneMultiplyMaxCode == 0x80, "the byte test");
  return codes & ((codes & 0x7f7f7f7fu) + 0x7f7f7f7fu) & 0x80808080u;
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
// way for both operands (so the product is unchanged): real k r = 8j + 2s +
// h + 4e (j = r / 8, e = (r % 8) / 4, s = (r % 4) / 2, h = r % 2) goes to
// logical position 16s + 8h + 2j + e. In that order every BF16x2 pair an
// operand needs is a raw_pair_at of one FP4 word: logical 2j, 2j+1 of a k16
// step are elements (2s + h, 2s + h + 4) of word j.

/// Half of logical piece q (below): its 8 bytes from words w0, w1 (words 0-1
/// or 2-3 of the chunk, one 16-block), scale s.
template <bool kNvfp4>
__device__ __forceinline__ uint2 logical_half_piece(std::uint32_t w0, std::uint32_t w1, int q, const PairScale& s) {
  return make_uint2(apply_scale<kNvfp4>(raw_pair_at(w0, q), s), apply_scale<kNvfp4>(raw_pair_at(w1, q), s));
}
/// Logical piece q ∈ 0..3 of one 32-k chunk of one row, whose 16 FP4 bytes
/// are words w[0..3] (storage order): 8 BF16 values, logical 8q..8q+7 = real
/// k {q, q+4, 8+q, 12+q, 16+q, 20+q, 24+q, 28+q} = raw_pair_at(w[j], q) for j =
/// 0..3. NVFP4: words 0-1 lie in the chunk's first 16-block (scale s0), words
/// 2-3 in the second (s1); MXFP4: one block (s0 = s1).
template <bool kNvfp4>
__device__ __forceinline__ uint4 logical_piece(const uint4& w, int q, const PairScale& s0, const PairScale& s1) {
  const uint2 lo = logical_half_piece<kNvfp4>(w.x, w.y, q, s0), hi = logical_half_piece<kNvfp4>(w.z, w.w, q, s1);
  return make_uint4(lo.x, lo.y, hi.x, hi.y);
}

/// The four raw pairs of one FP4 word (pair p: elements p, p + 4), from the
/// standard bit order or (kPrepacked) the prepacked one
/// (format/weight_prepack.hpp): the same pairs either way.
template <bool kPrepacked>
__device__ __forceinline__ void raw_pairs(std::uint32_t q, std::uint32_t (&r)[4]) {
  if constexpr (kPrepacked) {
    format::raw_pairs_prepacked(q, r);
  } else {
    r[0] = raw_pair<0>(q);
    r[1] = raw_pair<1>(q);
    r[2] = raw_pair<2>(q);
    r[3] = raw_pair<3>(q);
  }
}

/// The four scaled BF16x2 pairs of one FP4 word (pair p: elements p, p + 4).
/// For an operand fed to wgmma from registers (ptx/wgmma.cuh has the fragment
/// layout) the K permutation puts real k 8j..8j+7 of a chunk, which is word
/// j of its 16 bytes, in the fragments of quad lane j: k16 step s of the
/// chunk takes pair 2s as a[0] (row g) / a[1] (row g+8), logical 2j, 2j+1,
/// and pair 2s+1 as a[2] / a[3], logical 2j+8, 2j+9. One word lies in one
/// scale block (16 or 32 elements).
template <bool kNvfp4, bool kPrepacked = false>
__device__ __forceinline__ void scaled_pairs(std::uint32_t q, const PairScale& s, std::uint32_t (&out)[4]) {
  raw_pairs<kPrepacked>(q, out);
#pragma unroll
  for (int p = 0; p < 4; ++p) out[p] = apply_scale<kNvfp4>(out[p], s);
}

/// All four logical pieces of a chunk (piece q = logical_piece(w, q, ...)),
/// with the compile-time pair forms: piece q is pair q of words 0..3.
template <bool kNvfp4, bool kPrepacked = false>
__device__ __forceinline__ void logical_pieces(const uint4& w, const PairScale& s0, const PairScale& s1, uint4 (&out)[4]) {
  const std::uint32_t words[4] = {w.x, w.y, w.z, w.w};
  std::uint32_t pr[4][4];  // [word][pair]
#pragma unroll
  for (int i = 0; i < 4; ++i) scaled_pairs<kNvfp4, kPrepacked>(words[i], i < 2 ? s0 : s1, pr[i]);
#pragma unroll
  for (int q = 0; q < 4; ++q) out[q] = make_uint4(pr[0][q], pr[1][q], pr[2][q], pr[3][q]);
}

// ------------------------------------------------------------------------
// The lane-block order (the swap-AB tiles that take it, gemm_config.cuh
// kLaneBlocks): K permuted inside each 64-K sub-step, the same way for both
// operands, so that quad lane j's A fragments of all four k16 steps come
// from one NVFP4 block a row, real k 16j..16j+15 (words 2j, 2j + 1 of the
// sub-step's eight), which lie in one MXFP4 block (2sub + j/2 of the
// stage). Real k 16j + 8w + 4e + t goes to step t, column 8w + 2j + e:
// raw pair t of word 2j + w fills columns 8w + 2j and 8w + 2j + 1 of step
// t, i.e. A fragment a[2w + h] (row g + 8h) of step t, and in a BF16 row of
// the sub-step (eight 16-byte pieces, two a step) bytes 4j..4j+3 of piece
// 2t + w.

/// Logical position (16t + column) of real k r (0..63) inside a sub-step.
__host__ __device__ constexpr int lane_block_logical_k(int r) {
  return 16 * (r % 4) + 8 * ((r % 16) / 8) + 2 * (r / 16) + (r % 8) / 4;
}

// ------------------------------------------------------------------------
// The FP8 route (MXFP4 only): E2M1 → E4M3 without the scale. An E2M1 code
// s|e1 e0|m placed as E4M3 bits (s << 7) | (e1 e0 m << 2) is the E4M3 number
// E2M1 · 2^-6 for every code (e ≥ 1: exponent field e, value
// 2^(e-7)·(1 + m/2); e = 0: the subnormal m·2^-7 = 0.5·m·2^-6), so a product
// of two such operands carries 2^-12, which the block-scale factors undo
// (fp8_scale_table_entry). One FP4 word (8 codes, element i in nibble i)
// gives two E4M3 words: its even elements 0, 2, 4, 6 (nibbles at the low
// half of each byte: sign 4 bits up, magnitude 2) and its odd elements 1, 3,
// 5, 7 (nibbles at the high half: sign in place, magnitude 2 bits down).

/// E4M3 bytes of elements 0, 2, 4, 6 of word q (byte t: element 2t).
__device__ __forceinline__ std::uint32_t e4m3_even(std::uint32_t q) {
  return ((q << 2) & 0x1c1c1c1cu) | ((q << 4) & 0x80808080u);
}
/// E4M3 bytes of elements 1, 3, 5, 7 of word q (byte t: element 2t + 1).
__device__ __forceinline__ std::uint32_t e4m3_odd(std::uint32_t q) {
  return (q & 0x80808080u) | ((q >> 2) & 0x1c1c1c1cu);
}

/// The FP8 route's scale table entry for a UE8M0 code: FP32 bits of
/// 2^(e + 6) (e = code - 127; the 2^6 undoes one operand's E4M3 offset), so
/// the product of an X and a Y entry is the block's whole factor. Exact for
/// codes up to 248 (e ≤ 121); past that +inf, 0xFF (NaN) stays NaN.
__device__ __forceinline__ std::uint32_t fp8_scale_table_entry(std::uint8_t ue8m0) {
  if (ue8m0 == 0xff) return 0x7fc00000u;
  const std::uint32_t biased = std::uint32_t(ue8m0) + 6u;  // FP32 exponent field of 2^(code - 121)
  return biased >= 255u ? 0x7f800000u : biased << 23;
}

/// Logical position (0..31) of real k r (0..31) inside a chunk.
__host__ __device__ constexpr int logical_k(int r) {
  return 16 * ((r % 4) / 2) + 8 * (r % 2) + 2 * (r / 8) + (r % 8) / 4;
}
/// The same for the FP8 route.
__host__ __device__ constexpr int fp8_logical_k(int r) { return 16 * (r % 2) + 4 * (r / 8) + (r % 8) / 2; }

/// The real k (0..63) at logical position c of a 64-K sub-step, in the
/// lane-block order or the chunk order (two chunks side by side). In both,
/// logical c = 2i, 2i + 1 is a raw pair: real k r and r + 4, elements r % 8
/// (below 4) and r % 8 + 4 of FP4 word r / 8.
__host__ __device__ constexpr int sub_step_real_k(bool lane_blocks, int c) {
  for (int r = 0; r < 64; ++r)
    if ((lane_blocks ? lane_block_logical_k(r) : 32 * (r / 32) + logical_k(r % 32)) == c) return r;
  return -1;
}

}  // namespace fp4moe::kernels
