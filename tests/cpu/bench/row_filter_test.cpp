// bench/row_filter.hpp: `--filter` alternatives.
#include "bench/row_filter.hpp"

#include <gtest/gtest.h>

namespace fp4moe::bench {
namespace {

TEST(RowFilter, EmptySelectsEveryRow) {
  EXPECT_TRUE(row_selected("", "nvfp4 M=32 N=7168"));
  EXPECT_TRUE(row_selected("", ""));
}

TEST(RowFilter, OneSubstring) {
  EXPECT_TRUE(row_selected("M=32 N", "nvfp4 M=32 N=7168"));
  EXPECT_FALSE(row_selected("M=32 N", "nvfp4 M=320 N=7168"));
}

TEST(RowFilter, AnyAlternative) {
  const char* f = "M=32 N|M=128 N";
  EXPECT_TRUE(row_selected(f, "nvfp4 M=32 N=7168"));
  EXPECT_TRUE(row_selected(f, "mxfp4 M=128 N=7168"));
  EXPECT_FALSE(row_selected(f, "mxfp4 M=64 N=7168"));
  EXPECT_FALSE(row_selected(f, "mxfp4 M=1280 N=7168"));
}

TEST(RowFilter, EmptyAlternativesSelectNothing) {
  EXPECT_FALSE(row_selected("|", "nvfp4 M=32 N=7168"));
  EXPECT_FALSE(row_selected("x||", "nvfp4 M=32 N=7168"));
  EXPECT_TRUE(row_selected("x||M=32", "nvfp4 M=32 N=7168"));
}

}  // namespace
}  // namespace fp4moe::bench
