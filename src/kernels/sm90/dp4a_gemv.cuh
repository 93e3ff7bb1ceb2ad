// The CUDA-core route of the 8-token swap-AB tile (GemmConfig::kDp4a):
// NVFP4 weights times a few tokens without the tensor cores, exactly.
//
// wgmma takes BF16, so the tensor-core tiles convert every weight (13-14
// integer instructions a word of eight, four HMUL2 for its scale) however
// few tokens share it; at one token 15 of the 16 MMA columns are idle and
// that conversion sets the decode rows' pace. Here:
// - tokens: each stage's token rows become int8 2x (exact: E2M1 values
//   times two are integers up to 12) and each 16-K block's scale a float
//   (2^118 times its value), by each warp for itself
//   (convert_token_word);
// - weights: two PRMTs turn a word's eight codes into the int8 magnitudes
//   2|w| from an 8-byte table with the code's sign bit as PRMT's
//   sign-replicate bit, so negative codes read 0 (the positive parts);
//   two more on the word with its sign bits flipped give the negative
//   parts (weight_parts);
// - IDP.4A adds the positive parts times 2x into one int32 and the
//   negative parts times 2x into another, both started at the bits of
//   1.5 * 2^23, so each holds 1.5 * 2^23 plus an integer (|.| <= 16 * 144)
//   as a float, and one FADD of the two is the block's exact integer dot
//   product (block_dot);
// - one FFMA adds it times the weight scale (its E4M3 code shifted into a
//   float's exponent field: 2^-120 times its value, subnormal codes
//   included) times the token's scale (2^118 = 2^120 / 4 times its value)
//   into the FP32 sum.
// The result is the block sums' exact values added in FP32, like the
// tensor cores' FP32 accumulation. A probe of this loop streamed one
// token's G32 x4096x7168 weights at 1.04x the time of the same launch
// doing nothing (docs/PERF.md stop 53).
#pragma once

#include <cstdint>

#include "kernels/sm90/ptx/memory.cuh"

namespace fp4moe::kernels::dp4a {

/// A token row's bytes in the stage's token buffer: int8 2x (BK), then
/// each 16-K block's scale as a float.
template <int BK>
constexpr int kTokenStride = BK + 4 * (BK / 16);

/// 2|v| of the E2M1 magnitudes 0-7: the table's high word (PRMT takes an
/// immediate only there; the low word is a register the caller keeps).
constexpr std::uint32_t kMagHi = 0x0c080604u;
constexpr std::uint32_t kMagLo = 0x03020100u;
/// 1.5 * 2^23: an int32 holding its bits plus n (|n| < 2^22) reads as the float 1.5 * 2^23 + n.
constexpr std::uint32_t kMagic = 0x4b400000u;

__device__ __forceinline__ std::uint32_t prmt(std::uint32_t lo, std::uint32_t hi, std::uint32_t sel) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(lo), "r"(hi), "r"(sel));
  return d;
}

/// The four PRMT'd int8 words of an 8-code word: positive parts of codes
/// 0-3 and 4-7, then negative parts of codes 0-3 and 4-7.
struct WeightParts {
  std::uint32_t pos_lo, pos_hi, neg_lo, neg_hi;
};
__device__ __forceinline__ WeightParts weight_parts(std::uint32_t word, std::uint32_t mag_lo) {
  const std::uint32_t flipped = word ^ 0x88888888u;
  return {prmt(mag_lo, kMagHi, word), prmt(mag_lo, kMagHi, word >> 16), prmt(mag_lo, kMagHi, flipped),
          prmt(mag_lo, kMagHi, flipped >> 16)};
}

/// A 16-K block's exact dot product of a weight row (two words' parts)
/// with a token's 2x values, times 4, as a float.
__device__ __forceinline__ float block_dot(const WeightParts& w0, const WeightParts& w1, const uint4& x) {
  int pos = int(kMagic), neg = int(kMagic);
  pos = __dp4a(int(w0.pos_lo), int(x.x), pos);
  neg = __dp4a(int(w0.neg_lo), int(x.x), neg);
  pos = __dp4a(int(w0.pos_hi), int(x.y), pos);
  neg = __dp4a(int(w0.neg_hi), int(x.y), neg);
  pos = __dp4a(int(w1.pos_lo), int(x.z), pos);
  neg = __dp4a(int(w1.neg_lo), int(x.z), neg);
  pos = __dp4a(int(w1.pos_hi), int(x.w), pos);
  neg = __dp4a(int(w1.neg_hi), int(x.w), neg);
  return __int_as_float(pos) - __int_as_float(neg);  // (exact: both lie in [2^23, 2^24))
}

