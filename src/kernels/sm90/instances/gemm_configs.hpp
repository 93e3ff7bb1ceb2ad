// The compiled tactic sets: (swap_ab, BN, BK, stages, CTAs per SM), and for
// the lists expanded with FP4MOE_GEMM_ENTRY, consumer warpgroups (0: the
// engine's default, gemm_config.cuh kConsumers).
//
// Dense, contiguous and masked: prefill 128 tokens x 256 weights per tile,
// three stages (five ran no faster, H200 A/B, docs/PERF.md stop 21; the
// room they left holds the TMA-stored epilogue's slabs);
// decode (swap-AB) a few tokens x 128 weights, 256-K stages, two CTAs per SM
// where the tile fits twice in shared memory (16 tokens: 80 registers
// without spills in the loop; 64 tokens keep 32 accumulators and take one).
// 17-32 tokens: 256 weights, four consumer warpgroups, one CTA an SM (the
// warps of two 128-weight CTAs, converting each stage's tokens once for 256
// weight rows): decode 32-token rows 0.91-1.00x the time of the two-CTA
// 128-weight tile, 4096 x 7168 rows 0.91-0.96x (H200, docs/PERF.md stop
// 37). The same change ran the 16-token rows 0.99-1.04x and spilled the
// 64-token tile (360-590 bytes, 2.5-3.2x the time).
//
// MXFP4's FP8 route (dense, contiguous, masked, MoE-dense): 128 tokens x 128
// weights (the block accumulators are a second set of BN / 2 registers a
// thread), 128-K stages (MoE-dense: any expert width W is whole stages).
#define FP4MOE_GEMM_FP8_TACTICS(X, FMT, LAYOUT) X(FMT, LAYOUT, false, 128, 128, 8, 1)

// Dense and contiguous: the prefill tile in two-CTA clusters (weights multicast).
#define FP4MOE_GEMM_CLUSTER_TACTICS(X, FMT, LAYOUT) X(FMT, LAYOUT, false, 256, 128, 3, 1)

// MoE-dense: the tile keeps a second accumulator per expert, so the widest
// tile is 128 x 128. Stages hold whole experts' columns, so an expert can be
// skipped stage by stage: 128-K stages serve every expert width W (a
// multiple of 128), and the same tiles with 256-K stages, taken wherever W
// is a multiple of 256, run faster (seed-fc2 on an H200, docs/PERF.md stop
// 30: 0.88-0.91x the time at M = 32, 0.93-0.95x at 64, 0.96-0.97x at 128).
// 17-32 tokens take the 32-token tile (seed-fc2 M = 32: as two 128-weight
// CTAs an SM, 0.72x the 64-token tile's time, both formats, where one such
// CTA an SM ran 0.75-0.80x; as one 256-weight CTA of four consumer
// warpgroups, as in decode, a further 0.95-0.97x, stop 37).
//
// 65-96 tokens take a 96-token tile (256-K stages only): a launch's one
// token tile (96 does not divide the 128-row scale bands; moe_dense_fc2's
// tail launches start at a 128-row tile), whole-stage tokens, alpha read at
// the fold. Against the direct 128 x 128 tile on seed-fc2 (H200,
// docs/PERF.md stop 38): M = 96 0.733-0.795x the time; as the tail of M =
// 224 and 352 (direct tiles for the rest) 0.888-0.919x and 0.929-0.950x.
// A 128-token tile of the same kind (256-K stages, whole-stage tokens,
// ptxas stack 120 bytes) ran the direct tile's rows at M = 128-384 in
// 1.02-1.08x on NVFP4, 0.94-0.96x on prepacked MXFP4: not compiled.
//
// Stage counts fill what the BF16 operand buffers leave of shared memory
// (the 64-token 256-K tile six: its whole-stage token buffers,
// gemm_config.cuh kYWholeStage, took the seventh; MoE-dense's direct
// 256-K tile on NVFP4 three: its third X and Y buffers, kYAhead, took the
// fourth).
#pragma once

#define FP4MOE_GEMM_TACTICS(X, FMT, LAYOUT) \
  X(FMT, LAYOUT, false, 256, 128, 3, 1, 0)  \
  X(FMT, LAYOUT, true, 16, 256, 4, 2, 0)    \
  X(FMT, LAYOUT, true, 32, 256, 4, 1, 4)    \
  X(FMT, LAYOUT, true, 64, 256, 5, 1, 0)    \
  X(FMT, LAYOUT, true, 128, 256, 4, 1, 0)

#define FP4MOE_MOE_DENSE_TACTICS(X, FMT, LAYOUT)       \
  X(FMT, LAYOUT, false, 128, 128, 8, 1, 0)             \
  X(FMT, LAYOUT, true, 16, 128, 5, 2, 0)               \
  X(FMT, LAYOUT, true, 32, 128, 6, 2, 0)               \
  X(FMT, LAYOUT, true, 64, 128, 8, 1, 0)               \
  X(FMT, LAYOUT, true, 128, 128, 6, 1, 0)              \
  X(FMT, LAYOUT, false, 128, 256, (FMT ? 3 : 4), 1, 0) \
  X(FMT, LAYOUT, true, 16, 256, 4, 2, 0)               \
  X(FMT, LAYOUT, true, 32, 256, 4, 1, 4)               \
  X(FMT, LAYOUT, true, 64, 256, 6, 1, 0)               \
  X(FMT, LAYOUT, true, 96, 256, 5, 1, 0)

