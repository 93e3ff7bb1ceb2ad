#include "tuning/tuning_cache.hpp"

#include <fcntl.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "common/json.hpp"
#include "fp4moe/error.hpp"

namespace fp4moe::tuning {

std::string CacheHeader::describe() const {
  return "fp4moe " + library_version + ", tactic space " + tactic_space + ", " + device + " (" + std::to_string(sm_count) +
         " SMs)";
}

namespace {

constexpr std::int64_t kMaxDim = std::numeric_limits<std::int32_t>::max();
constexpr std::size_t kMaxFileBytes = std::size_t(64) << 20;  // far past any real cache

bool has_groups(GemmOp op) { return op != GemmOp::kDense; }

auto sort_key(const ProblemKey& k) { return std::tuple(k.op, k.format, k.out, k.groups, k.width, k.n, k.k, k.bucket); }

// ------------------------------------------------------------ writing ----

json::Value tactic_json(const GemmTactic& t) {
  json::Object o;
  o["swap_ab"] = t.swap_ab;
  o["block_n"] = t.block_n;
  o["block_k"] = t.block_k;
  o["stages"] = t.stages;
  o["split_k"] = t.split_k;
  o["moe_gather"] = t.moe_gather;
  o["fp8"] = t.fp8;
  o["cluster"] = t.cluster;
  return o;
}

json::Value entry_json(const CacheEntry& e) {
  json::Object o;
  o["op"] = gemm_op_name(e.key.op);
  o["format"] = format_key_name(e.key.format);
  o["out"] = gemm_output_name(e.key.out);
  o["n"] = e.key.n;
  o["k"] = e.key.k;
  if (has_groups(e.key.op)) o["groups"] = e.key.groups;
  if (e.key.op == GemmOp::kMoeFc2) o["width"] = e.key.width;
  o["bucket"] = e.key.bucket;
  o["tactic"] = tactic_json(e.tactic);
  o["median_us"] = e.median_us;
  o["heuristic_us"] = e.heuristic_us;
  o["candidates"] = e.candidates;
  json::Array un;
  for (const std::string& s : e.unusable) un.emplace_back(s);
  o["unusable"] = std::move(un);
  return o;
}

// ------------------------------------------------------------ reading ----

/// Walks a parsed document; the first rule broken becomes the error.
class Reader {
 public:
  struct Bad {
    std::string why;
  };

  static const json::Value& member(const json::Value& obj, const std::string& key, const std::string& where) {
    const json::Value* v = obj.find(key);
    if (!v) throw Bad{where + ": missing \"" + key + "\""};
    return *v;
  }
  static void only_members(const json::Value& obj, const std::set<std::string>& allowed, const std::string& where) {
    for (const auto& [k, v] : obj.as_object())
      if (!allowed.count(k)) throw Bad{where + ": unexpected member \"" + k + "\""};
  }
  static std::string string(const json::Value& obj, const std::string& key, const std::string& where) {
    const json::Value& v = member(obj, key, where);
    if (!v.is_string()) throw Bad{where + ": \"" + key + "\" must be a string"};
    return v.as_string();
  }
  static std::int64_t integer(const json::Value& obj, const std::string& key, std::int64_t lo, std::int64_t hi,
                              const std::string& where) {
    const auto i = json::as_integer(member(obj, key, where), lo, hi);
    if (!i) throw Bad{where + ": \"" + key + "\" must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"};
    return *i;
  }
  static double number(const json::Value& obj, const std::string& key, const std::string& where) {
    const json::Value& v = member(obj, key, where);
    if (!v.is_number() || v.as_number() < 0) throw Bad{where + ": \"" + key + "\" must be a non-negative number"};
    return v.as_number();
  }

