// Compiled GEMM kernels: MXFP4, contiguous layout.
#include "kernels/sm90/gemm_launch.cuh"
#include "kernels/sm90/instances/gemm_configs.hpp"

FP4MOE_GEMM_INSTANCES_PLUS(entries_mxfp4_contiguous, false, kContiguous,
                           FP4MOE_GEMM_FP8_TACTICS(FP4MOE_GEMM_FP8_ENTRY, false, kContiguous)
                               FP4MOE_GEMM_CLUSTER_TACTICS(FP4MOE_GEMM_CLUSTER_ENTRY, false, kContiguous)
                               FP4MOE_GEMM_DP4A_TACTICS(FP4MOE_GEMM_ENTRY, false, kContiguous))