/// An E4M3 scale code (positive) as a float 2^-120 times its value: the
/// code's bits placed at a float's exponent and mantissa (subnormal codes
/// land on subnormal floats, so the kernels must not flush them).
__device__ __forceinline__ float lowered_scale(std::uint32_t code) { return __uint_as_float(code << 20); }

/// Token word `w` (of BK / 8 = 32: a warp's lanes) of token row `row` of a stage: reads its 8
/// codes from the stage's 128-byte-swizzled token box at `y` and writes
/// their int8 2x into the row's slots of the token buffer at `buf`;
/// even words also write their 16-K block's scale, read from the token
/// band's scale chunks at `y_scales` (row `band_row` of its band).
/// `k_left`: K from the stage's start to K's end; a block past it gets
/// scale 0 (its codes are TMA's zero fill, its scale codes padding or stale,
/// which as floats could reach infinity).
template <int BK>
__device__ __forceinline__ void convert_token_word(std::uint32_t y, std::uint32_t y_scales, std::uint32_t buf, int row,
                                                   int w, int band_row, std::uint32_t mag_lo, int k_left) {
  static_assert(BK == 256, "one 128-byte box row a stage");
  const std::uint32_t word = ptx::lds32(y + row * 128 + ((((w >> 2) ^ (row & 7))) << 4) + (w & 3) * 4);
  const WeightParts parts = weight_parts(word, mag_lo);
  // Per byte one of the two parts is zero, so byte-wise differences never borrow.
  const std::uint32_t x_lo = __vsub4(parts.pos_lo, parts.neg_lo), x_hi = __vsub4(parts.pos_hi, parts.neg_hi);
  const std::uint32_t dst = buf + row * kTokenStride<BK>;
  ptx::sts64(dst + w * 8, make_uint2(x_lo, x_hi));
  if ((w & 1) == 0) {
    const int block = w >> 1;  // 16-K block of the stage
    const std::uint32_t code =
        ptx::lds8(y_scales + (block >> 2) * 512 + (band_row & 31) * 16 + (band_row >> 5) * 4 + (block & 3));
    // 2^120 / 4 times its value, against the weight scale's 2^-120 (two
    // exact multiplies: 2^238 is past a float).
    const float scale = 16 * block < k_left ? lowered_scale(code) * 0x1p118f * 0x1p120f : 0.0f;
    ptx::sts32(dst + BK + block * 4, __float_as_uint(scale));
  }
}

/// A warp's tokens of a stage: token rows 0 .. T - 1 (and below `valid`
/// where T is the tile's BN: the run-time count), a word of each a lane.
template <int T, bool kRunTimeCount, int BK>
__device__ __forceinline__ void convert_tokens(std::uint32_t y, std::uint32_t y_scales, std::uint32_t buf, int lane,
                                               int band_row0, std::uint32_t mag_lo, int k_left, int valid) {
#pragma unroll
  for (int tk = 0; tk < T; ++tk)
    if (!kRunTimeCount || tk < valid) convert_token_word<BK>(y, y_scales, buf, tk, lane, (band_row0 + tk) % 128, mag_lo, k_left);
}

/// A thread's half row of a stage (16-K blocks 8h .. 8h + 7: its four
/// 16-byte chunks and two scale words) against T tokens of the warp's
/// buffer at `tok` (below `valid` where kRunTimeCount), into total.
template <int T, bool kRunTimeCount, int BK>
__device__ __forceinline__ void stage_dot(const uint4 (&chunk)[4], const std::uint32_t (&sc)[2], std::uint32_t tok, int h,
                                          std::uint32_t mag_lo, int valid, float (&total)[T]) {
  constexpr int kStride = kTokenStride<BK>;
#pragma unroll
  for (int b = 0; b < 8; ++b) {
    const WeightParts w0 = weight_parts((b & 1) ? chunk[b >> 1].z : chunk[b >> 1].x, mag_lo);
    const WeightParts w1 = weight_parts((b & 1) ? chunk[b >> 1].w : chunk[b >> 1].y, mag_lo);
    const float sw = lowered_scale((sc[b >> 2] >> (8 * (b & 3))) & 0xffu);
#pragma unroll
    for (int tk = 0; tk < T; ++tk) {
      if (kRunTimeCount && tk >= valid) continue;
      const std::uint32_t tb = tok + tk * kStride;
      const float sx = __uint_as_float(ptx::lds32(tb + BK + (8 * h + b) * 4));
      total[tk] = fmaf(block_dot(w0, w1, ptx::lds128(tb + (8 * h + b) * 16)), sw * sx, total[tk]);
    }
  }
}

}  // namespace fp4moe::kernels::dp4a
