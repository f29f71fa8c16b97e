#include "controller/routing_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/defaults.h"
#include "controller/pool_status.h"
#include "controller/workers.h"

namespace eoc::controller {
namespace {

using routing::PoolDirectory;
using routing::PrefixBudget;
using routing::SessionBudget;
using routing::Worker;

const auto kNow = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);

api::InferencePool Pool() {
  api::InferencePool pool;
  pool.ns = "prod";
  pool.name = "chat";
  pool.spec = api::DefaultSpec();
  pool.spec.target_port = 8000;
  return pool;
}

Worker W(const std::string& pod) {
  return {.key = routing::WorkerKeyOf("prod/" + pod),
          .pod = "prod/" + pod,
          .address = pod + ":8000",
          .weight = kEqualWeight};
}

TEST(RoutingOptionsTest, MapsEveryFieldOfTheRoutingSpec) {
  api::InferencePoolSpec spec = api::DefaultSpec();
  api::RoutingSpec& r = spec.routing;
  r.session_affinity = {.enabled = false, .ttl_seconds = 60, .max_sessions = 10};
  r.prefix_affinity = {
      .enabled = true, .block_size_tokens = 32, .max_blocks = 7, .load_margin = 0.5};
  r.admission = {.kv_block_budget = false, .max_queue = 3, .max_request_tokens = 4096};
  spec.metrics.interval_seconds = 15;
  r.default_prompt_tokens = 100;
  r.default_expected_tokens = 20;
  const auto o = RoutingOptions(spec);
  EXPECT_FALSE(o.session_affinity);
  EXPECT_EQ(o.sessions.max_sessions, 10U);
  EXPECT_EQ(o.sessions.ttl, std::chrono::seconds(60));
  EXPECT_TRUE(o.prefix_affinity);
  EXPECT_EQ(o.prefix.max_blocks, 7U);
  EXPECT_EQ(o.block_size_tokens, 32);
  EXPECT_EQ(o.prefix_load_margin, 0.5);
  EXPECT_FALSE(o.kv_block_budget);
  EXPECT_EQ(o.max_queue, 3U);
  EXPECT_EQ(o.max_request_tokens, 4096);
  EXPECT_EQ(o.hold, std::chrono::seconds(15)) << "one scrape interval";
  EXPECT_EQ(o.default_prompt_tokens, 100);
  EXPECT_EQ(o.default_expected_tokens, 20);
  EXPECT_FALSE(o.wait_without_workers);  // no autoscaler: an empty pool cannot get a worker
  spec.autoscaling.enabled = true;
  spec.autoscaling.max_replicas = 0;  // may never run a worker
  EXPECT_FALSE(RoutingOptions(spec).wait_without_workers);
  spec.autoscaling.max_replicas = 1;
  EXPECT_TRUE(RoutingOptions(spec).wait_without_workers);
  spec.autoscaling.mode = api::ScalingMode::kRecommend;  // decides, never scales
  EXPECT_FALSE(RoutingOptions(spec).wait_without_workers);
}

TEST(RoutingOptionsTest, ThePickEndpointsSettingsComeFromTheSpec) {
  api::InferencePoolSpec spec = api::DefaultSpec();
  spec.models = {"llama-3-8b", "qwen"};
  spec.routing.session_affinity.header = "x-conversation";
  spec.routing.admission.queue_timeout_seconds = 2.5;
  EXPECT_EQ(RoutingOptions(spec).models, spec.models);
  const server::PoolHttpSettings settings = PickSettings(spec.routing);
  EXPECT_EQ(settings.session_header, "x-conversation");
  EXPECT_EQ(settings.queue_timeout, std::chrono::milliseconds(2500));
}

TEST(RoutingOptionsTest, TheDefaultSpecGivesTheEnginesAndTheEndpointsDefaults) {
  EXPECT_EQ(RoutingOptions(api::DefaultSpec()), routing::PoolState::Options{});
  EXPECT_EQ(PickSettings(api::DefaultSpec().routing), server::PoolHttpSettings{});
}

// A directory with the pool "prod/chat" of workers a and b in it.
class UpdatePoolDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UpdatePoolDirectory(directory_, &picks_, pool_, workers_, kNow);
    state_ = directory_.Find("prod/chat");
    ASSERT_NE(state_, nullptr);
    // Nothing published yet: no snapshot, so picks answer 503 until the leader's first table.
    ASSERT_EQ(state_->snapshot(), nullptr);
    EXPECT_EQ(state_->TryPick({}, 1, kNow).status, routing::PickStatus::kNotPublished);
    pool_.status.routing = BuildRoutingTable(pool_.spec, workers_, std::nullopt);
    UpdatePoolDirectory(directory_, &picks_, pool_, workers_, kNow);
    ASSERT_NE(state_->snapshot(), nullptr);
  }

  SessionBudget budget_;
  PrefixBudget prefix_budget_;
  PoolDirectory directory_{budget_, prefix_budget_};
  server::PickPools picks_;
  api::InferencePool pool_ = Pool();
  const std::vector<Worker> workers_ = {W("a"), W("b")};
  std::shared_ptr<routing::PoolState> state_;
};

