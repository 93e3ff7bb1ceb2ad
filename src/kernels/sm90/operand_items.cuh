// Dequantisation items: how a tile of FP4 rows in a stage becomes the BF16
// buffer wgmma reads (128 bytes = 64 K a row, the 128B swizzle), shared by
// the consumer warpgroups of fp4_gemm_kernel.cuh (X without swap-AB, and Y).
//
// `rows` rows × 2 chunks (32 k each) of a 64-K sub-step are split over
// `threads` threads: item i is chunk (i / split) / rows of row
// (i / split) % rows, or 1 / split of it (a small tile is cut into 16-byte
// pieces so every thread has work). Which items a thread converts never
// changes, so where each lies is worked out once per tile (place); per
// sub-step only compile-time offsets are added. In two phases: an item's FP4
// chunk, scale bytes and scale factors are read (load), later converted and
// stored (store), so a thread has several items' shared-memory loads in
// flight together and no branch between them.
#pragma once

#include <cstdint>

#include "kernels/sm90/fp4_dequant.cuh"
#include "kernels/sm90/ptx/memory.cuh"

namespace fp4moe::kernels {

/// Byte offset of 16-byte chunk c of row r in a TMA tile with the swizzle that
/// matches its row size (32/64/128B): address bits [4, 4+b) ^= bits [7, 7+b).
template <int kRowBytes, int kBits>
__device__ __forceinline__ std::uint32_t swizzled(std::uint32_t r, std::uint32_t c) {
  const std::uint32_t off = r * kRowBytes + c * 16;
  return off ^ (((off >> 7) & ((1u << kBits) - 1)) << 4);
}

/// Byte offset of scale (row r of a 128-row band, column c of a 4-column
/// chunk) inside a 512-byte chunk of the 128x4 layout.
__device__ __forceinline__ std::uint32_t scale_in_chunk(std::uint32_t r, std::uint32_t c) {
  return (r % 32) * 16 + (r / 32) * 4 + c;
}

/// 1 / split of a chunk per item: whole chunks where there are enough of
/// them, else pieces, down to half a piece.
constexpr int item_split(int rows, int threads) {
  return 2 * rows >= threads ? 1 : (16 * rows <= threads ? 8 : 8 * rows <= threads ? 4 : threads / (2 * rows));
}
/// Items a thread converts per sub-step.
constexpr int items_per_thread(int rows, int threads, int split) { return (2 * rows * split + threads - 1) / threads; }

struct ItemPlace {
  std::uint32_t fp4;    ///< its FP4 chunk from a stage's base at sub-step 0; sub-step s: ^ (s << 5)
  std::uint32_t scale;  ///< its (first) scale byte from a stage's base at sub-step 0
  std::uint32_t bf16;   ///< its first 16-byte piece from a BF16 buffer's base; piece q: ^ (q << 4)
  std::int32_t k0;      ///< its chunk's first k in a stage at sub-step 0: 0 or 32
  std::int32_t part;    ///< which 1 / split of the chunk
  std::int32_t row;     ///< its row in the tile (the FP8 route's E4M3 rows and scale factors)
};

struct Item {
  uint4 raw;
  std::uint32_t f0, f1;  ///< scale table entries of the chunk's 16-blocks (NVFP4) or its 32-block (both, MXFP4)
};

/// A whole row's 64-K sub-step, NVFP4 (load_row): its two chunks and the
/// scale table entries of its four blocks.
struct RowItem {
  uint4 lo, hi;        ///< chunk 2s (words 0-3) and chunk 2s + 1 (words 4-7)
  std::uint32_t f[4];  ///< block b: words 2b, 2b + 1
};

template <class Cfg>
struct OperandItems {
  static constexpr bool kNv = Cfg::kNvfp4;
  std::uint32_t table_base;  ///< the per-CTA scale table (one 32-bit factor per code)

