// Element types, FP4 formats and scale layouts: the vocabulary of the API.
#pragma once

#include <cstdint>

namespace fp4moe {

/// Element types a tensor view can hold.
enum class DType : std::uint8_t {
  kE2M1x2,  ///< two packed E2M1 values per byte (element 2i in the low nibble)
  kE4M3,    ///< OCP FP8 E4M3 (no infinities, 0x7F is NaN): NVFP4 block scales
  kUE8M0,   ///< unsigned power-of-two scale 2^(e-127), 0xFF is NaN: MXFP4 block scales
  kBF16,
  kFP32,
  kI32,
};

/// Bytes per element, for the byte-addressed types (E2M1x2 counts one byte per
/// pair of values).
constexpr std::int64_t dtype_size(DType t) {
  switch (t) {
    case DType::kE2M1x2:
    case DType::kE4M3:
    case DType::kUE8M0: return 1;
    case DType::kBF16: return 2;
    case DType::kFP32:
    case DType::kI32: return 4;
  }
  return 0;
}

constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::kE2M1x2: return "e2m1x2";
    case DType::kE4M3: return "e4m3";
    case DType::kUE8M0: return "ue8m0";
    case DType::kBF16: return "bf16";
    case DType::kFP32: return "fp32";
    case DType::kI32: return "i32";
  }
  return "?";
}

/// The two block-scaled FP4 formats (DESIGN.md §2).
enum class Fp4Format : std::uint8_t {
  kNVFP4,  ///< 16-element blocks, E4M3 block scale, FP32 global decode scale
  kMXFP4,  ///< 32-element blocks, UE8M0 block scale, no global scale
};

constexpr int block_size(Fp4Format f) { return f == Fp4Format::kNVFP4 ? 16 : 32; }
constexpr DType scale_dtype(Fp4Format f) {
  return f == Fp4Format::kNVFP4 ? DType::kE4M3 : DType::kUE8M0;
}
constexpr const char* format_name(Fp4Format f) {
  return f == Fp4Format::kNVFP4 ? "nvfp4" : "mxfp4";
}

/// How the block scales of an FP4 matrix are laid out in memory.
enum class ScaleLayout : std::uint8_t {
  /// [rows, K/block], row-major, no padding. The canonical layout.
  kRowMajor,
  /// The 128x4 tiled layout of cuBLASLt / TensorRT-LLM / CUTLASS / FlashInfer:
  /// rows padded to 128 and scale columns to 4; see scale_layout.hpp.
  kTiled128x4,
};

constexpr const char* scale_layout_name(ScaleLayout l) {
  return l == ScaleLayout::kRowMajor ? "row-major" : "tiled-128x4";
}

}  // namespace fp4moe
