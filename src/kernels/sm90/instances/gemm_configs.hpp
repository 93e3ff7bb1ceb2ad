// The compiled tactic set, one list for every (format, layout):
// (swap_ab, BN, BK, stages). Prefill: tokens in registers, weights staged as
// BF16, 128 x 256 tiles. Decode (swap-AB): weights in registers, a few tokens
// staged, deep 256-K stages to keep HBM busy.
#pragma once

#define FP4MOE_GEMM_TACTICS(X, FMT, LAYOUT) \
  X(FMT, LAYOUT, false, 256, 128, 4)        \
  X(FMT, LAYOUT, true, 16, 256, 6)          \
  X(FMT, LAYOUT, true, 64, 256, 6)          \
  X(FMT, LAYOUT, true, 128, 256, 4)
