// The grid intensity hold table and the poll schedule, on explicit times.
#include "signals/carbon_intensity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace eoc::signals {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

const SteadyTime kT0 = SteadyTime{} + hours(100);

TEST(CarbonIntensityTest, ValidRange) {
  EXPECT_TRUE(IsValidCarbonIntensity(0));
  EXPECT_TRUE(IsValidCarbonIntensity(439.07741416000005));
  EXPECT_TRUE(IsValidCarbonIntensity(100000));
  EXPECT_FALSE(IsValidCarbonIntensity(-0.5));
  EXPECT_FALSE(IsValidCarbonIntensity(100000.5));
  EXPECT_FALSE(IsValidCarbonIntensity(std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(IsValidCarbonIntensity(std::nan("")));
}

TEST(ZoneIntensitiesTest, UnknownZoneHasNoValueAndNoError) {
  const ZoneIntensities zones;
  EXPECT_EQ(zones.Get("eastus", kT0), std::nullopt);
  EXPECT_TRUE(zones.Errors(kT0).empty());
  EXPECT_EQ(zones.hold(), kDefaultCarbonHold);
}

// A pool's table (its own hold) fed from a source's (a week's): values and errors carry their
// own times, so the pool's hold counts from when the source read the value, not from the Take.
TEST(ZoneIntensitiesTest, TakeCopiesAReadingWithItsTimesUnderTheTakersHold) {
  ZoneIntensities source(hours(24 * 7));
  ZoneIntensities pool(minutes(10));
  EXPECT_EQ(pool.Reading("eastus"), nullptr);
  source.Update("eastus", 70, kT0);
  ASSERT_NE(source.Reading("eastus"), nullptr);
  EXPECT_TRUE(pool.Take("eastus", *source.Reading("eastus")));
  EXPECT_EQ(pool.Get("eastus", kT0 + minutes(9)), 70);
  source.Fail("eastus", "GET http://sdk/emissions/bylocations: connection refused",
              kT0 + minutes(5));
  pool.Take("eastus", *source.Reading("eastus"));
  EXPECT_EQ(pool.Get("eastus", kT0 + minutes(9)), 70);  // held: read 9 min ago
  EXPECT_EQ(pool.Get("eastus", kT0 + minutes(11)), std::nullopt);
  EXPECT_EQ(source.Get("eastus", kT0 + minutes(11)), 70);  // the source's own hold is longer
  ASSERT_EQ(pool.Errors(kT0 + minutes(11)).size(), 1U);
  EXPECT_THAT(pool.Errors(kT0 + minutes(11))[0].error, HasSubstr("connection refused"));
  EXPECT_EQ(pool.Errors(kT0 + minutes(11))[0].failed_at, kT0 + minutes(5));
  // A newer value clears the error; taking an older reading again changes nothing.
  source.Update("eastus", 90, kT0 + minutes(12));
  pool.Take("eastus", *source.Reading("eastus"));
  pool.Take("eastus", ZoneReading{.value = 70, .value_at = kT0});
  EXPECT_EQ(pool.Get("eastus", kT0 + minutes(13)), 90);
  EXPECT_TRUE(pool.Errors(kT0 + minutes(13)).empty());
}

TEST(ZoneIntensitiesTest, KeepsTheLastGoodValueForTheHoldThenUnknown) {
  ZoneIntensities zones(hours(1));
  ASSERT_TRUE(zones.Update("eastus", 70, kT0));
  EXPECT_EQ(zones.Get("eastus", kT0), 70);
  zones.Fail("eastus", "GET http://sdk/emissions/bylocations: deadline exceeded", kT0 + minutes(5));
  EXPECT_EQ(zones.Get("eastus", kT0 + minutes(59)), 70);  // failing, still held
  EXPECT_TRUE(zones.Errors(kT0 + minutes(59)).empty());
  EXPECT_EQ(zones.Get("eastus", kT0 + hours(1)), 70);  // the hold's last instant
  EXPECT_EQ(zones.Get("eastus", kT0 + hours(1) + seconds(1)), std::nullopt);
  const auto errors = zones.Errors(kT0 + hours(2));
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].zone, "eastus");
  EXPECT_THAT(errors[0].error, HasSubstr("deadline exceeded"));
  EXPECT_THAT(errors[0].error, HasSubstr("older than the hold of 3600 s"));
  EXPECT_EQ(errors[0].failed_at, kT0 + minutes(5));
}

TEST(ZoneIntensitiesTest, AGoodValueClearsTheError) {
  ZoneIntensities zones(minutes(10));
  zones.Fail("westus", "no entry for location \"westus\"", kT0);
  ASSERT_EQ(zones.Errors(kT0).size(), 1U);
  EXPECT_EQ(zones.Errors(kT0)[0].error, "no entry for location \"westus\"");
  zones.Update("westus", 64, kT0 + minutes(1));
  EXPECT_EQ(zones.Get("westus", kT0 + minutes(1)), 64);
  EXPECT_TRUE(zones.Errors(kT0 + minutes(1)).empty());
}

TEST(ZoneIntensitiesTest, AValueNotRefreshedPastTheHoldIsAnError) {
  ZoneIntensities zones(minutes(10));
  zones.Update("IE", 448.4, kT0);
  const auto errors = zones.Errors(kT0 + minutes(11));
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_THAT(errors[0].error, HasSubstr("no value read within the hold of 600 s"));
  EXPECT_EQ(errors[0].failed_at, kT0);
}

