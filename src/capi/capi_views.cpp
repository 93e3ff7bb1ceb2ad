#include "capi/capi_views.hpp"

namespace fp4moe::capi {

// The C codes are the C++ enum values.
static_assert(static_cast<int>(DType::kE2M1x2) == FP4MOE_DTYPE_E2M1X2 && static_cast<int>(DType::kE4M3) == FP4MOE_DTYPE_E4M3 &&
              static_cast<int>(DType::kUE8M0) == FP4MOE_DTYPE_UE8M0 && static_cast<int>(DType::kBF16) == FP4MOE_DTYPE_BF16 &&
              static_cast<int>(DType::kFP32) == FP4MOE_DTYPE_FP32 && static_cast<int>(DType::kI32) == FP4MOE_DTYPE_I32);
static_assert(static_cast<int>(Fp4Format::kNVFP4) == FP4MOE_FORMAT_NVFP4 &&
              static_cast<int>(Fp4Format::kMXFP4) == FP4MOE_FORMAT_MXFP4);
static_assert(static_cast<int>(ScaleLayout::kRowMajor) == FP4MOE_SCALES_ROW_MAJOR &&
              static_cast<int>(ScaleLayout::kTiled128x4) == FP4MOE_SCALES_TILED_128X4);

MatrixView matrix_view(const detail::ArgCheck& c, const fp4moe_matrix* m, const std::string& name) {
  c.require(m != nullptr, name, "must not be null (the fp4moe_matrix descriptor)");
  c.require(m->dtype >= FP4MOE_DTYPE_E2M1X2 && m->dtype <= FP4MOE_DTYPE_I32, name + ".dtype",
            "must be an fp4moe_dtype code (0..5)", std::to_string(m->dtype));
  MatrixView v;
  v.data = m->data;
  v.dtype = static_cast<DType>(m->dtype);
  v.rows = m->rows;
  v.cols = m->cols;
  v.row_stride = m->row_stride;
  v.col_stride = m->col_stride;
  v.groups = m->groups;
  v.group_stride = m->group_stride;
  return v;
}

Fp4Format fp4_format(const detail::ArgCheck& c, std::int32_t code, const std::string& name) {
  c.require(code == FP4MOE_FORMAT_NVFP4 || code == FP4MOE_FORMAT_MXFP4, name,
            "must be FP4MOE_FORMAT_NVFP4 (0) or FP4MOE_FORMAT_MXFP4 (1)", std::to_string(code));
  return static_cast<Fp4Format>(code);
}

ScaleLayout scale_layout(const detail::ArgCheck& c, std::int32_t code, const std::string& name) {
  c.require(code == FP4MOE_SCALES_ROW_MAJOR || code == FP4MOE_SCALES_TILED_128X4, name,
            "must be FP4MOE_SCALES_ROW_MAJOR (0) or FP4MOE_SCALES_TILED_128X4 (1)", std::to_string(code));
  return static_cast<ScaleLayout>(code);
}

Fp4Tensor fp4_tensor(const detail::ArgCheck& c, const fp4moe_fp4_tensor* t, const std::string& name) {
  c.require(t != nullptr, name, "must not be null (the fp4moe_fp4_tensor descriptor)");
  Fp4Tensor v;
  v.data = t->data;
  v.scales = t->scales;
  v.global_scale = t->global_scale;
  v.format = fp4_format(c, t->format, name + ".format");
  v.scale_layout = scale_layout(c, t->scale_layout, name + ".scale_layout");
  v.rows = t->rows;
  v.cols = t->cols;
  v.groups = t->groups;
  c.require(t->prepacked == 0 || t->prepacked == 1, name + ".prepacked", "must be 0 or 1", std::to_string(t->prepacked));
  v.prepacked = t->prepacked == 1;
  return v;
}

GemmOptions gemm_options(const fp4moe_tactic* tactic, GemmTactic& storage) {
  GemmOptions o;
  if (tactic) {
    storage.swap_ab = tactic->swap_ab != 0;
    storage.block_n = tactic->block_n;
    storage.block_k = tactic->block_k;
    storage.stages = tactic->stages;
    storage.split_k = tactic->split_k;
    storage.moe_gather = tactic->moe_gather != 0;
    storage.fp8 = tactic->fp8 != 0;
    storage.cluster = tactic->cluster == 0 ? 1 : tactic->cluster;
    o.tactic = &storage;
  }
  return o;
}

}  // namespace fp4moe::capi
