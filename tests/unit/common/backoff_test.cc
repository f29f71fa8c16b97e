#include "common/backoff.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>

namespace eoc {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(BackoffDelay, DoublesFromTheInitialWaitUpToTheCap) {
  const BackoffPolicy policy{.initial = milliseconds(5), .max = seconds(1000), .factor = 2};
  EXPECT_EQ(BackoffDelay(policy, 0), milliseconds(5));
  EXPECT_EQ(BackoffDelay(policy, 1), milliseconds(10));
  EXPECT_EQ(BackoffDelay(policy, 10), milliseconds(5120));
  // 5 ms x 2^18 = 1310.72 s: capped.
  EXPECT_EQ(BackoffDelay(policy, 17), milliseconds(655360));
  EXPECT_EQ(BackoffDelay(policy, 18), seconds(1000));
  EXPECT_EQ(BackoffDelay(policy, std::numeric_limits<int>::max()), seconds(1000));
}

TEST(BackoffDelay, DegenerateInputsGiveZeroOrTheInitialWaitNeverGarbage) {
  EXPECT_EQ(BackoffDelay({.initial = nanoseconds(0), .max = seconds(1)}, 1000), nanoseconds(0));
  EXPECT_EQ(BackoffDelay({.initial = -seconds(1), .max = seconds(1)}, 3), nanoseconds(0));
  EXPECT_EQ(BackoffDelay({.initial = seconds(1), .max = -seconds(1)}, 3), nanoseconds(0));
  EXPECT_EQ(BackoffDelay({.initial = seconds(2), .max = seconds(10), .factor = 1}, 50), seconds(2));
  // A factor below 1 counts as 1: waits never shrink.
  EXPECT_EQ(BackoffDelay({.initial = seconds(2), .max = seconds(10), .factor = 0.5}, 3),
            seconds(2));
  EXPECT_EQ(BackoffDelay({.initial = seconds(2), .max = seconds(10)}, -4), seconds(2));
}

TEST(BackoffDelay, ACapIsReturnedExactlyEvenAtTheLargestDuration) {
  // The work queue's per-key limiter with "no cap": it must saturate at the cap, not near it.
  const BackoffPolicy policy{.initial = std::chrono::hours(1), .max = nanoseconds::max()};
  EXPECT_EQ(BackoffDelay(policy, 0), std::chrono::hours(1));
  EXPECT_EQ(BackoffDelay(policy, 40), nanoseconds::max());
  EXPECT_EQ(BackoffDelay(policy, std::numeric_limits<int>::max()), nanoseconds::max());
}

TEST(Spread, TakesTheRandomFractionOfTheWait) {
  EXPECT_EQ(Spread(seconds(10), 0.0), nanoseconds(0));
  EXPECT_EQ(Spread(seconds(10), 0.25), milliseconds(2500));
  // Out-of-range randomness is clamped; a negative wait is none.
  EXPECT_EQ(Spread(seconds(10), 3.0), seconds(10));
  EXPECT_EQ(Spread(seconds(10), -1.0), nanoseconds(0));
  EXPECT_EQ(Spread(-seconds(10), 0.5), nanoseconds(0));
}

TEST(Jittered, AddsUpToTheJitterFractionMore) {
  EXPECT_EQ(Jittered(seconds(2), 1.0, 0.0), seconds(2));
  EXPECT_EQ(Jittered(seconds(2), 1.0, 0.5), seconds(3));
  EXPECT_EQ(Jittered(seconds(2), 1.2, 0.5), milliseconds(3200));
  EXPECT_EQ(Jittered(seconds(2), 0.0, 0.9), seconds(2));
  // Out-of-range randomness and negative jitter are clamped, not trusted.
  EXPECT_EQ(Jittered(seconds(2), 1.0, 7.0), seconds(4));
  EXPECT_EQ(Jittered(seconds(2), -1.0, 0.5), seconds(2));
  EXPECT_EQ(Jittered(-seconds(2), 1.0, 0.5), nanoseconds(0));
  // Never overflows.
  EXPECT_GT(Jittered(nanoseconds::max(), 1.0, 0.99), nanoseconds(0));
}

TEST(Backoff, GrowsWithEachFailureJitteredAndStartsOverAfterReset) {
  double next_random = 0.5;
  Backoff backoff({.initial = milliseconds(800), .max = seconds(30), .factor = 2, .jitter = 1},
                  [&] { return next_random; });
  EXPECT_EQ(backoff.Next(), milliseconds(1200));
  EXPECT_EQ(backoff.Next(), milliseconds(2400));
  next_random = 0;
  EXPECT_EQ(backoff.Next(), milliseconds(3200));
  EXPECT_EQ(backoff.Failures(), 3);
  for (int i = 0; i < 10; ++i) backoff.Next();
  EXPECT_EQ(backoff.Next(), seconds(30));  // the cap, before jitter
  backoff.Reset();
  EXPECT_EQ(backoff.Failures(), 0);
  EXPECT_EQ(backoff.Next(), milliseconds(800));
}

TEST(Backoff, AFloorRaisesOnlyThatWait) {
  Backoff backoff({.initial = seconds(1), .max = seconds(30)}, nullptr);
  EXPECT_EQ(backoff.NextAtLeast(seconds(7)), seconds(7));  // a Retry-After of 7 s
  EXPECT_EQ(backoff.Next(), seconds(2));                   // the growth goes on as before
  EXPECT_EQ(backoff.NextAtLeast(seconds(1)), seconds(4));
}

TEST(SeededRandom, IsUniformInTheUnitIntervalAndRepeatsForASeed) {
  Random01 a = SeededRandom(7);
  Random01 b = SeededRandom(7);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const double x = a();
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
    ASSERT_EQ(x, b());
    sum += x;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

}  // namespace
}  // namespace eoc
