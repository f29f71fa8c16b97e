#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/inference_pool.h"
#include "printers.h"

namespace eoc::api {
namespace {

using nlohmann::json;

InferencePoolStatus Full() {
  InferencePoolStatus s;
  s.observed_generation = 9;
  s.ready_workers = 2;
  s.desired_replicas = 3;
  s.last_scale_time = "2026-11-30T10:00:00Z";
  s.conditions = {{"Ready", "True", "Serving", "2 of 3 workers ready", "2026-11-30T09:00:00Z", 9},
                  {"SpecValid", "False", "InvalidSpec", "spec.targetPort: must be an integer",
                   "2026-11-30T09:30:00Z", 8}};
  s.routing = RoutingTable{"JouleWeighted",
                           1ULL << 40U,
                           {{"w-a", "10.0.0.1:8000", 1000, false, 1LL << 35U, 16, {"llama"}},
                            {"w-b", "10.0.0.2:8000", 0, true, 0, 32, {}}}};
  return s;
}

TEST(StatusJson, RoundTripsExactly) {
  const InferencePoolStatus s = Full();
  EXPECT_EQ(ParseStatus(ToJson(s)), s);
  EXPECT_EQ(ParseStatus(json::parse(ToJson(s).dump())), s);  // through text, as it travels
  EXPECT_EQ(ParseStatus(ToJson(InferencePoolStatus{})), InferencePoolStatus{});
  InferencePoolStatus empty_table;
  empty_table.routing = RoutingTable{};
  EXPECT_EQ(ParseStatus(ToJson(empty_table)), empty_table);
}

TEST(StatusJson, TheShapeTheCrdDescribes) {
  EXPECT_EQ(ToJson(Full()), json::parse(R"({
    "observedGeneration": 9, "readyWorkers": 2, "desiredReplicas": 3,
    "lastScaleTime": "2026-11-30T10:00:00Z",
    "conditions": [
      {"type": "Ready", "status": "True", "reason": "Serving", "message": "2 of 3 workers ready",
       "lastTransitionTime": "2026-11-30T09:00:00Z", "observedGeneration": 9},
      {"type": "SpecValid", "status": "False", "reason": "InvalidSpec",
       "message": "spec.targetPort: must be an integer",
       "lastTransitionTime": "2026-11-30T09:30:00Z", "observedGeneration": 8}],
    "routing": {"strategy": "JouleWeighted", "generation": 1099511627776, "workers": [
      {"pod": "w-a", "address": "10.0.0.1:8000", "weight": 1000, "draining": false,
       "kvBlocks": 34359738368, "blockSize": 16, "models": ["llama"]},
      {"pod": "w-b", "address": "10.0.0.2:8000", "weight": 0, "draining": true,
       "kvBlocks": 0, "blockSize": 32}]}})"));
}

TEST(StatusJson, UnsetFieldsAreLeftOut) {
  EXPECT_EQ(ToJson(InferencePoolStatus{}), json::parse(R"({"observedGeneration": 0,
                                                          "readyWorkers": 0})"));
  // Empty strings too: they read back the same.
  InferencePoolStatus s;
  s.conditions = {{"Ready", "Unknown", "", "", "", 0}};
  s.routing = RoutingTable{"", 1, {{"", "", 5, false, 0, 0, {}}}};
  EXPECT_EQ(ToJson(s), json::parse(R"({"observedGeneration": 0, "readyWorkers": 0,
    "conditions": [{"type": "Ready", "status": "Unknown", "observedGeneration": 0}],
    "routing": {"generation": 1, "workers": [
      {"weight": 5, "draining": false, "kvBlocks": 0, "blockSize": 0}]}})"));
  EXPECT_EQ(ParseStatus(ToJson(s)), s);
}

TEST(ParseStatus, WrongTypesAreIgnored) {
  const InferencePoolStatus s = ParseStatus(json::parse(R"({
    "observedGeneration": "9", "readyWorkers": 1.5, "desiredReplicas": 99999999999,
    "lastScaleTime": 5, "conditions": [{"type": "Ready", "status": true}, "junk", 3],
    "routing": {"strategy": ["x"], "generation": -2, "workers": [
      {"pod": "w", "weight": "heavy", "draining": "yes", "models": ["a", 1, "b"]}, null]}})"));
  EXPECT_EQ(s.observed_generation, 0);
  EXPECT_EQ(s.ready_workers, 0);
  EXPECT_FALSE(s.desired_replicas);
  EXPECT_EQ(s.last_scale_time, "");
  ASSERT_EQ(s.conditions.size(), 1U);
  EXPECT_EQ(s.conditions[0].type, "Ready");
  EXPECT_EQ(s.conditions[0].status, "");
  ASSERT_TRUE(s.routing);
  EXPECT_EQ(s.routing->strategy, "");
  EXPECT_EQ(s.routing->generation, -2);
  ASSERT_EQ(s.routing->workers.size(), 1U);
  EXPECT_EQ(s.routing->workers[0].pod, "w");
  EXPECT_EQ(s.routing->workers[0].weight, 0);
  EXPECT_FALSE(s.routing->workers[0].draining);
  EXPECT_THAT(s.routing->workers[0].models, ::testing::ElementsAre("a", "b"));

  EXPECT_EQ(ParseStatus(json("status")), InferencePoolStatus{});
  EXPECT_EQ(ParseStatus(json(nullptr)), InferencePoolStatus{});
  EXPECT_EQ(ParseStatus(json::parse(R"({"routing": []})")), InferencePoolStatus{});
}

TEST(ParseStatus, ATableLongerThanTheLimitIsCut) {
  json workers = json::array();
  for (std::size_t i = 0; i < kMaxRoutingTableWorkers + 500; ++i) {
    workers.push_back({{"pod", "w-" + std::to_string(i)}});
  }
  const InferencePoolStatus s = ParseStatus(json{{"routing", {{"workers", workers}}}});
  ASSERT_TRUE(s.routing);
  EXPECT_EQ(s.routing->workers.size(), kMaxRoutingTableWorkers);
}

TEST(SetCondition, NewConditionsTakeNow) {
  std::vector<Condition> conditions;
  SetCondition(conditions, {"Ready", "False", "NoWorkers", "no worker is ready", "", 1},
               "2026-11-30T10:00:00Z");
  SetCondition(conditions, {"SpecValid", "True", "Valid", "", "1999-01-01T00:00:00Z", 1},
               "2026-11-30T10:00:01Z");
  ASSERT_EQ(conditions.size(), 2U);
  EXPECT_EQ(conditions[0].last_transition_time, "2026-11-30T10:00:00Z");
  EXPECT_EQ(conditions[1].last_transition_time, "2026-11-30T10:00:01Z");
}

TEST(SetCondition, TheTransitionTimeMovesOnlyWithTheStatus) {
  std::vector<Condition> conditions;
  SetCondition(conditions, {"Ready", "False", "NoWorkers", "no worker is ready", "", 1},
               "2026-11-30T10:00:00Z");
  // Same status, new reason, message and generation: they change, the time stays.
  SetCondition(conditions, {"Ready", "False", "Starting", "1 worker starting", "", 2},
               "2026-11-30T10:05:00Z");
  ASSERT_EQ(conditions.size(), 1U);
  EXPECT_EQ(conditions[0], (Condition{"Ready", "False", "Starting", "1 worker starting",
                                      "2026-11-30T10:00:00Z", 2}));
  // A new status: a new time.
  SetCondition(conditions, {"Ready", "True", "Serving", "1 worker ready", "", 2},
               "2026-11-30T10:06:00Z");
  EXPECT_EQ(conditions[0].last_transition_time, "2026-11-30T10:06:00Z");
  EXPECT_EQ(conditions[0].status, "True");
  SetCondition(conditions, {"Ready", "Unknown", "Lost", "", "", 3}, "2026-11-30T10:07:00Z");
  EXPECT_EQ(conditions[0].last_transition_time, "2026-11-30T10:07:00Z");
}

TEST(SetCondition, OtherConditionsAndTheirOrderAreKept) {
  std::vector<Condition> conditions = {
      {"Ready", "True", "Serving", "", "2026-11-30T09:00:00Z", 1},
      {"MetricsAvailable", "True", "Scraped", "", "2026-11-30T09:00:00Z", 1},
      {"SpecValid", "True", "Valid", "", "2026-11-30T09:00:00Z", 1}};
  SetCondition(conditions, {"MetricsAvailable", "False", "ScrapeFailed", "timeout", "", 2},
               "2026-11-30T10:00:00Z");
  ASSERT_EQ(conditions.size(), 3U);
  EXPECT_EQ(conditions[0].type, "Ready");
  EXPECT_EQ(conditions[0].last_transition_time, "2026-11-30T09:00:00Z");
  EXPECT_EQ(conditions[1].type, "MetricsAvailable");
  EXPECT_EQ(conditions[1].last_transition_time, "2026-11-30T10:00:00Z");
  EXPECT_EQ(conditions[2].type, "SpecValid");
}

TEST(FindCondition, ByType) {
  const std::vector<Condition> conditions = {{"Ready", "True", "", "", "", 0},
                                             {"SpecValid", "False", "Invalid", "", "", 0}};
  ASSERT_NE(FindCondition(conditions, kConditionSpecValid), nullptr);
  EXPECT_EQ(FindCondition(conditions, kConditionSpecValid)->reason, "Invalid");
  EXPECT_EQ(FindCondition(conditions, kConditionScalingActive), nullptr);
  EXPECT_EQ(FindCondition({}, kConditionReady), nullptr);
}

}  // namespace
}  // namespace eoc::api
