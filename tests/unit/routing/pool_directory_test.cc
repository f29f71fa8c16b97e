#include "routing/pool_directory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pool_state_fixture.h"
#include "workers.h"

namespace eoc::routing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Workers;

const auto kNow = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);

TEST(PoolDirectoryTest, FindsWhatTheControllerConfigured) {
  SessionBudget budget;
  PrefixBudget prefix_budget;
  PoolDirectory pools(budget, prefix_budget);
  EXPECT_EQ(pools.Find("prod/chat"), nullptr);
  const auto state = pools.Configure("prod/chat", {}, kNow);
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(pools.Find("prod/chat"), state);
  EXPECT_EQ(pools.Find("prod/other"), nullptr);
  // Not yet published: the pool is known, its picks wait for a table.
  EXPECT_EQ(state->TryPick({}, 1, kNow).status, PickStatus::kNotPublished);
  state->SetSnapshot(PoolSnapshot::Build(Workers(3), 1, Strategy::kRoundRobin), kNow);
  EXPECT_TRUE(pools.Find("prod/chat")->TryPick({}, 1, kNow).picked());
  EXPECT_EQ(pools.Find("prod/chat")->snapshot()->generation(), 1);
}

TEST(PoolDirectoryTest, ConfiguringAgainReconfiguresTheSameStateInPlace) {
  SessionBudget budget;
  PrefixBudget prefix_budget;
  PoolDirectory pools(budget, prefix_budget);
  const auto state = pools.Configure("prod/chat", {}, kNow);
  state->SetSnapshot(PoolSnapshot::Build(Workers(3), 1, Strategy::kJouleWeighted), kNow);
  ASSERT_TRUE(state->TryPick({.session = SessionHashOf("alice")}, 1, kNow).picked());
  PoolState::Options options;
  options.max_queue = 5;
  EXPECT_EQ(pools.Configure("prod/chat", options, kNow), state);
  EXPECT_EQ(state->options().max_queue, 5U);
  EXPECT_EQ(state->sessions()->Size(), 1U);  // kept
  EXPECT_NE(state->snapshot(), nullptr);     // kept
  EXPECT_EQ(pools.Size(), 1U);
}

TEST(PoolDirectoryTest, RemoveTakesThePoolOutAndAnswersItsWaitingPicks) {
  SessionBudget budget;
  PrefixBudget prefix_budget;
  PoolDirectory pools(budget, prefix_budget);
  const auto state = pools.Configure("prod/chat", {}, kNow);
  state->SetSnapshot(PoolSnapshot::Build(Workers(1), 1, Strategy::kJouleWeighted), kNow);
  state->ObserveLoad(
      testing::KeyOf(0),
      {.kv_blocks_total = 100, .kv_blocks_free = 0, .block_size = 16, .available = true}, kNow);
  std::optional<PickStatus> answer;
  ASSERT_EQ(testing::PickOrWait(*state, kNow, answer).status, PickStatus::kQueued);
  EXPECT_TRUE(pools.Remove("prod/chat"));
  EXPECT_EQ(pools.Find("prod/chat"), nullptr);
  EXPECT_EQ(answer, PickStatus::kUnavailable);
  EXPECT_FALSE(pools.Remove("prod/chat"));
  EXPECT_EQ(pools.Size(), 0U);
}

TEST(PoolDirectoryTest, ARemovedPoolGivesItsBudgetsBack) {
  SessionBudget budget(100);
  PrefixBudget prefix_budget(100);
  PoolDirectory pools(budget, prefix_budget);
  const auto state = pools.Configure("prod/chat", {}, kNow);
  state->SetSnapshot(PoolSnapshot::Build(Workers(2), 1, Strategy::kRoundRobin), kNow);
  const std::vector<BlockHash> prompt{1, 2, 3};
  ASSERT_TRUE(
      state->TryPick({.session = SessionHashOf("alice"), .prefix = prompt}, 1, kNow).picked());
  EXPECT_EQ(budget.Used(), 1U);
  EXPECT_EQ(prefix_budget.Used(), 3U);
  EXPECT_EQ(prefix_budget.Registered(), 1U);
  pools.Remove("prod/chat");
  // At once, though this thread's cache still holds the state.
  EXPECT_EQ(budget.Used(), 0U);
  EXPECT_EQ(prefix_budget.Used(), 0U);
  EXPECT_EQ(prefix_budget.Registered(), 0U);
}

