// The CUDA-core route of the 8-token swap-AB tile (GemmConfig::kDp4a):
// FP4 weights times a few tokens without the tensor cores, exactly.
//
// wgmma takes BF16, so the tensor-core tiles convert every weight (13-14
// integer instructions a word of eight, four HMUL2 for its scale) however
// few tokens share it; at one token 15 of the 16 MMA columns are idle and
// that conversion sets the decode rows' pace. Here:
// - tokens: each stage's token rows become int8 2x (exact: E2M1 values
//   times two are integers up to 12) and each scale block's scale a float,
//   by each warp for itself (convert_token_word);
// - weights: two PRMTs turn a word's eight codes into the int8 magnitudes
//   2|w| from an 8-byte table with the code's sign bit as PRMT's
//   sign-replicate bit, so negative codes read 0 (the positive parts);
//   two more on the word with its sign bits flipped give the negative
//   parts (weight_parts);
// - IDP.4A adds the positive parts times 2x into one int32 and the
//   negative parts times 2x into another, both started at the bits of
//   1.5 * 2^23, so each holds 1.5 * 2^23 plus an integer (|.| <= 32 * 144)
//   as a float, and one FADD of the two is the block's exact integer dot
//   product (block_dot);
// - one FFMA adds it times the two scales into the FP32 sum. NVFP4: the
//   weight scale's E4M3 code shifted into a float's exponent field is
//   2^-120 times its value (subnormal codes included), so the token's scale
//   carries 2^120 / 4. MXFP4: both E8M0 scales exactly, the token's / 4.
// The result is the block sums' exact values added in FP32, like the
// tensor cores' FP32 accumulation. A probe of this loop streamed one
// token's G32 x4096x7168 weights at 1.04x the time of the same launch
// doing nothing (docs/PERF.md stop 53).
#pragma once

#include <cstdint>

#include "fp4moe/types.hpp"
#include "kernels/sm90/ptx/bit_ops.cuh"
#include "kernels/sm90/ptx/memory.cuh"

namespace fp4moe::kernels::dp4a {

/// K a scale block covers.
template <bool kNvfp4>
constexpr int kBlockK = block_size(kNvfp4 ? Fp4Format::kNVFP4 : Fp4Format::kMXFP4);

/// A token row's bytes in the stage's token buffer: int8 2x (BK), then
/// each scale block's scale as a float.
template <int BK, int kBlock>
constexpr int kTokenStride = BK + 4 * (BK / kBlock);

/// 2|v| of the E2M1 magnitudes 0-7: the table's high word (PRMT takes an
/// immediate only there; the low word is a register the caller keeps).
constexpr std::uint32_t kMagHi = 0x0c080604u;
constexpr std::uint32_t kMagLo = 0x03020100u;
/// 1.5 * 2^23: an int32 holding its bits plus n (|n| < 2^22) reads as the float 1.5 * 2^23 + n.
constexpr std::uint32_t kMagic = 0x4b400000u;

/// The four PRMT'd int8 words of an 8-code word: positive parts of codes
/// 0-3 and 4-7, then negative parts of codes 0-3 and 4-7.
struct WeightParts {
  std::uint32_t pos_lo, pos_hi, neg_lo, neg_hi;
};
__device__ __forceinline__ WeightParts weight_parts(std::uint32_t word, std::uint32_t mag_lo) {
  const std::uint32_t flipped = word ^ 0x88888888u;
  return {ptx::prmt(mag_lo, kMagHi, word), ptx::prmt(mag_lo, kMagHi, word >> 16), ptx::prmt(mag_lo, kMagHi, flipped),
          ptx::prmt(mag_lo, kMagHi, flipped >> 16)};
}

/// A scale block's exact dot product of a weight row (its kWords words'
/// parts) with a token's 2x values (two int8 words a weight word), times 4,
/// as a float.
template <int kWords>
__device__ __forceinline__ float block_dot(const WeightParts (&w)[kWords], const std::uint32_t (&x)[2 * kWords]) {
  int pos = int(kMagic), neg = int(kMagic);
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    pos = __dp4a(int(w[i].pos_lo), int(x[2 * i]), pos);
    neg = __dp4a(int(w[i].neg_lo), int(x[2 * i]), neg);
    pos = __dp4a(int(w[i].pos_hi), int(x[2 * i + 1]), pos);
    neg = __dp4a(int(w[i].neg_hi), int(x[2 * i + 1]), neg);
  }
  return __int_as_float(pos) - __int_as_float(neg);  // (exact: both lie in [2^23, 2^24))
}

