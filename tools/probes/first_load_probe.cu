// First-load latency probe (not a product tool). The decode tiles see their
// first stage land 5-6.5 µs after the prologue (docs/PERF.md stop 35), with
// one stage in flight as with five, and with a warm L2 as with a cold one.
// This kernel does nothing but a decode tile's first loads (264 CTAs, two an
// SM, each reading 128 rows x 128 bytes a stage of its own 128 KB block) and
// times, per CTA, on the global nanosecond timer: entry -> first issue ->
// first stage landed -> every stage landed. It varies one thing at a time:
// how the copy is addressed (TMA with the tensor map as a __grid_constant__
// parameter, TMA with the map in global memory, with and without
// prefetch.tensormap, a 1-D bulk copy, plain 16-byte loads), the number of
// stages in flight, and what is warm (nothing; the address translations
// only; the data in L2); and a variant that waits 5 µs before it issues.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/device_fill.hpp"
#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/ptx/timer.cuh"
#include "kernels/sm90/tensor_map.hpp"

namespace {

namespace ptx = fp4moe::ptx;

constexpr int kCtas = 264;
constexpr int kThreads = 384;  // a decode tile's: a producer warpgroup and two consumer warpgroups
constexpr int kRowBytes = 1024;  // K = 2048 FP4 codes a row, as decode x7168x2048
constexpr int kBoxRows = 128;
constexpr int kBoxBytes = 128;
constexpr int kStageBytes = kBoxRows * kBoxBytes;  // 16 KB
constexpr int kMaxStages = 6;
constexpr std::int64_t kDataBytes = std::int64_t(kCtas) * kBoxRows * kRowBytes;  // 33 MB

enum class Mode { kTmaParam, kTmaGlobal, kTmaGlobalPrefetch, kBulk1d, kLdg, kStage };
// kStage: a decode stage's copies beside the weight box (bits of `copies`):
// the group's 16 token rows (TMA), the weights' 2 KB scale chunks and the
// tokens' 2 KB scale chunks (bulk); the token and token-scale copies read the
// same bytes on every CTA of a group (33 CTAs: 8 groups over 264 CTAs, as the
// masked decode tiles), or with kDistinct each CTA its own.
constexpr int kTokens = 1, kWeightScales = 2, kTokenScales = 4, kDistinct = 8;
// kAllWait: the 256 threads past the first warpgroup wait on each stage
// too, as a decode tile's consumers do (the issuing thread still times it).
constexpr int kAllWait = 16;
constexpr int kGroups = 8;
constexpr int kTokenRows = 16;
constexpr int kScaleBytes = 2048;
constexpr int kStageModeStages = 4;
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kTmaParam: return "tma (map as parameter)";
    case Mode::kTmaGlobal: return "tma (map in global)";
    case Mode::kTmaGlobalPrefetch: return "tma (global map, prefetched)";
    case Mode::kBulk1d: return "1-D bulk copy";
    case Mode::kLdg: return "16-byte loads (one warp)";
    case Mode::kStage: return "stage:";
  }
  return "";
}

struct Record {
  unsigned long long entry, issue, first, all;
};

struct StageOperands {
  const std::uint8_t* weight_scales;  // kCtas x kMaxStages x kScaleBytes
  const std::uint8_t* token_scales;   // kCtas x kMaxStages x kScaleBytes (shared: group g's at CTA g's place)
  int copies;
};

