// Compiled GEMM kernels: MXFP4, dense layout.
#include "kernels/sm90/gemm_launch.cuh"
#include "kernels/sm90/instances/gemm_configs.hpp"

namespace fp4moe::kernels {

#define FP4MOE_ENTRY(FMT, LAYOUT, SWAP, BN, BK, STAGES, CTAS) \
  entry<GemmConfig<FMT, Layout::LAYOUT, SWAP, BN, BK, STAGES, CTAS>>(),

std::vector<KernelEntry> entries_mxfp4_dense() {
  return {FP4MOE_GEMM_TACTICS(FP4MOE_ENTRY, false, kDense)};
}

}  // namespace fp4moe::kernels
