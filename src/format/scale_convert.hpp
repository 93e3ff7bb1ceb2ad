// Layout conversion as a gather: destination byte p of one matrix takes the
// source scale at the (row, col) that p stands for; padding bytes of a tiled
// destination take 0. Shared by the CPU loop and the GPU kernel.
#pragma once

#include <cstdint>

#include "fp4moe/scale_layout.hpp"

namespace fp4moe::detail {

/// Inverse of tiled128x4_offset: the (row, col) stored at byte p.
FP4MOE_HD void tiled128x4_coords(std::int64_t p, std::int64_t cols, std::int64_t& r,
                                 std::int64_t& c) {
  const std::int64_t col_tiles = ceil_div(cols, 4);
  const std::int64_t tile = p / 512, within = p % 512;
  r = (tile / col_tiles) * 128 + ((within % 16) / 4) * 32 + within / 16;
  c = (tile % col_tiles) * 4 + within % 4;
}

/// Byte p of the destination (the other layout than src_layout).
FP4MOE_HD std::uint8_t converted_scale_byte(const std::uint8_t* src, ScaleLayout src_layout,
                                            std::int64_t p, std::int64_t rows, std::int64_t cols) {
  if (src_layout == ScaleLayout::kRowMajor) {  // destination is tiled
    std::int64_t r, c;
    tiled128x4_coords(p, cols, r, c);
    return (r < rows && c < cols) ? src[r * cols + c] : std::uint8_t{0};
  }
  // Destination is row-major: p = r·cols + c.
  return src[tiled128x4_offset(p / cols, p % cols, cols)];
}

/// Word q of a tiled matrix that holds rows [first, first + rows) of the
/// tiled matrix `src` (same cols), rows past them 0. A word is one row's
/// four scale columns of a 128x4 chunk, so the copy moves whole words. The
/// GEMM kernels read an operand's scales in whole 128-row bands from its
/// first row, so a call on rows that start inside a band reads such a copy
/// (moe_dense_fc2's split at 96 tokens). Columns past cols are the source's
/// padding, copied as they are.
FP4MOE_HD std::uint32_t tiled_rows_word(const std::uint32_t* src, std::int64_t first, std::int64_t rows,
                                        std::int64_t cols, std::int64_t q) {
  std::int64_t r, c;
  tiled128x4_coords(4 * q, cols, r, c);
  return r < rows ? src[tiled128x4_offset(first + r, c, cols) / 4] : 0u;
}

}  // namespace fp4moe::detail
