// TokenBucket / RateLimiter arithmetic with injected time: refill, all-or-nothing consumption,
// wait estimates, no overflow for huge buckets or long idle periods.
#include "common/base/token_bucket.h"

#include <gtest/gtest.h>

namespace carapace {
namespace {

constexpr uint64_t kSecond = 1000000000;

TEST(TokenBucketTest, StartsFullAndRefillsContinuously) {
  TokenBucket b(1000, kSecond, 0);
  EXPECT_EQ(b.available(0), 1000u);
  EXPECT_TRUE(b.consume(1000, 0));
  EXPECT_FALSE(b.consume(1, 0));
  EXPECT_EQ(b.available(kSecond / 10), 100u);
  EXPECT_EQ(b.available(kSecond / 2), 500u);
  EXPECT_EQ(b.available(5 * kSecond), 1000u);  // never above the size
}

TEST(TokenBucketTest, FractionsOfATokenAccumulate) {
  TokenBucket b(10, kSecond, 0);  // one token per 100 ms
  ASSERT_TRUE(b.consume(10, 0));
  for (uint64_t t = 30; t <= 90; t += 30)
    EXPECT_EQ(b.available(t * 1000000), 0u) << t;
  EXPECT_EQ(b.available(100 * 1000000), 1u);
  EXPECT_EQ(b.available(250 * 1000000), 2u);
  EXPECT_EQ(b.available(300 * 1000000), 3u);
}

TEST(TokenBucketTest, ConsumeIsAllOrNothing) {
  TokenBucket b(100, kSecond, 0);
  EXPECT_FALSE(b.consume(101, 0));
  EXPECT_EQ(b.available(0), 100u);
  EXPECT_TRUE(b.consume(60, 0));
  EXPECT_FALSE(b.consume(41, 0));
  EXPECT_EQ(b.available(0), 40u);
}

TEST(TokenBucketTest, WaitEstimateSuffices) {
  TokenBucket b(1000, kSecond, 0);
  ASSERT_TRUE(b.consume(1000, 0));
  const uint64_t w = b.wait_ns(250, 0);
  EXPECT_GE(w, kSecond / 4);
  EXPECT_LE(w, kSecond / 4 + 1);
  EXPECT_GE(b.available(w), 250u);
  TokenBucket empty(1000, kSecond, 0);
  ASSERT_TRUE(empty.consume(1000, 0));
  EXPECT_EQ(empty.wait_ns(5000, 0), kSecond);  // capped at the bucket size
}

TEST(TokenBucketTest, UnlimitedAndNoOverflow) {
  TokenBucket unlimited(0, kSecond, 0);
  EXPECT_TRUE(unlimited.unlimited());
  EXPECT_TRUE(unlimited.consume(UINT64_MAX, 0));
  EXPECT_EQ(unlimited.wait_ns(1, 0), 0u);
  TokenBucket huge(UINT64_MAX / 2, 1, 0);
  ASSERT_TRUE(huge.consume(UINT64_MAX / 2, 0));
  EXPECT_EQ(huge.available(UINT64_MAX), UINT64_MAX / 2);
  TokenBucket slow(UINT64_MAX, UINT64_MAX, 0);
  ASSERT_TRUE(slow.consume(UINT64_MAX, 0));
  EXPECT_EQ(slow.available(1000), 1000u);
}

TEST(RateLimiterTest, GrantsPartialBytesAndCountsOps) {
  RateLimiter r({/*bytes=*/100, /*ops=*/2, kSecond}, 0);
  EXPECT_EQ(r.grant(60, 0), 60u);
  EXPECT_EQ(r.grant(60, 0), 40u);  // only 40 bytes left: granted partially
  EXPECT_EQ(r.grant(1, 0), 0u);    // out of bytes and ops
  EXPECT_GT(r.wait_ns(1, 0), 0u);
  EXPECT_EQ(r.wait_ns(50, 0), kSecond / 2);
  EXPECT_EQ(r.wait_ns(100, 0), kSecond);  // a full bucket takes the whole period
  EXPECT_EQ(r.grant(1000, kSecond), 100u);
  EXPECT_EQ(r.grant(0, kSecond), 0u);
  RateLimiter ops_only({0, 1, kSecond}, 0);
  EXPECT_EQ(ops_only.grant(1 << 20, 0), 1u << 20);
  EXPECT_EQ(ops_only.grant(1, 0), 0u);
  EXPECT_TRUE(RateLimiter({}, 0).unlimited());
}

}  // namespace
}  // namespace carapace