TEST_F(UpdatePoolDirectoryTest, TheSnapshotIsTheTablesListAndGeneration) {
  const auto snapshot = state_->snapshot();
  ASSERT_NE(snapshot, nullptr);
  const api::RoutingTable table = BuildRoutingTable(pool_.spec, workers_, std::nullopt);
  EXPECT_EQ(snapshot->generation(), table.generation);
  EXPECT_EQ(StrategyName(snapshot->strategy()), table.strategy);
  ASSERT_EQ(snapshot->size(), table.workers.size());
  for (std::size_t i = 0; i < snapshot->size(); ++i) {
    EXPECT_EQ(PodName(snapshot->worker(i)), table.workers[i].pod);
    EXPECT_EQ(snapshot->worker(i).address, table.workers[i].address);
    EXPECT_EQ(snapshot->worker(i).weight, table.workers[i].weight);
  }

  // The same list against that status keeps the generation, and the snapshot.
  UpdatePoolDirectory(directory_, &picks_, pool_, workers_, kNow);
  EXPECT_EQ(state_->snapshot(), snapshot);

  // A member more: the next generation, as the table will say.
  UpdatePoolDirectory(directory_, &picks_, pool_, {W("a"), W("b"), W("c")}, kNow);
  EXPECT_EQ(state_->snapshot()->generation(), table.generation + 1);
  EXPECT_EQ(state_->snapshot()->size(), 3U);
  EXPECT_EQ(directory_.Find("prod/chat"), state_);  // the same state, updated in place
}

TEST_F(UpdatePoolDirectoryTest, ThePickEndpointsTableHoldsTheStateAndTheSpecsSettings) {
  auto entry = picks_.Find("prod/chat");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->state, state_) << "the directory's state: one lookup finds both";
  EXPECT_EQ(entry->http, server::PoolHttpSettings{});

  pool_.spec.routing.session_affinity.header = "x-conversation";
  pool_.spec.routing.admission.queue_timeout_seconds = 3;
  UpdatePoolDirectory(directory_, &picks_, pool_, workers_, kNow);
  entry = picks_.Find("prod/chat");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->state, state_);
  EXPECT_EQ(entry->http.session_header, "x-conversation");
  EXPECT_EQ(entry->http.queue_timeout, std::chrono::seconds(3));
  EXPECT_EQ(picks_.Size(), 1U);
}

TEST_F(UpdatePoolDirectoryTest, AStrategyChangeIsANewSnapshotAndSessionsStay) {
  const routing::PickOutcome first =
      state_->TryPick({.session = routing::SessionHashOf("user-1")}, 7, kNow);
  ASSERT_TRUE(first.picked());

  pool_.spec.routing.strategy = Strategy::kLeastBusy;
  pool_.spec.routing.session_affinity.ttl_seconds = 60;
  UpdatePoolDirectory(directory_, &picks_, pool_, workers_, kNow);
  EXPECT_EQ(state_->snapshot()->strategy(), Strategy::kLeastBusy);
  EXPECT_EQ(state_->options().sessions.ttl, std::chrono::seconds(60));
  const routing::PickOutcome again =
      state_->TryPick({.session = routing::SessionHashOf("user-1")}, 99, kNow);
  ASSERT_TRUE(again.picked());
  EXPECT_EQ(again.reason, routing::PickReason::kSession);
  EXPECT_EQ(again.worker().key, first.worker().key);
}

