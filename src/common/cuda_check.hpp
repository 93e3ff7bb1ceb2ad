// Turning CUDA runtime failures into fp4moe::CudaError.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "fp4moe/error.hpp"

namespace fp4moe::detail {

inline void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) {
    // Reset the runtime's last-error slot: a non-sticky failure reported
    // here as an exception (an allocation that did not fit) is not reported
    // a second time by the caller's next cudaGetLastError.
    (void)cudaGetLastError();
    throw CudaError(std::string(what) + " failed: " + cudaGetErrorName(e) + " (" +
                        cudaGetErrorString(e) + ") at " + file + ":" + std::to_string(line),
                    static_cast<int>(e));
  }
}

}  // namespace fp4moe::detail

#define FP4MOE_CUDA_CHECK(expr) ::fp4moe::detail::cuda_check((expr), #expr, __FILE__, __LINE__)
// (Kernels launch through common/launch_kernel.cuh, which checks the
// launch's own result.)
