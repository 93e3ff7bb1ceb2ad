#include "api/gemm_dispatch.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "api/fp4_tensor_checks.hpp"
#include "common/device_info.hpp"
#include "common/split_k_workspace.hpp"
#include "kernels/moe/block_experts.hpp"
#include "kernels/sm90/stream_k.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/runtime_cache.hpp"
#include "tuning/tactic_space.hpp"

namespace fp4moe::detail {

void check_operands(const ArgCheck& c, const Fp4Tensor& a, const Fp4Tensor& b, bool b_prepacked_ok) {
  check_fp4_tensor(c, a, "a", /*device=*/true);
  check_fp4_tensor(c, b, "b", /*device=*/true, b_prepacked_ok);
  c.require(b.format == a.format, "b.format", [&] { return std::string("must equal a.format (") + format_name(a.format) + ")"; },
            format_name(b.format));
  c.require(a.scale_layout == ScaleLayout::kTiled128x4, "a.scale_layout",
            "must be kTiled128x4 (quantize can write it; convert_scale_layout converts)");
  c.require(b.scale_layout == ScaleLayout::kTiled128x4, "b.scale_layout",
            "must be kTiled128x4 (quantize can write it; convert_scale_layout converts)");
  c.equal(b.cols, a.cols, "b.cols", "a.cols (K)");
  c.multiple_of(a.cols, 32, "a.cols", "K must be a multiple of 32");
  c.aligned(a.scales, 16, "a.scales");
  c.aligned(b.scales, 16, "b.scales");
  c.require(a.rows * a.groups <= kMax32, "a", "rows*groups must fit 32-bit indexing", a.rows * a.groups);
  c.require(b.rows * b.groups <= kMax32, "b", "rows*groups must fit 32-bit indexing", b.rows * b.groups);
  c.require(a.cols <= kMax32, "a.cols", "K must fit 32-bit indexing", a.cols);
}

std::int64_t output_span_bytes(const MatrixView& d, std::int64_t rows, std::int64_t cols, std::int64_t groups) {
  if (rows == 0 || cols == 0) return 0;
  return ((groups - 1) * d.gstride() + (rows - 1) * d.ld() + cols) * dtype_size(d.dtype);
}

void check_output(const ArgCheck& c, const MatrixView& d, std::int64_t rows, std::int64_t cols, std::int64_t groups,
                  const Fp4Tensor& a, const Fp4Tensor& b) {
  c.not_null(d.data, "d.data");
  c.dtype_in(d.dtype, {DType::kBF16, DType::kFP32}, "d.dtype");
  c.equal(d.rows, rows, "d.rows", "the rows of A");
  c.equal(d.cols, cols, "d.cols", "the rows of B (N)");
  c.equal(d.groups, groups, "d.groups", "the groups of A");
  c.require(d.col_stride == 1, "d.col_stride", "must be 1", d.col_stride);
  c.require(d.row_stride == 0 || d.row_stride >= d.cols, "d.row_stride", "must be 0 or at least cols", d.row_stride);
  c.require(d.group_stride == 0 || d.group_stride >= d.rows * d.ld(), "d.group_stride",
            "must be 0 or at least rows*row_stride", d.group_stride);
  c.aligned(d.data, dtype_size(d.dtype), "d.data");
  const std::int64_t d_bytes = output_span_bytes(d, rows, cols, groups);
  for (const auto* t : {&a, &b}) {
    const char* name = t == &a ? "a" : "b";
    c.require(!ranges_overlap(d.data, d_bytes, t->data, t->data_bytes()), "d.data",
              [&] { return std::string("must not overlap ") + name + ".data"; });
    c.require(!ranges_overlap(d.data, d_bytes, t->scales, t->scale_bytes_total()), "d.data",
              [&] { return std::string("must not overlap ") + name + ".scales"; });
  }
}

namespace {

/// The rule a tactic breaks for a shape (check.fault != kNone), and the
/// value it got.
struct TacticFaultText {
  std::string rule, got;
};

TacticFaultText tactic_fault_text(const tuning::TacticCheck& check, const tuning::ProblemShape& shape, const GemmTactic& t) {
  switch (check.fault) {
    case tuning::TacticFault::kNone: break;
    case tuning::TacticFault::kNotCompiled: {
      std::string known;
      for (const GemmTactic& k : tuning::compiled_tactics(shape.format, shape.layout)) known += (known.empty() ? "" : "; ") + k.name();
      return {"is not compiled for this format and layout (compiled: " + known +
                  ", each with split_k 1, 2, 3, 4, 6, 8 or 0 = stream-K where its tile has split-K)",
              t.name()};
    }
    case tuning::TacticFault::kSplitKChoice:
      return {"split_k must be 1, 2, 3, 4, 6, 8 or 0 (stream-K)", std::to_string(t.split_k)};
    case tuning::TacticFault::kSplitKNotCompiled:
      return {check.kernel->stream_k
                  ? "split_k must be 1 or 0 (stream-K): this tile takes no fixed split (its split tiles are stored after "
                    "its tile loop, a few a CTA)"
              : tuning::is_dp4a(t)
                  ? "split_k must be 1: the CUDA-core route (dp4a) is compiled without split-K"
                  : "split_k must be 1: this tile is compiled without split-K (its accumulators leave no registers for it)",
              std::to_string(t.split_k)};
    case tuning::TacticFault::kStreamKLayout:
      return {"split_k 0 (stream-K) runs on every layout but the masked one: its tile count is known only on the device",
              std::to_string(t.split_k)};
    case tuning::TacticFault::kTooManyTokens:
      return {"holds at most " + std::to_string(check.max_m) + " tokens (M = " + std::to_string(shape.m) +
                  (t.moe_gather ? "): the gathered formulation keeps every token's accumulator in shared memory"
                                : "): its token tile does not divide the 128-row scale bands, so a call has one"),
              t.name()};
    case tuning::TacticFault::kExpertWidth:
      return {"block_k " + std::to_string(t.block_k) + " must divide the expert width W = " +
                  std::to_string(shape.experts > 0 ? shape.k / shape.experts : 0) + " (a stage holds one expert's columns)",
              t.name()};
    case tuning::TacticFault::kSplitKUnits: {
      const std::string units = shape.layout == kernels::Layout::kMoeDense ? "experts" : "K blocks";
      return {t.split_k == tuning::kStreamK
                  ? "split_k 0 (stream-K) needs at least 2 " + units + " per tile (here " + std::to_string(check.units) + ")"
                  : "split_k must not exceed the " + units + " it slices (" + std::to_string(check.units) + ")",
              std::to_string(t.split_k)};
    }
  }
  return {};
}

/// The compiled kernel of a forced tactic, or InvalidArgument naming
/// options.tactic with the rule it breaks.
const kernels::KernelEntry& checked_kernel(const ArgCheck& c, const tuning::ProblemShape& shape, const GemmTactic& t) {
  const tuning::TacticCheck check = tuning::check_tactic(shape, t);
  if (!check.ok()) {
    const TacticFaultText f = tactic_fault_text(check, shape, t);
    c.require(false, "options.tactic", f.rule, f.got);
  }
  return *check.kernel;
}

/// The compiled kernel of the heuristic's tactic. The heuristic picks only
/// what the shape's checked arguments allow, so a pick that breaks a
/// tactic rule is the library's fault (an Error), not the caller's: the
/// caller passed no options.tactic.
const kernels::KernelEntry& heuristic_kernel(const ArgCheck& c, const tuning::ProblemShape& shape, const GemmTactic& t) {
  const tuning::TacticCheck check = tuning::check_tactic(shape, t);
  if (!check.ok()) {
    const TacticFaultText f = tactic_fault_text(check, shape, t);
    throw Error(std::string("fp4moe internal: ") + c.function() + ": the heuristic picked " + t.name() +
                ", which breaks a tactic rule: " + f.rule + " (got " + f.got + ")");
  }
  return *check.kernel;
}

thread_local PlannedTactic t_last_plan;

/// The heuristic's tactic and its kernel for each shape this thread has
/// planned: pick_tactic and its check took ~290-490 ns of a call's host
/// time (docs/PERF.md stop 70), a lookup here a few tens. Both are
/// functions of the shape alone (sm_count and b_prepacked included), so an
/// entry never goes stale; the table is emptied when it holds 4096 shapes.
/// Per thread, so no lock.
class HeuristicMemo {
 public:
  struct Pick {
    GemmTactic tactic;
    const kernels::KernelEntry* kernel;
  };
  const Pick& pick(const ArgCheck& c, const tuning::ProblemShape& s) {
    const Key key{(std::int64_t(s.format) << 40) | (std::int64_t(s.layout) << 32) | (std::int64_t(s.b_prepacked) << 31) |
                      std::int64_t(s.sm_count),
                  (std::int64_t(s.m) << 32) | std::uint32_t(s.n), (std::int64_t(s.k) << 32) | std::uint32_t(s.groups),
                  (std::int64_t(s.experts) << 32) | std::uint32_t(s.top_k)};
    if (const auto hit = picks_.find(key); hit != picks_.end()) return hit->second;
    if (picks_.size() >= 4096) picks_.clear();
    const GemmTactic t = tuning::pick_tactic(s);
    return picks_.emplace(key, Pick{t, &heuristic_kernel(c, s, t)}).first->second;
  }

