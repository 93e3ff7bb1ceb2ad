// The compiled tactic set, one list for every (format, layout):
// (swap_ab, BN, BK, stages, CTAs per SM). Prefill: 128 tokens x 256 weights
// per tile. Decode (swap-AB): 128 weights x a few tokens, 256-K stages, two
// CTAs per SM where the tile fits twice in shared memory. Stage counts fill
// what the BF16 operand buffers leave of shared memory.
#pragma once

#define FP4MOE_GEMM_TACTICS(X, FMT, LAYOUT) \
  X(FMT, LAYOUT, false, 256, 128, 4, 1)     \
  X(FMT, LAYOUT, true, 16, 256, 3, 2)       \
  X(FMT, LAYOUT, true, 64, 256, 5, 1)       \
  X(FMT, LAYOUT, true, 128, 256, 3, 1)

/// The registry entries of one (format, layout): every tactic above. Each
/// instance file expands this once, so the kernels compile in parallel.
#define FP4MOE_GEMM_ENTRY(FMT, LAYOUT, SWAP, BN, BK, STAGES, CTAS) \
  entry<GemmConfig<FMT, Layout::LAYOUT, SWAP, BN, BK, STAGES, CTAS>>(),
#define FP4MOE_GEMM_INSTANCES(NAME, FMT, LAYOUT)                              \
  namespace fp4moe::kernels {                                                 \
  std::vector<KernelEntry> NAME() { return {FP4MOE_GEMM_TACTICS(FP4MOE_GEMM_ENTRY, FMT, LAYOUT)}; } \
  }
