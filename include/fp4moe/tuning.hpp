// The autotuner and its persistent cache.
//
// The heuristic picks a good tactic for any shape; the autotuner times every
// tactic that can run a shape and remembers the best (the fastest; for a
// 128-wide bucket the one with the smallest worst-case slowdown, below), per
// tuning bucket of the token dimension, in a JSON file. At run time every GEMM entry point
// called without GemmOptions::tactic looks its problem up in that cache:
//
//     forced tactic (GemmOptions::tactic)  >  cache hit  >  heuristic
//
// The tactic space is what is compiled: every compiled tile of the
// operation's layout (swap-AB, BN, BK, stages, MXFP4's FP8 route, the dense
// tile in two-CTA clusters) × split_k ∈ {1, 2, 3, 4, 6, 8, 0 = stream-K}, minus
// the combinations the argument checks refuse for the shape.
//
// Buckets: a token count M (tokens per group: see TuneShape::m) maps to the
// bucket that holds it, rounding up: 1, 2 and 4, then every 8 up to 128
// (8, 16, ..., 128), then every 128 (256, 384, ...). The tuner times a
// fine bucket at M = the bucket's value; a 128-wide bucket (b-128, b] at
// b-96, b-32 and b, keeping the tactic whose worst slowdown over those
// three is smallest (one tactic serves the whole bucket, and the best one
// can change inside it). A tile whose token limit lies inside the bucket is
// charged, past it, the heuristic's time there: a cached tactic a call
// cannot run gives way to the heuristic's at run time. It refuses buckets
// past TuneOptions::max_m (default 8192); a run-time M in a bucket nobody
// tuned is a miss, and the heuristic decides.
//
// Cache file: JSON, one per (library version, tactic-space version, device
// name, SM count); entries keyed by operation, format, output, N, K, groups
// or experts, expert width and bucket. Location, first that applies:
//   set_tuning_cache_path(path)            (this process)
//   $FP4MOE_TUNING_CACHE                   ("off" disables the cache)
//   $XDG_CACHE_HOME/fp4moe/tuning.json
//   $HOME/.cache/fp4moe/tuning.json
// A file written by another library version, tactic set or device is refused
// with a warning on stderr and never used (the tuner replaces it when it
// writes); a corrupt or truncated file is reported and ignored. Writers merge
// under a lock (flock on "<path>.lock"), write a temporary file in the same
// directory and rename it over the cache, so concurrent tuners lose nothing
// and readers never see a partial file.
//
// Run-time lookup: the file is read once per process and device (on the
// first GEMM call that needs it, or load_tuning_cache()); a lookup is a hash
// lookup in memory, no host synchronisation, no allocation, well under a
// microsecond, and safe during CUDA-graph capture.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fp4moe/gemm.hpp"
#include "fp4moe/types.hpp"

namespace fp4moe {

/// The operations the tuner knows.
enum class GemmOp : std::uint8_t {
  kDense,       ///< fp4_gemm_nt
  kContiguous,  ///< m_grouped_fp4_gemm_nt_contiguous
  kMasked,      ///< m_grouped_fp4_gemm_nt_masked
  kMoeFc2,      ///< moe_dense_fc2
  kMoeFc1,      ///< moe_dense_fc1_swiglu
};

/// What the operation writes.
enum class GemmOutput : std::uint8_t { kBF16, kFP32, kNVFP4 };

const char* gemm_op_name(GemmOp op);          ///< "dense", "contiguous", "masked", "moe_fc2", "moe_fc1"
const char* gemm_output_name(GemmOutput out); ///< "bf16", "fp32", "nvfp4"

/// One problem to tune. The fields mean what the operation's arguments mean:
///   m       tokens per group, as the entry point sees it: dense and MoE: the
///           rows of A; contiguous: rows of A / groups (padding included);
///           masked: expected_m. Tuned for the bucket that holds it.
///   n       rows of B per group (weights): dense/grouped/FC2: N; FC1: 2I.
///   k       K. FC2: 0 or experts·expert_width.
///   groups  contiguous and masked: G; FC2 and FC1: E (the experts).
///   expert_width  FC2: W (a multiple of 128). Else 0.
///   top_k   FC2 only: the routing the tuner's alpha follows (each token picks
///           top_k random experts); 0: every token uses every expert. It is
///           not part of the cache key (the run time cannot see alpha), so
///           tune with the routing the deployment runs.
struct TuneShape {
  GemmOp op = GemmOp::kDense;
  Fp4Format format = Fp4Format::kNVFP4;
  GemmOutput out = GemmOutput::kBF16;
  std::int64_t m = 1;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t groups = 1;
  std::int64_t expert_width = 0;
  int top_k = 0;

