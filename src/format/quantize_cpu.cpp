// CPU quantizer and dequantizer: the same block rules as the GPU kernels
// (block_rules.hpp), one block at a time.
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/parallel_for.hpp"
#include "format/block_rules.hpp"
#include "format/format_ops.hpp"

namespace fp4moe::detail {
namespace {

float load_as_float(const void* base, DType t, std::int64_t i) {
  if (t == DType::kBF16) return bf16_bits_to_float(static_cast<const std::uint16_t*>(base)[i]);
  return static_cast<const float*>(base)[i];
}

void store_float(void* base, DType t, std::int64_t i, float v) {
  if (t == DType::kBF16) {
    static_cast<std::uint16_t*>(base)[i] = float_to_bf16_bits(v);
  } else {
    static_cast<float*>(base)[i] = v;
  }
}

std::uint8_t* scales_of_group(const Fp4Tensor& t, std::int64_t g) {
  return static_cast<std::uint8_t*>(t.scales) + g * t.scale_bytes_per_group();
}

}  // namespace

void amax_per_group_cpu(const MatrixView& src, float* amax_out) {
  const std::int64_t per_group = src.rows * src.cols;
  for (std::int64_t g = 0; g < src.groups; ++g) {
    std::uint32_t m = 0;
    for (std::int64_t i = 0; i < per_group; ++i) {
      const std::uint32_t b = abs_bits(load_as_float(src.data, src.dtype, g * per_group + i));
      if (b < kNonFiniteBits) m = std::max(m, b);
    }
    amax_out[g] = bits_to_float(m);
  }
}

void quantize_cpu(const MatrixView& src, const Fp4Tensor& dst, const float* encode_scale) {
  const bool nvfp4 = dst.format == Fp4Format::kNVFP4;
  const int bs = block_size(dst.format);
  const std::int64_t scols = dst.scale_cols();
  std::vector<float> g(static_cast<std::size_t>(dst.groups), 1.0f);
  if (nvfp4) {
    if (encode_scale) {
      std::copy(encode_scale, encode_scale + dst.groups, g.begin());
    } else {
      amax_per_group_cpu(src, g.data());
      for (float& v : g) v = nvfp4_encode_scale_from_amax(v);
    }
  }
  auto* data = static_cast<std::uint8_t*>(dst.data);
  const std::int64_t rows_total = dst.groups * dst.rows;
  parallel_for(rows_total, [&](std::int64_t row) {
    const std::int64_t grp = row / dst.rows, r = row % dst.rows;
    std::uint8_t* scales = scales_of_group(dst, grp);
    for (std::int64_t c = 0; c < scols; ++c) {
      float x[32];
      std::uint32_t amax = 0;
      const std::int64_t e0 = row * dst.cols + c * bs;
      for (int i = 0; i < bs; ++i) {
        x[i] = load_as_float(src.data, src.dtype, e0 + i);
        amax = std::max(amax, abs_bits(x[i]));
      }
      std::uint8_t code;
      unsigned q[32] = {};
      if (nvfp4) {
        code = nvfp4_scale_code(amax, g[grp]);
        if (!nvfp4_block_is_zeroed(code)) {
          const float sf = decode_e4m3(code);
          for (int i = 0; i < bs; ++i) q[i] = nvfp4_element_code(x[i], g[grp], sf);
        }
      } else {
        code = mxfp4_scale_code(amax);
        if (code != kUE8M0NaN) {
          const float inv = mxfp4_inverse_scale(code);
          for (int i = 0; i < bs; ++i) q[i] = mxfp4_element_code(x[i], inv);
        }
      }
      scales[scale_offset(dst.scale_layout, r, c, scols)] = code;
      for (int i = 0; i < bs; i += 2) data[(e0 + i) / 2] = static_cast<std::uint8_t>(q[i] | (q[i + 1] << 4));
    }
  }, 16);
  // Tiled layouts carry padding; define it as 0 so outputs are deterministic.
  if (dst.scale_layout == ScaleLayout::kTiled128x4) {
    for (std::int64_t grp = 0; grp < dst.groups; ++grp) {
      std::uint8_t* scales = scales_of_group(dst, grp);
      const std::int64_t prow = round_up(dst.rows, 128), pcol = round_up(scols, 4);
      for (std::int64_t r = 0; r < prow; ++r)
        for (std::int64_t c = 0; c < pcol; ++c)
          if (r >= dst.rows || c >= scols) scales[tiled128x4_offset(r, c, scols)] = 0;
    }
  }
  if (nvfp4)
    for (std::int64_t grp = 0; grp < dst.groups; ++grp) dst.global_scale[grp] = 1.0f / g[grp];
}

void dequantize_cpu(const Fp4Tensor& src, const MatrixView& dst) {
  const bool nvfp4 = src.format == Fp4Format::kNVFP4;
  const int bs = block_size(src.format);
  const std::int64_t scols = src.scale_cols();
  const auto* data = static_cast<const std::uint8_t*>(src.data);
  parallel_for(src.groups * src.rows, [&](std::int64_t row) {
    const std::int64_t grp = row / src.rows, r = row % src.rows;
    const auto* scales = static_cast<const std::uint8_t*>(src.scales) + grp * src.scale_bytes_per_group();
    const float global = nvfp4 ? src.global_scale[grp] : 1.0f;
    for (std::int64_t k = 0; k < src.cols; ++k) {
      const std::int64_t e = row * src.cols + k;
      const unsigned code = (data[e / 2] >> ((e & 1) * 4)) & 0xfu;
      const float sf = decode_block_scale(nvfp4, scales[scale_offset(src.scale_layout, r, k / bs, scols)]);
      store_float(dst.data, dst.dtype, e, dequantize_element(code, sf, global));
    }
  }, 16);
}

}  // namespace fp4moe::detail
