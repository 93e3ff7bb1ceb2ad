// One quantizer task on the GPU: a thread's input bytes (one quantization
// block, or two NVFP4 blocks of BF16; 64 bytes, 128 for an MXFP4 block of
// FP32) in registers become packed E2M1 codes and block scales, stored to
// global memory. Shared by the register-streaming
// kernel of quantize_gpu.cu (FP32 input and BF16 → MXFP4: loads straight to
// registers) and quantize_tma.cu (BF16 → NVFP4 through a TMA ring in shared
// memory).
//
// The rules are the exact fast forms of fast_rules.hpp; tests hold the GPU
// output bit-identical to the CPU quantizer's literal rules.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "format/block_rules.hpp"
#include "format/fast_rules.hpp"
#include "kernels/sm90/ptx/bit_ops.cuh"
#include "kernels/sm90/ptx/memory.cuh"

namespace fp4moe::detail {

/// kElems contiguous input elements, loaded as 16-byte vectors.
template <class In, int kElems_>
struct InputBlock {
  static constexpr int kElems = kElems_;
  static constexpr int kPerVec = 16 / int(sizeof(In));  // 8 BF16 or 4 FP32
  static constexpr int kVecs = kElems_ / kPerVec;
  uint4 raw[kVecs];

  __device__ void load(const In* p) {
#pragma unroll
    for (int v = 0; v < kVecs; ++v) raw[v] = __ldg(reinterpret_cast<const uint4*>(p) + v);
  }
  /// From a TMA box row written with the 128-byte swizzle: 16-byte chunk c of
  /// box row r sits at chunk c ^ (r % 8) of that row. `row_addr` is the
  /// row's shared address, `first_chunk` the task's first chunk.
  __device__ void load_swizzled(std::uint32_t row_addr, std::uint32_t row, std::uint32_t first_chunk) {
#pragma unroll
    for (int v = 0; v < kVecs; ++v) raw[v] = ptx::lds128(row_addr + (((first_chunk + v) ^ (row % 8)) << 4));
  }
  /// The XOR of every loaded word: a value that exists only once all the
  /// loads have returned (ptx::mbar_arrive_after's `dep`).
  __device__ std::uint32_t loaded_token() const {
    std::uint32_t t = 0;
#pragma unroll
    for (int v = 0; v < kVecs; ++v) t ^= raw[v].x ^ raw[v].y ^ raw[v].z ^ raw[v].w;
    return t;
  }
  /// Max of the |x| bit patterns (see block_rules.hpp) over elements
  /// [first, first + count).
  __device__ std::uint32_t amax_bits(int first = 0, int count = kElems_) const {
    std::uint32_t m = 0;
#pragma unroll
    for (int v = first / kPerVec; v < (first + count) / kPerVec; ++v) {
      const std::uint32_t w[4] = {raw[v].x, raw[v].y, raw[v].z, raw[v].w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (sizeof(In) == 2) {
          m = __vmaxu2(m, w[i] & 0x7fff7fffu);  // two |bf16| patterns at once
        } else {
          m = max(m, w[i] & 0x7fffffffu);
        }
      }
    }
    if constexpr (sizeof(In) == 2) m = max(m << 16, m & 0xffff0000u);
    return m;
  }
  /// The sign bits of elements [first, first + 8) (first a multiple of 8) at
  /// the sign positions of a packed E2M1 word: bit 4i + 3 for element
  /// first + i. Byte permutes gather the input bytes that hold the signs:
  /// A (sign-replicated, bit 3 set) for the even elements, B (raw, bit 7)
  /// for the odd ones; 4 to 6 PRMTs per 8 elements instead of a shift and a
  /// mask per element.
  __device__ std::uint32_t sign_nibbles8(int first) const {
    std::uint32_t a, b;
    if constexpr (sizeof(In) == 2) {
      const uint4& r = raw[first / 8];
      // The high byte of each BF16 holds its sign: byte 1 (even element) and
      // byte 3 (odd element) of every word. Low half: even elements
      // sign-replicated; high half: odd elements raw.
      const std::uint32_t lo = ptx::prmt(r.x, r.y, 0x73D9), hi = ptx::prmt(r.z, r.w, 0x73D9);
      a = ptx::prmt(lo, hi, 0x5410);
      b = ptx::prmt(lo, hi, 0x7632);
    } else {
      const uint4& p = raw[first / 4];
      const uint4& q = raw[first / 4 + 1];
      // One FP32 per word, sign in byte 3.
      a = ptx::prmt(ptx::prmt(p.x, p.z, 0x00FB), ptx::prmt(q.x, q.z, 0xFB00), 0x7610);
      b = ptx::prmt(ptx::prmt(p.y, p.w, 0x0073), ptx::prmt(q.y, q.w, 0x7300), 0x7610);
    }
    return (a & 0x08080808u) | (b & 0x80808080u);
  }
  /// Element i as a float (exact).
  __device__ float element(int i) const {
    const uint4& r = raw[i / kPerVec];
    const int j = i % kPerVec;
    if constexpr (sizeof(In) == 2) {
      const std::uint32_t w = (j / 2 == 0) ? r.x : (j / 2 == 1) ? r.y : (j / 2 == 2) ? r.z : r.w;
      return __uint_as_float(j % 2 ? (w & 0xffff0000u) : (w << 16));
    } else {
      return __uint_as_float(j == 0 ? r.x : j == 1 ? r.y : j == 2 ? r.z : r.w);
    }
  }
};

/// The literal NVFP4 scale rule (block_rules.hpp) with the hardware
/// RN-satfinite converter (cvt.rn.satfinite.e4m3x2.f32) in place of the
/// software encoder and the division by 6 of fast_rules.hpp. Also says
/// whether the block's quotients are bounded below 7
/// (nvfp4_scale_bounds_quotient).
__device__ __forceinline__ std::uint8_t nvfp4_scale_code_fast(std::uint32_t amax_bits, float g, bool& bounded) {
  const float u = amax_over_6(__uint_as_float(amax_bits)) * g;
  const std::uint8_t code =
      amax_bits >= kNonFiniteBits ? kE4M3NaN : std::uint8_t(__nv_cvt_float_to_fp8(u, __NV_SATFINITE, __NV_E4M3));
  bounded = nvfp4_scale_bounds_quotient(code, u);
  return code;
}

/// Eight codes packed in a word: element first + i in nibble i. `magnitude`
/// gives the fast encoder's pattern (kRoundBits + code) of one element; the
/// patterns are summed as they are made (the sum of pack8_magnitude_codes,
/// one element at a time so few stay live) and the signs are OR-ed in from the input
/// bytes (the sign of x·g/s is x's: g and s are positive under the
/// quantizer's contract).
template <class Task, class Magnitude>
__device__ __forceinline__ std::uint32_t encode_word(const Task& in, int first, Magnitude magnitude) {
  std::uint32_t w = magnitude(first) - kPackedRoundBias;
#pragma unroll
  for (int i = 1; i < 8; ++i) w += magnitude(first + i) << (4 * i);
  return w | in.sign_nibbles8(first);
}

/// Codes of one block, packed 8 per word (kBlock / 8 words). `bounded`
/// (NVFP4): every quotient of the block is below 7, so the clamp-free
/// encoder applies; the caller makes it warp-uniform, so a warp never runs
/// both encoders.
template <bool kNvfp4, int kBlock, class Task>
__device__ __forceinline__ void quantize_block(const Task& in, int first, std::uint8_t scale_code, float g, bool bounded,
                                               const float2* reciprocals, std::uint32_t* words) {
  if constexpr (kNvfp4) {
    // y = |x·g| / sf, correctly rounded, from sf's reciprocal pair (for the
    // codes of a negative g, which the contract excludes, that of |sf|).
    const float2 r = reciprocals[scale_code & 0x7f];
    auto quotient = [&](int i) { return div_rn_by_pair(fabsf(in.element(i) * g), ReciprocalPair{r.x, r.y}); };
    if (bounded) {  // never a zeroed block: its scale is a normal number
#pragma unroll
      for (int w = 0; w < kBlock / 8; ++w)
        words[w] = encode_word(in, first + 8 * w, [&](int i) { return e2m1_magnitude_code_bits_below_7(quotient(i)); });
    } else {
      const bool zeroed = nvfp4_block_is_zeroed(scale_code);
#pragma unroll
      for (int w = 0; w < kBlock / 8; ++w)
        words[w] = zeroed ? 0u : encode_word(in, first + 8 * w, [&](int i) { return e2m1_magnitude_code_bits(quotient(i)); });
    }
  } else {
    const float inv = mxfp4_inverse_scale(scale_code);
    const bool zeroed = scale_code == kUE8M0NaN;
#pragma unroll
    for (int w = 0; w < kBlock / 8; ++w)
      words[w] = zeroed ? 0u : encode_word(in, first + 8 * w, [&](int i) { return e2m1_magnitude_code_bits(fabsf(in.element(i)) * inv); });
  }
}

/// Quantization blocks per task: as many as fill 64 input bytes, at least one.
template <class In, bool kNvfp4>
constexpr int blocks_per_task() {
  constexpr int bytes = (kNvfp4 ? 16 : 32) * int(sizeof(In));
  return bytes >= 64 ? 1 : 64 / bytes;
}

/// NVFP4: the reciprocal pair of every E4M3 scale magnitude, so a block reads
/// its divisor with one shared-memory load. Threads [0, 128) of the block
/// fill it; the caller synchronises before use.
__device__ __forceinline__ void fill_reciprocal_table(float2* table) {
  if (threadIdx.x < 128) {
    const ReciprocalPair p = reciprocal_pair(decode_e4m3(static_cast<std::uint8_t>(threadIdx.x)));
    table[threadIdx.x] = make_float2(p.hi, p.lo);
  }
}

/// The encode scale g of a group: given, or derived from the tensor amax.
__device__ __forceinline__ float group_encode_scale(const float* g_source, bool g_source_is_amax, std::int64_t group) {
  const float s = g_source[group];
  return g_source_is_amax ? nvfp4_encode_scale_from_amax(s) : s;
}

/// Quantizes a task's blocks and stores the first `valid_blocks` of them:
/// codes at `out`, scale bytes at `scale_out` (adjacent in both layouts: a
/// task starts at an even block column, and both of its columns lie in one
/// 4-column group of a 128x4 tile). `narrow_rows`: the rows hold an odd
/// number of 16-element blocks (NVFP4, cols ≡ 16 mod 32), so a two-block
/// task's codes are only 8-byte aligned and its row-major scales may sit at
/// an odd address; it is stored block by block. Every active thread of the
/// warp must call this together: the NVFP4 encoder is chosen by a warp vote.
template <class In, bool kNvfp4, class Task>
__device__ __forceinline__ void quantize_task(const Task& in, int valid_blocks, bool narrow_rows, float g,
                                              const float2* reciprocals, std::uint8_t* out, std::uint8_t* scale_out) {
  constexpr int kBlock = kNvfp4 ? 16 : 32;
  constexpr int kPerTask = blocks_per_task<In, kNvfp4>();
  static_assert(Task::kElems == kBlock * kPerTask);
  std::uint32_t words[kPerTask * kBlock / 8];
  std::uint8_t codes[kPerTask];
  bool bounded = true;
#pragma unroll
  for (int k = 0; k < kPerTask; ++k) {
    const std::uint32_t amax = in.amax_bits(k * kBlock, kBlock);
    bool b = false;
    codes[k] = kNvfp4 ? nvfp4_scale_code_fast(amax, g, b) : mxfp4_scale_code(amax);
    bounded = bounded && b;
  }
  // The clamp-free NVFP4 encoder only where the whole warp can use it.
  if constexpr (kNvfp4) bounded = __all_sync(__activemask(), bounded);
#pragma unroll
  for (int k = 0; k < kPerTask; ++k)
    quantize_block<kNvfp4, kBlock>(in, k * kBlock, codes[k], g, bounded, reciprocals, words + k * (kBlock / 8));
  if constexpr (kPerTask * kBlock == 16) {
    *reinterpret_cast<uint2*>(out) = make_uint2(words[0], words[1]);
    *scale_out = codes[0];
  } else if constexpr (kPerTask == 1) {
    uint4* o = reinterpret_cast<uint4*>(out);
#pragma unroll
    for (int w = 0; w < kBlock / 8; w += 4) o[w / 4] = make_uint4(words[w], words[w + 1], words[w + 2], words[w + 3]);
    *scale_out = codes[0];
  } else {
    static_assert(kPerTask == 2 && kBlock == 16, "two-block tasks are NVFP4 BF16");
    if (!narrow_rows) {
      *reinterpret_cast<uint4*>(out) = make_uint4(words[0], words[1], words[2], words[3]);
      *reinterpret_cast<std::uint16_t*>(scale_out) = std::uint16_t(codes[0] | (codes[1] << 8));
    } else {
      *reinterpret_cast<uint2*>(out) = make_uint2(words[0], words[1]);
      scale_out[0] = codes[0];
      if (valid_blocks == 2) {
        *reinterpret_cast<uint2*>(out + 8) = make_uint2(words[2], words[3]);
        scale_out[1] = codes[1];
      }
    }
  }
}

}  // namespace fp4moe::detail
