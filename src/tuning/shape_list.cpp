#include "tuning/shape_list.hpp"

#include <charconv>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "fp4moe/error.hpp"
#include "tuning/autotuner.hpp"
#include "tuning/buckets.hpp"
#include "tuning/problem_key.hpp"

namespace fp4moe::tuning {
namespace {

std::int64_t parse_int(const std::string& v, const std::string& key) {
  std::int64_t x = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) throw Error(key + "=" + v + ": not an integer");
  return x;
}

std::vector<TuneShape> parse_line(const std::string& line, const TuneOptions& options) {
  std::istringstream in(line);
  std::string op, fmt, out;
  in >> op >> fmt >> out;
  TuneShape s;
  const auto o = parse_gemm_op(op);
  if (!o) throw Error("unknown op '" + op + "' (dense, contiguous, masked, moe_fc2, moe_fc1)");
  s.op = *o;
  const auto f = parse_format(fmt);
  if (!f) throw Error("unknown format '" + fmt + "' (nvfp4, mxfp4)");
  s.format = *f;
  const auto d = parse_output(out);
  if (!d) throw Error(out.empty() ? std::string("missing the output (bf16, fp32, nvfp4)") : "unknown output '" + out + "' (bf16, fp32, nvfp4)");
  s.out = *d;
  std::int64_t m_lo = 0, m_hi = 0;
  std::set<std::string> seen;
  for (std::string kv; in >> kv;) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("expected key=value, got '" + kv + "'");
    std::string key = kv.substr(0, eq);
    const std::string v = kv.substr(eq + 1);
    if (key == "experts") key = "groups";
    if (!seen.insert(key).second) throw Error("'" + key + "' given twice");
    if (key == "m") {
      const auto dash = v.find('-');
      if (v == "all") {
        m_lo = 1;
        m_hi = options.max_m;
      } else if (dash != std::string::npos) {
        m_lo = parse_int(v.substr(0, dash), "m");
        m_hi = parse_int(v.substr(dash + 1), "m");
        if (m_lo < 1 || m_hi < m_lo) throw Error("m=" + v + ": need 1 <= LO <= HI");
      } else {
        m_lo = m_hi = parse_int(v, "m");
      }
    } else if (key == "n") {
      s.n = parse_int(v, key);
    } else if (key == "k") {
      s.k = parse_int(v, key);
    } else if (key == "groups") {
      s.groups = parse_int(v, key);
    } else if (key == "width") {
      s.expert_width = parse_int(v, key);
    } else if (key == "top_k") {
      const std::int64_t top_k = parse_int(v, key);
      if (top_k < 0 || top_k > std::numeric_limits<int>::max()) throw Error("top_k out of range (" + v + ")");
      s.top_k = static_cast<int>(top_k);
    } else {
      throw Error("unknown key '" + key + "' (m, n, k, groups/experts, width, top_k)");
    }
  }
  if (!seen.count("m")) throw Error("missing m=");
  if (!seen.count("n")) throw Error("missing n=");
  std::vector<TuneShape> out_shapes;
  const std::vector<std::int64_t> buckets =
      m_lo == m_hi ? std::vector<std::int64_t>{m_lo} : buckets_between(m_lo, m_hi, options.max_m);
  for (std::int64_t b : buckets) {
    TuneShape one = s;
    one.m = b;
    out_shapes.push_back(checked_shape(one, 0, options));
  }
  return out_shapes;
}

}  // namespace

std::vector<TuneShape> parse_shape_list(const std::string& text, const std::string& name, const TuneOptions& options) {
  std::vector<TuneShape> shapes;
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      for (TuneShape& s : parse_line(line, options)) shapes.push_back(s);
    } catch (const InvalidArgument& e) {
      // "shapes[0].k" is this line's k.
      std::string arg = e.argument();
      const auto dot = arg.find("].");
      if (dot != std::string::npos) arg = arg.substr(dot + 2);
      throw Error(name + ":" + std::to_string(number) + ": " + arg + " " + e.rule());
    } catch (const Error& e) {
      throw Error(name + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  return shapes;
}

std::vector<TuneShape> read_shape_list(const std::string& path, const TuneOptions& options) {
  std::ifstream f(path);
  if (!f) throw Error("cannot read the shape list " + path);
  std::stringstream text;
  text << f.rdbuf();
  return parse_shape_list(text.str(), path, options);
}

}  // namespace fp4moe::tuning
