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

GemmTactic pick_tactic(const ProblemShape& shape) {
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

}  // namespace tuning
}  // namespace fp4moe
