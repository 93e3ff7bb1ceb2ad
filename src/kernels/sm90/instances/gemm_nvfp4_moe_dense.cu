// Compiled GEMM kernels: NVFP4, MoE-dense layout (moe_dense_fc2).
#include "kernels/sm90/gemm_launch.cuh"
#include "kernels/sm90/instances/gemm_configs.hpp"

FP4MOE_GEMM_INSTANCES_OF(FP4MOE_MOE_DENSE_TACTICS, entries_nvfp4_moe_dense, true, kMoeDense)
