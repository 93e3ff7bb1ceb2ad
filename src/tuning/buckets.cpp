#include "tuning/buckets.hpp"

#include <algorithm>
#include <bit>
#include <limits>

namespace fp4moe::tuning {

namespace {
std::int64_t round_up(std::int64_t v, std::int64_t step) { return (v + step - 1) / step * step; }
}  // namespace

std::int64_t bucket_of(std::int64_t m) {
  m = std::max<std::int64_t>(m, 1);
  if (m <= kSmallBucketLimit) return static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(m)));
  if (m <= kFineBucketLimit) return round_up(m, kFineBucketStep);
  // Saturate instead of overflowing for absurd m (the key only has to miss).
  if (m > std::numeric_limits<std::int64_t>::max() - kCoarseBucketStep) return std::numeric_limits<std::int64_t>::max();
  return round_up(m, kCoarseBucketStep);
}

std::int64_t bucket_of(std::int64_t m, std::int64_t max_m) {
  const std::int64_t b = bucket_of(m);
  return b <= max_m ? b : 0;
}

bool valid_max_bucket(std::int64_t max_m) { return max_m >= kFineBucketLimit && max_m % kCoarseBucketStep == 0; }

std::vector<std::int64_t> bucket_points(std::int64_t bucket) {
  if (bucket <= kFineBucketLimit) return {bucket};
  return {bucket - 3 * kCoarseBucketStep / 4, bucket - kCoarseBucketStep / 4, bucket};
}

std::vector<std::int64_t> buckets_between(std::int64_t lo, std::int64_t hi, std::int64_t max_m) {
  std::vector<std::int64_t> out;
  const std::int64_t last = std::min(bucket_of(std::max(lo, hi)), max_m);  // a range past max_m stops there
  for (std::int64_t b = bucket_of(std::min(lo, hi)); b <= last; b = bucket_of(b + 1)) out.push_back(b);
  return out;
}

}  // namespace fp4moe::tuning
