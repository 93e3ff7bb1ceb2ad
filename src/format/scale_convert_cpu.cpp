// CPU scale-layout converter: a gather by destination index (see
// scale_convert.hpp), so padding of a tiled destination is written as 0.
#include <cstring>

#include "common/parallel_for.hpp"
#include "format/format_ops.hpp"
#include "format/scale_convert.hpp"

namespace fp4moe::detail {

void convert_scale_layout_cpu(const std::uint8_t* src, ScaleLayout src_layout, std::uint8_t* dst,
                              ScaleLayout dst_layout, std::int64_t rows, std::int64_t cols,
                              std::int64_t groups) {
  const std::int64_t src_bytes = scale_bytes(src_layout, rows, cols);
  const std::int64_t dst_bytes = scale_bytes(dst_layout, rows, cols);
  if (src_layout == dst_layout) {
    std::memcpy(dst, src, static_cast<std::size_t>(groups * src_bytes));
    return;
  }
  parallel_for(groups, [&](std::int64_t g) {
    for (std::int64_t p = 0; p < dst_bytes; ++p)
      dst[g * dst_bytes + p] = converted_scale_byte(src + g * src_bytes, src_layout, p, rows, cols);
  });
}

}  // namespace fp4moe::detail
