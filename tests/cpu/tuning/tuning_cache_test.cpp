// The tuning-cache file: round trips, refusal of other versions and devices,
// corrupt and truncated files, concurrent writers, and where it lives.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "fp4moe/error.hpp"
#include "tuning/problem_key.hpp"
#include "tuning/tuning_cache.hpp"

namespace fp4moe::tuning {
namespace {

namespace fs = std::filesystem;

/// A fresh directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "fp4moe-cache-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void spit(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

const CacheHeader kHeader{"0.1.0", "0123456789abcdef", "NVIDIA H200", 132};

CacheEntry entry(GemmOp op, std::int64_t bucket, std::int64_t n = 4096, int split = 1) {
  TuneShape s;
  s.op = op;
  s.format = op == GemmOp::kMasked ? Fp4Format::kMXFP4 : Fp4Format::kNVFP4;
  s.out = op == GemmOp::kMoeFc1 ? GemmOutput::kNVFP4 : GemmOutput::kBF16;
  s.m = bucket;
  s.n = n;
  s.k = op == GemmOp::kMoeFc2 ? 256 * 256 : 7168;
  s.groups = op == GemmOp::kDense ? 1 : op == GemmOp::kMoeFc2 ? 256 : 8;
  CacheEntry e;
  e.key = key_of(s);
  e.tactic = GemmTactic{true, 64, 256, 5, split};
  e.median_us = 12.25 + double(bucket);
  e.heuristic_us = 13.5;
  e.candidates = 16;
  if (bucket == 16) e.unusable = {"direct bn256 bk128 st4 sk2: split_k \"x\"\n"};
  return e;
}

CacheFile sample() {
  CacheFile f;
  f.header = kHeader;
  for (GemmOp op : {GemmOp::kDense, GemmOp::kContiguous, GemmOp::kMasked, GemmOp::kMoeFc2, GemmOp::kMoeFc1})
    for (std::int64_t b : {8, 16, 256}) f.entries.push_back(entry(op, b));
  return f;
}

void expect_same_entries(const std::vector<CacheEntry>& got, const std::vector<CacheEntry>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const CacheEntry& w : want) {
    const auto it = std::find_if(got.begin(), got.end(), [&](const CacheEntry& g) { return g.key == w.key; });
    ASSERT_NE(it, got.end()) << w.key.describe();
    EXPECT_EQ(it->tactic, w.tactic) << w.key.describe();
    EXPECT_EQ(it->median_us, w.median_us);
    EXPECT_EQ(it->heuristic_us, w.heuristic_us);
    EXPECT_EQ(it->candidates, w.candidates);
    EXPECT_EQ(it->unusable, w.unusable);
  }
}

TEST(TuningCache, KeysZeroWhatDoesNotApply) {
  TuneShape s{GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, 100, 2112, 7168, 1};
  ProblemKey k = key_of(s);
  EXPECT_EQ(k.groups, 0);
  EXPECT_EQ(k.width, 0);
  EXPECT_EQ(k.bucket, 104);
  s = TuneShape{GemmOp::kMoeFc2, Fp4Format::kNVFP4, GemmOutput::kBF16, 300, 7168, 65536, 256, 256, 8};
  k = key_of(s);
  EXPECT_EQ(k.groups, 256);
  EXPECT_EQ(k.width, 256);
  EXPECT_EQ(k.bucket, 384);
  // Every field is part of the key.
  const ProblemKey base = key_of(s);
  for (int f = 0; f < 6; ++f) {
    TuneShape t = s;
    if (f == 0) t.format = Fp4Format::kMXFP4;
    if (f == 1) t.out = GemmOutput::kFP32;
    if (f == 2) t.n = 4096;
    if (f == 3) t.k = 128 * 256;
    if (f == 4) t.groups = 128;
    if (f == 5) t.m = 500;
    EXPECT_FALSE(key_of(t) == base) << f;
    EXPECT_NE(ProblemKeyHash{}(key_of(t)), ProblemKeyHash{}(base)) << f;
  }
  TuneShape same_bucket = s;
  same_bucket.m = 257;
  EXPECT_TRUE(key_of(same_bucket) == base);
  EXPECT_EQ(shape_of(base).m, 384);
}

TEST(TuningCache, SerializeParseRoundTrip) {
  const CacheFile f = sample();
  const std::string text = serialize_cache(f);
  auto parsed = parse_cache(text);
  ASSERT_TRUE(std::holds_alternative<CacheFile>(parsed)) << std::get<std::string>(parsed);
  const CacheFile& g = std::get<CacheFile>(parsed);
  EXPECT_EQ(g.header, f.header);
  expect_same_entries(g.entries, f.entries);
  // Deterministic: the same content serialises to the same bytes in any order.
  CacheFile shuffled = f;
  std::reverse(shuffled.entries.begin(), shuffled.entries.end());
  EXPECT_EQ(serialize_cache(shuffled), text);
}

TEST(TuningCache, FileRoundTripAndMerge) {
  TempDir dir;
  const std::string path = dir.file("sub/dir/tuning.json");  // directories are created
  const CacheFile f = sample();
  merge_into_cache_file(path, kHeader, f.entries);
  LoadResult r = read_cache_file(path, kHeader);
  ASSERT_EQ(r.status, LoadStatus::kOk) << r.message;
  expect_same_entries(r.file.entries, f.entries);
  // A second writer replaces one key and adds another; the rest survive.
  CacheEntry changed = f.entries[0];
  changed.tactic.split_k = 4;
  changed.median_us = 1.0;
  const CacheEntry added = entry(GemmOp::kDense, 1024);
  merge_into_cache_file(path, kHeader, {changed, added});
  r = read_cache_file(path, kHeader);
  ASSERT_EQ(r.status, LoadStatus::kOk) << r.message;
  std::vector<CacheEntry> want = f.entries;
  want[0] = changed;
  want.push_back(added);
  expect_same_entries(r.file.entries, want);
  // No temporary file is left behind.
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_TRUE(e.path().filename() == "tuning.json" || e.path().filename() == "tuning.json.lock") << e.path();
}

TEST(TuningCache, AnotherVersionOrDeviceIsRefused) {
  TempDir dir;
  const std::string path = dir.file("tuning.json");
  merge_into_cache_file(path, kHeader, sample().entries);
  for (int field = 0; field < 4; ++field) {
    CacheHeader other = kHeader;
    if (field == 0) other.library_version = "0.2.0";
    if (field == 1) other.tactic_space = "fedcba9876543210";
    if (field == 2) other.device = "NVIDIA H100 80GB HBM3";
    if (field == 3) other.sm_count = 114;
    const LoadResult r = read_cache_file(path, other);
    EXPECT_EQ(r.status, LoadStatus::kMismatch) << field;
    EXPECT_TRUE(r.file.entries.empty()) << "a refused file's entries must not be usable";
    EXPECT_NE(r.message.find(kHeader.describe()), std::string::npos) << r.message;
    EXPECT_NE(r.message.find(other.describe()), std::string::npos) << r.message;
  }
  // Writing for another device replaces the file (with a note); it is never merged.
  CacheHeader h100 = kHeader;
  h100.device = "NVIDIA H100";
  std::vector<std::string> notes;
  merge_into_cache_file(path, h100, {entry(GemmOp::kDense, 8)}, &notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("NVIDIA H200"), std::string::npos) << notes[0];
  const LoadResult r = read_cache_file(path, h100);
  ASSERT_EQ(r.status, LoadStatus::kOk);
  EXPECT_EQ(r.file.entries.size(), 1u);
}

TEST(TuningCache, MissingFileIsNotAnError) {
  TempDir dir;
  EXPECT_EQ(read_cache_file(dir.file("none.json"), kHeader).status, LoadStatus::kMissing);
}

// A FIFO at the cache path blocked the first GEMM call forever (open waited
// for a writer); it and a directory are reported unreadable at once.
TEST(TuningCache, WhatIsNotARegularFileIsUnreadable) {
  TempDir dir;
  const std::string fifo = dir.file("fifo.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, dir.file("")}) {
    const LoadResult r = read_cache_file(path, kHeader);
    EXPECT_EQ(r.status, LoadStatus::kUnreadable) << path;
    EXPECT_NE(r.message.find("not a regular file"), std::string::npos) << r.message;
  }
}

TEST(TuningCache, EveryTruncationIsReportedCorrupt) {
  TempDir dir;
  const std::string path = dir.file("tuning.json");
  CacheFile f;
  f.header = kHeader;
  f.entries = {entry(GemmOp::kMasked, 8), entry(GemmOp::kMoeFc2, 256)};
  const std::string text = serialize_cache(f);
  // Every proper prefix (the trailing newline aside) must be refused, never used.
  std::size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' ')) --end;
  for (std::size_t n = 0; n < end; ++n) {
    spit(path, text.substr(0, n));
    const LoadResult r = read_cache_file(path, kHeader);
    ASSERT_EQ(r.status, LoadStatus::kCorrupt) << "prefix of " << n << " bytes: " << r.message;
    EXPECT_TRUE(r.file.entries.empty());
  }
}

