// The leader's weighted routing table, against the reconcile's fakes (pool_fakes.h) and a real
// PoolDirectory whose states have observed loads, on a ManualClock: weights follow the strategy,
// the publish decision holds small moves and spaces large ones, membership publishes within a
// second, an unchanged status is never rewritten, every replica's snapshot takes the published
// weights, MetricsAvailable follows the scrape loop's summary, and EnergyProfileMissing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "controller/pool_reconciler.h"
#include "controller/pool_status.h"
#include "pods.h"
#include "pool_fakes.h"
#include "routing/pool_directory.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeClient;
using testing::FakeEvents;
using testing::FakeStore;
using ::testing::HasSubstr;
using testing::kKey;
using testing::Pod;

// A CPU profile, so that JouleWeighted compares headroom over the same marginal energy.
json CpuProfile() {
  return {
      {"accelerator", "CPU"}, {"idleWatts", 50}, {"maxWatts", 150}, {"maxTokensPerSecond", 100}};
}

json Pool(const std::string& strategy, json profiles = json::array({CpuProfile()})) {
  json pool = testing::PoolJson("7");
  pool["spec"]["routing"] = {{"strategy", strategy}};
  pool["spec"]["energy"] = {{"profiles", std::move(profiles)}};
  return pool;
}

routing::Load Running(double running) {
  return {.running = running, .tokens_per_second = 10, .available = true};
}

class SummaryScrapePools final : public ScrapePools {
 public:
  void SetPool(ScrapePool /*pool*/) override {}
  void RemovePool(const std::string& /*key*/) override {}
  std::optional<ScrapeSummary> Summary(const std::string& key) const override {
    return key == kKey ? summary : std::nullopt;
  }
  std::optional<ScrapeSummary> summary;
};

// The pool's zones as the reconcile asked for them; the static map's readings unless the test sets
// others.
class FakeGrid final : public carbon::GridSource {
 public:
  carbon::ZoneReadings Track(const std::string& pool_key, const api::InferencePool& pool,
                             std::span<const std::string> zones) override {
    tracked[pool_key].assign(zones.begin(), zones.end());
    return readings ? *readings : carbon::StaticReadings(pool.spec.carbon, zones, {});
  }
  void Forget(const std::string& pool_key) override { tracked.erase(pool_key); }

  std::optional<carbon::ZoneReadings> readings;
  std::map<std::string, std::vector<std::string>> tracked;
};

class PoolPublishTest : public ::testing::Test {
 protected:
  void SetUp() override { reconciler_.SetLeading(true); }

  // Reconciles; a write is seen back by the informer at once (the pool object `pool_`).
  kube::ReconcileResult Step() {
    const std::size_t before = client_.writes.size();
    const auto result = reconciler_.Reconcile(kKey);
    EXPECT_TRUE(result.ok()) << result.error().ToString();
    if (client_.writes.size() > before) {
      json seen = pool_;
      seen["metadata"]["resourceVersion"] = std::to_string(client_.version);
      seen["status"] = client_.writes.back().at("status");
      store_.PutPool(seen);
    }
    return result.ok() ? *result : kube::ReconcileResult{};
  }

  void Start(json pool, const std::vector<std::string>& pods) {
    pool_ = std::move(pool);
    store_.PutPool(pool_);
    int ip = 1;
    for (const auto& pod : pods) store_.AddPod(Pod(pod, "10.0.0." + std::to_string(ip++)));
    Step();
    ASSERT_EQ(client_.writes.size(), 1U);  // the first table: published at once
  }

  void Observe(const std::string& pod, const routing::Load& load) {
    ASSERT_TRUE(directory_.Find(kKey)->ObserveLoad(routing::WorkerKeyOf("prod/" + pod), load,
                                                   clock_.Now()));
  }

  api::RoutingTable Table() const {
    return *api::ParseStatus(client_.writes.back().at("status")).routing;
  }
  static std::int32_t WeightOf(const api::RoutingTable& table, const std::string& pod) {
    for (const auto& w : table.workers) {
      if (w.pod == pod) return w.weight;
    }
    return -1;
  }
  api::Condition Condition(std::string_view type) const {
    const auto status = api::ParseStatus(client_.writes.back().at("status"));
    const api::Condition* c = api::FindCondition(status.conditions, type);
    return c == nullptr ? api::Condition{} : *c;
  }

