// wgmma rate probe (not a product tool): how many cycles of an SM's tensor
// cores one wgmma takes at the few-token widths the gather tiles use
// (docs/PERF.md stop 64). The gather tile's pass is 16 m64nNk16 BF16
// wgmmas with A from registers (64 weight rows x 256 K) and N = 8 or 16
// tokens; if a narrow wgmma costs the tensor cores far more than its
// N-proportional share, the pass count, not the bytes, sets moe-fc2's time.
//
// Each of W warpgroups of one CTA an SM runs passes of 16 wgmmas into one
// accumulator set (commit, wait 0), or, with two sets, alternates them and
// waits for all but the last pass (wait 1), so consecutive passes overlap.
// A's registers and B's tile hold random finite values (never zeros).
// Every wgmma accumulates (a pass that started from zero would leave the
// previous pass's wgmmas dead, and ptxas turns dead wgmmas into no-ops).
// Printed: cycles a wgmma for the SM (the warpgroups' mean loop time over
// the SM's wgmmas) and the TFLOP/s of the launch (events).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/ptx/wgmma.cuh"

namespace {

using namespace fp4moe;
constexpr int kPerPass = 16;
constexpr int kSmemBytes = 160 * 1024;  // one CTA an SM
constexpr int kOffB = 32 * 1024;        // A (SS) at 0, B at 32 KB: 256 rows x 128 B

template <class T, int N, bool kRS, int kSets>
__global__ void __launch_bounds__(512, 1) rate(int passes, unsigned long long* cycles) {
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  const std::uint32_t base = ptx::smem_addr(smem);
  // Random signs and magnitudes of one order (BF16 +-[1, 2), E4M3
  // +-[0.5, 1)): never zero, and the accumulators never overflow.
  auto word = [](std::uint32_t r) {
    return std::is_same_v<T, ptx::E4M3> ? (r & 0x870f870fu) | 0x30303030u : (r & 0x807f807fu) | 0x3f803f80u;
  };
  for (int i = threadIdx.x; i < (kOffB + 256 * 128) / 4; i += blockDim.x)
    reinterpret_cast<std::uint32_t*>(smem)[i] = word(0x9e3779b9u * (i + 1));
  __syncthreads();
  const int wg = threadIdx.x / 128;
  std::uint32_t a[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) a[r] = word(0x85ebca6bu * (threadIdx.x * 4 + r + 1));
  float d[kSets][N / 2];
#pragma unroll
  for (int s = 0; s < kSets; ++s)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) d[s][i] = 0.0f;
  const std::uint32_t a_lo = ptx::smem_desc_k_major_sw128_lo(base + (wg % 4) * 8192);
  const std::uint32_t b_lo = ptx::smem_desc_k_major_sw128_lo(base + kOffB);
  __syncwarp();
  const unsigned long long start = clock64();
  for (int p = 0; p < passes; p += kSets) {
#pragma unroll
    for (int s = 0; s < kSets; ++s) {
      ptx::wgmma_fence();
#pragma unroll
      for (int j = 0; j < kPerPass; ++j) {
        // k steps of 32 bytes along the 128-byte rows, as the tiles step them.
        const std::uint64_t desc_b = ptx::smem_desc_sw128_from_lo(b_lo + 2 * (j % 4));
        if constexpr (kRS) {
          ptx::WgmmaRS<T, N>::mma(d[s], a, desc_b, true);
        } else {
          ptx::WgmmaSS<T, N>::mma(d[s], ptx::smem_desc_sw128_from_lo(a_lo + 2 * (j % 4)), desc_b, true);
        }
      }
      ptx::wgmma_commit();
      if constexpr (kSets == 2) {
        ptx::wgmma_wait<1>();
      } else {
        ptx::wgmma_wait<0>();
      }
    }
  }
  ptx::wgmma_wait<0>();
  const unsigned long long end = clock64();
  float sum = 0.0f;
#pragma unroll
  for (int s = 0; s < kSets; ++s)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) sum += d[s][i];
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * 4 + wg] = end - start + (sum == 12345.0f ? 1 : 0);
}

template <class T, int N, bool kRS, int kSets>
void run(const char* type, int sms, int warpgroups, unsigned long long* d_cycles) {
  auto kernel = rate<T, N, kRS, kSets>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  const int passes = 2000;
  kernel<<<sms, 128 * warpgroups, kSmemBytes>>>(passes / 10, d_cycles);  // warm-up
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  float best_ms = 1e30f;
  double best_cycles = 0;
  for (int rep = 0; rep < 3; ++rep) {
    cudaEventRecord(e0);
    kernel<<<sms, 128 * warpgroups, kSmemBytes>>>(passes, d_cycles);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    unsigned long long h[4 * 1024];
    cudaMemcpy(h, d_cycles, sizeof(unsigned long long) * 4 * sms, cudaMemcpyDeviceToHost);
    double mean = 0;
    for (int b = 0; b < sms; ++b)
      for (int w = 0; w < warpgroups; ++w) mean += double(h[b * 4 + w]);
    mean /= double(sms) * warpgroups;
    if (ms < best_ms) {
      best_ms = ms;
      best_cycles = mean / (double(passes) * kPerPass * warpgroups);
    }
  }
  const double kk = std::is_same_v<T, ptx::E4M3> ? 32 : 16;
  const double flops = 2.0 * 64 * N * kk * kPerPass * double(passes) * warpgroups * sms;
  std::printf("%-5s %s N=%3d warpgroups=%d sets=%d  %7.2f cycles/wgmma/SM  %7.1f TFLOP/s\n", type, kRS ? "RS" : "SS", N,
              warpgroups, kSets, best_cycles, flops / (best_ms * 1e-3) / 1e12);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

template <class T, bool kRS, int kSets>
void widths(const char* type, int sms, unsigned long long* d_cycles) {
  for (int w : {1, 2, 4}) {
    run<T, 8, kRS, kSets>(type, sms, w, d_cycles);
    run<T, 16, kRS, kSets>(type, sms, w, d_cycles);
    run<T, 32, kRS, kSets>(type, sms, w, d_cycles);
    run<T, 64, kRS, kSets>(type, sms, w, d_cycles);
    if constexpr (kSets == 1) run<T, 128, kRS, kSets>(type, sms, w, d_cycles);  // (256 needs more than 128 registers)
  }
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* d_cycles = nullptr;
  cudaMalloc(&d_cycles, sizeof(unsigned long long) * 4 * sms);
  widths<ptx::BF16, true, 1>("bf16", sms, d_cycles);
  widths<ptx::BF16, true, 2>("bf16", sms, d_cycles);
  widths<ptx::BF16, false, 1>("bf16", sms, d_cycles);
  widths<ptx::E4M3, true, 1>("e4m3", sms, d_cycles);
  widths<ptx::E4M3, true, 2>("e4m3", sms, d_cycles);
  const cudaError_t err = cudaDeviceSynchronize();
  std::printf("%s\n", cudaGetErrorString(err));
  cudaFree(d_cycles);
  return err == cudaSuccess ? 0 : 1;
}
