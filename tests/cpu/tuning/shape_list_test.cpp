// The shape-list file of `fp4moe tune --shapes`.
#include <gtest/gtest.h>

#include "fp4moe/error.hpp"
#include "tuning/shape_list.hpp"

namespace fp4moe::tuning {
namespace {

TEST(ShapeList, ParsesTheDocumentedExample) {
  const std::string text =
      "# deployment shapes\n"
      "dense   nvfp4 bf16 m=64 n=2112 k=7168\n"
      "\n"
      "masked  mxfp4 bf16 groups=8 m=1-64 n=4096 k=7168   # decode\n"
      "moe_fc2 nvfp4 fp32 experts=256 width=256 m=300 n=7168 top_k=8\n"
      "moe_fc1 nvfp4 nvfp4 experts=8 m=8 n=512 k=1024\n"
      "contiguous mxfp4 bf16 groups=4 m=4096 n=4096 k=7168\n";
  const std::vector<TuneShape> s = parse_shape_list(text, "shapes.txt", TuneOptions{});
  ASSERT_EQ(s.size(), 1u + 11u + 1u + 1u + 1u);
  EXPECT_EQ(s[0].op, GemmOp::kDense);
  EXPECT_EQ(s[0].m, 64);
  EXPECT_EQ(s[0].n, 2112);
  EXPECT_EQ(s[0].k, 7168);
  for (int i = 0; i < 11; ++i) {
    EXPECT_EQ(s[1 + i].op, GemmOp::kMasked);
    EXPECT_EQ(s[1 + i].format, Fp4Format::kMXFP4);
    EXPECT_EQ(s[1 + i].groups, 8);
    EXPECT_EQ(s[1 + i].m, i < 3 ? 1 << i : 8 * (i - 2));  // one shape per bucket: 1, 2, 4, 8, ..., 64
  }
  const TuneShape& fc2 = s[12];
  EXPECT_EQ(fc2.op, GemmOp::kMoeFc2);
  EXPECT_EQ(fc2.out, GemmOutput::kFP32);
  EXPECT_EQ(fc2.groups, 256);
  EXPECT_EQ(fc2.expert_width, 256);
  EXPECT_EQ(fc2.k, 65536);  // filled in from E·W
  EXPECT_EQ(fc2.top_k, 8);
  EXPECT_EQ(fc2.m, 300);
  EXPECT_EQ(s[13].op, GemmOp::kMoeFc1);
  EXPECT_EQ(s[13].out, GemmOutput::kNVFP4);
  EXPECT_EQ(s[14].op, GemmOp::kContiguous);
}

TEST(ShapeList, AllMeansEveryBucketUpToTheMaximum) {
  TuneOptions opt;
  opt.max_m = 1024;
  const auto s = parse_shape_list("dense nvfp4 bf16 m=all n=256 k=256\n", "x", opt);
  ASSERT_EQ(s.size(), 3u + 16u + 7u);
  EXPECT_EQ(s.front().m, 1);
  EXPECT_EQ(s.back().m, 1024);
}

TEST(ShapeList, ErrorsNameTheLineAndTheRule) {
  const struct {
    const char* line;
    const char* expect;
  } bad[] = {
      {"sparse nvfp4 bf16 m=1 n=256 k=256", "unknown op"},
      {"dense fp8 bf16 m=1 n=256 k=256", "unknown format"},
      {"dense nvfp4 m=1 n=256 k=256", "unknown output"},
      {"dense nvfp4 bf16 n=256 k=256", "missing m="},
      {"dense nvfp4 bf16 m=1 k=256", "missing n="},
      {"dense nvfp4 bf16 m=1 n=256 k=250", "k must be a multiple of 32"},
      {"dense nvfp4 bf16 m=x n=256 k=256", "not an integer"},
      {"dense nvfp4 bf16 m=9-3 n=256 k=256", "LO <= HI"},
      {"dense nvfp4 bf16 m=9000 n=256 k=256", "max_m"},
      {"dense nvfp4 bf16 m=1 n=256 k=256 colour=red", "unknown key"},
      {"dense nvfp4 bf16 m=1 n=256 n=512 k=256", "given twice"},
      {"dense nvfp4 nvfp4 m=1 n=256 k=256", "out"},
      {"moe_fc2 nvfp4 bf16 experts=4 width=100 m=1 n=256", "expert_width"},
      {"moe_fc2 nvfp4 bf16 experts=4 width=128 m=1 n=256 k=1024", "groups*expert_width"},
      {"moe_fc1 nvfp4 bf16 experts=4 m=1 n=384 k=256", "2I"},
      {"masked nvfp4 bf16 groups=2000 m=1 n=256 k=256", "groups"},
      {"dense nvfp4 bf16 m=1 n=256 k=256 top_k=2", "top_k"},
      // (It was narrowed to int unchecked: 2^32 + 2 became 2.)
      {"moe_fc2 nvfp4 bf16 experts=4 width=128 m=1 n=256 top_k=4294967298", "top_k out of range"},
  };
  for (const auto& b : bad) {
    const std::string text = "# header\n\n" + std::string(b.line) + "\n";
    try {
      parse_shape_list(text, "list.txt", TuneOptions{});
      ADD_FAILURE() << "accepted: " << b.line;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("list.txt:3: ", 0), 0u) << what;
      EXPECT_NE(what.find(b.expect), std::string::npos) << b.line << " -> " << what;
    }
  }
}

}  // namespace
}  // namespace fp4moe::tuning