  static GemmTactic tactic(const json::Value& v, const std::string& where) {
    if (!v.is_object()) throw Bad{where + ": \"tactic\" must be an object"};
    only_members(v, {"swap_ab", "block_n", "block_k", "stages", "split_k", "moe_gather", "fp8", "cluster"}, where + ".tactic");
    GemmTactic t;
    const json::Value& swap = member(v, "swap_ab", where + ".tactic");
    if (!swap.is_bool()) throw Bad{where + ".tactic: \"swap_ab\" must be true or false"};
    t.swap_ab = swap.as_bool();
    t.block_n = static_cast<int>(integer(v, "block_n", 1, 4096, where + ".tactic"));
    t.block_k = static_cast<int>(integer(v, "block_k", 1, 4096, where + ".tactic"));
    t.stages = static_cast<int>(integer(v, "stages", 1, 64, where + ".tactic"));
    t.split_k = static_cast<int>(integer(v, "split_k", 0, 64, where + ".tactic"));
    if (const json::Value* gather = v.find("moe_gather")) {  // optional: false where absent
      if (!gather->is_bool()) throw Bad{where + ".tactic: \"moe_gather\" must be true or false"};
      t.moe_gather = gather->as_bool();
    }
    if (const json::Value* fp8 = v.find("fp8")) {  // optional: false where absent
      if (!fp8->is_bool()) throw Bad{where + ".tactic: \"fp8\" must be true or false"};
      t.fp8 = fp8->as_bool();
    }
    if (v.find("cluster")) t.cluster = static_cast<int>(integer(v, "cluster", 1, 2, where + ".tactic"));  // optional: 1
    return t;
  }

  static CacheEntry entry(const json::Value& v, const std::string& where) {
    if (!v.is_object()) throw Bad{where + " must be an object"};
    CacheEntry e;
    const std::string op = string(v, "op", where);
    const auto parsed_op = parse_gemm_op(op);
    if (!parsed_op) throw Bad{where + ": unknown op \"" + op + "\""};
    e.key.op = *parsed_op;
    std::set<std::string> allowed = {"op", "format", "out", "n", "k", "bucket", "tactic", "median_us", "heuristic_us",
                                     "candidates", "unusable"};
    if (has_groups(e.key.op)) allowed.insert("groups");
    if (e.key.op == GemmOp::kMoeFc2) allowed.insert("width");
    only_members(v, allowed, where);
    const std::string fmt = string(v, "format", where);
    const auto f = parse_format(fmt);
    if (!f) throw Bad{where + ": unknown format \"" + fmt + "\""};
    e.key.format = *f;
    const std::string out = string(v, "out", where);
    const auto o = parse_output(out);
    if (!o) throw Bad{where + ": unknown out \"" + out + "\""};
    e.key.out = *o;
    e.key.n = integer(v, "n", 1, kMaxDim, where);
    e.key.k = integer(v, "k", 1, kMaxDim, where);
    if (has_groups(e.key.op)) e.key.groups = integer(v, "groups", 1, kMaxDim, where);
    if (e.key.op == GemmOp::kMoeFc2) e.key.width = integer(v, "width", 1, kMaxDim, where);
    e.key.bucket = integer(v, "bucket", 1, std::numeric_limits<std::int64_t>::max(), where);
    e.tactic = tactic(member(v, "tactic", where), where);
    e.median_us = number(v, "median_us", where);
    e.heuristic_us = number(v, "heuristic_us", where);
    e.candidates = static_cast<int>(integer(v, "candidates", 0, 1 << 20, where));
    const json::Value& un = member(v, "unusable", where);
    if (!un.is_array()) throw Bad{where + ": \"unusable\" must be an array"};
    for (const json::Value& s : un.as_array()) {
      if (!s.is_string()) throw Bad{where + ": \"unusable\" must hold strings"};
      e.unusable.push_back(s.as_string());
    }
    return e;
  }

