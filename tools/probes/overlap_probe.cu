// Overlap probe (not a product tool): why the 128 x 256 tile hides so little
// of its conversion behind its MMAs (docs/PERF.md stops 47-48). One CTA an
// SM, two consumer warpgroups, the tile's sub-step schedule without a
// producer (a fixed 24 KB "stage" of FP4 words is read again and again):
//   Y: two whole 32-K chunks a thread (8 KB of FP4 a sub-step, laid out as
//      TMA's 64B swizzle leaves it), each a 128-bit load, a code load, two
//      table loads and logical_pieces (fp4_dequant.cuh),
//      stored as BF16 into Y set m % 3 (three 32 KB sets);
//   wgmma_wait<1>; X: four FP4 words a thread into the A fragments
//      (scaled_pairs); fence; the ready barrier;
//   four RS m64n256k16 BF16 wgmmas a warpgroup from Y set m % 3.
// Parts switch off by template: the MMAs; the conversion's arithmetic (its
// inputs then come from the loads, its outputs are stored unconverted);
// its shared-memory loads and stores (inputs from registers, outputs XORed
// into a register). Cycles a sub-step from clock64, mean over the CTAs.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "kernels/sm90/fp4_dequant.cuh"
#include "kernels/sm90/operand_items.cuh"
#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/ptx/wgmma.cuh"

