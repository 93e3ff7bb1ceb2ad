// The public tuning API (include/fp4moe/tuning.hpp) where it needs no GPU:
// where the cache lives (API over environment over defaults), the listing of
// good, refused, corrupt and truncated files, and argument refusal.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <cuda_runtime.h>

#include "common/device_identity.hpp"
#include "common/device_info.hpp"
#include "fp4moe/error.hpp"
#include "fp4moe/tuning.hpp"
#include "tuning/tactic_space.hpp"
#include "tuning/tuning_cache.hpp"

namespace fp4moe {
namespace {

namespace fs = std::filesystem;

/// Sets (or unsets) an environment variable for the scope, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// The device a listing compares a cache with: the current one where a GPU
/// is present (a cache for another device is refused there), otherwise any
/// name (without a device, a listing shows the file's own).
detail::DeviceIdentity device_here() {
  int count = 0;
  const bool have = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return have ? detail::device_identity(detail::current_device()) : detail::DeviceIdentity{"NVIDIA H200", 132};
}

/// A fresh directory and a clean path setting; both undone at the end.
class TuningApi : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fp4moe-api-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    set_tuning_cache_path("");
  }
  void TearDown() override {
    set_tuning_cache_path("");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  /// A cache for this build, written for `device`.
  std::string write_cache(const std::string& name, const std::string& device, const std::string& version = library_version(),
                          int sm_count = 132) {
    const std::string path = file(name);
    TuneShape s{GemmOp::kMasked, Fp4Format::kNVFP4, GemmOutput::kBF16, 64, 4096, 7168, 8};
    tuning::CacheEntry e;
    e.key = tuning::key_of(s);
    e.tactic = tuning::candidate_tactics(tuning::problem_shape(s)).front();
    e.median_us = 41.5;
    e.heuristic_us = 44;
    e.unusable = {"direct bn256 bk128 st4 sk2: refused for the test"};
    tuning::merge_into_cache_file(path, tuning::CacheHeader{version, tactic_space_version(), device, sm_count}, {e});
    return path;
  }
  std::string dir_;
};

TEST_F(TuningApi, LocationApiOverEnvironmentOverDefaults) {
  const ScopedEnv no_env("FP4MOE_TUNING_CACHE", nullptr);
  const ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  const ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(tuning_cache_path(), "/home/someone/.cache/fp4moe/tuning.json");
  {
    const ScopedEnv xdg_set("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(tuning_cache_path(), "/xdg/fp4moe/tuning.json");
  }
  {
    const ScopedEnv env("FP4MOE_TUNING_CACHE", "/env/cache.json");
    EXPECT_EQ(tuning_cache_path(), "/env/cache.json");
    set_tuning_cache_path("/api/cache.json");
    EXPECT_EQ(tuning_cache_path(), "/api/cache.json");
    set_tuning_cache_path("");
    EXPECT_EQ(tuning_cache_path(), "/env/cache.json");
  }
  {
    const ScopedEnv off("FP4MOE_TUNING_CACHE", "off");
    EXPECT_EQ(tuning_cache_path(), "");
    EXPECT_NE(describe_tuning_cache().find("disabled"), std::string::npos);
  }
}

// gemm_tactics lists, for each operation and format, the compiled tiles
// (split_k 1, no repeats), each one a forcible tactic of its operation; the
// FP8 route only for MXFP4; bad enums refused.
TEST_F(TuningApi, GemmTacticsListsEachOperationsCompiledTiles) {
  for (Fp4Format f : {Fp4Format::kNVFP4, Fp4Format::kMXFP4})
    for (GemmOp op : {GemmOp::kDense, GemmOp::kContiguous, GemmOp::kMasked, GemmOp::kMoeFc2, GemmOp::kMoeFc1}) {
      const std::vector<GemmTactic> tiles = gemm_tactics(f, op);
      EXPECT_FALSE(tiles.empty()) << format_name(f) << " " << gemm_op_name(op);
      for (std::size_t i = 0; i < tiles.size(); ++i) {
        EXPECT_EQ(tiles[i].split_k, 1) << tiles[i].name();
        EXPECT_TRUE(!tiles[i].fp8 || f == Fp4Format::kMXFP4) << tiles[i].name();
        EXPECT_TRUE(!tiles[i].moe_gather || op == GemmOp::kMoeFc2) << tiles[i].name();
        for (std::size_t j = 0; j < i; ++j) EXPECT_FALSE(tiles[i] == tiles[j]) << tiles[i].name() << " listed twice";
      }
    }
  EXPECT_THROW(gemm_tactics(static_cast<Fp4Format>(7), GemmOp::kDense), InvalidArgument);
  EXPECT_THROW(gemm_tactics(Fp4Format::kNVFP4, static_cast<GemmOp>(9)), InvalidArgument);
}

TEST_F(TuningApi, TestsNeverReadTheUsersCache) {
  // support/hermetic_tuning_cache.cpp, before main.
  ASSERT_NE(std::getenv("FP4MOE_TUNING_CACHE"), nullptr);
  EXPECT_STREQ(std::getenv("FP4MOE_TUNING_CACHE"), "off");
  EXPECT_EQ(tuning_cache_path(), "");
}

TEST_F(TuningApi, ListingOfAUsableCache) {
  const detail::DeviceIdentity here = device_here();
  const std::string path = write_cache("tuning.json", here.name, library_version(), here.sm_count);
  const std::string text = describe_tuning_cache(path);
  EXPECT_NE(text.find("written for fp4moe " + std::string(library_version())), std::string::npos) << text;
  EXPECT_NE(text.find(here.name + " (" + std::to_string(here.sm_count) + " SMs)"), std::string::npos) << text;
  EXPECT_NE(text.find("1 entries"), std::string::npos) << text;
  EXPECT_NE(text.find("masked"), std::string::npos) << text;
  EXPECT_NE(text.find("41.50"), std::string::npos) << text;
  EXPECT_NE(text.find("unusable: direct bn256 bk128 st4 sk2: refused for the test"), std::string::npos) << text;
  set_tuning_cache_path(path);  // the default listing is the current file's
  EXPECT_EQ(describe_tuning_cache(), text);
}

TEST_F(TuningApi, ListingRefusesAnotherVersionAndReportsCorruptFiles) {
  const std::string old = write_cache("old.json", "NVIDIA H200", "0.0.1");
  std::string text = describe_tuning_cache(old);
  EXPECT_NE(text.find("refused here"), std::string::npos) << text;
  EXPECT_NE(text.find("fp4moe 0.0.1"), std::string::npos) << text;
  EXPECT_EQ(text.find("entries"), std::string::npos) << "a refused file's entries are not listed: " << text;

  std::string good;
  {
    std::ifstream in(write_cache("good.json", "NVIDIA H200"));
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (const std::string& bad : {good.substr(0, good.size() / 2), std::string("not json"), std::string()}) {
    const std::string path = file("bad.json");
    std::ofstream(path, std::ios::trunc) << bad;
    text = describe_tuning_cache(path);
    EXPECT_NE(text.find("unusable: corrupt"), std::string::npos) << text;
  }
  EXPECT_NE(describe_tuning_cache(file("none.json")).find("no such file"), std::string::npos);
}

TEST_F(TuningApi, CachedTacticRefusesBadEnumsBeforeAnyCudaCall) {
  GemmTactic t;
  TuneShape s{GemmOp::kDense, Fp4Format::kNVFP4, GemmOutput::kBF16, 64, 256, 256, 1};
  auto argument_of = [&](const TuneShape& shape, GemmTactic* out) -> std::string {
    try {
      cached_tactic(shape, out);
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.function(), "cached_tactic");
      return e.argument();
    } catch (const std::exception&) {
      return "(not an argument error)";
    }
    return "(accepted)";
  };
  TuneShape bad = s;
  bad.op = static_cast<GemmOp>(7);
  EXPECT_EQ(argument_of(bad, &t), "shape.op");
  bad = s;
  bad.format = static_cast<Fp4Format>(7);
  EXPECT_EQ(argument_of(bad, &t), "shape.format");
  bad = s;
  bad.out = static_cast<GemmOutput>(7);
  EXPECT_EQ(argument_of(bad, &t), "shape.out");
  EXPECT_EQ(argument_of(s, nullptr), "tactic");
}

}  // namespace
}  // namespace fp4moe
