#include "gemm/gemm_test_util.hpp"

#include <cmath>
#include <limits>
#include <cstring>
#include <sstream>

#include "fp4moe/codec.hpp"
#include "fp4moe/quantize.hpp"
#include "fp4moe/scale_layout.hpp"
#include "reference/reference_gemm.hpp"

namespace fp4moe::test {

const char* layout_name(GemmLayout l) {
  return l == GemmLayout::kDense ? "dense" : l == GemmLayout::kContiguous ? "contiguous" : "masked";
}

std::string GemmCase::describe() const {
  std::ostringstream o;
  o << format_name(format) << " " << layout_name(layout) << " m=" << m << " n=" << n << " k=" << k << " g=" << groups
    << " out=" << dtype_name(out) << (content == Fp4Content::kIntegerValued ? " int" : "")
    << " tactic=" << (tactic ? tactic->name() : "heuristic");
  if (ld_pad) o << " ld_pad=" << ld_pad;
  if (d_offset) o << " d_offset=" << d_offset;
  if (prepack_b) o << " prepacked";
  return o.str();
}

namespace {

double read_out(const std::vector<std::uint8_t>& buf, DType t, std::int64_t i) {
  if (t == DType::kBF16) {
    std::uint16_t v;
    std::memcpy(&v, buf.data() + 2 * i, 2);
    return bf16_bits_to_float(v);
  }
  float v;
  std::memcpy(&v, buf.data() + 4 * i, 4);
  return v;
}

bool is_poison(const std::vector<std::uint8_t>& buf, DType t, std::int64_t i) {
  const std::int64_t sz = dtype_size(t);
  for (std::int64_t b = 0; b < sz; ++b)
    if (buf[static_cast<std::size_t>(i * sz + b)] != 0xff) return false;
  return true;
}

}  // namespace

GemmResult run_gemm_case(const GemmCase& c, Rng& rng) {
  // ------------------------------------------------------------ operands
  std::int64_t a_rows = c.m, a_groups = 1;
  std::vector<std::int32_t> m_indices;
  if (c.layout == GemmLayout::kContiguous) {
    for (int e = 0; e < static_cast<int>(c.expert_rows.size()); ++e) {
      const int rows = c.expert_rows[e];
      const int padded = (rows + kContiguousAlignment - 1) / kContiguousAlignment * kContiguousAlignment;
      for (int r = 0; r < padded; ++r) m_indices.push_back(r < rows ? e : -1);
    }
    a_rows = static_cast<std::int64_t>(m_indices.size());
  } else if (c.layout == GemmLayout::kMasked) {
    a_groups = c.groups;
  }
  const std::int64_t b_groups = c.layout == GemmLayout::kDense ? 1 : c.groups;
  HostFp4 a(c.format, ScaleLayout::kTiled128x4, a_rows, c.k, a_groups);
  HostFp4 b(c.format, ScaleLayout::kTiled128x4, c.n, c.k, b_groups);
  fill_random(a, rng, c.content);
  fill_random(b, rng, c.content);
  const std::uint8_t nan_code = c.format == Fp4Format::kNVFP4 ? 0x7f : 0xff;  // a NaN block scale
  if (c.layout == GemmLayout::kMasked && c.nan_past_masked_m) {
    // Every block scale of a row past its group's masked_m becomes NaN:
    // nothing of such a row may reach a written output.
    for (std::int64_t g = 0; g < a_groups; ++g)
      for (std::int64_t r = c.masked_m[static_cast<std::size_t>(g)]; r < c.m; ++r)
        for (std::int64_t sc = 0; sc < a.t.scale_cols(); ++sc)
          a.scales[static_cast<std::size_t>(g * a.t.scale_bytes_per_group() +
                                            scale_offset(a.t.scale_layout, r, sc, a.t.scale_cols()))] = nan_code;
  }

  if (c.nan_scale_padding) {
    // The 128x4 layout pads rows to 128 and columns to 4; the GEMM may load
    // that padding with the tile but no output may depend on it.
    for (HostFp4* op : {&a, &b}) {
      const std::int64_t rows = op->t.rows, cols = op->t.scale_cols();
      for (std::int64_t g = 0; g < op->t.groups; ++g)
        for (std::int64_t r = 0; r < round_up(rows, 128); ++r)
          for (std::int64_t sc = r < rows ? cols : 0; sc < round_up(cols, 4); ++sc)
            op->scales[static_cast<std::size_t>(g * op->t.scale_bytes_per_group() +
                                                scale_offset(op->t.scale_layout, r, sc, cols))] = nan_code;
    }
  }

  // ------------------------------------------------------------ reference
  const std::int64_t d_groups = a_groups, d_rows = a_rows, ld = c.n + c.ld_pad;
  std::vector<double> ref(static_cast<std::size_t>(d_groups * d_rows * c.n), std::nan(""));
  if (c.layout == GemmLayout::kDense) {
    ref = reference::gemm_nt(a.t, b.t);
  } else if (c.layout == GemmLayout::kContiguous) {
    ref = reference::grouped_contiguous(a.t, b.t, m_indices.data());
  } else {
    reference::grouped_masked(a.t, b.t, c.masked_m.data(), ref.data());
  }

  // ------------------------------------------------------------ GPU run
  DeviceFp4 da(a), db(b);
  da.upload(a);
  db.upload(b);
  if (c.prepack_b) db.t = prepack_weights(db.t, db.t.data, nullptr);
  const std::int64_t d_elems = d_groups * d_rows * ld;
  const std::size_t elem = dtype_size(c.out), lead = static_cast<std::size_t>(c.d_offset) * elem;
  DeviceBuffer<std::uint8_t> dd(static_cast<std::size_t>(d_elems) * elem + lead);
  dd.fill_bytes(0xff);
  DeviceBuffer<std::int32_t> d_idx(m_indices.size()), d_masked(c.masked_m.size());
  if (!m_indices.empty()) d_idx.upload(m_indices);
  if (!c.masked_m.empty()) d_masked.upload(std::vector<std::int32_t>(c.masked_m.begin(), c.masked_m.end()));
  MatrixView d{dd.get() + lead, c.out, d_rows, c.n, ld, 1, d_groups, 0};
  GemmOptions opt;
  opt.tactic = c.tactic;
  auto run = [&] {
    if (c.layout == GemmLayout::kDense) {
      fp4_gemm_nt(da.t, db.t, d, nullptr, opt);
    } else if (c.layout == GemmLayout::kContiguous) {
      m_grouped_fp4_gemm_nt_contiguous(da.t, db.t, d, d_idx.get(), nullptr, opt);
    } else {
      int expected = 0;
      for (int v : c.masked_m) expected = std::max(expected, v);
      m_grouped_fp4_gemm_nt_masked(da.t, db.t, d, d_masked.get(), expected, nullptr, opt);
    }
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << c.describe();
  };
  run();
  std::vector<std::uint8_t> got = dd.download();
  for (int rep = 1; rep < c.repeats; ++rep) {
    dd.fill_bytes(0xff);
    run();
    EXPECT_TRUE(dd.download() == got) << c.describe() << ": repeat " << rep << " differs from the first";
  }
  // The elements before D keep the poison.
  for (std::size_t i = 0; i < lead; ++i) EXPECT_EQ(got[i], 0xff) << c.describe() << ": byte " << i << " before D written";
  got.erase(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(lead));

  // ------------------------------------------------------------ compare
  OutputCheck check;
  check.out = c.out;
  check.content = c.content;
  check.groups = d_groups;
  check.rows = d_rows;
  check.cols = c.n;
  check.ld = ld;
  if (c.layout == GemmLayout::kMasked)
    check.written = [&](std::int64_t g, std::int64_t row) { return row < c.masked_m[static_cast<std::size_t>(g)]; };
  if (c.layout == GemmLayout::kContiguous)
    check.must_be_zero = [&](std::int64_t row) { return m_indices[static_cast<std::size_t>(row)] < 0; };
  return compare_output(ref, got, check);
}

GemmResult compare_output(const std::vector<double>& ref, const std::vector<std::uint8_t>& got, const OutputCheck& k) {
  auto written = [&](std::int64_t g, std::int64_t row) { return !k.written || k.written(g, row); };
  auto padding = [&](std::int64_t row) { return k.must_be_zero && k.must_be_zero(row); };
  // The output's 128 x 128 tiles of each group. fill_random's MXFP4 data
  // alternates scale ranges by 128-row band of A and of B, so output tiles
  // differ in size by up to ~2^19: each tile is judged by its own reference,
  // where a whole-output error or RMS would not see a wrong small tile.
  constexpr std::int64_t kTile = 128;
  const std::int64_t row_tiles = (k.rows + kTile - 1) / kTile, col_tiles = (k.cols + kTile - 1) / kTile;
  auto tile_of = [&](std::int64_t g, std::int64_t row, std::int64_t col) {
    return static_cast<std::size_t>((g * row_tiles + row / kTile) * col_tiles + col / kTile);
  };
  const std::size_t tiles = static_cast<std::size_t>(k.groups * row_tiles * col_tiles);
  std::vector<double> tile_ref2(tiles, 0.0), tile_err2(tiles, 0.0);
  std::vector<std::int64_t> tile_count(tiles, 0);
  // Each tile's reference RMS over written elements: the scale of FP32
  // accumulation error that BF16 rounding sits on top of.
  for (std::int64_t gi = 0; gi < k.groups; ++gi)
    for (std::int64_t row = 0; row < k.rows; ++row) {
      if (!written(gi, row) || padding(row)) continue;
      for (std::int64_t col = 0; col < k.cols; ++col) {
        const double v = ref[static_cast<std::size_t>((gi * k.rows + row) * k.cols + col)];
        if (!std::isfinite(v)) continue;
        tile_ref2[tile_of(gi, row, col)] += v * v;
        ++tile_count[tile_of(gi, row, col)];
      }
    }
  // Tiles of fewer than 16 elements (edges of small outputs) take the
  // whole output's RMS: a handful of random sums may all be small by
  // cancellation, so their own RMS is no measure of the accumulation error.
  constexpr std::int64_t kMinTile = 16;
  double all_ref2 = 0;
  std::int64_t all_count = 0;
  for (std::size_t t = 0; t < tiles; ++t) {
    all_ref2 += tile_ref2[t];
    all_count += tile_count[t];
  }
  const double all_rms = all_count ? std::sqrt(all_ref2 / double(all_count)) : 0.0;
  GemmResult r;
  double err2 = 0, ref2 = 0;
  for (std::int64_t gi = 0; gi < k.groups; ++gi)
    for (std::int64_t row = 0; row < k.rows; ++row)
      for (std::int64_t col = 0; col < k.ld; ++col) {
        const std::int64_t i = (gi * k.rows + row) * k.ld + col;
        if (col >= k.cols || !written(gi, row)) {
          r.bad_untouched += !is_poison(got, k.out, i);
          continue;
        }
        const double want = ref[static_cast<std::size_t>((gi * k.rows + row) * k.cols + col)];
        const double have = read_out(got, k.out, i);
        if (!std::isfinite(have)) {
          ++r.non_finite;
          continue;
        }
        if (padding(row)) {
          r.bad_padding += have != 0.0;
          continue;
        }
        const std::size_t t = tile_of(gi, row, col);
        err2 += (have - want) * (have - want);
        ref2 += want * want;
        tile_err2[t] += (have - want) * (have - want);
        if (k.content == Fp4Content::kIntegerValued && k.out == DType::kFP32) r.mismatches += have != want;
        if (k.out == DType::kBF16) {
          // BF16 rounding (half an ulp ≤ 2^-8 relative) on top of FP32
          // accumulation error (≤ 1e-5 of the tile's RMS).
          const double rms = tile_count[t] >= kMinTile ? std::sqrt(tile_ref2[t] / double(tile_count[t])) : all_rms;
          const double tol = std::ldexp(std::fabs(want), -8) + 1e-5 * rms + 1e-30;
          r.max_bf16_excess = std::max(r.max_bf16_excess, std::fabs(have - want) / tol);
        }
      }
  r.rel_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  for (std::size_t t = 0; t < tiles; ++t) {
    if (tile_count[t] < kMinTile) continue;  // (left to the whole-output error)
    const double rel = tile_ref2[t] > 0   ? std::sqrt(tile_err2[t] / tile_ref2[t])
                       : tile_err2[t] > 0 ? std::numeric_limits<double>::infinity()
                                          : 0.0;
    r.max_tile_rel_error = std::max(r.max_tile_rel_error, rel);
  }
  return r;
}

void expect_gemm_ok(const GemmCase& c, const GemmResult& r) { expect_gemm_ok_for(c.describe(), c.out, c.content, r); }

void expect_gemm_ok_for(const std::string& what, DType out, Fp4Content content, const GemmResult& r) {
  EXPECT_EQ(r.non_finite, 0) << what;
  EXPECT_EQ(r.bad_untouched, 0) << what;
  EXPECT_EQ(r.bad_padding, 0) << what;
  if (out == DType::kFP32) {
    EXPECT_LE(r.rel_error, 1e-5) << what;
    EXPECT_LE(r.max_tile_rel_error, 1e-5) << what << ": the worst 128 x 128 output tile's own error";
    if (content == Fp4Content::kIntegerValued) {
      EXPECT_EQ(r.mismatches, 0) << what;
    }
  } else {
    EXPECT_LE(r.max_bf16_excess, 1.0 + 1e-3) << what;
  }
}

}  // namespace fp4moe::test
