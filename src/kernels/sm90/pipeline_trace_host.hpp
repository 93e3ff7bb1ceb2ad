// Host side of pipeline_trace.cuh (only with FP4MOE_PIPELINE_TRACE): with
// FP4MOE_TRACE_FILE set, launch number FP4MOE_TRACE_LAUNCH (default 5,
// counted over the traced kernels of the process) gets a zeroed buffer, and
// after it the buffer is written to the file (a 16-byte header: "FP4TRACE",
// CTAs, actors and capacity as uint16/uint16/uint32; then the events).
#pragma once

#ifdef FP4MOE_PIPELINE_TRACE
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/cuda_check.hpp"
#include "kernels/sm90/pipeline_trace.cuh"

namespace fp4moe::kernels {

/// The buffer for this launch, or null when it is not the traced one. The
/// buffer is allocated and zeroed at the process's first traced kernel, not
/// just before the chosen launch: a memset of ~86 MB right before the launch
/// (after the benchmark's L2 eviction) left L2 full of dirty lines, whose
/// write-back then competed with the kernel's first loads (docs/PERF.md
/// stop 42). Untraced launches never write it, so it is still zero.
inline std::uint64_t* trace_buffer_for_launch() {
  static int launches = 0;
  static std::uint64_t* buf = nullptr;
  if (std::getenv("FP4MOE_TRACE_FILE") == nullptr) return nullptr;
  if (buf == nullptr) {
    void* b = nullptr;
    FP4MOE_CUDA_CHECK(cudaMalloc(&b, kTraceWords * sizeof(std::uint64_t)));
    FP4MOE_CUDA_CHECK(cudaMemset(b, 0, kTraceWords * sizeof(std::uint64_t)));
    FP4MOE_CUDA_CHECK(cudaDeviceSynchronize());
    buf = static_cast<std::uint64_t*>(b);
  }
  const char* which = std::getenv("FP4MOE_TRACE_LAUNCH");
  if (launches++ != (which ? std::atoi(which) : 5)) return nullptr;
  return buf;
}

/// After the traced launch: waits for it and writes the file (the buffer is kept: one traced launch a process).
inline void trace_write(std::uint64_t* buf, bool gather, int bn, int bk, int stages, int ctas_per_sm) {
  if (buf == nullptr) return;
  FP4MOE_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint64_t> host(kTraceWords);
  FP4MOE_CUDA_CHECK(cudaMemcpy(host.data(), buf, kTraceWords * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  std::FILE* f = std::fopen(std::getenv("FP4MOE_TRACE_FILE"), "wb");
  if (f == nullptr) return;
  const std::uint16_t ctas = kTraceCtas, actors = kTraceActors;
  const std::uint32_t cap = kTraceCap;
  std::fwrite("FP4TRACE", 1, 8, f);
  std::fwrite(&ctas, 2, 1, f);
  std::fwrite(&actors, 2, 1, f);
  std::fwrite(&cap, 4, 1, f);
  std::fwrite(host.data(), sizeof(std::uint64_t), host.size(), f);
  std::fclose(f);
  std::fprintf(stderr, "fp4moe: pipeline trace of %s bn%d bk%d st%d (%d CTAs an SM) written to %s\n",
               gather ? "gather" : "a register tile", bn, bk, stages, ctas_per_sm, std::getenv("FP4MOE_TRACE_FILE"));
}

}  // namespace fp4moe::kernels
#endif
