// The CarbonIntensityAvailable condition: from what a pool's carbon source gave for its workers'
// zones, and in the pool's status only while the pool has a source.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/text.h"
#include "controller/carbon/carbon_aware_sdk.h"
#include "controller/pool_status.h"
#include "fake_carbon_sdk.h"

namespace eoc::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kLabel = "topology.kubernetes.io/region";

signals::ZoneIntensityError E(const std::string& zone, const std::string& why) {
  return {.zone = zone, .error = why};
}

api::Condition Of(const carbon::ZoneReadings& r, std::size_t workers = 2, std::size_t zoned = 2) {
  return CarbonIntensityCondition(r, workers, zoned, kLabel, 4);
}

// A hostile SDK's error answer, 64 KiB of control characters, quotes, backslashes, a forged header
// line and bytes of UTF-8, reaches the condition only as an escaped excerpt of its first 100 bytes
// (Quoted): the message is one line of printable ASCII, holds nothing of the body past that, and
// stays short.
TEST(CarbonIntensityConditionTest, AHostileSdksAnswerIsAShortEscapedExcerpt) {
  const std::string unit("\"}]\r\nX-Forged: 1\r\n\x1b[31m\\\xe2\x82\xac\x00\x7f'", 30);
  std::string body;
  while (body.size() < (std::size_t{64} << 10)) body += unit;
  body += "TAIL-MARKER";
  const eoc::testing::FakeCarbonSdk sdk(body, "500 Internal Server Error");
  const auto fetcher = carbon::MakeCarbonFetcher();
  std::string error;
  carbon::CarbonAwareSdkSource source(
      *fetcher, {.timeout = std::chrono::seconds(5),
                 .allowed_cidrs = carbon::ParseCidrList("127.0.0.1", &error).value()});
  const std::vector<std::string> zones{"eastus", "westus"};
  const signals::SteadyTime now = signals::SteadyTime{} + std::chrono::hours(1);
  ASSERT_TRUE(source.Poll(sdk.url(), zones, now));
  const api::Condition c = Of({.errors = source.intensities().Errors(now)});
  EXPECT_EQ(c.reason, std::string(reasons::kZonesUnknown));
  EXPECT_THAT(c.message, HasSubstr("HTTP 500 " + Quoted(body)));
  EXPECT_THAT(c.message, HasSubstr(R"(HTTP 500 "\x22}]\x0d\x0aX-Forged: 1\x0d\x0a\x1b[31m\x5c)"));
  EXPECT_THAT(c.message, Not(HasSubstr("TAIL-MARKER")));
  for (const char ch : c.message) {
    ASSERT_TRUE(ch >= 0x20 && ch < 0x7f) << "byte " << static_cast<int>(ch) << " in " << c.message;
  }
  // Two zones, each naming the request and at most 100 bytes of the body written 4 bytes each.
  EXPECT_LE(c.message.size(), 1'500U) << c.message;
}

TEST(CarbonIntensityConditionTest, EveryZoneKnownIsTrue) {
  const api::Condition c = Of({.intensity = {{"eastus", 70}, {"westus", 64}}});
  EXPECT_EQ(c.type, "CarbonIntensityAvailable");
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, std::string(reasons::kAllZonesKnown));
  EXPECT_EQ(c.observed_generation, 4);
}

TEST(CarbonIntensityConditionTest, HeldValuesAreTrueAndSayWhyTheSourceFails) {
  const api::Condition c =
      Of({.intensity = {{"eastus", 70}}, .held = {E("eastus", "GET http://sdk/...: HTTP 500")}});
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, std::string(reasons::kLastValuesHeld));
  EXPECT_THAT(c.message, HasSubstr("zone eastus: GET http://sdk/...: HTTP 500"));
  EXPECT_THAT(c.message, HasSubstr("spec.carbon.maxStaleSeconds"));
}

TEST(CarbonIntensityConditionTest, AnUnknownZoneIsFalseAndNamesItAndTheError) {
  const api::Condition c = Of({.intensity = {{"eastus", 70}},
                               .errors = {E("westus", "ConfigMap prod/grid: no key \"westus\"")},
                               .pending = {"north"}});
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, std::string(reasons::kZonesUnknown));
  EXPECT_EQ(c.message,
            "zone westus: ConfigMap prod/grid: no key \"westus\"; CarbonWeighted gives those "
            "zones' workers the median of the known zones");
}

TEST(CarbonIntensityConditionTest, ManyUnknownZonesAreNamedUpToAFewAndCounted) {
  carbon::ZoneReadings r;
  for (int i = 0; i < 8; ++i) r.errors.push_back(E("z" + std::to_string(i), "down"));
  const api::Condition c = Of(r);
  EXPECT_THAT(c.message, HasSubstr("zone z4: down (and 3 more)"));
  EXPECT_THAT(c.message, ::testing::Not(HasSubstr("z5")));
}

TEST(CarbonIntensityConditionTest, NotYetAnsweredIsUnknown) {
  const api::Condition c = Of({.pending = {"eastus", "westus"}});
  EXPECT_EQ(c.status, "Unknown");
  EXPECT_EQ(c.reason, std::string(reasons::kZonesPending));
  EXPECT_EQ(c.message, "waiting for the source's first answer for zone eastus, westus");
}

TEST(CarbonIntensityConditionTest, WithoutWorkersOrZonesItIsUnknown) {
  EXPECT_EQ(Of({}, 0, 0).reason, std::string(reasons::kNoReadyWorkers));
  const api::Condition c = Of({}, 3, 0);
  EXPECT_EQ(c.status, "Unknown");
  EXPECT_EQ(c.reason, std::string(reasons::kNoZones));
  EXPECT_EQ(c.message,
            "no worker's node has the label topology.kubernetes.io/region (spec.carbon.zoneLabel)");
}

TEST(CarbonIntensityConditionTest, ASourcePastItsNamespacesCapIsFalseAndSaysWhichCap) {
  const std::string why =
      "namespace \"t\" already uses 4 distinct Carbon Aware SDK URLs "
      "(spec.carbon.carbonAwareSdk.url) in its pools, the limit "
      "(--max-carbon-sdk-urls-per-namespace)";
  for (const std::size_t workers : {0, 2}) {
    const api::Condition c = Of({.pending = {"eastus"}, .refused = why}, workers, workers);
    EXPECT_EQ(c.status, "False");
    EXPECT_EQ(c.reason, std::string(reasons::kNamespaceLimit));
    EXPECT_EQ(c.message, "the carbon source is not read: " + why);
  }
}

TEST(CarbonIntensityConditionTest, DesiredStatusHasItOnlyWhileThePoolHasASource) {
  api::InferencePool pool;
  pool.ns = "prod";
  pool.name = "chat";
  pool.spec.carbon.zone_label = kLabel;
  const std::vector<routing::Worker> workers = {{.key = routing::WorkerKeyOf("prod/a"),
                                                 .pod = "prod/a",
                                                 .address = "10.0.0.1:8000",
                                                 .capability = {.zone = "eastus"}}};
  pool.status = DesiredStatus(pool, workers, "2026-12-02T10:00:00Z",
                              {.carbon = carbon::ZoneReadings{.intensity = {{"eastus", 70}}}});
  const api::Condition* c =
      api::FindCondition(pool.status.conditions, api::kConditionCarbonIntensityAvailable);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "True");
  pool.status = DesiredStatus(pool, workers, "2026-12-02T10:01:00Z", {});
  EXPECT_EQ(api::FindCondition(pool.status.conditions, api::kConditionCarbonIntensityAvailable),
            nullptr);
}

}  // namespace
}  // namespace eoc::controller