namespace {

using namespace fp4moe;
constexpr int kThreads = 256;
constexpr int kSetBytes = 256 * 128;  // 256 rows x 64 K of BF16 (128B swizzle)
constexpr int kStageBytes = 24 * 1024;
constexpr int kOffStage = 3 * kSetBytes;
constexpr int kOffTable = kOffStage + kStageBytes;
constexpr int kSmemBytes = kOffTable + 1024 + 1024;

// kFactors: how a chunk's two NVFP4 scale factors are had: 0 from the
// per-CTA table (the GEMM's way: the code pair's load, then two dependent
// loads), 1 worked out from the codes (nvfp4_pair_scale: no second load;
// X's too),
// 2 constants (no scale load at all: the bound of removing them), 3 as 2
// and X's factors constant too, 4 the table with 16 codes (0x30-0x3f:
// scales 1-1.875, as blocks of similar amplitude give) where 0 reads
// random codes (bank conflicts between lanes whose codes are 32 apart).
// kOrder: 0 each Y item loaded, converted and stored in turn, X loaded
// after the MMA wait; 1 every load of the sub-step first (the GEMM's
// kLoadsFirst order); 2 as 1 with Y's items loaded a sub-step ahead; 3 as
// 1 with only the scale factors (code, then table) a sub-step ahead.
template <bool kMma, bool kAlu, bool kSmem, int kFactors = 0, int kOrder = 0>
__global__ void __launch_bounds__(kThreads, 1) overlap(int iters, unsigned long long* cycles, std::uint32_t* sink) {
  extern __shared__ std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  const std::uint32_t base = ptx::smem_addr(smem);
  // Finite BF16 everywhere (exponent field below 0x7f), random FP4 codes,
  // and NVFP4 factors of E4M3 codes 0x30-0x3f (scales 1-1.875, times 2^117).
  for (int i = threadIdx.x; i < (kOffTable) / 4; i += kThreads)
    reinterpret_cast<std::uint32_t*>(smem)[i] = (0x9e3779b9u * (i + 1)) & (i < kOffStage / 4 ? 0x3f7f3f7fu : 0xffffffffu);
  for (int c = threadIdx.x; c < 256; c += kThreads)
    reinterpret_cast<std::uint32_t*>(smem + kOffTable)[c] = kernels::scale_table_entry<true>(std::uint8_t(0x30 | (c & 15)));
  __syncthreads();
  const int wg = threadIdx.x / 128, tid = threadIdx.x;
  const std::uint32_t table = base + kOffTable;
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
  std::uint32_t afrag[2][4][4] = {};
  std::uint32_t keep = std::uint32_t(iters) * 7u + threadIdx.x;  // outputs where nothing stores them (a run-time start: never a known value)
  uint4 reg_raw = make_uint4(tid, 3 * tid, 5 * tid, 7 * tid);  // inputs where nothing loads them
  struct YItem {
    uint4 raw;
    std::uint32_t f0, f1;
  };
  struct XWords {
    std::uint32_t w[2][2], f[2][2];
  };
  // Y item u (chunk tid + 256u of the sub-step's 512: 256 rows x 2) of sub-step m.
  auto load_y = [&](int m, int u, bool words = true, bool factors = true) {
    const int item = tid + 256 * u, row = item % 256, cc = item / 256;
    YItem y{reg_raw, 0x7c007c00u + m, 0x7c207c20u + m};
    if (kSmem && !words && factors) {  // the factors alone (kOrder 3)
      const std::uint32_t codes = ptx::lds16(base + kOffStage + ((row * 2 + cc) & 1023) * 2);
      y.f0 = ptx::lds32(table + 4 * (codes & 0xffu));
      y.f1 = ptx::lds32(table + 4 * (codes >> 8));
      return y;
    }
    if (kSmem && words && !factors) {  // the words alone (kOrder 3)
      y.raw = ptx::lds128(base + kOffStage + (kernels::swizzled<64, 2>(row, cc) ^ ((m & 1) << 5)));
      return y;
    }
    if constexpr (kSmem) {
      // (The stage's 128-row FP4 tiles as TMA lays them out: 64-byte rows,
      // the 64B swizzle, so a warp's 16-byte loads meet no bank twice.)
      y.raw = ptx::lds128(base + kOffStage + (kernels::swizzled<64, 2>(row, cc) ^ ((m & 1) << 5)));
      if constexpr (kFactors == 0 || kFactors == 4) {
        std::uint32_t codes = ptx::lds16(base + kOffStage + ((row * 2 + cc) & 1023) * 2);
        if constexpr (kFactors == 4) codes = (codes & 0x0f0fu) | 0x3030u;
        y.f0 = ptx::lds32(table + 4 * (codes & 0xffu));
        y.f1 = ptx::lds32(table + 4 * (codes >> 8));
      } else if constexpr (kFactors == 1) {
        const std::uint32_t codes = ptx::lds16(base + kOffStage + ((row * 2 + cc) & 1023) * 2);
        y.f0 = kernels::nvfp4_pair_scale(std::uint8_t(0x30 | (codes & 15))).first;
        y.f1 = kernels::nvfp4_pair_scale(std::uint8_t(0x30 | ((codes >> 8) & 15))).first;
      }
    } else {
      reg_raw.x += m;
    }
    return y;
  };
  auto store_y = [&](const YItem& y, int m, int u) {
    const int item = tid + 256 * u, row = item % 256, cc = item / 256;
    uint4 pieces[4];
    if constexpr (kAlu) {
      kernels::logical_pieces<true, false>(y.raw, kernels::pair_scale_from_table<true>(y.f0),
                                           kernels::pair_scale_from_table<true>(y.f1), pieces);
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) pieces[q] = make_uint4(y.raw.x ^ q, y.raw.y ^ y.f0, y.raw.z ^ y.f1, y.raw.w);
    }
    const std::uint32_t dst = base + (m % 3) * kSetBytes + row * 128 + ((4 * cc) ^ (row % 8)) * 16;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if constexpr (kSmem) {
        ptx::sts128(dst ^ (q << 4), pieces[q]);
      } else {
        keep ^= pieces[q].x ^ pieces[q].y ^ pieces[q].z ^ pieces[q].w;
      }
    }
  };
  // X: four words (rows g, g + 8 of two 32-K chunks) for the A fragments.
  auto load_x = [&](int m, bool words = true, bool factors = true) {
    XWords x;
#pragma unroll
    for (int cc = 0; cc < 2; ++cc)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        x.w[cc][h] = reg_raw.y + cc + 2 * h;
        x.f[cc][h] = 0x7c007c00u;
        if constexpr (kSmem) {
          const int xrow = 64 * wg + (tid % 128) / 4 + 8 * h;  // rows g, g + 8 of the warpgroup's 64 (the A fragments')
          x.w[cc][h] = ptx::lds32(base + kOffStage + 16 * 1024 + (kernels::swizzled<64, 2>(xrow, cc) ^ ((m & 1) << 5)) + 4 * (tid % 4));
          if (!factors) continue;
          if (!words) {  // the factor alone: its code from the word's neighbour (the same timing as the GEMM's code load)
            x.f[cc][h] = ptx::lds32(table + 4 * (ptx::lds32(base + kOffStage + 16 * 1024 + 4 * (tid % 128)) >> 24));
            continue;
          }
          if constexpr (kFactors == 1) {
            x.f[cc][h] = kernels::nvfp4_pair_scale(std::uint8_t(0x30 | ((x.w[cc][h] >> 24) & 15))).first;
          } else if constexpr (kFactors != 3) {
            x.f[cc][h] = ptx::lds32(table + 4 * (kFactors == 4 ? 0x30 | ((x.w[cc][h] >> 24) & 15) : x.w[cc][h] >> 24));
          }
        }
      }
    return x;
  };
  auto convert_x = [&](const XWords& x, int buf) {
#pragma unroll
    for (int cc = 0; cc < 2; ++cc)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        std::uint32_t pairs[4];
        if constexpr (kAlu) {
          kernels::scaled_pairs<true>(x.w[cc][h], kernels::pair_scale_from_table<true>(x.f[cc][h]), pairs);
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q) pairs[q] = (x.w[cc][h] ^ q) & 0x3f7f3f7fu;
        }
