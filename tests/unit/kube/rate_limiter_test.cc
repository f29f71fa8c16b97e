#include "kube/rate_limiter.h"

#include <gtest/gtest.h>

namespace eoc::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(TokenBucket, BurstThenSpacedAtQps) {
  ManualClock clock;
  TokenBucket bucket(10, 3, clock);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(), nanoseconds::zero()) << i;
  // Out of tokens: each further caller waits its own turn, 100 ms apart at 10 QPS.
  EXPECT_EQ(bucket.Reserve(), milliseconds(100));
  EXPECT_EQ(bucket.Reserve(), milliseconds(200));
  clock.Advance(milliseconds(200));
  EXPECT_EQ(bucket.Reserve(), milliseconds(100));
}

TEST(TokenBucket, RefillsUpToBurstOnly) {
  ManualClock clock;
  TokenBucket bucket(20, 30, clock);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(bucket.Reserve(), nanoseconds::zero());
  EXPECT_GT(bucket.Reserve(), nanoseconds::zero());
  clock.Advance(std::chrono::hours(1));
  for (int i = 0; i < 30; ++i) EXPECT_EQ(bucket.Reserve(), nanoseconds::zero()) << i;
  EXPECT_EQ(bucket.Reserve(), milliseconds(50));
}

TEST(TokenBucket, NonPositiveQpsDisables) {
  ManualClock clock;
  TokenBucket bucket(0, 1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(bucket.Reserve(), nanoseconds::zero());
}

}  // namespace
}  // namespace eoc::kube
