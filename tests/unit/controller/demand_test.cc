// The demand annotations' names and values, and how the leader reads them: fresh only once seen
// to change, its own left out, gone ones forgotten and long-unchanged ones named for removal.
#include "controller/demand.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/rfc3339.h"

namespace eoc::controller {
namespace {

using std::chrono::seconds;

TEST(DemandTest, AnnotationKeysAreValidNames) {
  EXPECT_EQ(DemandAnnotationKey("eoc-controller-7d9c_0123abcd"),
            "eoc.dev/demand-eoc-controller-7d9c-0123abcd");
  EXPECT_EQ(DemandAnnotationKey("Host.Name_"), "eoc.dev/demand-host.name");
  const std::string long_a = DemandAnnotationKey(std::string(80, 'a') + "_1");
  const std::string long_b = DemandAnnotationKey(std::string(80, 'a') + "_2");
  EXPECT_EQ(long_a.size() - std::string("eoc.dev/").size(), 63U);
  EXPECT_NE(long_a, long_b);  // the hash keeps them apart
}

TEST(DemandTest, ValuesCarryACount) {
  EXPECT_EQ(FormatDemand(3, "2026-12-04T01:02:03.000004Z"), "3 2026-12-04T01:02:03.000004Z");
  EXPECT_EQ(ParseDemandCount("3 2026-12-04T01:02:03Z"), 3);
  EXPECT_EQ(ParseDemandCount("0"), 0);
  EXPECT_FALSE(ParseDemandCount(""));
  EXPECT_FALSE(ParseDemandCount("x 2026"));
  EXPECT_FALSE(ParseDemandCount("-1 2026"));
  EXPECT_FALSE(ParseDemandCount("99999999999999999999 t"));
}

TEST(DemandTest, ACountNoQueueCanHoldIsRefused) {
  // A report counts one replica's waiting picks for one pool: at most its queue's maxQueue.
  EXPECT_EQ(ParseDemandCount(std::to_string(kMaxDemandCount) + " t"), kMaxDemandCount);
  EXPECT_FALSE(ParseDemandCount(std::to_string(kMaxDemandCount + 1) + " t"));
  EXPECT_FALSE(ParseDemandCount("9223372036854775807 t"));
  EXPECT_FALSE(ParseDemandCount("-9223372036854775808 t"));
}

TEST(DemandTest, HugeAndNegativeReportsAddNothing) {
  // Annotations are anyone's to write who may patch the pool: two reports near INT64_MAX once
  // overflowed the sum (undefined behaviour; a negative demand in practice).
  DemandReadings readings;
  const Clock::TimePoint t0{seconds(1000)};
  const auto wall = *ParseRfc3339("2026-12-04T01:00:00Z");
  const std::string fresh = " 2026-12-04T01:00:00Z";
  const std::map<std::string, std::string> a = {
      {"eoc.dev/demand-a", "9223372036854775807" + fresh},
      {"eoc.dev/demand-b", "9223372036854775806" + fresh},
      {"eoc.dev/demand-c", "-9223372036854775807" + fresh},
      {"eoc.dev/demand-d", "-1" + fresh},
      {"eoc.dev/demand-e", std::to_string(kMaxDemandCount) + fresh},
      {"eoc.dev/demand-f", "4" + fresh}};
  EXPECT_EQ(readings.Observe("p", a, "eoc.dev/demand-me", t0, wall).waiting, kMaxDemandCount + 4);
}

TEST(DemandTest, AnnotationsAreReadFromThePool) {
  nlohmann::json pool;
  pool["metadata"]["annotations"] = {
      {"eoc.dev/demand-a", "2 t"}, {"eoc.dev/other", "x"}, {"eoc.dev/demand-b", 7}};
  const std::map<std::string, std::string> want{{"eoc.dev/demand-a", "2 t"}};
  EXPECT_EQ(DemandAnnotations(pool), want);
  EXPECT_TRUE(DemandAnnotations(nlohmann::json::object()).empty());
}

TEST(DemandTest, TheLeaderCountsFreshReportsOfOthers) {
  DemandReadings readings;
  const Clock::TimePoint t0{seconds(1000)};
  const auto wall = *ParseRfc3339("2026-12-04T01:00:00Z");
  const std::string own = "eoc.dev/demand-me";
  std::map<std::string, std::string> a = {{"eoc.dev/demand-b", "2 t1"}, {own, "5 t1"}};
  // First seen with an old time: not fresh (it may have been left by a replica that died).
  EXPECT_EQ(readings.Observe("p", a, own, t0, wall).waiting, 0);
  // It changes: fresh for kDemandFresh; its own report is never counted.
  a["eoc.dev/demand-b"] = "3 t2";
  a[own] = "6 t2";
  EXPECT_EQ(readings.Observe("p", a, own, t0 + seconds(1), wall).waiting, 3);
  EXPECT_EQ(readings.Observe("p", a, own, t0 + seconds(6), wall).waiting, 3);
  EXPECT_EQ(readings.Observe("p", a, own, t0 + seconds(7), wall).waiting, 0);
  // Unchanged for kDemandForgotten: named for removal.
  const auto late = readings.Observe("p", a, own, t0 + seconds(1) + kDemandForgotten, wall);
  EXPECT_EQ(late.expired, (std::vector<std::string>{"eoc.dev/demand-b", own}));
  // Gone from the pool, then back: first seen again.
  a.erase("eoc.dev/demand-b");
  (void)readings.Observe("p", a, own, t0 + seconds(8), wall);
  a["eoc.dev/demand-b"] = "3 t2";
  EXPECT_EQ(readings.Observe("p", a, own, t0 + seconds(9), wall).waiting, 0);
}

}  // namespace
}  // namespace eoc::controller
