// One problem to time: device operands for a TuneShape at its token count
// (random BF16 quantised by the library's own GPU quantizer: fresh data, never
// zeros), its output and auxiliary arrays, and a call of the operation with
// any GemmOptions. The tuner and the sweep benchmark both time these.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "fp4moe/gemm.hpp"
#include "fp4moe/tuning.hpp"

namespace fp4moe::tuning {

/// Device memory freed on destruction.
class DeviceBytes {
 public:
  DeviceBytes() = default;
  explicit DeviceBytes(std::size_t bytes);
  ~DeviceBytes();
  DeviceBytes(DeviceBytes&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  DeviceBytes& operator=(DeviceBytes&& o) noexcept;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

class TuningProblem {
 public:
  /// `shape` must have passed the tuner's argument rules; its m is the token
  /// count the problem is built for (the tuner passes the bucket). The
  /// operands are ready when this returns (it synchronises `stream`).
  TuningProblem(const TuneShape& shape, std::uint64_t seed, cudaStream_t stream);

  /// Runs the operation once on `stream` (throws what the entry point throws).
  void run(const GemmOptions& options, cudaStream_t stream) const;

  const TuneShape& shape() const { return shape_; }
  /// The output the operation writes (FC1 with NVFP4 output: its packed
  /// data), and its size: for comparing runs.
  const void* output() const { return shape_.out == GemmOutput::kNVFP4 ? fp4_out_.t.data : d_view_.data; }
  std::size_t output_bytes() const;

 private:
  struct Operand {
    DeviceBytes data, scales, global;
    Fp4Tensor t;
  };
  Operand make_operand(std::int64_t rows, std::int64_t cols, std::int64_t groups, std::uint64_t seed, cudaStream_t s);

  TuneShape shape_;
  Operand a_, b_;
  DeviceBytes d_, aux_, encode_;
  Operand fp4_out_;  ///< FC1 with NVFP4 output
  MatrixView d_view_, alpha_view_;
};

/// The rows of a contiguous problem with `rows` rows and `groups` experts,
/// as m_indices: 128-row segments (the last one may be short) handed out to
/// the experts in order, segment s to expert s·groups/segments, so rows / groups
/// is the token count the entry point sees and no expert's rows straddle a
/// segment it does not own. Host only (tested on the CPU).
std::vector<std::int32_t> contiguous_indices(std::int64_t rows, std::int64_t groups);

/// alpha [m, experts], row-major: every token uses every expert (top_k = 0)
/// or top_k distinct random experts; weights in [0.05, 1).
std::vector<float> routing_alpha(std::int64_t m, std::int64_t experts, int top_k, std::uint64_t seed);

}  // namespace fp4moe::tuning