/// A weight scale code as the factor the loop multiplies by. NVFP4: an
/// E4M3 code (positive) as a float 2^-120 times its value, its bits placed
/// at a float's exponent and mantissa (subnormal codes land on subnormal
/// floats, so the kernels must not flush them; no code gives more than
/// 2^-95). MXFP4: the E8M0 value 2^(code - 127) (code 0: 2^-127, a
/// subnormal float), with E8M0's NaN code 0xff read as 2^127: a block past
/// K (zero codes, token scale 0) must give 0, and its scale bytes are
/// padding, which may hold any code.
template <bool kNvfp4>
__device__ __forceinline__ float weight_scale(std::uint32_t code) {
  if constexpr (kNvfp4) return __uint_as_float(code << 20);
  return __uint_as_float(code ? min(code, 0xfeu) << 23 : 0x00400000u);
}

/// A token scale code as its factor: its value / 4 (the two 2x), NVFP4's
/// also times 2^120 against the weight factor's 2^-120 (two exact
/// multiplies: 2^238 is past a float).
template <bool kNvfp4>
__device__ __forceinline__ float token_scale(std::uint32_t code) {
  if constexpr (kNvfp4) return weight_scale<true>(code) * 0x1p118f * 0x1p120f;
  return weight_scale<false>(code) * 0.25f;
}

/// Token word `w` (of BK / 8 = 32: a warp's lanes) of token row `row` of a
/// stage: reads its 8 codes from the stage's 128-byte-swizzled token box at
/// `y` and writes their int8 2x into the row's slots of the token buffer at
/// `buf`; a block's first word also writes the block's scale, read from the
/// token band's scale chunks at `y_scales` (row `band_row` of its band).
/// `k_left`: K from the stage's start to K's end; a block past it gets
/// scale 0 (its codes are TMA's zero fill, its scale codes padding or stale,
/// which as floats could reach infinity).
template <bool kNvfp4, int BK>
__device__ __forceinline__ void convert_token_word(std::uint32_t y, std::uint32_t y_scales, std::uint32_t buf, int row,
                                                   int w, int band_row, std::uint32_t mag_lo, int k_left) {
  static_assert(BK == 256, "one 128-byte box row a stage");
  constexpr int kBlock = kBlockK<kNvfp4>;
  // (The box's swizzle and the scale chunk's layout written out here and in
  // the tile's consumer: through operand_items.cuh's swizzled and
  // scale_in_chunk, ptxas scheduled the measured kernels differently.)
  const std::uint32_t word = ptx::lds32(y + row * 128 + ((((w >> 2) ^ (row & 7))) << 4) + (w & 3) * 4);
  const WeightParts parts = weight_parts(word, mag_lo);
  // Per byte one of the two parts is zero, so byte-wise differences never borrow.
  const std::uint32_t x_lo = __vsub4(parts.pos_lo, parts.neg_lo), x_hi = __vsub4(parts.pos_hi, parts.neg_hi);
  const std::uint32_t dst = buf + row * kTokenStride<BK, kBlock>;
  ptx::sts64(dst + w * 8, make_uint2(x_lo, x_hi));
  if (w % (kBlock / 8) == 0) {
    const int block = w / (kBlock / 8);  // scale block of the stage (four a 512-byte chunk)
    const std::uint32_t code =
        ptx::lds8(y_scales + (block >> 2) * 512 + (band_row & 31) * 16 + (band_row >> 5) * 4 + (block & 3));
    const float scale = kBlock * block < k_left ? token_scale<kNvfp4>(code) : 0.0f;
    ptx::sts32(dst + BK + block * 4, __float_as_uint(scale));
  }
}

