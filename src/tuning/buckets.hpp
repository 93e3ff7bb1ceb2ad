// Tuning buckets of the token dimension: every 8 tokens up to 128, every 128
// above. Host only.
#pragma once

#include <cstdint>
#include <vector>

namespace fp4moe::tuning {

constexpr std::int64_t kFineBucketStep = 8;      ///< buckets 8, 16, ..., 128
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
