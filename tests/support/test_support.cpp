#include "support/test_support.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fp4moe/codec.hpp"
#include "fp4moe/error.hpp"
#include "fp4moe/workspace.hpp"

namespace fp4moe::test {

Rng::Rng() {
  if (const char* s = std::getenv("FP4MOE_TEST_SEED")) {
    seed_ = std::strtoull(s, nullptr, 0);
  } else {
    seed_ = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  eng_.seed(seed_);
  // Printed with every failure of the test that owns this generator.
  ::testing::Test::RecordProperty("seed", std::to_string(seed_));
  std::printf("[ seed     ] FP4MOE_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed_));
}

HostFp4::HostFp4(Fp4Format f, ScaleLayout l, std::int64_t rows, std::int64_t cols, std::int64_t groups) {
  t.format = f;
  t.scale_layout = l;
  t.rows = rows;
  t.cols = cols;
  t.groups = groups;
  data.assign(static_cast<std::size_t>(t.data_bytes()), 0);
  scales.assign(static_cast<std::size_t>(t.scale_bytes_total()), 0);
  t.data = data.data();
  t.scales = scales.data();
  if (f == Fp4Format::kNVFP4) {
    global.assign(static_cast<std::size_t>(groups), 1.0f);
    t.global_scale = global.data();
  }
}

void fill_random(HostFp4& h, Rng& rng, Fp4Content content) {
  const bool nv = h.t.format == Fp4Format::kNVFP4;
  for (auto& b : h.data) {
    if (content == Fp4Content::kRandom) {
      b = static_cast<std::uint8_t>(rng.integer(0, 255));
    } else {
      // Small codes keep integer-valued sums far below 2^24.
      auto code = [&] { return static_cast<unsigned>(rng.integer(0, 5)) | (rng.integer(0, 1) ? 8u : 0u); };
      b = static_cast<std::uint8_t>(code() | (code() << 4));
    }
  }
  const std::int64_t scols = h.t.scale_cols();
  for (std::int64_t g = 0; g < h.t.groups; ++g)
    for (std::int64_t r = 0; r < h.t.rows; ++r)
      for (std::int64_t c = 0; c < scols; ++c) {
        std::uint8_t code;
        // MXFP4: rows of even 128-row bands take scales up to 2 only (code
        // 128), so as weights of a swap-AB tile their warps convert with one
        // multiply a pair (fp4_dequant.cuh, mxfp4_one_multiply_factor), and
        // the odd bands' warps, meeting larger scales, with two.
        const bool mx_small = (r / 128) % 2 == 0;
        if (content == Fp4Content::kIntegerValued) {
          // scale 2 or 4: e2m1 · scale is an integer (0.5 · 2 = 1).
          code = nv ? encode_e4m3(rng.integer(0, 1) ? 2.0f : 4.0f)
                    : static_cast<std::uint8_t>(127 + (mx_small ? 1 : rng.integer(1, 2)));
        } else if (nv) {
          code = static_cast<std::uint8_t>(rng.integer(1, 0x7e));  // every finite positive E4M3
        } else {
          code = static_cast<std::uint8_t>(127 + rng.integer(-20, mx_small ? 1 : 20));
        }
        h.scales[static_cast<std::size_t>(g * h.t.scale_bytes_per_group() +
                                          scale_offset(h.t.scale_layout, r, c, scols))] = code;
      }
  for (auto& v : h.global) v = content == Fp4Content::kIntegerValued ? 1.0f : rng.uniform(0.25f, 4.0f);
}

std::vector<float> random_matrix(Rng& rng, std::int64_t rows, std::int64_t cols, float spread_decades) {
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float mag = std::pow(10.0f, rng.uniform(-spread_decades / 2, spread_decades / 2));
    for (std::int64_t c = 0; c < cols; ++c) x[static_cast<std::size_t>(r * cols + c)] = rng.normal(mag);
  }
  return x;
}

std::vector<std::uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<std::uint16_t> b(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) b[i] = float_to_bf16_bits(x[i]);
  return b;
}

CapturedGraph::CapturedGraph(cudaStream_t stream, const std::function<void()>& record) {
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) != cudaSuccess) {
    ADD_FAILURE() << "cudaStreamBeginCapture failed";
    return;
  }
  record();
  if (cudaStreamEndCapture(stream, &graph_) != cudaSuccess || !graph_) {
    ADD_FAILURE() << "cudaStreamEndCapture failed";
    return;
  }
  if (cudaGraphInstantiate(&exec_, graph_, 0) != cudaSuccess) {
    ADD_FAILURE() << "cudaGraphInstantiate failed";
    exec_ = nullptr;
  }
}

