#include "tuning/tactic_space.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "kernels/sm90/gemm_registry.hpp"
#include "kernels/sm90/stream_k.hpp"

namespace fp4moe {

std::string GemmTactic::name() const {
  char buf[96];
  const char* kind = moe_gather                  ? "gather"
                     : tuning::is_dp4a(*this)    ? "dp4a"
                     : swap_ab                   ? "swapAB"
                     : fp8                       ? "fp8"
                     : cluster == 2              ? "cluster2"
                                                 : "direct";
  if (split_k == tuning::kStreamK)
    std::snprintf(buf, sizeof buf, "%s bn%d bk%d st%d streamK", kind, block_n, block_k, stages);
  else
    std::snprintf(buf, sizeof buf, "%s bn%d bk%d st%d sk%d", kind, block_n, block_k, stages, split_k);
  return buf;
}

namespace tuning {

bool is_dp4a(const GemmTactic& t) { return t.swap_ab && !t.moe_gather && !t.fp8 && t.block_n == 8; }

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

/// Fixed cost of one work unit (a tile, or one split-K slice of it), in
/// pipeline stages: filling and draining the ring, the epilogue, and for
/// split-K the partial tile's store and the last slice's reduction. Fitted
/// to the sweep (docs/PERF.md, "sweep"): with a smaller cost the model
/// split decode rows whose K is short (2048) and the 128-token MoE-dense
/// rows, and both ran 25-30% slower than unsplit. MoE-dense pays more per
/// unit: the producer's alpha scan and the per-expert folds start over.
/// The other layouts: 5, fitted to the H200 sweep of stop 35 (dense
/// 64x2112x7168, bn64: split 1-6 at 1.2 us a stage, 5.0 stages a unit;
/// 128x7168x16384, bn128: 1.75 us a stage, 5.4-6.6 a unit).
double unit_overhead_stages(const ProblemShape& s) { return s.layout == kernels::Layout::kMoeDense ? 30.0 : 5.0; }

/// Fixed cost of one stream-K segment. MoE-dense: half a split-K unit's,
/// fitted to the sweep at 1d622dc (seed-fc2 M = 32, 128 and 256: 16-23
/// stages). Dense: 3.5, fitted with the unit's 5 to the same stop-35 sweep
/// (3.8 stages on the bn64 row, 3.4 on the bn128 one), which puts
/// 128x7168x16384 on stream-K (70.9 us against split 2's 75.6) and leaves
/// 64x2112x7168 on split 6 (15.9 us, stream-K 18.0).
double segment_overhead_stages(const ProblemShape& s) { return s.layout == kernels::Layout::kMoeDense ? 15.0 : 3.5; }

/// What a split tile's partial costs stream-K after whole rounds, in
/// stages, for a 128 x 256 FP32 partial (scaled by the tile's size): fitted
/// to the stop-46 probe of the two-CTA 128 x 256 tile against its whole
/// tiles (H200, docs/PERF.md): with 6 the model gives 8192³ 0.983
/// (measured 0.944-0.985 over both formats and two calls), prefill G4
/// 0.979 (0.974-0.979), 4096x7168x16384 0.984 (0.976-0.980),
/// 2048x7168x16384 0.877 (0.877-0.889), 4096x4096x7168 1.027 (1.027-1.030),
/// prefill G8 1.001 (1.010-1.014), a whole-wave shape 1.006 (1.004-1.005).
constexpr double kPartialStagesPer128x256 = 6.0;

/// The share of a MoE-dense tile's experts that `tokens` tokens use when
/// each picks top_k of E experts uniformly: 1 - (1 - k/E)^tokens; the kernel
/// skips the others. 1 when the routing is unknown (dense alpha) and for
/// every other layout.
double expert_share(const ProblemShape& s, std::int64_t tokens) {
  if (s.layout != kernels::Layout::kMoeDense || s.top_k <= 0 || s.experts <= 0) return 1.0;
  return 1.0 - std::pow(1.0 - double(std::min(s.top_k, s.experts)) / double(s.experts), double(tokens));
}

/// Modelled time of a tactic with `split` slices, in pipeline stages: work
/// units (a tile's slice) go to the persistent CTAs round robin (unit u to
/// CTA u mod G), each costing its stages (MoE-dense: times the share of
/// experts its tokens use) plus the fixed cost per unit; the slowest CTA
/// sets the time. With equal units that is waves x unit cost. Routed
/// MoE-dense units differ: the last token tile, when short, skips more
/// experts. Its units are the last ids, so moving from CTA c to c + 1 only
/// turns full units into short ones or drops one: CTA 0 is the slowest.
///
/// Stream-K (split = kStreamK): every CTA takes ⌈tiles·units / G⌉ units,
/// in as many segments as tiles it touches (each paying the fixed cost), at
/// the expert share of a full token tile. MoE-dense over several token
/// tiles shares by cost instead where it can (stream_k.hpp, weights clamped
/// to at least 1/kWeightSpread): every CTA then takes the average share.
double modelled_stages(const ProblemShape& s, const GemmTactic& t, const kernels::KernelEntry& entry, int split) {
  const std::int64_t bt = t.swap_ab ? t.block_n : entry.block_m, bw = t.swap_ab ? entry.block_m : t.block_n;
  const std::int64_t tiles = output_tiles(s, t, entry.block_m);
  const std::int64_t slots = std::int64_t(std::max(1, s.sm_count)) * entry.ctas_per_sm;
  const int units = split_k_units(s, t);
  // (MoE-dense counts 128-K stages, the unit its fixed costs were fitted in,
  // whatever the tile's stage.)
  const int stage_k = s.layout == kernels::Layout::kMoeDense ? 128 : t.block_k;
  const double stages = double((s.k + stage_k - 1) / stage_k), stages_per_unit = stages / std::max(1, units);
  if (split == kStreamK && entry.stream_k_whole_rounds) {
    // Whole tiles for stream_k_whole_rounds rounds, then equal shares of the
    // rest (kernels::work_item). After whole rounds a CTA's partials (up to
    // two split tiles, each stored and, by the last contributor, read back
    // with the others) cost what the tile's size says:
    // kPartialStagesPer128x256 stages a split tile for a 128 x 256 one.
    const std::int64_t grid = std::max<std::int64_t>(1, std::min(tiles * units, slots));
    const std::int64_t rounds = kernels::stream_k_whole_rounds(tiles, static_cast<std::int32_t>(grid));
    const std::int64_t shared = tiles - rounds * grid;
    const std::int64_t per_cta = (shared * units + grid - 1) / grid, segments = 1 + (per_cta + units - 1) / units;
    const double partials = rounds > 0 ? double(std::min<std::int64_t>(segments, 2)) * kPartialStagesPer128x256 *
                                             double(bt * bw) / (128.0 * 256.0)
                                       : 0.0;
    return double(rounds) * (double(units) * stages_per_unit + unit_overhead_stages(s)) +
           double(per_cta) * stages_per_unit + double(segments) * segment_overhead_stages(s) + partials;
  }
  if (split == kStreamK) {
    const std::int64_t work = tiles * units;
    const std::int64_t grid = s.layout == kernels::Layout::kMoeDense ? kernels::moe_stream_k_grid(tiles, units, slots)
                                                                     : std::max<std::int64_t>(1, std::min(work, slots));
    const std::int64_t per_cta = (work + grid - 1) / grid, segments = 1 + (per_cta + units - 1) / units;
    double share = expert_share(s, bt);
    const std::int64_t t_blocks = (s.m + bt - 1) / bt;
    const kernels::StreamK sk{tiles, units, static_cast<std::int32_t>(grid)};
    if (s.layout == kernels::Layout::kMoeDense && t_blocks >= 2 && t_blocks <= kernels::kMaxWeightedBlocks &&
        sk.weights_apply()) {
      const double floor = 1.0 / kernels::kWeightSpread;
      const double last = std::max(floor, expert_share(s, s.m - (t_blocks - 1) * bt));
      share = (double(t_blocks - 1) * std::max(floor, share) + last) / double(t_blocks);
    }
    return double(per_cta) * stages_per_unit * share + double(segments) * segment_overhead_stages(s);
  }
  const double slice_stages = double((units + split - 1) / split) * stages_per_unit;
  const double overhead = unit_overhead_stages(s);
  const std::int64_t work = tiles * split, waves = (work + slots - 1) / slots;
  const double full = expert_share(s, bt) * slice_stages + overhead;
  if (full >= slice_stages + overhead || s.m % bt == 0) return double(waves) * full;
  const std::int64_t grid = std::min(work, slots), last_tb = (s.m - 1) / bt;
  const std::int64_t first_short = last_tb * ((s.n + bw - 1) / bw) * split;  // the short last token tile's units
  const double short_unit = expert_share(s, s.m - last_tb * bt) * slice_stages + overhead;
  const std::int64_t full_units = std::min(waves, (first_short + grid - 1) / grid);  // CTA 0's
  return double(full_units) * full + double(waves - full_units) * short_unit;
}

const kernels::KernelEntry* entry_of(const ProblemShape& s, const GemmTactic& tile) {
  for (const auto& e : kernels::kernel_registry())
    if (e.format == s.format && e.layout == s.layout && e.tactic == tile) return &e;
  return nullptr;
}

/// The modelled time stream-K after whole rounds must beat (a fraction of
/// the best split's): it changes only the last one-and-a-fraction waves, and
/// the partial wave it takes back costs the 128 x 256 tile 1.3-3% on the
/// suites' shapes (docs/PERF.md stop 45), more on shapes of few waves.
constexpr double kStreamKAfterRoundsGain = 0.99;

int pick_split_k(const ProblemShape& s, const GemmTactic& t) {
  const kernels::KernelEntry* entry = entry_of(s, t);
  if (!entry) return 1;
  const int units = split_k_units(s, t);
  int best = 1;
  double best_time = modelled_stages(s, t, *entry, 1);
  for (int split : kSplitKChoices) {
    if (split == kStreamK) continue;  // last, below
    if (split <= best || split > entry->max_split_k || units / split < 2) continue;
    const double time = modelled_stages(s, t, *entry, split);
    if (time < 0.95 * best_time) {
      best = split;
      best_time = time;
    }
  }
  GemmTactic streamk = t;
  streamk.split_k = kStreamK;
  // Stream-K after whole rounds changes only the last one-and-a-fraction
  // waves, so a smaller modelled gain is taken there.
  const std::int64_t slots = std::int64_t(std::max(1, s.sm_count)) * entry->ctas_per_sm;
  const bool after_rounds =
      entry->stream_k_whole_rounds && kernels::stream_k_whole_rounds(output_tiles(s, t, entry->block_m), slots) > 0;
  const double gain = after_rounds ? kStreamKAfterRoundsGain : 0.95;
  if (check_tactic(s, streamk).ok() && modelled_stages(s, t, *entry, kStreamK) < gain * best_time) best = kStreamK;
  return best;
}

/// Routed MoE-dense (top_k known): the gathered formulation from one token
/// per expert on average (M·top_k/E), where one holds M. Measured on an H100
/// (E = 256, W = 256, top-8; docs/PERF.md stop 17): gather bn16 bk256 on
/// stream-K was the fastest tactic of every row from M = 32 (one token per
/// expert: 0.95x the best dense tactic) to M = 384 (0.27x). Its widest
/// stages that divide W; 8 tokens a pass up to 5 per expert,
/// 16 up to 20 (32 lost everywhere up to 12 per expert), 32 past 20 per
/// expert (fewer passes over each expert's weights; not measured). The 8-token tiles run
/// two CTAs per SM where they hold M (more warps to hide latency with); the
/// wider ones one CTA of four warpgroups with two producer warps. Since stop
/// 27's producer and pass handout that tile beat the 8-token ones from 5
/// tokens per expert (H200 sweep, E = 256: M = 160 0.965x, 192 0.934x, 224
/// 0.851x the time; at 4, M = 128, 8 a pass stayed the best), where 7.5
/// had been the crossing before. Stop 60's sweep (H200, after stops 51-59
/// sped the 8-token tiles up) moved NVFP4's crossing past 5 per expert: at
/// M = 160 its 8-token tile ran 0.956x the 16-token one's time, MXFP4's
/// 1.017x (its 8-token tile then ran 7-8% slower than NVFP4's; after
/// c08a9f3 and e8c2b32 made it 2-5% faster, stop 61 re-timed M = 160 at
/// 0.998x: a tie, so MXFP4 kept 4.5); from 6 per expert the 16-token
/// tile won for both. The A/B of the entry point:
/// NVFP4 M = 160 0.944x, prepacked 0.937x. With the tokens gathered in
/// BF16 (stop 63) MXFP4's crossing moved too: at M = 160 its four-stage
/// 8-token tile ran 130.6 us, the 16-token one 134.2 (0.973x; at M = 192
/// the 16-token tile still won, 134.8 against 141.4); the A/B of the
/// entry point: MXFP4 M = 160 0.997x, prepacked 0.973x (docs/PERF.md stop
/// 63). With the most stages that still
/// hold M. Below one token per expert: not measured, so the dense
/// formulation as before.
const GemmTactic* pick_gather(const ProblemShape& shape, const std::vector<GemmTactic>& all) {
  if (shape.layout != kernels::Layout::kMoeDense || shape.top_k <= 0 || shape.experts <= 0) return nullptr;
  const double per_expert = double(shape.m) * std::min(shape.top_k, shape.experts) / shape.experts;
  if (per_expert < 1.0) return nullptr;
  const double most_for_8 = 5.0;
  const int want_bn = per_expert <= most_for_8 ? 8 : per_expert <= 20.0 ? 16 : 32;
  const GemmTactic* best = nullptr;
  auto better = [&](const GemmTactic& t) {
    if (!best) return true;
    const int d = std::abs(t.block_n - want_bn), best_d = std::abs(best->block_n - want_bn);
    if (d != best_d) return d < best_d;
    const int ctas = entry_of(shape, t)->ctas_per_sm, best_ctas = entry_of(shape, *best)->ctas_per_sm;
    if (ctas != best_ctas) return t.block_n == 8 ? ctas > best_ctas : ctas < best_ctas;
    return t.block_k != best->block_k ? t.block_k > best->block_k : t.stages > best->stages;
  };
  for (const GemmTactic& t : all)
    if (t.moe_gather && check_tactic(shape, t).ok() && better(t)) best = &t;
  return best;
}

GemmTactic pick_tile(const ProblemShape& shape) {
  std::vector<GemmTactic> all = compiled_tactics(shape.format, shape.layout);
  if (const GemmTactic* gather = pick_gather(shape, all)) return *gather;
  // The rest chooses among the dense formulation's BF16-route tiles (MXFP4's
  // FP8 route ran slower on every row it was timed on: docs/PERF.md; the
  // tuner still times it). The two-CTA cluster tile only for MXFP4 (below).
  std::vector<GemmTactic> clustered;
  for (const GemmTactic& t : all)
    if (t.cluster != 1) clustered.push_back(t);
  std::erase_if(all, [](const GemmTactic& t) { return t.moe_gather || t.fp8 || t.cluster != 1; });
  // The CUDA-core route for one or two tokens a weight tile, on B in the
  // standard bit order (kDp4aMaxTokens); the wgmma tiles otherwise.
  if (shape.m > kDp4aMaxTokens || shape.b_prepacked) std::erase_if(all, [](const GemmTactic& t) { return is_dp4a(t); });
  // MoE-dense: the 256-K stage tiles wherever they hold whole experts (W a
  // multiple of 256; faster on every seed-fc2 row timed, gemm_configs.hpp),
  // else the 128-K ones.
  if (shape.layout == kernels::Layout::kMoeDense && shape.experts > 0) {
    const int stage_k = (shape.k / shape.experts) % 256 == 0 ? 256 : 128;
    std::erase_if(all, [&](const GemmTactic& t) { return t.block_k != stage_k; });
  }
  // Few tokens per weight tile: the weights dominate the bytes, so put them
  // on the register side and stage the tokens (swap-AB), with the smallest
  // token tile that holds them. Otherwise the widest direct tile. MoE-dense
  // stops at 96 tokens: its swap-AB 128-token tile ran 1.03-1.07x the
  // direct 128 x 128 tile's time at M = 96-384 (seed-fc2, H200,
  // docs/PERF.md stop 31; 2x before its fold read alpha from shared memory),
  // while the 96-token one (256-K stages) ran M = 96 in 0.73-0.80x of it
  // (stop 38). Where W is not a multiple of 256 nothing past 64 tokens
  // holds M: the direct tile.
  //
  // With routed alpha (MoE-dense, top_k known) a token tile smaller than M
  // reads the weights more often but skips more experts per tile, and makes
  // more, shorter work units: it is taken where its modelled time is 5%
  // shorter. Measured, E = 256, top-8, M = 32: 16-token tiles 201 us,
  // 64-token 285 us.
  const int swap_limit = shape.layout == kernels::Layout::kMoeDense ? 96 : 128;
  if (shape.m <= swap_limit) {
    const GemmTactic* holding = nullptr;
    for (const GemmTactic& t : all)
      if (t.swap_ab && t.block_n >= shape.m && t.block_n <= swap_limit && (!holding || t.block_n < holding->block_n))
        holding = &t;
    if (holding && expert_share(shape, shape.m) < 1.0) {
      // Comparing tiles, a two-CTA tile on stream-K counts 1.25x: with every
      // CTA busy to the end, two share their SM throughout, which the model
      // of independent slots misses (fitted to the sweep at 0d6efb6, routed
      // FC2: the 16-token two-CTA tile ran 0.78x of the 64-token tile's time
      // at M = 32 and 1.10x at M = 64, both on stream-K).
      auto time_of = [&](const GemmTactic& t) {
        const kernels::KernelEntry& e = *entry_of(shape, t);
        const int split = pick_split_k(shape, t);
        return modelled_stages(shape, t, e, split) * (split == kStreamK && e.ctas_per_sm > 1 ? 1.25 : 1.0);
      };
      const GemmTactic* best = holding;
      double best_time = 0.95 * time_of(*holding);
      for (const GemmTactic& t : all) {
        if (!t.swap_ab || t.block_n >= holding->block_n) continue;
        const double time = time_of(t);
        if (time < best_time) {
          best = &t;
          best_time = time;
        }
      }
      return *best;
    }
    if (holding) return *holding;
  }
  for (const GemmTactic& t : all) {
    if (t.swap_ab) continue;
    // The same tile in two-CTA clusters wherever it is compiled (dense and
    // contiguous): A/Bs with alternating order (H200, 4 rounds, docs/PERF.md
    // stop 20) measured MXFP4 dense 0.96-0.97x the time and the contiguous
    // prefill rows 0.90-0.99x; with the benchmark's idle time before each
    // row, two runs put every dense and prefill row at 0.95-1.00x.
    for (const GemmTactic& c : clustered)
      if (c.block_n == t.block_n && c.block_k == t.block_k && c.stages == t.stages) return c;
    return t;
  }
  return all.front();
}

}  // namespace

/// The tail is worth its second pass over the weights up to 64 tokens:
/// seed-fc2 (E = 256, W = 256, N = 7168, H200, docs/PERF.md stop 30; the
/// 128-K stage tiles) ran the direct tile in 329 us for 96-128 tokens and
/// 617 us for 160-256, the 32-token swap-AB tile in 186 us and the 64-token
/// one in 255 us, so M = 160 takes 329 + 186 us against 617 and M = 192
/// 329 + 255 (measured: 0.78-0.83x and 0.89-0.94x); a tail of 96 (329 us on
/// the direct tile) would cost more than the whole tile it saves. (The
/// 256-K stage tiles keep those ratios: 319, 162 and 236 us.) With 256-K
/// stages a tail of 65-96 takes the 96-token tile (stop 38: 237 us against
/// the direct tile's 299; M = 224 and 352 0.89-0.95x the time).
///
/// With 256-K stages, 145-192 tokens (17-64 past one direct tile) run as
/// 96 on the 96-token tile and the rest (49-96) on a swap-AB tile, with no
/// direct tile: stop 70's main job (H200, NVFP4) ran M = 96 in 227 us on
/// the 96-token tile, 64 in 182 on the 64-token one, 32 in 127 and 128 in
/// 293 on the direct tile, so M = 160 takes 227 + 182 against 293 + 127
/// and M = 192 227 + 227 against 293 + 182 (predicted 0.96-0.97x and
/// 0.95x). The second call's tokens then start inside a 128-row scale band,
/// which the kernels cannot read from: the call copies their scales to a
/// band start first (moe_dense_fc2; stop 60 tried the split without the
/// copy, and it faulted). 129-144 tokens keep 128 + the rest: 16 past the
/// direct tile take the 16-token tile, cheaper than the 64-token one.
int moe_tail_tokens(const ProblemShape& s, const GemmTactic& picked, int block_tokens) {
  if (s.layout != kernels::Layout::kMoeDense || picked.swap_ab || picked.moe_gather || picked.fp8 || block_tokens <= 0 ||
      s.m <= block_tokens)
    return 0;
  const int tail = s.m % block_tokens;
  const bool split_at_96 = block_tokens == 128 && s.m < 2 * block_tokens && tail > 16 && tail <= 64;
  if (tail <= 64 && !split_at_96) return tail;
  // The widest swap-AB tile below the direct tile's tokens with these stages (the 96-token one).
  int widest = 0;
  for (const GemmTactic& t : compiled_tactics(s.format, s.layout))
    if (t.swap_ab && !t.moe_gather && t.block_n < block_tokens && t.block_k == picked.block_k)
      widest = std::max(widest, t.block_n);
  if (split_at_96) return widest == 96 ? s.m - widest : tail;
  return tail <= widest ? tail : 0;  // 65-96 tokens: where the 96-token tile serves the stages
}

/// The gather tiles' split: stream-K over (tile, expert) units where the
/// tiles (N / 64) leave SMs idle, if that is modelled 5% faster. Time in
/// expert units: whole tiles take ceil(tiles / G) · E; stream-K takes
/// ceil(tiles · E / G) plus, per CTA, one partial accumulator (M × 64 FP32)
/// written and read back, counted as the expert units of weight bytes it
/// equals (an expert unit of a tile: 64 rows × W FP4 and their scales).
int pick_gather_split(const ProblemShape& s, const GemmTactic& t) {
  const kernels::KernelEntry* entry = entry_of(s, t);
  if (!entry || entry->max_split_k == 1 || s.experts < 2) return 1;
  const std::int64_t tiles = (s.n + entry->block_m - 1) / entry->block_m;
  const std::int64_t grid = std::int64_t(std::max(1, s.sm_count)) * entry->ctas_per_sm;
  const double width = double(s.k) / s.experts;
  const double unit_bytes = entry->block_m * width * (0.5 + 1.0 / block_size(s.format));
  const double partial_units = 2.0 * 4.0 * s.m * entry->block_m / unit_bytes;
  const double whole = double((tiles + grid - 1) / grid) * s.experts;
  const double streamed = std::ceil(double(tiles) * s.experts / grid) + partial_units;
  return streamed < 0.95 * whole ? kStreamK : 1;
}

int heuristic_split_k(const ProblemShape& shape, const GemmTactic& tile) {
  GemmTactic base = tile;
  base.split_k = 1;  // (the registry lists tiles with split_k 1)
  return base.moe_gather ? pick_gather_split(shape, base) : pick_split_k(shape, base);
}

GemmTactic pick_tactic(const ProblemShape& shape) {
  GemmTactic t = pick_tile(shape);
  t.split_k = heuristic_split_k(shape, t);
  return t;
}

kernels::Layout layout_of(GemmOp op) {
  switch (op) {
    case GemmOp::kDense: return kernels::Layout::kDense;
    case GemmOp::kContiguous: return kernels::Layout::kContiguous;
    case GemmOp::kMasked: return kernels::Layout::kMasked;
    case GemmOp::kMoeFc2: return kernels::Layout::kMoeDense;
    case GemmOp::kMoeFc1: return kernels::Layout::kMoeFc1;
  }
  return kernels::Layout::kDense;
}

ProblemShape problem_shape(const TuneShape& call) {
  static constexpr std::int64_t kMaxInt = 0x7fffffff;
  auto clamp = [](std::int64_t v) { return static_cast<int>(std::clamp<std::int64_t>(v, 0, kMaxInt)); };
  ProblemShape s{call.format, layout_of(call.op), std::max(1, clamp(call.m)), clamp(call.n), clamp(call.k), 1};
  switch (call.op) {
    case GemmOp::kDense: break;
    case GemmOp::kContiguous:
    case GemmOp::kMasked: s.groups = clamp(call.groups); break;
    case GemmOp::kMoeFc2:
      s.experts = clamp(call.groups);
      s.top_k = std::clamp(call.top_k, 0, s.experts);
      break;
    case GemmOp::kMoeFc1:
      s.experts = clamp(call.groups);
      s.n = clamp(call.n * call.groups);  // every expert's 2I rows side by side
      break;
  }
  return s;
}

TacticCheck check_tactic(const ProblemShape& shape, const GemmTactic& tactic) {
  TacticCheck r;
  GemmTactic base = tactic;
  base.split_k = 1;  // every kernel runs any split_k
  for (const auto& e : kernels::kernel_registry())
    if (e.format == shape.format && e.layout == shape.layout && e.tactic == base) r.kernel = &e;
  if (!r.kernel) {
    r.fault = TacticFault::kNotCompiled;
    return r;
  }
  r.units = split_k_units(shape, tactic);
  r.max_m = r.kernel->max_m;
  if (std::find(std::begin(kSplitKChoices), std::end(kSplitKChoices), tactic.split_k) == std::end(kSplitKChoices))
    r.fault = TacticFault::kSplitKChoice;
  else if (tactic.split_k == kStreamK && !r.kernel->stream_k)
    r.fault = TacticFault::kSplitKNotCompiled;
  else if (tactic.split_k == kStreamK && shape.layout == kernels::Layout::kMasked)
    r.fault = TacticFault::kStreamKLayout;
  else if (tactic.split_k == kStreamK && r.units < 2)
    r.fault = TacticFault::kSplitKUnits;
  else if (tactic.split_k > r.kernel->max_split_k)
    r.fault = TacticFault::kSplitKNotCompiled;
  else if (tactic.split_k > r.units)
    r.fault = TacticFault::kSplitKUnits;
  else if (r.max_m > 0 && shape.m > r.max_m)
    r.fault = TacticFault::kTooManyTokens;
  else if (shape.layout == kernels::Layout::kMoeDense && shape.experts > 0 && (shape.k / shape.experts) % tactic.block_k != 0)
    r.fault = TacticFault::kExpertWidth;
  return r;
}

std::vector<GemmTactic> candidate_tactics(const ProblemShape& shape) {
  std::vector<GemmTactic> out;
  for (const GemmTactic& tile : compiled_tactics(shape.format, shape.layout))
    for (int split : kSplitKChoices) {
      GemmTactic t = tile;
      t.split_k = split;
      if (check_tactic(shape, t).ok()) out.push_back(t);
    }
  return out;
}

std::string tactic_space_version() {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
  auto mix = [&](std::int64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= static_cast<std::uint64_t>(v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  };
  for (int split : kSplitKChoices) mix(split);
  for (const auto& e : kernels::kernel_registry()) {
    mix(static_cast<int>(e.format));
    mix(static_cast<int>(e.layout));
    mix(e.tactic.swap_ab);
    mix(e.tactic.block_n);
    mix(e.tactic.block_k);
    mix(e.tactic.stages);
    mix(e.tactic.fp8);
    mix(e.tactic.cluster);
    mix(e.block_m);
    mix(e.ctas_per_sm);
    mix(e.max_split_k);
    mix(e.stream_k);
    mix(e.stream_k_whole_rounds);
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace tuning
}  // namespace fp4moe