__global__ void __launch_bounds__(kThreads) first_load(const __grid_constant__ CUtensorMap map, const CUtensorMap* gmap,
                                                      const __grid_constant__ CUtensorMap tokens, StageOperands so,
                                                      const std::uint8_t* data, Mode mode, int stages, int delay_ns,
                                                      Record* rec, std::uint32_t* sink) {
  extern __shared__ __align__(1024) std::uint8_t smem_raw[];
  std::uint64_t* bars = reinterpret_cast<std::uint64_t*>(smem_raw);
  // Stages 1024-aligned (the 128-byte swizzle's unit) past the barriers.
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 64 + 1023) & ~std::uintptr_t(1023));
  const unsigned long long entry = ptx::global_timer_ns();
  if (mode == Mode::kTmaGlobalPrefetch && threadIdx.x == 0) ptx::prefetch_tensor_map(gmap);
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) ptx::mbar_init(&bars[s], 1);
    ptx::fence_mbarrier_init();
  }
  __syncthreads();
  if (delay_ns > 0)
    while (ptx::global_timer_ns() < entry + static_cast<unsigned long long>(delay_ns)) {
    }
  const int row0 = blockIdx.x * kBoxRows;
  if (stages == 0) return;  // the launch alone
  if (mode == Mode::kLdg) {
    if (threadIdx.x >= 32) return;
    // The warp reads stage s as 128 rows x 128 bytes: lane l takes 16 bytes
    // of row r at l % 8, rows l / 8 + 4 i. Every load is issued before any use.
    unsigned long long issue = 0, first = 0;
    std::uint32_t acc = 0;
    for (int s = 0; s < stages; ++s) {
      uint4 v[32];
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const int r = threadIdx.x / 8 + 4 * i;
        const std::uint8_t* p = data + std::int64_t(row0 + r) * kRowBytes + s * kBoxBytes + (threadIdx.x % 8) * 16;
        v[i] = __ldcg(reinterpret_cast<const uint4*>(p));
      }
      if (s == 0) issue = ptx::global_timer_ns();
#pragma unroll
      for (int i = 0; i < 32; ++i) acc ^= v[i].x ^ v[i].w;
      if (s == 0) {
        acc = __shfl_xor_sync(0xffffffffu, acc, 1) ^ acc;  // the whole warp's first stage has landed
        first = ptx::global_timer_ns() + (acc == 0x9e3779b9u ? 1 : 0);
      }
    }
    const unsigned long long all = ptx::global_timer_ns() + (acc == 0x9e3779b9u ? 1 : 0);
    if (acc == 0x12345678u) sink[blockIdx.x] = acc;
    if (threadIdx.x == 0) rec[blockIdx.x] = {entry, issue, first, all};
    return;
  }
  const int c = mode == Mode::kStage ? so.copies : 0;
  if (threadIdx.x != 0) {
    if ((c & kAllWait) && threadIdx.x >= 128)
      for (int s = 0; s < stages; ++s) ptx::mbar_wait(&bars[s], 0);
    return;
  }
  const CUtensorMap* m = mode == Mode::kTmaParam || mode == Mode::kStage ? &map : gmap;
  const int share = c & kDistinct ? blockIdx.x : blockIdx.x / ((kCtas + kGroups - 1) / kGroups);
  std::uint8_t* extra = smem + kStageModeStages * kStageBytes;  // stage mode: at most kStageModeStages stages
  for (int s = 0; s < stages; ++s) {
    std::uint32_t bytes = kStageBytes;
    if (c & kTokens) bytes += kTokenRows * kBoxBytes;
    if (c & kWeightScales) bytes += kScaleBytes;
    if (c & kTokenScales) bytes += kScaleBytes;
    ptx::mbar_arrive_expect_tx(&bars[s], bytes);
    if (mode == Mode::kStage) {
      ptx::tma_load_2d(smem + s * kStageBytes, m, s * kBoxBytes, row0, &bars[s]);
      std::uint8_t* e = extra + s * (kTokenRows * kBoxBytes + 2 * kScaleBytes);
      if (c & kTokens) ptx::tma_load_2d(e, &tokens, s * kBoxBytes, share * kTokenRows, &bars[s]);
      if (c & kWeightScales)
        ptx::bulk_load(e + kTokenRows * kBoxBytes, so.weight_scales + (std::int64_t(blockIdx.x) * kMaxStages + s) * kScaleBytes,
                       kScaleBytes, &bars[s]);
      if (c & kTokenScales)
        ptx::bulk_load(e + kTokenRows * kBoxBytes + kScaleBytes,
                       so.token_scales + (std::int64_t(share) * kMaxStages + s) * kScaleBytes, kScaleBytes, &bars[s]);
    } else if (mode == Mode::kBulk1d) {
      // The same bytes in count, as one contiguous 16 KB piece of the block.
      ptx::bulk_load(smem + s * kStageBytes, data + std::int64_t(row0) * kRowBytes + s * kStageBytes, kStageBytes,
                     &bars[s]);
    } else {
      ptx::tma_load_2d(smem + s * kStageBytes, m, s * kBoxBytes, row0, &bars[s]);
    }
  }
  const unsigned long long issue = ptx::global_timer_ns();
  ptx::mbar_wait(&bars[0], 0);
  const unsigned long long first = ptx::global_timer_ns();
  for (int s = 1; s < stages; ++s) ptx::mbar_wait(&bars[s], 0);
  const unsigned long long all = ptx::global_timer_ns();
  rec[blockIdx.x] = {entry, issue, first, all};
}

