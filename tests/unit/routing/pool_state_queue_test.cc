// PoolState's waiting picks (the KV-block budget's queue) and picks from many threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pool_state_fixture.h"
#include "routing/pool_state.h"
#include "routing/prefix_hash.h"

namespace eoc::routing::testing {
namespace {

using std::chrono::seconds;

// Collects what waiting picks were answered, in order.
struct Answers {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> log;  // (name, where or status)

  PickCallback For(std::string name) {
    return [this, name = std::move(name)](const PickOutcome& outcome) {
      const std::lock_guard lock(mu);
      log.emplace_back(name, Where(outcome));
      if (outcome.picked()) {
        EXPECT_EQ(outcome.reason, PickReason::kQueued);
      }
    };
  }
  std::vector<std::string> Names() {
    const std::lock_guard lock(mu);
    std::vector<std::string> names;
    names.reserve(log.size());
    for (const auto& [name, where] : log) names.push_back(name);
    return names;
  }
};

class PoolStateQueueTest : public PoolStateTest {
 protected:
  PickOutcome Wait(const PickRequest& request, const std::string& name,
                   seconds timeout = seconds(30)) {
    return state_->Pick(request, rng_(), now_, {.deadline = now_ + timeout, .make_done = [&] {
                                                  return answers_.For(name);
                                                }});
  }

