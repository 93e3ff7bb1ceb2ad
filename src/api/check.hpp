// Argument checking for the public entry points.
//
// Each entry point builds an ArgCheck with its own name and runs every rule
// before it launches anything, so a refused call writes nothing. A failed rule
// throws InvalidArgument("<function>", "<argument>", "<rule> (got ...)").
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "common/device_info.hpp"
#include "fp4moe/error.hpp"
#include "fp4moe/tensor.hpp"

namespace fp4moe::detail {

class ArgCheck {
 public:
  explicit ArgCheck(const char* function) : function_(function) {}

  /// Fails with `rule` unless `ok`; `got` is appended to the message when set.
  void require(bool ok, const std::string& argument, const std::string& rule,
               const std::string& got = {}) const {
    if (!ok) throw InvalidArgument(function_, argument, got.empty() ? rule : rule + " (got " + got + ")");
  }
  void not_null(const void* p, const std::string& argument) const {
    require(p != nullptr, argument, "must not be null");
  }
  void aligned(const void* p, std::int64_t bytes, const std::string& argument) const {
    require(reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(bytes) == 0, argument,
            "must be " + std::to_string(bytes) + "-byte aligned");
  }
  /// The GPU quantizer, dequantizer, amax and layout kernels give each group
  /// its own grid row, of which CUDA allows 65535.
  void gpu_groups(std::int64_t groups, const std::string& argument) const {
    require(groups <= 65535, argument, "must be at most 65535 on the GPU (one grid row per group)",
            std::to_string(groups));
  }
  void positive(std::int64_t v, const std::string& argument) const {
    require(v > 0, argument, "must be positive", std::to_string(v));
  }
  void non_negative(std::int64_t v, const std::string& argument) const {
    require(v >= 0, argument, "must not be negative", std::to_string(v));
  }
  void multiple_of(std::int64_t v, std::int64_t m, const std::string& argument,
                   const std::string& why) const {
    require(v % m == 0, argument, "must be a multiple of " + std::to_string(m) + " (" + why + ")",
            std::to_string(v));
  }
  void equal(std::int64_t a, std::int64_t b, const std::string& argument,
             const std::string& what) const {
    require(a == b, argument, "must equal " + what + " = " + std::to_string(b), std::to_string(a));
  }
  void dtype_in(DType t, std::initializer_list<DType> allowed, const std::string& argument) const {
    std::string names;
    for (DType a : allowed) {
      if (a == t) return;
      names += (names.empty() ? "" : " or ") + std::string(dtype_name(a));
    }
    require(false, argument, "must be " + names, dtype_name(t));
  }

  /// A MatrixView whose rows, columns and groups are dense (no gaps).
  void contiguous(const MatrixView& m, const std::string& argument) const {
    require(m.col_stride == 1, argument + ".col_stride", "must be 1 (contiguous columns)",
            std::to_string(m.col_stride));
    require(m.row_stride == 0 || m.row_stride == m.cols, argument + ".row_stride",
            "must be 0 or cols (contiguous rows)", std::to_string(m.row_stride));
    require(m.group_stride == 0 || m.group_stride == m.rows * m.cols, argument + ".group_stride",
            "must be 0 or rows*cols (contiguous groups)", std::to_string(m.group_stride));
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
            "must belong to the current device " + std::to_string(current) + " (cudaSetDevice)",
            "a stream of device " + std::to_string(have));
  }

  const char* function() const { return function_; }

 private:
  const char* function_;
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
