// The compiled tactic set, one list for every (format, layout):
// (swap_ab, BN, BK, stages, CTAs per SM). Prefill: tokens in registers,
// weights staged as BF16, 128 x 256 tiles, one CTA per SM. Decode (swap-AB):
// weights in registers, a few tokens staged, 256-K stages, two CTAs per SM
// where the tile fits twice in shared memory.
#pragma once

#define FP4MOE_GEMM_TACTICS(X, FMT, LAYOUT) \
  X(FMT, LAYOUT, false, 256, 128, 4, 1)     \
  X(FMT, LAYOUT, true, 16, 256, 4, 2)       \
  X(FMT, LAYOUT, true, 64, 256, 6, 1)       \
  X(FMT, LAYOUT, true, 128, 256, 4, 1)
