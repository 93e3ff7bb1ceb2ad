// BF16 → NVFP4 through a ring of shared-memory stages filled by TMA.
//
// Why a ring: the register-streaming quantizer (quantize_gpu.cu) kept its
// bytes in flight in registers, one 64-byte task ahead per thread, and on an
// H200 its warps waited on global loads with too few instructions between
// them (ncu: DRAM 75% of peak, issue slots 68%;
// docs/PERF.md, stop 12). Here one producer thread keeps up to kStages tiles
// of 16 KB in flight per CTA with tensor-map copies, which cost the
// converting warps no registers; they read their 64 bytes from shared memory,
// release the stage at once, and convert while later tiles stream in.
//
// Geometry. A stage (one tile) is four TMA boxes of 32 rows × 64 BF16
// columns: 128-byte box rows, written with the 128-byte swizzle. Tiled scale
// layout: the boxes are rows +0, +32, +64, +96 of a 64-column strip, so an
// NVFP4 tile is exactly one 128x4 scale tile. Row-major scales: the boxes are
// columns +0, +64, +128, +192 of 32 rows.
//
// A team of 256 threads takes a stage, one 64-byte task (32 elements: two
// blocks) per thread: warp w, lane l owns box q = l / 8, box row 4w + (l % 8) / 2, columns 32h .. 32h + 31 for h = l % 2.
// So each quarter-warp reads 4 consecutive box rows × 2 halves, whose 16-byte
// chunks fall in 8 different bank groups under the swizzle (no bank
// conflicts), and a warp's scale stores are whole 16-byte pieces:
// rows r, r+32, r+64, r+96 of a 128x4 tile (tiled) or 16 consecutive bytes of
// a row (row-major). The teams of a CTA take the stages in turn.
//
// MXFP4 stays on the register-streaming kernel: there a 64-column tile holds
// half of each 4-column group of the 128x4 scale layout, and this kernel ran
// at 75-76% of copy bandwidth on the 4 GiB row of an H100 against the
// register kernel's 93% (docs/PERF.md, stop 14).
#include <cuda.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <array>
#include <atomic>

#include "common/cuda_check.hpp"
#include "common/device_info.hpp"
#include "common/fast_divmod.hpp"
#include "common/launch_kernel.cuh"
#include "format/quantize_task.cuh"
#include "format/quantize_tma.hpp"
#include "kernels/sm90/tensor_map.hpp"

namespace fp4moe::detail {
namespace {

constexpr int kBoxRows = 32, kBoxCols = 64, kBoxes = 4;
constexpr int kBoxBytes = kBoxRows * kBoxCols * 2;  // 4 KB
constexpr int kStageBytes = kBoxes * kBoxBytes;     // 16 KB
constexpr int kTeamThreads = kBoxes * kBoxRows * 2;  // one task per thread per stage
static_assert(kTeamThreads == 256);

/// Teams and ring stages per CTA (one CTA per SM). A third team (24
/// converting warps) gained 1-3% of copy bandwidth on an H200 over two
/// (docs/PERF.md, stop 14).
constexpr int kTeams = 3;
constexpr int kStages = 12;
static_assert(kStages % kTeams == 0, "a ring slot always belongs to the same team");
constexpr int kThreads = kTeams * kTeamThreads + 32;  // + the producer warp
constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + alignment slack for the swizzle

/// Tiles in the order the CTAs take them: columns fastest, then rows, then
/// groups, so the CTAs of one wave stream neighbouring columns of the same
/// rows.
template <bool kTiled>
struct TileOrder {
  static constexpr std::uint32_t kRows = kTiled ? kBoxes * kBoxRows : kBoxRows;
  static constexpr std::uint32_t kCols = kTiled ? kBoxCols : kBoxes * kBoxCols;
  FastDivmod col_tiles, row_tiles;
  std::uint32_t n_tiles;

