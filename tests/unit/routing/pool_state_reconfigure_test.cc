// PoolState::Reconfigure: a changed spec.routing applied in place, and what survives it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pool_state_fixture.h"
#include "routing/prefix_hash.h"

namespace eoc::routing::testing {
namespace {

class ReconfigureTest : public PoolStateTest {
 protected:
  // Binds `n` sessions "s0".."s(n-1)", in that order (so "s0" is the least recently used).
  void BindSessions(int n) {
    for (int i = 0; i < n; ++i) ASSERT_TRUE(PickSession("s" + std::to_string(i)).picked());
  }
  bool Bound(const std::string& session) const {
    return state_->sessions()->Peek(SessionHashOf(session), now_).has_value();
  }
  void Reconfigure(const PoolState::Options& options) { state_->Reconfigure(options, now_); }
};

TEST_F(ReconfigureTest, SessionsSurviveAStrategyChange) {
  Start(Workers(8), Strategy::kJouleWeighted);
  const PickOutcome first = PickSession("alice");
  ASSERT_TRUE(first.picked());
  Publish(Workers(8), Strategy::kRoundRobin);  // a strategy comes with its snapshot
  const PickOutcome again = PickSession("alice");
  EXPECT_EQ(again.reason, PickReason::kSession);
  EXPECT_EQ(Where(again), Where(first));
  EXPECT_EQ(again.snapshot->strategy(), Strategy::kRoundRobin);
}

TEST_F(ReconfigureTest, SessionsSurviveATtlChangeAndTheNewTtlCountsFromTheirLastUse) {
  PoolState::Options options = DefaultOptions();
  options.sessions.ttl = std::chrono::hours(1);
  Start(Workers(4), Strategy::kJouleWeighted, options);
  ASSERT_TRUE(PickSession("alice").picked());
  const auto table = state_->sessions();
  now_ += std::chrono::seconds(90);
  options.sessions.ttl = std::chrono::seconds(120);
  Reconfigure(options);
  EXPECT_EQ(state_->sessions(), table);  // the same table, not a new one
  EXPECT_TRUE(Bound("alice"));           // 90 s since its last use: within the new 120 s
  EXPECT_EQ(state_->options().sessions.ttl, std::chrono::seconds(120));
  now_ += std::chrono::seconds(31);
  EXPECT_FALSE(Bound("alice"));  // 121 s: expired by the new ttl, long before the old one
}

TEST_F(ReconfigureTest, ShrinkingMaxSessionsEvictsTheLeastRecentlyUsed) {
  PoolState::Options options = DefaultOptions();
  options.sessions.max_sessions = 100;
  Start(Workers(4), Strategy::kJouleWeighted, options);
  BindSessions(10);
  ASSERT_TRUE(PickSession("s0").picked());  // s0 used again: now s1 is the least recent
  const std::size_t budget_before = budget_.Used();
  options.sessions.max_sessions = 4;
  Reconfigure(options);
  EXPECT_EQ(state_->sessions()->Size(), 4U);
  EXPECT_EQ(budget_.Used(), budget_before - 6);  // the evicted give their budget back
  for (const char* kept : {"s0", "s7", "s8", "s9"}) EXPECT_TRUE(Bound(kept)) << kept;
  for (const char* gone : {"s1", "s2", "s6"}) EXPECT_FALSE(Bound(gone)) << gone;

  options.sessions.max_sessions = 100;  // growing evicts nothing and makes room again
  Reconfigure(options);
  BindSessions(10);
  EXPECT_EQ(state_->sessions()->Size(), 10U);
}

TEST_F(ReconfigureTest, ABlockSizeChangeEmptiesThePrefixIndexAndOtherChangesKeepIt) {
  Start(Workers(4));
  const auto prefix = PrefixHashes("m", PromptOf('a', 8), 16);
  ASSERT_TRUE(Pick({.prefix = prefix}).picked());
  ASSERT_EQ(state_->prefix_index()->Size(), 8U);

  PoolState::Options options = DefaultOptions();
  options.prefix_load_margin = 0.5;  // not about blocks: the index stays
  options.sessions.max_sessions = 10;
  Reconfigure(options);
  EXPECT_EQ(state_->prefix_index()->Size(), 8U);

  options.block_size_tokens = 32;  // hashes of 16-token blocks never match again
  Reconfigure(options);
  ASSERT_NE(state_->prefix_index(), nullptr);
  EXPECT_EQ(state_->prefix_index()->Size(), 0U);
}

TEST_F(ReconfigureTest, TurningAffinityOffAndOnDropsThenStartsTheTables) {
  Start(Workers(4));
  ASSERT_TRUE(PickSession("alice").picked());
  PoolState::Options options = DefaultOptions();
  options.session_affinity = false;
  options.prefix_affinity = false;
  Reconfigure(options);
  EXPECT_EQ(state_->sessions(), nullptr);
  EXPECT_EQ(state_->prefix_index(), nullptr);
  EXPECT_EQ(budget_.Used(), 0U);  // the dropped table gave its sessions back
  EXPECT_EQ(PickSession("alice").reason, PickReason::kStrategy);

  Reconfigure(DefaultOptions());
  ASSERT_NE(state_->sessions(), nullptr);
  EXPECT_EQ(state_->sessions()->Size(), 0U);
  EXPECT_EQ(PickSession("alice").reason, PickReason::kSession);
}

TEST_F(ReconfigureTest, LoadsCountsAndWaitingPicksSurvive) {
  Start(Workers(1));
  Observe(0, LoadOf(/*running=*/10, /*free_blocks=*/0));  // full: picks wait
  int answered = 0;
  const PickOutcome waiting =
      state_->Pick({}, 1, now_, {.deadline = now_ + std::chrono::seconds(30), .make_done = [&] {
                                   return [&](const PickOutcome&) { ++answered; };
                                 }});
  ASSERT_EQ(waiting.status, PickStatus::kQueued);
  const double busy = *state_->Busyness(KeyOf(0));

  PoolState::Options options = DefaultOptions();
  options.max_queue = 1;  // no room for a second waiter, the first stays
  options.default_expected_tokens = 10;
  Reconfigure(options);
  EXPECT_EQ(*state_->Busyness(KeyOf(0)), busy);
  EXPECT_EQ(state_->Waiting(), 1U);
  EXPECT_EQ(answered, 0);
  EXPECT_EQ(state_->Pick({}, 2, now_, {.deadline = now_ + std::chrono::seconds(30)}).status,
            PickStatus::kQueueFull);

  options.kv_block_budget = false;  // capacity the change made is offered at once
  Reconfigure(options);
  EXPECT_EQ(answered, 1);
  EXPECT_EQ(state_->Waiting(), 0U);
}

TEST_F(ReconfigureTest, TheSameOptionsChangeNothing) {
  Start(Workers(2));
  const auto sessions = state_->sessions();
  const auto prefix = state_->prefix_index();
  Reconfigure(DefaultOptions());
  EXPECT_EQ(state_->sessions(), sessions);
  EXPECT_EQ(state_->prefix_index(), prefix);
}

TEST_F(ReconfigureTest, RetireAnswersWaitingPicksAndRefusesNewWaits) {
  Start(Workers(1));
  Observe(0, LoadOf(10, 0));
  std::optional<PickStatus> answer;
  ASSERT_EQ(PickOrWait(*state_, now_, answer).status, PickStatus::kQueued);
  state_->Retire();
  EXPECT_EQ(answer, PickStatus::kUnavailable);
  EXPECT_EQ(state_->Pick({}, 2, now_, {.deadline = now_ + std::chrono::seconds(30)}).status,
            PickStatus::kUnavailable);
}

}  // namespace
}  // namespace eoc::routing::testing
