#include "tuning/problem_key.hpp"

#include "tuning/buckets.hpp"

namespace fp4moe {

const char* gemm_op_name(GemmOp op) {
  switch (op) {
    case GemmOp::kDense: return "dense";
    case GemmOp::kContiguous: return "contiguous";
    case GemmOp::kMasked: return "masked";
    case GemmOp::kMoeFc2: return "moe_fc2";
    case GemmOp::kMoeFc1: return "moe_fc1";
  }
  return "?";
}

const char* gemm_output_name(GemmOutput out) {
  switch (out) {
    case GemmOutput::kBF16: return "bf16";
    case GemmOutput::kFP32: return "fp32";
    case GemmOutput::kNVFP4: return "nvfp4";
  }
  return "?";
}

std::string TuneShape::describe() const {
  std::string s = std::string(gemm_op_name(op)) + " " + format_name(format) + " " + gemm_output_name(out);
  if (op == GemmOp::kContiguous || op == GemmOp::kMasked) s += " G=" + std::to_string(groups);
  if (op == GemmOp::kMoeFc2 || op == GemmOp::kMoeFc1) s += " E=" + std::to_string(groups);
  if (op == GemmOp::kMoeFc2) s += " W=" + std::to_string(expert_width);
  s += " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
  if (op == GemmOp::kMoeFc2 && top_k > 0) s += " top_k=" + std::to_string(top_k);
  return s;
}

namespace tuning {

std::string ProblemKey::describe() const {
  std::string s = std::string(gemm_op_name(op)) + " " + format_name(format) + " " + gemm_output_name(out);
  if (op == GemmOp::kContiguous || op == GemmOp::kMasked) s += " G=" + std::to_string(groups);
  if (op == GemmOp::kMoeFc2 || op == GemmOp::kMoeFc1) s += " E=" + std::to_string(groups);
  if (op == GemmOp::kMoeFc2) s += " W=" + std::to_string(width);
  return s + " n=" + std::to_string(n) + " k=" + std::to_string(k) + " bucket=" + std::to_string(bucket);
}

std::size_t ProblemKeyHash::operator()(const ProblemKey& k) const noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  auto mix = [&](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  };
  mix(static_cast<std::uint64_t>(k.op) | static_cast<std::uint64_t>(k.format) << 8 | static_cast<std::uint64_t>(k.out) << 16);
  mix(static_cast<std::uint64_t>(k.n));
  mix(static_cast<std::uint64_t>(k.k));
  mix(static_cast<std::uint64_t>(k.groups));
  mix(static_cast<std::uint64_t>(k.width));
  mix(static_cast<std::uint64_t>(k.bucket));
  return static_cast<std::size_t>(h);
}

ProblemKey key_of(const TuneShape& call) {
  ProblemKey key;
  key.op = call.op;
  key.format = call.format;
  key.out = call.out;
  key.n = call.n;
  key.k = call.k;
  key.bucket = bucket_of(call.m);
  if (call.op != GemmOp::kDense) key.groups = call.groups;
  if (call.op == GemmOp::kMoeFc2) key.width = call.groups > 0 ? call.k / call.groups : 0;
  return key;
}

TuneShape shape_of(const ProblemKey& key) {
  TuneShape s;
  s.op = key.op;
  s.format = key.format;
  s.out = key.out;
  s.m = key.bucket;
  s.n = key.n;
  s.k = key.k;
  s.groups = key.op == GemmOp::kDense ? 1 : key.groups;
  s.expert_width = key.width;
  return s;
}

const char* format_key_name(Fp4Format f) { return format_name(f); }

std::optional<GemmOp> parse_gemm_op(const std::string& s) {
  for (GemmOp op : {GemmOp::kDense, GemmOp::kContiguous, GemmOp::kMasked, GemmOp::kMoeFc2, GemmOp::kMoeFc1})
    if (s == gemm_op_name(op)) return op;
  return std::nullopt;
}

std::optional<Fp4Format> parse_format(const std::string& s) {
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    if (s == format_name(f)) return f;
  return std::nullopt;
}

std::optional<GemmOutput> parse_output(const std::string& s) {
  for (GemmOutput o : {GemmOutput::kBF16, GemmOutput::kFP32, GemmOutput::kNVFP4})
    if (s == gemm_output_name(o)) return o;
  return std::nullopt;
}

}  // namespace tuning
}  // namespace fp4moe
