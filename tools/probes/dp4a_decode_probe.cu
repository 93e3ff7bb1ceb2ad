// DP4A decode probe (not a product tool). The decode tiles convert every
// FP4 weight to BF16 on the integer ALU (13-14 instructions a word of eight,
// 9 prepacked, plus four HMUL2 for the block scale) so that wgmma can take
// them, even where a launch has one token: the conversion loop, not DRAM,
// sets their pace (docs/TARGETS.md). This probe computes a few tokens'
// NVFP4 GEMV on the CUDA cores instead, exactly:
// - a word's eight E2M1 codes become eight int8 values 2·v by two PRMTs
//   from an 8-byte table (the code's sign bit is PRMT's sign-replicate
//   bit, so a negative code reads 0: the positive parts), and two more on
//   the word with its sign bits flipped (the negative parts);
// - IDP.4A adds the parts times the token's int8 values (2·x, and their
//   negations for the negative parts) into an int32 started at the bits
//   of 1.5·2^23, so the block's exact integer dot product reads as a float
//   after one FADD;
// - one FFMA adds it times the block's scale product into the FP32 sum
//   (the weight scale's E4M3 code shifted into a float's exponent field is
//   2^-120 times its value, subnormal codes included; the token's scale
//   carries 2^120 / 4).
// ~16 integer-ALU instructions for 16 weights (against ~34 with the BF16
// conversion), 8 IDP.4A a token on the FMA pipe. One CTA 128 weight rows,
// a stage 256 K (a 128 x 128-byte TMA box, the rows' 2 KB of scale codes
// and the tokens' int8 values and scales, 2 CTAs an SM, 5 stages; each of
// 256 consumer threads a row's half stage), whole tiles round-robin over
// 264 CTAs, as the library's 16-token decode tile. Checked against a
// double-precision reference; timed against the same launch with the
// consumers doing nothing (the stream floor). Cold L2, median of 15
// (tuning::Profiler).
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common/cuda_check.hpp"
#include "kernels/sm90/ptx/bit_ops.cuh"
#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/tensor_map.hpp"
#include "tuning/profiler.hpp"

namespace {

namespace ptx = fp4moe::ptx;

constexpr int kCtas = 264;
constexpr int kBM = 128;      // weight rows a tile
constexpr int kBK = 256;      // K a stage
constexpr int kStages = 5;
constexpr int kConsumers = 256;
constexpr int kThreads = kConsumers + 32;
constexpr int kWBytes = kBM * kBK / 2;  // 16 KB
constexpr int kSBytes = kBM * kBK / 16;  // 2 KB of E4M3 codes
constexpr int kMaxTokens = 4;
constexpr int kTokBytes = 2 * kBK + 4 * (kBK / 16);  // int8 x, int8 -x, 16 float scales
constexpr int kStageBytes = kWBytes + kSBytes + ((kMaxTokens * kTokBytes + 1023) / 1024) * 1024;

struct Args {
  const std::uint8_t* w_scales;  // [tiles][stages][128 rows][16 codes]
  const std::uint8_t* tokens;    // [stages][T][kTokBytes]
  float* d;                      // [T][rows]
  int rows, k, tokens_n;
  bool compute;
  std::uint32_t zero;  // 0 (see kLutLo)
};

template <int T>
__global__ void __launch_bounds__(kThreads, 2) gemv(const __grid_constant__ CUtensorMap wmap, Args a) {
  extern __shared__ __align__(1024) std::uint8_t smem_raw[];
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem_raw);
  std::uint64_t* empty = full + kStages;
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 128 + 1023) & ~std::uintptr_t(1023));
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(&full[s], 1);
      ptx::mbar_init(&empty[s], kConsumers);
    }
    ptx::fence_mbarrier_init();
  }
  __syncthreads();
  const int tiles = a.rows / kBM, ksteps = a.k / kBK;
  if (threadIdx.x >= kConsumers) {  // producer
    if (threadIdx.x != kConsumers) return;
    ptx::prefetch_tensor_map(&wmap);
    int it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      for (int ks = 0; ks < ksteps; ++ks, ++it) {
        const int s = it % kStages;
        ptx::mbar_wait(&empty[s], ((it / kStages) & 1) ^ 1);
        std::uint8_t* st = smem + s * kStageBytes;
        ptx::mbar_arrive_expect_tx(&full[s], kWBytes + kSBytes + T * kTokBytes);
        ptx::tma_load_2d(st, &wmap, ks * (kBK / 2), tile * kBM, &full[s]);
        ptx::bulk_load(st + kWBytes, a.w_scales + (std::int64_t(tile) * ksteps + ks) * kSBytes, kSBytes, &full[s]);
        ptx::bulk_load(st + kWBytes + kSBytes, a.tokens + std::int64_t(ks) * T * kTokBytes, T * kTokBytes, &full[s]);
      }
    }
    return;
  }
  // Consumer thread: row r of the tile, K half h of each stage (blocks 8h .. 8h + 7).
  const int r = threadIdx.x >> 1, h = threadIdx.x & 1;
  // 2·|v| of E2M1 codes 0-7. The low half is a per-thread value ptxas
  // cannot fold (a.zero is 0 at run time): as a constant, or as a uniform
  // register, it was copied into a register before every PRMT (64 IMAD a
  // stage), PRMT taking a table word as an immediate only in its last slot.
  const std::uint32_t kLutLo = 0x03020100u ^ (threadIdx.x & a.zero);
  constexpr std::uint32_t kLutHi = 0x0c080604u;
  constexpr std::uint32_t kMagic = 0x4b400000u;  // 1.5·2^23
  // This thread's four 16-byte chunks of its row (128-byte swizzle), its
  // scale codes and its tokens' blocks, as offsets into a stage.
  std::uint32_t chunk_off[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) chunk_off[i] = r * 128 + (((4 * h + i) ^ (r & 7)) << 4);
  const std::uint32_t scale_off = kWBytes + r * 16 + 8 * h;
  const std::uint32_t tok_off = kWBytes + kSBytes + 128 * h;
  int it = 0;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    float total[T];
