// kernels/moe/gather_tokens.hpp's workspace layout, on the host: every
// expert's slots a multiple of 32 (every token block of the gather tiles, so
// a pass never reads past its expert), parts 256-byte aligned and apart, and
// the tokens' part a BF16 row of W columns for every slot.
#include <gtest/gtest.h>

#include "kernels/moe/gather_tokens.hpp"

namespace fp4moe::kernels {
namespace {

TEST(GatherLayout, SlotsAndParts) {
  for (std::int64_t m : {1, 31, 32, 33, 384, 635})
    for (std::int64_t e : {1, 7, 256})
      for (std::int64_t w : {128, 256, 2048}) {
        const GatherLayout l = gather_layout(m, e, w);
        SCOPED_TRACE(std::to_string(m) + " tokens, " + std::to_string(e) + " experts, W " + std::to_string(w));
        EXPECT_EQ(l.capacity % 32, 0);
        EXPECT_GE(l.capacity, m);
        EXPECT_LT(l.capacity, m + 32);
        const std::size_t slots = static_cast<std::size_t>(e * l.capacity);
        const std::size_t ends[][2] = {{l.counts, l.counts + 4 * std::size_t(e)},
                                       {l.tokens, l.tokens + 4 * slots},
                                       {l.alpha, l.alpha + 4 * slots},
                                       {l.data, l.data + slots * std::size_t(w) * 2}};
        for (std::size_t i = 0; i < 4; ++i) {
          EXPECT_EQ(ends[i][0] % 256, 0u) << "part " << i;
          if (i > 0) {
            EXPECT_GE(ends[i][0], ends[i - 1][1]) << "part " << i << " overlaps the one before";
          }
        }
        EXPECT_GE(l.bytes, ends[3][1]);
      }
}

}  // namespace
}  // namespace fp4moe::kernels
