// Geometry of the block-scale layouts (DESIGN.md §2).
//
// Row-major: [rows, cols] with cols = K / block, offset r·cols + c.
// Tiled 128x4: rows padded to a multiple of 128 and cols to a multiple of 4,
// viewed as [rows/128, cols/4, 32, 4, 4]; a 128x4 tile of scales is one
// contiguous 512-byte chunk in which row r sits at (r%32)·16 + ((r%128)/32)·4.
// For a stack of matrices (one per expert) each matrix is padded and tiled on
// its own, and the stack is their concatenation.
#pragma once

#include <cstdint>

#include "fp4moe/hostdevice.hpp"
#include "fp4moe/types.hpp"

namespace fp4moe {

FP4MOE_HD std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }
FP4MOE_HD std::int64_t ceil_div(std::int64_t x, std::int64_t m) { return (x + m - 1) / m; }

/// Offset of scale (r, c) in the tiled layout of a matrix with `cols` scale
/// columns (unpadded count; the padding is applied here).
FP4MOE_HD std::int64_t tiled128x4_offset(std::int64_t r, std::int64_t c, std::int64_t cols) {
  const std::int64_t col_tiles = ceil_div(cols, 4);
  return (r / 128) * col_tiles * 512 + (c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 +
         (c % 4);
}

/// Bytes of one matrix's scales in a layout (padding included).
FP4MOE_HD std::int64_t scale_bytes(ScaleLayout layout, std::int64_t rows, std::int64_t cols) {
  return layout == ScaleLayout::kRowMajor ? rows * cols : round_up(rows, 128) * round_up(cols, 4);
}

/// Offset of scale (r, c) of a [rows, cols] scale matrix in a layout.
FP4MOE_HD std::int64_t scale_offset(ScaleLayout layout, std::int64_t r, std::int64_t c,
                                    std::int64_t cols) {
  return layout == ScaleLayout::kRowMajor ? r * cols + c : tiled128x4_offset(r, c, cols);
}

}  // namespace fp4moe
