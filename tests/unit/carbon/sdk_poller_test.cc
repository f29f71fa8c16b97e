// The SDK poller on its own threads, against a local server speaking the SDK's format, on a manual
// clock: what it polls and when, what it publishes, and whom it tells; and against a fetcher of
// the test's own that never answers a hundred dead SDKs, while another SDK stays fresh.
#include "controller/carbon/sdk_poller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "eventually.h"
#include "fake_carbon_sdk.h"
#include "fake_fetcher.h"
#include "fixtures.h"

namespace eoc::controller::carbon {
namespace {

using eoc::testing::Eventually;
using eoc::testing::FakeCarbonSdk;
using eoc::testing::FakeFetcher;
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
  SdkPoller poller_{
      *fetcher_,
      {.min_interval = minutes(5), .hold = hours(24), .allowed_cidrs = testing::AllowLoopback()},
      kCarbonMaxInFlight,
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

// SDKs that never answer (their fetches held by the fake) hold at most half the slots, so an SDK
// that answered its last poll is polled again as soon as it is due and its readings are fresh,
// though every dead one still hangs; released, the dead ones get their turns, a few at a time.
class DeadSdksTest : public ::testing::Test {
 protected:
  static constexpr const char* kGood = "http://10.0.1.1:8080";
  static constexpr const char* kGoodAddress = "10.0.1.1:8080";
  static constexpr std::size_t kDead = 100;

  static std::string DeadUrl(std::size_t i) {
    return "http://10.0.2." + std::to_string(i) + ":8080";
  }

  // Stops the poller, answering whatever fetches it still starts meanwhile.
  void TearDown() override {
    std::atomic<bool> stopped{false};
    std::thread stopper([&] {
      poller_.Stop();
      stopped = true;
    });
    while (!stopped) {
      fetcher_.ReleaseAll(FakeFetcher::Error(FetchErrorKind::kDeadline));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    stopper.join();
  }

  FakeFetcher fetcher_;
  ManualClock clock_;
  SdkPoller poller_{fetcher_, {.min_interval = minutes(5), .hold = hours(24)}, 8, clock_, {}};
};

TEST_F(DeadSdksTest, AnSdkThatAnswersIsPolledWhenDueWhileAHundredDeadOnesHang) {
  fetcher_.Set(kGoodAddress, FakeFetcher::Page(kTwoZones));
  std::map<std::string, std::vector<std::string>> wanted = {{kGood, {"eastus"}}};
  poller_.Start();
  poller_.Want(wanted);
  ASSERT_TRUE(Eventually([&] { return poller_.Readings(kGood) != nullptr; }));

  for (std::size_t i = 0; i < kDead; ++i) wanted[DeadUrl(i)] = {"eastus"};
  poller_.Want(wanted);
  ASSERT_TRUE(Eventually([&] { return fetcher_.Held() > 0; }));  // dead SDKs are being asked

  // The good SDK falls due again: it is asked, and its readings are as of now.
  clock_.Advance(minutes(5));
  ASSERT_TRUE(Eventually([&] { return fetcher_.Requests(kGoodAddress) == 2; }))
      << fetcher_.Held() << " fetches held";
  ASSERT_TRUE(Eventually([&] {
    const auto table = poller_.Readings(kGood);
    return table != nullptr && table->Reading("eastus")->value_at == clock_.Now();
  }));
  // Half the 8 slots hang on dead SDKs; the other half stay free.
  EXPECT_TRUE(Eventually([&] { return fetcher_.Held() == 4; }));
  EXPECT_EQ(fetcher_.MostHeld(), 4U);

  // The dead ones time out (released): each is asked in turn, never more than four at once.
  ASSERT_TRUE(Eventually([&] {
    fetcher_.ReleaseAll(FakeFetcher::Error(FetchErrorKind::kDeadline));
    for (std::size_t i = 0; i < kDead; ++i) {
      if (fetcher_.Requests(DeadUrl(i).substr(7)) == 0) return false;
    }
    return true;
  }));
  EXPECT_EQ(fetcher_.MostHeld(), 4U);
  const auto dead = poller_.Readings(DeadUrl(0));
  ASSERT_NE(dead, nullptr);
  EXPECT_THAT(*dead->Reading("eastus")->error, HasSubstr("fake"));
}

}  // namespace
}  // namespace eoc::controller::carbon
