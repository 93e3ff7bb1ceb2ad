// The FP4 GEMM engine for sm_90a: one warp-specialised persistent kernel for
// every layout (TileScheduler) and both regimes (swap-AB or not).
//
// Warpgroup 0 is the producer: one thread streams FP4 tiles of X and Y (2-D
// TMA) and their 128x4-tiled scale chunks (1-D bulk copies) into a ring of
// kStages shared-memory stages, each guarded by a full/empty mbarrier pair.
// Warpgroups 1..kConsumers (two, or four: gemm_config.cuh, which holds each
// configuration's policies and shared-memory map) are consumers, 64 X rows
// each. Per 64-K sub-step they
//   1. dequantise (shared or each its own copy, see kPrivateY) the Y tile into
//      a BF16 buffer in the 128B-swizzled K-major layout wgmma reads
//      (fp4_dequant.cuh: logical_piece, which also applies the K permutation
//      both operands share), and their own 64 X rows: with swap-AB (X = the
//      weights) straight into wgmma A fragments in registers (kXInRegs),
//      otherwise into a BF16 buffer like Y;
//   2. issue 4 wgmma m64nBNk16 (A from registers or shared memory, B from
//      shared memory).
// The BF16 buffers and the A fragments alternate, so dequantising sub-step
// i+1 overlaps the tensor cores on sub-step i. A consumer releases a stage
// (its arrive on empty[s]) only once every value it loaded from the stage is
// in a register (ptx::mbar_arrive_after): the arrive does not hold back the
// next TMA fill behind shared loads still in flight (docs/PERF.md stop 24;
// ctest SassReleaseAudit checks every instance's SASS for it). Block scales become BF16
// factors through a per-CTA table (one shared load per code). The epilogue
// applies the global scales and stores BF16 or FP32 from the accumulators;
// the 128 x 256 tile of the dense and contiguous layouts stores BF16 through
// per-warp shared-memory slabs by TMA, so its stores drain while the next
// tile runs (kTmaStores).
//
// MoE-dense (moe_dense_fc2) swaps in a producer warp that walks experts and
// skips the ones no token of the tile uses (moe_dense_producer.cuh); the
// consumers accumulate each expert apart and fold alpha·(A_e·B_eᵀ) into the
// tile's accumulator once the expert's MMAs land. (On the FP8 route alpha
// joins each block's scale factors instead: no expert accumulator.)
//
// MoE gather (moe_dense_fc2 with gathered tokens) is swap-AB with 64 weight
// rows per tile against every token: its producer walks each expert's
// gathered tokens BT at a time (moe_gather_producer.cuh), the consumer
// warpgroups take passes over the same 64 rows in turn, and each adds alpha·(its pass's
// product) into the tile's FP32 accumulator in shared memory, in pass order;
// the epilogue stores that accumulator. Its tokens come dequantised, in BF16
// (kTokensBf16: the gather step wrote them in the tile's K order), and the
// wgmmas read them in the stage itself, so a stage is released once those
// wgmmas are done, not once its loads are in registers.
//
// Every launch is a programmatic dependent (gemm_launch.cuh): the prologue's
// shared-memory set-up may run while the kernel before it finishes; the
// first global access waits for that kernel (ptx/grid_dependency.cuh).
//
// Two policies change the main loop's parts, not its shape: MXFP4's FP8
// route (kFp8: E4M3 operands, one k32 MMA per scale block, its product added
// into the accumulators with the block's scales on the CUDA cores:
// consume_stage_fp8) and two-CTA clusters (kCluster: token blocks in pairs
// sharing the weight loads by TMA multicast).
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/sm90/dp4a_gemv.cuh"
#include "kernels/sm90/fp4_dequant.cuh"
#include "kernels/sm90/gather_accumulator.cuh"
#include "kernels/sm90/gemm_config.cuh"
#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/moe_dense_producer.cuh"
#include "kernels/sm90/moe_gather_producer.cuh"
#include "kernels/sm90/pipeline_trace.cuh"
#include "kernels/sm90/operand_items.cuh"
#include "kernels/sm90/split_k_arrival.cuh"
#include "kernels/sm90/split_tile_store.cuh"
#include "kernels/sm90/swiglu_epilogue.cuh"
#include "kernels/sm90/ptx/cluster.cuh"
#include "kernels/sm90/ptx/grid_dependency.cuh"
#include "kernels/sm90/ptx/memory.cuh"
#include "kernels/sm90/ptx/wgmma.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

