// Version and ABI queries of the C interface.
#include "fp4moe/fp4moe_c.h"
#include "fp4moe/gemm.hpp"

#ifndef FP4MOE_VERSION_STRING
#error "FP4MOE_VERSION_STRING is set by the build (the project version)"
#endif

extern "C" {

int32_t fp4moe_abi_version(void) { return FP4MOE_C_ABI_VERSION; }

const char* fp4moe_version(void) { return FP4MOE_VERSION_STRING; }

int32_t fp4moe_contiguous_alignment(void) { return fp4moe::kContiguousAlignment; }

}  // extern "C"
