#include "controller/pool_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace eoc::controller {
namespace {

using routing::Worker;
using ::testing::HasSubstr;

constexpr const char* kT0 = "2026-11-30T10:00:00Z";
constexpr const char* kT1 = "2026-11-30T10:05:00Z";

api::InferencePool Pool() {
  api::InferencePool pool;
  pool.ns = "prod";
  pool.name = "chat";
  pool.generation = 3;
  pool.spec.selector =
      api::LabelSelector(std::vector<api::LabelRequirement>{{.key = "app", .values = {"chat"}}});
  pool.spec.target_port = 8000;
  return pool;
}

Worker W(const std::string& pod, const std::string& address) {
  return {.key = routing::WorkerKeyOf("prod/" + pod),
          .pod = "prod/" + pod,
          .address = address,
          .capability = {.accelerator = Accelerator::kCpu, .accelerator_product = "CPU"},
          .weight = kEqualWeight};
}

const api::Condition& Cond(const api::InferencePoolStatus& s, std::string_view type) {
  const api::Condition* c = api::FindCondition(s.conditions, type);
  EXPECT_NE(c, nullptr) << type;
  static const api::Condition kNone;
  return c != nullptr ? *c : kNone;
}

TEST(DesiredStatusTest, ListsTheWorkersWithEqualWeightsAndIsReady) {
  const auto s = DesiredStatus(Pool(), {W("a", "10.0.0.1:8000"), W("b", "10.0.0.2:8000")}, kT0);
  EXPECT_EQ(s.observed_generation, 3);
  EXPECT_EQ(s.ready_workers, 2);
  ASSERT_TRUE(s.routing.has_value());
  EXPECT_EQ(s.routing->strategy, "JouleWeighted");
  EXPECT_EQ(s.routing->generation, 1);
  ASSERT_EQ(s.routing->workers.size(), 2U);
  EXPECT_EQ(s.routing->workers[1].address, "10.0.0.2:8000");
  EXPECT_EQ(s.routing->workers[0].pod, "a");  // the pool's namespace is not repeated
  EXPECT_EQ(s.routing->workers[0].weight, kEqualWeight);
  EXPECT_EQ(Cond(s, "Ready").status, "True");
  EXPECT_EQ(Cond(s, "Ready").message, "2 workers are ready");
  EXPECT_EQ(Cond(s, "SpecValid").status, "True");
  EXPECT_EQ(Cond(s, "MetricsAvailable").status, "Unknown");
  EXPECT_EQ(Cond(s, "ScalingActive").reason, std::string(reasons::kAutoscalingDisabled));
}

TEST(DesiredStatusTest, TheTableTakesWeightsDrainingAndModelsFromTheWorkerList) {
  Worker heavy = W("a", "10.0.0.1:8000");
  heavy.weight = 250;
  heavy.capability.models = {"llama-3-8b"};
  Worker leaving = W("b", "10.0.0.2:8000");
  leaving.draining = true;
  const auto table = BuildRoutingTable(Pool().spec, {heavy, leaving}, std::nullopt);
  ASSERT_EQ(table.workers.size(), 2U);
  EXPECT_EQ(table.workers[0].weight, 250);
  EXPECT_THAT(table.workers[0].models, ::testing::ElementsAre("llama-3-8b"));
  EXPECT_FALSE(table.workers[0].draining);
  EXPECT_TRUE(table.workers[1].draining);
  EXPECT_EQ(table.workers[1].weight, kEqualWeight);
}

TEST(DesiredStatusTest, IsStableWhenNothingChanged) {
  api::InferencePool pool = Pool();
  const std::vector<Worker> workers = {W("a", "10.0.0.1:8000")};
  pool.status = DesiredStatus(pool, workers, kT0);
  EXPECT_EQ(DesiredStatus(pool, workers, kT1), pool.status);  // no write needed
}

TEST(DesiredStatusTest, AMembershipChangeBumpsTheGenerationAndNothingElseDoes) {
  api::InferencePool pool = Pool();
  pool.status = DesiredStatus(pool, {W("a", "10.0.0.1:8000")}, kT0);
  auto next = DesiredStatus(pool, {W("a", "10.0.0.1:8000"), W("b", "10.0.0.2:8000")}, kT1);
  EXPECT_EQ(next.routing->generation, 2);
  // The Ready condition stayed True: its transition time stays.
  EXPECT_EQ(Cond(next, "Ready").last_transition_time, kT0);
  pool.status = next;
  // A pod that moved to another address is a change too.
  next = DesiredStatus(pool, {W("a", "10.0.0.1:8000"), W("b", "10.0.0.7:8000")}, kT1);
  EXPECT_EQ(next.routing->generation, 3);
  // A new strategy is a new table.
  pool.status = next;
  pool.spec.routing.strategy = api::Strategy::kLeastBusy;
  next = DesiredStatus(pool, {W("a", "10.0.0.1:8000"), W("b", "10.0.0.7:8000")}, kT1);
  EXPECT_EQ(next.routing->generation, 4);
  EXPECT_EQ(next.routing->strategy, "LeastBusy");
}

TEST(DesiredStatusTest, NoWorkersIsNotReady) {
  api::InferencePool pool = Pool();
  pool.status = DesiredStatus(pool, {W("a", "10.0.0.1:8000")}, kT0);
  const auto s = DesiredStatus(pool, {}, kT1);
  EXPECT_EQ(s.ready_workers, 0);
  EXPECT_EQ(Cond(s, "Ready").status, "False");
  EXPECT_EQ(Cond(s, "Ready").reason, std::string(reasons::kNoReadyWorkers));
  EXPECT_EQ(Cond(s, "Ready").last_transition_time, kT1);
  EXPECT_TRUE(s.routing->workers.empty());
}

TEST(DesiredStatusTest, AnInvalidSpecSaysWhichFieldAndKeepsTheTable) {
  api::InferencePool pool = Pool();
  pool.status = DesiredStatus(pool, {W("a", "10.0.0.1:8000")}, kT0);
  const api::RoutingTable table = *pool.status.routing;
  pool.generation = 4;
  pool.errors = {{"spec.autoscaling.maxReplicas", "required when autoscaling is enabled"}};
  const auto s = DesiredStatus(pool, {}, kT1);
  EXPECT_EQ(s.observed_generation, 4);
  EXPECT_EQ(Cond(s, "SpecValid").status, "False");
  EXPECT_EQ(Cond(s, "SpecValid").reason, std::string(reasons::kSpecInvalid));
  EXPECT_EQ(Cond(s, "SpecValid").message,
            "spec.autoscaling.maxReplicas: required when autoscaling is enabled");
  EXPECT_EQ(Cond(s, "Ready").status, "False");
  EXPECT_THAT(Cond(s, "Ready").message, HasSubstr("spec.autoscaling.maxReplicas"));
  EXPECT_EQ(s.routing, table);

  // Fixed: valid again, with a fresh transition time.
  pool.status = s;
  pool.errors.clear();
  const auto fixed = DesiredStatus(pool, {W("a", "10.0.0.1:8000")}, "2026-11-30T10:09:00Z");
  EXPECT_EQ(Cond(fixed, "SpecValid").status, "True");
  EXPECT_EQ(Cond(fixed, "SpecValid").last_transition_time, "2026-11-30T10:09:00Z");
  EXPECT_EQ(Cond(fixed, "Ready").status, "True");
}

TEST(DesiredStatusTest, ManyErrorsAreCountedNotAllListed) {
  std::vector<api::FieldError> errors;
  errors.reserve(8);
  for (int i = 0; i < 8; ++i) errors.push_back({"spec.f" + std::to_string(i), "bad"});
  const std::string message = DescribeErrors(errors);
  EXPECT_THAT(message, HasSubstr("spec.f0: bad; spec.f1: bad"));
  EXPECT_THAT(message, HasSubstr("(and 3 more)"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("spec.f7")));
}

TEST(DesiredStatusTest, TheTableStopsAtItsLimitAndTheConditionSaysSo) {
  std::vector<Worker> workers;
  workers.reserve(api::kMaxRoutingTableWorkers + 5);
  for (std::size_t i = 0; i < api::kMaxRoutingTableWorkers + 5; ++i) {
    workers.push_back(W("pod-" + std::to_string(100000 + i), "10.0.0.1:8000"));
  }
  const auto s = DesiredStatus(Pool(), workers, kT0);
  EXPECT_EQ(s.routing->workers.size(), api::kMaxRoutingTableWorkers);
  EXPECT_EQ(s.ready_workers, static_cast<std::int32_t>(workers.size()));
  EXPECT_EQ(Cond(s, "Ready").reason, std::string(reasons::kTableTruncated));
}

// An exporter past its namespace's cap leaves Ready True and says why; the reason is
// NamespaceLimit unless a missing profile's applies.
TEST(DesiredStatusTest, AnExporterPastItsNamespacesCapIsSaidInReady) {
  const std::string why = "namespace \"prod\" already uses 4 distinct exporters";
  auto s = DesiredStatus(Pool(), {W("a", "10.0.0.1:8000")}, kT0, {.exporter_refused = why});
  EXPECT_EQ(Cond(s, "Ready").status, "True");
  EXPECT_EQ(Cond(s, "Ready").reason, std::string(reasons::kNamespaceLimit));
  EXPECT_EQ(Cond(s, "Ready").message,
            "1 worker is ready; spec.energy.exporter is not watched: " + why);
  s = DesiredStatus(Pool(), {W("a", "10.0.0.1:8000")}, kT0,
                    {.missing_profiles = {"H100"}, .exporter_refused = why});
  EXPECT_EQ(Cond(s, "Ready").reason, std::string(reasons::kEnergyProfileMissing));
  EXPECT_THAT(Cond(s, "Ready").message, HasSubstr("H100"));
  EXPECT_THAT(Cond(s, "Ready").message, HasSubstr("not watched: " + why));
}

// An exporter in a namespace not allowed leaves Ready True, with its own reason and the words
// naming the namespace and the flag; a missing profile's reason still wins.
TEST(DesiredStatusTest, AnExporterNamespaceNotAllowedIsSaidInReady) {
  const std::string why = "its namespace \"gpu\" is not allowed: ... --exporter-namespaces ...";
  auto s = DesiredStatus(Pool(), {W("a", "10.0.0.1:8000")}, kT0,
                         {.exporter_refused = why, .exporter_not_allowed = true});
  EXPECT_EQ(Cond(s, "Ready").status, "True");
  EXPECT_EQ(Cond(s, "Ready").reason, "ExporterNamespaceNotAllowed");
  EXPECT_EQ(Cond(s, "Ready").message,
            "1 worker is ready; spec.energy.exporter is not watched: " + why);
  s = DesiredStatus(
      Pool(), {W("a", "10.0.0.1:8000")}, kT0,
      {.missing_profiles = {"H100"}, .exporter_refused = why, .exporter_not_allowed = true});
  EXPECT_EQ(Cond(s, "Ready").reason, std::string(reasons::kEnergyProfileMissing));
}

// A pool whose maxBlocks is over its share of --max-prefix-blocks-total says so in Ready, with
// both numbers; the reason is PrefixIndexClamped unless another applies.
TEST(DesiredStatusTest, APrefixIndexClampedToItsShareIsSaidInReady) {
  api::InferencePool pool = Pool();
  pool.spec.routing.prefix_affinity = {.enabled = true, .max_blocks = 100'000'000};
  auto s = DesiredStatus(pool, {W("a", "10.0.0.1:8000")}, kT0, {.prefix_share = 2'000'000});
  EXPECT_EQ(Cond(s, "Ready").status, "True");
  EXPECT_EQ(Cond(s, "Ready").reason, std::string(reasons::kPrefixIndexClamped));
  EXPECT_EQ(Cond(s, "Ready").message,
            "1 worker is ready; the prefix index is clamped to its share of "
            "--max-prefix-blocks-total, 2000000 blocks (spec.routing.prefixAffinity.maxBlocks: "
            "100000000): it holds more only while other pools leave the budget unused");
  // Another reason wins; the message says both.
  s = DesiredStatus(pool, {W("a", "10.0.0.1:8000")}, kT0,
                    {.exporter_refused = "at the cap", .prefix_share = 2'000'000});
  EXPECT_EQ(Cond(s, "Ready").reason, std::string(reasons::kNamespaceLimit));
  EXPECT_THAT(Cond(s, "Ready").message, HasSubstr("not watched: at the cap; the prefix index"));
  // Within its share, or without an index, nothing is said.
  s = DesiredStatus(pool, {W("a", "10.0.0.1:8000")}, kT0, {.prefix_share = 100'000'000});
  EXPECT_EQ(Cond(s, "Ready").reason, std::string(reasons::kWorkersReady));
  s = DesiredStatus(pool, {W("a", "10.0.0.1:8000")}, kT0);
  EXPECT_EQ(Cond(s, "Ready").reason, std::string(reasons::kWorkersReady));
}

TEST(DesiredStatusTest, AutoscalingOnIsReportedAsNotRunningYet) {
  api::InferencePool pool = Pool();
  pool.spec.autoscaling.enabled = true;
  const auto s = DesiredStatus(pool, {}, kT0);
  EXPECT_EQ(Cond(s, "ScalingActive").status, "Unknown");
}

ScrapeSummary Read(std::size_t available, std::size_t unavailable) {
  return {.ok = available, .total = available + unavailable};
}

TEST(MetricsAvailableTest, EveryWorkerReadIsTrue) {
  const api::Condition c = MetricsAvailableCondition(Read(3, 0), 7);
  EXPECT_EQ(c.type, "MetricsAvailable");
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, std::string(reasons::kAllMetricsAvailable));
  EXPECT_EQ(c.message, "all workers' metrics were read");
  EXPECT_EQ(c.observed_generation, 7);
}

