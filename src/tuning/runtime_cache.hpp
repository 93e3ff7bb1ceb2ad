// The tuning cache as the entry points see it: per device, a hash table of
// key -> tactic, read from the cache file once (lazily, thread-safe) and
// looked up without locks, allocation, CUDA calls or host synchronisation.
// Host only.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/device_identity.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/tuning_cache.hpp"

namespace fp4moe::tuning {

/// The entries of one loaded cache file.
class TacticTable {
 public:
  void insert(const ProblemKey& key, const GemmTactic& tactic) { map_[key] = tactic; }
  const GemmTactic* find(const ProblemKey& key) const {
    const auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }
  std::size_t size() const { return map_.size(); }

 private:
  std::unordered_map<ProblemKey, GemmTactic, ProblemKeyHash> map_;
};

/// The header a cache must carry to be used on a device of this identity
/// with this build.
CacheHeader expected_header(const detail::DeviceIdentity& id);

/// Builds the table of a cache file for a device: the file's entries whose
/// tactic passes the argument rules for the entry's shape (others are dropped
/// with a note). A missing file gives an empty table silently; an unreadable,
/// corrupt or mismatched one an empty table and a note.
std::unique_ptr<TacticTable> load_table(const std::string& path, const CacheHeader& expected, std::vector<std::string>& notes);

class RuntimeCache {
 public:
  static constexpr int kMaxDevices = 64;
  using IdentityFn = std::function<detail::DeviceIdentity(int device)>;
  using PathFn = std::function<std::string()>;
  using WarnFn = std::function<void(const std::string&)>;

  /// identity: a device's name and SM count (queried at load only);
  /// path: the cache file to read (empty: none); warn: where notes go.
  RuntimeCache(IdentityFn identity, PathFn path, WarnFn warn);

  /// The cached tactic for `key` on `device`, or null. Loads the device's
  /// table on first use; afterwards an atomic load and a hash lookup.
  const GemmTactic* lookup(int device, const ProblemKey& key) {
    if (!enabled_.load(std::memory_order_relaxed) || device < 0 || device >= kMaxDevices) return nullptr;
    const TacticTable* t = tables_[static_cast<std::size_t>(device)].load(std::memory_order_acquire);
    if (!t) t = load(device);
    return t->find(key);
  }

  /// Loads the device's table now (if not loaded); returns it.
  const TacticTable* load(int device);
  /// Forgets every loaded table: the next lookup reads the file again.
  /// Tables already handed out stay valid until the cache is destroyed.
  void invalidate();
  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

 private:
  IdentityFn identity_;
  PathFn path_;
  WarnFn warn_;
  std::atomic<bool> enabled_{true};
  std::array<std::atomic<const TacticTable*>, kMaxDevices> tables_{};
  std::mutex mu_;
  std::vector<std::unique_ptr<TacticTable>> owned_;  ///< every table ever loaded
};

// ------------------------------------------------- the process's cache ----

/// The cache the entry points use: identity from the CUDA device, path from
/// cache_path(), notes to stderr ("fp4moe: tuning cache ...").
RuntimeCache& runtime_cache();

/// The process-wide path setting (set_tuning_cache_path) and the resolved
/// path (resolve_cache_path with the environment).
void set_cache_path_override(const std::string& path);
std::string cache_path();

/// Writes a note to stderr, prefixed "fp4moe: ".
void warn(const std::string& message);

}  // namespace fp4moe::tuning