  ManualClock clock_;
  FakeStore store_;
  FakeClient client_;
  FakeEvents events_;
  routing::SessionBudget budget_{100'000};
  routing::PrefixBudget prefix_budget_{4'000'000};
  routing::PoolDirectory directory_{budget_, prefix_budget_};
  SummaryScrapePools scrape_;
  FakeGrid grid_;
  PoolReconciler reconciler_{store_,
                             client_,
                             events_,
                             {.min_publish_interval = milliseconds(1000),
                              .directory = &directory_,
                              .scrape = &scrape_,
                              .grid = &grid_},
                             clock_,
                             nullptr};
  json pool_;
};

TEST_F(PoolPublishTest, LeastBusyWeighsASaturatedWorkerZero) {
  Start(Pool("LeastBusy"), {"chat-a", "chat-b"});
  EXPECT_EQ(WeightOf(Table(), "chat-a"), 1000);  // no load yet: equal weights
  EXPECT_EQ(WeightOf(Table(), "chat-b"), 1000);
  Observe("chat-a", Running(10));
  Observe("chat-b", Running(300));  // past the default 256 concurrent sequences
  clock_.Advance(seconds(10));
  Step();
  ASSERT_EQ(client_.writes.size(), 2U);
  EXPECT_EQ(WeightOf(Table(), "chat-a"), 1000);
  EXPECT_EQ(WeightOf(Table(), "chat-b"), 0);
  EXPECT_EQ(Table().generation, 2);
}

TEST_F(PoolPublishTest, ASmallMoveHoldsALargeOnePublishesAfterTheInterval) {
  Start(Pool("JouleWeighted"), {"chat-a", "chat-b"});
  Observe("chat-a", Running(10));
  Observe("chat-b", Running(200));
  // Published at t0: a large move waits for publishIntervalSeconds (10 s), asking to come back.
  clock_.Advance(seconds(2));
  const auto early = Step();
  EXPECT_EQ(client_.writes.size(), 1U);
  EXPECT_GT(early.requeue_after, milliseconds(0));
  EXPECT_LE(early.requeue_after, seconds(8));
  clock_.Advance(seconds(8));
  Step();
  ASSERT_EQ(client_.writes.size(), 2U);
  const auto table = Table();
  EXPECT_EQ(WeightOf(table, "chat-a"), 1000);
  EXPECT_LT(WeightOf(table, "chat-b"), 500);  // busier: less headroom, a lower weight
  EXPECT_GT(WeightOf(table, "chat-b"), 0);

  // A move within publishThreshold (50) is never published, however long it stands.
  Observe("chat-b", Running(205));
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(seconds(10));
    Step();
  }
  EXPECT_EQ(client_.writes.size(), 2U);
  EXPECT_EQ(Table().generation, table.generation);
}

TEST_F(PoolPublishTest, NothingIsRewrittenWhileNothingChanges) {
  scrape_.summary = ScrapeSummary{.ok = 2, .total = 2, .rounds = 1, .scrapes = 2};
  Start(Pool("JouleWeighted"), {"chat-a", "chat-b"});
  Observe("chat-a", Running(10));
  Observe("chat-b", Running(20));
  for (int i = 0; i < 8; ++i) {
    clock_.Advance(seconds(5));
    const auto r = Step();
    EXPECT_GT(r.requeue_after, milliseconds(0));  // weighed again within the metrics interval
    EXPECT_LE(r.requeue_after, seconds(5));
  }
  EXPECT_EQ(client_.writes.size(), 1U);
  EXPECT_EQ(Condition("MetricsAvailable").reason, "AllAvailable");
}

TEST_F(PoolPublishTest, AJoiningWorkerIsPublishedWithinASecondAndWeighsZeroUntilThen) {
  Start(Pool("JouleWeighted"), {"chat-a", "chat-b"});
  store_.AddPod(Pod("chat-c", "10.0.0.3"));
  const auto r = Step();  // inside the second after the first table
  EXPECT_EQ(client_.writes.size(), 1U);
  EXPECT_GT(r.requeue_after, milliseconds(0));
  EXPECT_LE(r.requeue_after, seconds(1));
  const auto snapshot = directory_.Find(kKey)->snapshot();
  ASSERT_EQ(snapshot->size(), 3U);
  EXPECT_EQ(snapshot->worker(2).pod, "prod/chat-c");
  EXPECT_EQ(snapshot->worker(2).weight, 0);  // not yet listed: no new placement
  EXPECT_EQ(snapshot->worker(0).weight, 1000);

  clock_.Advance(r.requeue_after);
  Step();
  ASSERT_EQ(client_.writes.size(), 2U);
  EXPECT_EQ(Table().workers.size(), 3U);
  EXPECT_EQ(WeightOf(Table(), "chat-c"), 1000);
  Step();  // the informer's view of the write: the snapshot takes its weights
  EXPECT_EQ(directory_.Find(kKey)->snapshot()->worker(2).weight, 1000);
}