TEST(MetricsAvailableTest, SomeUnreadIsStillTrueWithItsReason) {
  const api::Condition c = MetricsAvailableCondition(Read(2, 1), 7);
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, std::string(reasons::kSomeMetricsUnavailable));
  EXPECT_EQ(c.message,
            "some workers' metrics could not be read; see the eoc_worker_scrape_* metrics");
}

TEST(MetricsAvailableTest, NoneReadIsFalse) {
  const api::Condition c = MetricsAvailableCondition(Read(0, 4), 7);
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, std::string(reasons::kNoMetricsAvailable));
  EXPECT_EQ(c.message, "no worker's metrics could be read; see the eoc_worker_scrape_* metrics");
}

TEST(MetricsAvailableTest, NoWorkerIsUnknown) {
  const api::Condition c = MetricsAvailableCondition(Read(0, 0), 7);
  EXPECT_EQ(c.status, "Unknown");
  EXPECT_EQ(c.reason, std::string(reasons::kNoReadyWorkers));
}

TEST(MetricsAvailableTest, TheConditionCarriesNoCountsThatChangeEveryScrape) {
  // Among 10 workers, 1 to 9 failing is one and the same condition.
  const api::Condition some = MetricsAvailableCondition(Read(9, 1), 7);
  for (std::size_t failing = 2; failing < 10; ++failing) {
    EXPECT_EQ(MetricsAvailableCondition(Read(10 - failing, failing), 7), some) << failing;
  }
  EXPECT_EQ(MetricsAvailableCondition(Read(1, 0), 7), MetricsAvailableCondition(Read(500, 0), 7));
  EXPECT_EQ(MetricsAvailableCondition(Read(0, 1), 7), MetricsAvailableCondition(Read(0, 500), 7));
}

