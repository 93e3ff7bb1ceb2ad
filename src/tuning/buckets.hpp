// Tuning buckets of the token dimension: 1, 2 and 4, then every 8 tokens up
// to 128, every 128 above. Host only.
#pragma once

#include <cstdint>
#include <vector>

namespace fp4moe::tuning {

/// Buckets 1, 2 and 4 (powers of two) below the first step of 8: one or two
/// tokens run the CUDA-core route (kernels/sm90/dp4a_gemv.cuh), eight a
/// wgmma tile, and one bucket for all of 1-8, tuned at 8, cached the
/// 16-token tile for one-token calls at 1.27-1.54x the route's time (H200
/// decode sweep, docs/PERF.md stop 60).
constexpr std::int64_t kSmallBucketLimit = 4;
constexpr std::int64_t kFineBucketStep = 8;      ///< then buckets 8, 16, ..., 128
constexpr std::int64_t kFineBucketLimit = 128;
constexpr std::int64_t kCoarseBucketStep = 128;  ///< then 256, 384, ...
constexpr std::int64_t kDefaultMaxBucket = 8192;

/// The bucket holding m (m rounded up to its bucket's step), with no upper
/// limit: the run-time key. m < 1 counts as 1.
std::int64_t bucket_of(std::int64_t m);

/// The same, or 0 when the bucket is past max_m.
std::int64_t bucket_of(std::int64_t m, std::int64_t max_m);

/// Whether max_m is a valid maximum: a multiple of 128, at least 128.
bool valid_max_bucket(std::int64_t max_m);

/// The token counts a bucket is timed at: the bucket itself for the fine
/// buckets; for a 128-wide bucket (b-128, b] also its quartile points b-96
/// and b-32, since a tactic's speed can change inside it (how full the last
/// token tile is, and with routed alpha how many experts a tile skips). The
/// bucket itself comes last.
std::vector<std::int64_t> bucket_points(std::int64_t bucket);

/// Every bucket from bucket_of(lo) to bucket_of(hi), both within max_m.
std::vector<std::int64_t> buckets_between(std::int64_t lo, std::int64_t hi, std::int64_t max_m);

}  // namespace fp4moe::tuning
