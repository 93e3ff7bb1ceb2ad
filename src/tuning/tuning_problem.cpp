#include "tuning/tuning_problem.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "common/cuda_check.hpp"
#include "common/device_fill.hpp"
#include "common/upload.hpp"
#include "fp4moe/moe.hpp"
#include "fp4moe/quantize.hpp"

namespace fp4moe::tuning {

DeviceBytes::DeviceBytes(std::size_t bytes) {
  if (bytes) FP4MOE_CUDA_CHECK(cudaMalloc(&p_, bytes));
}

DeviceBytes::~DeviceBytes() {
  if (p_) cudaFree(p_);
}

DeviceBytes& DeviceBytes::operator=(DeviceBytes&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_;
    o.p_ = nullptr;
  }
  return *this;
}

std::vector<std::int32_t> contiguous_indices(std::int64_t rows, std::int64_t groups) {
  std::vector<std::int32_t> idx(static_cast<std::size_t>(std::max<std::int64_t>(rows, 0)));
  const std::int64_t segments = (rows + 127) / 128;
  for (std::int64_t s = 0; s < segments; ++s) {
    const auto g = static_cast<std::int32_t>(s * groups / segments);
    for (std::int64_t r = s * 128; r < std::min(rows, (s + 1) * 128); ++r) idx[static_cast<std::size_t>(r)] = g;
  }
  return idx;
}

std::vector<float> routing_alpha(std::int64_t m, std::int64_t experts, int top_k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> w(0.05f, 1.0f);
  std::vector<float> alpha(static_cast<std::size_t>(m * experts), 0.0f);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(experts));
  for (std::int64_t t = 0; t < m; ++t) {
    float* row = alpha.data() + t * experts;
    if (top_k <= 0) {
      for (std::int64_t e = 0; e < experts; ++e) row[e] = w(rng);
      continue;
    }
    std::iota(ids.begin(), ids.end(), std::int64_t(0));
    const std::int64_t pick = std::min<std::int64_t>(top_k, experts);
    for (std::int64_t j = 0; j < pick; ++j) {  // partial Fisher-Yates: pick distinct experts
      std::uniform_int_distribution<std::int64_t> u(j, experts - 1);
      std::swap(ids[static_cast<std::size_t>(j)], ids[static_cast<std::size_t>(u(rng))]);
      row[ids[static_cast<std::size_t>(j)]] = w(rng);
    }
  }
  return alpha;
}

TuningProblem::Operand TuningProblem::make_operand(std::int64_t rows, std::int64_t cols, std::int64_t groups,
                                                   std::uint64_t seed, cudaStream_t s) {
  Operand o;
  o.t.format = shape_.format;
  o.t.scale_layout = ScaleLayout::kTiled128x4;
  o.t.rows = rows;
  o.t.cols = cols;
  o.t.groups = groups;
  o.data = DeviceBytes(static_cast<std::size_t>(o.t.data_bytes()));
  o.scales = DeviceBytes(static_cast<std::size_t>(o.t.scale_bytes_total()));
  o.t.data = o.data.get();
  o.t.scales = o.scales.get();
  if (shape_.format == Fp4Format::kNVFP4) {
    o.global = DeviceBytes(sizeof(float) * static_cast<std::size_t>(groups));
    o.t.global_scale = static_cast<float*>(o.global.get());
  }
  if (rows == 0) return o;
  // Random BF16 in [-1, 1) with a per-call seed, quantised by the library.
  const std::int64_t elems = groups * rows * cols;
  DeviceBytes src(static_cast<std::size_t>(elems) * 2);
  detail::fill_random_bf16(src.get(), elems, seed, 1.0f, s);
  const MatrixView view{src.get(), DType::kBF16, rows, cols, 0, 1, groups, 0};
  quantize(view, o.t, s);
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(s));  // src dies here
  return o;
}

namespace {

/// FC2's k may be given as 0, meaning experts * expert_width (as in the tuner's shapes).
TuneShape with_k(TuneShape s) {
  if (s.op == GemmOp::kMoeFc2 && s.k == 0) s.k = s.groups * s.expert_width;
  return s;
}

}  // namespace

