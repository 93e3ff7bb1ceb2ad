// The compiled GEMM kernels: one entry per (format, layout, tactic), each with
// its launcher. Filled by the instance files in instances/.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "fp4moe/gemm.hpp"
#include "kernels/sm90/gemm_params.hpp"

namespace fp4moe::kernels {

struct LaunchArgs {
  const Fp4Tensor* a;
  const Fp4Tensor* b;
  GemmParams params;
  std::int64_t a_rows;     ///< rows of A's 2-D view (all groups)
  std::int64_t b_rows;
  std::int64_t max_tiles;  ///< upper bound on work tiles: output tiles × split_k (grid size)
  cudaStream_t stream;
  std::int64_t grid = 0;   ///< CTAs to launch (stream-K; two-CTA tiles: even); 0: every resident slot, at most max_tiles
};

using LaunchFn = void (*)(const LaunchArgs&);

struct KernelEntry {
  Fp4Format format;
  Layout layout;      ///< the operation's layout (a gather kernel is listed under kMoeDense, its operation's)
  GemmTactic tactic;  ///< split_k = 1: every kernel runs any split_k at run time
  int block_m;        ///< X rows per CTA
  int ctas_per_sm;    ///< CTAs one SM holds at once
  int max_split_k;    ///< 1: no fixed split-K; else any of 1, 2, 3, 4, 6, 8
  /// Most tokens (M) a call may have; 0: any. Bounded: the gather tiles
  /// (their shared accumulator holds every token) and a token tile that does
  /// not divide 128 (one token tile a call: GemmConfig::kOneTokenTile).
  int max_m;
  LaunchFn launch;
  /// The same tactic for B in the prepacked bit order (prepack_weights);
  /// null where none is compiled (the FP8 route, the MoE layouts).
  LaunchFn launch_prepacked = nullptr;
  /// Runs stream-K (split_k 0): every tile with split-K, the 128 x 256 ones
  /// included, which take no fixed split.
  bool stream_k = false;
  /// Its stream-K runs whole rounds of tiles first (kernels::work_item): the
  /// 128 x 256 tiles. Otherwise every CTA shares all tiles' units.
  bool stream_k_whole_rounds = false;
  /// A gather tile reading its BF16 tokens in the lane-block K order (else
  /// the chunk order): the gather step writes them so
  /// (kernels/moe/gather_tokens.hpp). The prepacked kernel's is the same.
  bool gather_lane_blocks = false;
  /// CTAs the device holds at once (two a resident cluster for two-CTA
  /// tiles): stream-K's grid. (The prepacked kernel's is the same.)
  int (*resident_ctas)() = nullptr;
};

const std::vector<KernelEntry>& kernel_registry();

}  // namespace fp4moe::kernels