#pragma unroll
    for (int t = 0; t < T; ++t) total[t] = 0.0f;
    for (int ks = 0; ks < ksteps; ++ks, ++it) {
      const int s = it % kStages;
      ptx::mbar_wait(&full[s], (it / kStages) & 1);
      const std::uint32_t st = ptx::smem_addr(smem + s * kStageBytes);
      if (a.compute) {
        uint4 chunk[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) chunk[i] = ptx::lds128(st + chunk_off[i]);
        const uint2 sc = ptx::lds64(st + scale_off);
        const std::uint32_t tok0 = st + tok_off;
#pragma unroll
        for (int b = 0; b < 8; ++b) {
          const std::uint32_t w0 = (b & 1) ? chunk[b >> 1].z : chunk[b >> 1].x;
          const std::uint32_t w1 = (b & 1) ? chunk[b >> 1].w : chunk[b >> 1].y;
          const std::uint32_t n0 = w0 ^ 0x88888888u, n1 = w1 ^ 0x88888888u;
          const std::uint32_t p0 = ptx::prmt(kLutLo, kLutHi, w0), p1 = ptx::prmt(kLutLo, kLutHi, w0 >> 16);
          const std::uint32_t p2 = ptx::prmt(kLutLo, kLutHi, w1), p3 = ptx::prmt(kLutLo, kLutHi, w1 >> 16);
          const std::uint32_t q0 = ptx::prmt(kLutLo, kLutHi, n0), q1 = ptx::prmt(kLutLo, kLutHi, n0 >> 16);
          const std::uint32_t q2 = ptx::prmt(kLutLo, kLutHi, n1), q3 = ptx::prmt(kLutLo, kLutHi, n1 >> 16);
          const std::uint32_t code = ((b < 4 ? sc.x : sc.y) >> (8 * (b & 3))) & 0xffu;
          const float sw = __uint_as_float(code << 20);  // 2^-120 · the E4M3 scale
#pragma unroll
          for (int t = 0; t < T; ++t) {
            const std::uint32_t tb = tok0 + t * kTokBytes;
            const uint4 x = ptx::lds128(tb + b * 16);
            const uint4 xn = ptx::lds128(tb + kBK + b * 16);
            const float sx = __uint_as_float(ptx::lds32(tb + 2 * kBK - 96 * h + b * 4));  // (block 8h + b's scale)
            int acc = int(kMagic);
            acc = __dp4a(int(p0), int(x.x), acc);
            acc = __dp4a(int(p1), int(x.y), acc);
            acc = __dp4a(int(p2), int(x.z), acc);
            acc = __dp4a(int(p3), int(x.w), acc);
            acc = __dp4a(int(q0), int(xn.x), acc);
            acc = __dp4a(int(q1), int(xn.y), acc);
            acc = __dp4a(int(q2), int(xn.z), acc);
            acc = __dp4a(int(q3), int(xn.w), acc);
            const float dot = __int_as_float(acc) - 12582912.0f;
            total[t] = fmaf(dot, sw * sx, total[t]);
          }
        }
      }
      ptx::mbar_arrive(&empty[s]);
    }
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float v = total[t] + __shfl_xor_sync(0xffffffffu, total[t], 1);
      if (h == 0 && a.compute) a.d[std::int64_t(t) * a.rows + tile * kBM + r] = v;
    }
  }
}

