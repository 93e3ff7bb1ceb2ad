// Checks of an Fp4Tensor argument shared by every entry point that takes one.
#pragma once

#include <string>
#include <string_view>

#include "api/check.hpp"

namespace fp4moe::detail {

/// Pointers, format, layout, shape and global-scale rules of DESIGN.md §2.
/// `device` adds the alignment rules of the GPU kernels (16 bytes for data);
/// `prepacked_ok` lets the tensor be in the prepacked bit order (a GEMM's B).
inline void check_fp4_tensor(const ArgCheck& c, const Fp4Tensor& t, std::string_view name, bool device,
                             bool prepacked_ok = false) {
  c.require(!t.prepacked || prepacked_ok, Field{name, ".prepacked"},
            "must be false: only the B operand (weights) of fp4_gemm_nt, the m-grouped GEMMs and moe_dense_fc2 "
            "reads the prepacked bit order");
  c.require(valid_format(t.format), Field{name, ".format"}, "must be kNVFP4 or kMXFP4");
  c.require(valid_layout(t.scale_layout), Field{name, ".scale_layout"}, "must be kRowMajor or kTiled128x4");
  c.not_null(t.data, Field{name, ".data"});
  c.not_null(t.scales, Field{name, ".scales"});
  c.non_negative(t.rows, Field{name, ".rows"});
  c.positive(t.groups, Field{name, ".groups"});
  c.positive(t.cols, Field{name, ".cols"});
  c.multiple_of(t.cols, block_size(t.format), Field{name, ".cols"},
                [&] { return std::string("the ") + format_name(t.format) + " block size"; });
  c.require(t.rows <= (std::int64_t(1) << 40) / t.cols, name, "rows*cols must be below 2^40 per group",
            [&] { return std::to_string(t.rows) + " x " + std::to_string(t.cols); });
  if (t.format == Fp4Format::kNVFP4) {
    c.not_null(t.global_scale, Field{name, ".global_scale"});
  } else {
    c.require(t.global_scale == nullptr, Field{name, ".global_scale"}, "must be null for MXFP4 (no global scale)");
  }
  if (device) c.aligned(t.data, 16, Field{name, ".data"});
}

}  // namespace fp4moe::detail
