#include "signals/token_rate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>

namespace eoc::signals {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const TokenRate::TimePoint kStart{seconds(1000)};

TEST(TokenRate, FirstScrapeGivesNoRate) {
  TokenRate rate;
  EXPECT_FALSE(rate.Add(kStart, 100, 50));
}

TEST(TokenRate, TokensPerSecondOverTheLastInterval) {
  TokenRate rate;
  rate.Add(kStart, 1000, 500);
  const auto r = rate.Add(kStart + seconds(5), 2000, 1000);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->prompt_per_second, 200);
  EXPECT_DOUBLE_EQ(r->generation_per_second, 100);
  EXPECT_DOUBLE_EQ(r->tokens_per_second(), 300);
  const auto next = rate.Add(kStart + seconds(5) + milliseconds(500), 2000, 1100);
  ASSERT_TRUE(next);
  EXPECT_DOUBLE_EQ(next->prompt_per_second, 0);
  EXPECT_DOUBLE_EQ(next->generation_per_second, 200);
}

TEST(TokenRate, ACounterResetCountsTheNewValueAsTheIncrease) {
  TokenRate rate;
  rate.Add(kStart, 10'000, 8'000);
  // The engine restarted: prompt went from 10,000 to 300, generation from 8,000 to 100.
  const auto r = rate.Add(kStart + seconds(10), 300, 100);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->prompt_per_second, 30);
  EXPECT_DOUBLE_EQ(r->generation_per_second, 10);
  // Only one counter reset: the other still counts from its last value.
  const auto one = rate.Add(kStart + seconds(20), 50, 200);
  ASSERT_TRUE(one);
  EXPECT_DOUBLE_EQ(one->prompt_per_second, 5);
  EXPECT_DOUBLE_EQ(one->generation_per_second, 10);
}

TEST(TokenRate, TimeThatDoesNotAdvanceIsIgnored) {
  TokenRate rate;
  rate.Add(kStart, 0, 0);
  EXPECT_FALSE(rate.Add(kStart, 100, 100));
  EXPECT_FALSE(rate.Add(kStart - seconds(1), 100, 100));
  const auto r = rate.Add(kStart + seconds(1), 10, 20);  // still from the first scrape
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->tokens_per_second(), 30);
}

TEST(TokenRate, BadTotalsForgetTheLastScrape) {
  TokenRate rate;
  rate.Add(kStart, 100, 100);
  EXPECT_FALSE(rate.Add(kStart + seconds(1), std::numeric_limits<double>::quiet_NaN(), 1));
  EXPECT_FALSE(rate.Add(kStart + seconds(2), 200, 200));  // starts afresh
  EXPECT_FALSE(rate.Add(kStart + seconds(3), -1, 200));
  rate.Add(kStart + seconds(4), 0, 0);
  rate.Reset();
  EXPECT_FALSE(rate.Add(kStart + seconds(5), 10, 10));
}

}  // namespace
}  // namespace eoc::signals