  __device__ void locate(std::uint32_t tile, std::uint32_t& group, std::uint32_t& row0, std::uint32_t& col0) const {
    std::uint32_t rest, ct, rt;
    col_tiles.divmod(tile, rest, ct);
    row_tiles.divmod(rest, group, rt);
    row0 = rt * kRows;
    col0 = ct * kCols;
  }
  /// Where box q of a tile starts, relative to the tile.
  __device__ static std::uint32_t box_row(int q) { return kTiled ? q * kBoxRows : 0; }
  __device__ static std::uint32_t box_col(int q) { return kTiled ? 0 : q * kBoxCols; }
};

struct MatrixShape {
  std::uint32_t rows, cols, scols;
  bool narrow_rows;               // an odd number of blocks per row (see quantize_task)
  std::uint64_t band_bytes;       // tiled: scale bytes of one 128-row band
  std::uint64_t scale_group_bytes;
};

template <bool kTiled>
__global__ void __launch_bounds__(kThreads, 1) quantize_nvfp4_tma_kernel(
    const __grid_constant__ CUtensorMap src_map, std::uint8_t* __restrict__ data, std::uint8_t* __restrict__ scales,
    const float* __restrict__ g_source, bool g_source_is_amax, float* __restrict__ decode_out, std::uint32_t groups,
    TileOrder<kTiled> order, MatrixShape shape) {
  using In = __nv_bfloat16;
  constexpr int kBlock = 16;
  static_assert(blocks_per_task<In, true>() == 2);
  using Task = InputBlock<In, 32>;

  extern __shared__ std::uint8_t smem_raw[];
  // The 128-byte swizzle repeats every 1024 bytes and TMA applies it from
  // address bits, so each box must start 1024-aligned.
  std::uint8_t* ring = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  __shared__ std::uint64_t full[kStages], empty[kStages];
  __shared__ float2 reciprocals[128];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  constexpr int kProducerWarp = kTeams * kTeamThreads / 32;
  if (warp == kProducerWarp && lane == 0) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(&full[s], 1);
      ptx::mbar_init(&empty[s], kTeamThreads);
    }
    ptx::fence_mbarrier_init();
  }
  fill_reciprocal_table(reciprocals);
  __syncthreads();

  if (warp == kProducerWarp) {
    if (lane != 0) return;
    ptx::prefetch_tensor_map(&src_map);
    for (std::uint32_t k = 0;; ++k) {
      const std::uint32_t tile = blockIdx.x + k * gridDim.x;
      if (tile >= order.n_tiles) break;
      const std::uint32_t slot = k % kStages;
      if (k >= kStages) ptx::mbar_wait(&empty[slot], (k / kStages - 1) & 1);
      ptx::mbar_arrive_expect_tx(&full[slot], kStageBytes);  // boxes past the matrix arrive zero-filled, in full
      std::uint32_t group, row0, col0;
      order.locate(tile, group, row0, col0);
#pragma unroll
      for (int q = 0; q < kBoxes; ++q)
        ptx::tma_load_3d(ring + slot * kStageBytes + q * kBoxBytes, &src_map, int(col0 + order.box_col(q)),
                         int(row0 + order.box_row(q)), int(group), &full[slot]);
    }
    return;
  }

  // With a caller-given g the decode scales can be written now; in amax mode
  // g_source *is* the output slot, so a later kernel writes them instead.
  if (!g_source_is_amax && blockIdx.x == 0)
    for (std::uint32_t g = threadIdx.x; g < groups; g += kTeams * kTeamThreads) decode_out[g] = 1.0f / g_source[g];

  // g changes only with the group: it is looked up again only then.
  std::uint32_t g_group = ~0u;
  float g = 1.0f;
  const int team = warp / 8, w = warp % 8;
  const int q = lane / 8, box_row = 4 * w + (lane % 8) / 2, half = lane % 2;
  const std::uint32_t task_smem = ptx::smem_addr(ring) + q * kBoxBytes + box_row * 128;
  for (std::uint32_t k = team;; k += kTeams) {
    const std::uint32_t tile = blockIdx.x + k * gridDim.x;
    if (tile >= order.n_tiles) break;
    const std::uint32_t slot = k % kStages;
    ptx::mbar_wait(&full[slot], (k / kStages) & 1);
    Task in;
    in.load_swizzled(task_smem + slot * kStageBytes, box_row, 4 * half);
    // The slot can refill once the task is in registers: a plain arrive here
    // was issued with the four loads still in flight, and a refill can then
    // land before them (tests/gpu/kernels/stage_release_test.cu). shape.rows
    // is never 0 here (validation), which the compiler cannot know.
    ptx::mbar_arrive_after(&empty[slot], in.loaded_token(), shape.rows == 0);

    std::uint32_t group, row0, col0;
    order.locate(tile, group, row0, col0);
    const std::uint32_t row = row0 + order.box_row(q) + box_row, col = col0 + order.box_col(q) + 32 * half;
    if (row >= shape.rows || col >= shape.cols) continue;
    // cols ≡ 16 (mod 32): the last task of a row has one block.
    const int valid = col + 16 >= shape.cols ? 1 : 2;
    if (group != g_group) {
      g = group_encode_scale(g_source, g_source_is_amax, group);
      g_group = group;
    }
    const std::uint32_t scol = col / kBlock;
    const std::uint64_t data_at = ((std::uint64_t(group) * shape.rows + row) * shape.cols + col) / 2;
    std::uint64_t scale_at = group * shape.scale_group_bytes;
    if constexpr (kTiled) {
      // tiled128x4_offset in unsigned arithmetic (no signed-division fixups on
      // this per-task path); in-group offsets fit 32 bits: validation bounds a
      // group's padded scales below 2^32 bytes.
      scale_at += (row / 128) * shape.band_bytes + (scol / 4) * 512 + (row % 32) * 16 + ((row % 128) / 32) * 4 + scol % 4;
    } else {
      scale_at += std::uint64_t(row) * shape.scols + scol;
    }
    quantize_task<In, true>(in, valid, shape.narrow_rows, g, reciprocals, data + data_at, scales + scale_at);
  }
}

