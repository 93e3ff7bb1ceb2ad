// The epilogue of moe_dense_fc1_swiglu: out = silu(gate)·up·expert_scale[e],
// from a 128 x 256 accumulator tile whose columns 0..127 are gate rows and
// 128..255 the matching up rows (so gate column c and up column c sit in the
// same thread, BN/16 column groups apart).
//
// BF16 output is stored directly. NVFP4 output is quantised here by the
// rules of DESIGN.md §2 (the same block_rules.hpp functions the quantizers
// use, with the caller's global encode scale g): a 16-column block of one row
// lives in the 4 threads of a quad (2 columns × 2 column groups each), so its
// amax is a max over 4 values and two shuffles. Scales go to the 128x4 tiled
// layout, with the padding rows of the last 128-row band written as 0, so the
// result is byte for byte what quantize_nvfp4 would write, ready for FC2.
// (The output's global decode scale 1/g is written once at kernel start, as
// with split-K not every CTA reaches an epilogue.)
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "fp4moe/scale_layout.hpp"
#include "format/block_rules.hpp"
#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/tile_scheduler.cuh"

namespace fp4moe::kernels {

template <int BN>
__device__ __forceinline__ void swiglu_epilogue(const GemmParams& p, const Tile& t, const float (&acc)[BN / 2], float factor,
                                                int x_r0, int j) {
  constexpr int kGroups = BN / 16;  // 8-column groups of the gate half
  const float scale = p.fc1_expert_scale ? p.fc1_expert_scale[t.group] : 1.0f;
  const bool to_fp4 = p.fc1_fp4_data != nullptr;
  const float g = to_fp4 ? *p.fc1_encode_scale : 1.0f;
  const std::int64_t out_cols = p.n;  // E·I
  const std::int32_t rows_padded = (p.m + 127) / 128 * 128;
#pragma unroll
  for (int h = 0; h < 2; ++h) {  // rows x_r0, x_r0 + 8
    const std::int32_t m = t.m0 + x_r0 + 8 * h;
    // silu(gate)·up·scale of column group i, column e (computed where used,
    // so no second copy of the tile lives in registers).
    auto value = [&](int i, int e) {
      const float gate = acc[4 * i + 2 * h + e] * factor;
      const float up = acc[4 * (i + kGroups) + 2 * h + e] * factor;
      return gate / (1.0f + expf(-gate)) * up * scale;
    };
    if (!to_fp4) {
      if (m >= t.m_end) continue;
#pragma unroll
      for (int i = 0; i < kGroups; ++i) {
        const std::int64_t off = std::int64_t(m) * p.ldd + t.n0 + 8 * i + 2 * j;
        *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(p.d) + off) = __floats2bfloat162_rn(value(i, 0), value(i, 1));
      }
      continue;
    }
    // NVFP4: 16-column block b = column groups 2b, 2b + 1. The values
    // first, unrolled (their registers come from acc's); then one rolled
    // loop quantises the blocks from a local copy. Unrolled over 2 rows x 8
    // blocks, the quantisation made the kernel's code 201 KB instead of 117,
    // run once a tile and fetched from L2 each time (ncu: no-instruction
    // stalls 15% of the samples against the BF16 output's 2%): the NVFP4
    // output took 1.20-1.53x the BF16 output's time, now 1.11-1.16x
    // (docs/PERF.md stop 71).
    float v[kGroups / 2][4];
#pragma unroll
    for (int b = 0; b < kGroups / 2; ++b)
#pragma unroll
      for (int q = 0; q < 4; ++q) v[b][q] = value(2 * b + q / 2, q % 2);
#pragma unroll 1
    for (int b = 0; b < kGroups / 2; ++b) {
      std::uint32_t amax = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) amax = max(amax, detail::abs_bits(v[b][q]));
      amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
      amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
      const std::uint8_t code = detail::nvfp4_scale_code(amax, g);
      const std::int32_t col = t.n0 + 16 * b;  // first column of the block
      if (m < t.m_end) {
        const bool zeroed = detail::nvfp4_block_is_zeroed(code);
        const float sf = detail::decode_block_scale(true, code);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const unsigned lo = zeroed ? 0u : detail::nvfp4_element_code(v[b][2 * half], g, sf);
          const unsigned hi = zeroed ? 0u : detail::nvfp4_element_code(v[b][2 * half + 1], g, sf);
          p.fc1_fp4_data[(std::int64_t(m) * out_cols + col + 8 * half + 2 * j) / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
        }
      }
      if (j == 0 && m < rows_padded)
        p.fc1_fp4_scales[tiled128x4_offset(m, col / 16, out_cols / 16)] = m < t.m_end ? code : std::uint8_t(0);
    }
  }
}

}  // namespace fp4moe::kernels
