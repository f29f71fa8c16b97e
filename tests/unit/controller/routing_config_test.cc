#include "controller/routing_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/defaults.h"
#include "controller/pool_status.h"
#include "controller/workers.h"

namespace eoc::controller {
namespace {

using routing::PoolDirectory;
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
  r.admission = {.kv_block_budget = false, .max_queue = 3};
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
  EXPECT_EQ(o.default_prompt_tokens, 100);
  EXPECT_EQ(o.default_expected_tokens, 20);
  EXPECT_FALSE(o.wait_without_workers);  // no autoscaler: an empty pool cannot get a worker
  spec.autoscaling.enabled = true;
  EXPECT_TRUE(RoutingOptions(spec).wait_without_workers);
  spec.autoscaling.mode = api::ScalingMode::kRecommend;  // decides, never scales
  EXPECT_FALSE(RoutingOptions(spec).wait_without_workers);
}

TEST(RoutingOptionsTest, TheDefaultSpecGivesTheEnginesDefaults) {
  EXPECT_EQ(RoutingOptions(api::DefaultSpec()), routing::PoolState::Options{});
}

// A directory with the pool "prod/chat" of workers a and b in it.
class UpdatePoolDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UpdatePoolDirectory(directory_, pool_, workers_, kNow);
    state_ = directory_.Find("prod/chat");
    ASSERT_NE(state_, nullptr);
  }

  SessionBudget budget_;
  PoolDirectory directory_{budget_};
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

  // Published: the same list against that status keeps the generation, and the snapshot.
  pool_.status.routing = table;
  UpdatePoolDirectory(directory_, pool_, workers_, kNow);
  EXPECT_EQ(state_->snapshot(), snapshot);

  // A member more: the next generation, as the table will say.
  UpdatePoolDirectory(directory_, pool_, {W("a"), W("b"), W("c")}, kNow);
  EXPECT_EQ(state_->snapshot()->generation(), table.generation + 1);
  EXPECT_EQ(state_->snapshot()->size(), 3U);
  EXPECT_EQ(directory_.Find("prod/chat"), state_);  // the same state, updated in place
}

TEST_F(UpdatePoolDirectoryTest, AStrategyChangeIsANewSnapshotAndSessionsStay) {
  const routing::PickOutcome first =
      state_->TryPick({.session = routing::SessionHashOf("user-1")}, 7, kNow);
  ASSERT_TRUE(first.picked());

  pool_.spec.routing.strategy = Strategy::kLeastBusy;
  pool_.spec.routing.session_affinity.ttl_seconds = 60;
  UpdatePoolDirectory(directory_, pool_, workers_, kNow);
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
  for (std::size_t i = 0; i < api::kMaxRoutingTableWorkers + 3; ++i) {
    workers.push_back(W("pod-" + std::to_string(100000 + i)));
  }
  UpdatePoolDirectory(directory_, pool_, workers, kNow);
  EXPECT_EQ(state_->snapshot()->size(), api::kMaxRoutingTableWorkers);
}

}  // namespace
}  // namespace eoc::controller