TEST(ZoneIntensitiesTest, AnOutOfRangeValueIsAFailure) {
  ZoneIntensities zones;
  zones.Update("eastus", 70, kT0);
  EXPECT_FALSE(zones.Update("eastus", -1, kT0 + minutes(1)));
  EXPECT_EQ(zones.Get("eastus", kT0 + minutes(1)), 70);  // the good one is kept
  EXPECT_FALSE(zones.Update("westus", std::numeric_limits<double>::infinity(), kT0));
  const auto errors = zones.Errors(kT0);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].zone, "westus");
  EXPECT_THAT(errors[0].error, HasSubstr("is not a number from 0 to 100000"));
}

TEST(ZoneIntensitiesTest, ALateReadingDoesNotReplaceANewerOne) {
  ZoneIntensities zones;
  zones.Update("eastus", 70, kT0 + minutes(5));
  EXPECT_TRUE(zones.Update("eastus", 90, kT0));
  EXPECT_EQ(zones.Get("eastus", kT0 + minutes(5)), 70);
}

TEST(ZoneIntensitiesTest, ZeroHoldKeepsAValueOnlyAtItsInstant) {
  ZoneIntensities zones(seconds(0));
  zones.Update("eastus", 70, kT0);
  EXPECT_EQ(zones.Get("eastus", kT0), 70);
  EXPECT_EQ(zones.Get("eastus", kT0 + seconds(1)), std::nullopt);
  EXPECT_THROW(ZoneIntensities(seconds(-1)), std::invalid_argument);
}

TEST(ZoneIntensitiesTest, RetainOnlyDropsZonesNoLongerAskedFor) {
  ZoneIntensities zones;
  zones.Update("eastus", 70, kT0);
  zones.Fail("westus", "x", kT0);
  const std::vector<std::string> keep{"eastus"};
  zones.RetainOnly(keep);
  EXPECT_EQ(zones.size(), 1U);
  EXPECT_TRUE(zones.Errors(kT0).empty());
  EXPECT_EQ(zones.Get("eastus", kT0), 70);
}

TEST(ZoneIntensitiesTest, TheTableIsBounded) {
  ZoneIntensities zones;
  for (std::size_t i = 0; i < kMaxCarbonZones; ++i) {
    ASSERT_TRUE(zones.Update("z" + std::to_string(i), 1, kT0));
  }
  EXPECT_FALSE(zones.Update("one-too-many", 1, kT0));
  EXPECT_FALSE(zones.Fail("one-too-many", "x", kT0));
  EXPECT_TRUE(zones.Update("z0", 2, kT0));  // known zones still update
  EXPECT_EQ(zones.size(), kMaxCarbonZones);
}

TEST(PollKeyTest, TheZoneSetIsSortedAndDeduplicated) {
  const std::vector<std::string> a{"westus", "eastus", "westus"};
  const std::vector<std::string> b{"eastus", "westus"};
  EXPECT_EQ(PollKey("http://sdk", a), PollKey("http://sdk", b));
  EXPECT_NE(PollKey("http://sdk", a), PollKey("http://other", b));
  const std::vector<std::string> c{"eastus"};
  EXPECT_NE(PollKey("http://sdk", b), PollKey("http://sdk", c));
}

TEST(PollScheduleTest, AtMostOncePerInterval) {
  PollSchedule polls;  // kMinCarbonPollInterval
  ASSERT_EQ(polls.min_interval(), minutes(5));
  const std::string key = "http://sdk\neastus";
  EXPECT_TRUE(polls.Due(key, kT0));
  EXPECT_EQ(polls.NextDue(key), std::nullopt);
  polls.Attempted(key, kT0);
  EXPECT_FALSE(polls.Due(key, kT0));
  EXPECT_FALSE(polls.Due(key, kT0 + minutes(4) + seconds(59)));
  EXPECT_TRUE(polls.Due(key, kT0 + minutes(5)));
  EXPECT_EQ(polls.NextDue(key), kT0 + minutes(5));
  EXPECT_TRUE(polls.Due("http://sdk\nwestus", kT0));  // another zone set is its own poll
}

TEST(PollScheduleTest, AnEarlierAttemptDoesNotMoveTheScheduleBack) {
  PollSchedule polls(minutes(5));
  polls.Attempted("k", kT0 + minutes(3));
  polls.Attempted("k", kT0);
  EXPECT_FALSE(polls.Due("k", kT0 + minutes(7)));
  EXPECT_TRUE(polls.Due("k", kT0 + minutes(8)));
  EXPECT_THROW(PollSchedule(seconds(-1)), std::invalid_argument);
}

TEST(PollScheduleTest, KeysAreBoundedOldestForgottenFirst) {
  PollSchedule polls(minutes(5));
  for (std::size_t i = 0; i < kMaxCarbonZones; ++i) {
    polls.Attempted("k" + std::to_string(i), kT0 + seconds(static_cast<long>(i)));
  }
  polls.Attempted("new", kT0 + hours(1));
  EXPECT_EQ(polls.NextDue("k0"), std::nullopt);  // forgotten: due again
  EXPECT_TRUE(polls.NextDue("k1").has_value());
  EXPECT_TRUE(polls.NextDue("new").has_value());
}

}  // namespace
}  // namespace eoc::signals