#pragma unroll
        for (int s2 = 0; s2 < 2; ++s2) {
          afrag[buf][2 * cc + s2][h] = pairs[2 * s2] & 0x3f7f3f7fu;
          afrag[buf][2 * cc + s2][2 + h] = pairs[2 * s2 + 1] & 0x3f7f3f7fu;
        }
      }
  };
  auto wait_mmas = [&](int buf) {
    if constexpr (kMma) {
      ptx::wgmma_wait<1>();
      // (As the GEMM's wait_for_afrag: a use of the fragments the wait freed,
      // in a branch never taken, keeps ptxas from reusing their registers
      // while the MMAs before still read them, which serialises the wgmmas.)
      if (iters < 0) {
#pragma unroll
        for (int step = 0; step < 4; ++step)
          ptx::sts128(base, make_uint4(afrag[buf][step][0], afrag[buf][step][1], afrag[buf][step][2], afrag[buf][step][3]));
      }
    }
  };
  [[maybe_unused]] YItem y_next[2];
  [[maybe_unused]] XWords x_next;
  if constexpr (kOrder == 2) {
    y_next[0] = load_y(0, 0);
    y_next[1] = load_y(0, 1);
  } else if constexpr (kOrder == 3) {
    y_next[0] = load_y(0, 0, false, true);
    y_next[1] = load_y(0, 1, false, true);
    x_next = load_x(0, false, true);
  }
  const std::uint64_t t0 = clock64();
  for (int m = 0; m < iters; ++m) {
    const int buf = m & 1;
    const std::uint32_t yset = base + (m % 3) * kSetBytes;
    if constexpr (kOrder == 0) {  // each item loaded, converted and stored in turn; X after the wait
#pragma unroll
      for (int u = 0; u < 2; ++u) store_y(load_y(m, u), m, u);
      wait_mmas(buf);
      convert_x(load_x(m), buf);
    } else if constexpr (kOrder == 3) {  // every load first, the factors a sub-step ahead
      XWords x = load_x(m, true, false);
      YItem y[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        y[u] = load_y(m, u, true, false);
        y[u].f0 = y_next[u].f0;
        y[u].f1 = y_next[u].f1;
      }
#pragma unroll
      for (int cc = 0; cc < 2; ++cc)
#pragma unroll
        for (int h = 0; h < 2; ++h) x.f[cc][h] = x_next.f[cc][h];
#pragma unroll
      for (int u = 0; u < 2; ++u) y_next[u] = load_y(m + 1, u, false, true);
      x_next = load_x(m + 1, false, true);
#pragma unroll
      for (int u = 0; u < 2; ++u) store_y(y[u], m, u);
      wait_mmas(buf);
      convert_x(x, buf);
    } else {  // every load first (the GEMM's order), 2: Y's a sub-step ahead
      const XWords x = load_x(m);
      YItem y[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) y[u] = kOrder == 2 ? y_next[u] : load_y(m, u);
      if constexpr (kOrder == 2) {
#pragma unroll
        for (int u = 0; u < 2; ++u) y_next[u] = load_y(m + 1, u);
      }
#pragma unroll
      for (int u = 0; u < 2; ++u) store_y(y[u], m, u);
      wait_mmas(buf);
      convert_x(x, buf);
    }
    ptx::fence_proxy_async_smem();
    ptx::named_barrier(1, kThreads);
    if constexpr (kMma) {
#pragma unroll
      for (int i = 0; i < 128; ++i) ptx::fence_register(acc[i]);
      ptx::wgmma_fence();
#pragma unroll
      for (int step = 0; step < 4; ++step)
        ptx::WgmmaRS<ptx::BF16, 256>::mma(acc, afrag[buf][step], ptx::smem_desc_k_major_sw128(yset) + 2 * step, true);
      ptx::wgmma_commit();
#pragma unroll
      for (int i = 0; i < 128; ++i) ptx::fence_register(acc[i]);
    } else {
      keep ^= afrag[buf][0][0] ^ afrag[buf][3][3];
    }
  }
  if constexpr (kMma) ptx::wgmma_wait<0>();
  const std::uint64_t t1 = clock64();
  // Keeps the work (the MMAs' results too, or ptxas drops them).
