// The cuBLASLt peers every GEMM row is compared against: D[M, N] (row-major,
// BF16) = A[M, K] · B[N, K]ᵀ with BF16 or FP8 (E4M3) operands, both K-major,
// the same output dtype as the library's rows.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace fp4moe::bench {

enum class PeerType { kBF16, kFP8 };

class CublasLtGemm {
 public:
  /// Owns its operands (random data), output and workspace. Picks the fastest
  /// of cuBLASLt's top heuristic candidates for this shape on `stream`.
  /// batch > 1: that many independent GEMMs of the shape (strided batch), the
  /// peer of the grouped layouts.
  CublasLtGemm(PeerType type, std::int64_t m, std::int64_t n, std::int64_t k, cudaStream_t stream, std::int64_t batch = 1);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  void run(cudaStream_t stream) const;
  /// Operand bytes read plus output bytes written, each once.
  double min_bytes() const;
  double flops() const { return 2.0 * double(batch_) * double(m_) * double(n_) * double(k_); }
  const std::string& algo() const { return algo_; }

 private:
  PeerType type_;
  std::int64_t m_, n_, k_, batch_;
  void *a_ = nullptr, *b_ = nullptr, *d_ = nullptr, *ws_ = nullptr;
  std::size_t ws_bytes_ = std::size_t(64) << 20;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, ld_ = nullptr;
  cublasLtMatmulAlgo_t algo_struct_{};
  std::string algo_;
};

}  // namespace fp4moe::bench