namespace fp4moe::kernels {

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kCtasPerSm)
    fp4_gemm_kernel(const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,
                    const __grid_constant__ CUtensorMap tmap_d, GemmParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr bool kNv = Cfg::kNvfp4;
  constexpr int BN = Cfg::BN, BK = Cfg::BK, kStages = Cfg::kStages;
  [[maybe_unused]] TraceStart trace_start;  // (zeros unless FP4MOE_PIPELINE_TRACE)
  trace_start.entry = TraceCursor::clock();
  trace_start.entry_ns = TraceCursor::global_time();
  trace_start.sm = TraceCursor::sm();
  extern __shared__ __align__(1024) std::uint8_t smem_raw[];
  std::uint8_t* smem = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + Cfg::kOffBarriers);
  std::uint64_t* empty = full + kStages;
  std::uint64_t* order = empty + kStages;  // gather: the pass hand-over, one per consumer warpgroup
  std::uint64_t* cluster_done = order + (Cfg::kGather ? Cfg::kConsumers : 0);  // two-CTA clusters
  constexpr bool kPair = Cfg::kCluster == 2;
  const std::uint32_t rank = kPair ? ptx::cluster_rank() : 0;
  std::int32_t* prefix = reinterpret_cast<std::int32_t*>(smem + Cfg::kOffPrefix);

  const CUtensorMap* tmap_x = Cfg::kSwap ? &tmap_b : &tmap_a;
  const CUtensorMap* tmap_y = Cfg::kSwap ? &tmap_a : &tmap_b;
  const OperandParams& px = Cfg::kSwap ? p.b : p.a;
  const OperandParams& py = Cfg::kSwap ? p.a : p.b;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(&full[s], Cfg::kFullArrivals);
      // Every consumer thread releases the stage after its own last read of
      // it: an arrive orders only the arriving thread's accesses, so one
      // arrive after a named barrier would lean on the barrier for the
      // others' (compute-sanitizer racecheck cannot follow that). Gather:
      // only the stage's warpgroup (moe_gather_producer.cuh).
      ptx::mbar_init(&empty[s], Cfg::kGather ? 128 : Cfg::kConsumerThreads * (kPair ? 2 : 1));  // clusters: + the peer's consumer threads
    }
    if constexpr (Cfg::kGather) {
      for (int w = 0; w < Cfg::kConsumers; ++w) ptx::mbar_init(&order[w], 128);  // every thread of the previous owner
    }
    if constexpr (kPair) ptx::mbar_init(cluster_done, 16);  // both CTAs' consumer warps
    if constexpr (Cfg::kReduceFromWorkspace) *reinterpret_cast<std::uint32_t*>(smem + Cfg::kOffDeferred) = 0;  // no deferred tiles yet
    ptx::fence_mbarrier_init();
  }
  for (int code = threadIdx.x; code < 256; code += Cfg::kThreads)
    reinterpret_cast<std::uint32_t*>(smem + Cfg::kOffScaleTable)[code] =
        Cfg::kFp8 ? fp8_scale_table_entry(std::uint8_t(code)) : scale_table_entry<kNv>(std::uint8_t(code));
  if constexpr (Cfg::kGather) {  // the tile accumulator starts at zero; each epilogue re-zeroes what it stores
    float* acc_smem = reinterpret_cast<float*>(smem + Cfg::kOffGatherAcc);
    for (int i = threadIdx.x; i < p.m * Cfg::kGatherAccStride; i += Cfg::kThreads) acc_smem[i] = 0.0f;
  }
  // Launched as a programmatic dependent (gemm_launch.cuh), the kernel may
  // have started while the kernel before it still runs: everything above
  // touches shared memory only; from here on it may read (and write) what
  // that kernel wrote. And the kernel after it may be scheduled as soon as
  // every CTA of this one is here (it waits for this one's end the same way).
  ptx::grid_dependency_wait();
  ptx::launch_dependents();
  if constexpr (Cfg::kLayout == Layout::kMasked) {
    if (threadIdx.x < 32) masked_prefix<Cfg::BT>(p, prefix);
  }
  if constexpr (Cfg::kGatherCostShares) {  // stream-K: this CTA's share by the passes it holds
    if (p.split_k == 0 && threadIdx.x < 32) gather_stream_k_share<Cfg::BT, Cfg::BW>(p, reinterpret_cast<GatherShares*>(prefix));
  }
  if constexpr (Cfg::kMoe) {
    // Stream-K: this CTA's segments into a table (block-uniform branches).
    // Weighted shares first need the weights' prefix (the table holds
    // kMaxWeightedBlocks blocks; past it the shares are equal) and every
    // CTA's boundary.
    if (p.split_k == 0) {
      if (p.stream_k_block_experts && p.stream_k_blocks <= kMaxWeightedBlocks) {
        if (threadIdx.x < 32) stream_k_weight_prefix(p, prefix);
        __syncthreads();
        stream_k_weighted_begins<Cfg::BT, Cfg::BW>(p, prefix, p.experts);
        __syncthreads();
      }
      if (threadIdx.x < 32) stream_k_segments_into_table<Cfg::BT, Cfg::BW>(p, prefix, p.experts);
    }
  }
  if constexpr (Cfg::kFc1) {  // NVFP4 output: its global decode scale 1/g
    if (p.fc1_decode_out && blockIdx.x == 0 && threadIdx.x == 0) *p.fc1_decode_out = 1.0f / *p.fc1_encode_scale;
  }
  if constexpr (kPair) {
    ptx::cluster_sync();  // the peer's barriers are initialised before anything reaches them
  } else {
    __syncthreads();
  }
  trace_start.prologue_done = TraceCursor::clock();

  // A work item covers units [t.unit_begin, t.unit_end) of its tile: K
  // blocks, or for MoE-dense whole experts.
  const int k_iters = (p.k + BK - 1) / BK;
  const TileScheduler<Cfg::kLayout, Cfg::BT, Cfg::BW, Cfg::kReduceFromWorkspace> sched(p, prefix, Cfg::kMoe || Cfg::kGather ? p.experts : k_iters);
  auto next_work = [&](std::int32_t i, Tile& t) {
    if constexpr (kPair) {
      return sched.cluster_work(i, rank, t);
    } else {
      return sched.work(i, t);
    }
  };

  // X/Y rows of a tile in their tensor maps, and (group, row-in-group) of their scales.
  auto x_row = [&](const Tile& t) { return Cfg::kSwap ? sched.b_row(t) : sched.a_row(t); };
  auto y_row = [&](const Tile& t) { return Cfg::kSwap ? sched.a_row(t) : sched.b_row(t); };
  auto a_scale_group = [&](const Tile& t) { return Cfg::kLayout == Layout::kMasked || Cfg::kGather ? t.group : 0; };
  auto b_scale_group = [&](const Tile& t) { return Cfg::kLayout == Layout::kDense || Cfg::kGather ? 0 : t.group; };
  auto x_scale_row0 = [&](const Tile& t) { return Cfg::kSwap ? t.n0 : t.m0; };
  auto y_scale_row0 = [&](const Tile& t) { return Cfg::kSwap ? t.m0 : t.n0; };
  auto x_scale_group = [&](const Tile& t) { return Cfg::kSwap ? b_scale_group(t) : a_scale_group(t); };
  auto y_scale_group = [&](const Tile& t) { return Cfg::kSwap ? a_scale_group(t) : b_scale_group(t); };

  // Loads K block kb of tile t's X and K block y_kb of its Y (the same
  // block, except in the gather layout, whose gathered tokens hold one
  // expert's W columns) into stage s: the FP4 tiles (TMA) and their scale
  // chunks (bulk copies), all completing on full[s]. What the tile fixes
  // (rows, scale bands) is worked out once by tile_loads(t); a stage adds
  // only its K offsets: the producer's per-stage path sets the pipeline's
  // pace where it is long (the gather producer's trace, docs/PERF.md stop
  // 27; there its state had also spilled to local memory).
  struct TileLoads {
    std::int32_t x_row, y_row, y_row2;  // y_row2: FC1's up rows
    const std::uint8_t* xs[Cfg::kXBands];  // X's scale bands (chunk 0), or null past the bands
    const std::uint8_t* ys[Cfg::kYBands];
    bool multicast;
  };
  auto tile_loads = [&](const Tile& t) {
    TileLoads l;
    l.x_row = x_row(t);
    l.y_row = y_row(t);
    l.y_row2 = Cfg::kFc1 ? l.y_row + p.fc1_inter : l.y_row + BN / 2;
    l.multicast = t.multicast;
    // Chunk 0 of an operand's scale band (128 rows) of a group, or null past its bands.
    auto band_chunks = [](const OperandParams& op, std::int32_t group, std::int32_t band) -> const std::uint8_t* {
      return band < (op.rows_per_group + 127) / 128
                 ? op.scales + std::int64_t(group) * op.scale_group_bytes + std::int64_t(band) * op.scale_chunks * 512
                 : nullptr;
    };
#pragma unroll
    for (int b = 0; b < Cfg::kXBands; ++b) l.xs[b] = band_chunks(px, x_scale_group(t), x_scale_row0(t) / 128 + b);
#pragma unroll
    for (int b = 0; b < Cfg::kYBands; ++b) {
      // Scale band of the tile's Y band b: consecutive, except FC1's second
      // half (the up rows, fc1_inter rows after the gate rows).
      const std::int32_t band = Cfg::kFc1 ? (t.n0 % p.fc1_inter + b * p.fc1_inter) / 128 : y_scale_row0(t) / 128 + b;
      l.ys[b] = band_chunks(py, y_scale_group(t), band);
    }
    return l;
  };
  auto load_tile_stage = [&](int s, const TileLoads& l, int kb, int y_kb) {
    std::uint8_t* st = smem + s * Cfg::kStageBytes;
    const int chunk0 = kb * Cfg::kChunksPerStage, y_chunk0 = y_kb * Cfg::kChunksPerStage;
    const int chunks = min(Cfg::kChunksPerStage, px.scale_chunks - chunk0);
    const int y_chunks = min(Cfg::kChunksPerStage, py.scale_chunks - y_chunk0);
    std::uint32_t bytes = Cfg::kXBytes + BN * Cfg::kRowBytes;
#pragma unroll
    for (int b = 0; b < Cfg::kXBands; ++b)
      if (l.xs[b]) bytes += 512 * chunks;
#pragma unroll
    for (int b = 0; b < Cfg::kYBands; ++b)
      if (l.ys[b]) bytes += 512 * y_chunks;
    ptx::mbar_arrive_expect_tx(&full[s], bytes);
    ptx::tma_load_2d(st, tmap_x, kb * Cfg::kRowBytes, l.x_row, &full[s]);
    if constexpr (Cfg::kFc1) {  // gate rows, then the matching up rows
      ptx::tma_load_2d(st + Cfg::kOffY, tmap_y, y_kb * Cfg::kRowBytes, l.y_row, &full[s]);
      ptx::tma_load_2d(st + Cfg::kOffY + (BN / 2) * Cfg::kRowBytes, tmap_y, y_kb * Cfg::kRowBytes, l.y_row2, &full[s]);
    } else if constexpr (kPair) {
      if (l.multicast) {  // this CTA's half of the weight rows, into both CTAs
        ptx::tma_load_2d_multicast(ptx::smem_addr(st + Cfg::kOffY + rank * (BN / 2) * Cfg::kRowBytes), tmap_y,
                                   y_kb * Cfg::kRowBytes, l.y_row + int(rank) * (BN / 2), ptx::smem_addr(&full[s]), 0x3);
      } else {  // both halves, this CTA alone (the tensor map's box is half the tile)
        ptx::tma_load_2d(st + Cfg::kOffY, tmap_y, y_kb * Cfg::kRowBytes, l.y_row, &full[s]);
        ptx::tma_load_2d(st + Cfg::kOffY + (BN / 2) * Cfg::kRowBytes, tmap_y, y_kb * Cfg::kRowBytes, l.y_row2, &full[s]);
      }
    } else {
      ptx::tma_load_2d(st + Cfg::kOffY, tmap_y, y_kb * Cfg::kRowBytes, l.y_row, &full[s]);
    }
#pragma unroll
    for (int b = 0; b < Cfg::kXBands; ++b)
      if (l.xs[b])
        ptx::bulk_load(st + Cfg::kOffXScale + b * 512 * Cfg::kChunksPerStage, l.xs[b] + chunk0 * 512, 512 * chunks, &full[s]);
#pragma unroll
    for (int b = 0; b < Cfg::kYBands; ++b) {
      if (!l.ys[b]) continue;
      const std::uint8_t* src = l.ys[b] + y_chunk0 * 512;
      if (kPair && l.multicast) {  // band `rank` (this CTA's half of the rows) into both CTAs
        if (b == int(rank))
          ptx::bulk_load_multicast(ptx::smem_addr(st + Cfg::kOffYScale + b * 512 * Cfg::kChunksPerStage), src,
                                   512 * y_chunks, ptx::smem_addr(&full[s]), 0x3);
      } else {
        ptx::bulk_load(st + Cfg::kOffYScale + b * 512 * Cfg::kChunksPerStage, src, 512 * y_chunks, &full[s]);
      }
    }
  };
  if (threadIdx.x < 128) {
    // ------------------------------------------------------------ producer
    [[maybe_unused]] const std::uint64_t before_regs = TraceCursor::clock();  // (0 unless FP4MOE_PIPELINE_TRACE)
    ptx::setmaxnreg_dec<Cfg::kProducerRegs>();
    if constexpr (Cfg::kMoe) {
      if (threadIdx.x < 32) moe_produce<Cfg>(p, sched, smem, full, empty, tile_loads, load_tile_stage);
    } else if constexpr (Cfg::kGather) {
      if (threadIdx.x < 32 * gather_producer_warps<Cfg>()) {
        const GatherStageLoads<Cfg> loads{tmap_x, tmap_y, smem, full};
        gather_produce<Cfg>(p, sched, loads, smem, full, empty, trace_start, before_regs);
      }
    } else if (threadIdx.x == 0) {
      TraceCursor trace;  // (empty unless FP4MOE_PIPELINE_TRACE)
      trace.init(TraceCursor::base(p), 0);
      trace_start.mark_into(trace);
      trace.mark(kTrRoleStart, 0);
      ptx::prefetch_tensor_map(tmap_x);
      ptx::prefetch_tensor_map(tmap_y);
      // The producer's loop, over the work items `next` hands out.
      auto produce = [&](const auto& next) {
        std::uint32_t it = 0;
        Tile t;
        for (std::int32_t i = 0; next(i, t); ++i) {
          if (i == 0) trace.mark(kTrFirstWork, 0);
          // A contiguous padding block: nothing to load; in a cluster it still
          // takes every stage's turn (its peer's consumers release those
          // stages here too).
          if (t.group < 0 && !kPair) continue;
          const TileLoads loads = tile_loads(t);
          for (int kb = t.unit_begin; kb < t.unit_end; ++kb, ++it) {
            const int s = it % kStages;
            trace.mark(kTrEmptyWait, s);
            if constexpr (kPair) {  // the peer's consumers released it too (their arrives come from the other CTA)
              ptx::mbar_wait_acquire_cluster(ptx::smem_addr(&empty[s]), ((it / kStages) & 1) ^ 1);
            } else {
              ptx::mbar_wait(&empty[s], ((it / kStages) & 1) ^ 1);
            }
            trace.mark(kTrEmptyGot, s);
            if (t.group < 0) {
              ptx::mbar_arrive(&full[s]);
            } else {
              load_tile_stage(s, loads, kb, kb);
            }
            trace.mark(kTrIssued, s);
          }
        }
      };
      // The 128 x 256 tiles: whole tiles in a loop of their own. In one
      // loop with the split work items, whose arithmetic (64-bit divisions,
      // called as subroutines) leaves its results in vector registers, the
      // tile's values stayed there and every stage moved them into uniform
      // registers for its TMAs (23 R2UR a stage against 2): the tile ran
      // 2-5% slower on whole tiles (docs/PERF.md stop 46).
      if (Cfg::kReduceFromWorkspace && p.split_k == 1) {
        produce([&](std::int32_t i, Tile& t) { return sched.template whole_work<kPair>(i, rank, t); });
      } else {
        produce(next_work);
      }
      trace.mark_at(kTrGlobalTime, 1, TraceCursor::global_time());
    }
#ifdef FP4MOE_PIPELINE_TRACE
    // A watcher on the last actor row (free where the tile has at most three
    // consumer warpgroups): when each stage's first fill completes, seen by a
    // thread that does nothing else, to split the first data's latency from
    // the consumers' observation of it.
    if constexpr (!Cfg::kMoe && !Cfg::kGather && Cfg::kConsumers < kTraceActors - 1) {
      if (threadIdx.x == 32) {
        TraceCursor watch;
        watch.init(TraceCursor::base(p), kTraceActors - 1);
        trace_start.mark_into(watch);
        // Bounded (1 ms), so a CTA without work cannot hang a trace run.
        const std::uint64_t give_up = TraceCursor::global_time() + 1000000;
        for (int s = 0; s < kStages; ++s) {
          while (!cuda::ptx::mbarrier_test_wait_parity(&full[s], 0u))
            if (TraceCursor::global_time() > give_up) return;
          watch.mark(kTrWatchFull, s);
        }
      }
    }
    // The gather tiles' watcher marks every fill of every stage, so a trace
    // can follow each stage from its issue to its landing to its consumer's
    // first look (scripts/pipeline_trace.py). Warp 3 of the producer
    // warpgroup: no gather tile has more than two producer warps. It stops
    // 20 µs after the last fill it saw (1 ms before the first), and marks
    // a clock with the global timer there, so the trace can place each
    // CTA's clocks on the grid's common time.
    if constexpr (Cfg::kGather && Cfg::kConsumers < kTraceActors - 1) {
      static_assert(gather_producer_warps<Cfg>() <= 3, "warp 3 of the producer warpgroup is free");
      if (threadIdx.x == 96 && TraceCursor::base(p) != nullptr) {  // (the traced launch only)
        TraceCursor watch;
        watch.init(TraceCursor::base(p), kTraceActors - 1);
        trace_start.mark_into(watch);
        std::uint32_t parity = 0;  // bit s: the parity of stage s's next fill
        std::uint64_t last = TraceCursor::global_time(), quiet = 1000000;
        for (;;) {
          for (int s = 0; s < kStages; ++s) {
            if (cuda::ptx::mbarrier_test_wait_parity(&full[s], (parity >> s) & 1u)) {
              watch.mark(kTrWatchFull, s);
              parity ^= 1u << s;
              last = TraceCursor::global_time();
              quiet = 20000;
            }
          }
          if (TraceCursor::global_time() - last > quiet) break;
        }
        watch.mark(kTrWatchEnd, 0);
        watch.mark_at(kTrGlobalTime, 1, TraceCursor::global_time());
      }
    }
#endif
    return;
  }

  // ------------------------------------------------------------ consumers
  ptx::setmaxnreg_inc<Cfg::kConsumerRegs>();
  [[maybe_unused]] const std::uint64_t role_clock = TraceCursor::clock();  // (0 unless FP4MOE_PIPELINE_TRACE)
  const int ctid = threadIdx.x - 128;          // 0 .. kConsumerThreads - 1
  // (The warpgroup index through a shuffle, so ptxas knows it is warp-uniform
  // and keeps what derives from it, such as the gather layout's wgmma
  // descriptors, in uniform registers: no R2UR a wgmma.)
  const int wg = __shfl_sync(0xffffffffu, ctid / 128, 0), warp = (ctid / 32) % 4, lane = ctid % 32;
  const int g = lane / 4, j = lane % 4;
  const int x_r0 = (Cfg::kGather ? 0 : 64 * wg) + 16 * warp + g;  // this thread's X rows: x_r0, x_r0 + 8
  if constexpr (Cfg::kDp4a) {
    // The CUDA-core route (dp4a_gemv.cuh). Thread ctid takes half h of
    // weight row r of the tile in every stage (K 128h .. 128h + 127: four
    // 16-byte chunks of the row, one or two scale words). Each warp
    // converts the stage's tokens it multiplies by into a buffer of its
    // own (a word of each token row a lane), so no stage waits on another
    // warp: with one CTA-wide barrier a stage instead, one token ran at
    // 0.95x the 16-token wgmma tile's time against the probe's 0.69x.
    const int r = ctid >> 1, h = ctid & 1;
    constexpr int kTokStride = dp4a::kTokenStride<BK, Cfg::kBlock>;
    constexpr int kScaleWords = dp4a::kScaleWords<kNv>;
    const std::uint32_t base = ptx::smem_addr(smem);
    const std::uint32_t tok = base + Cfg::kOffConv + (ctid / 32) * (BN * kTokStride);
    // The magnitude table's low word, read back by a volatile load from
    // shared memory (the scale table's slot of this thread, which this route
    // does not use): as a constant, or read by a plain load (which ptxas
    // forwarded from the store), it sat in a uniform register and ptxas
    // copied it into a register before every PRMT.
    const std::uint32_t mag_slot = base + Cfg::kOffScaleTable + 4 * ctid;
    ptx::sts32(mag_slot, dp4a::kMagLo);
    const std::uint32_t mag_lo = ptx::lds32_volatile(mag_slot);
    std::uint32_t chunk_off[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) chunk_off[i] = r * 128 + (((4 * h + i) ^ (r & 7)) << 4);
    const std::uint32_t xs_off = Cfg::kOffXScale + kScaleWords * h * 512 + (r & 31) * 16 + (r >> 5) * 4;
    std::uint32_t it = 0;
    // A tile's stages against T tokens: T = 1 or 2 at compile time (the
    // counts the heuristic sends here), else BN with the count at run time.
    auto tile_stages = [&](const Tile& t, auto tokens, int valid, float* out) {
      constexpr int T = decltype(tokens)::value;
      constexpr bool kRunTimeCount = T == BN;
      float total[T];
#pragma unroll
      for (int tk = 0; tk < T; ++tk) total[tk] = 0.0f;
      for (int kb = t.unit_begin; kb < t.unit_end; ++kb, ++it) {
        const int s = it % kStages;
        ptx::mbar_wait(&full[s], (it / kStages) & 1);
        const std::uint32_t st = base + s * Cfg::kStageBytes;
        dp4a::convert_tokens<kNv, T, kRunTimeCount, BK>(st + Cfg::kOffY, st + Cfg::kOffYScale, tok, lane, t.m0 % 128, mag_lo,
                                                  p.k - kb * BK, valid);
        uint4 chunk[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) chunk[i] = ptx::lds128(st + chunk_off[i]);
        std::uint32_t sc[kScaleWords];
#pragma unroll
        for (int i = 0; i < kScaleWords; ++i) sc[i] = ptx::lds32(st + xs_off + 512 * i);
        // This thread's reads of the stage are done once their values are
        // in: the release waits for all of them (a plain arrive behind
        // shared loads in flight lets the next TMA fill land before them,
        // stop 24; scripts/sass_release_audit.py flagged the plain one here).
        std::uint32_t dep = sc[kScaleWords - 1];
#pragma unroll
        for (int i = 0; i < 4; ++i) dep ^= chunk[i].x ^ chunk[i].y ^ chunk[i].z ^ chunk[i].w;
        if constexpr (kScaleWords == 2) dep ^= sc[0];
        ptx::mbar_arrive_after(&empty[s], dep, p.k < 0);
        __syncwarp();  // the warp's tokens are written
        dp4a::stage_dot<kNv, T, kRunTimeCount, BK>(chunk, sc, tok, h, mag_lo, valid, total);
        __syncwarp();  // the warp's tokens are read before the next stage's overwrite them
      }
#pragma unroll
      for (int tk = 0; tk < T; ++tk) out[tk] = total[tk];
    };
    Tile t;
    for (std::int32_t item = 0; next_work(item, t); ++item) {
      // (Through a shuffle, so ptxas knows the branches and loops on them are
      // warp-uniform: otherwise each __syncwarp in them came with
      // convergence barriers.)
      const int valid = __shfl_sync(0xffffffffu, min(BN, t.m_end - t.m0), 0);  // token rows of the tile inside the group
      t.unit_begin = __shfl_sync(0xffffffffu, t.unit_begin, 0);
      t.unit_end = __shfl_sync(0xffffffffu, t.unit_end, 0);
      float total[BN];
#pragma unroll
      for (int tk = 0; tk < BN; ++tk) total[tk] = 0.0f;
      if (t.group >= 0) {  // (a contiguous padding block loads nothing: its rows are written as 0)
        if (valid == 1) {
          tile_stages(t, std::integral_constant<int, 1>{}, valid, total);
        } else if (valid == 2) {
          tile_stages(t, std::integral_constant<int, 2>{}, valid, total);
        } else {
          tile_stages(t, std::integral_constant<int, BN>{}, valid, total);
        }
      }
      // Epilogue: the two halves of each row summed; D[m0 + tk, n0 + r] for
      // the tile's tokens, times the global scales (padding rows: 0).
#pragma unroll
      for (int tk = 0; tk < BN; ++tk) total[tk] += __shfl_xor_sync(0xffffffffu, total[tk], 1);
      const std::int32_t n = t.n0 + r;
      if (h == 0 && n < p.n) {
        float factor = 1.0f;  // (MXFP4: no global scales)
        if constexpr (kNv) factor = t.group >= 0 ? p.a.global[a_scale_group(t)] * p.b.global[b_scale_group(t)] : 0.0f;
        const std::int64_t d_off0 = Cfg::kLayout == Layout::kMasked ? std::int64_t(t.group) * p.d_group_stride : 0;
#pragma unroll
        for (int tk = 0; tk < BN; ++tk) {
          const std::int32_t m = t.m0 + tk;
          if (m >= t.m_end) break;
          const bool pad = t.group < 0 || (Cfg::kLayout == Layout::kContiguous && p.m_indices[m] < 0);
          const float v = pad ? 0.0f : total[tk] * factor;
          const std::int64_t off = d_off0 + std::int64_t(m) * p.ldd + n;
          if (p.d_is_bf16) {
            static_cast<__nv_bfloat16*>(p.d)[off] = __float2bfloat16_rn(v);
          } else {
            static_cast<float*>(p.d)[off] = v;
          }
        }
      }
    }
    return;
  }
  // The threads that dequantise and synchronise on one Y buffer pair.
  constexpr int kYThreads = Cfg::kPrivateY ? 128 : Cfg::kConsumerThreads;
  const int y_tid = Cfg::kPrivateY ? ctid % 128 : ctid;
  const std::uint32_t bar_free = Cfg::kPrivateY ? 1 + 2 * wg : 1, bar_ready = bar_free + 1;
  using Mma = ptx::WgmmaSS<ptx::BF16, BN>;
  using MmaRS = ptx::WgmmaRS<ptx::BF16, BN>;
  // kXInRegs: the A fragments of a 64-K sub-step's four k16 steps, two sets
  // by sub-step parity (a set is rewritten only after wgmma_wait<1> has seen
  // the MMAs that read it finish).
  std::uint32_t afrag[Cfg::kXInRegs ? 2 : 1][4][4] = {};
  float acc[BN / 2];
  // The 128 x 256 TMA-store tile's ends (docs/PERF.md stop 49): an item's
  // first wgmma runs with scale-d off (D = A*B), where zeroing the 128
  // accumulators cost 128 moves a thread at every item's start; and its
  // epilogue's global inputs (load_epilogue_inputs) are loaded before the wait
  // for its last MMAs, so they land during that drain instead of after it.
  constexpr bool kFirstMmaZeroes = Cfg::kTmaStores, kEpilogueInputsInDrain = Cfg::kTmaStores;
  // Stages taken so far (gather: this warpgroup's are every kConsumers-th from its own index, moe_gather_producer.cuh).
  std::uint32_t it = Cfg::kGather ? std::uint32_t(wg) : 0u;
  const std::uint32_t smem_base = ptx::smem_addr(smem);
  const std::uint32_t conv_base = smem_base + Cfg::kOffConv;
  const std::uint32_t xconv_base = smem_base + Cfg::kOffXConv;
  const std::uint32_t table_base = smem_base + Cfg::kOffScaleTable;
  // Two-CTA clusters: the peer's shared memory is this CTA's address plus peer_delta.
  const std::uint32_t peer_delta = kPair ? ptx::map_to_rank(smem_base, rank ^ 1u) - smem_base : 0u;
  // wgmma descriptors of the BF16 buffers, per buffer parity, as their low
  // words (the high word is the same for all): a k16 step inside a buffer
  // adds 32 bytes, 2 in the address field, which cannot carry (shared
  // addresses stay below 2^18). The loops add those steps to the whole
  // 64-bit descriptor: ptxas then steps it with one 64-bit uniform add a
  // wgmma, where a new low word joined to the high one cost it three
  // uniform moves and adds (48 of a decode stage's ~550 instructions).
  // (Stop 23 blamed this for wrong MXFP4 bn32 split-K sums; the cause was
  // the stage release overtaking its loads, docs/PERF.md stop 24.)
  // (Y buffers: a pair of sets of kYConvSubs sub-step buffers, ydesc per set;
  // whole-stage tokens: one set, kYSets.)
  const std::uint32_t ybuf0 = conv_base + (Cfg::kPrivateY ? Cfg::kYSets * wg : 0) * Cfg::kYSetBytes;
  const std::uint32_t ydesc[2] = {ptx::smem_desc_k_major_sw128_lo(ybuf0),
                                  ptx::smem_desc_k_major_sw128_lo(ybuf0 + Cfg::kYSetBytes)};
  // kYAhead: set i's descriptor is set 0's plus i sets of bytes in the
  // address field (bytes / 16; three sets stay below its 2^14 limit).
  auto y_desc_lo = [&](std::uint32_t set) {
    return Cfg::kYAhead ? ydesc[0] + set * (Cfg::kYSetBytes >> 4) : ydesc[set];
  };
  std::uint32_t y_ahead_set = 0;  // kYAhead: the set of the next sub-step
  // kTokensBf16: stage 0's tokens (sub-step buffers of BN x 128 bytes, stage
  // s kStageBytes on), and the stage whose tokens this warpgroup's
  // wgmmas may still read (-1: none), released once they are done.
  [[maybe_unused]] const std::uint32_t y_stage_desc_lo = ptx::smem_desc_k_major_sw128_lo(smem_base + Cfg::kOffY);
  [[maybe_unused]] int gather_held = -1;
  const std::uint32_t xdesc[2] = {ptx::smem_desc_k_major_sw128_lo(xconv_base + 64 * wg * 128),
                                  ptx::smem_desc_k_major_sw128_lo(xconv_base + Cfg::kXConvBytes + 64 * wg * 128)};
  // (X in shared memory with kYAhead: three buffers in turn with Y's sets.)
  auto x_desc_lo = [&](std::uint32_t set) {
    return Cfg::kYAhead ? xdesc[0] + set * (Cfg::kXConvBytes >> 4) : xdesc[set];
  };
  // kXInRegs: this thread's FP4 word of chunk c of X in a stage at S is at
  // (S + xw_off) ^ (c << 4) for row x_r0, and kXRowStep bytes on for row
  // x_r0 + 8: the swizzle XORs the chunk index with address bits the two
  // rows share, which xw_off already carries (swizzled's rule).
  constexpr std::uint32_t kXRowStep = 8 * Cfg::kRowBytes;
  // The lane-block order (gemm_config.cuh kLaneBlocks): the thread's X
  // words of a sub-step are its K 16j..16j+15 (NVFP4 block j) of each row,
  // bytes 8(j % 2).. of chunk 2 sub + j / 2.
  constexpr bool kLaneBlocks = Cfg::kLaneBlocks;
  const std::uint32_t xw_off = swizzled<Cfg::kRowBytes, Cfg::kSwizzleBits>(x_r0, 0) + (kLaneBlocks ? 8 * (j % 2) : 4 * j);

  // Dequantisation items (operand_items.cuh): X without swap-AB, and Y.
  const OperandItems<Cfg> items{table_base};
  // X: this warpgroup's 64 rows (only it reads them); Y: the whole tile,
  // split over the threads that share it. Every thread has the same number
  // of items, so none is ever empty.
  constexpr int kXSplit = item_split(64, 128), kXItems = Cfg::kXInRegs ? 0 : items_per_thread(64, 128, kXSplit);
  // Whole-stage tokens (kYWholeStage): a thread's items are chunks y_tid,
  // y_tid + kYThreads, ... of the stage, or halves of chunks (item i: half
  // i % 2 of chunk i / 2; one scale block a half) where the threads are at
  // least twice the chunks; chunk c lies in sub-step c / 2BN.
  constexpr int kYStageChunks = BN * BK / 32;
  constexpr bool kYHalves = Cfg::kYWholeStage && 2 * kYStageChunks <= kYThreads;
  constexpr int kYSplit = Cfg::kYWholeStage ? (kYHalves ? 2 : 1) : item_split(BN, kYThreads);
  constexpr int kYStageItems = kYStageChunks * kYSplit;
  // (The CUDA-core route returned above; its tile's 8 tokens would give
  // these threads no whole item, so the counts below stand at 1 for it; the
  // gather tiles' BF16 tokens need no item either.)
  constexpr bool kNoYItems = Cfg::kDp4a || Cfg::kTokensBf16;
  constexpr int kYItems = kNoYItems           ? 1
                          : Cfg::kYWholeStage ? kYStageItems / kYThreads
                                              : items_per_thread(BN, kYThreads, kYSplit);
  static_assert(kXItems * 128 == 2 * 64 * kXSplit || Cfg::kXInRegs, "X items fill the threads exactly");
  static_assert(kNoYItems ||
                    (Cfg::kYWholeStage ? kYItems * kYThreads == kYStageItems : kYItems * kYThreads == 2 * BN * kYSplit),
                "Y items fill the threads exactly");
  static_assert(!Cfg::kYWholeStage || !Cfg::kFp8, "whole-stage tokens: the BF16 route");
  static_assert(!Cfg::kPrepackedB || Cfg::kSwap || kYSplit == 1, "prepacked weights as Y: whole chunks (logical_pieces)");
  ItemPlace xpl[kXItems > 0 ? kXItems : 1], ypl[kYItems];
  // The lane-block order's token stores (4-byte pairs of a half chunk,
  // 8-byte pairs of a chunk) fill a 16-byte piece from a row's four blocks;
  // without bank conflicts only if a warp's lanes take a row's blocks (or
  // chunks) side by side, eight rows (sixteen) a warp. So the item of
  // stage index i is, of a sub-step: half h = i % 2 of chunk (i / 2) % 2 of
  // row i / 4 (halves), or chunk i % 2 of row i / 2; place's order is
  // chunk-major. (In place's order the four-byte stores ran 2-way and the
  // eight-byte ones 4-way conflicted: decode 0.98-1.04x the time of the
  // chunk order, where the X side alone had run 0.94-1.00x, docs/PERF.md
  // stop 51.)
  auto y_item = [&](int i) {
    if constexpr (kLaneBlocks) {
      return kYHalves ? (((i / 2) % 2) * BN + i / 4) * 2 + i % 2 : (i % 2) * BN + i / 2;
    } else {
      return i;
    }
  };
  // kYRowItems: item i is row i % BN of sub-step i / BN (a warp's lanes
  // take 32 rows of one sub-step), for the first BN x BK/64 threads (whole
  // warps); the rest convert no tokens.
  constexpr int kYRows = Cfg::kYRowItems ? BN * (BK / 64) : 0;
  static_assert(!Cfg::kYRowItems || (kYRows % 32 == 0 && kYRows <= kYThreads), "row items: whole warps, one a thread");
  static_assert(!Cfg::kYRowItems || !Cfg::kPrivateY, "row items: one Y copy");
  const bool y_row_item = Cfg::kYRowItems && y_tid < kYRows;
  auto place_items = [&](std::int32_t xs_row0, std::int32_t ys_row0) {
#pragma unroll
    for (int u = 0; u < kXItems; ++u)
      xpl[u] = items.place(0, Cfg::kOffXScale, xs_row0, 64, 64 * wg, kXSplit, ctid % 128 + 128 * u);
    if constexpr (Cfg::kTokensBf16) {
      // (The wgmmas read the stage's BF16 tokens: no Y item.)
    } else if constexpr (Cfg::kYRowItems) {
      ypl[0] = items.at_sub(items.place(Cfg::kOffY, Cfg::kOffYScale, ys_row0, BN, 0, 1, y_tid % BN), (y_tid / BN) % (BK / 64));
    } else {
#pragma unroll
      for (int u = 0; u < kYItems; ++u)
        ypl[u] = Cfg::kYWholeStage ? items.at_sub(items.place(Cfg::kOffY, Cfg::kOffYScale, ys_row0, BN, 0, kYSplit,
                                                              y_item((y_tid + kYThreads * u) % (2 * BN * kYSplit))),
                                                  (y_tid + kYThreads * u) / (2 * BN * kYSplit))
                                   : items.place(Cfg::kOffY, Cfg::kOffYScale, ys_row0, BN, 0, kYSplit, y_tid + kYThreads * u);
    }
  };

  // MoE-dense: each expert's product goes to `expert_acc` and is folded into `acc`
  // as acc += alpha·expert_acc, with alpha per token: X rows (x_r0, x_r0 + 8)
  // without swap-AB, Y columns (8i + 2j + e) with it.
  constexpr int kAlphaRegs = Cfg::kSwap ? BN / 4 : 2;
  // Gather: a pass's product, added into the shared accumulator at its end.
  float expert_acc[Cfg::kMoe || Cfg::kGather ? BN / 2 : 1];
  // FP8 route: a 32-K block's product before its scales, as two halves of
  // the tile's columns (unused, so allocated no registers, on the BF16 route,
  // where kHalfN only keeps the FP8 code compiling).
  constexpr int kHalfN = Cfg::kFp8 ? BN / 2 : 8;
  float block_acc[2][kHalfN / 2];
  float alpha[Cfg::kMoe && !Cfg::kAlphaAtFold ? kAlphaRegs : 1];
  bool fold_pending = false, part_fresh = true;
  // kAlphaAtFold: the stage whose header holds the pending fold's alpha,
  // released by the fold.
  int held_stage = 0;
  auto fold = [&] {
    if constexpr (Cfg::kMoe) {
      [[maybe_unused]] const std::uint32_t held_alpha =
          smem_base + held_stage * Cfg::kStageBytes + Cfg::kOffHeader + sizeof(MoeStageHeader);
      [[maybe_unused]] std::uint32_t dep = 0;
#pragma unroll
      for (int c = 0; c < BN / 8; ++c) {
        // Column group c: acc 4c + 2h + e (row half h, column e); alpha by
        // column (token 8c + 2j + e) with swap-AB, else by row (x_r0 + 8h).
        float col_alpha[2] = {0.0f, 0.0f};
        if constexpr (Cfg::kAlphaAtFold) {
          const uint2 a2 = ptx::lds64(held_alpha + 4 * (8 * c + 2 * j));
          dep ^= a2.x ^ a2.y;
          col_alpha[0] = __uint_as_float(a2.x);
          col_alpha[1] = __uint_as_float(a2.y);
        } else if constexpr (Cfg::kSwap) {
          col_alpha[0] = alpha[2 * c];
          col_alpha[1] = alpha[2 * c + 1];
        }
#pragma unroll
        for (int i = 4 * c; i < 4 * c + 4; ++i) {
          const int h = (i / 2) % 2, e = i % 2;
          acc[i] = fmaf(Cfg::kSwap ? col_alpha[e] : alpha[h], expert_acc[i], acc[i]);
        }
      }
      if constexpr (Cfg::kAlphaAtFold) ptx::mbar_arrive_after(&empty[held_stage], dep, p.k < 0);
    }
    fold_pending = false;
    part_fresh = true;
  };

  // X from registers: this thread's FP4 words of X in the stage at x_base
  // (word j of chunks 2sub, 2sub+1 for rows x_r0, x_r0 + 8), and where its
  // scale codes lie (X row x_r0 + 8h: the word at xcode_row[h] holds the
  // sub-step's columns, NVFP4 4sub .. 4sub + 3, MXFP4 4(sub/2) .. + 3).
  // Without swap-AB that word is loaded here too, early, so its latency hides
  // behind Y's dequantisation.
  // The 4-code word of X row x_r0 + 8h in chunk c of the scale codes of the stage at x_base.
  auto x_code_offset = [&](std::int32_t xs_row0, int h) {
    const int sr = xs_row0 + x_r0 + 8 * h;
    return std::uint32_t(Cfg::kOffXScale + (sr / 128) * 512 * Cfg::kChunksPerStage + scale_in_chunk(sr % 128, 0));
  };
  // Gather tiles: x_code_offset of the work item, set at its start
  // (set_x_code_item). Worked out at each use, ptxas re-added its pieces
  // for every scale code of a stage (two or three adds a code).
  [[maybe_unused]] std::uint32_t x_code_item[2] = {0u, 0u};
  auto set_x_code_item = [&](std::int32_t xs_row0) {
#pragma unroll
    for (int h = 0; h < 2; ++h) x_code_item[h] = x_code_offset(xs_row0, h);
  };
  auto x_code_word_at = [&](std::uint32_t x_base, std::int32_t xs_row0, int h, int c) {
    if constexpr (Cfg::kGather) return x_base + x_code_item[h] + c * 512;
    return x_base + x_code_offset(xs_row0, h) + c * 512;
  };
  // The gather tiles in the lane-block order: the stage's bases of this
  // thread's words and scale codes, set once a stage (set_x_stage_bases),
  // so that each sub-step's loads are a base plus a constant (the words'
  // XOR with the sub-step's chunk bit too, whose bits no other term
  // touches). Worked out at each use, ptxas spent an add and an XOR a
  // sub-step on the words and an add a code.
  constexpr bool kStageBases = Cfg::kGather && Cfg::kLaneBlocks;
  [[maybe_unused]] std::uint32_t x_word_stage = 0, x_code_stage[2] = {0u, 0u};
  auto set_x_stage_bases = [&](std::uint32_t x_base) {
    // (The words' chunk is 2 sub + j / 2, the XOR's two terms disjoint.)
    x_word_stage = (x_base + xw_off) ^ ((j / 2) << 4);
    // (The code's column: NVFP4 j; MXFP4 (2 sub + j / 2) % 4 = 2 (sub % 2) + j / 2.)
#pragma unroll
    for (int h = 0; h < 2; ++h) x_code_stage[h] = x_base + x_code_item[h] + (kNv ? j : j / 2);
  };
  // kLaneBlocks: xw[w][h] is word w of the sub-step's K 16j..16j+15, row
  // x_r0 + 8h (one 8-byte load a row).
  auto load_x_words = [&](std::uint32_t x_base, int sub, std::int32_t xs_row0, std::uint32_t (&xw)[2][2],
                          std::uint32_t (&xcode_row)[2], std::uint32_t (&xcode_word)[2]) {
    if constexpr (kLaneBlocks) {
      const std::uint32_t a = kStageBases ? x_word_stage ^ (sub << 5) : (x_base + xw_off) ^ ((2 * sub + j / 2) << 4);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint2 v = ptx::lds64(a + h * kXRowStep);
        xw[0][h] = v.x;
        xw[1][h] = v.y;
      }
    } else {
#pragma unroll
      for (int cc = 0; cc < 2; ++cc) {
        const std::uint32_t a = (x_base + xw_off) ^ ((2 * sub + cc) << 4);
        xw[cc][0] = ptx::lds32(a);
        xw[cc][1] = ptx::lds32(a + kXRowStep);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      xcode_row[h] = kStageBases ? x_code_stage[h] + (kNv ? sub : sub / 2) * 512 + (kNv ? 0 : 2 * (sub % 2))
                                 : x_code_word_at(x_base, xs_row0, h, kNv ? sub : sub / 2);
      xcode_word[h] = Cfg::kSwap ? 0u : ptx::lds32(xcode_row[h]);
    }
  };

  // The scale factors of those X words' blocks (2sub + cc, rows x_r0 and
  // x_r0 + 8): BF16 factors, or the FP8 route's FP32 bits; the code of
  // block 2sub + cc is column 2cc + j/2 of the word (NVFP4) or column
  // (2sub + cc) % 4 (MXFP4). Swap-AB (the decode and gather tiles, bound by
  // the integer ALU) reads each code with a byte load; the 128 x 256 tile,
  // bound by shared-memory traffic, shifts it out of the word (its byte
  // loads measured 1.01-1.05x the time on the H200, docs/PERF.md stop 23).
  // With look_up false (std::false_type) xf gets the codes themselves.
  // kLaneBlocks: one factor a row, in xf[0][h] (and xf[1][h], the same):
  // NVFP4 block j's (column j of the word); MXFP4 the 32-K block of chunk
  // 2sub + j/2 (column (2sub + j/2) % 4 of the word of chunks 4(sub/2)..).
  auto load_x_factors = [&](int sub, const std::uint32_t (&xcode_row)[2], const std::uint32_t (&xcode_word)[2],
                            std::uint32_t (&xf)[2][2], auto look_up) {
    if constexpr (kLaneBlocks) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const std::uint32_t code = ptx::lds8(xcode_row[h] + (kStageBases ? 0 : kNv ? j : (2 * sub + j / 2) % 4));
        xf[0][h] = xf[1][h] = decltype(look_up)::value ? ptx::lds32(table_base + 4 * code) : code;
      }
    } else {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int cc = 0; cc < 2; ++cc) {
          const int col = kNv ? 2 * cc : (2 * sub + cc) % 4;  // (+ j/2, NVFP4)
          const std::uint32_t code = Cfg::kSwap ? ptx::lds8(xcode_row[h] + col + (kNv ? j / 2 : 0))
                                                : (xcode_word[h] >> (8 * col + (kNv ? 8 * (j / 2) : 0))) & 0xffu;
          xf[cc][h] = decltype(look_up)::value ? ptx::lds32(table_base + 4 * code) : code;
        }
      }
    }
  };
  // MXFP4 weights as X (swap-AB, BF16 route): one multiply a pair where all
  // of a warp's codes of the sub-step allow it (mxfp4_one_multiply_factor:
  // scales up to 2, as weights' are), else the table's two (a warp-uniform
  // choice; the table is then read only on that path, so load_x_factors
  // returns the codes). In the MoE-dense swap-AB tiles (seed-fc2 M =
  // 32-64): 0.90-0.95x the time (stop 27). The two-CTA gather tiles
  // (moe-fc2 to M = 224) measured 0.99x the time on weights' scales and
  // 1.05-1.08x on wider ones in the chunk order (docs/PERF.md stop 26); in
  // the lane-block order (the 8-token tile, one factor a row), 0.960-0.992x
  // and 1.037-1.065x (`--wide-weight-scales`, where most votes fail; stop
  // 60), so that one takes it: an MX quantizer gives weights scales up to
  // 2 (codes up to 128) wherever a block's amax is below 16.
  constexpr bool kXOneMultiply =
      !kNv && !Cfg::kFp8 && Cfg::kSwap && !(Cfg::kGather && Cfg::kCtasPerSm == 2 && !kLaneBlocks);
  // The decode tiles (256-K stages) take a stage's codes at once
  // (consume_stage, stage_codes): MXFP4 decode rows of 1-32 tokens
  // 0.964-0.992x the time, 64 tokens 0.945-0.972x, dense 128x7168x16384
  // (the 128-token tile) 0.973-0.980x (H200, docs/PERF.md stop 33); the
  // MoE-dense tiles too: seed-fc2 MXFP4 M = 32 and 64 0.968-1.002x (stop
  // 34). Not the gather tiles in the chunk order: 0.998-1.017x on moe-fc2
  // MXFP4 (stop 34); the 8-token one in the lane-block order takes it
  // (moe-fc2 MXFP4 M = 32-128 0.982-0.998x, with `--wide-weight-scales`
  // 0.993-1.009x; stop 61).
  constexpr bool kXStageCodes = kXOneMultiply && (!Cfg::kGather || kLaneBlocks) && BK == 256;
  // Prepacked MXFP4 weights as Y (without swap-AB, not MoE-dense): each
  // item's factor worked out from its code (OperandItems::load) rather than
  // read from the table. Dense and prefill MXFP4 prepacked cluster rows
  // 0.966-0.999x the time (prefill 0.966-0.970); MoE-dense's direct tile
  // ran seed-fc2 M >= 128 in 1.002-1.006x, and standard weights
  // 0.995-1.015x (an earlier form), so those keep the table. One multiply a
  // pair where a warp's codes allow it (the swap-AB X path's vote) ran
  // prepacked rows 0.971-0.987x but standard ones 1.02-1.04x (H200,
  // docs/PERF.md stop 43).
  constexpr bool kYScaleArithmetic = !kNv && !Cfg::kFp8 && !Cfg::kSwap && !Cfg::kMoe && Cfg::kPrepackedB;

  // The codes of a stage past K, cleared before any reads them (every
  // consumer thread its share: operand_items.cuh, clear_codes_past_k).
  auto clear_scales_past_k = [&](int s, int k_stage) {
    constexpr int kWords = (Cfg::kXBands + Cfg::kYBands) * Cfg::kChunksPerStage * 128;  // X's bands, then Y's
    clear_codes_past_k<Cfg>(smem_base + s * Cfg::kStageBytes + Cfg::kOffXScale, (p.k - k_stage) / Cfg::kBlock, 0, kWords,
                            ctid, Cfg::kConsumerThreads);
    ptx::fence_proxy_async_smem();
    ptx::named_barrier(Cfg::kConsumerBarrier, Cfg::kConsumerThreads);
  };

  // The FP8 route's sub-steps of the stage at x_base (K block kb): per 64-K
  // sub-step, X to E4M3 A fragments and Y to an E4M3 buffer with its rows'
  // scale factors, then per 32-K block MMAs into block_acc (two half-tile
  // ones, below) and acc += block_acc · (X factor · Y factor) on the CUDA
  // cores, each half added while the next one runs. Each warpgroup waits its MMAs
  // within the sub-step, so by a sub-step's ready barrier every warpgroup
  // is done with the previous one: the two buffers need no free barrier.
  // MoE-dense: `header` carries the stage's expert's alpha for the tile's
  // tokens (X rows), which joins the X factor, so each block adds
  // alpha·2^(ex+ey)·block_acc straight into acc (exact scaling by powers of
  // two; one rounding, in the FMA, as the BF16 route's fold).
  auto consume_stage_fp8 = [&](int s, int kb, const std::uint8_t* header, std::int32_t xs_row0) {
    const std::uint32_t x_base = smem_base + s * Cfg::kStageBytes;
    float row_alpha[2] = {1.0f, 1.0f};  // rows x_r0, x_r0 + 8
    if constexpr (Cfg::kMoe) {
      const float* a = moe_alpha(reinterpret_cast<const MoeStageHeader*>(header));
      row_alpha[0] = a[x_r0];
      row_alpha[1] = a[x_r0 + 8];
    }
#pragma unroll
    for (int sub = 0; sub < BK / 64; ++sub) {
      const std::uint32_t ybuf = ybuf0 + (sub % 2) * Cfg::kYConvBytes;
      std::uint32_t xw[2][2], xcode_row[2], xcode_word[2];
      load_x_words(x_base, sub, xs_row0, xw, xcode_row, xcode_word);
      const Item yi = items.load(ypl[0], x_base, sub, 1);
      std::uint32_t xf[2][2];  // X factors' FP32 bits
      load_x_factors(sub, xcode_row, xcode_word, xf, std::true_type{});
      {  // Y: this thread's chunk as E4M3 (even words, then odd, fp8_logical_k) and its factor
        const int n = ypl[0].row, cc = ypl[0].k0 / 32, sw = (n / 2) % 4;
        const std::uint32_t row = ybuf + n * 64;
        const uint4& w = yi.raw;
        ptx::sts128(row + (((2 * cc) ^ sw) << 4), make_uint4(e4m3_even(w.x), e4m3_even(w.y), e4m3_even(w.z), e4m3_even(w.w)));
        ptx::sts128(row + (((2 * cc + 1) ^ sw) << 4), make_uint4(e4m3_odd(w.x), e4m3_odd(w.y), e4m3_odd(w.z), e4m3_odd(w.w)));
        ptx::sts32(ybuf + Cfg::kYConvScales + 4 * (cc * BN + n), yi.f0);
      }
      std::uint32_t a8[2][4];
#pragma unroll
      for (int cc = 0; cc < 2; ++cc) {
        a8[cc][0] = e4m3_even(xw[cc][0]);
        a8[cc][1] = e4m3_even(xw[cc][1]);
        a8[cc][2] = e4m3_odd(xw[cc][0]);
        a8[cc][3] = e4m3_odd(xw[cc][1]);
      }
      ptx::fence_proxy_async_smem();
      ptx::named_barrier(bar_ready, kYThreads);
      if (sub == BK / 64 - 1)  // (after this thread's loads of the stage landed: consume_stage's release)
        ptx::mbar_arrive_after(&empty[s],
                               a8[0][0] ^ a8[0][1] ^ a8[1][0] ^ a8[1][1] ^ xf[0][0] ^ xf[0][1] ^ xf[1][0] ^ xf[1][1] ^
                                   (Cfg::kMoe ? __float_as_uint(row_alpha[0]) ^ __float_as_uint(row_alpha[1]) : 0u),
                               p.k < 0);
      const std::uint64_t ydesc8 = ptx::smem_desc_k_major_sw64(ybuf);
      // The sub-step's two blocks as four MMAs of half the columns each (q =
      // 2·block + half), into the two halves of block_acc in turn: MMA q + 1
      // runs on the tensor cores while the CUDA cores add MMA q's product
      // into acc, where a whole-tile MMA was waited on before its addition
      // (both warpgroups reach these MMAs together, after the sub-step's
      // barrier, so the other warpgroup's MMA hid nothing).
      float x_factor[2][2];  // [block][row half]: the X factor (times alpha)
#pragma unroll
      for (int cc = 0; cc < 2; ++cc)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          x_factor[cc][h] = Cfg::kMoe ? __uint_as_float(xf[cc][h]) * row_alpha[h] : __uint_as_float(xf[cc][h]);
      auto issue = [&](int q) {
        const int cc = q / 2, hf = q % 2;
#pragma unroll
        for (int i = 0; i < kHalfN / 2; ++i) ptx::fence_register(block_acc[hf][i]);
        ptx::wgmma_fence();
        // (rows BN/2.. of the buffer start BN/2 · 64 bytes on: whole 512-byte swizzle atoms)
        ptx::WgmmaRS<ptx::E4M3, kHalfN>::mma(block_acc[hf], a8[cc], ydesc8 + 2 * cc + hf * kHalfN * 64 / 16, false);
        ptx::wgmma_commit();
#pragma unroll
        for (int i = 0; i < kHalfN / 2; ++i) ptx::fence_register(block_acc[hf][i]);
      };
      auto add_product = [&](int q) {
        const int cc = q / 2, hf = q % 2;
#pragma unroll
        for (int i = 0; i < kHalfN / 2; ++i) ptx::fence_register(block_acc[hf][i]);
#pragma unroll
        for (int cl = 0; cl < kHalfN / 8; ++cl) {  // columns 8c + 2j + {0, 1} of the tile, c = cl + hf·BN/16
          const int c = cl + hf * (kHalfN / 8);
          const uint2 yf = ptx::lds64(ybuf + Cfg::kYConvScales + 4 * (cc * BN + 8 * c + 2 * j));
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            acc[4 * c + 2 * h] = fmaf(block_acc[hf][4 * cl + 2 * h], x_factor[cc][h] * __uint_as_float(yf.x), acc[4 * c + 2 * h]);
            acc[4 * c + 2 * h + 1] =
                fmaf(block_acc[hf][4 * cl + 2 * h + 1], x_factor[cc][h] * __uint_as_float(yf.y), acc[4 * c + 2 * h + 1]);
          }
        }
      };
      issue(0);
#pragma unroll
      for (int q = 1; q < 4; ++q) {
        issue(q);
        ptx::wgmma_wait<1>();
        add_product(q - 1);
      }
      ptx::wgmma_wait<0>();
      add_product(3);
    }
  };

  // Consumes the stage holding K block kb: dequantise, then MMA, per 64-K
  // sub-step. `header` (MoE-dense only) carries the expert's alpha on its
  // last stage (on every stage for the FP8 route).
  // (item_first: the work item's first stage, whose first wgmma zeroes the
  // accumulators where kFirstMmaZeroes.)
  auto consume_stage = [&](int s, int kb, const std::uint8_t* header, bool ends_expert, std::int32_t xs_row0,
                           std::int32_t ys_row0, bool item_first = false) {
    if constexpr (Cfg::kFp8) {
      consume_stage_fp8(s, kb, header, xs_row0);
      return;
    }
    const std::uint32_t x_base = smem_base + s * Cfg::kStageBytes;
    if constexpr (kStageBases) set_x_stage_bases(x_base);
    // kXPrefetch: sub-step s + 1's X words and scale codes are loaded at the
    // start of sub-step s (their table lookups at s + 1), so that their
    // shared-memory latency overlaps sub-step s's conversion.
    constexpr bool kXPrefetch = Cfg::kXPrefetch;
    [[maybe_unused]] std::uint32_t xw_next[2][2], xcode_next[2][2];
    auto prefetch_x = [&](int sub_n) {
      std::uint32_t row[2], word[2];
      load_x_words(x_base, sub_n, xs_row0, xw_next, row, word);
      if constexpr (!kXStageCodes) load_x_factors(sub_n, row, word, xcode_next, std::false_type{});
    };
    if constexpr (kXPrefetch) prefetch_x(0);
    // kXStageCodes: the stage's X scale codes (MXFP4: 8 a row, two 4-code
    // words, rows x_r0 and x_r0 + 8) read once, at its start, and one warp
    // vote a stage on whether they all allow the one-multiply factor,
    // instead of four byte loads and a vote a sub-step (a code past 0x80
    // anywhere in the warp's rows sends the whole stage down the table's
    // two multiplies, not just its sub-step).
    [[maybe_unused]] std::uint32_t stage_codes[2][2];  // [row half][chunk: sub-steps 2c, 2c + 1]
    [[maybe_unused]] bool stage_one = false;
    if constexpr (kXStageCodes) {
      static_assert(Cfg::kChunksPerStage == 2, "8 codes a row a stage: two words");
      std::uint32_t past = 0;
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          stage_codes[h][c] = ptx::lds32(x_code_word_at(x_base, xs_row0, h, c));
          past |= mxfp4_codes_past_one_multiply(stage_codes[h][c]);
        }
      stage_one = __all_sync(0xffffffffu, past == 0);
    }
    // kTokensBf16: the stage's token descriptor, made warp-uniform by a
    // shuffle (the stage index comes from a loop counter ptxas cannot prove
    // uniform): the wgmmas' descriptors then stay in uniform registers, one
    // 64-bit uniform add each, where a per-thread descriptor cost an add, a
    // carry and two R2UR a wgmma.
    [[maybe_unused]] std::uint64_t y_stage_desc = 0;
    if constexpr (Cfg::kTokensBf16)
      y_stage_desc = ptx::smem_desc_sw128_from_lo(
          __shfl_sync(0xffffffffu, y_stage_desc_lo + std::uint32_t(s) * (Cfg::kStageBytes >> 4), 0));
    [[maybe_unused]] Item y_next[kYItems];
