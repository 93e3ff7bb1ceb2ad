// FP4MOE_HD marks a function that compiles for the host and, under nvcc, for the
// device too. The codecs and layout formulas use it so that the CPU and GPU run
// literally the same arithmetic.
#pragma once

#if defined(__CUDACC__)
#define FP4MOE_HD __host__ __device__ __forceinline__
#else
#define FP4MOE_HD inline
#endif
