// Compiled GEMM kernels: NVFP4, masked layout.
#include "kernels/sm90/gemm_launch.cuh"
#include "kernels/sm90/instances/gemm_configs.hpp"

FP4MOE_GEMM_INSTANCES_PLUS(entries_nvfp4_masked, true, kMasked, FP4MOE_GEMM_DP4A_TACTICS(FP4MOE_GEMM_ENTRY, true, kMasked))
