// The strict JSON reader/writer of the tuning cache: round trips, and one
// refusal per rule (never a crash, never a partial value).
#include <gtest/gtest.h>

#include <clocale>
#include <string>

#include "common/json.hpp"

namespace fp4moe::json {
namespace {

Value parsed(const std::string& text) {
  auto r = parse(text);
  if (auto* e = std::get_if<ParseError>(&r)) {
    ADD_FAILURE() << "refused: " << text << ": " << e->text();
    return Value();
  }
  return std::get<Value>(r);
}

TEST(Json, ParsesEveryKind) {
  const Value v = parsed(R"( {"a": [1, -2.5, 3e2, 0, -0.0, true, false, null], "b": {"c": "x\n\"y\"\\/\u00e9\ud83d\ude00"}} )");
  ASSERT_TRUE(v.is_object());
  const Array& a = v.find("a")->as_array();
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a[0].as_number(), 1);
  EXPECT_EQ(a[1].as_number(), -2.5);
  EXPECT_EQ(a[2].as_number(), 300);
  EXPECT_TRUE(a[5].as_bool());
  EXPECT_FALSE(a[6].as_bool());
  EXPECT_TRUE(a[7].is_null());
  EXPECT_EQ(v.find("b")->find("c")->as_string(), "x\n\"y\"\\/\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(Json, WriteThenParseIsIdentity) {
  Object o;
  o["int"] = std::int64_t(9007199254740991);  // 2^53 - 1: exact
  o["neg"] = -17;
  o["frac"] = 0.1;
  o["tiny"] = 1e-300;
  o["s"] = std::string("tab\tctl\x01 quote\" back\\ utf8 \xc3\xa9");
  o["arr"] = Array{Value(1), Value("two"), Value(Array{}), Value(Object{})};
  o["nested"] = Object{{"k", Value(true)}};
  const Value v(o);
  for (int indent : {0, 1, 2}) {
    const std::string text = write(v, indent);
    EXPECT_EQ(parsed(text), v) << text;
  }
  EXPECT_EQ(write(Value(std::int64_t(42)), 0), "42");
  EXPECT_EQ(write(Value(0.5), 0), "0.5");
}

TEST(Json, RefusesWhatIsNotStrictJson) {
  const char* bad[] = {
      "",              "   ",          "{",           "}",          "[1,]",        "{\"a\":1,}",   "[1 2]",
      "{\"a\" 1}",     "{a:1}",        "{'a':1}",     "01",         "-",           "1.",           ".5",
      "+1",            "1e",           "1e+",         "NaN",        "Infinity",    "-Infinity",    "1e400",
      "tru",           "nul",          "\"abc",       "\"\\x\"",    "\"\\u12\"",   "\"\\ud800\"",  "\"\\udc00\"",
      "\"\x01\"",      "\"\xff\"",     "\"\xc3\"",    "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "{\"a\":1,\"a\":2}", "1 2",
      "[1] x",         "// c\n1",      "[1]/*c*/",    "\"a\"\"b\"",
  };
  for (const char* text : bad) {
    auto r = parse(text);
    EXPECT_TRUE(std::holds_alternative<ParseError>(r)) << "accepted: " << text;
  }
}

/// Numbers do not follow the C locale: a program that set a comma decimal
/// point must still write and read "0.5" (the cache would be corrupt
/// otherwise). Skips where no such locale is installed.
TEST(Json, NumbersIgnoreTheLocale) {
  const std::string before = std::setlocale(LC_NUMERIC, nullptr);
  const char* comma = nullptr;
  for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "ru_RU.UTF-8", "de_DE"})
    if (std::setlocale(LC_NUMERIC, name)) {
      comma = name;
      break;
    }
  if (!comma) GTEST_SKIP() << "no locale with a comma decimal point installed";
  const std::string text = write(Value(Array{Value(0.5), Value(41.25), Value(1e-300)}), 0);
  auto r = parse(text);
  std::setlocale(LC_NUMERIC, before.c_str());
  EXPECT_EQ(text, "[0.5, 41.25, 1e-300]") << "under " << comma;
  ASSERT_TRUE(std::holds_alternative<Value>(r)) << text;
  EXPECT_EQ(std::get<Value>(r).as_array()[1].as_number(), 41.25);
}

/// The writer never produces what the strict reader refuses: bytes that are
/// not UTF-8 become U+FFFD, valid sequences stay.
TEST(Json, InvalidUtf8IsWrittenAsReplacementCharacters) {
  const std::string raw = "path \xff\xfe/\xc3\xa9t\xc3 \xed\xa0\x80 end";
  const std::string text = write(Value(raw), 0);
  auto r = parse(text);
  ASSERT_TRUE(std::holds_alternative<Value>(r)) << text;
  EXPECT_EQ(std::get<Value>(r).as_string(), "path \xef\xbf\xbd\xef\xbf\xbd/\xc3\xa9t\xef\xbf\xbd "
                                            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end");
}

TEST(Json, RefusesDeepNestingWithoutCrashing) {
  const std::string deep(100000, '[');
  auto r = parse(deep);
  ASSERT_TRUE(std::holds_alternative<ParseError>(r));
  EXPECT_NE(std::get<ParseError>(r).message.find("nesting"), std::string::npos);
  const std::string ok = std::string(kMaxDepth - 1, '[') + std::string(kMaxDepth - 1, ']');
  EXPECT_TRUE(std::holds_alternative<Value>(parse(ok)));
}

TEST(Json, ErrorsNameTheOffset) {
  auto r = parse("[1, 2, x]");
  ASSERT_TRUE(std::holds_alternative<ParseError>(r));
  EXPECT_EQ(std::get<ParseError>(r).offset, 7u);
}

TEST(Json, AsIntegerChecksIntegralAndRange) {
  EXPECT_EQ(as_integer(Value(7), 0, 10), 7);
  EXPECT_FALSE(as_integer(Value(7.5), 0, 10));
  EXPECT_FALSE(as_integer(Value(11), 0, 10));
  EXPECT_FALSE(as_integer(Value(-1), 0, 10));
  EXPECT_FALSE(as_integer(Value("7"), 0, 10));
  EXPECT_FALSE(as_integer(Value(1e300), 0, std::int64_t(1) << 62));
}

}  // namespace
}  // namespace fp4moe::json
