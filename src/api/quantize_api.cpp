// Public quantizer / dequantizer / converter entry points: check every
// argument, then dispatch to the GPU launchers or the CPU loops.
#include <cfloat>

#include "api/check.hpp"
#include "api/fp4_tensor_checks.hpp"
#include "format/block_rules.hpp"
#include "format/format_ops.hpp"
#include "fp4moe/quantize.hpp"

namespace fp4moe {
namespace {

using detail::ArgCheck;

void check_dense_input(const ArgCheck& c, const MatrixView& src, bool device) {
  c.not_null(src.data, "src.data");
  c.dtype_in(src.dtype, {DType::kBF16, DType::kFP32}, "src.dtype");
  c.contiguous(src, "src");
  if (device) c.aligned(src.data, 16, "src.data");
}

void check_quantize(const ArgCheck& c, const MatrixView& src, const Fp4Tensor& dst,
                    const float* encode_scale, bool device) {
  detail::check_fp4_tensor(c, dst, "dst", device);
  check_dense_input(c, src, device);
  c.equal(src.rows, dst.rows, "src.rows", "dst.rows");
  c.equal(src.cols, dst.cols, "src.cols", "dst.cols");
  c.equal(src.groups, dst.groups, "src.groups", "dst.groups");
  if (device) {
    c.gpu_groups(dst.groups, "dst.groups");
    // The GPU kernels: TMA coordinates are 32-bit signed (with a tile's
    // reach past the last column), scale offsets within a group 32-bit, and
    // NVFP4 tasks store two scale bytes at once.
    c.require(dst.cols < (std::int64_t(1) << 30), "dst.cols", "must be below 2^30 on the GPU", dst.cols);
    c.require(dst.scale_bytes_per_group() < (std::int64_t(1) << 32), "dst",
              "scale bytes per group (with the 128x4 padding) must be below 2^32 on the GPU",
              dst.scale_bytes_per_group());
    c.aligned(dst.scales, 2, "dst.scales");
  }
  // The GPU kernel indexes quantization blocks with 32 bits.
  c.require(dst.rows * dst.scale_cols() < (std::int64_t(1) << 31), "dst",
            "rows*cols/block must be below 2^31 per group", dst.rows * dst.scale_cols());
  if (dst.format == Fp4Format::kMXFP4) {
    c.require(encode_scale == nullptr, "encode_scale", "must be null for MXFP4 (no global scale)");
  } else if (encode_scale) {
    c.require(!detail::ranges_overlap(encode_scale, 4 * dst.groups, dst.global_scale, 4 * dst.groups),
              "encode_scale", "must not overlap dst.global_scale (which receives 1/g)");
  }
  const std::int64_t in_bytes = src.groups * src.rows * src.cols * dtype_size(src.dtype);
  c.require(!detail::ranges_overlap(src.data, in_bytes, dst.data, dst.data_bytes()), "dst.data",
            "must not overlap src.data");
  c.require(!detail::ranges_overlap(src.data, in_bytes, dst.scales, dst.scale_bytes_total()),
            "dst.scales", "must not overlap src.data");
}

void check_dequantize(const ArgCheck& c, const Fp4Tensor& src, const MatrixView& dst, bool device) {
  detail::check_fp4_tensor(c, src, "src", device);
  c.not_null(dst.data, "dst.data");
  c.dtype_in(dst.dtype, {DType::kBF16, DType::kFP32}, "dst.dtype");
  c.contiguous(dst, "dst");
  c.equal(dst.rows, src.rows, "dst.rows", "src.rows");
  c.equal(dst.cols, src.cols, "dst.cols", "src.cols");
  c.equal(dst.groups, src.groups, "dst.groups", "src.groups");
  if (device) c.gpu_groups(src.groups, "src.groups");
  if (device) c.aligned(dst.data, 16, "dst.data");
}

void check_convert(const ArgCheck& c, const void* src, ScaleLayout src_layout, void* dst,
                   ScaleLayout dst_layout, std::int64_t rows, std::int64_t cols, std::int64_t groups, bool device) {
  c.not_null(src, "src");
  c.not_null(dst, "dst");
  c.require(detail::valid_layout(src_layout), "src_layout", "must be kRowMajor or kTiled128x4");
  c.require(detail::valid_layout(dst_layout), "dst_layout", "must be kRowMajor or kTiled128x4");
  c.non_negative(rows, "rows");
  c.positive(cols, "cols");
  c.positive(groups, "groups");
  if (device) c.gpu_groups(groups, "groups");
  c.require(!detail::ranges_overlap(src, groups * scale_bytes(src_layout, rows, cols), dst,
                                    groups * scale_bytes(dst_layout, rows, cols)),
            "dst", "must not overlap src");
}

void check_prepack(const ArgCheck& c, const Fp4Tensor& w, const void* dst_data, bool device) {
  detail::check_fp4_tensor(c, w, "weights", device);  // (refuses weights already prepacked)
  c.not_null(dst_data, "dst_data");
  if (device) c.aligned(dst_data, 16, "dst_data");
  c.require(dst_data == w.data || !detail::ranges_overlap(dst_data, w.data_bytes(), w.data, w.data_bytes()), "dst_data",
            "must be weights.data (in place) or not overlap it");
  c.require(!detail::ranges_overlap(dst_data, w.data_bytes(), w.scales, w.scale_bytes_total()), "dst_data",
            "must not overlap weights.scales");
}

Fp4Tensor prepacked_view(const Fp4Tensor& w, void* dst_data) {
  Fp4Tensor out = w;
  out.data = dst_data;
  out.prepacked = true;
  return out;
}

}  // namespace

float nvfp4_global_encode_scale(float amax) { return detail::nvfp4_encode_scale_from_amax(amax); }

// ----------------------------------------------------------------- GPU ----

void quantize(const MatrixView& src, const Fp4Tensor& dst, cudaStream_t stream, const float* encode_scale) {
  const char* name = dst.format == Fp4Format::kMXFP4 ? "quantize_mxfp4" : "quantize_nvfp4";
  const ArgCheck c(name);
  check_quantize(c, src, dst, encode_scale, /*device=*/true);
  c.stream_on_current_device(stream);
  if (dst.rows == 0) return;
  if (dst.format == Fp4Format::kNVFP4 && encode_scale == nullptr) {
    // g from the tensor amax: amax into the decode-scale slot, quantize reading
    // it, then turn the slot into 1/g.
    detail::launch_amax(src, dst.global_scale, stream);
    detail::launch_quantize(src, dst, dst.global_scale, /*g_source_is_amax=*/true, stream);
    detail::launch_finalize_nvfp4_scale(dst.global_scale, dst.groups, stream);
  } else {
    detail::launch_quantize(src, dst, encode_scale, /*g_source_is_amax=*/false, stream);
  }
}

void quantize_nvfp4(const MatrixView& src, const Fp4Tensor& dst, cudaStream_t stream, const float* encode_scale) {
  ArgCheck("quantize_nvfp4").require(dst.format == Fp4Format::kNVFP4, "dst.format", "must be kNVFP4");
  quantize(src, dst, stream, encode_scale);
}

void quantize_mxfp4(const MatrixView& src, const Fp4Tensor& dst, cudaStream_t stream) {
  ArgCheck("quantize_mxfp4").require(dst.format == Fp4Format::kMXFP4, "dst.format", "must be kMXFP4");
  quantize(src, dst, stream, nullptr);
}

void compute_amax(const MatrixView& src, float* amax, cudaStream_t stream) {
  const ArgCheck c("compute_amax");
  check_dense_input(c, src, /*device=*/true);
  c.not_null(amax, "amax");
  c.positive(src.groups, "src.groups");
  c.gpu_groups(src.groups, "src.groups");
  c.non_negative(src.rows, "src.rows");
  c.positive(src.cols, "src.cols");
  c.multiple_of(src.cols, src.dtype == DType::kBF16 ? 8 : 4, "src.cols", "one 16-byte vector");
  c.stream_on_current_device(stream);
  detail::launch_amax(src, amax, stream);
}

void dequantize(const Fp4Tensor& src, const MatrixView& dst, cudaStream_t stream) {
  const ArgCheck c("dequantize");
  check_dequantize(c, src, dst, /*device=*/true);
  c.stream_on_current_device(stream);
  if (src.rows == 0) return;
  detail::launch_dequantize(src, dst, stream);
}

void convert_scale_layout(const void* src, ScaleLayout src_layout, void* dst, ScaleLayout dst_layout,
                          std::int64_t rows, std::int64_t cols, std::int64_t groups, cudaStream_t stream) {
  const ArgCheck c("convert_scale_layout");
  check_convert(c, src, src_layout, dst, dst_layout, rows, cols, groups, /*device=*/true);
  c.stream_on_current_device(stream);
  if (rows == 0) return;
  detail::launch_convert_scale_layout(static_cast<const std::uint8_t*>(src), src_layout,
                                      static_cast<std::uint8_t*>(dst), dst_layout, rows, cols, groups,
                                      stream);
}

Fp4Tensor prepack_weights(const Fp4Tensor& weights, void* dst_data, cudaStream_t stream) {
  const ArgCheck c("prepack_weights");
  check_prepack(c, weights, dst_data, /*device=*/true);
  c.stream_on_current_device(stream);
  if (weights.data_bytes() > 0)
    detail::launch_prepack_weights(static_cast<const std::uint8_t*>(weights.data), static_cast<std::uint8_t*>(dst_data),
                                   weights.data_bytes() / 4, stream);
  return prepacked_view(weights, dst_data);
}

// ----------------------------------------------------------------- CPU ----
namespace cpu {

void quantize(const MatrixView& src, const Fp4Tensor& dst, const float* encode_scale) {
  const char* name = dst.format == Fp4Format::kMXFP4 ? "cpu::quantize_mxfp4" : "cpu::quantize_nvfp4";
  check_quantize(ArgCheck(name), src, dst, encode_scale, /*device=*/false);
  if (dst.rows == 0) return;
  detail::quantize_cpu(src, dst, encode_scale);
}

void quantize_nvfp4(const MatrixView& src, const Fp4Tensor& dst, const float* encode_scale) {
  ArgCheck("cpu::quantize_nvfp4").require(dst.format == Fp4Format::kNVFP4, "dst.format", "must be kNVFP4");
  cpu::quantize(src, dst, encode_scale);
}

void quantize_mxfp4(const MatrixView& src, const Fp4Tensor& dst) {
  ArgCheck("cpu::quantize_mxfp4").require(dst.format == Fp4Format::kMXFP4, "dst.format", "must be kMXFP4");
  cpu::quantize(src, dst, nullptr);
}

float compute_amax(const MatrixView& src) {
  const ArgCheck c("cpu::compute_amax");
  check_dense_input(c, src, /*device=*/false);
  c.require(src.groups == 1, "src.groups", "must be 1 (one amax)", src.groups);
  float amax = 0;
  detail::amax_per_group_cpu(src, &amax);
  return amax;
}

void dequantize(const Fp4Tensor& src, const MatrixView& dst) {
  check_dequantize(ArgCheck("cpu::dequantize"), src, dst, /*device=*/false);
  if (src.rows == 0) return;
  detail::dequantize_cpu(src, dst);
}

void convert_scale_layout(const void* src, ScaleLayout src_layout, void* dst, ScaleLayout dst_layout,
                          std::int64_t rows, std::int64_t cols, std::int64_t groups) {
  check_convert(ArgCheck("cpu::convert_scale_layout"), src, src_layout, dst, dst_layout, rows, cols, groups, /*device=*/false);
  if (rows == 0) return;
  detail::convert_scale_layout_cpu(static_cast<const std::uint8_t*>(src), src_layout,
                                   static_cast<std::uint8_t*>(dst), dst_layout, rows, cols, groups);
}

Fp4Tensor prepack_weights(const Fp4Tensor& weights, void* dst_data) {
  check_prepack(ArgCheck("cpu::prepack_weights"), weights, dst_data, /*device=*/false);
  detail::prepack_weights_cpu(static_cast<const std::uint8_t*>(weights.data), static_cast<std::uint8_t*>(dst_data),
                              weights.data_bytes() / 4);
  return prepacked_view(weights, dst_data);
}

}  // namespace cpu
}  // namespace fp4moe
