// One compiled configuration of the FP4 GEMM engine (fp4_gemm_kernel.cuh):
// the tile and its policies (format, layout, swap-AB, stage size and count,
// CTAs an SM, the FP8 route, clusters, prepacked weights, consumer
// warpgroups) as template parameters, and what follows from them at compile
// time: the register split between producer and consumers, each stage's
// shared-memory map, the token buffers, and the choices measured per tile
// (with the docs/PERF.md stops that measured them). The compiled set is
// instances/gemm_configs.hpp.
#pragma once

#include <cstdint>

#include "kernels/sm90/dp4a_gemv.cuh"
#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/moe_gather_producer.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

namespace fp4moe::kernels {

constexpr int align_up(int x, int a) { return (x + a - 1) / a * a; }

template <bool kNvfp4_, Layout kLayout_, bool kSwap_, int BN_, int BK_, int kStages_, int kCtasPerSm_ = 1,
          bool kFp8_ = false, int kCluster_ = 1, bool kPrepackedB_ = false, int kConsumers_ = 0>
struct GemmConfig {
  static constexpr bool kNvfp4 = kNvfp4_;
  // The MMA route: BF16 wgmma on operands dequantised with their scales, or
  // (MXFP4, without swap-AB) the FP8 route: E4M3 operands without scales,
  // one m64nBNk32 wgmma per 32-K block into a block accumulator, which the
  // CUDA cores add into the tile's accumulators times the block's two
  // scales (exact: a block's E2M1 products sum exactly in the MMA).
  static constexpr bool kFp8 = kFp8_;
  // Two-CTA clusters (the 128 x 256 tile, dense and contiguous): the CTAs of
  // a cluster take adjacent token blocks of one weight block
  // (TileScheduler::cluster_work), and where they share the weight tile each
  // loads half of it (FP4 rows and their scale band) by TMA multicast into
  // both CTAs' stages, so the weights leave L2 once per cluster. A stage is
  // refilled once both CTAs' consumers released it.
  static constexpr int kCluster = kCluster_;
  static constexpr Layout kLayout = kLayout_;
  static constexpr bool kSwap = kSwap_;
  static constexpr bool kGather = kLayout == Layout::kMoeGather;
  // Consumer warpgroups: two, or four in the gather layout's tiles that
  // run one CTA an SM (their accumulator of every token fills shared
  // memory). The gather layout's warpgroups take passes in turn over one
  // 64-row block, and with two, such a tile left each scheduler two warps
  // to hide the conversion's latencies with: four ran moe-fc2 M = 256-384
  // in 0.93-0.96x the time on an H200 (docs/PERF.md stop 25; on an H100
  // with 128-K stages, stop 17, they had run 2-10% slower).
  // The 32-token swap-AB tiles take four (kConsumers_ = 4: 256 weight
  // rows, one CTA an SM): the warps of two 128-row CTAs, but each stage's
  // tokens are converted once for 256 weight rows instead of once per 128,
  // and no second CTA on the SM ends apart from the first (docs/PERF.md
  // stops 36-37; instances/gemm_configs.hpp has the measurements).
  static constexpr int kConsumers = kConsumers_ > 0 ? kConsumers_ : kLayout_ == Layout::kMoeGather && kCtasPerSm_ == 1 ? 4 : 2;
  // X rows per CTA: 64 per consumer warpgroup, or the gather layout's one
  // shared block.
  static constexpr int BM = kGather ? 64 : 64 * kConsumers;
  static constexpr int BN = BN_;              // Y rows per CTA
  static constexpr int BK = BK_;              // K per stage
  static constexpr int kStages = kStages_;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  static constexpr int kConsumerThreads = 128 * kConsumers;
  // Memory-bound (swap-AB) tiles are small: two CTAs per SM give the
  // schedulers twice the warps to hide latency with.
  static constexpr int kCtasPerSm = kCtasPerSm_;
  static constexpr int kRegsPerThread = 65536 / (kThreads * kCtasPerSm) / 8 * 8;
  // The consumers' registers given the producer's floor below; the
  // producer then takes what their rounding left over: 64 with four
  // consumer warpgroups, 48 with two CTAs an SM, else the floor. At 40 its
  // loop state spills to local memory (the gather walk over experts and
  // passes, 31-41 local accesses, and the plain producers, 10-29), so 40
  // is the floor, except where a floor measured faster (H200, 2 rounds,
  // docs/PERF.md stop 30):
  // - MoE-dense's 32-token swap-AB tile, 32: as two-CTA tile its consumers
  //   got 104, their stack fell from 96-104 bytes to 56 and seed-fc2 M = 32
  //   from 199.6 / 184.2 us (NVFP4 / MXFP4) to 186.1 / 174.0; as the
  //   four-warpgroup tile they get 112 (40 is the floor of the decode
  //   one: 104);
  // - the one-CTA tiles of MoE-dense (both formats) and the other one-CTA
  //   swap-AB tiles on NVFP4, 56: the producer's spills go, and the
  //   consumers, at 224, spill at most 16 bytes, outside the main loop.
  //   seed-fc2 M >= 96 (direct) 0.984-0.989x the time on NVFP4,
  //   0.993-1.001x the others, FP8 route 0.974-0.976x; M = 64 (swap-AB
  //   bn64) 0.982-0.989x, MXFP4 prepacked 1.00x; NVFP4 decode and dense
  //   on the 64- and 128-token tiles 0.975-1.000x. On MXFP4 those two
  //   tiles ran 1.005-1.039x, and the prefill tile of the dense,
  //   contiguous and masked layouts 0.977-1.041x (most rows slower), so
  //   they keep 40.
  static constexpr int kProducerFloor =
      kLayout_ == Layout::kMoeGather ? 40
      : kCtasPerSm_ == 2 || kConsumers_ == 4 ? (kLayout_ == Layout::kMoeDense && BN_ == 32 ? 32 : 40)  // (the 32-token tiles)
      : kLayout_ == Layout::kMoeDense || (kSwap_ && kNvfp4_) ? 56
                                                             : 40;
  static constexpr int kConsumerRegs = ((kRegsPerThread * kThreads - kProducerFloor * 128) / kConsumerThreads) / 8 * 8;
  static constexpr int kProducerRegs = (kRegsPerThread * kThreads - kConsumerRegs * kConsumerThreads) / 128 / 8 * 8;
  static_assert(kProducerRegs >= kProducerFloor && kProducerRegs * 128 + kConsumerRegs * kConsumerThreads <= kRegsPerThread * kThreads,
                "the producer's and consumers' registers fit the CTA's");
  static constexpr int kBlock = kNvfp4 ? 16 : 32;
  static constexpr int BT = kSwap ? BN : BM;  // tokens per tile
  static constexpr int BW = kSwap ? BM : BN;  // weights per tile
  static constexpr int kRowBytes = BK / 2;    // FP4 bytes per tile row
  static constexpr int kSwizzleBits = kRowBytes == 32 ? 1 : kRowBytes == 64 ? 2 : 3;
  static constexpr int kChunksPerStage = BK / (4 * kBlock);  // 512-byte scale chunks per band per stage
  static constexpr int kYBands = (BN + 127) / 128;
  // The gather layout's tokens arrive in BF16 (kTokensBf16): the gather
  // step (kernels/moe/gather_tokens.hpp) dequantises them once, in this
  // tile's K order (kLaneBlocks, below), and a stage holds BK/64 sub-step
  // buffers of BN rows x 128 bytes (the 128B swizzle) that the wgmmas read
  // in place: the consumers convert only their weights, with no token
  // buffers, barriers or fence (docs/PERF.md stop 63).
  static constexpr bool kTokensBf16 = kGather;
  // Shared memory map of one stage.
  static constexpr int kXBytes = BM * kRowBytes;
  static constexpr int kYBytes = kTokensBf16 ? BN * BK * 2 : align_up(BN * kRowBytes, 1024);
  static constexpr int kXBands = kGather ? 1 : (BM + 127) / 128;  // X's 128-row scale bands
  static constexpr int kXScaleBytes = 512 * kChunksPerStage * kXBands;
  static constexpr int kYScaleBytes = kTokensBf16 ? 0 : 512 * kChunksPerStage * kYBands;
  static constexpr int kOffY = align_up(kXBytes, 1024);
  static constexpr int kOffXScale = kOffY + kYBytes;
  static constexpr int kOffYScale = kOffXScale + kXScaleBytes;
  // MoE-dense: each stage starts with a header the producer writes (which K
  // block it holds, whether it ends an expert or the tile) and, on the last
  // stage of an expert, that expert's alpha for the tile's BT tokens.
  static constexpr bool kMoe = kLayout == Layout::kMoeDense;
  static constexpr bool kFc1 = kLayout == Layout::kMoeFc1;
  /// The CUDA-core route (dp4a_gemv.cuh): the 8-token swap-AB tile of the
  /// dense, contiguous and masked layouts multiplies without the tensor
  /// cores. A launch of one or two tokens leaves wgmma's columns idle but
  /// still pays for every weight's BF16 conversion; here a word of eight
  /// weights becomes int8 parts by four PRMTs and meets each token in four
  /// IDP.4A, about half the integer-ALU work a weight (docs/PERF.md stop
  /// 53). Standard bit order, no split-K.
  static constexpr bool kDp4a = kSwap && !kGather && !kMoe && !kFc1 && BN_ == 8;
  /// The 128 x 256 tiles of the dense, contiguous and masked layouts: split
  /// tiles' last contributors add the partials from the workspace into D
  /// after the tile loop (kSplitK below says why). MoE-dense's and FC1's
  /// 128 x 256 tiles keep no split-K: their shapes fill the SMs with whole
  /// tiles.
  static constexpr bool kReduceFromWorkspace = !kSwap && !kGather && !kMoe && !kFc1 && BN == 256;
  static constexpr int kOffHeader = kOffYScale + kYScaleBytes;
  // MoE-dense's header sits in its stage. The gather layout's 32-byte
  // headers sit in an array of their own after the ring (kOffConv): in the
  // stage, NVFP4's 16-token stage needed 19 456 bytes instead of 18 432
  // (a stage starts on 1024 bytes for the 128-byte swizzle), and eight of
  // them held 30 tokens fewer (docs/PERF.md stop 65).
  static constexpr int kHeaderBytes = kMoe ? 16 + 4 * BT : 0;
  static constexpr int kGatherHeaderBytes = kGather ? int(sizeof(GatherStageHeader)) : 0;
  // Arrivals that fill a stage: the producer thread's expect_tx, or in
  // MoE-dense every lane of its producer warp (each writes part of the
  // header: moe_dense_producer.cuh).
  static constexpr int kFullArrivals = kMoe ? 32 : 1;
  static constexpr int kStageBytes = align_up(kOffHeader + kHeaderBytes, 1024);
  // Dequantised Y: BF16 buffers of BN rows × 64 K (128-byte rows), two per
  // user (three with kYAhead, below). The consumer warpgroups share one
  // pair and split the work, so
  // the tokens are converted once per CTA (16 tokens: 0.89-0.95x the time of
  // each warpgroup converting its own copy on an H200, docs/PERF.md stop
  // 18); except in MoE-dense 16-token tiles (each warpgroup its own copy,
  // not re-measured). (The gather layout converts no tokens: kTokensBf16.)
  static constexpr bool kPrivateY = kSwap && kMoe && BN <= 16;
  static constexpr int kYUsers = kPrivateY ? kConsumers : 1;
  // Named barriers: 0 is __syncthreads; the Y buffers' pairs (free, ready)
  // from 1, one pair per user; then one over all consumers (split-K, the
  // gather epilogue).
  static constexpr std::uint32_t kConsumerBarrier = 1 + 2 * kYUsers;
  // FP8 route: E4M3 rows of 64 K (64 bytes, 64B swizzle), then the rows'
  // scale factors (FP32, block 0 then block 1 of the sub-step).
  static constexpr int kYConvScales = BN * 64;
  static constexpr int kYConvBytes = kFp8 ? align_up(kYConvScales + 2 * 4 * BN, 1024) : align_up(BN * 128, 1024);
  // The decode tiles (swap-AB, one shared Y copy, no MoE): the tokens of
  // kYConvSubs 64-K sub-steps are converted together (half a 256-K stage
  // where shared memory holds a pair of such sets; the 16- to 64-token
  // tiles a whole stage, below), so the two named barriers that hand the
  // BF16 tokens from every converting thread to every warpgroup's MMAs come
  // once per kYConvSubs sub-steps, not every sub-step. A Y buffer set is
  // then kYConvSubs sub-step buffers (kYConvBytes each).
  static constexpr int kSmemPerSm = 227 * 1024;
  // Whole-stage tokens: the tokens of a stage converted at once, each
  // thread whole 32-K chunks (every pair index known at compile time): per
  // 256-K stage one barrier pair and one proxy fence instead of four, and
  // no run-time piece shifts of 16-byte items. (The gather tiles of up to
  // 16 tokens did so until their tokens came in BF16, stop 63.) The
  // decode tiles of 16, 32 and 64 tokens (swap-AB, one Y copy both
  // warpgroups read, 256-K stages) and MoE-dense's tiles of 32 and 64
  // tokens (both stage sizes) and 96 (256-K stages) do the same, each into
  // one set, rewritten after a wait for the MMAs that read it (a pair ran
  // slower on most rows of every decode tile: their MMAs are short, and a
  // pair's room is a stage's; the stage's first X sub-step converted before
  // that wait ran most rows 1.00-1.05x, stop 38); the 32-token decode
  // tile has four stages and MoE-dense's 64-token 256-K tile six, one
  // fewer, to fit the set. H200 A/Bs (docs/PERF.md stop 32): decode 16
  // tokens 0.95-0.98x the time with a pair of sets, one set a further
  // 0.95-0.99x; 32 tokens 0.93-0.98x; 64 tokens 0.82-0.96x with a pair,
  // one set a further 0.96-1.00x; seed-fc2 M = 32 0.93-0.94x, M = 64
  // 0.80-0.93x.
  static constexpr bool kYWholeStage = (kSwap && !kGather && !kMoe && !kFp8 && BN <= 64 && BK == 256) ||
                                       (kSwap && kMoe && !kFp8 && (BN == 32 || BN == 64 || BN == 96));
  // The prefill tile (the 128 x 256 tile of the dense and contiguous
  // layouts, BF16 route) with three Y sets instead of two (kYAhead): a
  // sub-step's weights are converted into the set the MMAs three sub-steps
  // back read, which both warpgroups' previous ready barrier already
  // frees, before this warpgroup waits for its MMAs of the sub-step before
  // last; only the A fragments (X, a third of the conversion) wait for
  // that. With two sets the whole conversion waits, and has about one
  // sub-step of MMAs to land in (docs/PERF.md stop 43). Its shared memory
  // comes from halving the TMA store slabs (kSlabBytes).
  // MoE-dense's direct NVFP4 tile (128 x 128, 256-K stages; X in shared
  // memory, below) the same, with three X buffers too, so its whole
  // conversion comes before the wait; the shared memory from a stage (four
  // to three, instances/gemm_configs.hpp). seed-fc2 M >= 128 ran in
  // 0.974-0.985x the time, prepacked weights 0.998-1.005x; MXFP4 ran
  // 1.004-1.019x (0.997-1.007x prepacked), so it keeps two sets and four
  // stages (H200, docs/PERF.md stop 44).
  static constexpr bool kYAhead = !kSwap && !kFp8 && !kFc1 && !kGather &&
                                  ((!kMoe && BN == 256 && (kLayout == Layout::kDense || kLayout == Layout::kContiguous)) ||
                                   (kMoe && kNvfp4 && BN == 128 && BK == 256));
  // The lane-block K order (fp4_dequant.cuh): quad lane j's A fragments
  // of a sub-step are one NVFP4 block a row, one 8-byte load and one
  // factor (code and table entry), where the chunk order takes two 4-byte
  // loads and two factors: shared loads a 256-K stage 58 -> 34. The
  // tokens' whole-stage items write that order in 4- or 8-byte pairs
  // (operand_items.cuh), one row's blocks side by side in a warp's lanes;
  // the gather step writes the gather tiles' BF16 tokens in it
  // (kernels/moe/gather_tokens.hpp). Taken where it measured faster
  // (H200, docs/PERF.md stops 51 and 52):
  // the 16-token decode tile (NVFP4 decode rows of 1-8 tokens 0.971-0.991x
  // the time), MoE-dense's 96-token tile (seed-fc2 M = 96 0.975-0.990x),
  // the 8-token gather tile (moe-fc2 M = 32-128 0.979-1.008x, prepacked
  // 0.979-0.988x), and with whole-row token items (kYRowItems, below) the
  // 32-token decode tile (0.978-1.001x), the 64-token one on standard
  // weights (0.989-0.996x) and the 16-token four-warpgroup gather tile of
  // 256-K stages (moe-fc2 M = 224-384 0.985-1.001x, prepacked
  // 0.994-1.001x; with chunk items stop 51 had 1.003-1.010x); not its
  // unmeasured 128-K and two-CTA variants (the gather tiles' figures are
  // from when their consumers converted FP4 tokens: stop 63 kept each
  // tile's order). Not the 64-token decode tile on prepacked weights
  // (1.005-1.017x with row items), MoE-dense's 32- and 64-token tiles
  // (seed-fc2 M = 32 and 64: 1.001-1.011x with row items; with chunk items
  // stop 51 had 0.973-1.023x), MXFP4's 16-token decode tile (0.994-1.008x,
  // stop 60) and its other tiles (not measured), or the tiles converting
  // tokens a sub-step at a time.
  // MXFP4 takes it on the 8-token gather tile: a lane's 16 K of a sub-step
  // lie in one 32-K block, so one factor and one 8-byte load a row, where
  // the chunk order takes two 4-byte loads and two factors (a lane's words
  // of chunks 2sub and 2sub + 1 are two blocks): shared loads a stage
  // 51 -> 27 (SASS), moe-fc2 MXFP4 M = 32-128 0.971-1.009x the time, and
  // with the voted one multiply a pair it brings (fp4_gemm_kernel.cuh
  // kXOneMultiply) 0.960-0.992x (H200, docs/PERF.md stop 60).
  static constexpr bool kLaneBlocks =
      kSwap && !kFp8 &&
      (kGather ? BN_ == 8 || (kNvfp4 && BN_ == 16 && BK_ == 256 && kCtasPerSm_ == 1)
               : kNvfp4 && kYWholeStage && (kMoe ? BN_ == 96 : (BN_ == 16 || BN_ == 32 || (BN_ == 64 && !kPrepackedB_))));
  // Whole-row token items in the lane-block order (operand_items.cuh
  // load_row, store_row_lane_blocks): an item is one token row's 64-K
  // sub-step (two chunks, four blocks, eight 16-byte pieces), so its
  // stores are eight 16-byte ones, as the chunk order's two chunks were;
  // the chunk items' 8- and 4-byte stores (8 and 16 a row's sub-step) gave
  // back what the X side gained on these tiles (docs/PERF.md stop 51).
  // BN x BK/64 items a stage: one a thread of the 64-token decode tile;
  // the 32-token four-warpgroup tile gives its 128 to the first
  // warpgroup (one warp a scheduler), the others convert no tokens.
  static constexpr bool kYRowItems = kLaneBlocks && !kGather && !kMoe && (BN_ == 32 || BN_ == 64);
  static constexpr int kYSets = kYWholeStage ? 1 : kYAhead ? 3 : 2;  // sets of Y buffers per user
  static constexpr int kYConvSubs = [] {
    if (kYWholeStage) return BK / 64;
    int subs = kSwap && !kPrivateY && !kMoe && !kFp8 ? BK / 128 : 1;
    // (4 KB: barriers, prefix, scale table and alignment, an upper bound.)
    while (subs > 1 && (kStages * kStageBytes + 2 * subs * kYConvBytes + 4096) * kCtasPerSm > kSmemPerSm) subs /= 2;
    return subs;
  }();
  // X words and codes a sub-step ahead (consume_stage) where it measured
  // faster (H200, docs/PERF.md stop 28): the gather tiles of up to 16 tokens
  // (moe-fc2 0.975-1.011x, 44 of 48 rows faster), the 64-token decode tile
  // (0.92-0.98x) and the 16-token one on prepacked NVFP4 weights
  // (0.98-0.99x), and MoE-dense's 64-token swap-AB tile (seed-fc2 M = 32
  // and 64: MXFP4 prepacked 0.97x, the others within the run's drift, stop
  // 29), and its 96-token one (seed-fc2 M = 96: NVFP4 0.971x, prepacked
  // 0.986x, MXFP4 0.996x; as M = 224's tail 0.987-1.002x; stop 38). Not
  // the 32-token decode tile (1.02-1.12x), the 16-token one on plain NVFP4
  // (1.00-1.01x) or MXFP4 (1.00-1.02x) weights; the 128-token tile is not
  // measured.
  static constexpr bool kXPrefetch =
      kSwap && !kFp8 && (!kMoe || BN == 64 || BN == 96) &&
      ((kGather && BN <= 16) || (!kGather && (BN == 64 || BN == 96 || (BN == 16 && kNvfp4 && kPrepackedB_))));
  // The prefill tile loads sub-step s + 1's Y items (words, codes and
  // factors) at sub-step s of a stage (consume_stage), so their shared-load
  // chain (code, then table entry, then the multiply that waits on it)
  // overlaps sub-step s's conversion. Only on prepacked MXFP4 weights,
  // whose factors are worked out from their codes (fp4_gemm_kernel.cuh,
  // kYScaleArithmetic): dense 0.984-0.987x on every row of the dense suite,
  // where standard MXFP4 weights ran 1.014-1.019x (H200, docs/PERF.md stop
  // 43); with Y converted ahead (kYAhead) still 0.981x against none, and
  // the contiguous layout's prefill rows 0.973-0.975x (stop 44). NVFP4 had
  // it on the dense layout from stop 31 (0.959x the time on the dense
  // suite's cluster rows; the contiguous layout's ran 1.023-1.024x) until
  // kYAhead: since then the dense NVFP4 8192³ rows run 0.975-0.986x
  // without it (stop 44).
  static constexpr bool kYPrefetch =
      (kLayout == Layout::kDense || kLayout == Layout::kContiguous) && !kSwap && !kFp8 && !kNvfp4 && kPrepackedB_;
  static_assert(!kYPrefetch || kYConvSubs == 1, "Y prefetch: one sub-step's tokens a conversion");
  static constexpr int kYSetBytes = kYConvSubs * kYConvBytes;
  // X from registers: with swap-AB (X = the weights, the bulk of the bytes)
  // each consumer thread converts its own wgmma A fragments straight from the
  // FP4 stage (WgmmaRS), with no BF16 copy in shared memory and no barrier
  // for it. Otherwise X is dequantised like Y: two BF16 buffers of BM rows ×
  // 64 K; warpgroup w owns rows [64w, 64w+64). (MoE-dense's direct BF16
  // tile keeps X in shared memory: its registers hold a second accumulator
  // set. Its FP8-route tile has no expert accumulator, so X in registers.)
  static constexpr bool kXInRegs = kSwap || !kMoe || kFp8;
  // MoE-dense, the 96- and 128-token swap-AB tiles: an expert's alpha for
  // its 128 tokens would be 32 registers a thread, held from the expert's
  // last stage to its fold beside two accumulator sets (ptxas spilled 224
  // bytes with them). Instead the fold reads alpha from that stage's
  // header, and the stage is released after the fold, not at its last
  // sub-step. The four-warpgroup 32-token tile too: at 112 registers a
  // consumer its 8 alpha registers spilled other state (ptxas stack 104 ->
  // 72 bytes on NVFP4, 88 -> 64 on MXFP4), and seed-fc2 M = 32 ran in
  // 0.923-0.964x the time (H200, docs/PERF.md stop 38). Not the 64-token
  // tile, which does not spill: 1.00-1.03x.
  static constexpr bool kAlphaAtFold = kMoe && kSwap && !kFp8 && (BN >= 96 || (BN == 32 && kConsumers_ == 4));
  static constexpr int kXConvBytes = kXInRegs ? 0 : BM * 128;
  static constexpr int kXSets = kYAhead ? 3 : 2;  // X buffers (X in shared memory), as Y's sets
  static constexpr int kOffConv = kStages * kStageBytes;
  /// Shared-memory offset of stage s's header (kHeaderBytes, kGatherHeaderBytes).
  static constexpr int header_offset(int s) { return kGather ? kOffConv + s * kGatherHeaderBytes : s * kStageBytes + kOffHeader; }
  // The CUDA-core route's tokens: a buffer a consumer warp of BN rows of
  // int8 2x and its scale blocks' scales (dp4a_gemv.cuh).
  static constexpr int kDp4aTokenBytes = (kConsumerThreads / 32) * BN * dp4a::kTokenStride<BK, kBlock>;
  // (After the gather headers' array, which is empty in every other layout.)
  static constexpr int kOffXConv = kOffConv + kStages * kGatherHeaderBytes +
                                   (kDp4a ? kDp4aTokenBytes : kTokensBf16 ? 0 : kYSets * kYUsers * kYSetBytes);
  // BF16 output through TMA stores (dense and contiguous, the 128 x 256
  // tile): each warp packs its 16 output rows into its own slab (16 rows x
  // BN, 64-column boxes of 2 KB, 128-byte swizzle) and one lane stores the
  // boxes by TMA; the warps go on to the next tile while the stores drain
  // (the tile ends of all SMs come together, and stored from registers
  // their writes held the tensor cores idle: docs/PERF.md stop 21). The slab
  // is rewritten a tile later, after its stores have read it.
  static constexpr bool kTmaStores = !kSwap && !kFp8 && !kFc1 && !kMoe && !kGather && BN == 256 &&
                                     (kLayout == Layout::kDense || kLayout == Layout::kContiguous);
  // (kYAhead: half the columns at a time, the second half packed once the
  // first half's stores have read the slab.)
  static constexpr int kSlabBytes = 16 * 2 * BN / (kYAhead ? 2 : 1);
  static constexpr int kSlabCols = kSlabBytes / 32;  // output columns a slab holds
  static_assert(!kYAhead || kTmaStores || kMoe, "three Y sets: shared memory from the TMA store slabs");
  static constexpr int kOffStaging = kOffXConv + kXSets * kXConvBytes;
  static constexpr int kOffBarriers = kOffStaging + (kTmaStores ? (kConsumerThreads / 32) * kSlabBytes : 0);
  // After each stage's full and empty mbarriers, the gather layout's order
  // mbarriers, one per consumer warpgroup (the pass hand-over below).
  // Two-CTA clusters: then one mbarrier on which both CTAs' consumer warps
  // arrive before either leaves (the peer may still arrive on this CTA's
  // stage barriers until then).
  static constexpr int kOffPrefix = kOffBarriers + 16 * kStages + (kGather ? 8 * kConsumers : 0) + (kCluster == 2 ? 8 : 0);
  // MoE-dense: the producer warp's ring of alpha columns (one expert's alpha
  // for the tile's tokens per slot), fetched kAlphaLookahead experts ahead
  // so deciding whether to skip an expert never waits on memory.
  static constexpr int kAlphaLookahead = 8;
  // The prefix region: masked, token blocks per group; MoE-dense, the token
  // blocks' stream-K weights, the CTAs' share boundaries and this CTA's
  // segments (tile_scheduler.cuh); gather, this CTA's stream-K share
  // (GatherShares, tile_scheduler.cuh; the tiles that share by cost), then
  // each producer warp's round of passes (two words a pass,
  // moe_gather_producer.cuh: at kOffGatherRound).
  static constexpr bool kGatherCostShares = kGather && gather_cost_shares(BT);
  static constexpr int kOffGatherRound = kOffPrefix + (kGatherCostShares ? static_cast<int>(sizeof(GatherShares)) : 0);
  static_assert(!kGatherCostShares || kOffPrefix % alignof(GatherShares) == 0, "the stream-K share's 64-bit fields");
  static constexpr int kPrefixInts = kLayout == Layout::kMasked     ? kMaxGroups + 1
                                     : kLayout == Layout::kMoeDense ? kStreamKTableBytes / 4
                                     : kGather ? (kOffGatherRound - kOffPrefix) / 4 + 2 * 2 * kConsumers
                                               : 0;
  // kReduceFromWorkspace: the split tiles whose partials this CTA adds
  // after its tile loop (fp4_gemm_kernel.cuh): a mask, then
  // kMaxDeferredTiles records of 16 bytes (stream-K's shares meet at most
  // three tiles past the whole rounds).
  static constexpr int kMaxDeferredTiles = 4;
  static constexpr int kOffDeferred =
      kReduceFromWorkspace ? align_up(kOffPrefix + 4 * kPrefixInts, 16) : kOffPrefix + 4 * kPrefixInts;
  static constexpr int kOffAlphaRing = kOffDeferred + (kReduceFromWorkspace ? 16 + 16 * kMaxDeferredTiles : 0);
  // The scale table: one 32-bit factor per scale code (fp4_dequant.cuh,
  // scale_table_entry), so the loops never convert a code themselves.
  static constexpr int kOffScaleTable = kOffAlphaRing + (kMoe ? 4 * BT * kAlphaLookahead : 0);
  // Gather: the tile's accumulator (gather_accumulator.cuh), sized at
  // launch for M tokens (gather_smem_bytes).
  // (16-byte aligned: gather_store_tile moves it as float4; the barriers
  // before it are 8 bytes each, so an odd consumer count would misalign it.)
  static constexpr int kOffGatherAcc = align_up(kOffScaleTable + 4 * 256, 16);
  static constexpr int kGatherAccStride = BM + 4;
  static constexpr int kSmemBytes = kOffGatherAcc + 1024;  // + alignment slack
  static constexpr int kTileFloats = BM * BN;  // one split-K partial tile
  static_assert(kGather || kConsumerThreads * BN / 2 == kTileFloats, "a partial is every consumer thread's accumulators");
  // Partial slots whose loads the last contributor issues together: two
  // (64 registers a thread) in the one-CTA tiles of up to 64 columns. (The
  // two-CTA tiles spilled 60-150 more local accesses with 32 registers'
  // worth; so did they with one slot ahead, docs/PERF.md stop 34.)
  static constexpr int kReduceBatch = kCtasPerSm == 1 && BN <= 64 ? 2 : 1;
  static_assert(kReduceBatch == 1 || kReduceBatch == 2);
  // The 128 x 256 tile keeps 128 accumulators per thread: adding partials
  // into them makes ptxas spill (measured: 1 KB; 392 bytes reducing a
  // float4 at a time, which cost the tile 14-16%, docs/PERF.md stop 45). So
  // its contributors only store their partials, and the last one, with its
  // accumulators stored too, adds the slots from the workspace straight into
  // D after its tile loop (kReduceFromWorkspace). It splits by stream-K
  // alone, after whole rounds of tiles (stream_k.hpp: work_item).
  // (The gather layout splits too: its partials are the shared accumulator's.)
  static constexpr bool kSplitK = !kDp4a && (kGather || kSwap || BN <= 128 || kReduceFromWorkspace);
  /// Gather: shared memory for M tokens, and the most tokens one CTA holds.
  static constexpr std::int64_t gather_smem_bytes(std::int64_t m) { return kSmemBytes + 4 * kGatherAccStride * m; }
  // (An SM has 228 KB of shared memory, 1 KB of it reserved per CTA.)
  static constexpr int kGatherMaxTokens =
      kGather ? (228 * 1024 / kCtasPerSm - 1024 - kSmemBytes) / (4 * kGatherAccStride) : 0;
  // A token tile that does not divide the 128-row scale bands (MoE-dense's
  // 96 tokens) would straddle two bands from its second tile on, so it
  // serves launches with one token tile, which starts at a band: at most BT
  // tokens (moe_dense_fc2's tail launches start at a 128-row tile).
  static constexpr bool kOneTokenTile = BT < 128 && 128 % BT != 0;
  /// The most tokens a launch may hold (0: any): the gather tiles'
  /// accumulator, or the one token tile.
  static constexpr int kMaxTokens = kGather ? kGatherMaxTokens : kOneTokenTile ? BT : 0;
  static_assert(!kMoe || kSwap || BN <= 128, "MoE-dense holds two accumulators: BN <= 128 without swap-AB");
  static_assert(!kOneTokenTile || (kMoe && kSwap && !kFp8 && BK == 256),
                "a token tile that does not divide 128: MoE-dense's 96-token swap-AB tile, 256-K stages");
  static_assert(!kFc1 || (!kSwap && BN == 256), "FC1 pairs 128 gate and 128 up rows in one weight tile");
  static_assert(!kGather || (kSwap && BN <= 32 && BN % 8 == 0), "gather: weights from registers, a few tokens per pass");
  // (A warpgroup holds a stage until the wgmmas that read its tokens are
  // done, past its wait for its next stage: kStages == kConsumers would
  // deadlock, each warpgroup waiting for a fill its own held stage blocks.)
  static_assert(!kTokensBf16 || kStages > kConsumers, "BF16 tokens: a stage more than the warpgroups");
  static_assert(!kTokensBf16 || kYBytes % 1024 == 0, "BF16 tokens: whole 8-row swizzle atoms a sub-step");
  static_assert(kConsumerBarrier < 16, "16 named barriers");
  static_assert(kConsumers_ == 0 || (kConsumers_ == 4 && kSwap && !kGather && !kFp8 && kCluster == 1 && kCtasPerSm == 1),
                "four consumer warpgroups (256 weight rows): the swap-AB tiles, one CTA an SM");
  static_assert(BM <= 256, "X rows: one TMA box (at most 256 rows)");
  static_assert(kCluster == 1 || (kCluster == 2 && (kLayout == Layout::kDense || kLayout == Layout::kContiguous) &&
                                   !kSwap && BN == 256 && !kFp8),
                "two-CTA clusters: the 128 x 256 tile of the dense and contiguous layouts (two 128-row halves of the\n"
                "weight tile)");
  static_assert(!kFp8 || (!kNvfp4 && !kSwap && (kLayout == Layout::kDense || kLayout == Layout::kContiguous ||
                                                 kLayout == Layout::kMasked || kLayout == Layout::kMoeDense) &&
                          BN <= 128 && BN % 16 == 0 && 2 * BN <= kConsumerThreads),
                "FP8 route: MXFP4 (one scale per 32-K block), X from registers, a second accumulator set (BN <= 128) in\n"
                "two halves of whole 8-column groups,\n"
                "one whole Y chunk per thread");
  // B (the weights) in the prepacked bit order (format/weight_prepack.hpp,
  // prepack_weights): the BF16 route of every layout but FC1's reads it,
  // converting the weights' words with fewer instructions (X from registers
  // with swap-AB, whole Y chunks without).
  static constexpr bool kPrepackedB = kPrepackedB_;
  static constexpr bool kPrepackable = !kFp8 && kLayout != Layout::kMoeFc1 && !kDp4a;
  using PrepackedB = GemmConfig<kNvfp4_, kLayout_, kSwap_, BN_, BK_, kStages_, kCtasPerSm_, kFp8_, kCluster_, true, kConsumers_>;
  static_assert(!kPrepackedB || kPrepackable, "prepacked weights: the BF16 route, FC1 excepted");
  static_assert(!kDp4a || (BK == 256 && kConsumers == 2 && !kFp8),
                "the CUDA-core route: 256-K stages (a token row's words are a warp's lanes), two warpgroups");
  static_assert(BK == 128 || BK == 256, "BK is 128 or 256: an even number of 64-K sub-steps per stage keeps the\n"
                "double-buffered A fragments and BF16 tiles at compile-time indices");
  static_assert(BK % (4 * kBlock) == 0, "a stage covers whole 128x4 scale chunks");
  static_assert(BN % 8 == 0 && BN <= 256 && (BN <= 128 ? 128 % BN == 0 || kOneTokenTile : BN % 128 == 0),
                "BN tiles the 128-row scale bands (or the tile is a launch's only token tile)");
  static_assert(kSmemBytes * kCtasPerSm <= kSmemPerSm, "shared memory");
};

}  // namespace fp4moe::kernels
