// Non-owning descriptions of the tensors fp4moe reads and writes.
//
// fp4moe never allocates or frees user memory: every operation takes views of
// buffers the caller owns. Whether a view points at host or device memory is
// set by the function it is passed to (the cpu:: namespace takes host
// pointers, everything else device pointers).
#pragma once

#include <cstdint>

#include "fp4moe/scale_layout.hpp"
#include "fp4moe/types.hpp"

namespace fp4moe {

/// A row-major matrix of BF16/FP32/I32 elements, optionally a stack of
/// `groups` of them. Strides count elements.
struct MatrixView {
  void* data = nullptr;
  DType dtype = DType::kFP32;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t row_stride = 0;    ///< elements between rows; 0 means `cols`
  std::int64_t col_stride = 1;    ///< elements between columns; only alpha may differ from 1
  std::int64_t groups = 1;        ///< leading stack dimension (the masked layout)
  std::int64_t group_stride = 0;  ///< elements between groups; 0 means rows · row_stride

  std::int64_t ld() const { return row_stride ? row_stride : cols; }
  std::int64_t gstride() const { return group_stride ? group_stride : rows * ld(); }
};

/// A K-major block-scaled FP4 matrix [rows, cols] (cols = K elements), or a stack
/// of `groups` such matrices (one per expert).
///
/// Memory: `data` holds groups·rows rows of cols/2 bytes, contiguous, two E2M1
/// values per byte with element 2i in the low nibble. `scales` holds, for each
/// group in turn, scale_bytes(scale_layout, rows, cols/block) bytes of E4M3
/// (NVFP4) or UE8M0 (MXFP4) scales. `global_scale` (NVFP4 only; null for
/// MXFP4) points to the FP32 global *decode* scales, on the same side as the
/// data: one value per group (so one value for a single matrix).
///
/// `prepacked`: the bits of every 32-bit word of `data` are in the prepacked
/// order that prepack_weights() writes (same bytes per row, same scales);
/// only the B operand (weights) of fp4_gemm_nt, the m-grouped GEMMs and
/// moe_dense_fc2 accepts such a tensor.
struct Fp4Tensor {
  void* data = nullptr;
  void* scales = nullptr;
  float* global_scale = nullptr;
  Fp4Format format = Fp4Format::kNVFP4;
  ScaleLayout scale_layout = ScaleLayout::kRowMajor;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t groups = 1;
  bool prepacked = false;

  std::int64_t scale_cols() const { return cols / block_size(format); }
  std::int64_t data_bytes() const { return groups * rows * (cols / 2); }
  std::int64_t scale_bytes_per_group() const {
    return fp4moe::scale_bytes(scale_layout, rows, scale_cols());
  }
  std::int64_t scale_bytes_total() const { return groups * scale_bytes_per_group(); }
};

}  // namespace fp4moe
