// What every GEMM entry point shares: the operand and output rules, the
// plan (tactic, compiled kernel, grid bound) and the launch. The entry points
// (gemm_api.cpp, moe_api.cpp) add their own rules and fill the
// layout-specific parameters.
#pragma once

#include <cstdint>
#include <string>

#include "api/check.hpp"
#include "fp4moe/gemm.hpp"
#include "fp4moe/tuning.hpp"
#include "kernels/sm90/gemm_params.hpp"
#include "kernels/sm90/gemm_registry.hpp"

namespace fp4moe::detail {

constexpr std::int64_t kMax32 = (std::int64_t(1) << 31) - 1;

/// Format, scale layout, K, alignment and 32-bit indexing rules of A and B;
/// B may be prepacked (prepack_weights) where `b_prepacked_ok`.
void check_operands(const ArgCheck& c, const Fp4Tensor& a, const Fp4Tensor& b, bool b_prepacked_ok = false);

/// Bytes from d.data to the end of its last element ([groups, rows, cols]).
std::int64_t output_span_bytes(const MatrixView& d, std::int64_t rows, std::int64_t cols, std::int64_t groups);

/// D is BF16/FP32 [groups, rows, cols] with unit column stride, aligned,
/// not overlapping the operands.
void check_output(const ArgCheck& c, const MatrixView& d, std::int64_t rows, std::int64_t cols, std::int64_t groups,
                  const Fp4Tensor& a, const Fp4Tensor& b);

struct GemmPlan {
  const kernels::KernelEntry* kernel;
  std::int64_t max_tiles;  ///< output tiles (bounds the grid and the split-K workspace; exact for stream-K)
  int split_k;             ///< 0: stream-K
  std::int64_t tile_elems;  ///< accumulator elements of one output tile
  int units;                ///< K units per tile: K blocks, or experts for MoE-dense
  std::int64_t token_blocks;  ///< token tiles (dense and MoE-dense: ceil(M / block_tokens))
  int block_tokens;           ///< tokens per tile
};

/// What an output view holds, as the tuning key spells it.
inline GemmOutput output_of(DType d) { return d == DType::kFP32 ? GemmOutput::kFP32 : GemmOutput::kBF16; }

/// Picks the tactic and its compiled kernel for a call described as the
/// tuner describes it (`call.m`: tokens per group, the heuristic's and the
/// buckets' M). The caller's tactic if given (throws InvalidArgument naming
/// options.tactic when it is not compiled, its split_k is not 1, 2, 3, 4, 6, 8 or
/// 0 (stream-K, not the masked layout), the tile has no such split, or
/// split_k exceeds what K can be sliced into);
/// else the tuning cache's entry for the call if it has one; else the
/// heuristic's. `m_rows`: rows of the token dimension the kernel walks (masked:
/// rows per group). `b_prepacked`: B is in the prepacked bit order, so the
/// tactic needs a kernel compiled for it (a forced one without: InvalidArgument
/// naming options.tactic; a cached one without is passed over). A forced
/// tactic makes no CUDA call here.
GemmPlan plan_gemm(const ArgCheck& c, const TuneShape& call, std::int64_t m_rows, const GemmOptions& opt,
                   bool b_prepacked = false);

/// Where the last plan_gemm of this thread got its tactic (tests and the
/// sweep benchmark check that a tuned tactic is the one that runs).
/// moe_dense_fc2 may run its last few tokens as a call of their own
/// (tuning::moe_tail_tokens): it then records the whole call's plan with the
/// tactics the two calls ran (each planned for its own tokens) and the
/// tail's tokens.
struct PlannedTactic {
  enum class Source { kNone, kForced, kCache, kHeuristic };
  GemmTactic tactic;  ///< the whole call's plan (the caller's, the cache's or the heuristic's)
  Source source = Source::kNone;
  GemmTactic head;           ///< the first call's tactic (M - tail_tokens tokens), where tail_tokens > 0
  GemmTactic tail;           ///< the tail's tactic, where tail_tokens > 0
  std::int64_t tail_tokens = 0;
  /// What ran: the tactic's name, or both calls' ("HEAD + tail N: TAIL").
  std::string ran_text() const;
};
const PlannedTactic& last_planned_tactic();
void set_last_planned_tactic(const PlannedTactic& planned);

/// GemmParams for A, B and D; the caller adds what its layout needs.
kernels::GemmParams gemm_params(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& d, std::int64_t m);

/// Makes sure the library's per-stream workspace holds what launch_gemm will
/// take for this plan and `m` tokens, launching nothing: an entry point made
/// of several launches reserves for all of them before the first, so a
/// reservation that fails (out of memory, or growth refused during graph
/// capture) leaves its output unwritten.
void reserve_gemm_workspace(const GemmPlan& plan, std::int32_t m, cudaStream_t stream);

/// Launches the plan; split-K takes the library's workspace for `stream`
/// (common/split_k_workspace.hpp). MoE-dense stream-K over several token
/// tiles first counts the experts each token tile uses (one small kernel on
/// `stream`) and shares the work by them (kernels/sm90/stream_k.hpp).
void launch_gemm(const GemmPlan& plan, const Fp4Tensor& a, const Fp4Tensor& b, const kernels::GemmParams& params,
                 cudaStream_t stream);

}  // namespace fp4moe::detail