#pragma unroll
  for (int i = 0; i < 128; ++i) ptx::fence_register(acc[i]);
  if (keep == 0x12345678u) {
#pragma unroll
    for (int i = 0; i < 128; ++i) sink[i] = __float_as_uint(acc[i]);
  }
  if (threadIdx.x == 0) atomicAdd(cycles, (unsigned long long)(t1 - t0));
}

template <bool kMma, bool kAlu, bool kSmem, int kFactors = 0, int kOrder = 0>
void run(const char* name, int sms, int iters, unsigned long long* dcycles, std::uint32_t* sink) {
  cudaFuncSetAttribute(overlap<kMma, kAlu, kSmem, kFactors, kOrder>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  overlap<kMma, kAlu, kSmem, kFactors, kOrder><<<sms, kThreads, kSmemBytes>>>(iters, dcycles, sink);  // warm-up
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    cudaMemset(dcycles, 0, sizeof(unsigned long long));
    overlap<kMma, kAlu, kSmem, kFactors, kOrder><<<sms, kThreads, kSmemBytes>>>(iters, dcycles, sink);
    unsigned long long c = 0;
    cudaMemcpy(&c, dcycles, sizeof c, cudaMemcpyDeviceToHost);
    const double per = double(c) / sms / iters;
    best = per < best ? per : best;
  }
  std::printf("%-58s %6.0f\n", name, best);
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* dcycles = nullptr;
  std::uint32_t* sink = nullptr;
  cudaMalloc(&dcycles, sizeof(unsigned long long));
  cudaMalloc(&sink, 128 * sizeof(std::uint32_t));  // (the kernels' never-taken store of 128 words)
  constexpr int kIters = 4000;
  std::printf("the 128 x 256 tile's sub-step, one CTA an SM on %d SMs, %d sub-steps: cycles a sub-step (best of 3)\n", sms,
              kIters);
  run<true, false, false>("MMAs only", sms, kIters, dcycles, sink);
  run<false, true, true>("conversion only (ALU + shared)", sms, kIters, dcycles, sink);
  run<false, true, false>("conversion ALU only", sms, kIters, dcycles, sink);
  run<false, false, true>("conversion shared loads/stores only", sms, kIters, dcycles, sink);
  run<true, true, true>("MMAs + conversion", sms, kIters, dcycles, sink);
  run<true, true, false>("MMAs + conversion ALU only", sms, kIters, dcycles, sink);
  run<true, false, true>("MMAs + shared loads/stores only", sms, kIters, dcycles, sink);
  run<false, true, true, 1>("conversion, Y factors by arithmetic", sms, kIters, dcycles, sink);
  run<true, true, true, 1>("MMAs + conversion, Y factors by arithmetic", sms, kIters, dcycles, sink);
  run<true, true, true, 2>("MMAs + conversion, Y factors constant", sms, kIters, dcycles, sink);
  run<false, true, true, 0, 1>("conversion, loads first", sms, kIters, dcycles, sink);
  run<true, true, true, 0, 1>("MMAs + conversion, loads first", sms, kIters, dcycles, sink);
  run<true, true, true, 2, 1>("MMAs + conversion, loads first, Y factors constant", sms, kIters, dcycles, sink);
  run<true, true, true, 3, 1>("MMAs + conversion, loads first, X and Y factors constant", sms, kIters, dcycles, sink);
  run<true, true, true, 4, 1>("MMAs + conversion, loads first, 16 codes", sms, kIters, dcycles, sink);
  run<true, true, true, 1, 1>("MMAs + conversion, loads first, factors by arithmetic", sms, kIters, dcycles, sink);
  run<true, true, true, 0, 3>("MMAs + conversion, factors a sub-step ahead", sms, kIters, dcycles, sink);
  run<false, true, true, 0, 2>("conversion, Y loaded a sub-step ahead", sms, kIters, dcycles, sink);
  run<true, true, true, 0, 2>("MMAs + conversion, Y loaded a sub-step ahead", sms, kIters, dcycles, sink);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("%s\n", e == cudaSuccess ? "ok" : cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
