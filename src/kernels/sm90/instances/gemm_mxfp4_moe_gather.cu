// Compiled GEMM kernels: MXFP4, MoE gather layout (moe_dense_fc2 with gathered tokens).
#include "kernels/sm90/gemm_launch.cuh"
#include "kernels/sm90/instances/gemm_configs.hpp"

FP4MOE_GEMM_INSTANCES_OF(FP4MOE_MOE_GATHER_TACTICS, entries_mxfp4_moe_gather, false, kMoeGather)
