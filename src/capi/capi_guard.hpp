// How every C entry point runs its C++ body: exceptions become status codes
// and the exception's message becomes this thread's last error, verbatim.
#pragma once

#include <string>

#include "fp4moe/fp4moe_c.h"

namespace fp4moe::capi {

/// Records a failure for fp4moe_last_error() / fp4moe_last_cuda_error().
void set_last_error(const char* message, int cuda_code);

/// Runs `body`; returns FP4MOE_OK, or the status of the exception it threw
/// (InvalidArgument, CudaError, other fp4moe::Error, std::bad_alloc,
/// anything else) with its message recorded. No exception leaves a C entry
/// point.
template <class Body>
fp4moe_status guarded(Body&& body) noexcept;

fp4moe_status status_of_current_exception() noexcept;

template <class Body>
fp4moe_status guarded(Body&& body) noexcept {
  try {
    body();
    return FP4MOE_OK;
  } catch (...) {
    return status_of_current_exception();
  }
}

}  // namespace fp4moe::capi
