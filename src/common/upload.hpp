// Host-to-device copies that are complete, for work on any stream.
//
// cudaMemcpy from pageable host memory may return before the data reaches
// the device, and it runs on the legacy default stream, which a stream made
// with cudaStreamNonBlocking (the benchmark's, the tuner's) does not wait
// for: a kernel there can read the destination's old bytes. (Measured: the
// tuner's contiguous problems read stale m_indices, a wrong expert index
// and an illegal address; FC2 read an alpha of zeros.) So copy on the stream
// that uses the data and wait for it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "common/cuda_check.hpp"

namespace fp4moe::detail {

/// Copies `bytes` from host `src` to device `dst` on `stream` and waits for
/// the copy, so `src` may be freed and any later work on `stream` sees it.
inline void upload(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  FP4MOE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace fp4moe::detail
