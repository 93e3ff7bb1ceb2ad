// Compiled GEMM kernels: NVFP4, masked layout.
#include "kernels/sm90/gemm_launch.cuh"
#include "kernels/sm90/instances/gemm_configs.hpp"

namespace fp4moe::kernels {

#define FP4MOE_ENTRY(FMT, LAYOUT, SWAP, BN, BK, STAGES, CTAS) \
  entry<GemmConfig<FMT, Layout::LAYOUT, SWAP, BN, BK, STAGES, CTAS>>(),

std::vector<KernelEntry> entries_nvfp4_masked() {
  return {FP4MOE_GEMM_TACTICS(FP4MOE_ENTRY, true, kMasked)};
}

}  // namespace fp4moe::kernels
