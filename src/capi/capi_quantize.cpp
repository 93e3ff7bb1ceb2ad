// C entry points of include/fp4moe/quantize.hpp (GPU and CPU).
#include "capi/capi_guard.hpp"
#include "capi/capi_views.hpp"
#include "fp4moe/quantize.hpp"

using fp4moe::capi::fp4_tensor;
using fp4moe::capi::guarded;
using fp4moe::capi::matrix_view;
using fp4moe::capi::scale_layout;
using fp4moe::capi::stream_of;
using fp4moe::detail::ArgCheck;

extern "C" {

fp4moe_status fp4moe_quantize_nvfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst, const float* encode_scale,
                                    void* stream) {
  return guarded([&] {
    const ArgCheck c("quantize_nvfp4");
    const auto s = matrix_view(c, src, "src");
    const auto d = fp4_tensor(c, dst, "dst");
    fp4moe::quantize_nvfp4(s, d, stream_of(stream), encode_scale);
  });
}

fp4moe_status fp4moe_quantize_mxfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst, void* stream) {
  return guarded([&] {
    const ArgCheck c("quantize_mxfp4");
    const auto s = matrix_view(c, src, "src");
    const auto d = fp4_tensor(c, dst, "dst");
    fp4moe::quantize_mxfp4(s, d, stream_of(stream));
  });
}

fp4moe_status fp4moe_compute_amax(const fp4moe_matrix* src, float* amax, void* stream) {
  return guarded([&] {
    const ArgCheck c("compute_amax");
    fp4moe::compute_amax(matrix_view(c, src, "src"), amax, stream_of(stream));
  });
}

fp4moe_status fp4moe_dequantize(const fp4moe_fp4_tensor* src, const fp4moe_matrix* dst, void* stream) {
  return guarded([&] {
    const ArgCheck c("dequantize");
    const auto s = fp4_tensor(c, src, "src");
    const auto d = matrix_view(c, dst, "dst");
    fp4moe::dequantize(s, d, stream_of(stream));
  });
}

fp4moe_status fp4moe_prepack_weights(const fp4moe_fp4_tensor* weights, void* dst_data, void* stream) {
  return guarded([&] {
    const ArgCheck c("prepack_weights");
    fp4moe::prepack_weights(fp4_tensor(c, weights, "weights"), dst_data, stream_of(stream));
  });
}

fp4moe_status fp4moe_convert_scale_layout(const void* src, int32_t src_layout, void* dst, int32_t dst_layout,
                                          int64_t rows, int64_t cols, int64_t groups, void* stream) {
  return guarded([&] {
    const ArgCheck c("convert_scale_layout");
    const auto sl = scale_layout(c, src_layout, "src_layout");
    const auto dl = scale_layout(c, dst_layout, "dst_layout");
    fp4moe::convert_scale_layout(src, sl, dst, dl, rows, cols, groups, stream_of(stream));
  });
}

float fp4moe_nvfp4_global_encode_scale(float amax) { return fp4moe::nvfp4_global_encode_scale(amax); }

fp4moe_status fp4moe_cpu_quantize_nvfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst,
                                        const float* encode_scale) {
  return guarded([&] {
    const ArgCheck c("cpu::quantize_nvfp4");
    const auto s = matrix_view(c, src, "src");
    const auto d = fp4_tensor(c, dst, "dst");
    fp4moe::cpu::quantize_nvfp4(s, d, encode_scale);
  });
}

fp4moe_status fp4moe_cpu_quantize_mxfp4(const fp4moe_matrix* src, const fp4moe_fp4_tensor* dst) {
  return guarded([&] {
    const ArgCheck c("cpu::quantize_mxfp4");
    const auto s = matrix_view(c, src, "src");
    const auto d = fp4_tensor(c, dst, "dst");
    fp4moe::cpu::quantize_mxfp4(s, d);
  });
}

fp4moe_status fp4moe_cpu_dequantize(const fp4moe_fp4_tensor* src, const fp4moe_matrix* dst) {
  return guarded([&] {
    const ArgCheck c("cpu::dequantize");
    const auto s = fp4_tensor(c, src, "src");
    const auto d = matrix_view(c, dst, "dst");
    fp4moe::cpu::dequantize(s, d);
  });
}

fp4moe_status fp4moe_cpu_prepack_weights(const fp4moe_fp4_tensor* weights, void* dst_data) {
  return guarded([&] {
    const ArgCheck c("cpu::prepack_weights");
    fp4moe::cpu::prepack_weights(fp4_tensor(c, weights, "weights"), dst_data);
  });
}

fp4moe_status fp4moe_cpu_convert_scale_layout(const void* src, int32_t src_layout, void* dst, int32_t dst_layout,
                                              int64_t rows, int64_t cols, int64_t groups) {
  return guarded([&] {
    const ArgCheck c("cpu::convert_scale_layout");
    const auto sl = scale_layout(c, src_layout, "src_layout");
    const auto dl = scale_layout(c, dst_layout, "dst_layout");
    fp4moe::cpu::convert_scale_layout(src, sl, dst, dl, rows, cols, groups);
  });
}

}  // extern "C"
