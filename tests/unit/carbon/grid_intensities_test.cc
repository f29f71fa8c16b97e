// Each pool's zone intensities as the reconcile reads them: the static map, and a Carbon Aware SDK
// polled on the poller's thread (a local server speaking its format; a manual clock), with the
// pool's own hold. The ConfigMap source needs an API server: tests/integration/controller.
#include "controller/carbon/grid_intensities.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "api/defaults.h"
#include "eventually.h"
#include "fake_carbon_sdk.h"
#include "fake_transport.h"
#include "fixtures.h"

namespace eoc::controller::carbon {
namespace {

using eoc::testing::Eventually;
using eoc::testing::FakeCarbonSdk;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kTwoZones;

api::InferencePool Pool() {
  api::InferencePool pool;
  pool.ns = "prod";
  pool.name = "chat";
  pool.spec = api::DefaultSpec();
  return pool;
}

TEST(StaticReadingsTest, ListedZonesHaveTheirValueTheOthersAnError) {
  api::CarbonSpec carbon;
  carbon.static_intensity = {{"eastus", 70}, {"westus", 64}};
  const std::vector<std::string> zones{"westus", "north", "eastus", "north"};
  const ZoneReadings r = StaticReadings(carbon, zones, signals::SteadyTime{});
  EXPECT_EQ(r.intensity, (std::map<std::string, double>{{"eastus", 70}, {"westus", 64}}));
  ASSERT_EQ(r.errors.size(), 1U);
  EXPECT_EQ(r.errors[0].zone, "north");
  EXPECT_EQ(r.errors[0].error, "spec.carbon.static has no entry for zone \"north\"");
  EXPECT_TRUE(r.held.empty());
  EXPECT_TRUE(r.pending.empty());
}

class GridIntensitiesTest : public ::testing::Test {
 protected:
  std::vector<std::string> Changed() {
    const std::lock_guard lock(mu_);
    return changed_;
  }

  ManualClock clock_;
  kube::testing::FakeClient kube_{clock_};
  std::unique_ptr<MetricsFetcher> fetcher_ = MakeCarbonFetcher();
  std::mutex mu_;
  std::vector<std::string> changed_;  // guarded by mu_
  GridIntensities grid_{
      *kube_.client,
      *fetcher_,
      {.sdk_poll_interval = seconds(60), .sdk_allowed_cidrs = testing::AllowLoopback()},
      clock_,
      [this](const std::string& pool) {
        const std::lock_guard lock(mu_);
        changed_.push_back(pool);
      }};
};

TEST_F(GridIntensitiesTest, ASdkIsPolledOffTheCallersThreadAndHeldForThePoolsHold) {
  FakeCarbonSdk sdk(kTwoZones);
  api::InferencePool pool = Pool();
  pool.spec.carbon.carbon_aware_sdk = api::CarbonAwareSdkSpec{sdk.url()};
  pool.spec.carbon.max_stale_seconds = 300;
  const std::vector<std::string> zones{"eastus", "westus"};
  grid_.Start();

  // Before the first answer: nothing known, nothing failed.
  ZoneReadings r = grid_.Track("prod/chat", pool, zones);
  EXPECT_TRUE(r.intensity.empty());
  EXPECT_THAT(r.pending, ElementsAre("eastus", "westus"));
  // The poller answers and names the pool; the next Track has the values.
  ASSERT_TRUE(Eventually([&] { return !Changed().empty(); }));
  EXPECT_THAT(Changed(), ElementsAre("prod/chat"));
  r = grid_.Track("prod/chat", pool, zones);
  EXPECT_EQ(r.intensity, (std::map<std::string, double>{{"eastus", 70}, {"westus", 64}}));
  EXPECT_TRUE(r.errors.empty() && r.pending.empty() && r.held.empty());

  // The SDK fails: the values are held (and say why) for the pool's 300 s after they were read.
  sdk.Set("oops", "500 Internal Server Error");
  ASSERT_TRUE(clock_.AwaitTimedSleep());
  clock_.Advance(seconds(60));
  ASSERT_TRUE(Eventually([&] { return Changed().size() == 2; }));
  r = grid_.Track("prod/chat", pool, zones);
  EXPECT_EQ(r.intensity.size(), 2U);
  ASSERT_EQ(r.held.size(), 2U);
  EXPECT_THAT(r.held[0].error, HasSubstr("HTTP 500"));
  clock_.Advance(seconds(241));  // 301 s after the good poll
  r = grid_.Track("prod/chat", pool, zones);
  EXPECT_TRUE(r.intensity.empty());
  ASSERT_EQ(r.errors.size(), 2U);
  EXPECT_EQ(r.errors[0].zone, "eastus");
  EXPECT_THAT(r.errors[0].error, HasSubstr("HTTP 500"));

  // A pool that moves to the static map reads it, and no longer hears of the SDK.
  pool.spec.carbon.carbon_aware_sdk.reset();
  pool.spec.carbon.static_intensity = {{"eastus", 10}};
  r = grid_.Track("prod/chat", pool, zones);
  EXPECT_EQ(r.intensity, (std::map<std::string, double>{{"eastus", 10}}));
  ASSERT_EQ(r.errors.size(), 1U);
  EXPECT_EQ(r.errors[0].zone, "westus");
  grid_.Forget("prod/chat");
  grid_.Stop();
}

TEST_F(GridIntensitiesTest, PoolsOnOneSdkShareItsPollsEachWithItsOwnHold) {
  FakeCarbonSdk sdk(kTwoZones);
  api::InferencePool a = Pool();
  a.spec.carbon.carbon_aware_sdk = api::CarbonAwareSdkSpec{sdk.url()};
  a.spec.carbon.max_stale_seconds = 0;  // never held
  api::InferencePool b = a;
  b.name = "code";
  b.spec.carbon.max_stale_seconds = 3600;
  const std::vector<std::string> east{"eastus"};
  const std::vector<std::string> west{"westus"};
  grid_.Start();
  (void)grid_.Track("prod/chat", a, east);
  (void)grid_.Track("prod/code", b, west);
  // One request for both pools' zones (the second Track may come before or after the first poll).
  ASSERT_TRUE(Eventually([&] {
    return grid_.Track("prod/chat", a, east).intensity.count("eastus") == 1 &&
           grid_.Track("prod/code", b, west).intensity.count("westus") == 1;
  }));
  EXPECT_THAT(sdk.heads().back(), HasSubstr("?location=eastus&location=westus "));
  clock_.Advance(seconds(1));
  // Pool a's hold is 0: a value is good only at the instant it was read.
  EXPECT_TRUE(grid_.Track("prod/chat", a, east).intensity.empty());
  EXPECT_EQ(grid_.Track("prod/code", b, west).intensity.at("westus"), 64);
  grid_.Stop();
}

}  // namespace
}  // namespace eoc::controller::carbon

