// A small, strict JSON reader and writer (RFC 8259), enough for the tuning
// cache: no dependency, no extensions. The reader refuses anything that is not
// exactly one JSON value: trailing commas, comments, single quotes, leading
// zeros, NaN/Infinity, unescaped control characters, lone surrogates, bad
// escapes, duplicate object keys, trailing bytes, and nesting deeper than
// kMaxDepth. Errors name the byte offset.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace fp4moe::json {

class Value;
using Array = std::vector<Value>;
using Object = std::map<std::string, Value>;  ///< sorted keys: the writer's output is deterministic

class Value {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : v_(b) {}
  Value(double d) : v_(d) {}
  Value(int i) : v_(double(i)) {}
  Value(std::int64_t i) : v_(double(i)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(Array a) : v_(std::move(a)) {}
  Value(Object o) : v_(std::move(o)) {}

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_number() const { return kind() == Kind::kNumber; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }

  // Accessors assume the kind (check first); they throw std::bad_variant_access otherwise.
  bool as_bool() const { return std::get<bool>(v_); }
  double as_number() const { return std::get<double>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Array& as_array() const { return std::get<Array>(v_); }
  Array& as_array() { return std::get<Array>(v_); }
  const Object& as_object() const { return std::get<Object>(v_); }
  Object& as_object() { return std::get<Object>(v_); }

  /// Member `key` of an object, or null when absent (or not an object).
  const Value* find(const std::string& key) const;

  bool operator==(const Value&) const = default;

 private:
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> v_;
};

constexpr int kMaxDepth = 64;

struct ParseError {
  std::size_t offset = 0;
  std::string message;
  std::string text() const;  ///< "<message> at byte <offset>"
};

/// Parses exactly one JSON value (surrounding whitespace allowed).
std::variant<Value, ParseError> parse(std::string_view text);

/// Serialises `v`. indent = 0: one line; else pretty-printed with that many
/// spaces per level. Numbers print as integers when they are integral and
/// within ±2^53, else with 17 significant digits (round trip exact).
/// Non-finite numbers cannot be written (JSON has none): they become null.
std::string write(const Value& v, int indent = 2);

/// The value as an integer when it is an integral number in [lo, hi].
std::optional<std::int64_t> as_integer(const Value& v, std::int64_t lo, std::int64_t hi);

}  // namespace fp4moe::json
