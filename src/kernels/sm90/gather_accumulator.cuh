// The gather layout's tile accumulator (moe_dense_fc2, gathered tokens):
// FP32 in shared memory, one row of BM (+4 pad, so the rows a warp adds to
// start in different banks) per token of the call.
//
// gather_add_pass: after a pass's MMAs land, the thread's values (weight
// rows x_r0 and x_r0 + 8, pass columns 8c + 2j + {0, 1}) are added into
// their tokens' rows times alpha; a pass holds each token at most once, so
// no two threads touch one cell.
//
// gather_store_tile: after every pass of a work item is added. Alone on its
// tile, the work item stores the accumulator (D[m, n0 .. n0 + BM)); with
// split-K or stream-K each contributor stores its accumulator in its slot of
// the tile's partials and counts itself in, and the last to arrive adds the
// slots in order 0, 1, ... (bit-identical repeats) and stores the sum.
// Either way the accumulator is left zero for the next work item. The
// additions before and the next work item's after are fenced off by the
// passes' own hand-over token going round the warpgroups (`lap`,
// fp4_gemm_kernel.cuh).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/sm90/fp4_dequant.cuh"
#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/output_stores.cuh"
#include "kernels/sm90/pipeline_trace.cuh"
#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/split_k_arrival.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

namespace fp4moe::kernels {

/// (acc: the accumulator's shared-memory address; ld/st.shared, where a
/// generic pointer made every access a generic load and store.)
template <class Cfg>
__device__ __forceinline__ void gather_add_pass(std::uint32_t acc, const float (&pass_acc)[Cfg::BN / 2],
                                                const int2 (&tok)[Cfg::BN / 8], const float2 (&wgt)[Cfg::BN / 8],
                                                int valid, int j, int x_r0) {
#pragma unroll
  for (int c = 0; c < Cfg::BN / 8; ++c) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (8 * c + 2 * j + e >= valid) continue;
      const int m = e ? tok[c].y : tok[c].x;
      const float a = e ? wgt[c].y : wgt[c].x;
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // rows x_r0, x_r0 + 8: accumulator index 4c + 2h + e
        const std::uint32_t cell = acc + 4u * std::uint32_t(m * Cfg::kGatherAccStride + x_r0 + 8 * h);
        ptx::sts32(cell, __float_as_uint(fmaf(a, pass_acc[4 * c + 2 * h + e], __uint_as_float(ptx::lds32(cell)))));
      }
    }
  }
}

