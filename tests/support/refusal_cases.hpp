// Validation cases written as calls: each breaks one rule, and its refusal
// must name the argument of that rule.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
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

/// The bytes of a setup's host buffers, inputs as well as outputs, taken
/// once its arguments are made: a refused call must leave every one of them
/// as it was. (An output aliasing an input, one of the rules, points into an
/// input buffer, so a check of the output buffer alone would miss a write.)
class HostBuffers {
 public:
  /// Fills `n` bytes at `p` with a pattern of no meaning and remembers them.
  void fill_and_keep(void* p, std::size_t n) {
    auto* bytes = static_cast<std::uint8_t*>(p);
    for (std::size_t i = 0; i < n; ++i) bytes[i] = std::uint8_t(0x5a ^ (i * 37));
    keep(p, n);
  }
  /// Remembers the `n` bytes at `p` as they are now.
  void keep(const void* p, std::size_t n) {
    const auto* bytes = static_cast<const std::uint8_t*>(p);
    kept_.push_back({bytes, std::vector<std::uint8_t>(bytes, bytes + n)});
  }
  bool unchanged() const {
    return std::all_of(kept_.begin(), kept_.end(),
                       [](const Kept& k) { return std::memcmp(k.at, k.bytes.data(), k.bytes.size()) == 0; });
  }

 private:
  struct Kept {
    const std::uint8_t* at;
    std::vector<std::uint8_t> bytes;
  };
  std::vector<Kept> kept_;
};

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
