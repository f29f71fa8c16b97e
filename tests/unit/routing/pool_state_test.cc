// PoolState's choices: sessions, prefixes, the KV-block budget and the strategies, one pick at a
// time. The wait queue and concurrency are in pool_state_queue_test.cc.
#include "routing/pool_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pool_state_fixture.h"
#include "routing/prefix_hash.h"

namespace eoc::routing::testing {
namespace {

TEST_F(PoolStateTest, NamesReasonsAndStatuses) {
  EXPECT_EQ(ToString(PickReason::kSession), "session");
  EXPECT_EQ(ToString(PickReason::kSessionOverflow), "session-overflow");
  EXPECT_EQ(ToString(PickReason::kPrefix), "prefix");
  EXPECT_EQ(ToString(PickReason::kStrategy), "strategy");
  EXPECT_EQ(ToString(PickReason::kQueued), "queued");
  EXPECT_EQ(ToString(PickStatus::kQueueFull), "queue-full");
  EXPECT_EQ(ToString(PickStatus::kNotPublished), "not-published");
}

TEST_F(PoolStateTest, NothingIsPickedBeforeTheFirstSnapshot) {
  PoolState state(DefaultOptions(), budget_, prefix_budget_);
  EXPECT_EQ(state.TryPick({}, 1, now_).status, PickStatus::kNotPublished);
  EXPECT_EQ(state.snapshot(), nullptr);
  EXPECT_FALSE(state.ObserveLoad(KeyOf(0), LoadOf(1), now_));
}

TEST_F(PoolStateTest, StrategyPicksFollowTheWeights) {
  // Equal local load; 1000, 500, 250, 250: shares 0.5, 0.25, 0.125, 0.125.
  Start({MakeWorker(0, 1000), MakeWorker(1, 500), MakeWorker(2, 250), MakeWorker(3, 250)});
  std::map<std::string, int> counts;
  constexpr int kPicks = 40'000;
  for (int k = 0; k < kPicks; ++k) {
    const PickOutcome out = Pick({});
    ASSERT_TRUE(out.picked());
    EXPECT_EQ(out.reason, PickReason::kStrategy);
    ++counts[out.worker().pod];
    // Each pick counts towards its worker's busyness, and the less busy of two draws wins: start
    // every pick from equal local load (a scrape resets the counts).
    Observe(out.worker().pod.back() - '0', LoadOf(0));
  }
  const double expected[] = {0.5, 0.25, 0.125, 0.125};
  for (int w = 0; w < 4; ++w) {
    const double share = counts[PodOf(w)] / static_cast<double>(kPicks);
    // Binomial: the standard deviation of a share is at most 0.0025 here; 4 of them.
    EXPECT_NEAR(share, expected[w], 0.01) << PodOf(w);
  }
}

TEST_F(PoolStateTest, WeightedSharesHoldBetweenScrapes) {
  // Weights 2:1 and many picks with no scrape between them, from equal loads (idle, or 8 running
  // each): every pick makes its worker busier, by the mean weight over its own, so the shares stay
  // near 2:1 (counted at full value, the picks would even them out).
  for (const double running : {0.0, 8.0}) {
    Start({MakeWorker(0, 1000), MakeWorker(1, 500)});
    Observe(0, LoadOf(running));
    Observe(1, LoadOf(running));
    std::map<std::string, int> counts;
    constexpr int kPicks = 3000;
    for (int k = 0; k < kPicks; ++k) ++counts[Where(Pick({}))];
    EXPECT_NEAR(counts[PodOf(0)] / static_cast<double>(kPicks), 2.0 / 3, 0.02) << running;
    EXPECT_NEAR(counts[PodOf(1)] / static_cast<double>(kPicks), 1.0 / 3, 0.02) << running;
  }
}

TEST_F(PoolStateTest, RoundRobinTakesTurns) {
  Start(Workers(3), Strategy::kRoundRobin);
  std::vector<std::string> order;
  order.reserve(6);
  for (int k = 0; k < 6; ++k) order.push_back(Where(Pick({})));
  EXPECT_EQ(order[0], order[3]);
  EXPECT_EQ(order[1], order[4]);
  EXPECT_NE(order[0], order[1]);
  EXPECT_NE(order[1], order[2]);
  EXPECT_NE(order[0], order[2]);
}

TEST_F(PoolStateTest, LeastBusyCountsThisReplicasPicksSinceTheScrape) {
  Start(Workers(3), Strategy::kLeastBusy);
  Observe(0, LoadOf(10));
  Observe(1, LoadOf(12));
  Observe(2, LoadOf(30));
  // Worker 0 takes picks until it is as busy as worker 1; then they alternate.
  EXPECT_EQ(Where(Pick({})), PodOf(0));
  EXPECT_EQ(Where(Pick({})), PodOf(0));
  std::map<std::string, int> counts;
  for (int k = 0; k < 10; ++k) ++counts[Where(Pick({}))];
  EXPECT_EQ(counts[PodOf(0)], 5);
  EXPECT_EQ(counts[PodOf(1)], 5);
  EXPECT_DOUBLE_EQ(*state_->Busyness(KeyOf(0)), 0.17);
}

// A long prompt fills a worker's KV cache long before its sequence count: its blocks count
// against the worker at once, as its pick does, with the budget on or off.
TEST_F(PoolStateTest, LeastBusyCountsTheKvBlocksOfThePicksSinceTheScrape) {
  for (const bool budget : {true, false}) {
    SCOPED_TRACE(budget ? "budget on" : "budget off");
    PoolState::Options options = DefaultOptions();
    options.kv_block_budget = budget;
    Start(Workers(2), Strategy::kLeastBusy, options);
    Observe(0, LoadOf(10));
    Observe(1, LoadOf(20));
    // 640,000 tokens are 40,000 of worker 0's 100,000 blocks: 0.4 of its cache, where its count
    // (11 of 100) says 0.11 and worker 1's says 0.2.
    EXPECT_EQ(Where(Pick({.prompt_tokens = 639'940})), PodOf(0));
    EXPECT_DOUBLE_EQ(*state_->Busyness(KeyOf(0)), 0.4);
    EXPECT_EQ(Where(Pick({})), PodOf(1));
    // The next scrape shows what the engine holds; the blocks since start again from none.
    Observe(0, LoadOf(11, 60'000));
    EXPECT_DOUBLE_EQ(*state_->Busyness(KeyOf(0)), 0.11);
    // A worker whose cache has too few free blocks: the budget sends the prompt elsewhere; without
    // it the prompt goes, its blocks counted as far as the free ones reach, and the cache reads
    // full.
    Observe(0, LoadOf(96));
    Load nearly_full = LoadOf(20, 5'000);
    nearly_full.kv_cache_usage = 0.95;
    Observe(1, nearly_full);
    EXPECT_EQ(Where(Pick({.prompt_tokens = 639'940})), budget ? PodOf(0) : PodOf(1));
    EXPECT_DOUBLE_EQ(*state_->Busyness(KeyOf(1)), budget ? 0.95 : 1.0);
  }
}

TEST_F(PoolStateTest, LoadsAreTheLastScrapesAndThePicksSince) {
  Start(Workers(2), Strategy::kLeastBusy);
  Observe(0, LoadOf(10));
  Pick({});  // worker 1 has no load yet: worker 0 or 1, one pick in all
  auto unavailable = LoadOf(99);
  unavailable.available = false;
  Observe(0, unavailable);  // keeps the figures of the last load with data
  auto loads = state_->Loads();
  ASSERT_EQ(loads.size(), 2U);
  std::sort(loads.begin(), loads.end(), [](const auto& a, const auto& b) {
    return a.worker == KeyOf(0) && b.worker != a.worker;
  });
  EXPECT_EQ(loads[0].worker, KeyOf(0));
  EXPECT_FALSE(loads[0].load.available);
  EXPECT_DOUBLE_EQ(loads[0].load.running, 10);
  EXPECT_FALSE(loads[1].load.available);  // never scraped
  EXPECT_DOUBLE_EQ(loads[0].picks_since_scrape + loads[1].picks_since_scrape, 1);
}

TEST_F(PoolStateTest, OnlyWorkersThatServeTheModelArePicked) {
  Start({MakeWorker(0, 1000, {"llama"}), MakeWorker(1, 1000, {"mistral"}), MakeWorker(2, 1000)});
  for (int k = 0; k < 200; ++k) {
    EXPECT_NE(Where(Pick({.model = "llama"})), PodOf(1));
    EXPECT_NE(Where(Pick({.model = "mistral"})), PodOf(0));
  }
  // A model no worker names goes to the worker that serves any model.
  EXPECT_EQ(Where(Pick({.model = "qwen"})), PodOf(2));
}

TEST_F(PoolStateTest, ASessionReturnsToItsWorker) {
  Start(Workers(8));
  const PickOutcome first = PickSession("alice");
  ASSERT_TRUE(first.picked());
  EXPECT_EQ(first.reason, PickReason::kSession);
  for (int k = 0; k < 20; ++k) {
    const PickOutcome next = PickSession("alice");
    EXPECT_EQ(next.reason, PickReason::kSession);
    EXPECT_EQ(next.worker().pod, first.worker().pod);
  }
  EXPECT_EQ(state_->sessions()->Size(), 1U);
}

TEST_F(PoolStateTest, ASessionStaysAcrossGenerationsWhileItsWorkerStays) {
  Start(Workers(8));
  std::map<std::string, std::string> bound;
  for (int s = 0; s < 2000; ++s) {
    const std::string id = "s" + std::to_string(s);
    bound[id] = Where(PickSession(id));
  }
  // New weights would place many sessions elsewhere; bound ones stay.
  std::vector<Worker> reweighted = Workers(8);
  for (int i = 0; i < 8; ++i) reweighted[i].weight = 100 + 120 * i;
  Publish(reweighted);
  for (const auto& [id, pod] : bound) EXPECT_EQ(Where(PickSession(id)), pod) << id;
}

TEST_F(PoolStateTest, AWorkerThatLeavesTakesItsSessionsAndNoOthers) {
  Start(Workers(10));
  std::map<std::string, std::string> bound;
  for (int s = 0; s < 5000; ++s) {
    const std::string id = "s" + std::to_string(s);
    bound[id] = Where(PickSession(id));
  }
  std::vector<Worker> nine = Workers(10);
  nine.erase(nine.begin() + 3);
  Publish(nine);
  int moved = 0;
  int rebound = 0;
  for (const auto& [id, pod] : bound) {
    const PickOutcome again = PickSession(id);
    ASSERT_TRUE(again.picked());
    EXPECT_EQ(again.reason, PickReason::kSession);
    if (pod == PodOf(3)) {
      EXPECT_NE(again.worker().pod, PodOf(3));
      ++rebound;
    } else if (again.worker().pod != pod) {
      ++moved;
    }
  }
  EXPECT_GT(rebound, 300);
  EXPECT_EQ(moved, 0);
  // Rebound where they now are: the worker's return does not take them back.
  std::map<std::string, std::string> after;
  for (const auto& [id, pod] : bound) after[id] = Where(PickSession(id));
  Publish(Workers(10));
  for (const auto& [id, pod] : after) EXPECT_EQ(Where(PickSession(id)), pod) << id;
}

TEST_F(PoolStateTest, AFullWorkerOverflowsATurnAndKeepsItsSession) {
  Start(Workers(4));
  const std::string home = Where(PickSession("alice"));
  const int home_index = home.back() - '0';
  // Room for 10 blocks only: one more request of 160 tokens fits, then it is full.
  Observe(home_index, LoadOf(1, 10));
  EXPECT_EQ(PickSession("alice").reason, PickReason::kSession);
  const PickOutcome overflow = PickSession("alice");
  ASSERT_TRUE(overflow.picked());
  EXPECT_EQ(overflow.reason, PickReason::kSessionOverflow);
  EXPECT_NE(overflow.worker().pod, home);
  // The next scrape shows room again: the session is home.
  Observe(home_index, LoadOf(1, 1000));
  const PickOutcome back = PickSession("alice");
  EXPECT_EQ(back.reason, PickReason::kSession);
  EXPECT_EQ(back.worker().pod, home);
}

TEST_F(PoolStateTest, ExpiredAndForgottenSessionsArePlacedAgain) {
  PoolState::Options options = DefaultOptions();
  options.sessions.ttl = std::chrono::seconds(60);
  Start(Workers(8), Strategy::kJouleWeighted, options);
  PickSession("alice");
  EXPECT_TRUE(state_->sessions()->Peek(SessionHashOf("alice"), now_));
  now_ += std::chrono::seconds(61);
  EXPECT_FALSE(state_->sessions()->Peek(SessionHashOf("alice"), now_));
  EXPECT_EQ(PickSession("alice").reason, PickReason::kSession);  // placed and bound again
  EXPECT_TRUE(state_->sessions()->Peek(SessionHashOf("alice"), now_));
  EXPECT_TRUE(state_->sessions()->Forget(SessionHashOf("alice")));
  EXPECT_FALSE(state_->sessions()->Peek(SessionHashOf("alice"), now_));
  // Tick sweeps expired sessions and gives their budget back.
  PickSession("bob");
  now_ += std::chrono::seconds(61);
  state_->Tick(now_);
  EXPECT_EQ(state_->sessions()->Size(), 0U);
  EXPECT_EQ(budget_.Used(), 0U);
}

TEST_F(PoolStateTest, SessionsAreBoundedPerPoolAndInTotal) {
  PoolState::Options options = DefaultOptions();
  options.sessions.max_sessions = 100;
  SessionBudget total(150);
  PoolState a(options, total, prefix_budget_);
  PoolState b(options, total, prefix_budget_);
  for (PoolState* state : {&a, &b}) {
    state->SetSnapshot(PoolSnapshot::Build(Workers(4), 1, Strategy::kJouleWeighted), now_);
  }
  // Pool a reaches its own bound; pool b gets what is left of the total.
  for (PoolState* state : {&a, &b}) {
    for (int s = 0; s < 1000; ++s) {
      const std::string id = "s" + std::to_string(s);
      ASSERT_TRUE(state->TryPick({.session = SessionHashOf(id)}, rng_(), now_).picked());
    }
  }
  EXPECT_EQ(a.sessions()->Size(), 100U);
  EXPECT_EQ(b.sessions()->Size(), 50U);
  EXPECT_EQ(total.Used(), 150U);
  // The least recently used went first: the last session is still bound.
  EXPECT_TRUE(a.sessions()->Peek(SessionHashOf("s999"), now_));
  EXPECT_FALSE(a.sessions()->Peek(SessionHashOf("s0"), now_));
}

TEST_F(PoolStateTest, SessionAffinityOffPlacesEveryTurnByTheStrategy) {
  PoolState::Options options = DefaultOptions();
  options.session_affinity = false;
  Start(Workers(4), Strategy::kJouleWeighted, options);
  EXPECT_EQ(state_->sessions(), nullptr);
  EXPECT_EQ(PickSession("alice").reason, PickReason::kStrategy);
}

TEST_F(PoolStateTest, TwoReplicasPlaceNewSessionsAlike) {
  PoolState other(DefaultOptions(), budget_, prefix_budget_);
  Start(Workers(20));
  std::vector<Worker> workers = Workers(20);
  for (int i = 0; i < 20; ++i) workers[i].weight = 50 * (i + 1);
  Publish(workers);
  other.SetSnapshot(PoolSnapshot::Build(workers, generation_, Strategy::kJouleWeighted), now_);
  std::mt19937_64 other_rng(7);
  for (int s = 0; s < 10'000; ++s) {
    const PickRequest request{.session = SessionHashOf("s" + std::to_string(s))};
    EXPECT_EQ(Where(Pick(request)), Where(other.TryPick(request, other_rng(), now_))) << s;
  }
}

TEST_F(PoolStateTest, DrainingWorkersTakeNoNewWorkAndTheirSessionsMove) {
  Start(Workers(4));
  std::map<std::string, std::string> bound;
  for (int s = 0; s < 400; ++s) {
    const std::string id = "s" + std::to_string(s);
    bound[id] = Where(PickSession(id));
  }
  std::vector<Worker> workers = Workers(4);
  workers[2].draining = true;
  Publish(workers);
  for (int s = 400; s < 1400; ++s) EXPECT_NE(Where(PickSession("s" + std::to_string(s))), PodOf(2));
  for (int k = 0; k < 500; ++k) EXPECT_NE(Where(Pick({})), PodOf(2));
  // The draining worker's sessions go elsewhere at their next turn and stay there; the others'
  // stay where they were.
  int moved = 0;
  for (const auto& [id, pod] : bound) {
    const std::string now = Where(PickSession(id));
    EXPECT_NE(now, PodOf(2));
    if (pod == PodOf(2)) {
      ++moved;
      EXPECT_EQ(Where(PickSession(id)), now);  // bound again where it went
    } else {
      EXPECT_EQ(now, pod);
    }
  }
  EXPECT_GT(moved, 50);
}

TEST_F(PoolStateTest, APrefixMatchWinsWithinTheLoadMargin) {
  Start(Workers(6), Strategy::kLeastBusy);
  for (int w = 0; w < 6; ++w) Observe(w, LoadOf(10));
  const auto shared = PrefixHashes("llama", PromptOf('a', 20), 16);
  const auto longer = PrefixHashes("llama", PromptOf('a', 20) + PromptOf('b', 4), 16);
  const PickOutcome first = Pick({.prefix = shared});
  EXPECT_EQ(first.reason, PickReason::kStrategy);
  const std::string holder = first.worker().pod;
  const int holder_index = holder.back() - '0';
  // The holder is 10 requests (0.10) busier than the others: within the 0.25 margin.
  Observe(holder_index, LoadOf(20));
  const PickOutcome again = Pick({.prefix = longer});
  EXPECT_EQ(again.reason, PickReason::kPrefix);
  EXPECT_EQ(again.worker().pod, holder);
  // 30 more (0.40 busier): the strategy decides.
  Observe(holder_index, LoadOf(50));
  const PickOutcome busy = Pick({.prefix = longer});
  EXPECT_EQ(busy.reason, PickReason::kStrategy);
  EXPECT_NE(busy.worker().pod, holder);
  // That pick recorded the longer prompt at its worker: the longest match is there now.
  const PickOutcome longest = Pick({.prefix = longer});
  EXPECT_EQ(longest.reason, PickReason::kPrefix);
  EXPECT_EQ(longest.worker().pod, busy.worker().pod);
}

// A conversation's next turn goes where its prefix went, ahead of the session's binding, unless
// that worker is too busy; the binding stays for turns the prefix index cannot place.
TEST_F(PoolStateTest, APrefixMatchGoesAheadOfASessionsBindingWithinTheLoadMargin) {
  Start(Workers(6), Strategy::kLeastBusy);
  for (int w = 0; w < 6; ++w) Observe(w, LoadOf(10));
  const SessionHash alice = SessionHashOf("alice");
  const PickOutcome bound = Pick({.session = alice});
  ASSERT_EQ(bound.reason, PickReason::kSession);
  const int bound_index = bound.worker().pod.back() - '0';
  // The conversation's prompt went to another worker (without the session: by the strategy).
  const auto prompt = PrefixHashes("", PromptOf('c', 20), 16);
  const auto next = PrefixHashes("", PromptOf('c', 20) + PromptOf('d', 4), 16);
  Observe(bound_index, LoadOf(90));  // the strategy steers clear of the session's worker
  const PickOutcome first = Pick({.prefix = prompt});
  ASSERT_NE(first.worker().pod, bound.worker().pod);
  const int holder_index = first.worker().pod.back() - '0';
  Observe(bound_index, LoadOf(10));
  // The next turn, with its prompt: the holder, 0.10 busier than the rest, within the margin.
  Observe(holder_index, LoadOf(20));
  const PickOutcome turn = Pick({.session = alice, .prefix = next});
  EXPECT_EQ(turn.reason, PickReason::kPrefix);
  EXPECT_EQ(turn.worker().pod, first.worker().pod);
  // A turn without a prompt still goes to the binding, which the prefix pick left in place.
  EXPECT_EQ(Where(Pick({.session = alice})), bound.worker().pod);
  // The holder 0.40 busier than the strategy's choice: the binding decides.
  Observe(holder_index, LoadOf(50));
  const PickOutcome busy = Pick({.session = alice, .prefix = next});
  EXPECT_EQ(busy.reason, PickReason::kSession);
  EXPECT_EQ(busy.worker().pod, bound.worker().pod);
}

TEST_F(PoolStateTest, APrefixMatchNeedsRoomAndNoDraining) {
  Start(Workers(3), Strategy::kLeastBusy);
  const auto full = PrefixHashes("", PromptOf('x', 8), 16);
  const auto drained = PrefixHashes("", PromptOf('y', 8), 16);
  const std::string holder = Where(Pick({.prefix = full}));
  Observe(holder.back() - '0', LoadOf(0, 5));  // 5 free blocks: no room for 10
  const PickOutcome no_room = Pick({.prefix = full});
  EXPECT_EQ(no_room.reason, PickReason::kStrategy);
  EXPECT_NE(no_room.worker().pod, holder);

  const std::string drained_holder = Where(Pick({.prefix = drained}));
  std::vector<Worker> workers = Workers(3);
  workers[static_cast<std::size_t>(drained_holder.back() - '0')].draining = true;
  Publish(workers, Strategy::kLeastBusy);
  const PickOutcome elsewhere = Pick({.prefix = drained});
  EXPECT_EQ(elsewhere.reason, PickReason::kStrategy);
  EXPECT_NE(elsewhere.worker().pod, drained_holder);
}

TEST_F(PoolStateTest, TheKvBudgetExcludesAFullWorker) {
  Start(Workers(3));
  Observe(0, LoadOf(0, 25));  // room for two requests of 10 blocks
  Observe(1, LoadOf(0, 0));
  Observe(2, LoadOf(0, 0));
  EXPECT_EQ(Where(Pick({})), PodOf(0));
  EXPECT_EQ(Where(Pick({})), PodOf(0));
  EXPECT_EQ(Pick({}).status, PickStatus::kNoRoom);
  EXPECT_FALSE(*state_->HasRoom(KeyOf(0), 160));
  EXPECT_TRUE(*state_->HasRoom(KeyOf(0), 80));
  // Requests say their size: a small one still fits in the 5 blocks left.
  EXPECT_EQ(Where(Pick({.prompt_tokens = 40, .expected_tokens = 40})), PodOf(0));
  // Workers that report no KV data, or a budget turned off, never exclude.
  Observe(1, Load{.running = 0, .available = true});
  EXPECT_EQ(Where(Pick({})), PodOf(1));
  PoolState::Options off = DefaultOptions();
  off.kv_block_budget = false;
  Start(Workers(1), Strategy::kJouleWeighted, off);
  Observe(0, LoadOf(0, 0));
  EXPECT_TRUE(Pick({}).picked());
}

// A scrape that lands while a pick is reserving: the reservation must be checked against the new
// free blocks, not the ones it read before the scrape.
TEST_F(PoolStateTest, AScrapeDuringAReservationCannotOvercommitTheWorker) {
  Start(Workers(1));
  Observe(0, LoadOf(0, 10));  // room for one request of 10 blocks
  int reservations = 0;
  state_->SetReserveHookForTesting([&] {
    if (reservations++ == 0) Observe(0, LoadOf(0, 0));  // the engine filled up meanwhile
  });
  EXPECT_EQ(Where(Pick({})), "no-room");
  EXPECT_GE(reservations, 1);
  EXPECT_FALSE(*state_->HasRoom(KeyOf(0), 1));
  // The other way round: blocks freed by a scrape during a reservation are there to take.
  Observe(0, LoadOf(0, 10));
  ASSERT_TRUE(Pick({}).picked());  // takes all 10
  reservations = 0;
  state_->SetReserveHookForTesting([&] {
    if (reservations++ == 0) Observe(0, LoadOf(0, 25));
  });
  EXPECT_FALSE(*state_->HasRoom(KeyOf(0), 1));
  Observe(0, LoadOf(0, 15));
  EXPECT_EQ(Where(Pick({})), PodOf(0));   // reserved 10 of the 25 the hook's scrape reported
  EXPECT_EQ(Where(Pick({})), PodOf(0));   // and 10 more
  EXPECT_EQ(Where(Pick({})), "no-room");  // 5 left
  EXPECT_TRUE(*state_->HasRoom(KeyOf(0), 80));
}

TEST_F(PoolStateTest, UnavailableMetricsLiftTheBudgetUntilDataReturns) {
  Start(Workers(1));
  Observe(0, LoadOf(0, 0));
  EXPECT_EQ(Pick({}).status, PickStatus::kNoRoom);
  Observe(0, Load{.available = false});
  EXPECT_TRUE(Pick({}).picked());
  Observe(0, LoadOf(0, 0));
  EXPECT_EQ(Pick({}).status, PickStatus::kNoRoom);
}

// Picks made while a scrape's fetch was in flight are not on its page: they keep counting (picks
// and KV blocks) against the load it brings; those made before the fetch started are on the page.
TEST_F(PoolStateTest, AScrapeKeepsThePicksMadeWhileItWasInFlight) {
  Start(Workers(1), Strategy::kLeastBusy);
  Observe(0, LoadOf(0, 100));
  ASSERT_TRUE(Pick({}).picked());  // before the fetch: 10 blocks, on the page
  const std::optional<ScrapeMark> mark = state_->MarkScrape(KeyOf(0));
  ASSERT_TRUE(mark.has_value());
  EXPECT_EQ(mark->picks, 1);
  EXPECT_EQ(mark->blocks, 10);
  ASSERT_TRUE(Pick({}).picked());  // while it is in flight: 10 more, not on the page
  ASSERT_TRUE(Pick({}).picked());
  // The page: 1 running, 90 blocks free.
  ASSERT_TRUE(state_->ObserveLoad(KeyOf(0), LoadOf(1, 90), now_, *mark));
  EXPECT_DOUBLE_EQ(*state_->Busyness(KeyOf(0)), 0.03);
  EXPECT_TRUE(*state_->HasRoom(KeyOf(0), 70 * 16LL));
  EXPECT_FALSE(*state_->HasRoom(KeyOf(0), 71 * 16LL));
  // Without a mark, everything starts again from the page.
  Observe(0, LoadOf(1, 90));
  EXPECT_DOUBLE_EQ(*state_->Busyness(KeyOf(0)), 0.01);
  EXPECT_TRUE(*state_->HasRoom(KeyOf(0), 90 * 16LL));
  // A mark from before a later scrape: all counted since that scrape are kept.
  const std::optional<ScrapeMark> old = state_->MarkScrape(KeyOf(0));
  Observe(0, LoadOf(1, 90));
  ASSERT_TRUE(Pick({}).picked());
  ASSERT_TRUE(state_->ObserveLoad(KeyOf(0), LoadOf(1, 90), now_, *old));
  EXPECT_DOUBLE_EQ(*state_->Busyness(KeyOf(0)), 0.02);
  EXPECT_FALSE(*state_->HasRoom(KeyOf(0), 81 * 16LL));
  EXPECT_FALSE(state_->MarkScrape(KeyOf(7)).has_value());
}

TEST_F(PoolStateTest, AllZeroWeightsFallBackToTheLeastBusyWorkerWithRoom) {
  std::vector<Worker> workers = Workers(3, 0);
  workers[2].draining = true;
  Start(workers);
  Observe(0, LoadOf(40));
  Observe(1, LoadOf(20));
  Observe(2, LoadOf(0));
  const PickOutcome out = Pick({});
  EXPECT_EQ(Where(out), PodOf(1));
  EXPECT_EQ(out.reason, PickReason::kStrategy);
  EXPECT_EQ(Where(PickSession("alice")), PodOf(1));
}

TEST_F(PoolStateTest, TheWorkerOutlivesItsGeneration) {
  Start(Workers(2));
  const PickOutcome out = Pick({});
  const std::string address = out.worker().address;
  Publish(Workers(1));
  Publish(Workers(0));
  EXPECT_EQ(out.worker().address, address);
  EXPECT_EQ(out.snapshot->generation(), 1);
}

TEST_F(PoolStateTest, ANewSnapshotKeepsLoadsAndCountsOfTheWorkersThatStay) {
  Start(Workers(2), Strategy::kLeastBusy);
  Observe(0, LoadOf(50, 10));
  ASSERT_EQ(Where(Pick({})), PodOf(1));
  const double busy = *state_->Busyness(KeyOf(1));
  Publish(Workers(3), Strategy::kLeastBusy);
  EXPECT_EQ(*state_->Busyness(KeyOf(1)), busy);
  EXPECT_FALSE(*state_->HasRoom(KeyOf(0), 161));
  EXPECT_EQ(*state_->Busyness(KeyOf(2)), 0.0);
  EXPECT_EQ(state_->Busyness(KeyOf(7)), std::nullopt);
}

TEST_F(PoolStateTest, APickForAModelTheSpecDoesNotListIsUnknown) {
  PoolState::Options options = DefaultOptions();
  options.models = {"llama", "qwen"};
  Start(Workers(2), Strategy::kRoundRobin, options);
  EXPECT_TRUE(Pick({.model = "qwen"}).picked());
  EXPECT_TRUE(Pick({}).picked()) << "a pick that names no model takes any";
  EXPECT_EQ(Pick({.model = "mistral"}).status, PickStatus::kUnknownModel);
  std::optional<PickStatus> answer;
  EXPECT_EQ(
      state_
          ->Pick({.model = "mistral"}, 1, now_,
                 {.deadline = now_ + std::chrono::seconds(9),
                  .make_done = [&] { return [&](const PickOutcome& o) { answer = o.status; }; }})
          .status,
      PickStatus::kUnknownModel)
      << "answered at once, never queued";
  EXPECT_EQ(state_->Waiting(), 0U);
  EXPECT_FALSE(answer.has_value());
  options.models.clear();  // any model again
  state_->Reconfigure(options, now_);
  EXPECT_TRUE(Pick({.model = "mistral"}).picked());
}

TEST_F(PoolStateTest, ARequestLargerThanTheLargestWorkersCacheIsTooLarge) {
  Start(Workers(2));
  // 160 tokens by default (10 blocks of 16): fine while no worker reported its cache.
  EXPECT_TRUE(Pick({.prompt_tokens = 5000}).picked());
  Observe(0, {.kv_blocks_total = 100, .kv_blocks_free = 100, .block_size = 16, .available = true});
  Observe(1, {.kv_blocks_total = 300, .kv_blocks_free = 0, .block_size = 16, .available = true});
  // 300 blocks of 16 tokens at most: 4,800 tokens.
  EXPECT_FALSE(Pick({.prompt_tokens = 4800, .expected_tokens = 1}).picked());
  const PickOutcome big = Pick({.prompt_tokens = 4800, .expected_tokens = 1});
  EXPECT_EQ(big.status, PickStatus::kTooLarge);
  EXPECT_EQ(big.blocks_needed, 301);
  EXPECT_EQ(big.blocks_largest, 300);
  EXPECT_EQ(Pick({.prompt_tokens = 4799, .expected_tokens = 1}).status, PickStatus::kNoRoom)
      << "fits the largest, which has no room now: waits";
  // The largest leaves: the next largest bounds requests.
  Publish({Workers(2)[0]});
  EXPECT_EQ(Pick({.prompt_tokens = 1601, .expected_tokens = 1}).status, PickStatus::kTooLarge);
}

TEST_F(PoolStateTest, ANewBindingIsToldApartFromAHit) {
  Start(Workers(3));
  const PickOutcome first = PickSession("user-1");
  ASSERT_TRUE(first.picked());
  EXPECT_EQ(first.reason, PickReason::kSession);
  EXPECT_TRUE(first.new_session);
  const PickOutcome again = PickSession("user-1");
  EXPECT_EQ(again.reason, PickReason::kSession);
  EXPECT_FALSE(again.new_session);
}

TEST_F(PoolStateTest, SessionEvictionsCountWhatTheBoundsPushedOut) {
  PoolState::Options options = DefaultOptions();
  options.sessions.max_sessions = 2;
  Start(Workers(2), Strategy::kJouleWeighted, options);
  for (const char* s : {"a", "b", "c", "d"}) ASSERT_TRUE(PickSession(s).picked());
  EXPECT_EQ(state_->SessionEvictions(), 2U);
  ASSERT_TRUE(state_->sessions()->Forget(SessionHashOf("d")));
  EXPECT_EQ(state_->SessionEvictions(), 2U) << "a forgotten session is not an eviction";
  options.session_affinity = false;  // the table goes; its count stays
  state_->Reconfigure(options, now_);
  options.session_affinity = true;
  state_->Reconfigure(options, now_);
  for (const char* s : {"e", "f", "g"}) ASSERT_TRUE(PickSession(s).picked());
  EXPECT_EQ(state_->SessionEvictions(), 3U);
}

TEST_F(PoolStateTest, PromptsAreCutInTheBlockSizeInForce) {
  PoolState::Options options = DefaultOptions();
  options.block_size_tokens = 32;
  Start(Workers(1), Strategy::kJouleWeighted, options);
  EXPECT_EQ(state_->PromptBlockTokens(), 32);
  options.prefix_affinity = false;
  state_->Reconfigure(options, now_);
  EXPECT_EQ(state_->PromptBlockTokens(), 0) << "prompts are not hashed";
}

}  // namespace
}  // namespace eoc::routing::testing
