// Compiled GEMM kernels: MXFP4, masked layout.
#include "kernels/sm90/gemm_launch.cuh"
#include "kernels/sm90/instances/gemm_configs.hpp"

FP4MOE_MXFP4_GEMM_INSTANCES(entries_mxfp4_masked, kMasked)