TEST_F(UpdatePoolDirectoryTest, TheSnapshotHoldsOnlyTheWorkersTheTableLists) {
  std::vector<Worker> workers;
  workers.reserve(api::kMaxRoutingTableWorkers + 3);
  for (std::size_t i = 0; i < api::kMaxRoutingTableWorkers + 3; ++i) {
    workers.push_back(W("pod-" + std::to_string(100000 + i)));
  }
  UpdatePoolDirectory(directory_, &picks_, pool_, workers, kNow);
  EXPECT_EQ(state_->snapshot()->size(), api::kMaxRoutingTableWorkers);
}

TEST_F(UpdatePoolDirectoryTest, WeightsAndDrainingComeFromThePublishedTable) {
  EXPECT_EQ(state_->snapshot()->worker(0).weight, routing::kMaxWeight);  // as first published
  api::RoutingTable table = BuildRoutingTable(pool_.spec, workers_, std::nullopt);
  table.workers[1].weight = 250;     // b, as the leader weighed it
  table.workers[0].draining = true;  // a, drained by the autoscaler's scale-in
  table.workers.push_back({.pod = "z", .address = "z:8000", .weight = 900});  // not seen here
  pool_.status.routing = table;
  UpdatePoolDirectory(directory_, &picks_, pool_, {W("a"), W("b"), W("c")}, kNow);
  const auto snapshot = state_->snapshot();
  ASSERT_EQ(snapshot->size(), 3U);  // z absent: membership is local
  EXPECT_EQ(snapshot->worker(0).weight, 1000);
  EXPECT_TRUE(snapshot->worker(0).draining);
  EXPECT_FALSE(snapshot->TakesNewWork(0));
  EXPECT_EQ(snapshot->worker(1).weight, 250);
  EXPECT_FALSE(snapshot->worker(1).draining);
  EXPECT_EQ(PodName(snapshot->worker(2)), "c");
  EXPECT_EQ(snapshot->worker(2).weight, 0);  // takes no new placement until listed
  EXPECT_FALSE(snapshot->TakesNewWork(2));
}

TEST(TableWorkersTest, MapsThePublishedTableOntoTheEnginesWorkers) {
  api::InferencePool pool = Pool();
  EXPECT_TRUE(TableWorkers(pool).empty());
  pool.status.routing = api::RoutingTable{
      .strategy = "LeastBusy",
      .generation = 3,
      .workers = {
          {.pod = "a", .address = "a:8000", .weight = 7, .draining = true, .models = {"m"}}}};
  const auto workers = TableWorkers(pool);
  ASSERT_EQ(workers.size(), 1U);
  EXPECT_EQ(workers[0].pod, "prod/a");
  EXPECT_EQ(workers[0].key, routing::WorkerKeyOf("prod/a"));
  EXPECT_EQ(workers[0].weight, 7);
  EXPECT_TRUE(workers[0].draining);
  EXPECT_EQ(workers[0].capability.models, std::vector<std::string>{"m"});
}

TEST(DecideTablePublishTest, ComparesWithThePublishedTableUnderTheSpecsRules) {
  api::InferencePool pool = Pool();
  pool.spec.routing.publish_threshold = 50;
  pool.spec.routing.publish_interval_seconds = 10;
  std::vector<Worker> candidate = {W("a"), W("b")};
  const auto at = kNow - std::chrono::seconds(3);
  EXPECT_EQ(DecideTablePublish(pool, candidate, at, kNow).reason, routing::PublishReason::kFirst);
  pool.status.routing = BuildRoutingTable(pool.spec, candidate, std::nullopt);
  EXPECT_EQ(DecideTablePublish(pool, candidate, at, kNow).verdict,
            routing::PublishVerdict::kNothing);
  candidate[1].weight = 960;  // within the threshold
  EXPECT_EQ(DecideTablePublish(pool, candidate, at, kNow).verdict,
            routing::PublishVerdict::kNothing);
  candidate[1].weight = 900;  // past it: at the interval
  const auto later = DecideTablePublish(pool, candidate, at, kNow);
  EXPECT_EQ(later.verdict, routing::PublishVerdict::kNotYet);
  EXPECT_EQ(later.earliest, at + std::chrono::seconds(10));
  pool.status.routing->strategy = "NoSuchStrategy";  // unreadable: as if none was published
  EXPECT_EQ(DecideTablePublish(pool, candidate, at, kNow).reason, routing::PublishReason::kFirst);
}

}  // namespace
}  // namespace eoc::controller