// Kernel parameters: how long the first read of each 64-byte line of a
// large parameter block takes (the GEMM's parameters and tensor maps are
// ~700 bytes, and its threads touch many of their lines before the first
// copy is issued). One thread reads a word of each line in a dependent
// chain, twice (cold, then warm), timing each read in clocks.
struct BigParams {
  std::uint32_t words[16 * 16];  // 16 lines of 64 bytes
};
constexpr int kParamLines = 16;
__global__ void param_latency(const __grid_constant__ BigParams bp, long long* cycles) {
  if (threadIdx.x != 0) return;
  std::uint32_t v = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kParamLines; ++i) {
      const long long t0 = clock64();
      v = bp.words[i * 16 + (v >> 31)];  // words hold small values: the index is i * 16, after the last read
      std::uint32_t w;
      asm volatile("add.u32 %0, %1, 1;" : "=r"(w) : "r"(v));  // issues only once v has arrived; the clock after it
      const long long t1 = clock64() + (w == 0x9e3779b9u ? 1 : 0);
      cycles[blockIdx.x * 2 * kParamLines + pass * kParamLines + i] = t1 - t0;
    }
  }
}

// Reads `bytes` (a multiple of 16) so that L2 holds nothing of the probe's data.
__global__ void read_sweep(const uint4* p, std::int64_t n, std::uint32_t* sink) {
  std::uint32_t acc = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    acc ^= __ldcg(p + i).x;
  if (acc == 0x12345678u) sink[0] = acc;
}

// One 4-byte load every 8 KB of the data, at the last 4 bytes of a row, which
// no probe stage reads: the address translations warm, the probe's lines not in L2.
__global__ void touch_pages(const std::uint8_t* data, std::int64_t bytes, std::uint32_t* sink) {
  std::uint32_t acc = 0;
  for (std::int64_t off = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) * 8192; off < bytes;
       off += std::int64_t(gridDim.x) * blockDim.x * 8192)
    acc ^= __ldcg(reinterpret_cast<const std::uint32_t*>(data + off + kRowBytes - 4));
  if (acc == 0x12345678u) sink[1] = acc;
}

__global__ void fill(std::uint32_t* p, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<std::uint32_t>(i * 2654435761u) ^ 0x5bd1e995u;
}

enum class Warm { kNothing, kTranslations, kL2 };
const char* warm_name(Warm w) { return w == Warm::kNothing ? "cold" : w == Warm::kTranslations ? "pages warm" : "L2 warm"; }

double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * double(v.size())))];
}

}  // namespace

