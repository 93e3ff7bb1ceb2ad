// The per-thread last error of the C interface, and the mapping from C++
// exceptions to status codes.
#include <exception>
#include <new>
#include <string>

#include "capi/capi_guard.hpp"
#include "fp4moe/error.hpp"

namespace fp4moe::capi {
namespace {

thread_local std::string t_message;
thread_local int t_cuda_code = 0;

}  // namespace

void set_last_error(const char* message, int cuda_code) {
  try {
    t_message = message;
  } catch (...) {
    t_message.clear();  // out of memory while copying the message
  }
  t_cuda_code = cuda_code;
}

fp4moe_status status_of_current_exception() noexcept {
  try {
    throw;
  } catch (const InvalidArgument& e) {
    set_last_error(e.what(), 0);
    return FP4MOE_ERROR_INVALID_ARGUMENT;
  } catch (const CudaError& e) {
    set_last_error(e.what(), e.code());
    return FP4MOE_ERROR_CUDA;
  } catch (const Error& e) {
    set_last_error(e.what(), 0);
    return FP4MOE_ERROR_LIBRARY;
  } catch (const std::bad_alloc& e) {
    set_last_error(e.what(), 0);
    return FP4MOE_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(e.what(), 0);
    return FP4MOE_ERROR_INTERNAL;
  } catch (...) {
    set_last_error("unknown exception", 0);
    return FP4MOE_ERROR_INTERNAL;
  }
}

}  // namespace fp4moe::capi

extern "C" {

const char* fp4moe_last_error(void) { return fp4moe::capi::t_message.c_str(); }

int32_t fp4moe_last_cuda_error(void) { return fp4moe::capi::t_cuda_code; }

}  // extern "C"