  std::string describe() const;  ///< "masked nvfp4 bf16 G=8 m=64 n=4096 k=7168"
};

/// Progress of a tune() call, reported after every timed tactic.
struct TuneProgress {
  std::size_t shape_index = 0;   ///< shape being tuned (0-based)
  std::size_t shapes = 0;        ///< shapes in the call
  std::size_t tactic_index = 0;  ///< tactics of this shape done so far
  std::size_t tactics = 0;       ///< tactics of this shape
  const TuneShape* shape = nullptr;
  double elapsed_s = 0;          ///< since the call began
};

struct TuneOptions {
  int warmup = 3;        ///< untimed runs per tactic
  int reps = 20;         ///< timed runs per tactic; the median counts
  bool cold_l2 = true;   ///< evict L2 before every timed run
  std::int64_t max_m = 8192;  ///< the largest bucket tuned (a multiple of 128, at least 128)
  /// The cache file to merge the results into; empty: the current cache path
  /// (tuning_cache_path()). Results are written unless write_cache is false.
  std::string cache_path;
  bool write_cache = true;
  /// Optional; called after every timed tactic and before each shape's
  /// first. It may throw to stop tuning: the exception leaves tune(), and the
  /// shapes finished before stay in the cache.
  std::function<void(const TuneProgress&)> progress;
};

/// One tactic's measurement.
struct TacticTiming {
  GemmTactic tactic;
  double median_us = 0;  ///< at the bucket; 0 when unusable
  bool usable = true;
  std::string error;     ///< why it was unusable
  std::vector<double> point_us;  ///< at each of TuneResult::points (0 where unusable)
};

struct TuneResult {
  TuneShape shape;
  std::int64_t bucket = 0;       ///< the bucket tuned
  /// The token counts the problem ran at: the bucket, and for a 128-wide
  /// bucket also its quartile points (bucket-96, bucket-32, bucket).
  std::vector<std::int64_t> points;
  bool ok = false;               ///< a usable tactic was found (and cached)
  /// The tactic cached: the fastest at the bucket when it is timed at one
  /// point; else the one whose worst slowdown against the fastest at each
  /// point is smallest.
  GemmTactic best;
  double best_us = 0;            ///< its time at the bucket
  GemmTactic heuristic;          ///< the heuristic's choice for the same shape
  double heuristic_us = 0;       ///< its time in this run (0 if unusable)
  std::vector<TacticTiming> timings;  ///< every candidate, in the order timed
};

/// Tunes every shape on the current device (its bucket of m), merges the
/// results into the cache file and reloads the in-process cache. Uses the
/// GPU: allocates each problem's operands (random data through the library's
/// own quantizer), synchronises, frees them again. A tactic that fails is
/// recorded as unusable and tuning goes on. Throws InvalidArgument (naming
/// shapes[i].field or options.field) before anything runs when an argument
/// breaks a rule, Error when the cache cannot be written.
std::vector<TuneResult> tune(const std::vector<TuneShape>& shapes, const TuneOptions& options = {});

/// The bucket a token count maps to (rounding up; see above), or 0 when m is
/// past max_m (the heuristic decides). m < 1 counts as 1.
std::int64_t tuning_bucket(std::int64_t m, std::int64_t max_m = 8192);
/// Every bucket from the one holding lo to the one holding hi (≤ max_m).
std::vector<std::int64_t> tuning_buckets(std::int64_t lo, std::int64_t hi, std::int64_t max_m = 8192);

/// Uses `path` as the cache file in this process (overrides the environment);
/// empty: back to the default resolution. Takes effect at the next lookup
/// (the in-memory cache is reloaded).
void set_tuning_cache_path(const std::string& path);
/// The cache file in effect; empty when the cache is disabled
/// (FP4MOE_TUNING_CACHE=off) or no location can be found (no HOME).
std::string tuning_cache_path();
/// Turns the run-time lookup on or off in this process (on by default): off,
/// every call without a forced tactic runs the heuristic's.
void set_tuning_cache_enabled(bool enabled);
/// Reads the cache file now for the current device (instead of at the first
/// GEMM call). Returns the number of usable entries (0 if the file is absent,
/// refused or corrupt; the reason goes to stderr).
std::size_t load_tuning_cache();
/// Forgets what was loaded: the next lookup reads the file again.
void reload_tuning_cache();
/// The tactic the current device's cache holds for a problem, if any (what
/// the entry point would run for `shape`, before the heuristic fallback).
/// Throws InvalidArgument for a null `tactic` or an op, format or out
/// outside its enum; any other shape is simply a miss.
bool cached_tactic(const TuneShape& shape, GemmTactic* tactic);

/// A readable listing of a cache file (default: tuning_cache_path()): its
/// header, whether it is usable on this build and device (when a device is
/// present), and every entry. Never throws for a bad file: says what is wrong.
std::string describe_tuning_cache(const std::string& path = {});

/// Every tactic compiled for an operation and format, each listed with
/// split_k = 1; as GemmOptions::tactic each also takes any split_k in {2, 3,
/// 4, 6, 8} up to its tile's limit, or 0 (stream-K) where its tile has it,
/// and the call's shape may still rule a tactic out (InvalidArgument). The C
/// API's fp4moe_gemm_tactics and Python's fp4moe.gemm_tactics list the same.
std::vector<GemmTactic> gemm_tactics(Fp4Format format, GemmOp op);

/// The library version (CMake PROJECT_VERSION) and the tactic-space version
/// (a hash of the compiled tactic set): both are part of a cache's identity.
const char* library_version();
std::string tactic_space_version();

}  // namespace fp4moe