namespace eoc::controller::carbon {
namespace {

api::InferencePool PoolIn(const std::string& ns, const std::string& name) {
  api::InferencePool pool = Pool();
  pool.ns = ns;
  pool.name = name;
  return pool;
}
api::InferencePool SdkPool(const std::string& ns, const std::string& name, int sdk) {
  api::InferencePool pool = PoolIn(ns, name);
  pool.spec.carbon.carbon_aware_sdk =
      api::CarbonAwareSdkSpec{"http://10.0.0." + std::to_string(sdk) + ":8080"};
  return pool;
}
api::InferencePool ConfigMapPool(const std::string& ns, const std::string& name, int map) {
  api::InferencePool pool = PoolIn(ns, name);
  pool.spec.carbon.config_map_ref = api::ConfigMapKeyRef{"grid-" + std::to_string(map)};
  return pool;
}

// A namespace's pools may name 4 distinct SDK URLs and 4 ConfigMaps (the defaults): a fifth is
// neither polled nor watched, and its readings name the cap's flag; pools that share a source
// count once, other namespaces have caps of their own, and room made is taken at the next Track.
TEST_F(GridIntensitiesTest, PoolsPastTheirNamespacesCapsAreNeitherPolledNorWatchedAndSaySo) {
  const std::vector<std::string> zones{"eastus"};
  for (int i = 0; i < 4; ++i) {
    const auto pool = SdkPool("t", "sdk-" + std::to_string(i), i);
    EXPECT_EQ(grid_.Track("t/" + pool.name, pool, zones).refused, "") << i;
  }
  const auto fifth = SdkPool("t", "sdk-4", 4);
  ZoneReadings r = grid_.Track("t/sdk-4", fifth, zones);
  EXPECT_THAT(r.refused, HasSubstr("namespace \"t\" already uses 4 distinct Carbon Aware SDK "
                                   "URLs (spec.carbon.carbonAwareSdk.url)"));
  EXPECT_THAT(r.refused, HasSubstr("--max-carbon-sdk-urls-per-namespace"));
  EXPECT_TRUE(r.intensity.empty());
  EXPECT_EQ(grid_.Track("t/shares-0", SdkPool("t", "shares-0", 0), zones).refused, "");
  EXPECT_EQ(grid_.Track("u/sdk-4", SdkPool("u", "sdk-4", 4), zones).refused, "");
  grid_.Forget("t/sdk-0");  // another pool still uses its URL
  EXPECT_NE(grid_.Track("t/sdk-4", fifth, zones).refused, "");
  grid_.Forget("t/shares-0");
  EXPECT_EQ(grid_.Track("t/sdk-4", fifth, zones).refused, "");

  for (int i = 0; i < 4; ++i) {
    const auto pool = ConfigMapPool("t", "map-" + std::to_string(i), i);
    EXPECT_EQ(grid_.Track("t/" + pool.name, pool, zones).refused, "") << i;
  }
  r = grid_.Track("t/map-4", ConfigMapPool("t", "map-4", 4), zones);
  EXPECT_THAT(r.refused, HasSubstr("4 distinct ConfigMaps (spec.carbon.configMapRef)"));
  EXPECT_THAT(r.refused, HasSubstr("--max-carbon-config-maps-per-namespace"));
  grid_.Stop();
}

}  // namespace
}  // namespace eoc::controller::carbon
