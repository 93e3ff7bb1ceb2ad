#include "common/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace fp4moe::json {

const Value* Value::find(const std::string& key) const {
  if (!is_object()) return nullptr;
  const Object& o = as_object();
  const auto it = o.find(key);
  return it == o.end() ? nullptr : &it->second;
}

std::string ParseError::text() const { return message + " at byte " + std::to_string(offset); }

namespace {

/// Length of the well-formed UTF-8 sequence at s[i] (shortest form, no
/// surrogates, at most U+10FFFF), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t len = 0;
  unsigned cp = 0;
  if (b0 < 0x80) return 1;
  if ((b0 & 0xE0) == 0xC0) len = 2, cp = b0 & 0x1F;
  else if ((b0 & 0xF0) == 0xE0) len = 3, cp = b0 & 0x0F;
  else if ((b0 & 0xF8) == 0xF0) len = 4, cp = b0 & 0x07;
  else return 0;
  if (s.size() - i < len) return 0;
  for (std::size_t j = 1; j < len; ++j) {
    const auto b = static_cast<unsigned char>(s[i + j]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  const unsigned min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
  return cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : len;
}

struct Failure {
  ParseError error;
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Value document() {
    skip_ws();
    Value v = value(0);
    skip_ws();
    if (i_ != s_.size()) fail("unexpected bytes after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw Failure{ParseError{i_, why}}; }

  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }

  void skip_ws() {
    while (!at_end() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }

  void expect(char c, const char* what) {
    if (peek() != c || at_end()) fail(std::string("expected ") + what);
    ++i_;
  }

  void literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) fail("invalid literal");
    i_ += word.size();
  }

  Value value(int depth) {
    if (depth >= kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (at_end()) fail("unexpected end of input");
    switch (peek()) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return Value(string());
      case 't': literal("true"); return Value(true);
      case 'f': literal("false"); return Value(false);
      case 'n': literal("null"); return Value(nullptr);
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return Value(number());
        fail(std::string("unexpected character '") + peek() + "'");
    }
  }

  Value object(int depth) {
    ++i_;  // '{'
    Object o;
    skip_ws();
    if (peek() == '}' && !at_end()) {
      ++i_;
      return Value(std::move(o));
    }
    for (;;) {
      skip_ws();
      if (peek() != '"' || at_end()) fail("expected a string key");
      const std::size_t key_at = i_;
      std::string key = string();
      skip_ws();
      expect(':', "':'");
      skip_ws();
      Value v = value(depth + 1);
      if (!o.emplace(std::move(key), std::move(v)).second) {
        i_ = key_at;
        fail("duplicate object key");
      }
      skip_ws();
      if (peek() == ',' && !at_end()) {
        ++i_;
        continue;
      }
      expect('}', "',' or '}'");
      return Value(std::move(o));
    }
  }

  Value array(int depth) {
    ++i_;  // '['
    Array a;
    skip_ws();
    if (peek() == ']' && !at_end()) {
      ++i_;
      return Value(std::move(a));
    }
    for (;;) {
      skip_ws();
      a.push_back(value(depth + 1));
      skip_ws();
      if (peek() == ',' && !at_end()) {
        ++i_;
        continue;
      }
      expect(']', "',' or ']'");
      return Value(std::move(a));
    }
  }

  unsigned hex4() {
    if (s_.size() - i_ < 4) fail("truncated \\u escape");
    unsigned v = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  /// Validates one UTF-8 sequence starting at i_ and appends it.
  void utf8_char(std::string& out) {
    const std::size_t len = utf8_length(s_, i_);
    if (len == 0) fail("invalid UTF-8");
    out.append(s_.substr(i_, len));
    i_ += len;
  }

  std::string string() {
    ++i_;  // '"'
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("unescaped control character in string");
      if (c != '\\') {
        utf8_char(out);
        continue;
      }
      ++i_;
      if (at_end()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s_.substr(i_, 2) != "\\u") fail("lone high surrogate");
            i_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("lone high surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: --i_; fail("invalid escape");
      }
    }
  }

  double number() {
    const std::size_t start = i_;
    if (peek() == '-') ++i_;
    auto digits = [&] {
      const std::size_t d0 = i_;
      while (!at_end() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ - d0;
    };
    if (peek() == '0' && !at_end()) {
      ++i_;
      if (!at_end() && s_[i_] >= '0' && s_[i_] <= '9') fail("leading zero in number");
    } else if (digits() == 0) {
      fail("expected digits");
    }
    if (peek() == '.' && !at_end()) {
      ++i_;
      if (digits() == 0) fail("expected digits after '.'");
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      ++i_;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++i_;
      if (digits() == 0) fail("expected exponent digits");
    }
    // from_chars, not strtod: strtod follows the C locale's decimal point,
    // so a process that set LC_NUMERIC to a comma locale would misread "41.5".
    double d = 0;
    const char* first = s_.data() + start;
    const char* last = s_.data() + i_;
    const auto r = std::from_chars(first, last, d);
    if (r.ec == std::errc::result_out_of_range || (r.ec == std::errc() && !std::isfinite(d))) {
      i_ = start;
      fail("number out of range");
    }
    if (r.ec != std::errc() || r.ptr != last) fail("bad number");
    return d;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

void write_string(std::string& out, const std::string& s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    const char ch = s[i];
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else if (c >= 0x80) {
          // Text that is not UTF-8 (an error message quoting a raw path, say)
          // would make the file unreadable to the strict reader: write U+FFFD.
          const std::size_t len = utf8_length(s, i);
          if (len == 0) {
            out += "\\ufffd";
            ++i;
          } else {
            out.append(s, i, len);
            i += len;
          }
          continue;
        } else {
          out += ch;
        }
    }
    ++i;
  }
  out += '"';
}

void write_number(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  // to_chars: locale-independent (snprintf's "%g" writes "41,5" under a comma
  // LC_NUMERIC) and the shortest text that reads back exactly.
  char buf[40];
  const auto r = d == std::floor(d) && std::fabs(d) <= 9007199254740992.0
                     ? std::to_chars(buf, buf + sizeof buf, static_cast<long long>(d))
                     : std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, r.ptr);
}

void write_value(std::string& out, const Value& v, int indent, int level) {
  auto newline = [&](int lvl) {
    if (indent <= 0) return;
    out += '\n';
    out.append(std::size_t(indent) * std::size_t(lvl), ' ');
  };
  switch (v.kind()) {
    case Value::Kind::kNull: out += "null"; break;
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; break;
    case Value::Kind::kNumber: write_number(out, v.as_number()); break;
    case Value::Kind::kString: write_string(out, v.as_string()); break;
    case Value::Kind::kArray: {
      const Array& a = v.as_array();
      out += '[';
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i) out += indent > 0 ? "," : ", ";
        newline(level + 1);
        write_value(out, a[i], indent, level + 1);
      }
      if (!a.empty()) newline(level);
      out += ']';
      break;
    }
    case Value::Kind::kObject: {
      const Object& o = v.as_object();
      out += '{';
      bool first = true;
      for (const auto& [k, x] : o) {
        if (!first) out += indent > 0 ? "," : ", ";
        first = false;
        newline(level + 1);
        write_string(out, k);
        out += ": ";
        write_value(out, x, indent, level + 1);
      }
      if (!o.empty()) newline(level);
      out += '}';
      break;
    }
  }
}

}  // namespace

std::variant<Value, ParseError> parse(std::string_view text) {
  try {
    return Parser(text).document();
  } catch (const Failure& f) {
    return f.error;
  }
}

std::string write(const Value& v, int indent) {
  std::string out;
  write_value(out, v, indent, 0);
  return out;
}

std::optional<std::int64_t> as_integer(const Value& v, std::int64_t lo, std::int64_t hi) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.as_number();
  if (d != std::floor(d) || std::fabs(d) > 9007199254740992.0 || d < double(lo) || d > double(hi)) return std::nullopt;
  return static_cast<std::int64_t>(d);
}

}  // namespace fp4moe::json