  /// fp4_off / scale_off: the tile's FP4 rows / scale chunks in a stage.
  __device__ static ItemPlace place(std::uint32_t fp4_off, std::uint32_t scale_off, int scale_row0, int rows, int row0,
                                    int split, int item) {
    const int rc = item / split, cc = rc / rows;
    int t = rc % rows;
    // Whole chunks of 128-row blocks: the four quarter-warps of a warp take
    // rows 32 apart, each 8 consecutive rows (lane l of warp slot w gets row
    // 32(l / 8) + 8w + l % 8). The 128x4 layout puts the scale bytes of rows
    // r, r + 32, r + 64, r + 96 in one 16-byte line, so 32 consecutive rows
    // read their codes from 8 banks, four times each; spread this way they
    // read from 32. The 16-byte loads and stores, one quarter-warp at a
    // time, still see 8 consecutive rows.
    if (split == 1 && rows % 128 == 0) t = (t & ~127) | (((t & 31) >> 3) << 5) | (((t >> 5) & 3) << 3) | (t & 7);
    const int n = row0 + t;
    const int band = (scale_row0 + n) / 128, r = (scale_row0 + n) % 128;
    ItemPlace pl;
    // Chunk 2s + cc of a row is chunk cc with bit 5 of the offset flipped:
    // the swizzle XORs the chunk index with row bits only.
    pl.fp4 = fp4_off + swizzled<Cfg::kRowBytes, Cfg::kSwizzleBits>(n, cc);
    // NVFP4: scale columns 4s + 2cc, 4s + 2cc + 1 (one 16-bit load, chunk s);
    // MXFP4: column 2s + cc (chunk s / 2, column 2(s % 2) + cc).
    pl.scale = scale_off + band * 512 * Cfg::kChunksPerStage + scale_in_chunk(r, kNv ? 2 * cc : cc);
    pl.bf16 = n * 128 + ((4 * cc) ^ (n % 8)) * 16;  // the 128B swizzle of the BF16 row
    pl.k0 = 32 * cc;
    pl.part = item % split;
    pl.row = n;
    return pl;
  }

  /// Words 2h, 2h + 1 of the item's chunk (h = pl.part % 2), in one scale
  /// block, as raw.x, raw.y: half a piece (split 8) or half a chunk
  /// (store_half_chunk).
  __device__ Item load_words(const ItemPlace& pl, std::uint32_t stage, int sub) const {
    Item it;
    const int h = pl.part % 2;
    const uint2 w = ptx::lds64(((stage + pl.fp4) ^ (sub << 5)) + 8 * h);
    it.raw = make_uint4(w.x, w.y, 0u, 0u);
    const std::uint32_t code_addr = kNv ? stage + pl.scale + sub * 512 : stage + pl.scale + (sub / 2) * 512 + 2 * (sub % 2);
    const std::uint32_t code = ptx::lds8(code_addr + (kNv ? h : 0));
    it.f0 = it.f1 = ptx::lds32(table_base + 4 * code);
    return it;
  }

  /// Half a chunk (load_words of an item of split 2, h = pl.part): half of
  /// each of its four pieces, every pair index known at compile time.
  __device__ static void store_half_chunk(const Item& it, const ItemPlace& pl, std::uint32_t bf16_buf) {
    const PairScale s = pair_scale_from_table<kNv>(it.f0);
    std::uint32_t p0[4], p1[4];
    scaled_pairs<kNv>(it.raw.x, s, p0);
    scaled_pairs<kNv>(it.raw.y, s, p1);
    const std::uint32_t dst = bf16_buf + pl.bf16 + 8 * pl.part;  // (bit 3: the XOR below keeps to bits 4-5)
#pragma unroll
    for (int q = 0; q < 4; ++q) ptx::sts64(dst ^ (q << 4), make_uint2(p0[q], p1[q]));
  }

  /// store_half_chunk in the lane-block order (fp4_dequant.cuh): the item's
  /// block j = 2cc + h (words 2h, 2h + 1 of chunk cc) fills bytes 4j..4j+3
  /// of pieces 2t + w, one 4-byte store each.
  __device__ static void store_half_chunk_lane_blocks(const Item& it, const ItemPlace& pl, std::uint32_t bf16_buf) {
    const PairScale s = pair_scale_from_table<kNv>(it.f0);
    std::uint32_t p[2][4];
    scaled_pairs<kNv>(it.raw.x, s, p[0]);
    scaled_pairs<kNv>(it.raw.y, s, p[1]);
    const int cc = pl.k0 / 32;
    // Piece 0 of the row (pl.bf16 names piece 4cc) plus block j's bytes;
    // piece P at row ^ (P << 4). (Through ptx::unhoisted: ptxas otherwise
    // keeps all eight addresses across the stage loop; the 32-token
    // four-warpgroup tile spilled them, seven local loads a stage, when it
    // took this order, docs/PERF.md stop 51.)
    const std::uint32_t row = ptx::unhoisted(bf16_buf + (pl.bf16 ^ std::uint32_t(cc << 6)) + 4 * (2 * cc + pl.part));
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int w = 0; w < 2; ++w) ptx::sts32(row ^ ((2 * t + w) << 4), p[w][t]);
  }

