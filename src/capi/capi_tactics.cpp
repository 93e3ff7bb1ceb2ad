// C entry points listing and naming GEMM tactics.
#include <algorithm>
#include <cstring>
#include <string>

#include "capi/capi_guard.hpp"
#include "capi/capi_views.hpp"
#include "tuning/tactic_space.hpp"

using fp4moe::capi::guarded;
using fp4moe::detail::ArgCheck;
using fp4moe::kernels::Layout;

static_assert(static_cast<int>(Layout::kDense) == FP4MOE_LAYOUT_DENSE &&
                  static_cast<int>(Layout::kContiguous) == FP4MOE_LAYOUT_CONTIGUOUS &&
                  static_cast<int>(Layout::kMasked) == FP4MOE_LAYOUT_MASKED &&
                  static_cast<int>(Layout::kMoeDense) == FP4MOE_LAYOUT_MOE_DENSE &&
                  static_cast<int>(Layout::kMoeFc1) == FP4MOE_LAYOUT_MOE_FC1,
              "fp4moe_gemm_layout must follow kernels::Layout");

extern "C" {

fp4moe_status fp4moe_gemm_tactics(int32_t format, int32_t layout, fp4moe_tactic* out, int32_t capacity,
                                  int32_t* count) {
  return guarded([&] {
    const ArgCheck c("gemm_tactics");
    const fp4moe::Fp4Format f = fp4moe::capi::fp4_format(c, format, "format");
    c.require(layout >= FP4MOE_LAYOUT_DENSE && layout <= FP4MOE_LAYOUT_MOE_FC1, "layout",
              "must be an fp4moe_gemm_layout code (0..4)", std::to_string(layout));
    c.not_null(count, "count");
    c.non_negative(capacity, "capacity");
    c.require(capacity == 0 || out != nullptr, "out", "must not be null when capacity is positive");
    const auto tactics = fp4moe::tuning::compiled_tactics(f, static_cast<Layout>(layout));
    const auto n = static_cast<int32_t>(tactics.size());
    for (int32_t i = 0; i < std::min(n, capacity); ++i) {
      const fp4moe::GemmTactic& t = tactics[static_cast<std::size_t>(i)];
      out[i] = fp4moe_tactic{t.swap_ab ? 1 : 0, t.block_n, t.block_k, t.stages, t.split_k, t.moe_gather ? 1 : 0, t.fp8 ? 1 : 0, t.cluster};
    }
    *count = n;
  });
}

fp4moe_status fp4moe_tactic_name(const fp4moe_tactic* tactic, char* buf, int32_t size) {
  return guarded([&] {
    const ArgCheck c("tactic_name");
    c.not_null(tactic, "tactic");
    c.not_null(buf, "buf");
    c.positive(size, "size");
    fp4moe::GemmTactic storage;
    const std::string name = fp4moe::capi::gemm_options(tactic, storage).tactic->name();
    const std::size_t n = std::min(name.size(), static_cast<std::size_t>(size - 1));
    std::memcpy(buf, name.data(), n);
    buf[n] = '\0';
  });
}

}  // extern "C"
