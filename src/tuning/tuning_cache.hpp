// The tuning-cache file: its format, strict reading, and merging writes that
// are safe with several processes at once. Host only; no CUDA.
//
// Format (JSON):
//   {
//     "fp4moe_tuning_cache": 1,                 // this file format
//     "library_version": "0.1.0",
//     "tactic_space": "89ab...",                // tuning::tactic_space_version()
//     "device": "NVIDIA H200", "sm_count": 132,
//     "entries": [
//       {"op": "masked", "format": "nvfp4", "out": "bf16",
//        "groups": 8, "n": 4096, "k": 7168, "bucket": 64,      // groups: grouped and MoE only
//        "width": 256,                                        // moe_fc2 only
//        "tactic": {"swap_ab": true, "block_n": 64, "block_k": 256, "stages": 5, "split_k": 2},
//        "median_us": 41.5, "heuristic_us": 44.0, "candidates": 16,
//        "unusable": ["direct bn256 bk128 st4 sk1: <why>"]}, ...
//     ]
//   }
// Every member above is required (except those marked "only"), no other
// member is allowed, and no two entries share a key: anything else makes the
// file corrupt.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fp4moe/gemm.hpp"
#include "tuning/problem_key.hpp"

namespace fp4moe::tuning {

constexpr int kCacheFormat = 1;

/// What a cache file belongs to: it is used only where all of this matches.
struct CacheHeader {
  std::string library_version;
  std::string tactic_space;
  std::string device;
  int sm_count = 0;
  bool operator==(const CacheHeader&) const = default;
  std::string describe() const;  ///< "fp4moe 0.1.0, tactic space ..., NVIDIA H200 (132 SMs)"
};

struct CacheEntry {
  ProblemKey key;
  GemmTactic tactic;
  double median_us = 0;     ///< the tactic's time when tuned
  double heuristic_us = 0;  ///< the heuristic's tactic's time in the same run (0: unusable or unknown)
  int candidates = 0;       ///< tactics timed
  std::vector<std::string> unusable;  ///< tactics that failed, with the reason
};

struct CacheFile {
  CacheHeader header;
  std::vector<CacheEntry> entries;
};

/// Serialises a cache (entries sorted by key: the output is deterministic).
std::string serialize_cache(const CacheFile& file);

/// Parses a cache, strictly; the error says what is wrong and where.
std::variant<CacheFile, std::string> parse_cache(std::string_view text);

enum class LoadStatus {
  kOk,          ///< parsed, and the header matches
  kMissing,     ///< no file
  kUnreadable,  ///< exists but cannot be read
  kCorrupt,     ///< not a valid cache file (syntax, structure, truncation)
  kMismatch,    ///< a valid cache of another library version, tactic set or device
};

struct LoadResult {
  LoadStatus status = LoadStatus::kMissing;
  CacheFile file;       ///< kOk: everything; kMismatch: the file's header
  std::string message;  ///< why, for everything but kOk and kMissing
};

/// Reads and checks a cache file against `expected`. Never throws for a bad
/// file; prints nothing (the caller warns).
LoadResult read_cache_file(const std::string& path, const CacheHeader& expected);

/// Merges `entries` into the cache at `path` for `header`: takes an exclusive
/// flock on "<path>.lock", reads the current file (entries of the same key
/// are replaced; a file of another header, or a corrupt one, is replaced
/// whole, with a note in *notes), writes a temporary file in the same
/// directory and renames it over `path`. Creates the directory. Throws Error
/// when the file cannot be written.
void merge_into_cache_file(const std::string& path, const CacheHeader& header, const std::vector<CacheEntry>& entries,
                           std::vector<std::string>* notes = nullptr);

/// Where the cache lives, first that applies: `override_path` (non-empty),
/// `env_cache` ("off" in any case: disabled, returns ""), `xdg_cache_home`/fp4moe/tuning.json,
/// `home`/.cache/fp4moe/tuning.json, else "" (no location). Null or empty
/// environment values count as unset.
std::string resolve_cache_path(const std::string& override_path, const char* env_cache, const char* xdg_cache_home,
                               const char* home);

}  // namespace fp4moe::tuning