#pragma unroll
    for (int sub = 0; sub < BK / 64; ++sub) {
      const int buf = sub % 2;  // the A fragment set (kXInRegs) or X buffer
      // Y: the sub-steps of a stage form groups of kYConvSubs whose tokens
      // are converted together at the group's first sub-step (y_turn) into
      // one set of the Y pair; the sets alternate group by group, an even
      // number a stage, so a group's set is known at compile time (and the
      // wgmmas' descriptors stay in uniform registers). Whole-stage tokens:
      // one group a stage, one set.
      constexpr int kYSubs = Cfg::kYConvSubs, kYGroups = BK / 64 / kYSubs;
      static_assert(Cfg::kYSets != 2 || kYGroups % 2 == 0, "a pair of Y sets: an even number of groups a stage");
      static_assert(!Cfg::kYAhead || kYSubs == 1, "three Y sets: one sub-step a set");
      // (BF16 tokens, kTokensBf16: none to convert; the wgmmas read the stage's.)
      const bool y_turn = !Cfg::kTokensBf16 && sub % kYSubs == 0;
      // (kYAhead: the sets in turn, a run-time index kept across stages and items.)
      const std::uint32_t yset = Cfg::kYAhead ? y_ahead_set : Cfg::kYSets == 1 ? 0u : (sub / kYSubs) % 2;
      const std::uint32_t yoff = (sub % kYSubs) * Cfg::kYConvBytes;  // this sub-step's buffer in its set
      // The set this group rewrites was last read by this warpgroup's wgmmas
      // of the group before the last (wait<1> leaves only the latest one in
      // flight; with one set, the last group: wait<0>), then wait for every
      // other user of Y. kYAhead: the set was last read three sub-steps back,
      // which every warpgroup had waited for before the last sub-step's ready
      // barrier; only the A fragments wait (wait_for_afrag, below Y's
      // conversion; X in shared memory has three buffers too, so its
      // conversion also comes first, and the wait only keeps that rule for
      // the sub-steps after this one).
      auto wait_for_afrag = [&] {
        if (Cfg::kYSets == 1 && y_turn) {
          ptx::wgmma_wait<0>();
        } else {
          ptx::wgmma_wait<1>();
        }
        if constexpr (Cfg::kXInRegs) {
          // The A fragments this sub-step rewrites were read by the MMAs the
          // wait above saw finish. A use of them here, in a branch never taken
          // (K > 0 is validated; the compiler cannot know), keeps their registers
          // reserved until now: otherwise ptxas may hand them to other values
          // while those MMAs still read them, and then serialises every
          // wgmma instead (C7513).
          if (p.k < 0) {
#pragma unroll
            for (int step = 0; step < 4; ++step)
              ptx::sts128(conv_base, make_uint4(afrag[buf][step][0], afrag[buf][step][1], afrag[buf][step][2], afrag[buf][step][3]));
          }
        }
      };
      if constexpr (!Cfg::kYAhead) {
        wait_for_afrag();
        if (y_turn) ptx::named_barrier(bar_free, kYThreads);
      }
      if constexpr (Cfg::kTokensBf16) {
        // The wait above saw every wgmma but sub-step 0's of this stage
        // done: those of the stage before, whose tokens they read in place
        // and whose weights they took from registers. The arrive still waits
        // for this stage's words and codes prefetched for this sub-step
        // (kXPrefetch), which landed during sub-step 0's MMAs, so that no
        // shared load is in flight at any release (scripts/
        // sass_release_audit.py cannot tell one stage's loads from another's).
        if (sub == 1 && gather_held >= 0) {
          if constexpr (kXPrefetch) {
            std::uint32_t dep = 0;
#pragma unroll
            for (int cc = 0; cc < 2; ++cc)
#pragma unroll
              for (int h = 0; h < 2; ++h) dep ^= xw_next[cc][h] ^ (kXStageCodes ? 0u : xcode_next[cc][h]);
            ptx::mbar_arrive_after(&empty[gather_held], dep, p.k < 0);
          } else {
            ptx::mbar_arrive(&empty[gather_held]);
          }
          gather_held = -1;
        }
      }
      const std::uint32_t ybuf = ybuf0 + yset * Cfg::kYSetBytes;  // the set's first buffer
      const std::uint32_t xset = Cfg::kYAhead ? y_ahead_set : std::uint32_t(buf);  // (X in shared memory)
      const std::uint32_t xbuf = xconv_base + xset * Cfg::kXConvBytes;
      // kXInRegs: X's words, read first so their latency hides behind Y's
      // dequantisation.
      [[maybe_unused]] std::uint32_t xw[2][2], xcode_row[2], xcode_word[2];  // (kXInRegs only)
      [[maybe_unused]] std::uint32_t xcodes[2][2];                          // (kXPrefetch only)
      if constexpr (kXPrefetch) {
#pragma unroll
        for (int cc = 0; cc < 2; ++cc)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            xw[cc][h] = xw_next[cc][h];
            if constexpr (!kXStageCodes) xcodes[cc][h] = xcode_next[cc][h];
          }
        if (sub + 1 < BK / 64) prefetch_x(sub + 1);
      } else if constexpr (Cfg::kXInRegs) {
        load_x_words(x_base, sub, xs_row0, xw, xcode_row, xcode_word);
      }
      // All loads first (X's conversion then hides Y's load latency) where
      // registers allow: not in the two-CTA decode tiles, which spill with
      // it and convert X before loading Y. MoE-dense's direct tile (X in
      // shared memory beside its second accumulator set) fits it without
      // spills: 0.93-0.95x the time on standard weights (seed-fc2 M >= 96,
      // ncu: short-scoreboard stalls 1.38 -> 0.90 an instruction), neutral
      // on prepacked ones (0.997-1.011x), so those keep the old order
      // (H100, docs/PERF.md stop 29).
      constexpr bool kLoadsFirst = Cfg::kCtasPerSm == 1 && !(Cfg::kMoe && Cfg::kPrepackedB);
      Item xi[kXItems > 0 ? kXItems : 1], yi[kYSubs][kYItems];
