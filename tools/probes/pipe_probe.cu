// Issue-rate probe (not a product tool): warp instructions per cycle per SM
// of the conversions the FP4 -> 16-bit dequantisation could use (and of
// dp4a, which builds a table address from one byte: stop 51), alone and
// interleaved with the integer ALU's LOP3, to tell which pipe each runs on
// and how fast. Each thread runs kChains independent dependency chains so
// latency does not bound the rate; cycles from clock64 on each block's
// thread 0 (every warp of the block runs alongside it).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr int kChains = 8;
constexpr int kIters = 4096;
constexpr int kThreads = 1024;

enum class Op { kLop3, kF2fpE4m3, kHmul2, kImad, kF2fpPlusLop3, kHmul2PlusLop3, kPrmt, kF2fpPlusHmul2, kImadHi, kImadHiPlusLop3, kFunnel, kDp4a, kDp4aPlusLop3, kDp4aPlusImad };

template <Op kOp>
__device__ __forceinline__ void step(std::uint32_t (&x)[kChains], std::uint32_t (&y)[kChains]) {
#pragma unroll
  for (int c = 0; c < kChains; ++c) {
    if constexpr (kOp == Op::kLop3 || kOp == Op::kF2fpPlusLop3 || kOp == Op::kHmul2PlusLop3 || kOp == Op::kDp4aPlusLop3) {
      asm volatile("lop3.b32 %0, %0, %1, 0x0f0f0f0f, 0x6a;" : "+r"(y[c]) : "r"(x[c]));
    }
    if constexpr (kOp == Op::kF2fpE4m3 || kOp == Op::kF2fpPlusLop3 || kOp == Op::kF2fpPlusHmul2) {
      asm volatile("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %0;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n}" : "+r"(x[c]));
    }
    if constexpr (kOp == Op::kHmul2 || kOp == Op::kHmul2PlusLop3 || kOp == Op::kF2fpPlusHmul2) {
      std::uint32_t& r = kOp == Op::kF2fpPlusHmul2 ? y[c] : x[c];
      asm volatile("mul.rn.bf16x2 %0, %0, %1;" : "+r"(r) : "r"(0x3f813f81u));
    }
    if constexpr (kOp == Op::kDp4a || kOp == Op::kDp4aPlusLop3 || kOp == Op::kDp4aPlusImad) {
      asm volatile("dp4a.u32.u32 %0, %1, 0x8000, %0;" : "+r"(x[c]) : "r"(y[c]));
    }
    if constexpr (kOp == Op::kDp4aPlusImad) {
      asm volatile("mad.lo.u32 %0, %0, 4160, %1;" : "+r"(y[c]) : "r"(c));
    }
    if constexpr (kOp == Op::kImad) {
      asm volatile("mad.lo.u32 %0, %0, 4160, %1;" : "+r"(x[c]) : "r"(y[c]));
    }
    if constexpr (kOp == Op::kImadHi || kOp == Op::kImadHiPlusLop3) {
      asm volatile("mul.hi.u32 %0, %0, %1;" : "+r"(x[c]) : "r"(y[c]));
    }
    if constexpr (kOp == Op::kImadHiPlusLop3) {
      asm volatile("lop3.b32 %0, %0, %1, 0x0f0f0f0f, 0x6a;" : "+r"(y[c]) : "r"(c));
    }
    if constexpr (kOp == Op::kFunnel) {
      asm volatile("shf.l.wrap.b32 %0, %0, %0, 22;" : "+r"(x[c]));
    }
    if constexpr (kOp == Op::kPrmt) {
      asm volatile("prmt.b32 %0, %0, %1, 0x5140;" : "+r"(x[c]) : "r"(y[c]));
    }
  }
}

template <Op kOp>
__global__ void __launch_bounds__(kThreads) probe(std::uint32_t* sink, long long* cycles) {
  std::uint32_t x[kChains], y[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) {
    x[c] = threadIdx.x * 2654435761u + c;
    y[c] = threadIdx.x ^ (c * 40503u);
  }
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < kIters; ++i) step<kOp>(x, y);
  __syncthreads();
  const long long t1 = clock64();
  std::uint32_t acc = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) acc ^= x[c] ^ y[c];
  if (acc == 0x12345678u) sink[threadIdx.x] = acc;  // keeps the chains live
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <Op kOp>
void run(const char* name, int insts_per_step, int sms) {
  std::uint32_t* sink = nullptr;
  long long* cycles = nullptr;
  cudaMalloc(&sink, kThreads * 4);
  cudaMalloc(&cycles, sms * sizeof(long long));
  probe<kOp><<<sms, kThreads>>>(sink, cycles);  // warm-up
  probe<kOp><<<sms, kThreads>>>(sink, cycles);
  std::vector<long long> c(sms);
  cudaMemcpy(c.data(), cycles, sms * sizeof(long long), cudaMemcpyDeviceToHost);
  long long worst = 0;
  for (long long v : c) worst = v > worst ? v : worst;
  const double warp_insts = double(kThreads / 32) * kIters * kChains * insts_per_step;
  std::printf("%-16s %8.3f warp instructions / cycle / SM (%lld cycles, %s)\n", name, warp_insts / double(worst), worst,
              cudaGetErrorString(cudaGetLastError()));
  cudaFree(sink);
  cudaFree(cycles);
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  run<Op::kLop3>("lop3", 1, sms);
  run<Op::kPrmt>("prmt", 1, sms);
  run<Op::kImad>("imad", 1, sms);
  run<Op::kHmul2>("hmul2.bf16", 1, sms);
  run<Op::kF2fpE4m3>("f2fp e4m3->f16", 1, sms);
  run<Op::kF2fpPlusLop3>("f2fp + lop3", 2, sms);
  run<Op::kHmul2PlusLop3>("hmul2 + lop3", 2, sms);
  run<Op::kF2fpPlusHmul2>("f2fp + hmul2", 2, sms);
  run<Op::kImadHi>("imad.hi", 1, sms);
  run<Op::kImadHiPlusLop3>("imad.hi + lop3", 2, sms);
  run<Op::kFunnel>("shf.l.w", 1, sms);
  run<Op::kDp4a>("dp4a (idp.4a)", 1, sms);
  run<Op::kDp4aPlusLop3>("dp4a + lop3", 2, sms);
  run<Op::kDp4aPlusImad>("dp4a + imad", 2, sms);
  return 0;
}