/// A warp's tokens of a stage: token rows 0 .. T - 1 (and below `valid`
/// where kRunTimeCount: the tile's BN with the count at run time), a word
/// of each a lane.
template <bool kNvfp4, int T, bool kRunTimeCount, int BK>
__device__ __forceinline__ void convert_tokens(std::uint32_t y, std::uint32_t y_scales, std::uint32_t buf, int lane,
                                               int band_row0, std::uint32_t mag_lo, int k_left, int valid) {
#pragma unroll
  for (int tk = 0; tk < T; ++tk)
    if (!kRunTimeCount || tk < valid)
      convert_token_word<kNvfp4, BK>(y, y_scales, buf, tk, lane, (band_row0 + tk) % 128, mag_lo, k_left);
}

/// Scale words (of four blocks' codes) a thread's half row of a 256-K stage holds.
template <bool kNvfp4>
constexpr int kScaleWords = 128 / kBlockK<kNvfp4> / 4;

/// A thread's half row h of a 256-K stage (128 K: its four 16-byte chunks,
/// whose 16 words are the half's scale blocks in turn, and its scale words
/// sc) against T tokens of the warp's buffer at `tok` (below `valid` where
/// kRunTimeCount), into total.
template <bool kNvfp4, int T, bool kRunTimeCount, int BK>
__device__ __forceinline__ void stage_dot(const uint4 (&chunk)[4], const std::uint32_t (&sc)[kScaleWords<kNvfp4>],
                                          std::uint32_t tok, int h, std::uint32_t mag_lo, int valid, float (&total)[T]) {
  constexpr int kBlock = kBlockK<kNvfp4>, kWords = kBlock / 8, kBlocks = 128 / kBlock;
  constexpr int kStride = kTokenStride<BK, kBlock>;
  const std::uint32_t words[16] = {chunk[0].x, chunk[0].y, chunk[0].z, chunk[0].w, chunk[1].x, chunk[1].y,
                                   chunk[1].z, chunk[1].w, chunk[2].x, chunk[2].y, chunk[2].z, chunk[2].w,
                                   chunk[3].x, chunk[3].y, chunk[3].z, chunk[3].w};
#pragma unroll
  for (int b = 0; b < kBlocks; ++b) {
    WeightParts w[kWords];
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = weight_parts(words[b * kWords + i], mag_lo);
    const float sw = weight_scale<kNvfp4>((sc[b >> 2] >> (8 * (b & 3))) & 0xffu);
    const int block = kBlocks * h + b;  // of the stage
    auto add_token = [&](int tk) {
      const std::uint32_t tb = tok + tk * kStride;
      std::uint32_t x[2 * kWords];
#pragma unroll
      for (int q = 0; q < kWords / 2; ++q) {
        const uint4 v = ptx::lds128(tb + block * kBlock + 16 * q);
        x[4 * q] = v.x;
        x[4 * q + 1] = v.y;
        x[4 * q + 2] = v.z;
        x[4 * q + 3] = v.w;
      }
      const float sx = __uint_as_float(ptx::lds32(tb + BK + block * 4));
      total[tk] = fmaf(block_dot<kWords>(w, x), sw * sx, total[tk]);
    };
    if constexpr (kRunTimeCount) {
      // Two tokens under one test of the count, so their dot products are
      // independent chains ptxas interleaves: a test a token serialised
      // them, and three tokens took 2.2x two tokens' time (docs/PERF.md
      // stop 54; pairs: 3-4 tokens 0.70-0.90x the time, stop 55). An odd
      // count's last pair adds into a row past it, which is never stored
      // (its buffer row may hold anything); a one-token group pays for two,
      // which the memory-bound 1-token rows did not show (0.996-1.009x).
      static_assert(T % 2 == 0, "pairs of tokens");
#pragma unroll
      for (int tp = 0; tp < T; tp += 2) {
        if (tp >= valid) break;
        add_token(tp);
        add_token(tp + 1);
      }
    } else {
#pragma unroll
      for (int tk = 0; tk < T; ++tk) add_token(tk);
    }
  }
}

}  // namespace fp4moe::kernels::dp4a