#pragma unroll
      for (int u = 0; u < kXItems; ++u) xi[u] = items.load(xpl[u], x_base, sub, kXSplit);
      if constexpr (!kLoadsFirst) {
#pragma unroll
        for (int u = 0; u < kXItems; ++u) items.template store<false>(xi[u], xpl[u], kXSplit, xbuf);
      }
      if (y_turn) {
        if constexpr (Cfg::kYRowItems) {
          // (Loaded where stored, below: twelve registers held across the
          // X loads spilled the 32-token four-warpgroup tile.)
        } else if constexpr (Cfg::kYWholeStage) {
#pragma unroll
          for (int u = 0; u < kYItems; ++u)
            yi[0][u] = kYHalves ? items.load_words(ypl[u], x_base, 0) : items.load(ypl[u], x_base, 0, 1);
        } else {
#pragma unroll
          for (int g = 0; g < kYSubs; ++g)
#pragma unroll
            for (int u = 0; u < kYItems; ++u)
              yi[g][u] = Cfg::kYPrefetch && sub > 0 ? y_next[u]
                                                    : items.template load<kYScaleArithmetic>(ypl[u], x_base, sub + g, kYSplit);
          if constexpr (Cfg::kYPrefetch) {  // the next sub-step's items of this stage, behind this one's
            // (From the table even where kYScaleArithmetic: the same
            // factors, and the form measured at stop 43; the prefetched
            // items' loads have a sub-step to land.)
            if (sub + 1 < BK / 64) {
#pragma unroll
              for (int u = 0; u < kYItems; ++u) y_next[u] = items.load(ypl[u], x_base, sub + 1, kYSplit);
            }
          }
        }
      }
      // kXInRegs: the X words' scale factors, looked up once Y's loads are in flight.
      [[maybe_unused]] std::uint32_t xf[2][2];  // (kXOneMultiply: the codes, until the factors' choice)
      if constexpr (kXPrefetch && !kXStageCodes) {
#pragma unroll
        for (int cc = 0; cc < 2; ++cc)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            if (kLaneBlocks && cc == 1) {  // (one factor a row)
              xf[1][h] = xf[0][h];
            } else {
              xf[cc][h] = kXOneMultiply ? xcodes[cc][h] : ptx::lds32(table_base + 4 * xcodes[cc][h]);
            }
          }
      } else if constexpr (kXStageCodes) {
#pragma unroll
        for (int cc = 0; cc < 2; ++cc)
#pragma unroll
          for (int h = 0; h < 2; ++h)  // code column (2sub + cc) % 4 of chunk sub / 2 ((2sub + j/2) % 4: lane blocks)
            xf[cc][h] = mxfp4_code_pair(stage_codes[h][sub / 2], (2 * sub + (kLaneBlocks ? j / 2 : cc)) % 4);
      } else if constexpr (Cfg::kXInRegs) {
        load_x_factors(sub, xcode_row, xcode_word, xf, std::bool_constant<!kXOneMultiply>{});
      }
      if constexpr (kLoadsFirst) {
#pragma unroll
        for (int u = 0; u < kXItems; ++u) items.template store<false>(xi[u], xpl[u], kXSplit, xbuf);
      }
      if (y_turn) {
        if constexpr (Cfg::kYRowItems) {
          if (y_row_item) items.store_row_lane_blocks(items.load_row(ypl[0], x_base), ypl[0], ybuf);
        } else if constexpr (Cfg::kYWholeStage) {
#pragma unroll
          for (int u = 0; u < kYItems; ++u) {
            if constexpr (kLaneBlocks && kYHalves) {
              items.store_half_chunk_lane_blocks(yi[0][u], ypl[u], ybuf);
            } else if constexpr (kLaneBlocks) {
              items.store_chunk_lane_blocks(yi[0][u], ypl[u], ybuf);
            } else if constexpr (kYHalves) {
              items.store_half_chunk(yi[0][u], ypl[u], ybuf);
            } else {
              items.template store<false>(yi[0][u], ypl[u], 1, ybuf);
            }
          }
        } else {
#pragma unroll
          for (int g = 0; g < kYSubs; ++g)
#pragma unroll
            for (int u = 0; u < kYItems; ++u)
              items.template store<!Cfg::kSwap>(yi[g][u], ypl[u], kYSplit, ybuf + g * Cfg::kYConvBytes);
        }
      }
      if constexpr (Cfg::kYAhead) wait_for_afrag();
      if constexpr (Cfg::kXInRegs) {
        // Word (cc, h)'s four pairs into the A fragments of k16 steps 2cc, 2cc + 1.
        auto put_pairs = [&](int cc, int h, const std::uint32_t (&pairs)[4]) {
#pragma unroll
          for (int s2 = 0; s2 < 2; ++s2) {
            afrag[buf][2 * cc + s2][h] = pairs[2 * s2];
            afrag[buf][2 * cc + s2][2 + h] = pairs[2 * s2 + 1];
          }
        };
        if constexpr (kXOneMultiply) {
          std::uint32_t pairs[2][2][4];  // [cc][h]: raw, then scaled
#pragma unroll
          for (int cc = 0; cc < 2; ++cc)
#pragma unroll
            for (int h = 0; h < 2; ++h) raw_pairs<Cfg::kPrepackedB>(xw[cc][h], pairs[cc][h]);
          // (One branch around all four words: a branch a word cost ~40 more instructions a stage.)
          bool one;
          if constexpr (kXStageCodes) {
            one = stage_one;
          } else {
            const std::uint32_t code_max = max(max(xf[0][0], xf[0][1]), max(xf[1][0], xf[1][1]));
            one = __all_sync(0xffffffffu, code_max <= kMxfp4OneMultiplyMaxCode);
          }
          // (kLaneBlocks: [w][h], both words of a row under its one factor, xf[0][h].)
          if (one) {
#pragma unroll
            for (int cc = 0; cc < 2; ++cc)
#pragma unroll
              for (int h = 0; h < 2; ++h) {
                const std::uint32_t code = xf[kLaneBlocks ? 0 : cc][h];
                const std::uint32_t f =
                    kXStageCodes ? mxfp4_one_multiply_factor_of_pair(code) : mxfp4_one_multiply_factor(code);
#pragma unroll
                for (int q = 0; q < 4; ++q) pairs[cc][h][q] = bf16x2_mul(pairs[cc][h][q], f);
              }
          } else {
            [[maybe_unused]] PairScale row_ps[2];  // (kLaneBlocks: a row's one factor, looked up once)
#pragma unroll
            for (int cc = 0; cc < 2; ++cc)
#pragma unroll
              for (int h = 0; h < 2; ++h) {
                const std::uint32_t code = kXStageCodes ? xf[cc][h] & 0xffu : xf[cc][h];
                const PairScale ps = kLaneBlocks && cc == 1
                                         ? row_ps[h]
                                         : pair_scale_from_table<kNv>(ptx::lds32(table_base + 4 * code));
                if constexpr (kLaneBlocks) row_ps[h] = ps;
#pragma unroll
                for (int q = 0; q < 4; ++q) pairs[cc][h][q] = apply_scale<kNv>(pairs[cc][h][q], ps);
              }
          }
#pragma unroll
          for (int cc = 0; cc < 2; ++cc)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              if constexpr (kLaneBlocks) {  // pair t of word w = cc, row h: a[2w + h] of k16 step t
#pragma unroll
                for (int t = 0; t < 4; ++t) afrag[buf][t][2 * cc + h] = pairs[cc][h][t];
              } else {
                put_pairs(cc, h, pairs[cc][h]);
              }
            }
        } else if constexpr (kLaneBlocks) {  // pair t of word w, row h: a[2w + h] of k16 step t
#pragma unroll
          for (int w = 0; w < 2; ++w)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              std::uint32_t pairs[4];
              scaled_pairs<kNv, Cfg::kPrepackedB>(xw[w][h], pair_scale_from_table<kNv>(xf[0][h]), pairs);
#pragma unroll
              for (int t = 0; t < 4; ++t) afrag[buf][t][2 * w + h] = pairs[t];
            }
        } else {
#pragma unroll
          for (int cc = 0; cc < 2; ++cc) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              std::uint32_t pairs[4];
              scaled_pairs<kNv, Cfg::kPrepackedB && Cfg::kSwap>(xw[cc][h], pair_scale_from_table<kNv>(xf[cc][h]), pairs);
              put_pairs(cc, h, pairs);
            }
          }
        }
      }
      if constexpr (Cfg::kMoe) {
        if (sub == BK / 64 - 1) {
          // The previous expert was folded at sub-step 0 (BK ≥ 128), so its
          // alpha registers are free; read this expert's before the stage
          // is released.
          if (ends_expert && !Cfg::kAlphaAtFold) {
            const float* a = moe_alpha(reinterpret_cast<const MoeStageHeader*>(header));
#pragma unroll
            for (int q = 0; q < kAlphaRegs; ++q)
              alpha[q] = Cfg::kSwap ? a[8 * (q / 2) + 2 * j + q % 2] : a[x_r0 + 8 * q];
          }
        }
      }
      if (y_turn) {
        ptx::fence_proxy_async_smem();
        ptx::named_barrier(bar_ready, kYThreads);
      }
      if (sub == BK / 64 - 1) {
        // Release the stage only once every value this thread loaded from it
        // is in a register: the arrive waits on `dep` (the last sub-step's A
        // fragments carry every X word and scale code; MoE: the alphas).
        // ptxas otherwise issues the arrive with those loads still in flight
        // (SASS of 6f7f612: the X words of the stage's last sub-step issued
        // 13 instructions before it), and an mbarrier arrive does not keep
        // the producer's next TMA fill from landing first: MXFP4 bn32 split-K
        // summed over the wrong K blocks (docs/PERF.md stops 23 and 24; the
        // mechanism alone: tests/gpu/kernels/stage_release_test.cu).
        std::uint32_t dep = 0;
        if constexpr (kLaneBlocks) {  // (step 0 carries both words of both rows, and their factors)
          dep = afrag[buf][0][0] ^ afrag[buf][0][1] ^ afrag[buf][0][2] ^ afrag[buf][0][3];
        } else if constexpr (Cfg::kXInRegs) {
          dep = afrag[buf][0][0] ^ afrag[buf][0][1] ^ afrag[buf][2][0] ^ afrag[buf][2][1];
        }
        if constexpr (Cfg::kMoe && !Cfg::kAlphaAtFold) {
          if (ends_expert) {
#pragma unroll
            for (int q = 0; q < kAlphaRegs; ++q) dep ^= __float_as_uint(alpha[q]);
          }
        }
        if (Cfg::kTokensBf16) {
          gather_held = s;  // released once its wgmmas are done (above, or at the pass's end)
        } else if (Cfg::kAlphaAtFold && ends_expert) {
          held_stage = s;  // released by the fold, which reads its alpha
        } else {
          ptx::mbar_arrive_after(&empty[s], dep, p.k < 0);
        }
        if constexpr (kPair) {
          // The peer's producer multicasts into this stage too: every thread
          // tells it, as it tells its own. (One lane a warp after a
          // __syncwarp drew a racecheck report on the MXFP4 cluster tile,
          // 62 hazards between the multicast and the scale-code reads; the
          // per-thread arrive clears it at no measured cost, while an
          // arrive with release at cluster scope, one a warp or one a
          // thread, ran the cluster tile 1.32-1.44x the time: docs/PERF.md
          // stop 37.)
          ptx::mbar_arrive_remote(ptx::smem_addr(&empty[s]) + peer_delta);
        }
      }
      if constexpr (Cfg::kMoe) {
        if (fold_pending) {  // the previous expert's MMAs must land before expert_acc is reused
          ptx::wgmma_wait<0>();
          fold();
        }
      }
      // 4 k16 MMAs into d; a fresh expert accumulator starts from zero.
      auto mma_into = [&](auto& d, bool fresh) {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) ptx::fence_register(d[i]);
        ptx::wgmma_fence();
