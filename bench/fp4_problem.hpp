// Device operands of one FP4 GEMM benchmark problem, filled with random data
// (every E2M1 code; block scales over a moderate range; unit global scales,
// except FC1's tokens: kGates).
//
// MXFP4 block scales depend on what the operand is (ScaleData): tokens take
// codes 120..130 (2^-7..2^3: activations, outliers included), weights
// 118..128 (2^-9..2^1). An OCP MX quantizer gives a block of amax below 16
// a code of at most 128, and weights lie far below that; the swap-AB
// kernels convert such weights with one multiply a pair (fp4_dequant.cuh).
// `--wide-weight-scales` gives weights the tokens' range (every row measured
// before 2026-11-25 used it for both operands). NVFP4: E4M3 0.5..4 for both.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "fp4moe/tensor.hpp"

namespace fp4moe::bench {

/// The block-scale range of an operand's random data (see above). kGates:
/// FC1's tokens, scaled so that against kWeights-style weights over K = 7168
/// a gate (and an up value) has a spread of a few units (NVFP4: global
/// scale 2^-9, ~6; MXFP4: block scales 2^-8..2^-4, ~9; estimated from the
/// codes' and scales' mean squares, not measured), where silu is a curve; with kTokens a
/// gate is in the hundreds, silu is the identity or 0, and ~half of the
/// epilogue's divisions take CUDA's slow path (an infinite or zero operand:
/// docs/PERF.md stop 71).
enum class ScaleData { kTokens, kWeights, kGates };

/// The data choices of a benchmark run (printed in its header and JSON).
struct DataOptions {
  bool wide_weight_scales = false;  ///< MXFP4 weights with the tokens' scale range
  /// The MoE suites' expert width W (seed-fc2, moe-fc2: E = 256 experts, K =
  /// 256·W); 256 is the seed workload, e.g. 2048 is DeepSeek-V3's.
  std::int64_t moe_width = 256;
  ScaleData weights() const { return wide_weight_scales ? ScaleData::kTokens : ScaleData::kWeights; }
};

class DeviceFp4Tensor {
 public:
  DeviceFp4Tensor(Fp4Format f, std::int64_t rows, std::int64_t cols, std::int64_t groups, std::uint64_t seed,
                  ScaleData data, cudaStream_t s);
  ~DeviceFp4Tensor();
  DeviceFp4Tensor(const DeviceFp4Tensor&) = delete;
  DeviceFp4Tensor& operator=(const DeviceFp4Tensor&) = delete;
  const Fp4Tensor& tensor() const { return t_; }
  /// Bytes of data and scales: what a GEMM must read.
  double bytes() const { return double(t_.data_bytes() + t_.scale_bytes_total()); }

 private:
  Fp4Tensor t_;
};

/// A device buffer freed on destruction.
struct DeviceAlloc {
  void* p = nullptr;
  explicit DeviceAlloc(std::size_t bytes);
  ~DeviceAlloc();
  DeviceAlloc(const DeviceAlloc&) = delete;
  DeviceAlloc& operator=(const DeviceAlloc&) = delete;
};

}  // namespace fp4moe::bench
