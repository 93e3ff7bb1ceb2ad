// Compiled GEMM kernels: MXFP4, MoE FC1 SwiGLU layout (moe_dense_fc1_swiglu).
#include "kernels/sm90/gemm_launch.cuh"
#include "kernels/sm90/instances/gemm_configs.hpp"

FP4MOE_GEMM_INSTANCES_OF(FP4MOE_MOE_FC1_TACTICS, entries_mxfp4_moe_fc1, false, kMoeFc1)