double e2m1(int code) {
  static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (code & 8 ? -1.0 : 1.0) * mag[code & 7];
}
double e4m3(int code) {  // positive finite codes
  const int e = (code >> 3) & 15, m = code & 7;
  return e ? std::ldexp(1.0 + m / 8.0, e - 7) : std::ldexp(m / 8.0, -6);
}

}  // namespace

int main() {
  struct Shape {
    const char* name;
    int rows, k;
  };
  const Shape shapes[] = {{"G8 x7168x2048 (57344 x 2048)", 8 * 7168, 2048}, {"G32 x4096x7168 (131072 x 7168)", 32 * 4096, 7168}};
  std::mt19937 rng(7);
  const fp4moe::tuning::Profiler profiler(nullptr);  // cold L2 before each timed launch
  const fp4moe::tuning::ProfileOptions timing{3, 15, true};
  const int smem = kStages * kStageBytes + 2048;
  FP4MOE_CUDA_CHECK(cudaFuncSetAttribute(gemv<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  FP4MOE_CUDA_CHECK(cudaFuncSetAttribute(gemv<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  FP4MOE_CUDA_CHECK(cudaFuncSetAttribute(gemv<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::printf("stage %d bytes, %d stages, smem %d a CTA\n", kStageBytes, kStages, smem);
  std::printf("%-34s %3s %-10s %9s %8s %9s %12s\n", "shape", "T", "mode", "us", "GB/s", "MB", "max rel err");
  for (const Shape& sh : shapes) {
    const int ksteps = sh.k / kBK;
    // Weights: random bytes (every code); scales: random E4M3 codes 0x01-0x5f
    // (2^-9 .. 2^4.9, subnormal codes included).
    std::vector<std::uint8_t> w(std::size_t(sh.rows) * sh.k / 2), ws(std::size_t(sh.rows) * sh.k / 16);
    for (auto& v : w) v = std::uint8_t(rng());
    for (auto& v : ws) v = std::uint8_t(1 + rng() % 0x5f);
    // B's scales rearranged per (tile, stage): 128 rows x 16 codes.
    std::vector<std::uint8_t> ws_tiled(ws.size());
    for (int row = 0; row < sh.rows; ++row)
      for (int kb = 0; kb < sh.k / 16; ++kb)
        ws_tiled[((std::size_t(row / kBM) * ksteps + kb / 16) * kBM + row % kBM) * 16 + kb % 16] = ws[std::size_t(row) * (sh.k / 16) + kb];
    std::uint8_t *dw = nullptr, *dws = nullptr, *dtok = nullptr;
    float* dd = nullptr;
    FP4MOE_CUDA_CHECK(cudaMalloc(&dw, w.size()));
    FP4MOE_CUDA_CHECK(cudaMalloc(&dws, ws.size()));
    FP4MOE_CUDA_CHECK(cudaMalloc(&dtok, std::size_t(ksteps) * kMaxTokens * kTokBytes));
    FP4MOE_CUDA_CHECK(cudaMalloc(&dd, std::size_t(kMaxTokens) * sh.rows * 4));
    FP4MOE_CUDA_CHECK(cudaMemcpy(dw, w.data(), w.size(), cudaMemcpyHostToDevice));
    FP4MOE_CUDA_CHECK(cudaMemcpy(dws, ws_tiled.data(), ws.size(), cudaMemcpyHostToDevice));
    const CUtensorMap map = fp4moe::kernels::make_fp4_tensor_map(dw, sh.rows, sh.k, kBM, kBK);
    for (int T : {1, 2, 4}) {
      // Tokens: random codes and scales; per stage and token the int8 2·v, then -2·v, then each block's scale / 4 · 2^120.
      std::vector<int> xc(std::size_t(T) * sh.k), xsc(std::size_t(T) * sh.k / 16);
      for (auto& v : xc) v = int(rng() % 16);
      for (auto& v : xsc) v = int(1 + rng() % 0x5f);
      std::vector<std::uint8_t> tok(std::size_t(ksteps) * T * kTokBytes);
      for (int ks = 0; ks < ksteps; ++ks)
        for (int t = 0; t < T; ++t) {
          std::uint8_t* p = tok.data() + (std::size_t(ks) * T + t) * kTokBytes;
          for (int i = 0; i < kBK; ++i) {
            const int v = int(std::lround(2 * e2m1(xc[std::size_t(t) * sh.k + ks * kBK + i])));
            p[i] = std::uint8_t(std::int8_t(v));
            p[kBK + i] = std::uint8_t(std::int8_t(-v));
          }
          for (int b = 0; b < kBK / 16; ++b) {
            const float f = float(std::ldexp(e4m3(xsc[std::size_t(t) * (sh.k / 16) + ks * 16 + b]) / 4.0, 120));
            std::memcpy(p + 2 * kBK + 4 * b, &f, 4);
          }
        }
      FP4MOE_CUDA_CHECK(cudaMemcpy(dtok, tok.data(), tok.size(), cudaMemcpyHostToDevice));
      // Reference (double) for a sample of rows.
      std::vector<float> out(std::size_t(T) * sh.rows);
      double max_rel = 0;
      for (int mode = 1; mode >= 0; --mode) {
        Args args{dws, dtok, dd, sh.rows, sh.k, T, mode == 1, 0u};
        const double med = profiler.time(
            [&](cudaStream_t s) {
              if (T == 1) gemv<1><<<kCtas, kThreads, smem, s>>>(map, args);
              if (T == 2) gemv<2><<<kCtas, kThreads, smem, s>>>(map, args);
              if (T == 4) gemv<4><<<kCtas, kThreads, smem, s>>>(map, args);
            },
            timing).median_us;
        FP4MOE_CUDA_CHECK(cudaGetLastError());
        if (mode == 1) {
          FP4MOE_CUDA_CHECK(cudaMemcpy(out.data(), dd, out.size() * 4, cudaMemcpyDeviceToHost));
          for (int t = 0; t < T; ++t)
            for (int row = 0; row < sh.rows; row += 61) {
              double ref = 0, mag = 0;
              for (int kk = 0; kk < sh.k; ++kk) {
                const int byte = w[std::size_t(row) * (sh.k / 2) + kk / 2];
                const double wv = e2m1(kk & 1 ? byte >> 4 : byte & 15) * e4m3(ws[std::size_t(row) * (sh.k / 16) + kk / 16]);
                const double xv = e2m1(xc[std::size_t(t) * sh.k + kk]) * e4m3(xsc[std::size_t(t) * (sh.k / 16) + kk / 16]);
                ref += wv * xv;
                mag += std::fabs(wv * xv);
              }
              max_rel = std::max(max_rel, std::fabs(out[std::size_t(t) * sh.rows + row] - ref) / std::max(mag, 1e-30));
            }
        }
        const double mb = (double(w.size()) + double(ws.size())) / 1e6;
        std::printf("%-34s %3d %-10s %9.2f %8.0f %9.1f %12.2e\n", sh.name, T, mode ? "dp4a" : "stream", med, mb / med * 1e3, mb,
                    mode ? max_rel : 0.0);
      }
    }
    FP4MOE_CUDA_CHECK(cudaFree(dw));
    FP4MOE_CUDA_CHECK(cudaFree(dws));
    FP4MOE_CUDA_CHECK(cudaFree(dtok));
    FP4MOE_CUDA_CHECK(cudaFree(dd));
  }
  return 0;
}