  Answers answers_;
};

TEST_F(PoolStateQueueTest, WaitingPicksAreReleasedInOrderAsCapacityAppears) {
  Start(Workers(1));
  Observe(0, LoadOf(0, 0));
  EXPECT_EQ(Wait({}, "a").status, PickStatus::kQueued);
  EXPECT_EQ(Wait({}, "b").status, PickStatus::kQueued);
  EXPECT_EQ(Wait({}, "c").status, PickStatus::kQueued);
  EXPECT_EQ(state_->Waiting(), 3U);
  EXPECT_TRUE(answers_.Names().empty());
  Observe(0, LoadOf(0, 25));  // room for two
  EXPECT_EQ(answers_.Names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(answers_.log[0].second, PodOf(0));
  Observe(0, LoadOf(0, 10));
  EXPECT_EQ(answers_.Names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(state_->Waiting(), 0U);
}

TEST_F(PoolStateQueueTest, OnlyAPickThatIsQueuedMakesItsCallbackAndOneDecisionQueuesIt) {
  Start(Workers(2), Strategy::kRoundRobin);
  int made = 0;
  const auto pick = [&] {
    return state_->Pick({}, 1, now_, {.deadline = now_ + seconds(30), .make_done = [&] {
                                        ++made;
                                        return answers_.For("waited");
                                      }});
  };
  EXPECT_EQ(Where(pick()), PodOf(0));
  EXPECT_EQ(made, 0) << "a pick that finds room makes no callback";

  Observe(0, LoadOf(0, 0));
  Observe(1, LoadOf(0, 0));
  EXPECT_EQ(pick().status, PickStatus::kQueued) << "queued by the same call";
  EXPECT_EQ(made, 1);
  // Round robin takes one turn per decision: turn 0 was the first pick's, turn 1 the one that
  // found no room (once), turn 2 its release on the first scrape with room; so turn 3 is worker
  // 1's (a second decision of the queued pick would have made it worker 0's).
  Observe(0, LoadOf(0, 100));
  ASSERT_EQ(answers_.log.size(), 1U);
  EXPECT_EQ(answers_.log[0].second, PodOf(0));
  Observe(1, LoadOf(0, 100));
  EXPECT_EQ(Where(state_->TryPick({}, 1, now_)), PodOf(1));
}

TEST_F(PoolStateQueueTest, ANewWorkerReleasesWaitingPicks) {
  Start(Workers(1));
  Observe(0, LoadOf(0, 0));
  EXPECT_EQ(Wait({}, "a").status, PickStatus::kQueued);
  Publish(Workers(2));
  ASSERT_EQ(answers_.log.size(), 1U);
  EXPECT_EQ(answers_.log[0].second, PodOf(1));
}

TEST_F(PoolStateQueueTest, NewPicksQueueBehindWaitingOnesOfTheirModelOnly) {
  Start({MakeWorker(0, 1000, {"llama"}), MakeWorker(1, 1000, {"mistral"})});
  Observe(0, LoadOf(0, 20));
  Observe(1, LoadOf(0, 0));
  // A big llama pick (40 blocks) waits; a small one that would fit queues behind it.
  EXPECT_EQ(Wait({.model = "llama", .prompt_tokens = 600, .expected_tokens = 40}, "big").status,
            PickStatus::kQueued);
  EXPECT_EQ(Wait({.model = "llama"}, "small").status, PickStatus::kQueued);
  EXPECT_EQ(state_->TryPick({.model = "llama"}, 1, now_).status, PickStatus::kNoRoom);
  // A mistral pick waits for its own worker and does not hold up llama.
  EXPECT_EQ(Wait({.model = "mistral"}, "mistral").status, PickStatus::kQueued);
  Observe(0, LoadOf(0, 60));  // room for the big one and two small ones
  EXPECT_EQ(answers_.Names(), (std::vector<std::string>{"big", "small"}));
  Observe(1, LoadOf(0, 10));
  EXPECT_EQ(answers_.Names(), (std::vector<std::string>{"big", "small", "mistral"}));
  // Nobody waits for llama any more: picks go straight through.
  EXPECT_TRUE(state_->TryPick({.model = "llama"}, 1, now_).picked());
}

TEST_F(PoolStateQueueTest, AFullQueueSheds) {
  PoolState::Options options = DefaultOptions();
  options.max_queue = 2;
  Start(Workers(1), Strategy::kJouleWeighted, options);
  Observe(0, LoadOf(0, 0));
  EXPECT_EQ(Wait({}, "a").status, PickStatus::kQueued);
  EXPECT_EQ(Wait({}, "b").status, PickStatus::kQueued);
  EXPECT_EQ(Wait({}, "c").status, PickStatus::kQueueFull);
  EXPECT_EQ(state_->Waiting(), 2U);
}

TEST_F(PoolStateQueueTest, WaitingPicksTimeOutAtTheirDeadline) {
  Start(Workers(1));
  Observe(0, LoadOf(0, 0));
  EXPECT_EQ(Wait({}, "short", seconds(5)).status, PickStatus::kQueued);
  EXPECT_EQ(Wait({}, "long", seconds(60)).status, PickStatus::kQueued);
  EXPECT_EQ(state_->NextDeadline(), now_ + seconds(5));
  state_->Tick(now_ + seconds(4));
  EXPECT_TRUE(answers_.log.empty());
  state_->Tick(now_ + seconds(5));
  ASSERT_EQ(answers_.log.size(), 1U);
  EXPECT_EQ(answers_.log[0], (std::pair<std::string, std::string>("short", "timed-out")));
  EXPECT_EQ(state_->NextDeadline(), now_ + seconds(60));
  // No time left to wait: timed out at once.
  EXPECT_EQ(Wait({}, "late", seconds(0)).status, PickStatus::kTimedOut);
}

// A waiting pick keeps only what a pick uses: the first kMaxPrefixBlocks hashes.
TEST_F(PoolStateQueueTest, AWaitingPickKeepsAtMost256PrefixHashes) {
  Start(Workers(2));
  Observe(0, LoadOf(0, 0));
  Observe(1, LoadOf(0, 0));
  std::vector<BlockHash> prefix(10'000);
  for (std::size_t i = 0; i < prefix.size(); ++i) prefix[i] = 1000 + i;
  EXPECT_EQ(Wait({.model = "llama", .prefix = prefix}, "long").status, PickStatus::kQueued);
  EXPECT_EQ(state_->WaitingBytes(), 5 + kMaxPrefixBlocks * sizeof(BlockHash));
  // Released, it records the blocks a pick uses, as an immediate pick would.
  Observe(1, LoadOf(0, 10));
  ASSERT_EQ(answers_.log.size(), 1U);
  EXPECT_EQ(answers_.log[0].second, PodOf(1));
  EXPECT_EQ(state_->WaitingBytes(), 0U);
  EXPECT_EQ(state_->prefix_index()->Size(), kMaxPrefixBlocks);
  const auto match = state_->prefix_index()->LongestMatch(prefix, [](WorkerKey) { return true; });
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->worker, KeyOf(1));
  EXPECT_EQ(match->blocks, kMaxPrefixBlocks);
}

// A model name longer than any worker can list is refused at once, never kept waiting; the
// longest one a worker can list waits like any other.
TEST_F(PoolStateQueueTest, AnOverlongModelNameIsRefusedNotQueued) {
  Start(Workers(1));  // serves any model
  const std::string longest(kMaxModelNameBytes, 'm');
  const std::string overlong(kMaxModelNameBytes + 1, 'm');
  EXPECT_TRUE(state_->TryPick({.model = longest}, 1, now_).picked());
  EXPECT_EQ(state_->TryPick({.model = overlong}, 1, now_).status, PickStatus::kUnavailable);
  Observe(0, LoadOf(0, 0));
  EXPECT_EQ(Wait({.model = overlong}, "overlong").status, PickStatus::kUnavailable);
  EXPECT_EQ(state_->Waiting(), 0U);
  EXPECT_EQ(Wait({.model = longest}, "longest").status, PickStatus::kQueued);
  EXPECT_EQ(state_->WaitingBytes(), kMaxModelNameBytes);
  Observe(0, LoadOf(0, 10));
  EXPECT_EQ(answers_.log,
            (std::vector<std::pair<std::string, std::string>>{{"longest", PodOf(0)}}));
}

TEST_F(PoolStateQueueTest, ACancelledPickIsNeverAnswered) {
  Start(Workers(1));
  Observe(0, LoadOf(0, 0));
  const PickOutcome queued = Wait({}, "gone");
  EXPECT_TRUE(state_->Cancel(queued.ticket));
  EXPECT_FALSE(state_->Cancel(queued.ticket));
  Observe(0, LoadOf(0, 100));
  EXPECT_TRUE(answers_.log.empty());
  EXPECT_TRUE(state_->TryPick({}, 1, now_).picked());
}

TEST_F(PoolStateQueueTest, NoWorkerAndNoWayToGetOneIsUnavailable) {
  Start(Workers(0));
  EXPECT_EQ(Wait({}, "a").status, PickStatus::kUnavailable);
  EXPECT_EQ(state_->TryPick({}, 1, now_).status, PickStatus::kUnavailable);
  // Picks that wait when the pool loses its last worker are answered at once.
  Publish(Workers(1));
  Observe(0, LoadOf(0, 0));
  EXPECT_EQ(Wait({}, "b").status, PickStatus::kQueued);
  Publish(Workers(0));
  EXPECT_EQ(answers_.log, (std::vector<std::pair<std::string, std::string>>{{"b", "unavailable"}}));
  // Queueing turned off: no room is unavailable at once.
  PoolState::Options off = DefaultOptions();
  off.max_queue = 0;
  Start(Workers(1), Strategy::kJouleWeighted, off);
  Observe(0, LoadOf(0, 0));
  EXPECT_EQ(Wait({}, "c").status, PickStatus::kUnavailable);
}

TEST_F(PoolStateQueueTest, APoolThatCanScaleFromZeroWaitsForItsFirstWorker) {
  PoolState::Options options = DefaultOptions();
  options.wait_without_workers = true;
  Start(Workers(0), Strategy::kJouleWeighted, options);
  EXPECT_EQ(Wait({}, "first").status, PickStatus::kQueued);
  Publish(Workers(1));
  EXPECT_EQ(answers_.log, (std::vector<std::pair<std::string, std::string>>{{"first", PodOf(0)}}));
}

TEST_F(PoolStateQueueTest, AWaitingSessionGoesHomeWhenItHasRoom) {
  Start(Workers(2));
  const std::string home = Where(PickSession("alice"));
  const int home_index = home.back() - '0';
  Observe(0, LoadOf(0, 0));
  Observe(1, LoadOf(0, 0));
  EXPECT_EQ(Wait({.session = SessionHashOf("alice")}, "alice").status, PickStatus::kQueued);
  Observe(home_index, LoadOf(0, 100));
  EXPECT_EQ(answers_.log, (std::vector<std::pair<std::string, std::string>>{{"alice", home}}));
}

// Many threads pick until every worker's budget is spent: no worker is ever given more blocks than
// it reported free, and every block is used.
TEST_F(PoolStateQueueTest, ConcurrentPicksNeverOvercommitAWorker) {
  constexpr int kWorkers = 16;
  constexpr int kThreads = 8;
  Start(Workers(kWorkers));
  std::vector<std::int64_t> free(kWorkers);
  std::int64_t capacity = 0;
  for (int w = 0; w < kWorkers; ++w) {
    free[w] = 37 + 13 * w;  // room for floor(free / 10) picks of 10 blocks
    capacity += free[w] / 10;
    Observe(w, LoadOf(0, free[w]));
  }
  std::array<std::atomic<int>, kWorkers> picks{};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t));
      for (int misses = 0; misses < 50;) {
        const std::string session = "t" + std::to_string(t) + "-" + std::to_string(rng() % 20);
        const PickRequest request =
            rng() % 2 == 0 ? PickRequest{.session = SessionHashOf(session)} : PickRequest{};
        const PickOutcome out = state_->TryPick(request, rng(), now_);
        if (!out.picked()) {
          ++misses;
          continue;
        }
        misses = 0;
        ++picks[static_cast<std::size_t>(std::stoi(out.worker().pod.substr(10)))];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::int64_t total = 0;
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_LE(picks[w].load() * 10, free[w]) << PodOf(w);
    total += picks[w].load();
  }
  EXPECT_EQ(total, capacity);
}

// Picks that wait, scrapes that release them, deadlines and cancellations from many threads:
// every waiting pick is answered exactly once, and the bounds hold.
TEST_F(PoolStateQueueTest, ConcurrentWaitingPicksAreEachAnsweredOnce) {
  constexpr int kWorkers = 8;
  constexpr int kThreads = 6;
  constexpr int kPicksPerThread = 2000;
  PoolState::Options options = DefaultOptions();
  options.max_queue = 64;
  options.sessions.max_sessions = 500;
  options.sessions.shards = 4;
  options.prefix.max_blocks = 300;
  options.prefix.shards = 4;
  Start(Workers(kWorkers), Strategy::kJouleWeighted, options);
  for (int w = 0; w < kWorkers; ++w) Observe(w, LoadOf(0, 0));

  std::atomic<int> queued{0};
  std::atomic<int> cancelled{0};
  std::atomic<int> answered{0};
  std::mutex answered_mu;
  std::map<std::uint64_t, int> answers_per_id;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(100 + t));
      const auto prompt = PrefixHashes("", PromptOf('p', 1 + static_cast<std::size_t>(t)), 16);
      for (int k = 0; k < kPicksPerThread; ++k) {
        const std::uint64_t id = (static_cast<std::uint64_t>(t) << 32U) | static_cast<unsigned>(k);
        PickRequest request{.session = SessionHashOf(std::to_string(rng() % 2000)),
                            .prefix = prompt};
        if (k % 3 == 0) request.session.reset();
        const PickOutcome out = state_->Pick(
            request, rng(), kT0,
            {.deadline = kT0 + seconds(1 + static_cast<int>(rng() % 20)), .make_done = [&, id] {
               return [&, id](const PickOutcome&) {
                 const std::lock_guard lock(answered_mu);
                 ++answers_per_id[id];
                 ++answered;
               };
             }});
        if (out.status == PickStatus::kQueued) {
          ++queued;
          if (rng() % 10 == 0 && state_->Cancel(out.ticket)) ++cancelled;
        }
      }
    });
  }
  std::thread scraper([&] {
    std::mt19937_64 rng(9);
    int round = 0;
    while (!stop.load()) {
      const int w = static_cast<int>(rng() % kWorkers);
      state_->ObserveLoad(KeyOf(w), LoadOf(0, static_cast<std::int64_t>(rng() % 40)), kT0);
      state_->Tick(kT0 + seconds(rng() % 25));
      if (++round % 100 == 0) {
        std::vector<Worker> workers = Workers(kWorkers - static_cast<int>(rng() % 2));
        state_->SetSnapshot(PoolSnapshot::Build(workers, round, Strategy::kJouleWeighted), kT0);
      }
      EXPECT_LE(state_->Waiting(), 64U);
      EXPECT_LE(state_->sessions()->Size(), 500U);
      EXPECT_LE(state_->prefix_index()->Size(), 300U);
    }
  });
  for (auto& thread : threads) thread.join();
  stop = true;
  scraper.join();
  state_->Tick(kT0 + seconds(60));  // the rest time out

  EXPECT_GT(queued.load(), 0);
  EXPECT_EQ(answered.load() + cancelled.load(), queued.load());
  for (const auto& [id, count] : answers_per_id) EXPECT_EQ(count, 1) << id;
  EXPECT_EQ(state_->Waiting(), 0U);
  EXPECT_LE(state_->sessions()->Size(), 500U);
}

}  // namespace
}  // namespace eoc::routing::testing
