// Internal entry points of the format module, called by src/api after the
// arguments have been checked. Nothing here validates.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "fp4moe/tensor.hpp"

namespace fp4moe::detail {

// CPU (host pointers).
void quantize_cpu(const MatrixView& src, const Fp4Tensor& dst, const float* encode_scale);
void amax_per_group_cpu(const MatrixView& src, float* amax_out);
void dequantize_cpu(const Fp4Tensor& src, const MatrixView& dst);
void convert_scale_layout_cpu(const std::uint8_t* src, ScaleLayout src_layout, std::uint8_t* dst,
                              ScaleLayout dst_layout, std::int64_t rows, std::int64_t cols,
                              std::int64_t groups);
/// `words` 32-bit words of src in the prepacked bit order into dst (may alias).
void prepack_weights_cpu(const std::uint8_t* src, std::uint8_t* dst, std::int64_t words);

// GPU (device pointers, asynchronous on `stream`).
/// `g_source` holds per-group values: the encode scale g itself, or (when
/// `g_source_is_amax`) the tensor amax from which g is derived.
void launch_quantize(const MatrixView& src, const Fp4Tensor& dst, const float* g_source,
                     bool g_source_is_amax, cudaStream_t stream);
/// Per-group amax over finite values into amax_out[groups] (zeroed here first).
void launch_amax(const MatrixView& src, float* amax_out, cudaStream_t stream);
/// global_scale[g] ← 1 / encode_scale_from_amax(global_scale[g]), in place.
void launch_finalize_nvfp4_scale(float* global_scale, std::int64_t groups, cudaStream_t stream);
void launch_dequantize(const Fp4Tensor& src, const MatrixView& dst, cudaStream_t stream);
void launch_convert_scale_layout(const std::uint8_t* src, ScaleLayout src_layout, std::uint8_t* dst,
                                 ScaleLayout dst_layout, std::int64_t rows, std::int64_t cols,
                                 std::int64_t groups, cudaStream_t stream);
/// Rows [first, first + rows) of a tiled scale matrix with `cols` scale
/// columns into a tiled matrix of their own at dst (rows padded to 128 with
/// 0; src and dst 4-byte aligned, not overlapping): tiled_rows_word.
void launch_copy_tiled_scale_rows(const std::uint8_t* src, std::int64_t first, std::int64_t rows, std::int64_t cols,
                                  std::uint8_t* dst, cudaStream_t stream);
/// prepack_weights_cpu on the device (src and dst 4-byte aligned).
void launch_prepack_weights(const std::uint8_t* src, std::uint8_t* dst, std::int64_t words, cudaStream_t stream);

}  // namespace fp4moe::detail
