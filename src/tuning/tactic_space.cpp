#include "tuning/tactic_space.hpp"

#include <algorithm>
#include <cstdio>

#include "kernels/sm90/gemm_registry.hpp"

namespace fp4moe {

std::string GemmTactic::name() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s bn%d bk%d st%d sk%d", swap_ab ? "swapAB" : "direct", block_n, block_k, stages,
                split_k);
  return buf;
}

namespace tuning {

std::vector<GemmTactic> compiled_tactics(Fp4Format format, kernels::Layout layout) {
  std::vector<GemmTactic> out;
  for (const auto& e : kernels::kernel_registry())
    if (e.format == format && e.layout == layout) out.push_back(e.tactic);
  return out;
}

int split_k_units(const ProblemShape& shape, const GemmTactic& tactic) {
  return shape.layout == kernels::Layout::kMoeDense ? shape.experts : (shape.k + tactic.block_k - 1) / tactic.block_k;
}

namespace {

/// Output tiles of the tactic on the shape.
std::int64_t output_tiles(const ProblemShape& s, const GemmTactic& t, int block_m) {
  const std::int64_t bt = t.swap_ab ? t.block_n : block_m, bw = t.swap_ab ? block_m : t.block_n;
  const std::int64_t per_group = (s.m + bt - 1) / bt;
  const std::int64_t t_blocks = s.layout == kernels::Layout::kMasked || s.layout == kernels::Layout::kContiguous
                                    ? s.groups * per_group
                                    : per_group;
  return t_blocks * ((s.n + bw - 1) / bw);
}

/// Split-K for the tactic: the smallest slice count whose work tiles fill
/// the GPU's CTA slots in noticeably fuller waves (each doubling must gain
/// 10%, since partials cost a write and a read), keeping at least two units
/// (experts or K blocks) per slice.
int pick_split_k(const ProblemShape& s, const GemmTactic& t) {
  const kernels::KernelEntry* entry = nullptr;
  for (const auto& e : kernels::kernel_registry())
    if (e.format == s.format && e.layout == s.layout && e.tactic == t) entry = &e;
  if (!entry) return 1;
  const std::int64_t tiles = output_tiles(s, t, entry->block_m);
  const std::int64_t slots = std::int64_t(std::max(1, s.sm_count)) * entry->ctas_per_sm;
  const int units = split_k_units(s, t);
  auto efficiency = [&](int split) {
    const std::int64_t work = tiles * split;
    return double(work) / double((work + slots - 1) / slots * slots);
  };
  int best = 1;
  for (int split : kSplitKChoices)
    if (split > best && split <= entry->max_split_k && units / split >= 2 && efficiency(split) > 1.1 * efficiency(best))
      best = split;
  return best;
}

GemmTactic pick_tile(const ProblemShape& shape) {

  const std::vector<GemmTactic> all = compiled_tactics(shape.format, shape.layout);
  // Few tokens per weight tile: the weights dominate the bytes, so put them
  // on the register side and stage the tokens (swap-AB), with the smallest
  // token tile that holds them. Otherwise the 128 x 256 prefill tile.
  if (shape.m <= 128) {
    const GemmTactic* best = nullptr;
    for (const GemmTactic& t : all)
      if (t.swap_ab && t.block_n >= shape.m && (!best || t.block_n < best->block_n)) best = &t;
    if (best) return *best;
  }
  for (const GemmTactic& t : all)
    if (!t.swap_ab) return t;
  return all.front();
}

}  // namespace

GemmTactic pick_tactic(const ProblemShape& shape) {
  GemmTactic t = pick_tile(shape);
  t.split_k = pick_split_k(shape, t);
  return t;
}

}  // namespace tuning
}  // namespace fp4moe