/// Run by every consumer thread (ctid 0 .. kConsumerThreads - 1) of the CTA;
/// lap(): this warpgroup's turn of the pass hand-over token. (trace: the
/// epilogue's steps marked, in a trace build.)
template <class Cfg, class Lap>
__device__ void gather_store_tile(const GemmParams& p, const Tile& t, float* acc_smem, int ctid, const Lap& lap,
                                  TraceCursor& trace) {
  constexpr int kQuads = Cfg::BM / 4;  // float4 columns of a row
  const std::int64_t tile_floats = std::int64_t(p.m) * Cfg::BM;
  // Float4 idx of the accumulator (row idx / kQuads), read and zeroed for
  // the next work item. By ld/st.shared, except in MXFP4's one-CTA 16-token
  // tiles: there ptxas gave ld/st.shared six local accesses, and generic
  // loads and stores (no local accesses) ran moe-fc2 MXFP4 M = 160-384
  // 0.979-0.990x the time; on NVFP4's tiles generic ones ran 1.006-1.014x
  // (docs/PERF.md stop 62, call 1).
  constexpr bool kGenericCells = !Cfg::kNvfp4 && Cfg::BN == 16 && Cfg::kCtasPerSm == 1;
  auto take_cell = [&](std::int32_t idx) {
    if constexpr (kGenericCells) {
      float4* c = reinterpret_cast<float4*>(acc_smem + (idx / kQuads) * Cfg::kGatherAccStride + 4 * (idx % kQuads));
      const float4 v = *c;
      *c = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      return v;
    } else {
      const std::uint32_t cell =
          ptx::smem_addr(acc_smem) + 4u * std::uint32_t((idx / kQuads) * Cfg::kGatherAccStride + 4 * (idx % kQuads));
      const uint4 v = ptx::lds128(cell);
      ptx::sts128(cell, make_uint4(0u, 0u, 0u, 0u));
      return make_float4(__uint_as_float(v.x), __uint_as_float(v.y), __uint_as_float(v.z), __uint_as_float(v.w));
    }
  };
  // NVFP4's global decode scales, loaded now and multiplied only where
  // this contributor stores D: read there, their round trip stood on the
  // last contributor's path before its first slot load.
  [[maybe_unused]] float global_a = 1.0f, global_b = 1.0f;
  if constexpr (Cfg::kNvfp4) {
    global_a = __ldg(p.a.global);
    global_b = __ldg(p.b.global);
  }
  lap();  // every pass added
  trace.mark(kTrEpiLapped, 0);
  const float4* slots = nullptr;  // the tile's partials, where it has several contributors
  if (t.slots > 1) {
    if (t.slots > p.split_slots) __trap();  // the host sized the workspace by a bound this broke
    float* tile_ws = p.split_partials + std::int64_t(t.index) * p.split_slots * tile_floats;
    float4* mine = reinterpret_cast<float4*>(tile_ws + t.slot * tile_floats);
    for (std::int32_t idx = ctid; idx < p.m * kQuads; idx += Cfg::kConsumerThreads) mine[idx] = take_cell(idx);
    trace.mark(kTrPartialStored, 0);
    const bool last = split_k_arrived_last<Cfg>(p, t, ctid);
    trace.mark(kTrArrived, last);
    if (!last) {
      lap();  // zeroed before the next work item's first addition
      return;
    }
    slots = reinterpret_cast<const float4*>(tile_ws);
  }
  float factor = dequant_offset_correction<Cfg::kNvfp4>();
  if constexpr (Cfg::kNvfp4) factor *= global_a * global_b;
  const bool pairs_aligned = output_pairs_aligned(p.d, p.d_is_bf16, p.ldd);
  // kBatch of the thread's float4s at a time, two slots' loads of them in
  // flight together, the slots still added in order 0, 1, ... A float4 and
  // a slot at a time (every load waiting on the one before: stores to D
  // between them may alias the slots), the last contributor at M = 128
  // spent ~15000 cycles here, three quarters of its epilogue; two float4s
  // a slot at a time, ~9800 (traces, docs/PERF.md stop 61). (Four float4s
  // a batch spilled the pass loop of MXFP4's 8-token tiles.)
  constexpr int kBatch = 2;
  const std::int32_t quads = p.m * kQuads;
#pragma unroll 1
  for (std::int32_t idx0 = ctid; idx0 < quads; idx0 += kBatch * Cfg::kConsumerThreads) {
    float4 v4[kBatch];
    if (slots) {
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const std::int32_t idx = idx0 + b * Cfg::kConsumerThreads;
        v4[b] = idx < quads ? __ldcg(slots + idx) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
      auto add = [](float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); };
#pragma unroll 1
      for (int sl = 1; sl < t.slots; sl += 2) {
        const bool second = sl + 1 < t.slots;
        float4 w0[kBatch], w1[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const std::int32_t idx = idx0 + b * Cfg::kConsumerThreads;
          const bool in = idx < quads;
          w0[b] = in ? __ldcg(slots + sl * (tile_floats / 4) + idx) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          w1[b] = in && second ? __ldcg(slots + (sl + 1) * (tile_floats / 4) + idx)
                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          v4[b] = add(v4[b], w0[b]);
          if (second) v4[b] = add(v4[b], w1[b]);  // (not + 0: that would turn -0 into +0)
        }
      }
    } else {
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const std::int32_t idx = idx0 + b * Cfg::kConsumerThreads;
        if (idx >= quads) break;
        v4[b] = take_cell(idx);
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const std::int32_t idx = idx0 + b * Cfg::kConsumerThreads;
      if (idx >= quads) break;
      const std::int32_t m = idx / kQuads, q = idx % kQuads;
      const float v[4] = {v4[b].x * factor, v4[b].y * factor, v4[b].z * factor, v4[b].w * factor};
      const std::int32_t n = t.n0 + 4 * q;
      const std::int64_t off = std::int64_t(m) * p.ldd + n;
      if (n + 3 < p.n && pairs_aligned) {
        store_output_pair(p.d, p.d_is_bf16, off, v[0], v[1]);
        store_output_pair(p.d, p.d_is_bf16, off + 2, v[2], v[3]);
      } else {
#pragma unroll
        for (int c = 0; c < 4; ++c)
          if (n + c < p.n) store_output(p.d, p.d_is_bf16, off + c, v[c]);
      }
    }
  }
  trace.mark(kTrReduced, slots != nullptr);
  lap();  // zeroed before the next work item's first addition
}

}  // namespace fp4moe::kernels
