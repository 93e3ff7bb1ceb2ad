// The run-time side of the tuning cache: per-device tables loaded once,
// refused files never used, entries whose tactic cannot run dropped (a tile
// holding only part of its bucket kept), and the cost of a lookup.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "kernels/sm90/gemm_registry.hpp"
#include "tuning/runtime_cache.hpp"
#include "tuning/tactic_space.hpp"

namespace fp4moe::tuning {
namespace {

namespace fs = std::filesystem;

const detail::DeviceIdentity kH200{"NVIDIA H200", 132};

struct Fixture {
  std::string path;
  std::atomic<int> identity_calls{0};
  std::vector<std::string> warnings;
  detail::DeviceIdentity device = kH200;
  RuntimeCache cache;
  Fixture()
      : path((fs::temp_directory_path() / ("fp4moe-runtime-" + std::to_string(::getpid()) + "-" +
                                           std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".json"))
                 .string()),
        cache([this](int) {
                ++identity_calls;
                return device;
              },
              [this] { return path; }, [this](const std::string& m) { warnings.push_back(m); }) {}
  ~Fixture() {
    std::remove(path.c_str());
    std::remove((path + ".lock").c_str());
  }
};

TuneShape masked_shape(std::int64_t m, std::int64_t n = 4096) {
  return TuneShape{GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, m, n, 7168, 8};
}

/// A valid tactic for a shape that differs from the heuristic's.
GemmTactic some_tactic(const TuneShape& s) {
  const std::vector<GemmTactic> space = candidate_tactics(problem_shape(s));
  return space.back();
}

CacheEntry make_entry(const TuneShape& s, const GemmTactic& t) {
  CacheEntry e;
  e.key = key_of(s);
  e.tactic = t;
  e.median_us = 10;
  return e;
}

TEST(RuntimeCache, HitMissAndBuckets) {
  Fixture f;
  const TuneShape s = masked_shape(64);
  const GemmTactic t = some_tactic(s);
  merge_into_cache_file(f.path, expected_header(kH200), {make_entry(s, t)});
  const GemmTactic* hit = f.cache.lookup(0, key_of(masked_shape(57)));  // same bucket (64)
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(*hit, t);
  EXPECT_EQ(f.cache.lookup(0, key_of(masked_shape(65))), nullptr);          // bucket 72
  EXPECT_EQ(f.cache.lookup(0, key_of(masked_shape(64, 7168))), nullptr);    // another N
  EXPECT_EQ(f.cache.lookup(0, key_of(masked_shape(10000))), nullptr);       // past every tuned bucket
  EXPECT_EQ(f.cache.lookup(-1, key_of(s)), nullptr);
  EXPECT_EQ(f.cache.lookup(RuntimeCache::kMaxDevices, key_of(s)), nullptr);
  EXPECT_TRUE(f.warnings.empty());
  f.cache.set_enabled(false);
  EXPECT_EQ(f.cache.lookup(0, key_of(s)), nullptr);
  f.cache.set_enabled(true);
  EXPECT_NE(f.cache.lookup(0, key_of(s)), nullptr);
}

TEST(RuntimeCache, AnotherDeviceOrVersionIsRefusedWithAWarning) {
  for (int what = 0; what < 4; ++what) {
    Fixture f;
    const TuneShape s = masked_shape(8);
    CacheHeader h = expected_header(kH200);
    if (what == 0) h.device = "NVIDIA H100 80GB HBM3";
    if (what == 1) h.library_version = "0.0.1";
    if (what == 2) h.tactic_space = "0000000000000000";
    if (what == 3) h.sm_count = 114;  // same name, another SM count (a partitioned or smaller part)
    merge_into_cache_file(f.path, h, {make_entry(s, some_tactic(s))});
    EXPECT_EQ(f.cache.lookup(0, key_of(s)), nullptr) << what;
    ASSERT_EQ(f.warnings.size(), 1u) << what;
    EXPECT_NE(f.warnings[0].find("ignored"), std::string::npos) << f.warnings[0];
    EXPECT_NE(f.warnings[0].find(f.path), std::string::npos) << f.warnings[0];
    EXPECT_NE(f.warnings[0].find(h.describe()), std::string::npos) << "says what the file was written for: " << f.warnings[0];
  }
}

TEST(RuntimeCache, CorruptFileIsIgnoredWithAWarningMissingFileSilently) {
  Fixture f;
  EXPECT_EQ(f.cache.lookup(0, key_of(masked_shape(8))), nullptr);
  EXPECT_TRUE(f.warnings.empty()) << "no file is the normal state";
  {
    std::FILE* out = std::fopen(f.path.c_str(), "w");
    std::fputs("{\"fp4moe_tuning_cache\": 1, \"entries\": [", out);
    std::fclose(out);
  }
  f.cache.invalidate();
  EXPECT_EQ(f.cache.lookup(0, key_of(masked_shape(8))), nullptr);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find("corrupt"), std::string::npos) << f.warnings[0];
}

TEST(RuntimeCache, EntriesWhoseTacticCannotRunAreDropped) {
  Fixture f;
  const TuneShape s = masked_shape(8);
  GemmTactic bad = some_tactic(s);
  bad.split_k = 5;  // not a split-K choice
  GemmTactic uncompiled = some_tactic(s);
  uncompiled.block_n = 24;
  const TuneShape other = masked_shape(16);
  merge_into_cache_file(f.path, expected_header(kH200),
                        {make_entry(s, bad), make_entry(masked_shape(24), uncompiled), make_entry(other, some_tactic(other))});
  EXPECT_EQ(f.cache.lookup(0, key_of(s)), nullptr);
  EXPECT_EQ(f.cache.lookup(0, key_of(masked_shape(24))), nullptr);
  EXPECT_NE(f.cache.lookup(0, key_of(other)), nullptr);
  EXPECT_EQ(f.warnings.size(), 2u);
}

// The tuner may pick, for a bucket, a gather tile that holds only the
// bucket's smaller points (stop 20's token-limit rule); the table keeps it
// (checked at the bucket's top M it would be dropped, and the tuned tile
// would never run: seen on an H200 sweep at da7d7ab), and the entry point
// checks each call's M itself.
TEST(RuntimeCache, ATileHoldingPartOfItsBucketIsKept) {
  Fixture f;
  const TuneShape s{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 256, 7168, 256 * 256, 256, 256, 8};
  const kernels::KernelEntry* small = nullptr;  // a gather tile that holds fewer than 256 tokens
  for (const auto& e : kernels::kernel_registry())
    if (e.format == Fp4Format::kNVFP4 && e.tactic.moe_gather && e.max_m > 0 && e.max_m < 256) small = &e;
  ASSERT_NE(small, nullptr);
  GemmTactic t = small->tactic;
  t.split_k = kStreamK;
  ASSERT_EQ(check_tactic(problem_shape(s), t).fault, TacticFault::kTooManyTokens);
  merge_into_cache_file(f.path, expected_header(kH200), {make_entry(s, t)});
  const GemmTactic* hit = f.cache.lookup(0, key_of(s));
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(*hit, t);
  EXPECT_TRUE(f.warnings.empty()) << f.warnings[0];
}

TEST(RuntimeCache, InvalidateRereadsTheFile) {
  Fixture f;
  const TuneShape a = masked_shape(8), b = masked_shape(16);
  merge_into_cache_file(f.path, expected_header(kH200), {make_entry(a, some_tactic(a))});
  EXPECT_NE(f.cache.lookup(0, key_of(a)), nullptr);
  const GemmTactic* old = f.cache.lookup(0, key_of(a));
  merge_into_cache_file(f.path, expected_header(kH200), {make_entry(b, some_tactic(b))});
  EXPECT_EQ(f.cache.lookup(0, key_of(b)), nullptr) << "loaded once: not re-read without invalidate";
  f.cache.invalidate();
  EXPECT_NE(f.cache.lookup(0, key_of(b)), nullptr);
  EXPECT_NE(f.cache.lookup(0, key_of(a)), nullptr);
  EXPECT_EQ(*old, some_tactic(a)) << "a table handed out before invalidate stays valid";
  EXPECT_EQ(f.identity_calls.load(), 2);
}

TEST(RuntimeCache, DevicesLoadSeparately) {
  Fixture f;
  const TuneShape s = masked_shape(8);
  merge_into_cache_file(f.path, expected_header(kH200), {make_entry(s, some_tactic(s))});
  EXPECT_NE(f.cache.lookup(0, key_of(s)), nullptr);
  f.device = detail::DeviceIdentity{"NVIDIA H100", 132};  // device 1 is another kind
  EXPECT_EQ(f.cache.lookup(1, key_of(s)), nullptr);
  EXPECT_NE(f.cache.lookup(0, key_of(s)), nullptr);
  EXPECT_EQ(f.identity_calls.load(), 2);
}

/// The lookup is a hash lookup: well under a microsecond, and no device query
/// after the first (identity_calls stays 1).
TEST(RuntimeCache, LookupCostsWellUnderAMicrosecond) {
  Fixture f;
  std::vector<CacheEntry> entries;
  std::vector<ProblemKey> keys;
  for (std::int64_t n = 256; n <= 256 * 20; n += 256)
    for (std::int64_t m : {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}) {
      const TuneShape s = masked_shape(m, n);
      entries.push_back(make_entry(s, some_tactic(s)));
      keys.push_back(key_of(s));
      keys.push_back(key_of(masked_shape(m + 1, n)));  // mostly misses
    }
  merge_into_cache_file(f.path, expected_header(kH200), entries);
  ASSERT_NE(f.cache.lookup(0, keys[0]), nullptr);
  constexpr int kLookups = 1000000;
  std::size_t hits = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kLookups; ++i) hits += f.cache.lookup(0, keys[static_cast<std::size_t>(i) % keys.size()]) != nullptr;
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kLookups;
  std::printf("tuning-cache lookup: %.1f ns per lookup (%zu entries, %zu hits of %d)\n", ns, entries.size(), hits, kLookups);
  EXPECT_LT(ns, 1000.0);
  EXPECT_GT(hits, std::size_t(kLookups / 4));
  EXPECT_EQ(f.identity_calls.load(), 1);
}

TEST(RuntimeCache, ConcurrentLookupsAndInvalidation) {
  Fixture f;
  const TuneShape s = masked_shape(8);
  const GemmTactic t = some_tactic(s);
  merge_into_cache_file(f.path, expected_header(kH200), {make_entry(s, t)});
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r)
    readers.emplace_back([&] {
      while (!stop) {
        const GemmTactic* hit = f.cache.lookup(0, key_of(s));
        if (!hit || !(*hit == t)) ++wrong;
      }
    });
  for (int i = 0; i < 200; ++i) f.cache.invalidate();
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace fp4moe::tuning
