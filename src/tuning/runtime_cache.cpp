#include "tuning/runtime_cache.hpp"

#include <cstdio>
#include <cstdlib>

#include "tuning/tactic_space.hpp"

namespace fp4moe::tuning {

CacheHeader expected_header(const detail::DeviceIdentity& id) {
  return CacheHeader{library_version(), tactic_space_version(), id.name, id.sm_count};
}

std::unique_ptr<TacticTable> load_table(const std::string& path, const CacheHeader& expected, std::vector<std::string>& notes) {
  auto table = std::make_unique<TacticTable>();
  if (path.empty()) return table;
  const LoadResult r = read_cache_file(path, expected);
  if (r.status == LoadStatus::kMissing) return table;
  if (r.status != LoadStatus::kOk) {
    notes.push_back("tuning cache " + path + " ignored: " + r.message + "; the heuristic picks every tactic");
    return table;
  }
  for (const CacheEntry& e : r.file.entries) {
    // Checked at the bucket's top M, except the token limit: a tile that holds
    // only part of the bucket (the 8-token gather tiles) is what the tuner
    // picked for the points it holds, and the entry point checks each call's
    // M, running the heuristic's tactic past the limit.
    const TacticCheck check = check_tactic(problem_shape(shape_of(e.key)), e.tactic);
    if (!check.ok() && check.fault != TacticFault::kTooManyTokens) {
      notes.push_back("tuning cache " + path + ": entry " + e.key.describe() + " ignored: tactic " + e.tactic.name() +
                      " cannot run it");
      continue;
    }
    table->insert(e.key, e.tactic);
  }
  return table;
}

RuntimeCache::RuntimeCache(IdentityFn identity, PathFn path, WarnFn warn)
    : identity_(std::move(identity)), path_(std::move(path)), warn_(std::move(warn)) {
  for (auto& t : tables_) t.store(nullptr, std::memory_order_relaxed);
}

const TacticTable* RuntimeCache::load(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = tables_[static_cast<std::size_t>(device)];
  if (const TacticTable* t = slot.load(std::memory_order_acquire)) return t;
  std::vector<std::string> notes;
  std::unique_ptr<TacticTable> table;
  try {
    table = load_table(path_(), expected_header(identity_(device)), notes);
  } catch (const std::exception& e) {  // the device could not be queried: no cache, never a failed GEMM
    notes.push_back(std::string("tuning cache not loaded: ") + e.what());
    table = std::make_unique<TacticTable>();
  }
  for (const std::string& n : notes) warn_(n);
  owned_.push_back(std::move(table));
  slot.store(owned_.back().get(), std::memory_order_release);
  return owned_.back().get();
}

void RuntimeCache::invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& t : tables_) t.store(nullptr, std::memory_order_release);
}

// ------------------------------------------------- the process's cache ----

namespace {

std::mutex g_path_mu;
std::string g_path_override;

}  // namespace

void warn(const std::string& message) { std::fprintf(stderr, "fp4moe: %s\n", message.c_str()); }

void set_cache_path_override(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(g_path_mu);
    g_path_override = path;
  }
  runtime_cache().invalidate();
}

std::string cache_path() {
  std::string over;
  {
    std::lock_guard<std::mutex> lock(g_path_mu);
    over = g_path_override;
  }
  return resolve_cache_path(over, std::getenv("FP4MOE_TUNING_CACHE"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
}

RuntimeCache& runtime_cache() {
  static RuntimeCache cache([](int device) { return detail::device_identity(device); }, [] { return cache_path(); },
                            [](const std::string& m) { warn(m); });
  return cache;
}

}  // namespace fp4moe::tuning
