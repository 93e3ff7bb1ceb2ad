// Compiled GEMM kernels: MXFP4, MoE-dense layout (moe_dense_fc2), both routes.
#include "kernels/sm90/gemm_launch.cuh"
#include "kernels/sm90/instances/gemm_configs.hpp"

FP4MOE_GEMM_INSTANCES_WITH(FP4MOE_MOE_DENSE_TACTICS, entries_mxfp4_moe_dense, false, kMoeDense,
                           FP4MOE_GEMM_FP8_TACTICS(FP4MOE_GEMM_FP8_ENTRY, false, kMoeDense))