TEST(TuningCache, CorruptFilesAreReported) {
  TempDir dir;
  const std::string path = dir.file("tuning.json");
  const std::string good = serialize_cache(sample());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  const std::string bad[] = {
      "",
      "\x89PNG garbage \x01\x02",
      "[]",
      "null",
      good + "{}",                                                         // trailing bytes
      replace("\"fp4moe_tuning_cache\": 1", "\"fp4moe_tuning_cache\": 2"),  // another file format
      replace("\"fp4moe_tuning_cache\": 1", "\"fp4moe_tuning_cache\": \"1\""),
      replace("\"device\"", "\"devise\""),                      // unknown member, missing member
      replace("\"op\": \"dense\"", "\"op\": \"sparse\""),        // unknown op
      replace("\"format\": \"nvfp4\"", "\"format\": \"fp8\""),   // unknown format
      replace("\"split_k\": 1", "\"split_k\": 1.5"),             // not an integer
      replace("\"swap_ab\": true", "\"swap_ab\": 1"),            // not a bool
      replace("\"n\": 4096", "\"n\": -4096"),                    // out of range
      replace("\"median_us\": 20.25", "\"median_us\": \"fast\""),
      replace("\"unusable\": []", "\"unusable\": [1]"),
      replace("\"unusable\": []", "\"unusable\": [], \"extra\": 0"),
      replace("\"bucket\": 16", "\"bucket\": 8"),  // two entries with one key
  };
  for (const std::string& text : bad) {
    spit(path, text);
    const LoadResult r = read_cache_file(path, kHeader);
    EXPECT_EQ(r.status, LoadStatus::kCorrupt) << text.substr(0, 200);
    EXPECT_FALSE(r.message.empty());
  }
  // A corrupt file is replaced by the next writer, with a note.
  spit(path, "{ truncated");
  std::vector<std::string> notes;
  merge_into_cache_file(path, kHeader, {entry(GemmOp::kDense, 8)}, &notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("corrupt"), std::string::npos) << notes[0];
  EXPECT_EQ(read_cache_file(path, kHeader).status, LoadStatus::kOk);
}

