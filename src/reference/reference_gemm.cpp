#include "reference/reference_gemm.hpp"

#include <algorithm>
#include <cmath>

#include "common/parallel_for.hpp"
#include "format/block_rules.hpp"

namespace fp4moe::reference {
namespace {

constexpr std::int64_t kTile = 32;     // output tile edge
constexpr std::int64_t kChunk = 1024;  // K elements decoded at a time

/// Decodes element range [k0, k1) of one row into `out` (doubles, exact).
void decode_row(const Fp4Tensor& t, std::int64_t group, std::int64_t row, std::int64_t k0,
                std::int64_t k1, double* out) {
  const bool nvfp4 = t.format == Fp4Format::kNVFP4;
  const int bs = block_size(t.format);
  const auto* data = static_cast<const std::uint8_t*>(t.data) + (group * t.rows + row) * (t.cols / 2);
  const auto* scales = static_cast<const std::uint8_t*>(t.scales) + group * t.scale_bytes_per_group();
  double sf = 0;
  for (std::int64_t k = k0; k < k1; ++k) {
    if (k == k0 || k % bs == 0)
      sf = detail::decode_block_scale(nvfp4, scales[scale_offset(t.scale_layout, row, k / bs, t.scale_cols())]);
    const unsigned code = (data[k / 2] >> ((k & 1) * 4)) & 0xfu;
    out[k - k0] = static_cast<double>(decode_e2m1(code)) * sf;
  }
}

/// acc[i][j] += Σ_{k∈[k0,k1)} A(group_a, rows_a[i], k) · B(group_b, rows_b[j], k)
/// for the given row lists (at most kTile each); acc is row-major [na, nb].
void accumulate_tile(const Fp4Tensor& a, std::int64_t group_a, const std::int64_t* rows_a, std::int64_t na,
                     const Fp4Tensor& b, std::int64_t group_b, const std::int64_t* rows_b, std::int64_t nb,
                     std::int64_t k0, std::int64_t k1, double* acc) {
  std::vector<double> da(static_cast<std::size_t>(kTile * kChunk)), db(static_cast<std::size_t>(kTile * kChunk));
  for (std::int64_t c0 = k0; c0 < k1; c0 += kChunk) {
    const std::int64_t c1 = std::min(k1, c0 + kChunk), len = c1 - c0;
    for (std::int64_t i = 0; i < na; ++i) decode_row(a, group_a, rows_a[i], c0, c1, &da[i * len]);
    for (std::int64_t j = 0; j < nb; ++j) decode_row(b, group_b, rows_b[j], c0, c1, &db[j * len]);
    for (std::int64_t i = 0; i < na; ++i) {
      const double* x = &da[i * len];
      for (std::int64_t j = 0; j < nb; ++j) {
        const double* y = &db[j * len];
        double s = 0;
        for (std::int64_t k = 0; k < len; ++k) s += x[k] * y[k];
        acc[i * nb + j] += s;
      }
    }
  }
}

std::vector<std::int64_t> iota_rows(std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> r;
  for (std::int64_t i = begin; i < end; ++i) r.push_back(i);
  return r;
}

/// For every (row tile of `rows`, column tile of [0, n)), computes the tile's
/// K-range products and hands them to `sink(row_list, count, n0, count_n, acc)`.
template <class Sink>
void for_each_tile(const Fp4Tensor& a, std::int64_t group_a, const std::vector<std::int64_t>& rows,
                   const Fp4Tensor& b, std::int64_t group_b, std::int64_t n, std::int64_t k0, std::int64_t k1,
                   Sink&& sink) {
  const std::int64_t row_tiles = (static_cast<std::int64_t>(rows.size()) + kTile - 1) / kTile;
  const std::int64_t col_tiles = (n + kTile - 1) / kTile;
  detail::parallel_for(row_tiles * col_tiles, [&](std::int64_t t) {
    const std::int64_t rt = t / col_tiles, ct = t % col_tiles;
    const std::int64_t r0 = rt * kTile, nr = std::min<std::int64_t>(kTile, static_cast<std::int64_t>(rows.size()) - r0);
    const std::int64_t n0 = ct * kTile, nc = std::min(kTile, n - n0);
    const std::vector<std::int64_t> cols = iota_rows(n0, n0 + nc);
    std::vector<double> acc(static_cast<std::size_t>(nr * nc), 0.0);
    accumulate_tile(a, group_a, rows.data() + r0, nr, b, group_b, cols.data(), nc, k0, k1, acc.data());
    sink(rows.data() + r0, nr, n0, nc, acc.data());
  });
}

}  // namespace

double global_scale(const Fp4Tensor& t, std::int64_t group) {
  if (t.format != Fp4Format::kNVFP4) return 1.0;
  return t.global_scale[group];
}

double decoded_element(const Fp4Tensor& t, std::int64_t group, std::int64_t row, std::int64_t k) {
  double v;
  decode_row(t, group, row, k, k + 1, &v);
  return v;
}

std::vector<double> gemm_nt(const Fp4Tensor& a, const Fp4Tensor& b) {
  const std::int64_t m = a.rows, n = b.rows;
  std::vector<double> d(static_cast<std::size_t>(m * n), 0.0);
  const double scale = global_scale(a, 0) * global_scale(b, 0);
  for_each_tile(a, 0, iota_rows(0, m), b, 0, n, 0, a.cols,
                [&](const std::int64_t* rows, std::int64_t nr, std::int64_t n0, std::int64_t nc, const double* acc) {
                  for (std::int64_t i = 0; i < nr; ++i)
                    for (std::int64_t j = 0; j < nc; ++j) d[rows[i] * n + n0 + j] = scale * acc[i * nc + j];
                });
  return d;
}

std::vector<double> grouped_contiguous(const Fp4Tensor& a, const Fp4Tensor& b, const std::int32_t* m_indices) {
  const std::int64_t total = a.rows, n = b.rows;
  std::vector<double> d(static_cast<std::size_t>(total * n), 0.0);
  std::vector<std::vector<std::int64_t>> rows_of(static_cast<std::size_t>(b.groups));
  for (std::int64_t r = 0; r < total; ++r)
    if (m_indices[r] >= 0) rows_of[static_cast<std::size_t>(m_indices[r])].push_back(r);
  for (std::int64_t g = 0; g < b.groups; ++g) {
    const double scale = global_scale(a, 0) * global_scale(b, g);
    for_each_tile(a, 0, rows_of[static_cast<std::size_t>(g)], b, g, n, 0, a.cols,
                  [&](const std::int64_t* rows, std::int64_t nr, std::int64_t n0, std::int64_t nc, const double* acc) {
                    for (std::int64_t i = 0; i < nr; ++i)
                      for (std::int64_t j = 0; j < nc; ++j) d[rows[i] * n + n0 + j] = scale * acc[i * nc + j];
                  });
  }
  return d;
}

void grouped_masked(const Fp4Tensor& a, const Fp4Tensor& b, const std::int32_t* masked_m, double* d) {
  const std::int64_t max_m = a.rows, n = b.rows;
  for (std::int64_t g = 0; g < a.groups; ++g) {
    const std::int64_t valid = std::clamp<std::int64_t>(masked_m[g], 0, max_m);
    const double scale = global_scale(a, g) * global_scale(b, g);
    double* dg = d + g * max_m * n;
    for_each_tile(a, g, iota_rows(0, valid), b, g, n, 0, a.cols,
                  [&](const std::int64_t* rows, std::int64_t nr, std::int64_t n0, std::int64_t nc, const double* acc) {
                    for (std::int64_t i = 0; i < nr; ++i)
                      for (std::int64_t j = 0; j < nc; ++j) dg[rows[i] * n + n0 + j] = scale * acc[i * nc + j];
                  });
  }
}

std::vector<double> moe_dense_fc2(const Fp4Tensor& a, const Fp4Tensor& b, std::int64_t experts,
                                  const MatrixView& alpha) {
  const std::int64_t m = a.rows, n = b.rows, w = a.cols / experts;
  std::vector<double> d(static_cast<std::size_t>(m * n), 0.0);
  const double scale = global_scale(a, 0) * global_scale(b, 0);
  const auto* al = static_cast<const float*>(alpha.data);
  const std::int64_t rs = alpha.ld(), cs = alpha.col_stride;
  for (std::int64_t e = 0; e < experts; ++e) {
    // Parallel inside each expert: tiles write disjoint parts of d.
    for_each_tile(a, 0, iota_rows(0, m), b, 0, n, e * w, (e + 1) * w,
                  [&](const std::int64_t* rows, std::int64_t nr, std::int64_t n0, std::int64_t nc, const double* acc) {
                    for (std::int64_t i = 0; i < nr; ++i) {
                      const double alpha_me = al[rows[i] * rs + e * cs];
                      for (std::int64_t j = 0; j < nc; ++j) d[rows[i] * n + n0 + j] += alpha_me * acc[i * nc + j];
                    }
                  });
  }
  for (double& v : d) v *= scale;
  return d;
}

std::vector<double> moe_dense_fc1_swiglu(const Fp4Tensor& a, const Fp4Tensor& b, const float* out_scale) {
  const std::int64_t m = a.rows, experts = b.groups, inter = b.rows / 2;
  std::vector<double> out(static_cast<std::size_t>(m * experts * inter), 0.0);
  for (std::int64_t e = 0; e < experts; ++e) {
    const double scale = global_scale(a, 0) * global_scale(b, e);
    const double post = out_scale ? out_scale[e] : 1.0;
    std::vector<double> gate_up(static_cast<std::size_t>(m * 2 * inter));
    for_each_tile(a, 0, iota_rows(0, m), b, e, 2 * inter, 0, a.cols,
                  [&](const std::int64_t* rows, std::int64_t nr, std::int64_t n0, std::int64_t nc, const double* acc) {
                    for (std::int64_t i = 0; i < nr; ++i)
                      for (std::int64_t j = 0; j < nc; ++j) gate_up[rows[i] * 2 * inter + n0 + j] = scale * acc[i * nc + j];
                  });
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t i = 0; i < inter; ++i) {
        const double g = gate_up[r * 2 * inter + i], u = gate_up[r * 2 * inter + inter + i];
        out[r * experts * inter + e * inter + i] = g / (1.0 + std::exp(-g)) * u * post;
      }
  }
  return out;
}

}  // namespace fp4moe::reference