int main() {
  std::uint8_t* data = nullptr;
  uint4* flush = nullptr;
  const std::int64_t flush_bytes = std::int64_t(512) << 20;
  std::uint32_t* sink = nullptr;
  Record* rec = nullptr;
  CUtensorMap* gmap = nullptr;
  cudaMalloc(&data, kDataBytes);
  cudaMalloc(&flush, flush_bytes);
  cudaMalloc(&sink, 64);
  cudaMalloc(&rec, kCtas * sizeof(Record));
  cudaMalloc(&gmap, sizeof(CUtensorMap));
  fill<<<264, 256>>>(reinterpret_cast<std::uint32_t*>(data), kDataBytes / 4);
  fill<<<264, 256>>>(reinterpret_cast<std::uint32_t*>(flush), flush_bytes / 4);
  // rows of kRowBytes bytes = 2 * kRowBytes FP4 codes; a box of 128 rows x 256 codes.
  const CUtensorMap map = fp4moe::kernels::make_fp4_tensor_map(data, kDataBytes / kRowBytes, 2 * kRowBytes, kBoxRows,
                                                               2 * kBoxBytes);
  cudaMemcpy(gmap, &map, sizeof(map), cudaMemcpyHostToDevice);
  std::uint8_t *tok = nullptr, *scales = nullptr;
  const std::int64_t tok_bytes = std::int64_t(kCtas) * kTokenRows * kRowBytes;
  const std::int64_t scale_bytes = std::int64_t(kCtas) * kMaxStages * kScaleBytes;
  cudaMalloc(&tok, tok_bytes);
  cudaMalloc(&scales, 2 * scale_bytes);
  fill<<<264, 256>>>(reinterpret_cast<std::uint32_t*>(tok), tok_bytes / 4);
  fill<<<264, 256>>>(reinterpret_cast<std::uint32_t*>(scales), 2 * scale_bytes / 4);
  const CUtensorMap tok_map = fp4moe::kernels::make_fp4_tensor_map(tok, tok_bytes / kRowBytes, 2 * kRowBytes, kTokenRows,
                                                                   2 * kBoxBytes);
  StageOperands so{scales, scales + scale_bytes, 0};
  // Two CTAs an SM in every mode, as the decode tiles (<= 113 KB each).
  const int smem = std::max(kMaxStages * kStageBytes, kStageModeStages * (kStageBytes + kTokenRows * kBoxBytes + 2 * kScaleBytes)) + 2048;
  cudaFuncSetAttribute(first_load, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  constexpr int kReps = 9;
  std::printf("%-44s %-10s %6s %5s | median over %d launches of the CTAs' p50 / p90, µs | launch µs\n", "copy", "warm",
              "stages", "delay", kReps);
  std::printf("%-44s %-10s %6s %5s | %13s %13s %13s %13s | %9s\n", "", "", "", "", "entry skew", "setup", "first lands",
              "all land", "events");
  struct Case {
    Mode mode;
    Warm warm;
    int stages;
    int delay_ns;
    int copies = 0;
  };
  std::vector<Case> cases;
  for (Warm w : {Warm::kNothing, Warm::kTranslations, Warm::kL2})
    for (Mode m : {Mode::kTmaParam, Mode::kTmaGlobal, Mode::kTmaGlobalPrefetch, Mode::kBulk1d, Mode::kLdg})
      for (int st : {1, 6}) cases.push_back({m, w, st, 0});
  for (int copies : {0, kTokens, kWeightScales, kTokenScales, kTokens | kTokenScales, kTokens | kWeightScales | kTokenScales,
                     kTokens | kDistinct, kTokenScales | kDistinct, kTokens | kWeightScales | kTokenScales | kDistinct,
                     kTokens | kWeightScales | kTokenScales | kAllWait})
    for (int st : {1, 4}) cases.push_back({Mode::kStage, Warm::kNothing, st, 0, copies});
  cases.push_back({Mode::kTmaParam, Warm::kNothing, 6, 5000});
  cases.push_back({Mode::kTmaParam, Warm::kTranslations, 6, 5000});
  for (const Case& c : cases) {
    std::vector<double> skew50, skew90, set50, set90, f50, f90, a50, a90, ev;
    for (int rep = 0; rep < kReps; ++rep) {
      read_sweep<<<1056, 512>>>(flush, flush_bytes / 16, sink);
      if (c.warm == Warm::kTranslations) touch_pages<<<132, 128>>>(data, kDataBytes, sink);
      if (c.warm == Warm::kL2)
        first_load<<<kCtas, kThreads, smem>>>(map, gmap, tok_map, so, data, c.mode, kMaxStages, 0, rec, sink);  // brings the lines in
      cudaEventRecord(e0);
      StageOperands sc = so;
      sc.copies = c.copies;
      first_load<<<kCtas, kThreads, smem>>>(map, gmap, tok_map, sc, data, c.mode, c.stages, c.delay_ns, rec, sink);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      std::vector<Record> r(kCtas);
      cudaMemcpy(r.data(), rec, kCtas * sizeof(Record), cudaMemcpyDeviceToHost);
      unsigned long long t0 = r[0].entry;
      for (const Record& x : r) t0 = std::min(t0, x.entry);
      std::vector<double> skew, setup, first, all;
      for (const Record& x : r) {
        skew.push_back((x.entry - t0) * 1e-3);
        setup.push_back((double(x.issue) - double(x.entry)) * 1e-3);
        first.push_back((double(x.first) - double(x.issue)) * 1e-3);
        all.push_back((double(x.all) - double(x.issue)) * 1e-3);
      }
      skew50.push_back(pct(skew, 0.5));
      skew90.push_back(pct(skew, 0.9));
      set50.push_back(pct(setup, 0.5));
      set90.push_back(pct(setup, 0.9));
      f50.push_back(pct(first, 0.5));
      f90.push_back(pct(first, 0.9));
      a50.push_back(pct(all, 0.5));
      a90.push_back(pct(all, 0.9));
      ev.push_back(ms * 1e3);
    }
    char name[96];
    std::snprintf(name, sizeof name, "%s%s%s%s%s%s", mode_name(c.mode), c.mode != Mode::kStage ? "" : " weights",
                  c.copies & kTokens ? "+tok" : "", c.copies & kWeightScales ? "+wsc" : "",
                  c.copies & kTokenScales ? (c.copies & kDistinct ? "+tsc distinct" : "+tsc") : (c.copies & kDistinct ? " distinct" : ""),
                  c.copies & kAllWait ? ", 256 waiters" : "");
    std::printf("%-44s %-10s %6d %5d | %6.2f/%6.2f %6.2f/%6.2f %6.2f/%6.2f %6.2f/%6.2f | %9.2f\n", name,
                warm_name(c.warm), c.stages, c.delay_ns, pct(skew50, 0.5), pct(skew90, 0.5), pct(set50, 0.5),
                pct(set90, 0.5), pct(f50, 0.5), pct(f90, 0.5), pct(a50, 0.5), pct(a90, 0.5), pct(ev, 0.5));
  }
  // Median over kReps of the event time of one launch after an L2 eviction.
  auto cold_launch_us = [&](auto&& launch) {
    std::vector<double> ev;
    for (int rep = 0; rep < kReps; ++rep) {
      read_sweep<<<1056, 512>>>(flush, flush_bytes / 16, sink);
      cudaEventRecord(e0);
      launch();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      ev.push_back(ms * 1e3);
    }
    return pct(ev, 0.5);
  };
  {
    // What the events see of a launch that does nothing (264 CTAs, stage
    // mode with no stage): with the probe's shared memory, without it, and
    // after a sweep kernel that asked for the largest shared-memory
    // carveout (does a launch pay for the SMs' L1/shared split changing?).
    auto empty_launch = [&](int dyn_smem, bool sweep_prefers_shared) {
      cudaFuncSetAttribute(read_sweep, cudaFuncAttributePreferredSharedMemoryCarveout,
                           sweep_prefers_shared ? int(cudaSharedmemCarveoutMaxShared) : int(cudaSharedmemCarveoutDefault));
      return cold_launch_us(
          [&] { first_load<<<kCtas, kThreads, dyn_smem>>>(map, gmap, tok_map, so, data, Mode::kStage, 0, 0, rec, sink); });
    };
    std::printf("empty launch, events: %d KB shared %.2f µs | 2 KB %.2f µs | %d KB after a sweep preferring shared %.2f µs\n",
                smem / 1024, empty_launch(smem, false), empty_launch(2048, false), smem / 1024, empty_launch(smem, true));
    cudaFuncSetAttribute(read_sweep, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutDefault));
  }
  {
    // What a plain read of a decode row's bytes achieves under the suites'
    // timing (cold L2, events around one launch): the library's own read
    // sweep, the kernel the read ceiling times on 2 GiB. Sizes: the decode
    // suite's NVFP4 rows (weights and their scales; tokens are negligible).
    std::uint8_t* big = nullptr;
    const std::int64_t big_bytes = std::int64_t(2) << 30;
    cudaMalloc(&big, big_bytes);
    fill<<<1056, 256>>>(reinterpret_cast<std::uint32_t*>(big), big_bytes / 4);
    auto time_read = [&](std::int64_t bytes) {
      return cold_launch_us([&] { fp4moe::detail::read_sweep(big, bytes, reinterpret_cast<unsigned*>(sink), nullptr); });
    };
    const double full_us = time_read(big_bytes);
    const double full_gbps = double(big_bytes) / full_us * 1e-3;
    std::printf("plain read of 2 GiB: %.1f µs, %.0f GB/s (the read ceiling's measure)\n", full_us, full_gbps);
    const struct {
      const char* row;
      double mb;
    } sizes[] = {{"G8 x7168x2048", 66.06}, {"G8 x4096x7168", 132.1}, {"G32 x7168x2048", 264.2}, {"G32 x4096x7168", 528.5}};
    for (const auto& z : sizes) {
      const std::int64_t bytes = std::int64_t(z.mb * 1e6) / 16 * 16;
      const double us = time_read(bytes);
      const double gbps = double(bytes) / us * 1e-3;
      std::printf("plain read of %7.1f MB (decode %-15s): %8.2f µs, %5.0f GB/s = %5.1f%% of the 2 GiB rate\n", z.mb, z.row,
                  us, gbps, 100.0 * gbps / full_gbps);
    }
    cudaFree(big);
  }
  {
    BigParams bp{};
    for (int i = 0; i < 16 * 16; ++i) bp.words[i] = std::uint32_t(i);
    long long* cyc = nullptr;
    cudaMalloc(&cyc, kCtas * 2 * kParamLines * sizeof(long long));
    std::vector<std::vector<double>> cold(kParamLines), warm(kParamLines);
    for (int rep = 0; rep < kReps; ++rep) {
      read_sweep<<<1056, 512>>>(flush, flush_bytes / 16, sink);
      param_latency<<<kCtas, 32>>>(bp, cyc);
      std::vector<long long> c(kCtas * 2 * kParamLines);
      cudaMemcpy(c.data(), cyc, c.size() * sizeof(long long), cudaMemcpyDeviceToHost);
      for (int i = 0; i < kParamLines; ++i) {
        std::vector<double> a, b;
        for (int cta = 0; cta < kCtas; ++cta) {
          a.push_back(double(c[cta * 2 * kParamLines + i]));
          b.push_back(double(c[cta * 2 * kParamLines + kParamLines + i]));
        }
        cold[i].push_back(pct(a, 0.5));
        warm[i].push_back(pct(b, 0.5));
      }
    }
    std::printf("kernel parameter reads, clocks (median over CTAs, then launches), line 0..15, first read / again:\n");
    for (int i = 0; i < kParamLines; ++i) std::printf(" %4.0f/%3.0f", pct(cold[i], 0.5), pct(warm[i], 0.5));
    std::printf("\n");
    cudaFree(cyc);
  }
  const cudaError_t err = cudaDeviceSynchronize();
  std::printf("status: %s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
