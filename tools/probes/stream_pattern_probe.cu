// Stream-pattern probe (not a product tool). How fast a persistent TMA
// stream reads the weights in the access patterns of the GEMM tiles when
// nothing is computed: a producer thread a CTA fills a ring of stages, a
// consumer warp waits for each and frees it at once. moe-fc2 at M = 32 runs
// 76 µs with no weight conversion at all (docs/PERF.md stop 38), about half
// the read ceiling; its weight boxes are 64 rows of 128 bytes whose rows
// lie E·W/2 = 32 KB apart, where a decode tile's lie 1-3.5 KB apart. This
// asks whether that pattern alone is slow: the same passes as 2-D boxes of
// the [7168, 32768-byte] tensor, as 128-row boxes, and as one contiguous
// 8 KB block a (tile, expert) (a layout the library does not have), each
// with and without its 2 KB scale chunk; and two decode patterns for
// scale. Each CTA takes an equal contiguous share of the pass list (no
// partial rounds), 264 CTAs (two an SM), cold L2, median of 15 launches (tuning::Profiler).
//
// Stop 55 adds the gather tile's own stage: its four copies (the weights'
// box and scale chunk, the pass's 8-token box and its band's 2 KB scale
// chunk) taken by two consumer warps in turn, each holding its stage for
// `hold` cycles before freeing it, as a warpgroup holds its stage while it
// converts (~1900 cycles median at M = 32, docs/PERF.md stop 55). If the
// four-copy stage held that long streams at the gather tile's ~87 µs, the
// hold and the stages in flight are its pace; if it still streams near
// the two-copy pattern's ~56 µs (64-row boxes with their scale chunks,
// stop 53), the pace is elsewhere in the kernel. (Stop 56: 59-66 µs up to
// 2000 cycles, so holds up to 5000 too: where a consumer's time a stage
// becomes the stream's pace.)
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <vector>

#include "common/cuda_check.hpp"
#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/tensor_map.hpp"
#include "tuning/profiler.hpp"

namespace {

namespace ptx = fp4moe::ptx;

constexpr int kCtas = 264;
constexpr int kMaxStageBytes = 16384 + 2048;

/// One stage's loads: a 2-D box at (x bytes, row y), or (bulk) `bytes` from
/// byte offset `off` of the data; and a scale chunk at `scale_off` (< 0: none).
struct Pass {
  std::int64_t off;
  std::int64_t scale_off;
  std::int32_t x, y;
  std::int32_t token_row;     // the pass's 8-token box (gather stages; else unused)
  std::int64_t token_scale;  // its 2 KB scale chunk (gather stages)
};

struct Launch {
  const Pass* passes;
  std::int64_t count;
  const std::uint8_t* data;
  const std::uint8_t* scales;
  std::uint32_t box_bytes;  // bytes of the box or the bulk copy
  std::uint32_t scale_bytes;
  int stages;
  bool bulk;
  const std::uint8_t* token_scales;  // non-null: gather stages (four copies)
  std::uint32_t hold;                // cycles a consumer holds a full stage
};

// A stage: the box (or bulk block) at 0, its scale chunk at 16384; a gather
// stage's 8-token box at 8192 and their scale chunk at 10240.
constexpr int kTokenBoxOff = 8192, kTokenScaleOff = 10240, kTokenBoxBytes = 8 * 128;

__global__ void __launch_bounds__(96) stream(const __grid_constant__ CUtensorMap map,
                                             const __grid_constant__ CUtensorMap token_map, Launch l, std::uint32_t* sink) {
  extern __shared__ __align__(1024) std::uint8_t smem_raw[];
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem_raw);
  std::uint64_t* empty = full + 8;
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 128 + 1023) & ~std::uintptr_t(1023));
  if (threadIdx.x == 0) {
    for (int s = 0; s < l.stages; ++s) {
      ptx::mbar_init(&full[s], 1);
      ptx::mbar_init(&empty[s], 1);
    }
    ptx::fence_mbarrier_init();
  }
  __syncthreads();
  const std::int64_t begin = l.count * blockIdx.x / gridDim.x, end = l.count * (blockIdx.x + 1) / gridDim.x;
  if (threadIdx.x == 0) {
    ptx::prefetch_tensor_map(&map);
    // The next pass's description is read before the wait for its stage,
    // so its L2 round trip is not on the issue path.
    Pass next = begin < end ? l.passes[begin] : Pass{};
    for (std::int64_t i = begin; i < end; ++i) {
      const int k = int(i - begin), s = k % l.stages;
      const Pass p = next;
      if (i + 1 < end) next = l.passes[i + 1];
      ptx::mbar_wait(&empty[s], ((k / l.stages) & 1) ^ 1);
      std::uint8_t* st = smem + s * kMaxStageBytes;
      const bool gather = l.token_scales != nullptr;
      ptx::mbar_arrive_expect_tx(&full[s], l.box_bytes + (p.scale_off >= 0 ? l.scale_bytes : 0) +
                                               (gather ? kTokenBoxBytes + 2048 : 0));
      if (l.bulk) {
        ptx::bulk_load(st, l.data + p.off, l.box_bytes, &full[s]);
      } else {
        ptx::tma_load_2d(st, &map, p.x, p.y, &full[s]);
      }
      if (gather) ptx::tma_load_2d(st + kTokenBoxOff, &token_map, 0, p.token_row, &full[s]);
      if (p.scale_off >= 0) ptx::bulk_load(st + 16384, l.scales + p.scale_off, l.scale_bytes, &full[s]);
      if (gather) ptx::bulk_load(st + kTokenScaleOff, l.token_scales + p.token_scale, 2048, &full[s]);
    }
  } else if (threadIdx.x == 32 || (threadIdx.x == 64 && l.token_scales != nullptr)) {
    // One consumer warp, or two taking the stages in turn (gather stages).
    const int c = threadIdx.x / 32 - 1, consumers = l.token_scales != nullptr ? 2 : 1;
    std::uint32_t acc = 0;
    for (std::int64_t i = begin + c; i < end; i += consumers) {
      const int k = int(i - begin), s = k % l.stages;
      ptx::mbar_wait(&full[s], (k / l.stages) & 1);
      acc ^= ptx::lds32(ptx::smem_addr(smem + s * kMaxStageBytes));
      const long long t0 = clock64();
      while (clock64() - t0 < l.hold) {
      }
      ptx::mbar_arrive(&empty[s]);
    }
    if (acc == 0x9e3779b9u) sink[blockIdx.x] = acc;
  }
}

