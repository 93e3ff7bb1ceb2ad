// tma_store_2d, bulk_commit_group and the bulk waits
// (kernels/sm90/ptx/memory.cuh) with the output map of
// make_bf16_output_tensor_map, as the GEMM epilogue uses them: one warp
// writes a 16-row x 64-column BF16 box into shared memory in the 128-byte
// swizzle (row r's 16-byte piece c at c ^ (r % 8)), one lane stores it at
// (x, y) of a 20 x 96 matrix whose rows are 104 elements apart. The box
// must land unswizzled, clipped at the matrix's last row and column, and
// nothing else may change (the padding columns 96..103 included).
//
// The columns are a multiple of 8 (16 bytes), as the GEMM requires for
// TMA stores: with 100 columns an H200 wrote columns 100..103 too (the
// whole 16-byte piece holding the last column), past the matrix's rows.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/tensor_map.hpp"
#include "support/test_support.hpp"

namespace fp4moe::ptx {
namespace {

constexpr int kRows = 20, kCols = 96, kLd = 104, kBoxRows = 16, kBoxCols = 64;

__host__ __device__ constexpr std::uint16_t payload(int r, int c) { return static_cast<std::uint16_t>(0x4000 + r * kBoxCols + c); }

__global__ void tma_store_kernel(const __grid_constant__ CUtensorMap map, int x, int y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ __align__(1024) std::uint16_t box[kBoxRows * kBoxCols];
  const std::uint32_t base = smem_addr(box);
  for (int e = threadIdx.x; e < kBoxRows * kBoxCols; e += 32) {
    const int r = e / kBoxCols, c = e % kBoxCols, piece = c / 8;
    const std::uint32_t addr = base + r * 128 + ((piece ^ (r % 8)) << 4) + (c % 8) * 2;
    asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(addr), "h"(payload(r, c)));
  }
  fence_proxy_async_smem();
  __syncwarp();
  if (threadIdx.x == 0) {
    tma_store_2d(&map, base, x, y);
    bulk_commit_group();
    bulk_wait_read<0>();
    bulk_wait<0>();
  }
#endif
}

TEST(TmaStore, SwizzledBoxLandsAtItsCoordinatesClippedAtTheEdges) {
  FP4MOE_REQUIRE_GPU();
  constexpr std::uint16_t kPoison = 0xdead;
  for (const auto& [x, y] : {std::pair{0, 0}, std::pair{48, 8}}) {
    test::DeviceBuffer<std::uint16_t> d(kRows * kLd);
    d.upload(std::vector<std::uint16_t>(kRows * kLd, kPoison));
    const CUtensorMap map = kernels::make_bf16_output_tensor_map(d.get(), kRows, kCols, kLd, kBoxRows);
    tma_store_kernel<<<1, 32>>>(map, x, y);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<std::uint16_t> got = d.download();
    int written = 0;
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kLd; ++c) {
        const bool inside = r >= y && r < y + kBoxRows && c >= x && c < x + kBoxCols && c < kCols;
        const std::uint16_t want = inside ? payload(r - y, c - x) : kPoison;
        ASSERT_EQ(got[r * kLd + c], want) << "box at (" << x << ", " << y << "), row " << r << ", column " << c;
        written += inside;
      }
    EXPECT_EQ(written, x == 0 ? kBoxRows * kBoxCols : (kRows - y) * (kCols - x));
  }
}

}  // namespace
}  // namespace fp4moe::ptx