 private:
  using Key = std::array<std::int64_t, 4>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      std::uint64_t h = 0x9e3779b97f4a7c15ull;
      for (const std::int64_t v : k) h = (h ^ std::uint64_t(v)) * 0x100000001b3ull + (h >> 29);
      return static_cast<std::size_t>(h);
    }
  };
  std::unordered_map<Key, Pick, KeyHash> picks_;
};
thread_local HeuristicMemo t_heuristic;

kernels::OperandParams operand(const Fp4Tensor& t) {
  kernels::OperandParams o;
  o.scales = static_cast<const std::uint8_t*>(t.scales);
  o.scale_group_bytes = t.scale_bytes_per_group();
  o.scale_chunks = static_cast<std::int32_t>((t.scale_cols() + 3) / 4);
  o.global = t.global_scale;
  o.rows_per_group = static_cast<std::int32_t>(t.rows);
  return o;
}

}  // namespace

GemmPlan plan_gemm(const ArgCheck& c, const TuneShape& call_in, std::int64_t m_rows, const GemmOptions& opt,
                   bool b_prepacked) {
  TuneShape call = call_in;
  if (call.op == GemmOp::kMoeFc2) {
    c.require(opt.moe_top_k >= 0 && opt.moe_top_k <= call.groups, "options.moe_top_k",
              [&] { return "must be in [0, E = " + std::to_string(call.groups) + "]"; }, opt.moe_top_k);
    call.top_k = opt.moe_top_k;
  } else {
    c.require(opt.moe_top_k == 0, "options.moe_top_k", "must be 0 (a moe_dense_fc2 hint)", opt.moe_top_k);
  }
  tuning::ProblemShape shape = tuning::problem_shape(call);
  shape.b_prepacked = b_prepacked;
  GemmTactic t;
  const kernels::KernelEntry* e = nullptr;
  PlannedTactic::Source source = PlannedTactic::Source::kForced;
  if (opt.tactic) {
    t = *opt.tactic;
    e = &checked_kernel(c, shape, t);
    c.require(!b_prepacked || e->launch_prepacked, "options.tactic",
              "has no kernel for prepacked weights (b.prepacked): the FP8 and CUDA-core (dp4a) routes read the standard "
              "bit order",
              [&] { return t.name(); });
  } else {
    shape.sm_count = current_device_sm_count();
    if (const GemmTactic* hit = tuning::runtime_cache().lookup(current_device(), tuning::key_of(call))) {
      const tuning::TacticCheck check = tuning::check_tactic(shape, *hit);
      if (check.ok() && (!b_prepacked || check.kernel->launch_prepacked)) {
        t = *hit;
        e = check.kernel;
        source = PlannedTactic::Source::kCache;
      }
    }
    if (!e) {
      const HeuristicMemo::Pick& pick = t_heuristic.pick(c, shape);
      t = pick.tactic;
      e = pick.kernel;
      source = PlannedTactic::Source::kHeuristic;
      // (The heuristic picks neither the FP8 route nor, for prepacked B, the
      // CUDA-core route: the tactics of these layouts without a prepacked kernel.)
      if (b_prepacked && !e->launch_prepacked)
        throw Error("fp4moe internal: the heuristic picked " + t.name() + ", which has no prepacked kernel");
    }
  }
  t_last_plan = PlannedTactic{};
  t_last_plan.tactic = t;
  t_last_plan.source = source;
  const std::int64_t bt = t.swap_ab ? t.block_n : e->block_m, bw = t.swap_ab ? e->block_m : t.block_n;
  // Weight rows the kernel tiles: FC1 tiles every expert's 2I rows as one.
  const std::int64_t n_rows = call.op == GemmOp::kMoeFc1 ? call.n * call.groups : call.n;
  // The gather tiles take every token at once: one token block.
  const std::int64_t t_blocks = t.moe_gather               ? 1
                                : call.op == GemmOp::kMasked ? call.groups * ((m_rows + bt - 1) / bt)
                                                             : (m_rows + bt - 1) / bt;
  // A gather tile's partial is its shared accumulator: every token × BM.
  const std::int64_t tile_elems = t.moe_gather ? m_rows * e->block_m : e->block_m * t.block_n;
  return {e,       t_blocks * ((n_rows + bw - 1) / bw), t.split_k, tile_elems, tuning::split_k_units(shape, t),
          t_blocks, static_cast<int>(bt)};
}

