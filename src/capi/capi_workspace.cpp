// C entry points of include/fp4moe/workspace.hpp: the library's per-stream
// buffers, measured and released.
#include <cstdint>

#include "api/check.hpp"
#include "capi/capi_guard.hpp"
#include "fp4moe/workspace.hpp"

using fp4moe::capi::guarded;
using fp4moe::detail::ArgCheck;

extern "C" {

fp4moe_status fp4moe_workspace_bytes(void* stream, uint64_t* bytes) {
  return guarded([&] {
    const ArgCheck c("workspace_bytes");
    c.not_null(bytes, "bytes");
    *bytes = fp4moe::workspace_bytes(static_cast<cudaStream_t>(stream));
  });
}

fp4moe_status fp4moe_release_workspace(void* stream, uint64_t* freed_bytes) {
  return guarded([&] {
    const std::size_t freed = fp4moe::release_workspace(static_cast<cudaStream_t>(stream));
    if (freed_bytes) *freed_bytes = freed;
  });
}

}  // extern "C"