  static CacheFile file(const json::Value& doc) {
    if (!doc.is_object()) throw Bad{"the document must be an object"};
    only_members(doc, {"fp4moe_tuning_cache", "library_version", "tactic_space", "device", "sm_count", "entries"}, "file");
    const auto fmt = json::as_integer(member(doc, "fp4moe_tuning_cache", "file"), 0, 1 << 30);
    if (!fmt) throw Bad{"file: \"fp4moe_tuning_cache\" must be an integer"};
    if (*fmt != kCacheFormat)
      throw Bad{"file format " + std::to_string(*fmt) + ", this library reads format " + std::to_string(kCacheFormat)};
    CacheFile f;
    f.header.library_version = string(doc, "library_version", "file");
    f.header.tactic_space = string(doc, "tactic_space", "file");
    f.header.device = string(doc, "device", "file");
    f.header.sm_count = static_cast<int>(integer(doc, "sm_count", 1, 1 << 20, "file"));
    const json::Value& entries = member(doc, "entries", "file");
    if (!entries.is_array()) throw Bad{"file: \"entries\" must be an array"};
    std::map<decltype(sort_key(ProblemKey{})), std::size_t> seen;
    for (std::size_t i = 0; i < entries.as_array().size(); ++i) {
      const std::string where = "entries[" + std::to_string(i) + "]";
      CacheEntry e = entry(entries.as_array()[i], where);
      const auto [it, fresh] = seen.emplace(sort_key(e.key), i);
      if (!fresh) throw Bad{where + ": same key as entries[" + std::to_string(it->second) + "] (" + e.key.describe() + ")"};
      f.entries.push_back(std::move(e));
    }
    return f;
  }
};

std::string errno_text() { return std::strerror(errno); }

/// Reads a whole regular file; false with `why` when it cannot. (Opened
/// without blocking, then checked: a FIFO or a device at the cache path
/// blocked the first GEMM call forever.)
bool read_all(const std::string& path, std::string& out, std::string& why, bool& missing) {
  missing = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    missing = errno == ENOENT;
    why = errno_text();
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "not a regular file";
    ::close(fd);
    return false;
  }
  out.clear();
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = errno_text();
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > kMaxFileBytes) {
      why = "larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB";
      ::close(fd);
      return false;
    }
  }
  ::close(fd);
  return true;
}

void write_all(int fd, const std::string& text, const std::string& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("tuning cache: cannot write " + path + ": " + errno_text());
    done += static_cast<std::size_t>(n);
  }
}

/// An exclusive flock on a sidecar file, released on destruction.
class FileLock {
 public:
  explicit FileLock(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("tuning cache: cannot open the lock file " + path + ": " + errno_text());
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const std::string why = errno_text();
      ::close(fd_);
      throw Error("tuning cache: cannot lock " + path + ": " + why);
    }
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

/// Deletes `<name>.tmp.XXXXXX` files in `dir`: every writer holds the lock
/// from creating its temporary file to renaming or deleting it, so one seen
/// under the lock is what a writer that died left behind.
void remove_leftover_temporaries(const std::filesystem::path& dir, const std::string& name,
                                 std::vector<std::string>* notes) {
  namespace fs = std::filesystem;
  const std::string prefix = name + ".tmp.";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (f.size() != prefix.size() + 6 || f.compare(0, prefix.size(), prefix) != 0) continue;
    std::error_code rm;
    if (fs::remove(it->path(), rm) && notes) notes->push_back("removed " + it->path().string() + ", a writer's leftover");
  }
}

/// The process's file-mode creation mask, read without changing it (umask()
/// would set it, racing with other threads): /proc/self/status's "Umask:"
/// line (Linux 4.7 and later), else the usual 022.
mode_t process_umask() {
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    unsigned mask = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f)) found = std::sscanf(line, "Umask: %o", &mask) == 1;
    std::fclose(f);
    if (found) return static_cast<mode_t>(mask & 0777u);
  }
  return 022;
}

}  // namespace

std::string serialize_cache(const CacheFile& file) {
  std::vector<const CacheEntry*> sorted;
  for (const CacheEntry& e : file.entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const CacheEntry* a, const CacheEntry* b) { return sort_key(a->key) < sort_key(b->key); });
  json::Object doc;
  doc["fp4moe_tuning_cache"] = kCacheFormat;
  doc["library_version"] = file.header.library_version;
  doc["tactic_space"] = file.header.tactic_space;
  doc["device"] = file.header.device;
  doc["sm_count"] = file.header.sm_count;
  json::Array entries;
  for (const CacheEntry* e : sorted) entries.push_back(entry_json(*e));
  doc["entries"] = std::move(entries);
  return json::write(doc, 1) + "\n";
}