  /// A whole chunk cc in the lane-block order: its blocks 2cc (words 0, 1)
  /// and 2cc + 1 (words 2, 3) fill bytes 8cc..8cc+7 of pieces 2t + w, one
  /// 8-byte store each.
  __device__ static void store_chunk_lane_blocks(const Item& it, const ItemPlace& pl, std::uint32_t bf16_buf) {
    const PairScale s0 = pair_scale_from_table<kNv>(it.f0), s1 = pair_scale_from_table<kNv>(it.f1);
    std::uint32_t p[4][4];  // [word][pair]
    scaled_pairs<kNv>(it.raw.x, s0, p[0]);
    scaled_pairs<kNv>(it.raw.y, s0, p[1]);
    scaled_pairs<kNv>(it.raw.z, s1, p[2]);
    scaled_pairs<kNv>(it.raw.w, s1, p[3]);
    const int cc = pl.k0 / 32;
    const std::uint32_t row = ptx::unhoisted(bf16_buf + (pl.bf16 ^ std::uint32_t(cc << 6)) + 8 * cc);
#pragma unroll
    for (int t = 0; t < 4; ++t)
#pragma unroll
      for (int w = 0; w < 2; ++w) ptx::sts64(row ^ ((2 * t + w) << 4), make_uint2(p[w][t], p[2 + w][t]));
  }

  /// A whole row's sub-step (gemm_config.cuh kYRowItems), `pl` the place of
  /// the row's chunk 0 (place, split 1) moved to its sub-step (at_sub): both
  /// chunks (one 16-byte load each) and the sub-step's four codes (one
  /// 4-byte load: columns 4s..4s + 3 of the 128x4 layout are a word).
  __device__ RowItem load_row(const ItemPlace& pl, std::uint32_t stage) const {
    static_assert(kNv, "whole rows: the lane-block order, NVFP4");
    RowItem it;
    const std::uint32_t a = stage + pl.fp4;
    it.lo = ptx::lds128(a);
    it.hi = ptx::lds128(a ^ 16u);
    const std::uint32_t codes = ptx::lds32(stage + pl.scale);
#pragma unroll
    for (int b = 0; b < 4; ++b) it.f[b] = ptx::lds32(table_base + 4 * ((codes >> (8 * b)) & 0xffu));
    return it;
  }

  /// load_row's item in the lane-block order: piece 2t + w of the row is
  /// raw pair t of words w, 2 + w, 4 + w, 6 + w (blocks 0-3, bytes 4j..4j+3
  /// block j's): eight 16-byte stores, a warp's lanes on 32 rows (the
  /// swizzle spreads eight rows' pieces over all banks).
  __device__ static void store_row_lane_blocks(const RowItem& it, const ItemPlace& pl, std::uint32_t bf16_buf) {
    const std::uint32_t words[8] = {it.lo.x, it.lo.y, it.lo.z, it.lo.w, it.hi.x, it.hi.y, it.hi.z, it.hi.w};
    // Piece 0 of the row; piece P at row ^ (P << 4). (Computed where used,
    // as in store_half_chunk_lane_blocks.)
    const std::uint32_t row = ptx::unhoisted(bf16_buf + pl.bf16);
    // Piece by piece, each stored as soon as it is built: the eight words'
    // 32 scaled pairs at once spilled the 32-token four-warpgroup tile
    // (96 registers a thread).
    auto piece = [&]<int T, int W>() {
      std::uint32_t v[4];
#pragma unroll
      for (int b = 0; b < 4; ++b)
        v[b] = apply_scale<kNv>(raw_pair<T>(words[2 * b + W]), pair_scale_from_table<kNv>(it.f[b]));
      ptx::sts128(row ^ ((2 * T + W) << 4), make_uint4(v[0], v[1], v[2], v[3]));
    };
    piece.template operator()<0, 0>();
    piece.template operator()<0, 1>();
    piece.template operator()<1, 0>();
    piece.template operator()<1, 1>();
    piece.template operator()<2, 0>();
    piece.template operator()<2, 1>();
    piece.template operator()<3, 0>();
    piece.template operator()<3, 1>();
  }

  /// The same item in sub-step g of the stage, for a thread whose item lies
  /// in a sub-step of its own (load it then as sub-step 0): chunk 2g + cc,
  /// its codes and its BF16 buffer, the g-th of a set (a stage's base is
  /// 1024-byte aligned, so the chunk index's XOR folds into the offset).
  __device__ static ItemPlace at_sub(ItemPlace pl, int g) {
    pl.fp4 ^= std::uint32_t(g) << 5;
    pl.scale += kNv ? g * 512 : (g / 2) * 512 + 2 * (g % 2);
    pl.bf16 += g * Cfg::kYConvBytes;
    return pl;
  }

