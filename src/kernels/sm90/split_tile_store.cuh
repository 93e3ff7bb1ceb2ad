// The last contributor to a split 128 x 256 tile (GemmConfig::
// kReduceFromWorkspace) writes D from the tile's partials in the split-K
// workspace, its own included, adding the slots in order 0, 1, ... (so
// repeats are bit-identical, whichever contributor arrives last).

#pragma once

#include <cstdint>

#include "kernels/sm90/output_stores.cuh"

namespace fp4moe::kernels {

/// This thread's two output rows (x_r0 and x_r0 + 8): each row's element
/// offset in D, and per row h bit h of flags: inside the group's rows;
/// bit 2 + h: a padding row (written as 0).
struct SplitTileRows {
  std::int64_t off[2];
  std::uint32_t flags = 0;
};

/// Float4 i of thread t's slot is at i · kThreads + t (as the contributors
/// stored it): columns n_first + 8i, n_first + 8i + 1 of rows 0 (x, y) and
/// 1 (z, w). `tile_ws` points at slot 0's float4 0 of this thread.
template <int BN, int kThreads, int kTileFloats>
__device__ __forceinline__ void store_split_tile(const float4* tile_ws, int slots, void* d, bool d_bf16, bool pairs_aligned,
                                              std::int32_t n, std::int32_t n_first, SplitTileRows rows, float factor) {
  constexpr int kBatch = 4;  // float4s a slot per step: two slots' loads in flight
  constexpr int kSlotFloat4s = kTileFloats / 4;
#pragma unroll 1
  for (int i0 = 0; i0 < BN / 8; i0 += kBatch) {
    float4 sum[kBatch];
#pragma unroll 1
    for (int sl = 0; sl < slots; sl += 2) {
      const bool second = sl + 1 < slots;
      float4 v0[kBatch], v1[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        v0[b] = __ldcg(tile_ws + sl * kSlotFloat4s + (i0 + b) * kThreads);
        v1[b] = second ? __ldcg(tile_ws + (sl + 1) * kSlotFloat4s + (i0 + b) * kThreads) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        if (sl > 0) v0[b] = make_float4(sum[b].x + v0[b].x, sum[b].y + v0[b].y, sum[b].z + v0[b].z, sum[b].w + v0[b].w);
        sum[b] = second ? make_float4(v0[b].x + v1[b].x, v0[b].y + v1[b].y, v0[b].z + v1[b].z, v0[b].w + v1[b].w) : v0[b];
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const std::int32_t col = n_first + 8 * (i0 + b);
      if (col >= n) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (!((rows.flags >> h) & 1u)) continue;
        const bool pad = (rows.flags >> (2 + h)) & 1u;
        const float v0 = pad ? 0.0f : (h ? sum[b].z : sum[b].x) * factor;
        const float v1 = pad ? 0.0f : (h ? sum[b].w : sum[b].y) * factor;
        const std::int64_t off = rows.off[h] + col;
        if (col + 1 < n && pairs_aligned) {
          store_output_pair(d, d_bf16, off, v0, v1);
        } else {
          store_output(d, d_bf16, off, v0);
          if (col + 1 < n) store_output(d, d_bf16, off + 1, v1);
        }
      }
    }
  }
}

}  // namespace fp4moe::kernels