std::string PlannedTactic::ran_text() const {
  if (tail_tokens == 0) return tactic.name();
  return head.name() + " + tail " + std::to_string(tail_tokens) + ": " + tail.name();
}

const PlannedTactic& last_planned_tactic() { return t_last_plan; }
void set_last_planned_tactic(const PlannedTactic& planned) { t_last_plan = planned; }

kernels::GemmParams gemm_params(const Fp4Tensor& a, const Fp4Tensor& b, const MatrixView& d, std::int64_t m) {
  kernels::GemmParams p;
  p.a = operand(a);
  p.b = operand(b);
  p.m = static_cast<std::int32_t>(m);
  p.n = static_cast<std::int32_t>(b.rows);
  p.k = static_cast<std::int32_t>(a.cols);
  p.groups = static_cast<std::int32_t>(b.groups);
  p.d = d.data;
  p.ldd = d.ld();
  p.d_group_stride = d.gstride();
  p.d_is_bf16 = d.dtype == DType::kBF16;
  return p;
}

namespace {

/// A planned call's grid, work items and split-K slots, and what it takes of
/// the per-stream workspace: all of it follows from the plan and the call's
/// token count.
struct LaunchLayout {
  std::int64_t work = 0, grid = 0;
  std::int32_t split_slots = 0, gather_lead = 0;
  bool weighted = false;
  bool needs_workspace = false;
  std::size_t partial_floats = 0, counters = 0, scratch = 0;  ///< the workspace's parts, where needed
};

LaunchLayout launch_layout(const GemmPlan& plan, std::int32_t m) {
  LaunchLayout l;
  // Work items, which bound the grid: tiles × slices, or for stream-K all
  // K units (the grid is then every CTA the device holds, at most one per
  // unit, so every CTA's share is non-empty: stream_k.hpp).
  l.work = plan.max_tiles * plan.split_k;
  // MoE-dense's tiles (not its gather tiles) read stream-K shares from a
  // table, which shares over several token tiles by the experts each token
  // tile uses (a short last tile skips more of them); the 128 x 256 tiles
  // split by kernels::work_item, after rounds of whole tiles, their
  // partials the shared region's only.
  const bool table_shares = plan.kernel->layout == kernels::Layout::kMoeDense && !plan.kernel->tactic.moe_gather;
  const bool whole_rounds = plan.kernel->stream_k_whole_rounds;
  const int cluster = plan.kernel->tactic.cluster;
  // Two-CTA clusters take pairs of token blocks as their work items.
  const std::int64_t w_blocks = plan.token_blocks > 0 ? plan.max_tiles / plan.token_blocks : 0;
  const std::int64_t items = cluster == 2 ? (plan.token_blocks + 1) / 2 * w_blocks : plan.max_tiles;
  std::int64_t partial_tiles = plan.max_tiles;
  l.split_slots = plan.split_k;
  if (plan.split_k == 0) {
    l.work = items * plan.units;
    const std::int64_t resident = plan.kernel->resident_ctas() / cluster;
    l.grid = table_shares ? kernels::moe_stream_k_grid(plan.max_tiles, plan.units, resident)
                          : std::max<std::int64_t>(1, std::min(resident, l.work));
    if (!whole_rounds) {
      const kernels::StreamK sk{plan.max_tiles, plan.units, static_cast<std::int32_t>(l.grid)};
      l.weighted = table_shares && plan.token_blocks >= 2 && plan.token_blocks <= kernels::kMaxWeightedBlocks &&
                   sk.weights_apply();
      l.split_slots = sk.max_slots(l.weighted);
      // The gather tiles share by cost where their counts allow (decided in
      // the kernel): room for either split. The 8-token tiles take their
      // shares by placement, weighted (docs/PERF.md stops 58-59).
      if (plan.kernel->tactic.moe_gather) {
        // (The placement counter holds two 16-bit counts.)
        if (kernels::gather_cost_shares(plan.kernel->tactic.block_n) && plan.kernel->ctas_per_sm == 2 && sk.ctas < (1 << 16))
          l.gather_lead = kernels::gather_rank_lead(m);
        l.split_slots = std::max(l.split_slots, kernels::GatherShares::max_slots(plan.max_tiles, sk.ctas, l.gather_lead));
      }
    }
  }
  if (whole_rounds && plan.split_k == 0) {  // (these tiles take no fixed split: validated above)
    const kernels::SplitWorkspaceShape ws =
        kernels::split_workspace_shape(items, plan.units, static_cast<std::int32_t>(std::max<std::int64_t>(l.grid, 1)));
    l.split_slots = ws.slots;
    partial_tiles = ws.partial_tiles * cluster;  // a cluster's CTAs store a partial each
  }
  l.grid *= cluster;
  l.needs_workspace = l.split_slots > 1 || l.weighted;
  if (l.needs_workspace) {
    // Scratch for the largest count table weighted shares take, whatever
    // this call's M, so a graph captured at a larger M than the warm-up
    // call's does not need the workspace to grow (which capture refuses).
    constexpr std::size_t kCountInts =
        std::size_t(kernels::kMaxWeightedBlocks) * ((kernels::kMaxWeightedUnits + kernels::kBlockExpertsSlice - 1) / kernels::kBlockExpertsSlice);
    l.partial_floats = static_cast<std::size_t>(partial_tiles * l.split_slots * plan.tile_elems);
    // (+ 1: the gather tiles' placement counter, after the tiles'.)
    l.counters = static_cast<std::size_t>(plan.max_tiles) + (l.gather_lead > 0 ? 1 : 0);
    l.scratch = l.weighted ? kCountInts : 0;
  }
  return l;
}

}  // namespace

