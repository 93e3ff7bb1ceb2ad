// bench/report.hpp's JSON output: a document the strict reader accepts, with
// strings escaped, numbers exact and locale-free, and null where a number is
// not finite (it wrote `inf` for a row timed at 0).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "bench/report.hpp"
#include "bench/targets.hpp"
#include "common/json.hpp"

namespace fp4moe::bench {
namespace {

TEST(BenchJson, ParsesBackWithEscapesExactNumbersAndNullForNonFinite) {
  RunInfo info;
  info.device = "NVIDIA H200 \"test\"";
  info.sm_count = 132;
  info.commit = "abc123";
  info.date = "2026-11-29";
  Ceilings c;
  c.read_gbps = 4537.125;
  Row timed;
  timed.suite = "decode";
  timed.name = "G8 1x7168x2048\tnvfp4";
  timed.impl = "fp4moe";
  timed.time.median_us = 41.5;
  timed.bytes = 1e9;
  Row skipped = timed;  // (time 0: GB/s is not finite)
  skipped.time.median_us = 0;
  TargetCheck t;
  t.target = "decode";
  t.unit = "% of read bw";
  t.rows = 2;
  t.met = 1;
  t.lo = 35.1;
  t.hi = 87.0;
  const std::string path = ::testing::TempDir() + "fp4moe_bench_report_test.json";
  write_json(path, info, c, {timed, skipped}, {t});
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  std::remove(path.c_str());
  const auto parsed = json::parse(text.str());
  ASSERT_TRUE(std::holds_alternative<json::Value>(parsed)) << std::get<json::ParseError>(parsed).text();
  const json::Value& doc = std::get<json::Value>(parsed);
  EXPECT_EQ(doc.find("device")->as_string(), info.device);
  EXPECT_EQ(doc.find("ceilings")->find("read_gbps")->as_number(), 4537.125);
  const json::Array& rows = doc.find("rows")->as_array();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].find("name")->as_string(), timed.name);
  EXPECT_EQ(rows[0].find("median_us")->as_number(), 41.5);
  EXPECT_EQ(rows[0].find("gbps")->as_number(), timed.gbps());
  EXPECT_EQ(rows[1].find("gbps")->kind(), json::Value::Kind::kNull);
  EXPECT_EQ(doc.find("targets")->as_array().at(0).find("met")->as_number(), 1);
}

}  // namespace
}  // namespace fp4moe::bench