template <bool kTiled>
void launch_t(const MatrixView& src, const Fp4Tensor& dst, const float* g_source, bool g_source_is_amax,
              cudaStream_t stream, std::int64_t max_tiles_per_launch) {
  using Order = TileOrder<kTiled>;
  const std::int64_t col_tiles = ceil_div(dst.cols, std::int64_t(Order::kCols));
  const std::int64_t row_tiles = ceil_div(dst.rows, std::int64_t(Order::kRows));
  // Tiles of one group: at most rows·cols/16, below 2^31 by the quantizer's
  // validation (rows·cols/block < 2^31). A stack with more tiles in all is
  // quantized a slice of groups per launch, so tile indices stay 32-bit.
  const std::int64_t group_tiles = col_tiles * row_tiles;
  const std::int64_t per_launch = std::max<std::int64_t>(1, max_tiles_per_launch / group_tiles);
  MatrixShape shape;
  shape.rows = static_cast<std::uint32_t>(dst.rows);
  shape.cols = static_cast<std::uint32_t>(dst.cols);
  shape.scols = static_cast<std::uint32_t>(dst.scale_cols());
  shape.narrow_rows = dst.scale_cols() % 2 != 0;
  shape.band_bytes = static_cast<std::uint64_t>(round_up(dst.scale_cols(), 4) * 128);
  shape.scale_group_bytes = static_cast<std::uint64_t>(dst.scale_bytes_per_group());
  const auto kernel = quantize_nvfp4_tma_kernel<kTiled>;
  static std::array<std::atomic<bool>, 64> allowed{};
  allow_dynamic_smem(kernel, kSmemBytes, allowed);
  // One CTA per SM: the ring alone takes more than half of an SM's shared memory.
  static_assert(2 * kSmemBytes > 228 * 1024);

  for (std::int64_t g0 = 0; g0 < dst.groups; g0 += per_launch) {
    const std::int64_t groups = std::min(per_launch, dst.groups - g0);
    Order order;
    order.col_tiles = FastDivmod(static_cast<std::uint32_t>(col_tiles));
    order.row_tiles = FastDivmod(static_cast<std::uint32_t>(row_tiles));
    order.n_tiles = static_cast<std::uint32_t>(group_tiles * groups);
    // A tiled-layout tile reads 128 bytes of each of its rows; the next 128
    // bytes belong to another CTA's tile. With L2 fetching 256 bytes per
    // miss, an H100 read 7.6% more than the input from DRAM on the 4 GiB row
    // (87% of copy bandwidth; 91% with 128-byte fetches). Row-major tiles read
    // 512 bytes per row, where 256-byte fetches are whole.
    const CUtensorMap map = kernels::make_bf16_rows_tensor_map(
        static_cast<const std::uint8_t*>(src.data) + g0 * dst.rows * dst.cols * 2, groups, dst.rows, dst.cols,
        kBoxRows, kTiled ? 128 : 256);
    const std::int64_t grid = std::min<std::int64_t>(order.n_tiles, current_device_sm_count());
    launch_kernel(kernel, static_cast<unsigned>(grid), kThreads, kSmemBytes, stream,
        map, static_cast<std::uint8_t*>(dst.data) + g0 * dst.rows * (dst.cols / 2),
        static_cast<std::uint8_t*>(dst.scales) + g0 * dst.scale_bytes_per_group(), g_source + g0, g_source_is_amax,
        dst.global_scale + g0, static_cast<std::uint32_t>(groups), order, shape);
  }
}

}  // namespace

void launch_quantize_nvfp4_bf16_tma(const MatrixView& src, const Fp4Tensor& dst, const float* g_source,
                                    bool g_source_is_amax, cudaStream_t stream, std::int64_t max_tiles_per_launch) {
  if (dst.scale_layout == ScaleLayout::kTiled128x4) {
    launch_t<true>(src, dst, g_source, g_source_is_amax, stream, max_tiles_per_launch);
  } else {
    launch_t<false>(src, dst, g_source, g_source_is_amax, stream, max_tiles_per_launch);
  }
}

}  // namespace fp4moe::detail
