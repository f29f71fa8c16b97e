// The SDK poller on its own thread, against a local server speaking the SDK's format, on a manual
// clock: what it polls and when, what it publishes, and whom it tells.
#include "controller/carbon/sdk_poller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "eventually.h"
#include "fake_carbon_sdk.h"
#include "fixtures.h"

namespace eoc::controller::carbon {
namespace {

using eoc::testing::Eventually;
using eoc::testing::FakeCarbonSdk;
using std::chrono::hours;
using std::chrono::minutes;
using ::testing::HasSubstr;
using testing::kTwoZones;

class SdkPollerTest : public ::testing::Test {
 protected:
  std::unique_ptr<MetricsFetcher> fetcher_ = MakeCarbonFetcher();
  ManualClock clock_;
  std::mutex mu_;
  std::vector<std::string> changed_;  // guarded by mu_
  SdkPoller poller_{*fetcher_,
                    {.min_interval = minutes(5), .hold = hours(24)},
                    clock_,
                    [this](const std::string& url) {
                      const std::lock_guard lock(mu_);
                      changed_.push_back(url);
                    }};

  std::size_t Changes() {
    const std::lock_guard lock(mu_);
    return changed_.size();
  }
};

TEST_F(SdkPollerTest, PollsANewZoneSetAtOnceThenEveryIntervalAndPublishesEachPoll) {
  FakeCarbonSdk sdk(kTwoZones);
  EXPECT_EQ(poller_.Readings(sdk.url()), nullptr);
  poller_.Want({{sdk.url(), {"westus", "eastus", "eastus"}}});
  poller_.PollDue();
  const auto table = poller_.Readings(sdk.url());
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->Get("eastus", clock_.Now()), 70);
  EXPECT_EQ(table->Get("westus", clock_.Now()), 64);
  EXPECT_EQ(Changes(), 1U);
  ASSERT_EQ(sdk.heads().size(), 1U);
  EXPECT_THAT(sdk.heads()[0], HasSubstr("?location=eastus&location=westus "));

  poller_.PollDue();  // not due: not asked, nothing published
  EXPECT_EQ(sdk.heads().size(), 1U);
  EXPECT_EQ(Changes(), 1U);
  poller_.Want({{sdk.url(), {"eastus", "westus"}}});  // the same set: nothing new
  poller_.PollDue();
  EXPECT_EQ(sdk.heads().size(), 1U);

  // The SDK fails at the next interval: published too, the last values kept by the table.
  sdk.Set("oops", "500 Internal Server Error");
  clock_.Advance(minutes(5));
  poller_.PollDue();
  EXPECT_EQ(sdk.heads().size(), 2U);
  EXPECT_EQ(Changes(), 2U);
  const auto failed = poller_.Readings(sdk.url());
  EXPECT_EQ(failed->Get("eastus", clock_.Now()), 70);
  ASSERT_NE(failed->Reading("eastus"), nullptr);
  EXPECT_THAT(*failed->Reading("eastus")->error, HasSubstr("HTTP 500"));
  EXPECT_EQ(table->Reading("eastus")->error, std::nullopt);  // a published table never changes

  // A URL no longer wanted is forgotten.
  poller_.Want({});
  EXPECT_EQ(poller_.Readings(sdk.url()), nullptr);
}

TEST_F(SdkPollerTest, ItsThreadPollsWhatIsWantedAndSleepsUntilTheNextIsDue) {
  FakeCarbonSdk sdk(kTwoZones);
  poller_.Start();
  poller_.Want({{sdk.url(), {"eastus"}}});
  ASSERT_TRUE(Eventually([&] { return poller_.Readings(sdk.url()) != nullptr; }));
  const auto wait = clock_.AwaitTimedSleep();
  ASSERT_TRUE(wait);
  EXPECT_EQ(*wait, minutes(5));
  EXPECT_EQ(sdk.heads().size(), 1U);
  clock_.Advance(*wait);
  ASSERT_TRUE(Eventually([&] { return sdk.heads().size() == 2; }));
  // Another zone set is polled at once, without waiting for the interval.
  poller_.Want({{sdk.url(), {"eastus", "westus"}}});
  ASSERT_TRUE(Eventually([&] { return sdk.heads().size() == 3; }));
  ASSERT_TRUE(Eventually([&] { return Changes() == 3; }));
  EXPECT_EQ(poller_.Readings(sdk.url())->Get("westus", clock_.Now()), 64);
  poller_.Stop();
}

}  // namespace
}  // namespace eoc::controller::carbon