TEST(PoolDirectoryTest, KeysAreNamespaceSlashNameAndBadOnesAreRefusedByName) {
  SessionBudget budget;
  PrefixBudget prefix_budget;
  PoolDirectory pools(budget, prefix_budget);
  for (const char* bad : {"", "chat", "/chat", "prod/", "prod/chat/x"}) {
    try {
      pools.Configure(bad, {}, kNow);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("namespace/name")) << bad;
    }
  }
  EXPECT_THROW(pools.Configure("prod/" + std::string(PoolDirectory::kMaxKeyBytes, 'a'), {}, kNow),
               std::invalid_argument);
  pools.Configure("b/x", {}, kNow);
  pools.Configure("a/y", {}, kNow);
  EXPECT_THAT(pools.Keys(), ElementsAre("a/y", "b/x"));
}

TEST(PoolDirectoryTest, HoldsAtMostItsMaxPools) {
  SessionBudget budget;
  PrefixBudget prefix_budget;
  PoolDirectory pools(budget, prefix_budget, /*max_pools=*/8);
  for (int i = 0; i < 8; ++i) pools.Configure("ns/p" + std::to_string(i), {}, kNow);
  try {
    pools.Configure("ns/one-more", {}, kNow);
    ADD_FAILURE() << "a ninth pool was added";
  } catch (const std::length_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("at most 8 pools"));
  }
  EXPECT_NE(pools.Configure("ns/p0", {}, kNow), nullptr);  // a known pool still reconfigures
  EXPECT_EQ(pools.Size(), 8U);
  EXPECT_EQ(pools.Find("ns/one-more"), nullptr);
}

TEST(PoolDirectoryTest, AStateFoundStaysValidAfterItsPoolIsRemoved) {
  SessionBudget budget;
  PrefixBudget prefix_budget;
  PoolDirectory pools(budget, prefix_budget);
  pools.Configure("prod/chat", {}, kNow)
      ->SetSnapshot(PoolSnapshot::Build(Workers(2), 1, Strategy::kRoundRobin), kNow);
  const auto found = pools.Find("prod/chat");
  pools.Remove("prod/chat");
  EXPECT_TRUE(found->TryPick({}, 1, kNow).picked());  // a pick already under way completes
}

TEST(PoolDirectoryTest, ReadersOnManyThreadsSeeEveryChangeWhileTheControllerWrites) {
  SessionBudget budget;
  PrefixBudget prefix_budget;
  PoolDirectory pools(budget, prefix_budget);
  pools.Configure("prod/stay", {}, kNow)
      ->SetSnapshot(PoolSnapshot::Build(Workers(2), 1, Strategy::kRoundRobin), kNow);
  std::atomic<bool> stop{false};
  std::atomic<int> missing{0};
  std::vector<std::thread> readers;
  readers.reserve(3);
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const auto stay = pools.Find("prod/stay");
        if (stay == nullptr || !stay->TryPick({}, 1, kNow).picked()) ++missing;
        (void)pools.Find("prod/churn");  // comes and goes
      }
    });
  }
  for (int i = 0; i < 2000; ++i) {
    pools.Configure("prod/churn", {}, kNow);
    pools.Remove("prod/churn");
  }
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(missing.load(), 0);
  EXPECT_EQ(pools.Find("prod/churn"), nullptr);  // a reader's cache sees the last change
}

}  // namespace
}  // namespace eoc::routing