TEST_F(PoolPublishTest, AFollowersSnapshotTakesThePublishedWeights) {
  api::InferencePoolStatus status;
  status.routing =
      api::RoutingTable{.strategy = "JouleWeighted",
                        .generation = 4,
                        .workers = {{.pod = "chat-a", .address = "10.0.0.1:8000", .weight = 1000},
                                    {.pod = "chat-b", .address = "10.0.0.2:8000", .weight = 300},
                                    {.pod = "chat-d", .address = "10.0.0.9:8000", .weight = 700}}};
  json pool = Pool("JouleWeighted");
  pool["status"] = api::ToJson(status);
  store_.PutPool(pool);
  store_.AddPod(Pod("chat-a", "10.0.0.1"));
  store_.AddPod(Pod("chat-b", "10.0.0.2"));
  store_.AddPod(Pod("chat-c", "10.0.0.3"));
  reconciler_.SetLeading(false);
  ASSERT_TRUE(reconciler_.Reconcile(kKey).ok());
  EXPECT_TRUE(client_.writes.empty());
  const auto snapshot = directory_.Find(kKey)->snapshot();
  ASSERT_EQ(snapshot->size(), 3U);  // chat-d is listed but not here: absent
  EXPECT_EQ(snapshot->worker(0).weight, 1000);
  EXPECT_EQ(snapshot->worker(1).weight, 300);
  EXPECT_EQ(snapshot->worker(2).pod, "prod/chat-c");
  EXPECT_EQ(snapshot->worker(2).weight, 0);  // here but not listed yet
  EXPECT_EQ(snapshot->generation(), 5);      // the table the leader will publish next
}

TEST_F(PoolPublishTest, MetricsAvailableFollowsTheScrapeSummary) {
  Start(Pool("LeastBusy"), {"chat-a", "chat-b"});
  EXPECT_EQ(Condition("MetricsAvailable").reason, "NotScraped");  // no round finished yet
  scrape_.summary = ScrapeSummary{.ok = 1, .total = 2, .rounds = 1, .scrapes = 2};
  clock_.Advance(seconds(1));
  Step();
  EXPECT_EQ(Condition("MetricsAvailable").status, "True");
  EXPECT_EQ(Condition("MetricsAvailable").reason, "SomeUnavailable");
  scrape_.summary = ScrapeSummary{.ok = 0, .total = 2, .rounds = 2, .scrapes = 4};
  clock_.Advance(seconds(1));
  Step();
  EXPECT_EQ(Condition("MetricsAvailable").status, "False");
  const std::size_t writes = client_.writes.size();
  scrape_.summary = ScrapeSummary{.ok = 0, .total = 2, .rounds = 3, .scrapes = 6};
  clock_.Advance(seconds(1));
  Step();
  EXPECT_EQ(client_.writes.size(), writes);  // the counts are not in the status
  // Back, but one failed lately: SomeUnavailable until it has been good kSteadyScrapes in a row.
  scrape_.summary = ScrapeSummary{.ok = 2, .recovering = 1, .total = 2, .rounds = 4, .scrapes = 8};
  clock_.Advance(seconds(1));
  Step();
  EXPECT_EQ(Condition("MetricsAvailable").reason, "SomeUnavailable");
  scrape_.summary = ScrapeSummary{.ok = 2, .total = 2, .rounds = 5, .scrapes = 10};
  clock_.Advance(seconds(1));
  Step();
  EXPECT_EQ(Condition("MetricsAvailable").reason, "AllAvailable");
}

