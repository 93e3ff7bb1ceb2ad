// ArgCheck (src/api/check.hpp): a rule that holds builds no text; a rule
// that fails names the function, the argument and the rule, with what it got.
#include <gtest/gtest.h>

#include <string>

#include "api/check.hpp"

namespace fp4moe::detail {
namespace {

TEST(ArgCheck, AHoldingRuleBuildsNoText) {
  const ArgCheck c("f");
  int made = 0;
  auto text = [&] {
    ++made;
    return std::string("text");
  };
  c.require(true, text, text, text);
  c.multiple_of(64, 32, "k", text);
  c.equal(3, 3, "rows", text);
  EXPECT_EQ(made, 0);
}

TEST(ArgCheck, AFailedRuleNamesItsPartsWithWhatItGot) {
  const ArgCheck c("f");
  try {
    c.require(false, Field{"a", ".cols"}, [] { return std::string("must be ") + "even"; }, std::int64_t{7});
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.function(), "f");
    EXPECT_EQ(e.argument(), "a.cols");
    EXPECT_EQ(e.rule(), "must be even (got 7)");
  }
  try {
    c.equal(2, 3, "d.rows", "the rows of A");
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.rule(), "must equal the rows of A = 3 (got 2)");
  }
  try {
    c.require(false, "x", "must hold");  // nothing got: no "(got ...)"
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.rule(), "must hold");
  }
}

}  // namespace
}  // namespace fp4moe::detail