CapturedGraph::~CapturedGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void destroy_stream(cudaStream_t stream) {
  if (!stream) return;
  try {
    release_workspace(stream);
  } catch (const Error& e) {
    ADD_FAILURE() << "release_workspace before destroying a stream: " << e.what();
  }
  cudaStreamDestroy(stream);
}

namespace {
bool env_flag(const char* name) {
  const char* s = std::getenv(name);
  return s != nullptr && *s != '\0' && std::strcmp(s, "0") != 0;
}
}  // namespace

bool gpu_required() { return env_flag("FP4MOE_TEST_REQUIRE_GPU"); }

bool under_sanitizer() { return env_flag("FP4MOE_TEST_UNDER_SANITIZER"); }

void sanitizer_progress(const std::string& what) {
  if (!under_sanitizer()) return;
  std::printf("[ sanitizer case ] %s\n", what.c_str());
  std::fflush(stdout);
}

bool gpu_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = std::string("no CUDA device (") + (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")";
    cudaGetLastError();
    return false;
  }
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  if (p.major != 9) {
    if (why) *why = "fp4moe kernels need sm_90 (found sm_" + std::to_string(p.major * 10 + p.minor) + ")";
    return false;
  }
  return true;
}

DeviceFp4::DeviceFp4(const HostFp4& like)
    : data(like.data.size()), scales(like.scales.size()), global(like.global.size()), t(like.t) {
  t.data = data.get();
  t.scales = scales.get();
  t.global_scale = like.global.empty() ? nullptr : global.get();
}

void DeviceFp4::upload(const HostFp4& h) {
  data.upload(h.data);
  scales.upload(h.scales);
  if (!h.global.empty()) global.upload(h.global);
}

void DeviceFp4::download(HostFp4& h) const {
  h.data = data.download();
  h.scales = scales.download();
  if (!h.global.empty()) h.global = global.download();
  h.t.data = h.data.data();
  h.t.scales = h.scales.data();
  if (!h.global.empty()) h.t.global_scale = h.global.data();
}

void DeviceFp4::poison() {
  data.fill_bytes(0xa5);
  scales.fill_bytes(0xa5);
  if (global.size()) global.fill_bytes(0xa5);
}

}  // namespace fp4moe::test

namespace fp4moe::test {

void set_code(HostFp4& h, std::int64_t group, std::int64_t row, std::int64_t k, unsigned code) {
  const std::int64_t e = (group * h.t.rows + row) * h.t.cols + k;
  std::uint8_t& b = h.data[static_cast<std::size_t>(e / 2)];
  b = (e & 1) ? static_cast<std::uint8_t>((b & 0x0f) | (code << 4)) : static_cast<std::uint8_t>((b & 0xf0) | code);
}

void set_row_codes(HostFp4& h, std::int64_t group, std::int64_t row, unsigned code) {
  for (std::int64_t k = 0; k < h.t.cols; ++k) set_code(h, group, row, k, code);
}

void set_scale(HostFp4& h, std::int64_t group, std::int64_t row, std::int64_t block, std::uint8_t code) {
  h.scales[static_cast<std::size_t>(group * h.t.scale_bytes_per_group() +
                                    scale_offset(h.t.scale_layout, row, block, h.t.scale_cols()))] = code;
}

void set_all_scales(HostFp4& h, std::uint8_t code) {
  for (std::int64_t g = 0; g < h.t.groups; ++g)
    for (std::int64_t r = 0; r < h.t.rows; ++r)
      for (std::int64_t c = 0; c < h.t.scale_cols(); ++c) set_scale(h, g, r, c, code);
}

}  // namespace fp4moe::test