void reserve_gemm_workspace(const GemmPlan& plan, std::int32_t m, cudaStream_t stream) {
  const LaunchLayout l = launch_layout(plan, m);
  if (l.needs_workspace) split_k_workspace(stream, l.partial_floats, l.counters, l.scratch);
}

void launch_gemm(const GemmPlan& plan, const Fp4Tensor& a, const Fp4Tensor& b, const kernels::GemmParams& params,
                 cudaStream_t stream) {
  kernels::GemmParams p = params;
  p.split_k = plan.split_k;
  const LaunchLayout l = launch_layout(plan, p.m);
  p.split_slots = l.split_slots;
  p.gather_lead = l.gather_lead;
  // (Held to the launch: another thread's growth frees the buffer it replaces.)
  std::optional<WorkspaceHold> hold;
  if (l.needs_workspace) {
    hold.emplace();
    const SplitKWorkspace ws = split_k_workspace(stream, l.partial_floats, l.counters, l.scratch);
    p.split_partials = ws.partials;
    p.split_counters = ws.counters;
    if (p.gather_lead > 0) p.gather_rank = reinterpret_cast<std::uint32_t*>(ws.counters + plan.max_tiles);
    if (l.weighted) {
      kernels::BlockExpertsParams bp;
      bp.alpha = p.alpha;
      bp.stride_m = p.alpha_stride_m;
      bp.stride_e = p.alpha_stride_e;
      bp.tokens = p.m;
      bp.experts = p.experts;
      bp.block_rows = plan.block_tokens;
      bp.counts = ws.scratch;
      kernels::launch_block_experts(bp, stream);
      p.stream_k_block_experts = ws.scratch;
      p.stream_k_blocks = static_cast<std::int32_t>(plan.token_blocks);
      p.stream_k_slices = kernels::block_experts_slices(plan.units);
    }
  }
  if (p.gather_rank == nullptr) p.gather_lead = 0;  // (no workspace, no placement: shares by index)
  const kernels::LaunchArgs args{&a, &b, p, a.rows * a.groups, b.rows * b.groups, l.work, stream, l.grid};
  (b.prepacked ? plan.kernel->launch_prepacked : plan.kernel->launch)(args);
}

}  // namespace fp4moe::detail
