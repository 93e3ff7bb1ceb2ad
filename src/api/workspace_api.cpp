// fp4moe/workspace.hpp: the per-stream buffers of common/split_k_workspace.
#include "fp4moe/workspace.hpp"

#include "common/split_k_workspace.hpp"

namespace fp4moe {

std::size_t workspace_bytes(cudaStream_t stream) { return detail::workspace_bytes(stream); }

std::size_t release_workspace(cudaStream_t stream) { return detail::release_workspace(stream); }

}  // namespace fp4moe