TEST(MetricsAvailableTest, DesiredStatusSetsItFromTheSummary) {
  api::InferencePool pool = Pool();
  const std::vector<Worker> workers = {W("a", "10.0.0.1:8000"), W("b", "10.0.0.2:8000")};
  pool.status = DesiredStatus(pool, workers, kT0, {.scrapes = Read(2, 0)});
  EXPECT_EQ(Cond(pool.status, "MetricsAvailable").reason,
            std::string(reasons::kAllMetricsAvailable));
  EXPECT_EQ(Cond(pool.status, "MetricsAvailable").last_transition_time, kT0);
  // The same summary later: no write needed.
  EXPECT_EQ(DesiredStatus(pool, workers, kT1, {.scrapes = Read(2, 0)}), pool.status);
}

TEST(MetricsAvailableTest, AFlappingWorkerAmongFailingOnesDoesNotRewriteStatus) {
  api::InferencePool pool = Pool();
  const std::vector<Worker> workers = {W("a", "10.0.0.1:8000"), W("b", "10.0.0.2:8000"),
                                       W("c", "10.0.0.3:8000")};
  pool.status = DesiredStatus(pool, workers, kT0, {.scrapes = Read(2, 1)});
  EXPECT_EQ(DesiredStatus(pool, workers, kT1, {.scrapes = Read(1, 2)}), pool.status);
  EXPECT_EQ(DesiredStatus(pool, workers, kT1, {.scrapes = Read(2, 1)}), pool.status);
}