#pragma unroll
        for (int step = 0; step < 4; ++step) {
          const std::uint64_t yd =
              Cfg::kTokensBf16
                  ? y_stage_desc + ((sub * BN * 8) + 2 * step)
                  : ptx::smem_desc_sw128_from_lo(y_desc_lo(yset)) + ((yoff >> 4) + 2 * step);
          if constexpr (Cfg::kXInRegs) {
            MmaRS::mma(d, afrag[buf][step], yd, !(fresh && step == 0));
          } else {
            Mma::mma(d, ptx::smem_desc_sw128_from_lo(x_desc_lo(xset)) + 2 * step, yd, !(fresh && step == 0));
          }
        }
        ptx::wgmma_commit();
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) ptx::fence_register(d[i]);
      };
      if constexpr (Cfg::kMoe || Cfg::kGather) {
        mma_into(expert_acc, part_fresh);
        part_fresh = false;
      } else {
        mma_into(acc, kFirstMmaZeroes && item_first && sub == 0);
      }
      if constexpr (Cfg::kYAhead) y_ahead_set = y_ahead_set == 2 ? 0u : y_ahead_set + 1;
    }
    if (ends_expert) fold_pending = true;
  };

  // The epilogue's stores. This thread's output rows: without swap-AB its X
  // rows x_r0 + 8r (r = 0, 1), with it its Y columns 8(r / 2) + 2j + r % 2
  // (tokens). A paired store (columns 2j, 2j+1 of a row, without swap-AB)
  // needs D and its strides aligned to two elements.
  constexpr int kOutRows = Cfg::kSwap ? BN / 4 : 2;
  static_assert(kOutRows <= 64, "one bit a row in a 64-bit mask");
  auto row_of = [&](const Tile& t, int r) {
    return Cfg::kSwap ? t.m0 + 8 * (r / 2) + 2 * j + r % 2 : t.m0 + x_r0 + 8 * r;
  };
  // (The stores output_stores.cuh names, spelled out here: through its
  // functions ptxas renamed or rescheduled six masked kernels, a change
  // without a measurement.)
  const int d_elem = p.d_is_bf16 ? 2 : 4;
  const bool d_pairs_aligned = reinterpret_cast<std::uintptr_t>(p.d) % (2 * d_elem) == 0 && p.ldd % 2 == 0 &&
                               (Cfg::kLayout != Layout::kMasked || p.d_group_stride % 2 == 0);
  auto store_one = [&](std::int64_t off, float v) {
    if (p.d_is_bf16) {
      static_cast<__nv_bfloat16*>(p.d)[off] = __float2bfloat16_rn(v);
    } else {
      static_cast<float*>(p.d)[off] = v;
    }
  };
  auto store_pair = [&](std::int64_t off, float v0, float v1) {
    if (p.d_is_bf16) {
      *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(p.d) + off) = __floats2bfloat162_rn(v0, v1);
    } else {
      *reinterpret_cast<float2*>(static_cast<float*>(p.d) + off) = make_float2(v0, v1);
    }
  };
  // The last contributor to a split tile of kReduceFromWorkspace: D from
  // the tile's slots (split_tile_store.cuh), with the epilogue's factor and
  // rows.
  auto store_from_slots = [&](const Tile& t, const float4* tile_ws) {
    float factor = dequant_offset_correction<kNv>();
    if constexpr (kNv) {
      if (t.group >= 0) factor *= p.a.global[a_scale_group(t)] * p.b.global[b_scale_group(t)];
    }
    const std::int64_t d_off0 = Cfg::kLayout == Layout::kMasked ? std::int64_t(t.group) * p.d_group_stride : 0;
    SplitTileRows rows;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // rows x_r0, x_r0 + 8
      const std::int32_t m = t.m0 + x_r0 + 8 * h;
      const bool in = m < t.m_end;
      const bool pad = t.group < 0 || (Cfg::kLayout == Layout::kContiguous && in && p.m_indices[m] < 0);
      rows.off[h] = d_off0 + std::int64_t(m) * p.ldd;
      rows.flags |= (in ? 1u : 0u) << h | (pad ? 4u : 0u) << h;
    }
    store_split_tile<BN, Cfg::kConsumerThreads, Cfg::kTileFloats>(tile_ws, t.slots, p.d, p.d_is_bf16, d_pairs_aligned, p.n,
                                                                   t.n0 + 2 * j, rows, factor);
  };

  // Gather: the warpgroups take passes in turn (moe_gather_producer.cuh);
  // pass p's owner adds its product into the shared accumulator after
  // pass p - 1's owner added its own (a padding pass's owner adds nothing
  // but takes its turn all the same): it waits on its
  // order mbarrier, on which every thread of the previous warpgroup arrives
  // after its addition (the last warpgroup once at the start, for pass 0).
  // So every token sums its experts in expert order (bit-identical
  // repeats). An owner cannot run two passes ahead of the other warpgroup,
  // so a wait's phase parity is its count of waits so far. (Mbarriers, not
  // named barriers: racecheck follows an mbarrier's arrive-to-wait order but
  // reported the named-barrier arrive-to-sync hand-over as races, although
  // PTX orders a bar.arrive's prior accesses before the barrier completes.)
  //
  // The epilogue (gather_store_tile) is fenced by the same token: each
  // warpgroup waits for it and passes it on once before reading the
  // accumulator (then every pass's addition is ordered before every read)
  // and once after zeroing it (then the next work item's first addition,
  // which waits for the token again, is ordered after every zeroing). The
  // token goes round once per such lap, so it is back at the next pass's
  // owner. (Named barriers there drew racecheck reports on every gather tile
  // since stop 18, docs/PERF.md.)
  constexpr int kLast = Cfg::kConsumers - 1;
  std::uint32_t order_waits = 0;
  if constexpr (Cfg::kGather) {
    if (wg == kLast) ptx::mbar_arrive(&order[0]);
  }
  auto order_lap = [&] {
    ptx::mbar_wait(&order[wg], order_waits++ & 1);
    ptx::mbar_arrive(&order[(wg + 1) % Cfg::kConsumers]);
  };

  TraceCursor trace;  // (empty unless FP4MOE_PIPELINE_TRACE)
  if (ctid % 128 == 0) trace.init(TraceCursor::base(p), 1 + wg);
  if constexpr (!Cfg::kGather) trace_start.mark_into(trace);
  trace.mark_at(kTrRoleStart, 1, role_clock);
  Tile t;
  // (kTrAskWork: the previous item's epilogue is done, the scheduler asked.)
  // kReduceFromWorkspace: the split tiles this CTA arrived at last, stored
  // after the loop. Each split item's record (tile, slots, partial) goes to
  // deferred_tiles[item % kMaxDeferredTiles] as the item starts, and bit
  // item % kMaxDeferredTiles of deferred_mask marks it once this CTA
  // arrived last. Storing D from the partials inside the loop (even one
  // float4 at a time, even as a call), keeping the bookkeeping in registers,
  // writing the record at the arrival, or asking the scheduler for the tile
  // again after the loop each made ptxas spill the stage loop's state or
  // move its descriptor arithmetic out of uniform registers: the loop has no
  // register to spare. Stream-K's split tiles lie within a CTA's last three
  // items, so their records never share a place.
  [[maybe_unused]] std::uint32_t* const deferred_mask = reinterpret_cast<std::uint32_t*>(smem + Cfg::kOffDeferred);
  [[maybe_unused]] int4* const deferred_tiles = reinterpret_cast<int4*>(smem + Cfg::kOffDeferred + 16);
  for (std::int32_t work_item = 0; (trace.mark(kTrAskWork, 0), next_work(work_item, t)); ++work_item) {
    if constexpr (Cfg::kGather) {
      float* acc_smem = reinterpret_cast<float*>(smem + Cfg::kOffGatherAcc);
      const std::int32_t xs_row0 = x_scale_row0(t) % 128;
      set_x_code_item(xs_row0);
      // The tokens and alphas of this thread's columns 8c + 2j + {0, 1} of
      // the current pass (read at the pass's start, used at its end).
      int2 tok[BN / 8];
      float2 wgt[BN / 8];
      const int stages_per_pass = p.expert_width / BK;
      // Waits until this warpgroup's stage n is full (gather_stage_seq_checked).
      auto wait_stage = [&](std::uint32_t n) {
        const int s = n % kStages;
        const std::uint32_t parity = (n / kStages) & 1;
        ptx::mbar_wait(&full[s], parity);
        if constexpr (gather_stage_seq_checked<Cfg>()) {
          const std::uint32_t seq = smem_base + Cfg::header_offset(s) + offsetof(GatherStageHeader, seq);
          if (ptx::lds32(seq) != n) {  // the slot's previous fill, still landing
            ptx::mbar_wait(&full[s], parity ^ 1);
            ptx::mbar_wait(&full[s], parity);
          }
        }
      };
      for (;;) {  // one pass per iteration
        const int s0 = it % kStages;
        trace.mark(kTrPassWait, s0);
        wait_stage(it);
        // The header by ld.shared (a generic load here sat on the pass's critical path: ncu).
        GatherStageHeader h;
        {
          const std::uint32_t hdr = smem_base + Cfg::header_offset(s0);
          const uint4 h0 = ptx::lds128(hdr), h1 = ptx::lds128(hdr + 16);
          h.kb = std::int32_t(h0.x);
          h.flags = h0.y;
          h.expert = std::int32_t(h0.w);
          h.slot0 = std::int32_t(h1.x);
          h.valid = std::int32_t(h1.y);
        }
        if (h.flags & kGatherTileEnd) {
          trace.mark(kTrTileEnd, s0);
          ptx::mbar_arrive(&empty[s0]);
          it += Cfg::kConsumers;
          break;
        }
        trace.mark(kTrPassGot, h.valid > 0 ? h.valid : 255);  // (the pass's tokens; 255: a padding pass)
        if (h.valid == 0) {  // a padding pass: its stages hold no data; its turn of the hand-over
          for (int st = 0; st < stages_per_pass; ++st, it += Cfg::kConsumers) {
            wait_stage(it);
            ptx::mbar_arrive(&empty[it % kStages]);
          }
          order_lap();
          continue;
        }
        place_items(xs_row0, h.slot0 % 128);
        part_fresh = true;
        const int valid = h.valid;
        {
          // This thread's first pair of the pass in each array (one 64-bit
          // address each; chunk c is 8c slots on, a constant offset).
          const std::int64_t first = std::int64_t(h.expert) * p.gather_capacity + h.slot0 + 2 * j;
          const std::int32_t* tok_at = p.gather_tokens + first;
          const float* wgt_at = p.gather_alpha + first;
#pragma unroll
          for (int c = 0; c < BN / 8; ++c) {
            // Slots up to the pass's end lie inside the expert's capacity
            // (a multiple of every BT), so the pair is in bounds.
            const int col = 8 * c + 2 * j;
            tok[c] = col < valid ? *reinterpret_cast<const int2*>(tok_at + 8 * c) : make_int2(0, 0);
            wgt[c] = col < valid ? *reinterpret_cast<const float2*>(wgt_at + 8 * c) : make_float2(0.0f, 0.0f);
          }
        }
        // The pass's stages; the first one's barrier has completed already
        // (wait_stage above, its sequence number checked too). Its product
        // is whole after a wait at the end of this loop: a wait under a
        // data-dependent branch instead makes ptxas serialise every wgmma
        // (C7518).
        for (int st = 0; st < stages_per_pass; ++st, it += Cfg::kConsumers) {
          if (st > 0) wait_stage(it);
          consume_stage(it % kStages, h.kb + st, nullptr, false, xs_row0, h.slot0 % 128);
        }
        ptx::wgmma_wait<0>();
        if constexpr (Cfg::kTokensBf16) {  // the pass's last stage, its wgmmas done
          ptx::mbar_arrive(&empty[gather_held]);
          gather_held = -1;
        }
        trace.mark(kTrMmaDone, 0);
        ptx::mbar_wait(&order[wg], order_waits++ & 1);
        trace.mark(kTrOrderGot, 0);
        gather_add_pass<Cfg>(ptx::smem_addr(acc_smem), expert_acc, tok, wgt, valid, j, x_r0);
        ptx::mbar_arrive(&order[(wg + 1) % Cfg::kConsumers]);
        trace.mark(kTrAdded, 0);
      }
      gather_store_tile<Cfg>(p, t, acc_smem, ctid, order_lap, trace);
      trace.mark(kTrStored, 0);
    } else {  // (not a continue: nvcc then warned of unreachable code in every gather kernel)
      trace.mark(kTrItemStart, t.slot);
      // Swap-AB tiles of 64 tokens and more: NVFP4's global decode scales of
      // the tile, read now for the epilogue, where the read was an L2 round
      // trip on the consumers' way to their next item (docs/PERF.md stop
      // 42; 64-token decode rows 0.98-0.99x the time). Not the other tiles:
      // it moved ptxas's spills in the 16-token ones, and the 32-token rows
      // (1.00-1.02x) and the direct tiles' (1.00-1.02x) ran no faster.
      constexpr bool kEarlyGlobalScales = kNv && Cfg::kSwap && BN >= 64;
      [[maybe_unused]] float global_ab = 1.0f;
      if constexpr (kEarlyGlobalScales) {
        if (t.group >= 0) global_ab = p.a.global[a_scale_group(t)] * p.b.global[b_scale_group(t)];
      }
      if constexpr (Cfg::kReduceFromWorkspace) {  // (every thread writes the same record)
        if (t.slots > 1) deferred_tiles[work_item % Cfg::kMaxDeferredTiles] = make_int4(t.index, t.slots, t.partial, 0);
      }
      // (kFirstMmaZeroes: still zeroed where the item runs no MMA, a padding
      // tile of its own.)
      if (!kFirstMmaZeroes || !((t.group >= 0 || kPair) && t.unit_end > t.unit_begin)) {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
      }
      // The epilogue's global inputs (kEpilogueInputsInDrain): the tile's
      // NVFP4 global scales (the index clamped on a padding tile, whose rows
      // are all written as zeros) and this thread's two output rows'
      // m_indices (contiguous; 0 past the tile's rows).
      [[maybe_unused]] float in_ga = 1.0f, in_gb = 1.0f;
      [[maybe_unused]] std::int32_t in_mi[2] = {0, 0};
      auto load_epilogue_inputs = [&] {
        if constexpr (kNv) {
          in_ga = p.a.global[t.group >= 0 ? a_scale_group(t) : 0];
          in_gb = p.b.global[t.group >= 0 ? b_scale_group(t) : 0];
        }
        if constexpr (Cfg::kLayout == Layout::kContiguous) {
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const std::int32_t m = row_of(t, r);
            in_mi[r] = m < t.m_end ? p.m_indices[m] : 0;
          }
        }
      };
      const std::int32_t xs_row0 = x_scale_row0(t) % 128;
      const std::int32_t ys_row0 = y_scale_row0(t) % 128;
      place_items(xs_row0, ys_row0);
      if constexpr (Cfg::kMoe) {
        part_fresh = true;
        for (bool first = true;; first = false) {
          const int s = it % kStages;
          ptx::mbar_wait(&full[s], (it / kStages) & 1);
          if (first) trace.mark(kTrFirstFull, 0);
          ++it;
          const std::uint8_t* header = smem + s * Cfg::kStageBytes + Cfg::kOffHeader;
          const MoeStageHeader h = *reinterpret_cast<const MoeStageHeader*>(header);
          if (h.flags & kEndsTile) {
            ptx::mbar_arrive(&empty[s]);  // this thread is done with the header
            break;
          }
          consume_stage(s, h.kb, header, (h.flags & kEndsExpert) != 0, xs_row0, ys_row0);
        }
        ptx::wgmma_wait<0>();
        if (fold_pending) fold();
      } else if (t.group >= 0 || kPair) {  // (a padding block in a cluster consumes its turns; stores zeros)
        for (int kb = t.unit_begin; kb < t.unit_end; ++kb, ++it) {
          const int s = it % kStages;
          if (kb == t.unit_begin) trace.mark(kTrPassWait, s);
          ptx::mbar_wait(&full[s], (it / kStages) & 1);
          if (kb == t.unit_begin) trace.mark(kTrFirstFull, 0);
          if ((kb + 1) * BK > p.k) clear_scales_past_k(s, kb * BK);
          consume_stage(s, kb, nullptr, false, xs_row0, ys_row0, kb == t.unit_begin);
        }
        if constexpr (kEpilogueInputsInDrain) load_epilogue_inputs();
        ptx::wgmma_wait<0>();
      }
      trace.mark(kTrMmaDone, 0);

      // ------------------------------------- split-K / stream-K reduction
      // Every contributor to a tile (a split-K slice or a stream-K segment)
      // stores its partial tile in its slot (interleaved by thread, so a
      // warp's accesses are whole lines) and counts itself in; the one
      // that arrives last adds the slots in order 0, 1, ... (the same order
      // whichever arrives last: bit-identical repeats), resets the counter for
      // the next call and runs the epilogue.
      if (Cfg::kSplitK && t.slots > 1) {
        if (t.slots > p.split_slots) __trap();  // the host sized the workspace by a bound this broke
        // A cluster's token block past M (its pair's second) has nothing to store.
        if (Cfg::kReduceFromWorkspace && kPair && t.m0 >= t.m_end) continue;
        // Float4 i of thread ctid at i * kConsumerThreads + ctid: a warp's
        // store or load covers 512 contiguous bytes (four whole lines).
        const std::int64_t partial = Cfg::kReduceFromWorkspace ? t.partial : t.index;  // (Tile::partial)
        float4* tile_ws = reinterpret_cast<float4*>(p.split_partials + partial * p.split_slots * Cfg::kTileFloats) + ctid;
        float4* mine = tile_ws + t.slot * (Cfg::kTileFloats / 4);
#pragma unroll
        for (int i = 0; i < BN / 8; ++i)
          mine[i * Cfg::kConsumerThreads] = make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]);
        const bool last = split_k_arrived_last<Cfg>(p, t, ctid);
        trace.mark(kTrArrived, last);
        if (!last) continue;
        if constexpr (Cfg::kReduceFromWorkspace) {  // stored after the loop
          if (ctid == 0) *deferred_mask |= 1u << (work_item % Cfg::kMaxDeferredTiles);
          continue;
        }
        // Into the accumulators in slot order (this slice's own partial is
        // read back too). The one-CTA tiles issue kReduceBatch slots' loads
        // before their additions: one slot at a time, a stream-K tile's last
        // contributor waited out an L2 round trip per slot (several slots a
        // tile where each CTA takes a few stages).
        auto add_slot = [&](const float4 (&v)[BN / 8], bool first) {
#pragma unroll
          for (int i = 0; i < BN / 8; ++i) {
            acc[4 * i] = first ? v[i].x : acc[4 * i] + v[i].x;
            acc[4 * i + 1] = first ? v[i].y : acc[4 * i + 1] + v[i].y;
            acc[4 * i + 2] = first ? v[i].z : acc[4 * i + 2] + v[i].z;
            acc[4 * i + 3] = first ? v[i].w : acc[4 * i + 3] + v[i].w;
          }
        };
        auto load_slot = [&](int sl, float4 (&v)[BN / 8]) {
#pragma unroll
          for (int i = 0; i < BN / 8; ++i) v[i] = __ldcg(tile_ws + sl * (Cfg::kTileFloats / 4) + i * Cfg::kConsumerThreads);
        };
        if constexpr (Cfg::kReduceBatch == 2) {
          for (int sl = 0; sl < t.slots; sl += 2) {
            float4 v0[BN / 8], v1[BN / 8];
            load_slot(sl, v0);
            if (sl + 1 < t.slots) load_slot(sl + 1, v1);
            add_slot(v0, sl == 0);
            if (sl + 1 < t.slots) add_slot(v1, false);
          }
        } else {
          for (int sl = 0; sl < t.slots; ++sl) {
            float4 v[BN / 8];
            load_slot(sl, v);
            add_slot(v, sl == 0);
          }
        }
        trace.mark(kTrReduced, 0);
      }

      // -------------------------------------------------------- epilogue
      float factor = dequant_offset_correction<kNv>();
      if constexpr (kEarlyGlobalScales) {
        factor *= global_ab;
      } else if constexpr (kNv && kEpilogueInputsInDrain) {
        if (t.group >= 0) factor *= in_ga * in_gb;
      } else if constexpr (kNv) {
        if (t.group >= 0) factor *= p.a.global[a_scale_group(t)] * p.b.global[b_scale_group(t)];
      }
      if constexpr (Cfg::kFc1) {
        swiglu_epilogue<BN>(p, t, acc, factor, x_r0, j);
        continue;
      }
      // Contiguous: padding rows are written as 0. Which of this thread's
      // output rows are padding is read once per tile: read beside each store
      // (the 128 x 256 tile: 128 a thread), every load waited on the store
      // before it, which it might alias.
      std::uint64_t pad = 0;  // bit r: output row r of this thread (row_of) is padding
      if constexpr (Cfg::kLayout == Layout::kContiguous) {
#pragma unroll
        for (int r = 0; r < kOutRows; ++r) {
          if constexpr (kEpilogueInputsInDrain) {
            if (t.group < 0 || in_mi[r] < 0) pad |= std::uint64_t(1) << r;
          } else {
            const std::int32_t m = row_of(t, r);
            if (t.group < 0 || (m < t.m_end && p.m_indices[m] < 0)) pad |= std::uint64_t(1) << r;
          }
        }
      }
      std::int64_t d_off0 = 0;
      if constexpr (Cfg::kLayout == Layout::kMasked) d_off0 = std::int64_t(t.group) * p.d_group_stride;
      if constexpr (Cfg::kTmaStores) {
        if (p.d_tma) {  // any tile: the store leaves out rows past M and columns past N (a multiple of 8 here)
          const std::uint32_t slab = smem_base + Cfg::kOffStaging + (ctid / 32) * Cfg::kSlabBytes;
          constexpr int kCols = Cfg::kSlabCols;  // the tile's columns a slab takes at once
#pragma unroll
          for (int part = 0; part < BN / kCols; ++part) {
            if (lane == 0) ptx::bulk_wait_read<0>();  // the slab's stores (last tile's, or last part's) have read it
            __syncwarp();
            trace.mark(kTrSlabFree, part);
            // Row r (g or g + 8) of box i / 8 holds piece i % 8 at (i % 8) ^ (r % 8):
            // the 128-byte swizzle, so each store below hits 32 banks.
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const bool padded = (pad >> h) & 1;
#pragma unroll
              for (int i = 0; i < kCols / 8; ++i) {
                const int c = part * (kCols / 8) + i;  // the tile's column pair group
                const __nv_bfloat162 v = padded ? __floats2bfloat162_rn(0.0f, 0.0f)
                                                : __floats2bfloat162_rn(acc[4 * c + 2 * h] * factor, acc[4 * c + 2 * h + 1] * factor);
                ptx::sts32(slab + (i / 8) * 2048 + (g + 8 * h) * 128 + (((i % 8) ^ g) << 4) + 4 * j,
                           *reinterpret_cast<const std::uint32_t*>(&v));
              }
            }
            ptx::fence_proxy_async_smem();
            __syncwarp();
            if (lane == 0) {
#pragma unroll
              for (int b = 0; b < kCols / 64; ++b)
                ptx::tma_store_2d(&tmap_d, slab + b * 2048, t.n0 + part * kCols + 64 * b, t.m0 + x_r0 - g);
              ptx::bulk_commit_group();
            }
            trace.mark(kTrPartIssued, part);
          }
          continue;
        }
      }
      if constexpr (!Cfg::kSwap) {
        // A tile wholly inside D with aligned pairs (every tile of the large
        // shapes): one row pointer per output row and compile-time column
        // offsets, so a pair costs two multiplies, a pack and a store. The
        // general path below spends ~30 instructions a pair on bounds,
        // offsets and the pair-or-single choice (ncu, prefill K = 2048: the
        // epilogue was 15% of the kernel's instructions).
        if (t.m0 + Cfg::BM <= t.m_end && t.n0 + BN <= p.n && d_pairs_aligned) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {  // rows x_r0, x_r0 + 8: columns 8i + 2j, 8i + 2j + 1
            const std::int64_t row = d_off0 + std::int64_t(t.m0 + x_r0 + 8 * h) * p.ldd + t.n0 + 2 * j;
            const bool padded = (pad >> h) & 1;
            if (p.d_is_bf16) {
              __nv_bfloat162* dst = reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(p.d) + row);
#pragma unroll
              for (int i = 0; i < BN / 8; ++i)
                dst[4 * i] = padded ? __floats2bfloat162_rn(0.0f, 0.0f)
                                    : __floats2bfloat162_rn(acc[4 * i + 2 * h] * factor, acc[4 * i + 2 * h + 1] * factor);
            } else {
              float2* dst = reinterpret_cast<float2*>(static_cast<float*>(p.d) + row);
#pragma unroll
              for (int i = 0; i < BN / 8; ++i)
                dst[4 * i] = padded ? make_float2(0.0f, 0.0f)
                                    : make_float2(acc[4 * i + 2 * h] * factor, acc[4 * i + 2 * h + 1] * factor);
            }
          }
          continue;
        }
      }
