// Host helpers: TMA descriptors for FP4 operands and for the quantizer's BF16
// input, encoded through the driver entry point (no link-time dependency on
// libcuda).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace fp4moe::kernels {

/// 2-D map of packed FP4 data viewed as bytes [rows, k/2], box [box_k/2 bytes,
/// box_rows], with the swizzle that matches the box row size (32/64/128 B).
/// Rows past the end and bytes past k/2 read as zero.
CUtensorMap make_fp4_tensor_map(const void* data, std::int64_t rows, std::int64_t k, int box_rows, int box_k);

/// 3-D map of a contiguous BF16 stack [groups, rows, cols], box [1, box_rows,
/// 64 columns] (128-byte box rows, 128-byte swizzle). Coordinates are (column,
/// row, group); rows and columns past the end of a group read as zero.
/// `l2_promotion_bytes` (128 or 256): how much L2 fetches per miss.
CUtensorMap make_bf16_rows_tensor_map(const void* data, std::int64_t groups, std::int64_t rows, std::int64_t cols,
                                      int box_rows, int l2_promotion_bytes);

/// 3-D map of the gather step's BF16 tokens (kernels/moe/gather_tokens.hpp:
/// 64-column groups of `rows` rows, group after group), box [box_k / 64
/// groups, box_rows, 64 columns] (128-byte swizzle): a stage's sub-step
/// buffers, one after another. Coordinates are (0, row, group).
CUtensorMap make_gathered_tokens_tensor_map(const void* data, std::int64_t rows, std::int64_t cols, int box_rows,
                                            int box_k);

/// 2-D map of a BF16 matrix [rows, cols] with `ld` elements between rows,
/// for TMA stores: box [64 columns, box_rows] (128-byte box rows, 128-byte
/// swizzle). Needs `data` 16-byte aligned and ld a multiple of 8.
CUtensorMap make_bf16_output_tensor_map(void* data, std::int64_t rows, std::int64_t cols, std::int64_t ld, int box_rows);

}  // namespace fp4moe::kernels