/// A writer that died between its temporary file and the rename left the
/// temporary behind: the next writer (holding the lock, so no live writer
/// has one) removes it, with a note, and leaves other files alone.
TEST(TuningCache, AWritersLeftoverTemporaryIsRemovedByTheNext) {
  TempDir dir;
  const std::string path = dir.file("tuning.json");
  spit(path + ".tmp.a1B2c3", "{ half a file");
  spit(path + ".tmp.keep", "not a writer's: wrong length");
  spit(dir.file("other.json.tmp.a1B2c3"), "another cache's");
  std::vector<std::string> notes;
  merge_into_cache_file(path, kHeader, {entry(GemmOp::kDense, 8)}, &notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("tuning.json.tmp.a1B2c3"), std::string::npos) << notes[0];
  EXPECT_FALSE(fs::exists(path + ".tmp.a1B2c3"));
  EXPECT_TRUE(fs::exists(path + ".tmp.keep"));
  EXPECT_TRUE(fs::exists(dir.file("other.json.tmp.a1B2c3")));
  EXPECT_EQ(read_cache_file(path, kHeader).status, LoadStatus::kOk);
}

/// The cache file gets the mode a new file would (0666 less the umask), not
/// mkstemp's 0600 nor a fixed 0644.
TEST(TuningCache, TheFileModeFollowsTheUmask) {
  TempDir dir;
  for (const mode_t mask : {mode_t(077), mode_t(022), mode_t(002)}) {
    const std::string path = dir.file("tuning" + std::to_string(mask) + ".json");
    const mode_t before = ::umask(mask);
    merge_into_cache_file(path, kHeader, {entry(GemmOp::kDense, 8)});
    ::umask(before);
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask) << std::oct << "umask " << mask;
  }
}

