// Argument checking for the public entry points.
//
// Each entry point builds an ArgCheck with its own name and runs every rule
// before it launches anything, so a refused call writes nothing. A failed rule
// throws InvalidArgument("<function>", "<argument>", "<rule> (got ...)").
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/call_device_scope.hpp"
#include "common/device_info.hpp"
#include "fp4moe/error.hpp"
#include "fp4moe/tensor.hpp"

namespace fp4moe::detail {

/// An argument's name in two pieces ("a" and ".data"), joined only for an
/// error.
struct Field {
  std::string_view owner, member;
};

/// The text of an error's part, made only when a rule fails: a call that
/// passes every rule builds no string (a GEMM call's checks built ~80
/// before, ~1.5 µs of host time; docs/PERF.md stop 70). A part is text
/// (a literal, a string), an integer, nothing (nullptr), a Field, or a
/// callable returning one of these (a rule or value that needs formatting).
template <class T>
std::string error_text(const T& v) {
  if constexpr (std::is_same_v<T, std::nullptr_t>) {
    return {};
  } else if constexpr (std::is_same_v<T, const char*> || std::is_same_v<T, char*>) {
    return v ? std::string(v) : std::string();
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return std::string(std::string_view(v));
  } else if constexpr (std::is_same_v<T, Field>) {
    return std::string(v.owner) + std::string(v.member);
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else {
    static_assert(std::is_invocable_v<const T&>, "an error part is text, an integer, a Field or a callable");
    return error_text(v());
  }
}

class ArgCheck {
 public:
  explicit ArgCheck(const char* function) : function_(function) {}
  ArgCheck(const ArgCheck&) = delete;
  ArgCheck& operator=(const ArgCheck&) = delete;

  /// Fails with `rule` unless `ok`; `got` is appended to the message when
  /// it is not empty. Each part is turned into text only on failure.
  template <class Argument, class Rule, class Got = std::nullptr_t>
  void require(bool ok, const Argument& argument, const Rule& rule, const Got& got = nullptr) const {
    if (!ok) [[unlikely]]
      fail(error_text(argument), error_text(rule), error_text(got));
  }
  [[noreturn]] void fail(const std::string& argument, const std::string& rule, const std::string& got) const {
    throw InvalidArgument(function_, argument, got.empty() ? rule : rule + " (got " + got + ")");
  }
  template <class Argument>
  void not_null(const void* p, const Argument& argument) const {
    require(p != nullptr, argument, "must not be null");
  }
  template <class Argument>
  void aligned(const void* p, std::int64_t bytes, const Argument& argument) const {
    require(reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(bytes) == 0, argument,
            [&] { return "must be " + std::to_string(bytes) + "-byte aligned"; });
  }
  /// The GPU quantizer, dequantizer, amax and layout kernels give each group
  /// its own grid row, of which CUDA allows 65535.
  template <class Argument>
  void gpu_groups(std::int64_t groups, const Argument& argument) const {
    require(groups <= 65535, argument, "must be at most 65535 on the GPU (one grid row per group)", groups);
  }
  template <class Argument>
  void positive(std::int64_t v, const Argument& argument) const {
    require(v > 0, argument, "must be positive", v);
  }
  template <class Argument>
  void non_negative(std::int64_t v, const Argument& argument) const {
    require(v >= 0, argument, "must not be negative", v);
  }
  template <class Argument, class Why>
  void multiple_of(std::int64_t v, std::int64_t m, const Argument& argument, const Why& why) const {
    require(v % m == 0, argument, [&] { return "must be a multiple of " + std::to_string(m) + " (" + error_text(why) + ")"; },
            v);
  }
  template <class Argument, class What>
  void equal(std::int64_t a, std::int64_t b, const Argument& argument, const What& what) const {
    require(a == b, argument, [&] { return "must equal " + error_text(what) + " = " + std::to_string(b); }, a);
  }
  template <class Argument>
  void dtype_in(DType t, std::initializer_list<DType> allowed, const Argument& argument) const {
    for (DType a : allowed)
      if (a == t) return;
    require(false, argument, [&] {
      std::string names;
      for (DType a : allowed) names += (names.empty() ? "" : " or ") + std::string(dtype_name(a));
      return "must be " + names;
    }, dtype_name(t));
  }

  /// A MatrixView whose rows, columns and groups are dense (no gaps).
  void contiguous(const MatrixView& m, std::string_view argument) const {
    require(m.col_stride == 1, Field{argument, ".col_stride"}, "must be 1 (contiguous columns)", m.col_stride);
    require(m.row_stride == 0 || m.row_stride == m.cols, Field{argument, ".row_stride"},
            "must be 0 or cols (contiguous rows)", m.row_stride);
    require(m.group_stride == 0 || m.group_stride == m.rows * m.cols, Field{argument, ".group_stride"},
            "must be 0 or rows*cols (contiguous groups)", m.group_stride);
  }

  /// The library plans, keeps its workspace and launches on the current
  /// device, so the stream must be one of its streams. The entry points run
  /// this rule last, as the one that asks CUDA; the default streams pass
  /// without asking, and so does a capturing stream, whose device CUDA does
  /// not tell while it captures (asking would invalidate the capture).
  void stream_on_current_device(cudaStream_t stream) const {
    if (follows_current_device(stream) || stream_capturing(stream)) return;
    const int have = stream_device(stream), current = current_device();
    require(have == current, "stream",
            [&] { return "must belong to the current device " + std::to_string(current) + " (cudaSetDevice)"; },
            [&] { return "a stream of device " + std::to_string(have); });
  }

  const char* function() const { return function_; }

 private:
  const char* function_;
  CallDeviceScope device_scope_;  ///< the current device asked once for the whole call
};

}  // namespace fp4moe::detail

namespace fp4moe::detail {

/// Whether byte ranges [a, a+na) and [b, b+nb) overlap.
inline bool ranges_overlap(const void* a, std::int64_t na, const void* b, std::int64_t nb) {
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return na > 0 && nb > 0 && pa < pb + static_cast<std::uintptr_t>(nb) &&
         pb < pa + static_cast<std::uintptr_t>(na);
}

inline bool valid_format(Fp4Format f) { return f == Fp4Format::kNVFP4 || f == Fp4Format::kMXFP4; }
inline bool valid_layout(ScaleLayout l) {
  return l == ScaleLayout::kRowMajor || l == ScaleLayout::kTiled128x4;
}

}  // namespace fp4moe::detail