std::variant<CacheFile, std::string> parse_cache(std::string_view text) {
  auto parsed = json::parse(text);
  if (auto* err = std::get_if<json::ParseError>(&parsed)) return "not valid JSON: " + err->text();
  try {
    return Reader::file(std::get<json::Value>(parsed));
  } catch (const Reader::Bad& b) {
    return b.why;
  }
}

LoadResult read_cache_file(const std::string& path, const CacheHeader& expected) {
  LoadResult r;
  std::string text, why;
  bool missing = false;
  if (!read_all(path, text, why, missing)) {
    r.status = missing ? LoadStatus::kMissing : LoadStatus::kUnreadable;
    r.message = missing ? "no such file" : "cannot read: " + why;
    return r;
  }
  auto parsed = parse_cache(text);
  if (auto* err = std::get_if<std::string>(&parsed)) {
    r.status = LoadStatus::kCorrupt;
    r.message = "corrupt (" + *err + ")";
    return r;
  }
  r.file = std::move(std::get<CacheFile>(parsed));
  if (!(r.file.header == expected)) {
    r.status = LoadStatus::kMismatch;
    r.message = "written for " + r.file.header.describe() + ", not for this " + expected.describe();
    r.file.entries.clear();
    return r;
  }
  r.status = LoadStatus::kOk;
  return r;
}

void merge_into_cache_file(const std::string& path, const CacheHeader& header, const std::vector<CacheEntry>& entries,
                           std::vector<std::string>* notes) {
  namespace fs = std::filesystem;
  if (path.empty()) throw Error("tuning cache: no cache path (set FP4MOE_TUNING_CACHE or HOME, or pass a path)");
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("tuning cache: cannot create the directory " + dir.string() + ": " + ec.message());

  FileLock lock(path + ".lock");
  remove_leftover_temporaries(dir, target.filename().string(), notes);
  const LoadResult current = read_cache_file(path, header);
  std::map<decltype(sort_key(ProblemKey{})), CacheEntry> merged;
  if (current.status == LoadStatus::kOk) {
    for (const CacheEntry& e : current.file.entries) merged[sort_key(e.key)] = e;
  } else if (current.status != LoadStatus::kMissing && notes) {
    notes->push_back("replacing " + path + ": " + current.message);
  }
  for (const CacheEntry& e : entries) merged[sort_key(e.key)] = e;
  CacheFile out;
  out.header = header;
  for (auto& [k, e] : merged) out.entries.push_back(std::move(e));
  const std::string text = serialize_cache(out);

  std::string tmp = (dir / (target.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw Error("tuning cache: cannot create a temporary file in " + dir.string() + ": " + errno_text());
  std::string failure;
  try {
    write_all(fd, text, tmp);
  } catch (const Error& e) {
    failure = e.what();
  }
  // mkstemp made it 0600; the cache gets the mode any new file would (umask).
  if (failure.empty() && (::fchmod(fd, 0666 & ~process_umask()) != 0 || ::fsync(fd) != 0))
    failure = "tuning cache: cannot write " + tmp + ": " + errno_text();
  if (::close(fd) != 0 && failure.empty()) failure = "tuning cache: cannot write " + tmp + ": " + errno_text();
  if (!failure.empty()) {
    ::unlink(tmp.c_str());
    throw Error(failure);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error("tuning cache: cannot rename " + tmp + " to " + path + ": " + why);
  }
}

std::string resolve_cache_path(const std::string& override_path, const char* env_cache, const char* xdg_cache_home,
                               const char* home) {
  auto set = [](const char* v) { return v && *v; };
  if (!override_path.empty()) return override_path;
  // "off" in any case ("OFF" would otherwise be a file of that name in the working directory).
  if (set(env_cache)) return ::strcasecmp(env_cache, "off") == 0 ? std::string() : std::string(env_cache);
  if (set(xdg_cache_home) && xdg_cache_home[0] == '/') return std::string(xdg_cache_home) + "/fp4moe/tuning.json";
  if (set(home)) return std::string(home) + "/.cache/fp4moe/tuning.json";
  return {};
}

}  // namespace fp4moe::tuning
