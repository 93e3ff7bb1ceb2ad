// The prepacked weight bit order on the CPU: word by word (weight_prepack.hpp).
#include <cstring>

#include "format/format_ops.hpp"
#include "format/weight_prepack.hpp"

namespace fp4moe::detail {

void prepack_weights_cpu(const std::uint8_t* src, std::uint8_t* dst, std::int64_t words) {
  for (std::int64_t i = 0; i < words; ++i) {
    std::uint32_t w;
    std::memcpy(&w, src + 4 * i, 4);
    w = format::prepack_word(w);
    std::memcpy(dst + 4 * i, &w, 4);
  }
}

}  // namespace fp4moe::detail