TEST_F(PoolPublishTest, AnEnergyStrategyNamesTheAcceleratorsWithoutAProfile) {
  Start(Pool("JouleWeighted", json::array()), {"chat-a"});
  EXPECT_EQ(Condition("Ready").status, "True");
  EXPECT_EQ(Condition("Ready").reason, "EnergyProfileMissing");
  EXPECT_THAT(Condition("Ready").message, HasSubstr("accelerator CPU"));
}

TEST_F(PoolPublishTest, OtherStrategiesNeedNoProfile) {
  Start(Pool("LeastBusy", json::array()), {"chat-a"});
  EXPECT_EQ(Condition("Ready").reason, "WorkersReady");
}

// The reconcile reads the pool's share of the prefix budget from its index in the directory: a
// maxBlocks over it is said in Ready; once another pool's index goes, the share grows back.
TEST_F(PoolPublishTest, APrefixIndexOverItsShareOfTheBudgetIsSaidInReady) {
  json pool = Pool("LeastBusy", json::array());
  pool["spec"]["routing"]["prefixAffinity"] = {{"enabled", true}, {"maxBlocks", 3'000'000}};
  std::optional<routing::PrefixIndex> other(
      std::in_place, routing::PrefixIndex::Options{.max_blocks = 100}, prefix_budget_);
  Start(pool, {"chat-a"});
  EXPECT_EQ(Condition("Ready").reason, "PrefixIndexClamped");
  EXPECT_THAT(Condition("Ready").message, HasSubstr("2000000 blocks"));
  EXPECT_THAT(Condition("Ready").message, HasSubstr("maxBlocks: 3000000"));
  other.reset();
  clock_.Advance(seconds(1));
  Step();
  EXPECT_EQ(Condition("Ready").reason, "WorkersReady");
}

// CarbonWeighted weighs by what the pool's grid source gives its workers' zones now (not by the
// spec alone), and the condition says what it gave; a deleted pool is forgotten by the source.
TEST_F(PoolPublishTest, CarbonWeightedFollowsTheGridSourceAndItsConditionSaysWhatItGave) {
  store_.PutNode({.name = "node-a", .labels = {{"topology.kubernetes.io/region", "eastus"}}});
  store_.PutNode({.name = "node-b", .labels = {{"topology.kubernetes.io/region", "westus"}}});
  json pool = Pool("CarbonWeighted");
  pool["spec"]["carbon"] = {{"configMapRef", {{"name", "grid"}}}};
  pool_ = pool;
  store_.PutPool(pool_);
  store_.AddPod(Pod("chat-a", "10.0.0.1"));
  store_.AddPod(Pod("chat-b", "10.0.0.2", true, "node-b"));
  grid_.readings = carbon::ZoneReadings{.pending = {"eastus", "westus"}};
  Step();
  EXPECT_EQ(grid_.tracked.at(kKey), (std::vector<std::string>{"eastus", "westus"}));
  EXPECT_EQ(Condition("CarbonIntensityAvailable").status, "Unknown");
  EXPECT_EQ(WeightOf(Table(), "chat-a"), WeightOf(Table(), "chat-b"));  // nothing known: equal

  Observe("chat-a", Running(0));
  Observe("chat-b", Running(0));
  grid_.readings = carbon::ZoneReadings{.intensity = {{"eastus", 100}, {"westus", 400}}};
  clock_.Advance(seconds(10));
  Step();
  EXPECT_EQ(WeightOf(Table(), "chat-a"), 1000);
  EXPECT_EQ(WeightOf(Table(), "chat-b"), 250);
  EXPECT_EQ(Condition("CarbonIntensityAvailable").reason, "AllZonesKnown");

  grid_.readings = carbon::ZoneReadings{
      .intensity = {{"eastus", 100}},
      .errors = {{.zone = "westus", .error = "ConfigMap prod/grid: no key \"westus\""}}};
  clock_.Advance(seconds(10));
  Step();
  EXPECT_EQ(Condition("CarbonIntensityAvailable").status, "False");
  EXPECT_THAT(Condition("CarbonIntensityAvailable").message,
              HasSubstr("zone westus: ConfigMap prod/grid: no key \"westus\""));
  EXPECT_EQ(WeightOf(Table(), "chat-b"), 1000);  // unknown: the median of the known zones

  store_.DeletePool(kKey);
  Step();
  EXPECT_EQ(grid_.tracked.count(kKey), 0U);
}

}  // namespace
}  // namespace eoc::controller