TEST(TuningCache, UnwritableLocationThrows) {
  EXPECT_THROW(merge_into_cache_file("/proc/fp4moe-no/tuning.json", kHeader, {entry(GemmOp::kDense, 8)}), Error);
  EXPECT_THROW(merge_into_cache_file("", kHeader, {entry(GemmOp::kDense, 8)}), Error);
}

/// Two (and more) processes writing at once: every entry of every writer
/// survives, and a reader never sees a partial file.
TEST(TuningCache, ConcurrentWritersLoseNothing) {
  TempDir dir;
  const std::string path = dir.file("tuning.json");
  constexpr int kWriters = 3, kPerWriter = 40;
  // The writers wait on a pipe until all of them exist, so they really write
  // at once (a fork can take longer than a writer's whole run).
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  std::vector<pid_t> kids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(start[1]);
      char go = 0;
      int rc = ::read(start[0], &go, 1) == 1 ? 0 : 2;
      try {
        for (int i = 0; i < kPerWriter; ++i)  // one merge per entry: many lock round trips
          merge_into_cache_file(path, kHeader, {entry(GemmOp::kDense, 8, 1000 * (w + 1) + i)});
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  ::close(start[0]);
  const char go[kWriters] = {};
  ASSERT_EQ(::write(start[1], go, kWriters), kWriters);
  ::close(start[1]);
  // A reader in this process, while they write: never a corrupt file.
  int corrupt_reads = 0, reads = 0;
  std::vector<int> status(kids.size(), -1);
  for (std::size_t left = kids.size(); left > 0;) {
    const LoadResult r = read_cache_file(path, kHeader);
    ++reads;
    corrupt_reads += r.status == LoadStatus::kCorrupt || r.status == LoadStatus::kUnreadable;
    for (std::size_t i = 0; i < kids.size(); ++i) {
      int st = 0;
      if (status[i] == -1 && ::waitpid(kids[i], &st, WNOHANG) == kids[i]) {
        status[i] = st;
        --left;
      }
    }
  }
  for (int st : status) EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "a writer failed";
  EXPECT_EQ(corrupt_reads, 0) << "of " << reads << " reads";
  const LoadResult r = read_cache_file(path, kHeader);
  ASSERT_EQ(r.status, LoadStatus::kOk) << r.message;
  std::set<std::int64_t> ns;
  for (const CacheEntry& e : r.file.entries) ns.insert(e.key.n);
  EXPECT_EQ(ns.size(), std::size_t(kWriters * kPerWriter));
  for (int w = 0; w < kWriters; ++w)
    for (int i = 0; i < kPerWriter; ++i) EXPECT_TRUE(ns.count(1000 * (w + 1) + i)) << "lost writer " << w << " entry " << i;
}

TEST(TuningCache, DefaultLocation) {
  EXPECT_EQ(resolve_cache_path("/x/api.json", "/x/env.json", "/xdg", "/home/u"), "/x/api.json");
  EXPECT_EQ(resolve_cache_path("", "/x/env.json", "/xdg", "/home/u"), "/x/env.json");
  EXPECT_EQ(resolve_cache_path("", "off", "/xdg", "/home/u"), "");
  EXPECT_EQ(resolve_cache_path("", "OFF", "/xdg", "/home/u"), "");
  EXPECT_EQ(resolve_cache_path("", "Off", "/xdg", "/home/u"), "");
  EXPECT_EQ(resolve_cache_path("", "offline.json", "/xdg", "/home/u"), "offline.json");
  EXPECT_EQ(resolve_cache_path("", "", "/xdg", "/home/u"), "/xdg/fp4moe/tuning.json");
  EXPECT_EQ(resolve_cache_path("", nullptr, "relative", "/home/u"), "/home/u/.cache/fp4moe/tuning.json");
  EXPECT_EQ(resolve_cache_path("", nullptr, nullptr, "/home/u"), "/home/u/.cache/fp4moe/tuning.json");
  EXPECT_EQ(resolve_cache_path("", nullptr, nullptr, nullptr), "");
}

}  // namespace
}  // namespace fp4moe::tuning