  /// Past K a stage's codes are zero (clear_codes_past_k), so no factor
  /// needs a bounds check. kArithmetic (MXFP4, whole chunks): the factor is
  /// worked out from the code (mxfp4_pair_scale) instead of read from the
  /// table: one shared load fewer behind the code's.
  template <bool kArithmetic = false>
  __device__ Item load(const ItemPlace& pl, std::uint32_t stage, int sub, int split) const {
    static_assert(!kArithmetic || !kNv, "factors by arithmetic: MXFP4");
    Item it;
    // NVFP4: the chunk's two codes from here; MXFP4: its one code.
    const std::uint32_t code_addr = kNv ? stage + pl.scale + sub * 512 : stage + pl.scale + (sub / 2) * 512 + 2 * (sub % 2);
    if (split == 8) return load_words(pl, stage, sub);  // half a piece
    it.raw = ptx::lds128((stage + pl.fp4) ^ (sub << 5));
    if constexpr (kNv) {  // both codes in one load: the prefill tile's loop is bound by shared-memory traffic, not ALU
      const std::uint32_t codes = ptx::lds16(code_addr);
      it.f0 = ptx::lds32(table_base + 4 * (codes & 0xffu));
      it.f1 = ptx::lds32(table_base + 4 * (codes >> 8));
    } else {
      const std::uint32_t code = ptx::lds8(code_addr);
      it.f0 = it.f1 = kArithmetic ? mxfp4_pair_scale(code).second : ptx::lds32(table_base + 4 * code);
    }
    return it;
  }

  /// kOfB: the item is of B, the weights, which may be prepacked (Y without
  /// swap-AB; X items are always of A).
  template <bool kOfB>
  __device__ static void store(const Item& it, const ItemPlace& pl, int split, std::uint32_t bf16_buf) {
    const PairScale s0 = pair_scale_from_table<kNv>(it.f0), s1 = pair_scale_from_table<kNv>(it.f1);
    const std::uint32_t dst = bf16_buf + pl.bf16;
    if (split == 8) {  // half of piece q: its words 2h, 2h + 1 (load's raw.x, raw.y)
      const int q = pl.part / 2, h = pl.part % 2;
      ptx::sts64((dst ^ (q << 4)) + 8 * h, logical_half_piece<kNv>(it.raw.x, it.raw.y, q, s0));
      return;
    }
    if (split == 1) {  // the whole chunk: every pair index is known at compile time
      uint4 pieces4[4];
      logical_pieces<kNv, Cfg::kPrepackedB && kOfB>(it.raw, s0, s1, pieces4);
#pragma unroll
      for (int q = 0; q < 4; ++q) ptx::sts128(dst ^ (q << 4), pieces4[q]);
      return;
    }
    const int pieces = 4 / split;
    for (int pq = 0; pq < pieces; ++pq) {
      const int q = pl.part * pieces + pq;
      ptx::sts128(dst ^ (q << 4), logical_piece<kNv>(it.raw, q, s0, s1));
    }
  }
};

/// A stage that reaches past K (the last K block where K is not a multiple
/// of BK) holds FP4 zeros there (TMA's fill) but scale bytes that are stale
/// (chunks past the tensor's are not loaded) or the layout's padding, which
/// may be NaN codes, and 0 · NaN would poison the sums. Words [w0, w1) of
/// the stage's scale codes (a word: columns 4c..4c+3 of a row; X's band,
/// then Y's) with columns past K are cleared to code 0 (a finite factor) by
/// `threads` threads, so the loops look factors up with no bounds check (a
/// compare and a select a factor were ~12% of the decode loop's integer-ALU
/// operations, the pipe that bounds it). The caller then fences (the
/// producer's next bulk copy into the stage comes after these writes) and
/// synchronises the threads that read the codes.
template <class Cfg>
__device__ __forceinline__ void clear_codes_past_k(std::uint32_t codes, int valid, int w0, int w1, int tid, int threads) {
  for (int w = w0 + tid; w < w1; w += threads) {
    const int n = min(max(valid - 4 * ((w / 128) % Cfg::kChunksPerStage), 0), 4);  // its columns inside K
    if (n < 4) ptx::sts32(codes + 4 * w, n == 0 ? 0u : ptx::lds32(codes + 4 * w) & ((1u << (8 * n)) - 1u));
  }
}

}  // namespace fp4moe::kernels
