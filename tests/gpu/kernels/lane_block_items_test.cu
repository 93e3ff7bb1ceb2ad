// The lane-block K order (kernels/sm90/fp4_dequant.cuh, gemm_config.cuh
// kLaneBlocks): the order itself, and the token items that write it
// (operand_items.cuh: store_half_chunk_lane_blocks, store_chunk_lane_blocks,
// store_row_lane_blocks) into a 128B-swizzled BF16 buffer, read back the way
// wgmma reads it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "fp4moe/codec.hpp"
#include "kernels/sm90/operand_items.cuh"
#include "support/test_support.hpp"

namespace fp4moe::kernels {
namespace {

TEST(LaneBlockLayout, LogicalKIsABijectionWithOneBlockALane) {
  bool seen[64] = {};
  for (int r = 0; r < 64; ++r) {
    const int l = lane_block_logical_k(r);
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 64);
    EXPECT_FALSE(seen[l]) << "real k " << r;
    seen[l] = true;
    // Quad lane j holds columns 2j, 2j + 1, 2j + 8, 2j + 9 of every k16
    // step: all of them from block j (real k 16j..16j+15).
    EXPECT_EQ(((l % 16) % 8) / 2, r / 16) << "real k " << r;
  }
  // The A fragment pair of columns 8w + 2j, 8w + 2j + 1 of step t is
  // elements (t, t + 4) of word 2j + w: raw pair t of that word.
  for (int j = 0; j < 4; ++j)
    for (int w = 0; w < 2; ++w)
      for (int t = 0; t < 4; ++t) {
        EXPECT_EQ(lane_block_logical_k(8 * (2 * j + w) + t), 16 * t + 8 * w + 2 * j);
        EXPECT_EQ(lane_block_logical_k(8 * (2 * j + w) + t + 4), 16 * t + 8 * w + 2 * j + 1);
      }
}

/// What OperandItems reads of a tile configuration for these stores.
template <bool kNv>
struct ItemsCfg {
  static constexpr bool kNvfp4 = kNv;
};

constexpr int kRows = 16;  // rows of one sub-step's BF16 buffer (every row % 8)

/// Which token store writes the buffer: half chunks (one thread per row,
/// chunk, half), whole chunks (one per row, chunk) or whole rows (one per row).
enum class StoreItem { kHalfChunk, kChunk, kRow };
constexpr int threads_per_row(StoreItem m) { return m == StoreItem::kHalfChunk ? 4 : m == StoreItem::kChunk ? 2 : 1; }

/// Scale codes a row's 64-K sub-step: four 16-K blocks (NVFP4) or two
/// 32-K blocks (MXFP4, one a chunk).
constexpr int codes_per_row(bool nv) { return nv ? 4 : 2; }

/// Row n's sub-step (words[8n..8n+7], block b's scale code
/// codes[codes_per_row * n + b]) written by kMode's items into a shared
/// buffer, copied out.
template <bool kNv, StoreItem kMode>
__global__ void lane_block_store_kernel(const std::uint32_t* words, const std::uint8_t* codes, std::uint8_t* out) {
  __shared__ __align__(1024) std::uint8_t buf[kRows * 128];
  const int i = threadIdx.x;
  // Poison (BF16 NaN): a slot no store reaches fails the check instead of
  // showing what an earlier launch left in shared memory.
  for (int b = threadIdx.x; b < kRows * 128; b += blockDim.x) buf[b] = 0xff;
  __syncthreads();
  const std::uint32_t buf_addr = ptx::smem_addr(buf);
  using Items = OperandItems<ItemsCfg<kNv>>;
  constexpr int kCodes = codes_per_row(kNv);
  if constexpr (kMode == StoreItem::kRow) {
    static_assert(kNv, "whole-row items are NVFP4's (operand_items.cuh load_row)");
    const std::uint32_t* w = words + 8 * i;
    RowItem it;
    it.lo = make_uint4(w[0], w[1], w[2], w[3]);
    it.hi = make_uint4(w[4], w[5], w[6], w[7]);
    for (int b = 0; b < 4; ++b) it.f[b] = scale_table_entry<true>(codes[4 * i + b]);
    ItemPlace pl{};
    pl.bf16 = i * 128 + (i % 8) * 16;  // piece 0 of row i (OperandItems::place, chunk 0)
    Items::store_row_lane_blocks(it, pl, buf_addr);
    __syncthreads();
    for (int b = threadIdx.x; b < kRows * 128; b += blockDim.x) out[b] = buf[b];
    return;
  }
  constexpr bool kHalves = kMode == StoreItem::kHalfChunk;
  const int n = kHalves ? i / 4 : i / 2, cc = kHalves ? (i / 2) % 2 : i % 2, h = kHalves ? i % 2 : 0;
  ItemPlace pl{};
  pl.bf16 = n * 128 + ((4 * cc) ^ (n % 8)) * 16;
  pl.k0 = 32 * cc;
  pl.part = h;
  const std::uint32_t* w = words + 8 * n + 4 * cc;
  // The chunk's codes: NVFP4 two 16-K blocks, MXFP4 one 32-K block (both
  // factors the same, as OperandItems::load and load_words give them).
  const std::uint8_t* c = codes + kCodes * n + (kNv ? 2 * cc : cc);
  Item it;
  if constexpr (kHalves) {
    it.raw = make_uint4(w[2 * h], w[2 * h + 1], 0u, 0u);
    it.f0 = it.f1 = scale_table_entry<kNv>(c[kNv ? h : 0]);
    Items::store_half_chunk_lane_blocks(it, pl, buf_addr);
  } else {
    it.raw = make_uint4(w[0], w[1], w[2], w[3]);
    it.f0 = scale_table_entry<kNv>(c[0]);
    it.f1 = scale_table_entry<kNv>(c[kNv ? 1 : 0]);
    Items::store_chunk_lane_blocks(it, pl, buf_addr);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kRows * 128; b += blockDim.x) out[b] = buf[b];
}

template <bool kNv, StoreItem kMode>
void check_lane_block_stores() {
  constexpr int kCodes = codes_per_row(kNv);
  test::Rng rng;
  for (int iter = 0; iter < 8; ++iter) {
    std::vector<std::uint32_t> words(8 * kRows);
    for (auto& x : words) x = static_cast<std::uint32_t>(rng.integer(0, 0xffffffffll));
    // NVFP4: scales 2^-3..2^3 times 1, 1.25, 1.5 or 1.75 (normal E4M3
    // codes); MXFP4: 2^-7..2^7. Either way a block placed in the wrong slot
    // shows as a wrong value.
    std::vector<std::uint8_t> codes(kCodes * kRows);
    for (auto& c : codes)
      c = kNv ? static_cast<std::uint8_t>(((rng.integer(4, 10)) << 3) | (rng.integer(0, 3) << 1))
              : static_cast<std::uint8_t>(rng.integer(120, 134));
    test::DeviceBuffer<std::uint32_t> dw(words.size());
    test::DeviceBuffer<std::uint8_t> dc(codes.size()), dout(kRows * 128);
    dw.upload(words);
    dc.upload(codes);
    lane_block_store_kernel<kNv, kMode><<<1, kRows * threads_per_row(kMode)>>>(dw.get(), dc.get(), dout.get());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<std::uint8_t> got = dout.download();
    for (int n = 0; n < kRows; ++n)
      for (int r = 0; r < 64; ++r) {
        // Logical column l of row n: 16-byte piece l / 8, swizzled by n % 8.
        const int l = lane_block_logical_k(r);
        const int byte = n * 128 + (((l / 8) ^ (n % 8)) * 16) + 2 * (l % 8);
        const std::uint16_t bits = static_cast<std::uint16_t>(got[byte] | (got[byte + 1] << 8));
        const unsigned code = (words[8 * n + r / 8] >> (4 * (r % 8))) & 0xf;
        // NVFP4 items carry 2^-9 (the epilogue's 2^18 undoes both
        // operands'); MXFP4's are exact.
        const double value = double(decode_e2m1(code));
        const double want = kNv ? value * double(decode_e4m3(codes[4 * n + r / 16])) * std::ldexp(1.0, -9)
                                : value * double(decode_ue8m0(codes[2 * n + r / 32]));
        ASSERT_EQ(double(bf16_bits_to_float(bits)), want) << "row " << n << " real k " << r << " (logical " << l << ")";
      }
  }
}

TEST(LaneBlockItems, HalfChunkStoresPutEveryRealKAtItsLaneBlockSlot) {
  FP4MOE_REQUIRE_GPU();
  check_lane_block_stores<true, StoreItem::kHalfChunk>();
}

TEST(LaneBlockItems, ChunkStoresPutEveryRealKAtItsLaneBlockSlot) {
  FP4MOE_REQUIRE_GPU();
  check_lane_block_stores<true, StoreItem::kChunk>();
}

TEST(LaneBlockItems, RowStoresPutEveryRealKAtItsLaneBlockSlot) {
  FP4MOE_REQUIRE_GPU();
  check_lane_block_stores<true, StoreItem::kRow>();
}

// MXFP4's 8-token gather tile takes the lane-block order with these items
// (gemm_config.cuh kLaneBlocks): one 32-K block a chunk, so both blocks of
// a lane-block pair (2cc, 2cc + 1) share chunk cc's factor.
TEST(LaneBlockItems, Mxfp4HalfChunkStoresPutEveryRealKAtItsLaneBlockSlot) {
  FP4MOE_REQUIRE_GPU();
  check_lane_block_stores<false, StoreItem::kHalfChunk>();
}

TEST(LaneBlockItems, Mxfp4ChunkStoresPutEveryRealKAtItsLaneBlockSlot) {
  FP4MOE_REQUIRE_GPU();
  check_lane_block_stores<false, StoreItem::kChunk>();
}

}  // namespace
}  // namespace fp4moe::kernels
