// bench/targets.hpp: which rows each DESIGN.md §6 target reads, and how it
// counts them (rows built by hand, as the suites name them).
#include "bench/targets.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fp4moe::bench {
namespace {

Row row(const std::string& suite, const std::string& name, const std::string& variant = "",
        CeilingKind ceiling = CeilingKind::kRead, double fraction = 0, const std::string& impl = "fp4moe") {
  Row r;
  r.suite = suite;
  r.name = name;
  if (!variant.empty()) set_variant(r, variant);
  r.impl = impl;
  r.ceiling = ceiling;
  r.fraction = fraction;
  return r;
}

const TargetCheck* find(const std::vector<TargetCheck>& checks, const std::string& prefix) {
  for (const TargetCheck& c : checks)
    if (c.target.rfind(prefix, 0) == 0) return &c;
  return nullptr;
}

/// Expects the check whose target starts with `prefix` to cover `rows`
/// rows, `met` of which meet it; returns it (null if there is none).
const TargetCheck* expect_counts(const std::vector<TargetCheck>& checks, const std::string& prefix, int rows, int met) {
  const TargetCheck* c = find(checks, prefix);
  EXPECT_NE(c, nullptr) << prefix;
  if (c) {
    EXPECT_EQ(c->rows, rows) << prefix;
    EXPECT_EQ(c->met, met) << prefix;
  }
  return c;
}

// A row whose peer did not run (a --filter left the peer's row out) has no
// ratio: it is not counted, rather than counted as a miss at 0x.
TEST(BenchTargets, RowsWithoutTheirPeerAreNotCounted) {
  std::vector<Row> rows = {
      row("prefill", "prefill mxfp4 G4 8192x4096x7168"),
      row("prefill", "prefill mxfp4 G8 4096x4096x7168"),
  };
  rows[0].vs_fp8 = 0.45;  // rows[1]: no FP8 peer in this run
  const TargetCheck* c = expect_counts(check_targets(rows), "prefill MXFP4", 1, 0);
  ASSERT_NE(c, nullptr);
  EXPECT_DOUBLE_EQ(c->lo, 0.45);
}

TEST(BenchTargets, DecodeCountsTheLibrarysOwnRowsByRegime) {
  std::vector<Row> rows = {
      row("decode", "decode nvfp4 G8 1x4096x7168", "", CeilingKind::kRead, 0.90),
      row("decode", "decode nvfp4 G8 1x4096x7168", "prepacked", CeilingKind::kRead, 0.60),
      row("decode", "decode nvfp4 G8 1x4096x7168", "", CeilingKind::kRead, 0.99, "cublasLt-fp8"),  // a peer: not counted
      row("decode", "decode nvfp4 G8 64x4096x7168", "", CeilingKind::kBf16Tensor, 0.4),
      row("decode", "decode mxfp4 G8 64x4096x7168", "", CeilingKind::kBf16Tensor, 0.4),
  };
  rows[3].vs_bf16 = 0.95;
  rows[4].vs_fp8 = 0.5;
  const std::vector<TargetCheck> checks = check_targets(rows);
  const TargetCheck* mem = expect_counts(checks, "decode, memory-bound", 2, 1);
  ASSERT_NE(mem, nullptr);
  EXPECT_DOUBLE_EQ(mem->lo, 60.0);
  EXPECT_DOUBLE_EQ(mem->hi, 90.0);
  expect_counts(checks, "decode, compute-bound NVFP4", 1, 1);
  expect_counts(checks, "decode, compute-bound MXFP4", 1, 0);
  EXPECT_EQ(find(checks, "prefill"), nullptr);  // no rows, no line
}

TEST(BenchTargets, PrefillLeavesForcedTacticsOut) {
  std::vector<Row> rows = {row("prefill", "prefill nvfp4 G4 8192x4096x7168", "", CeilingKind::kBf16Tensor),
                           row("prefill", "prefill nvfp4 G4 8192x4096x7168", "prepacked", CeilingKind::kBf16Tensor),
                           row("prefill", "prefill nvfp4 G4 8192x4096x7168", "cluster1", CeilingKind::kBf16Tensor),
                           row("prefill", "prefill mxfp4 G4 8192x4096x7168", "fp8-route", CeilingKind::kFp8Tensor)};
  rows[0].vs_bf16 = 0.92;
  rows[1].vs_bf16 = 0.88;
  rows[2].vs_bf16 = 2.0;  // forced: not the library's choice
  rows[3].vs_fp8 = 2.0;
  const std::vector<TargetCheck> checks = check_targets(rows);
  const TargetCheck* nv = expect_counts(checks, "prefill NVFP4", 2, 1);
  ASSERT_NE(nv, nullptr);
  EXPECT_DOUBLE_EQ(nv->hi, 0.92);
  EXPECT_EQ(find(checks, "prefill MXFP4"), nullptr);
}

TEST(BenchTargets, MoeTargetsReadTokensRoutesAndTheExpertWidth) {
  std::vector<Row> rows = {
      row("seed-fc2", "seed-fc2 nvfp4 M=32 N=7168 E=256 W=256", "", CeilingKind::kRead, 0.95),
      row("seed-fc2", "seed-fc2 nvfp4 M=320 N=7168 E=256 W=256", "", CeilingKind::kBf16Tensor, 0.5),
      row("seed-fc2", "seed-fc2 mxfp4 M=320 N=7168 E=256 W=256", "fp8-route", CeilingKind::kFp8Tensor, 0.2),
      row("moe-fc2", "moe-fc2 nvfp4 M=32 N=7168 E=256 W=256"),
      row("moe-fc2", "moe-fc2 nvfp4 M=32 N=7168 E=256 W=256", "prepacked"),
      row("moe-fc2", "moe-fc2 nvfp4 M=32 N=7168 E=256 W=2048"),  // another width: not the target's workload
  };
  rows[2].vs_fp8 = 0.3;
  rows[3].time.median_us = 60;
  rows[4].time.median_us = 70;
  rows[5].time.median_us = 10;
  const std::vector<TargetCheck> checks = check_targets(rows);
  expect_counts(checks, "seed-fc2 M <= 32", 1, 1);  // M=320 is not M <= 32 (the whole word is read)
  expect_counts(checks, "seed-fc2 M >= 64", 1, 0);  // the FP8 route has its own target
  expect_counts(checks, "seed-fc2 MXFP4 on the FP8 route", 1, 0);
  const TargetCheck* moe = expect_counts(checks, "moe-fc2", 2, 1);  // W=2048 is not the target's workload
  ASSERT_NE(moe, nullptr);
  EXPECT_DOUBLE_EQ(moe->lo, 60.0);
  EXPECT_DOUBLE_EQ(moe->hi, 70.0);
}

TEST(BenchTargets, QuantizeRowsAgainstTheCopyBandwidth) {
  const std::vector<Row> rows = {row("quantize", "bf16 4 GiB -> mxfp4, tiled scales", "", CeilingKind::kCopy, 0.92),
                                 row("quantize", "bf16 4 GiB -> nvfp4 g from amax (2 passes)", "", CeilingKind::kCopy, 0.54)};
  const std::vector<TargetCheck> checks = check_targets(rows);
  ASSERT_EQ(checks.size(), 1u);
  expect_counts(checks, "quantize", 2, 1);
  EXPECT_DOUBLE_EQ(checks[0].lo, 54.0);
}

}  // namespace
}  // namespace fp4moe::bench