struct Pattern {
  const char* name;
  std::vector<Pass> passes;
  std::int64_t rows, row_bytes;  // the tensor the boxes read (2-D patterns)
  int box_rows;
  std::uint32_t box_bytes;
  bool bulk;
  bool scales;
  bool gather = false;  // the gather stage's four copies, two consumers, holds
};

}  // namespace

int main() {
  // moe-fc2's weights: N = 7168 rows of E·W = 65536 FP4 codes (32 KB), E =
  // 256 experts of W = 256 codes (128 bytes); the experts M = 32 tokens use
  // under uniform top-8 routing (one draw, fixed seed).
  constexpr int kN = 7168, kE = 256, kExpertBytes = 128;
  constexpr std::int64_t kMoeRowBytes = std::int64_t(kE) * kExpertBytes;
  std::mt19937 rng(12345);
  std::set<int> used;
  for (int m = 0; m < 32; ++m) {
    std::vector<int> ids(kE);
    for (int e = 0; e < kE; ++e) ids[e] = e;
    std::shuffle(ids.begin(), ids.end(), rng);
    used.insert(ids.begin(), ids.begin() + 8);
  }
  const std::vector<int> experts(used.begin(), used.end());
  // B's scales: per 128-row band and expert one 2 KB run (four 512-byte chunks).
  auto scale_off = [&](int row0, int e) { return (std::int64_t(row0 / 128) * kE + e) * 2048; };

  std::vector<Pattern> patterns;
  for (int with_scales = 0; with_scales < 2; ++with_scales) {
    for (int rows : {64, 128}) {
      Pattern p{rows == 64 ? "moe-fc2 M=32: 64-row boxes, rows 32 KB apart" : "moe-fc2 M=32: 128-row boxes, rows 32 KB apart",
                {}, kN, kMoeRowBytes, rows, std::uint32_t(rows * kExpertBytes), false, with_scales != 0};
      for (int t = 0; t < kN / rows; ++t)
        for (int e : experts) p.passes.push_back({0, with_scales ? scale_off(t * rows, e) : -1, e * kExpertBytes, t * rows});
      patterns.push_back(p);
    }
    Pattern b{"moe-fc2 M=32: one contiguous 8 KB block a (64-row tile, expert)", {}, 0, 0, 0, 64 * kExpertBytes, true,
              with_scales != 0};
    for (int t = 0; t < kN / 64; ++t)
      for (int e : experts) b.passes.push_back({(std::int64_t(t) * kE + e) * 64 * kExpertBytes, with_scales ? scale_off(t * 64, e) : -1, 0, 0});
    patterns.push_back(b);
    // Decode: G groups of [n, k/2 bytes] stacked, 128-row boxes, a tile's K blocks in turn.
    for (auto [g, n, rb] : {std::tuple{8, 7168, 1024}, std::tuple{32, 4096, 3584}}) {
      Pattern d{g == 8 ? "decode G8 x7168x2048: 128-row boxes, rows 1 KB apart" : "decode G32 x4096x7168: 128-row boxes, rows 3.5 KB apart",
                {}, std::int64_t(g) * n, rb, 128, 128 * 128, false, with_scales != 0};
      for (int t = 0; t < g * n / 128; ++t)
        for (int kb = 0; kb < rb / 128; ++kb)
          d.passes.push_back({0, with_scales ? (std::int64_t(t) * (rb / 128) + kb) * 2048 : -1, kb * 128, t * 128});
      patterns.push_back(d);
    }
  }

  // The gather tile's stage at M = 32: each (64-row tile, expert) pass also
  // loads its expert's 8 gathered token rows (a [E·8, 128-byte] tensor) and
  // a 2 KB scale chunk of theirs.
  {
    Pattern g{"moe-fc2 M=32 gather stage: 4 copies, 2 consumers", {}, kN, kMoeRowBytes, 64, 64 * kExpertBytes, false,
              true, true};
    for (int t = 0; t < kN / 64; ++t)
      for (int e : experts)
        g.passes.push_back({0, scale_off(t * 64, e), e * kExpertBytes, t * 64, e * 8, std::int64_t(e) * 2048});
    patterns.push_back(g);
  }

  std::int64_t data_bytes = 0, scale_bytes = 0;
  for (const Pattern& p : patterns) {
    data_bytes = std::max(data_bytes, p.bulk ? std::int64_t(kN / 64) * kE * 64 * kExpertBytes : p.rows * p.row_bytes);
    for (const Pass& q : p.passes) scale_bytes = std::max(scale_bytes, q.scale_off + 2048);
  }
  std::uint8_t *data = nullptr, *scales = nullptr;
  std::uint32_t* sink = nullptr;
  FP4MOE_CUDA_CHECK(cudaMalloc(&data, data_bytes));
  FP4MOE_CUDA_CHECK(cudaMalloc(&scales, scale_bytes));
  FP4MOE_CUDA_CHECK(cudaMalloc(&sink, 4096));
  FP4MOE_CUDA_CHECK(cudaMemset(data, 0x5a, data_bytes));  // (not zeros: the DRAM does not see a pattern it could skip)
  FP4MOE_CUDA_CHECK(cudaMemset(scales, 0x38, scale_bytes));
  std::uint8_t *tokens = nullptr, *token_scales = nullptr;
  FP4MOE_CUDA_CHECK(cudaMalloc(&tokens, std::int64_t(kE) * 8 * kExpertBytes));
  FP4MOE_CUDA_CHECK(cudaMalloc(&token_scales, std::int64_t(kE) * 2048));
  FP4MOE_CUDA_CHECK(cudaMemset(tokens, 0x5a, std::int64_t(kE) * 8 * kExpertBytes));
  FP4MOE_CUDA_CHECK(cudaMemset(token_scales, 0x38, std::int64_t(kE) * 2048));
  const CUtensorMap token_map = fp4moe::kernels::make_fp4_tensor_map(tokens, std::int64_t(kE) * 8, 2 * kExpertBytes, 8, 256);
  const int smem = 8 * kMaxStageBytes + 2048;
  FP4MOE_CUDA_CHECK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const fp4moe::tuning::Profiler profiler(nullptr);  // cold L2 before each timed launch
  const fp4moe::tuning::ProfileOptions timing{3, 15, true};
  std::printf("experts used by M = 32 tokens: %zu of %d\n", experts.size(), kE);
  std::printf("%-72s %6s %9s %9s %8s\n", "pattern", "stages", "MB", "us", "GB/s");
  for (const Pattern& p : patterns) {
    Pass* dev = nullptr;
    FP4MOE_CUDA_CHECK(cudaMalloc(&dev, p.passes.size() * sizeof(Pass)));
    FP4MOE_CUDA_CHECK(cudaMemcpy(dev, p.passes.data(), p.passes.size() * sizeof(Pass), cudaMemcpyHostToDevice));
    CUtensorMap map{};
    if (!p.bulk) map = fp4moe::kernels::make_fp4_tensor_map(data, p.rows, p.row_bytes * 2, p.box_rows, 256);
    for (int stages : {4, 6}) {
      for (std::uint32_t hold : p.gather ? std::vector<std::uint32_t>{0, 1000, 2000, 3000, 4000, 5000} : std::vector<std::uint32_t>{0}) {
        // Two CTAs an SM whatever the ring's depth (a third would fit beside
        // two 4-stage rings): each asks for 6 stages' worth.
        const int bytes_smem = 6 * kMaxStageBytes + 2048;
        Launch l{dev,   std::int64_t(p.passes.size()), data,  scales, p.box_bytes, 2048, stages, p.bulk,
                 p.gather ? token_scales : nullptr, hold};
        const double med =
            profiler.time([&](cudaStream_t s) { stream<<<kCtas, 96, bytes_smem, s>>>(map, token_map, l, sink); }, timing)
                .median_us;
        FP4MOE_CUDA_CHECK(cudaGetLastError());
        const double mb =
            double(p.passes.size()) * (p.box_bytes + (p.scales ? 2048 : 0) + (p.gather ? kTokenBoxBytes + 2048 : 0)) / 1e6;
        std::printf("%-60s%s %6d %9.1f %9.2f %8.0f", p.name, p.scales ? " +scales  " : "          ", stages, mb, med,
                    mb / med * 1e3);
        if (p.gather) std::printf("  (hold %u cycles)", hold);
        std::printf("\n");
      }
    }
    FP4MOE_CUDA_CHECK(cudaFree(dev));
  }
  FP4MOE_CUDA_CHECK(cudaFree(tokens));
  FP4MOE_CUDA_CHECK(cudaFree(token_scales));
  return 0;
}