// MoE gather (moe_dense_fc2 with each expert's tokens gathered): 64 weight
// rows against every token, one expert's tokens 16 (or, for experts with
// many tokens, 32) at a time; 256-K stages where W allows (each weight
// row's 128 bytes of an expert in one load: 1.38x the speed of 128-K
// stages, H100 sweep), else 128-K (any W). The tile accumulator fills most
// of shared memory, so one CTA per SM (with four consumer warpgroups,
// gemm_config.cuh); except the 8-token tiles (three, four or six stages)
// and a 16-token one (four), two CTAs per SM for calls with few tokens
// (their accumulators hold fewer): one CTA's eight consumer warps left half
// the issue slots empty (ncu, H200, M = 32: 0.71 eligible warps per
// scheduler). The six-stage 8-token tile (M <= 100 NVFP4, <= 122 MXFP4
// since stop 65's headers left the stages) ran moe-fc2 0.991-0.995x (MXFP4
// M = 64-96 0.974-0.976x) the four-stage one's time (docs/PERF.md stop 57;
// NVFP4 M = 96 0.985x, stop 65). 8 tokens a pass suit 1-6 tokens per
// expert. The 16-token one-CTA tile also with eight stages, where its
// accumulator leaves room (NVFP4 M <= 303, MXFP4 <= 333): four of its
// ring's stages load while each of the four warpgroups holds one, against
// two with six; M = 192-256 ran 0.978-0.984x the six-stage tile's time,
// NVFP4 M = 288 and MXFP4 M = 320 0.986-0.993x. Measured and not listed: seven
// stages (one producer warp, as the ring is odd: 1.10-1.13x) and the
// 8-token tile as one CTA of twelve stages (1.02-1.12x the two-CTA
// six-stage one; H200 sweep, docs/PERF.md stop 65).
#define FP4MOE_MOE_GATHER_TACTICS(X, FMT, LAYOUT) \
  X(FMT, LAYOUT, true, 8, 256, 6, 2, 0)           \
  X(FMT, LAYOUT, true, 8, 256, 4, 2, 0)           \
  X(FMT, LAYOUT, true, 8, 256, 3, 2, 0)           \
  X(FMT, LAYOUT, true, 16, 128, 6, 1, 0)          \
  X(FMT, LAYOUT, true, 16, 256, 6, 1, 0)          \
  X(FMT, LAYOUT, true, 16, 256, 8, 1, 0)          \
  X(FMT, LAYOUT, true, 16, 256, 4, 2, 0)          \
  X(FMT, LAYOUT, true, 32, 256, 5, 1, 0)

// The CUDA-core route (both formats; dense, contiguous and masked): the 8-token
// swap-AB tile multiplies by PRMT and IDP.4A instead of wgmma
// (gemm_config.cuh kDp4a, dp4a_gemv.cuh), for launches of one or two
// tokens a weight tile. Four 21 KB stages (a fifth and the token buffers
// do not fit two CTAs an SM).
#define FP4MOE_GEMM_DP4A_TACTICS(X, FMT, LAYOUT) X(FMT, LAYOUT, true, 8, 256, 4, 2, 0)

// MoE FC1 (SwiGLU): 128 gate + 128 up weight rows per tile, so each output
// tile of 128 columns finds both halves of its SwiGLU in one thread.
#define FP4MOE_MOE_FC1_TACTICS(X, FMT, LAYOUT) X(FMT, LAYOUT, false, 256, 128, 4, 1, 0)

/// The registry entries of one (format, layout): every tactic of a set above.
/// Each instance file expands this once, so the kernels compile in parallel.
#define FP4MOE_GEMM_ENTRY(FMT, LAYOUT, SWAP, BN, BK, STAGES, CTAS, CONSUMERS) \
  entry<GemmConfig<FMT, Layout::LAYOUT, SWAP, BN, BK, STAGES, CTAS, false, 1, false, CONSUMERS>>(),
/// The entries of TACTICS and then the extra entries given (of the lists
/// below, or none; variadic, as expanded entries hold commas).
#define FP4MOE_GEMM_INSTANCES_WITH(TACTICS, NAME, FMT, LAYOUT, ...)                                       \
  namespace fp4moe::kernels {                                                                            \
  std::vector<KernelEntry> NAME() { return {TACTICS(FP4MOE_GEMM_ENTRY, FMT, LAYOUT) __VA_ARGS__}; }       \
  }
#define FP4MOE_GEMM_INSTANCES_OF(TACTICS, NAME, FMT, LAYOUT) FP4MOE_GEMM_INSTANCES_WITH(TACTICS, NAME, FMT, LAYOUT, )
#define FP4MOE_GEMM_INSTANCES(NAME, FMT, LAYOUT) FP4MOE_GEMM_INSTANCES_OF(FP4MOE_GEMM_TACTICS, NAME, FMT, LAYOUT)
#define FP4MOE_GEMM_FP8_ENTRY(FMT, LAYOUT, SWAP, BN, BK, STAGES, CTAS) \
  entry<GemmConfig<FMT, Layout::LAYOUT, SWAP, BN, BK, STAGES, CTAS, true>>(),
#define FP4MOE_GEMM_CLUSTER_ENTRY(FMT, LAYOUT, SWAP, BN, BK, STAGES, CTAS) \
  entry<GemmConfig<FMT, Layout::LAYOUT, SWAP, BN, BK, STAGES, CTAS, false, 2>>(),
/// The common tactics and EXTRA.
#define FP4MOE_GEMM_INSTANCES_PLUS(NAME, FMT, LAYOUT, ...) \
  FP4MOE_GEMM_INSTANCES_WITH(FP4MOE_GEMM_TACTICS, NAME, FMT, LAYOUT, __VA_ARGS__)