#pragma unroll
      for (int i = 0; i < BN / 8; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // rows g, g+8
          if constexpr (!Cfg::kSwap) {
            // Columns 2j, 2j+1 of one output row: one paired store where both
            // are inside D and it is aligned for them.
            const std::int32_t m = t.m0 + x_r0 + 8 * h, n = t.n0 + 8 * i + 2 * j;
            if (m >= t.m_end || n >= p.n) continue;
            const bool padded = (pad >> h) & 1;
            const float v0 = padded ? 0.0f : acc[4 * i + 2 * h] * factor;
            const float v1 = padded ? 0.0f : acc[4 * i + 2 * h + 1] * factor;
            const std::int64_t off = d_off0 + std::int64_t(m) * p.ldd + n;
            if (n + 1 < p.n && d_pairs_aligned) {
              store_pair(off, v0, v1);
            } else {
              store_one(off, v0);
              if (n + 1 < p.n) store_one(off + 1, v1);
            }
          } else {
#pragma unroll
            for (int e = 0; e < 2; ++e) {  // columns 2j, 2j+1: tokens
              const std::int32_t m = row_of(t, 2 * i + e), n = t.n0 + x_r0 + 8 * h;
              if (m >= t.m_end || n >= p.n) continue;
              const float v = (pad >> (2 * i + e)) & 1 ? 0.0f : acc[4 * i + 2 * h + e] * factor;
              store_one(d_off0 + std::int64_t(m) * p.ldd + n, v);
            }
          }
        }
      }
    }
  }
  if constexpr (Cfg::kReduceFromWorkspace) {
    ptx::named_barrier(Cfg::kConsumerBarrier, Cfg::kConsumerThreads);  // thread 0's mask is visible
    for (std::uint32_t mask = *deferred_mask; mask; mask &= mask - 1) {
      const int4 rec = deferred_tiles[__ffs(mask) - 1];
      Tile dt = sched.tile(rec.x);
      dt.slots = rec.y;
      dt.partial = rec.z;
      store_from_slots(dt, reinterpret_cast<const float4*>(p.split_partials +
                                                           std::int64_t(dt.partial) * p.split_slots * Cfg::kTileFloats) +
                               ctid);
      trace.mark(kTrReduced, 0);
    }
  }
  if constexpr (Cfg::kTmaStores) {  // the last tile's stores are done before the CTA leaves
    if (lane == 0) ptx::bulk_wait<0>();
  }
  if constexpr (!Cfg::kGather) {
    trace.mark(kTrStored, 0);
    trace.mark_at(kTrGlobalTime, 1, TraceCursor::global_time());
  }
  if constexpr (kPair) {  // neither CTA leaves while its peer may still arrive on its barriers
    __syncwarp();
    if (lane == 0) {
      ptx::mbar_arrive(cluster_done);
      ptx::mbar_arrive_remote_release(ptx::smem_addr(cluster_done) + peer_delta);
    }
    ptx::mbar_wait_acquire_cluster(ptx::smem_addr(cluster_done), 0);
  }
#endif
}

}  // namespace fp4moe::kernels
