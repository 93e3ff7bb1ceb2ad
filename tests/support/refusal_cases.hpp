// Validation cases written as calls: each breaks one rule, and its refusal
// must name the argument of that rule.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "fp4moe/error.hpp"

namespace fp4moe::test {

struct RefusalCase {
  const char* name;            ///< the rule broken, for failure messages
  std::function<void()> call;  ///< the call that breaks it
  const char* argument;        ///< what InvalidArgument::argument() must be
};

/// Runs every case: each must throw InvalidArgument naming its argument.
inline void expect_each_refused(const std::vector<RefusalCase>& cases) {
  for (const RefusalCase& c : cases) {
    try {
      c.call();
      ADD_FAILURE() << "accepted: " << c.name;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), c.argument) << c.name << ": " << e.what();
    }
  }
}

/// One rule of a setup (the arguments of a valid call, whose untouched()
/// says its output still holds its sentinel): `rule.breaks` spoils one
/// argument of `s`, then `call(s)` must throw InvalidArgument naming
/// `rule.argument` and leave the output untouched.
template <class Setup, class Rule>
void expect_rule_refused(Setup& s, const Rule& rule, const std::function<void(Setup&)>& call) {
  rule.breaks(s);
  try {
    call(s);
    ADD_FAILURE() << "accepted: " << rule.name;
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), rule.argument) << rule.name << ": " << e.what();
  }
  EXPECT_TRUE(s.untouched()) << rule.name;
}

}  // namespace fp4moe::test
