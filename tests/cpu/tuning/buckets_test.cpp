// Tuning buckets: 1, 2, 4, then every 8 tokens up to 128, every 128 above,
// rounding up; past the maximum no bucket.
#include <gtest/gtest.h>

#include "fp4moe/error.hpp"
#include "fp4moe/tuning.hpp"
#include "tuning/buckets.hpp"

namespace fp4moe::tuning {
namespace {

TEST(Buckets, HandPickedValues) {
  const std::int64_t cases[][2] = {{-5, 1},    {0, 1},     {1, 1},     {2, 2},     {3, 4},     {4, 4},    {5, 8},
                                   {7, 8},     {8, 8},     {9, 16},    {64, 64},
                                   {65, 72},   {120, 120}, {121, 128}, {128, 128}, {129, 256}, {255, 256}, {256, 256},
                                   {257, 384}, {4000, 4096}, {8191, 8192}, {8192, 8192}, {8193, 8320}};
  for (const auto& c : cases) EXPECT_EQ(bucket_of(c[0]), c[1]) << "m=" << c[0];
}

TEST(Buckets, EveryMUpTo20000) {
  std::int64_t prev = 0;
  for (std::int64_t m = 1; m <= 20000; ++m) {
    const std::int64_t b = bucket_of(m);
    EXPECT_GE(b, m);
    if (m <= 4) {  // the powers of two 1, 2, 4
      EXPECT_LT(b, 2 * m) << m;
      EXPECT_EQ(b & (b - 1), 0) << m;
    } else {
      const std::int64_t step = m <= 128 ? 8 : 128;
      EXPECT_LT(b - m, step) << m;
      EXPECT_EQ(b % step, 0) << m;
    }
    EXPECT_GE(b, prev) << m;
    EXPECT_EQ(bucket_of(b), b) << "a bucket maps to itself: " << b;
    prev = b;
  }
}

TEST(Buckets, PastTheMaximumTheHeuristicDecides) {
  EXPECT_EQ(bucket_of(8192, 8192), 8192);
  EXPECT_EQ(bucket_of(8193, 8192), 0);
  EXPECT_EQ(bucket_of(1000, 1024), 1024);
  EXPECT_EQ(bucket_of(1025, 1024), 0);
  EXPECT_EQ(bucket_of(std::int64_t(1) << 62, 8192), 0);  // no overflow
  EXPECT_EQ(tuning_bucket(300), 384);
  EXPECT_EQ(tuning_bucket(9000), 0);
  EXPECT_EQ(tuning_bucket(9000, 16384), 9088);
}

TEST(Buckets, Ranges) {
  const std::vector<std::int64_t> r = buckets_between(1, 300, 8192);
  ASSERT_EQ(r.size(), 3u + 16u + 2u);  // 1, 2, 4, 8..128 step 8, 256, 384
  EXPECT_EQ(r.front(), 1);
  EXPECT_EQ(r[1], 2);
  EXPECT_EQ(r[2], 4);
  EXPECT_EQ(r[3], 8);
  EXPECT_EQ(r[18], 128);
  EXPECT_EQ(r[19], 256);
  EXPECT_EQ(r.back(), 384);
  EXPECT_EQ(buckets_between(3, 9, 8192), (std::vector<std::int64_t>{4, 8, 16}));
  const std::vector<std::int64_t> capped = buckets_between(100, 100000, 1024);
  EXPECT_EQ(capped.front(), 104);
  EXPECT_EQ(capped.back(), 1024);
  EXPECT_EQ(buckets_between(1, 8192, 8192).size(), 3u + 16u + 63u);
  EXPECT_EQ(tuning_buckets(9, 16), (std::vector<std::int64_t>{16}));
}

TEST(Buckets, PointsTimedPerBucket) {
  EXPECT_EQ(bucket_points(1), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(bucket_points(8), (std::vector<std::int64_t>{8}));
  EXPECT_EQ(bucket_points(128), (std::vector<std::int64_t>{128}));
  EXPECT_EQ(bucket_points(256), (std::vector<std::int64_t>{160, 224, 256}));
  EXPECT_EQ(bucket_points(8192), (std::vector<std::int64_t>{8096, 8160, 8192}));
  for (std::int64_t b : buckets_between(1, 8192, 8192))
    for (std::int64_t m : bucket_points(b)) EXPECT_EQ(bucket_of(m), b) << m;  // every point lies in its bucket
}

TEST(Buckets, MaximumMustBeAMultipleOf128) {
  EXPECT_TRUE(valid_max_bucket(128));
  EXPECT_TRUE(valid_max_bucket(8192));
  EXPECT_FALSE(valid_max_bucket(0));
  EXPECT_FALSE(valid_max_bucket(64));
  EXPECT_FALSE(valid_max_bucket(1000));
  try {
    tuning_bucket(5, 1000);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "max_m");
  }
  for (std::int64_t max_m : {std::int64_t(1000), std::int64_t(0)}) {  // not a multiple of 128; below 128
    try {
      tuning_buckets(1, 8, max_m);
      ADD_FAILURE() << "accepted max_m " << max_m;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "max_m") << e.what();
    }
  }
  try {
    tuning_buckets(10, 5);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "lo");
  }
}

}  // namespace
}  // namespace fp4moe::tuning