TEST(MetricsAvailableTest, TheTransitionTimeMovesWithTheStatusOnly) {
  api::InferencePool pool = Pool();
  const std::vector<Worker> workers = {W("a", "10.0.0.1:8000"), W("b", "10.0.0.2:8000")};
  pool.status = DesiredStatus(pool, workers, kT0, {.scrapes = Read(2, 0)});
  // True to True with another reason: the reason changes, the transition time stays.
  pool.status = DesiredStatus(pool, workers, kT1, {.scrapes = Read(1, 1)});
  EXPECT_EQ(Cond(pool.status, "MetricsAvailable").reason,
            std::string(reasons::kSomeMetricsUnavailable));
  EXPECT_EQ(Cond(pool.status, "MetricsAvailable").last_transition_time, kT0);
  // True to False: a transition.
  const char* t2 = "2026-11-30T10:06:00Z";
  pool.status = DesiredStatus(pool, workers, t2, {.scrapes = Read(0, 2)});
  EXPECT_EQ(Cond(pool.status, "MetricsAvailable").status, "False");
  EXPECT_EQ(Cond(pool.status, "MetricsAvailable").last_transition_time, t2);
}

TEST(MetricsAvailableTest, WithoutASummaryItIsNotScraped) {
  const auto s = DesiredStatus(Pool(), {W("a", "10.0.0.1:8000")}, kT0);
  EXPECT_EQ(Cond(s, "MetricsAvailable").status, "Unknown");
  EXPECT_EQ(Cond(s, "MetricsAvailable").reason, std::string(reasons::kNotScraped));
}

}  // namespace
}  // namespace eoc::controller
