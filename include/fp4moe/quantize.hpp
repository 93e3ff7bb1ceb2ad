// Quantizers, dequantizers and scale-layout converters (DESIGN.md §2).
//
// Every function here has a GPU version (device pointers, asynchronous on the
// given stream, no allocation, no host synchronisation, graph-capturable) and a
// CPU version in namespace cpu (host pointers). The two produce bit-identical
// results.
//
// Quantization rules:
//   NVFP4  g = nvfp4_global_encode_scale(amax(tensor)) or a caller-given g;
//          block scale s = E4M3_rn_satfinite(amax(block) / 6 · g);
//          q = E2M1_rn_satfinite(x · g / float(s)), 0 where s is 0;
//          the global decode scale written to dst.global_scale is 1/g.
//   MXFP4  e = clamp(floor(log2(amax(block))) − 2, −127, 127), scale code e+127,
//          q = E2M1_rn_satfinite(x / 2^e); an all-zero block gets 2^-127.
// Non-finite input: a block holding a NaN or ±Inf gets the NaN scale (E4M3
// 0x7F, UE8M0 0xFF) and all-zero elements, so it decodes to NaN and spreads no
// further; the NVFP4 tensor amax counts finite values only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "fp4moe/tensor.hpp"

namespace fp4moe {

/// g = 448·6 / amax, the NVFP4 global encode scale; 1 when amax is 0 or not
/// finite, FLT_MAX where the quotient would overflow.
float nvfp4_global_encode_scale(float amax);

// ----------------------------------------------------------------- GPU ----
// The GPU entry points below take at most 65535 groups (one grid row each)
// and read or write the dense (BF16/FP32) matrix 16 bytes at a time: the
// quantizer's and compute_amax's src.data and dequantize's dst.data must be
// 16-byte aligned, and compute_amax's src.cols a multiple of 8 (BF16) or 4
// (FP32), so that a row is whole vectors. The GPU quantizer also needs cols <
// 2^30, a group's scales (128x4 padding included) below 2^32 bytes and
// dst.scales 2-byte aligned. Anything else is refused with InvalidArgument
// before anything runs.

/// Quantize src (BF16 or FP32, [groups, rows, K], contiguous, with
/// src.groups = dst.groups, src.rows = dst.rows, K = src.cols = dst.cols)
/// into dst.
/// NVFP4: `encode_scale` is a device pointer to g; null means "compute g from
/// amax(src) first" (one more read of src). A given g must be positive and
/// finite (it lives on the device, so it is not checked; other values give
/// unspecified codes). dst.global_scale (device, required) receives 1/g.
/// MXFP4: encode_scale and dst.global_scale must be null.
void quantize(const MatrixView& src, const Fp4Tensor& dst, cudaStream_t stream,
              const float* encode_scale = nullptr);
void quantize_nvfp4(const MatrixView& src, const Fp4Tensor& dst, cudaStream_t stream,
                    const float* encode_scale = nullptr);
void quantize_mxfp4(const MatrixView& src, const Fp4Tensor& dst, cudaStream_t stream);

/// amax over the finite elements of each group of src (BF16 or FP32,
/// contiguous): one float per group into amax[src.groups] (device).
void compute_amax(const MatrixView& src, float* amax, cudaStream_t stream);

/// Decode src into dst (BF16 or FP32, same groups, rows and cols, contiguous):
/// e2m1 · scale · global.
void dequantize(const Fp4Tensor& src, const MatrixView& dst, cudaStream_t stream);

/// Copy `groups` scale matrices of [rows, cols] (cols = scale columns) from one
/// layout to the other. Padding entries of a tiled destination are written as 0.
void convert_scale_layout(const void* src, ScaleLayout src_layout, void* dst,
                          ScaleLayout dst_layout, std::int64_t rows, std::int64_t cols,
                          std::int64_t groups, cudaStream_t stream);

/// The weights of a GEMM in the prepacked bit order: the bits of every
/// 32-bit word of `weights.data` permuted (src/format/weight_prepack.hpp) so
/// that the GEMM kernels convert them to BF16 with fewer instructions (9 a
/// word of 8 codes instead of 13-14: decode ~0.93-0.96x the time on an H200,
/// docs/PERF.md). Same bytes per row, same scales. The order is this
/// library version's (it changes when a cheaper one is found): prepack at
/// weight load, and store or ship the standard order. Writes `dst_data`
/// (weights.data_bytes() bytes; may be weights.data itself, in place) and
/// returns `weights` with data = dst_data and prepacked = true (its scales
/// and global scales are still those of `weights`). A one-time step at weight
/// load: only the B operand of fp4_gemm_nt, m_grouped_fp4_gemm_nt_contiguous,
/// m_grouped_fp4_gemm_nt_masked and moe_dense_fc2 accepts the result (the
/// MXFP4 FP8-route tactic does not); everything else, FC1 included, refuses
/// prepacked tensors.
Fp4Tensor prepack_weights(const Fp4Tensor& weights, void* dst_data, cudaStream_t stream);

// ----------------------------------------------------------------- CPU ----
namespace cpu {

void quantize(const MatrixView& src, const Fp4Tensor& dst, const float* encode_scale = nullptr);
void quantize_nvfp4(const MatrixView& src, const Fp4Tensor& dst,
                    const float* encode_scale = nullptr);
void quantize_mxfp4(const MatrixView& src, const Fp4Tensor& dst);
float compute_amax(const MatrixView& src);  // src.groups = 1: one amax
void dequantize(const Fp4Tensor& src, const MatrixView& dst);
void convert_scale_layout(const void* src, ScaleLayout src_layout, void* dst,
                          ScaleLayout dst_layout, std::int64_t rows, std::int64_t cols,
                          std::int64_t groups);
Fp4Tensor prepack_weights(const Fp4Tensor& weights, void* dst_data);

}  // namespace cpu
}  // namespace fp4moe