TuningProblem::TuningProblem(const TuneShape& shape, std::uint64_t seed, cudaStream_t stream) : shape_(with_k(shape)) {
  const std::int64_t m = shape_.m, n = shape_.n, k = shape_.k, g = shape_.groups;
  const DType out = shape.out == GemmOutput::kFP32 ? DType::kFP32 : DType::kBF16;
  const std::int64_t out_size = dtype_size(out);
  switch (shape.op) {
    case GemmOp::kDense:
      a_ = make_operand(m, k, 1, seed + 1, stream);
      b_ = make_operand(n, k, 1, seed + 2, stream);
      d_ = DeviceBytes(static_cast<std::size_t>(m * n * out_size));
      d_view_ = MatrixView{d_.get(), out, m, n};
      break;
    case GemmOp::kContiguous: {
      const std::int64_t rows = m * g;  // rows / experts = m: the entry point's token count
      a_ = make_operand(rows, k, 1, seed + 1, stream);
      b_ = make_operand(n, k, g, seed + 2, stream);
      d_ = DeviceBytes(static_cast<std::size_t>(rows * n * out_size));
      d_view_ = MatrixView{d_.get(), out, rows, n};
      const std::vector<std::int32_t> idx = contiguous_indices(rows, g);
      aux_ = DeviceBytes(std::max<std::size_t>(4, idx.size() * 4));
      detail::upload(aux_.get(), idx.data(), idx.size() * 4, stream);
      break;
    }
    case GemmOp::kMasked: {
      a_ = make_operand(m, k, g, seed + 1, stream);
      b_ = make_operand(n, k, g, seed + 2, stream);
      d_ = DeviceBytes(static_cast<std::size_t>(g * m * n * out_size));
      d_view_ = MatrixView{d_.get(), out, m, n, 0, 1, g, 0};
      const std::vector<std::int32_t> masked(static_cast<std::size_t>(g), static_cast<std::int32_t>(m));
      aux_ = DeviceBytes(masked.size() * 4);
      detail::upload(aux_.get(), masked.data(), masked.size() * 4, stream);
      break;
    }
    case GemmOp::kMoeFc2: {
      a_ = make_operand(m, k, 1, seed + 1, stream);
      b_ = make_operand(n, k, 1, seed + 2, stream);
      d_ = DeviceBytes(static_cast<std::size_t>(m * n * out_size));
      d_view_ = MatrixView{d_.get(), out, m, n};
      const std::vector<float> alpha = routing_alpha(m, g, shape.top_k, seed + 3);
      aux_ = DeviceBytes(std::max<std::size_t>(4, alpha.size() * 4));
      detail::upload(aux_.get(), alpha.data(), alpha.size() * 4, stream);
      alpha_view_ = MatrixView{aux_.get(), DType::kFP32, m, g};
      break;
    }
    case GemmOp::kMoeFc1: {
      const std::int64_t out_cols = g * (n / 2);  // E·I
      a_ = make_operand(m, k, 1, seed + 1, stream);
      b_ = make_operand(n, k, g, seed + 2, stream);
      if (shape.out == GemmOutput::kNVFP4) {
        fp4_out_.t.format = Fp4Format::kNVFP4;
        fp4_out_.t.scale_layout = ScaleLayout::kTiled128x4;
        fp4_out_.t.rows = m;
        fp4_out_.t.cols = out_cols;
        fp4_out_.data = DeviceBytes(static_cast<std::size_t>(fp4_out_.t.data_bytes()));
        fp4_out_.scales = DeviceBytes(static_cast<std::size_t>(fp4_out_.t.scale_bytes_total()));
        fp4_out_.global = DeviceBytes(sizeof(float));
        fp4_out_.t.data = fp4_out_.data.get();
        fp4_out_.t.scales = fp4_out_.scales.get();
        fp4_out_.t.global_scale = static_cast<float*>(fp4_out_.global.get());
        const float g_encode = 1.0f;
        encode_ = DeviceBytes(sizeof(float));
        detail::upload(encode_.get(), &g_encode, sizeof g_encode, stream);
      } else {
        d_ = DeviceBytes(static_cast<std::size_t>(m * out_cols * 2));
        d_view_ = MatrixView{d_.get(), DType::kBF16, m, out_cols};
      }
      break;
    }
  }
  FP4MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

std::size_t TuningProblem::output_bytes() const {
  if (shape_.out == GemmOutput::kNVFP4) return static_cast<std::size_t>(fp4_out_.t.data_bytes());
  return static_cast<std::size_t>(d_view_.groups * d_view_.rows * d_view_.cols * dtype_size(d_view_.dtype));
}

void TuningProblem::run(const GemmOptions& options, cudaStream_t stream) const {
  switch (shape_.op) {
    case GemmOp::kDense: fp4_gemm_nt(a_.t, b_.t, d_view_, stream, options); break;
    case GemmOp::kContiguous:
      m_grouped_fp4_gemm_nt_contiguous(a_.t, b_.t, d_view_, static_cast<const std::int32_t*>(aux_.get()), stream, options);
      break;
    case GemmOp::kMasked:
      m_grouped_fp4_gemm_nt_masked(a_.t, b_.t, d_view_, static_cast<const std::int32_t*>(aux_.get()),
                                   static_cast<int>(shape_.m), stream, options);
      break;
    case GemmOp::kMoeFc2: {
      GemmOptions routed = options;  // the routing the alpha follows, as a deployment would say
      routed.moe_top_k = shape_.top_k;
      moe_dense_fc2(a_.t, b_.t, alpha_view_, static_cast<int>(shape_.expert_width), d_view_, stream, routed);
      break;
    }
    case GemmOp::kMoeFc1:
      if (shape_.out == GemmOutput::kNVFP4)
        moe_dense_fc1_swiglu(a_.t, b_.t, nullptr, fp4_out_.t, static_cast<const float*>(encode_.get()), stream, options);
      else
        moe_dense_fc1_swiglu(a_.t, b_.t, nullptr, d_view_, stream, options);
      break;
  }
}

}  // namespace fp4moe::tuning
