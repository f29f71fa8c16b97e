#include "routing/session_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <random>
#include <thread>
#include <vector>

#include "colliding_keys.h"
#include "common/clock.h"
#include "common/mix64.h"

namespace eoc::routing {
namespace {

using std::chrono::seconds;

constexpr WorkerKey kA = 0xA;
constexpr WorkerKey kB = 0xB;

TEST(SessionTableTest, ASessionStaysWithItsWorkerUntilRebound) {
  ManualClock clock;
  SessionBudget budget;
  SessionTable table({.max_sessions = 100, .ttl = seconds(60)}, budget);
  EXPECT_EQ(table.Lookup(1, clock.Now()), std::nullopt);
  EXPECT_TRUE(table.Bind(1, kA, clock.Now()));
  for (int turn = 0; turn < 5; ++turn) {
    clock.Advance(seconds(10));
    EXPECT_EQ(table.Lookup(1, clock.Now()), kA);
  }
  EXPECT_TRUE(table.Bind(1, kB, clock.Now()));  // its worker left: placed again, rebound
  EXPECT_EQ(table.Lookup(1, clock.Now()), kB);
  EXPECT_EQ(table.Size(), 1U);
  EXPECT_EQ(budget.Used(), 1U);
}

TEST(SessionTableTest, ExpiresAfterTtlSinceLastUse) {
  ManualClock clock;
  SessionBudget budget;
  SessionTable table({.max_sessions = 100, .ttl = seconds(60)}, budget);
  ASSERT_TRUE(table.Bind(1, kA, clock.Now()));
  ASSERT_TRUE(table.Bind(2, kB, clock.Now()));
  clock.Advance(seconds(59));
  EXPECT_EQ(table.Lookup(1, clock.Now()), kA);  // used: its ttl starts again
  // Peek reports without refreshing.
  const auto peeked = table.Peek(2, clock.Now());
  ASSERT_TRUE(peeked.has_value());
  EXPECT_EQ(peeked->worker, kB);
  EXPECT_EQ(peeked->expires, clock.Now() + seconds(1));
  clock.Advance(seconds(1));
  EXPECT_EQ(table.Peek(2, clock.Now()), std::nullopt);
  EXPECT_EQ(table.Lookup(2, clock.Now()), std::nullopt);  // exactly ttl after its last use
  EXPECT_EQ(table.Size(), 1U);                            // reclaimed by the lookup
  EXPECT_EQ(budget.Used(), 1U);
  clock.Advance(seconds(58));
  EXPECT_EQ(table.Lookup(1, clock.Now()), kA);
  clock.Advance(seconds(60));
  EXPECT_EQ(table.Lookup(1, clock.Now()), std::nullopt);
  EXPECT_EQ(table.Size(), 0U);
  EXPECT_EQ(budget.Used(), 0U);
}

TEST(SessionTableTest, SweepReclaimsExpiredSessionsAndTheirBudget) {
  ManualClock clock;
  SessionBudget budget(10'000);
  SessionTable table({.max_sessions = 10'000, .ttl = seconds(60)}, budget);
  for (SessionHash s = 0; s < 1000; ++s) ASSERT_TRUE(table.Bind(s, kA, clock.Now()));
  clock.Advance(seconds(30));
  for (SessionHash s = 1000; s < 1500; ++s) ASSERT_TRUE(table.Bind(s, kB, clock.Now()));
  clock.Advance(seconds(30));
  EXPECT_EQ(table.Sweep(clock.Now()), 1000U);
  EXPECT_EQ(table.Size(), 500U);
  EXPECT_EQ(budget.Used(), 500U);
  EXPECT_EQ(table.Lookup(1200, clock.Now()), kB);
  EXPECT_EQ(table.Sweep(clock.Now()), 0U);
}

TEST(SessionTableTest, NoTtlMeansOnlyTheBoundsEvict) {
  ManualClock clock;
  SessionBudget budget;
  SessionTable table({.max_sessions = 10, .ttl = seconds(0)}, budget);
  ASSERT_TRUE(table.Bind(1, kA, clock.Now()));
  clock.Advance(std::chrono::hours(24 * 365));
  EXPECT_EQ(table.Lookup(1, clock.Now()), kA);
  EXPECT_EQ(table.Sweep(clock.Now()), 0U);
  EXPECT_EQ(table.Peek(1, clock.Now())->expires, SessionTable::TimePoint::max());
}

TEST(SessionTableTest, EvictsLeastRecentlyUsedAtItsBound) {
  ManualClock clock;
  SessionBudget budget;
  SessionTable table({.max_sessions = 3, .ttl = seconds(600), .shards = 1}, budget);
  ASSERT_TRUE(table.Bind(1, kA, clock.Now()));
  ASSERT_TRUE(table.Bind(2, kA, clock.Now()));
  ASSERT_TRUE(table.Bind(3, kA, clock.Now()));
  ASSERT_EQ(table.Lookup(1, clock.Now()), kA);  // 2 is now the least recently used
  ASSERT_TRUE(table.Bind(4, kB, clock.Now()));
  EXPECT_EQ(table.Lookup(2, clock.Now()), std::nullopt);
  ASSERT_TRUE(table.Bind(3, kB, clock.Now()));  // a rebind counts as a use: 1 is the oldest
  ASSERT_TRUE(table.Bind(5, kB, clock.Now()));
  EXPECT_EQ(table.Lookup(1, clock.Now()), std::nullopt);
  EXPECT_EQ(table.Lookup(3, clock.Now()), kB);
  EXPECT_EQ(table.Lookup(4, clock.Now()), kB);
  EXPECT_EQ(table.Lookup(5, clock.Now()), kB);
  EXPECT_EQ(table.Size(), 3U);
  EXPECT_EQ(budget.Used(), 3U);
}

TEST(SessionTableTest, ShardedTableKeepsItsBoundAndItsRecentSessions) {
  ManualClock clock;
  SessionBudget budget;
  SessionTable table({.max_sessions = 1000, .ttl = seconds(600)}, budget);
  EXPECT_GT(table.ShardCount(), 1U);
  for (SessionHash s = 0; s < 10'000; ++s) {
    ASSERT_TRUE(table.Bind(s, kA, clock.Now()));
    ASSERT_LE(table.Size(), 1000U);
  }
  EXPECT_GE(table.Size(), 900U);  // per-shard bounds: close to the table's
  for (SessionHash s = 9'700; s < 10'000; ++s) EXPECT_EQ(table.Lookup(s, clock.Now()), kA) << s;
  EXPECT_EQ(budget.Used(), table.Size());
}

TEST(SessionTableTest, TablesShareTheGlobalBudgetAndEachPaysItsOwnWay) {
  ManualClock clock;
  SessionBudget budget(100);
  SessionTable busy({.max_sessions = 1000, .ttl = seconds(600), .shards = 1}, budget);
  SessionTable quiet({.max_sessions = 1000, .ttl = seconds(600), .shards = 1}, budget);
  ASSERT_TRUE(quiet.Bind(7, kB, clock.Now()));
  for (SessionHash s = 0; s < 500; ++s) {
    ASSERT_TRUE(busy.Bind(s, kA, clock.Now()));
    ASSERT_LE(budget.Used(), 100U);
  }
  // The busy table evicted its own least recently used sessions, never the quiet table's.
  EXPECT_EQ(busy.Size(), 99U);
  EXPECT_EQ(quiet.Lookup(7, clock.Now()), kB);
  EXPECT_EQ(busy.Lookup(400, clock.Now()), std::nullopt);
  EXPECT_EQ(busy.Lookup(401, clock.Now()), kA);
  // The quiet table, once it binds, pays from its own sessions too.
  ASSERT_TRUE(quiet.Bind(8, kB, clock.Now()));
  EXPECT_EQ(quiet.Lookup(7, clock.Now()), std::nullopt);
  EXPECT_EQ(quiet.Size(), 1U);
  // An empty table facing a spent budget declines; a forget makes room.
  ASSERT_TRUE(quiet.Forget(8));
  ASSERT_TRUE(busy.Bind(1000, kA, clock.Now()));
  EXPECT_EQ(budget.Used(), 100U);
  EXPECT_FALSE(quiet.Bind(9, kB, clock.Now()));
  EXPECT_EQ(quiet.Lookup(9, clock.Now()), std::nullopt);
  ASSERT_TRUE(busy.Forget(1000));
  EXPECT_TRUE(quiet.Bind(9, kB, clock.Now()));
  EXPECT_EQ(budget.Used(), busy.Size() + quiet.Size());
  { SessionTable gone({.max_sessions = 10, .ttl = seconds(600)}, budget); }
  EXPECT_EQ(budget.Used(), 100U);
}

TEST(SessionTableTest, ASpentBudgetIsPaidFromAnotherShardWhenThisOneIsEmpty) {
  ManualClock clock;
  SessionBudget budget(1);
  SessionTable table({.max_sessions = 1000, .ttl = seconds(600), .shards = 64}, budget);
  ASSERT_EQ(table.ShardCount(), 64U);
  for (SessionHash s = 1; s <= 200; ++s) {
    // Whether or not s lands in the shard of s - 1, it replaces it.
    ASSERT_TRUE(table.Bind(s, kA, clock.Now()));
    ASSERT_EQ(table.Size(), 1U);
    ASSERT_EQ(table.Lookup(s, clock.Now()), kA);
    if (s > 1) {
      ASSERT_EQ(table.Lookup(s - 1, clock.Now()), std::nullopt);
    }
  }
  EXPECT_EQ(budget.Used(), 1U);
}

TEST(SessionTableTest, ForgetRemovesTheBinding) {
  ManualClock clock;
  SessionBudget budget;
  SessionTable table({.max_sessions = 100, .ttl = seconds(60)}, budget);
  ASSERT_TRUE(table.Bind(1, kA, clock.Now()));
  ASSERT_TRUE(table.Bind(2, kA, clock.Now()));
  EXPECT_TRUE(table.Forget(1));
  EXPECT_FALSE(table.Forget(1));
  EXPECT_FALSE(table.Forget(3));
  EXPECT_EQ(table.Lookup(1, clock.Now()), std::nullopt);
  EXPECT_EQ(table.Lookup(2, clock.Now()), kA);
  EXPECT_EQ(budget.Used(), 1U);
}

TEST(SessionTableTest, ZeroMaxSessionsBindsNothing) {
  ManualClock clock;
  SessionBudget budget;
  SessionTable table({.max_sessions = 0}, budget);
  EXPECT_FALSE(table.Bind(1, kA, clock.Now()));
  EXPECT_EQ(table.Lookup(1, clock.Now()), std::nullopt);
  EXPECT_EQ(budget.Used(), 0U);
}

// Many threads bind, look up, forget and sweep on two tables that share a budget: every bound
// holds at every moment, the budget matches the tables exactly afterwards, and a lookup never
// returns a worker the session was not bound to. Run it under ThreadSanitizer too.
TEST(SessionTableTest, ConcurrentUseKeepsEveryBound) {
  constexpr std::size_t kLimit = 3000;
  constexpr std::size_t kMax = 2000;
  SessionBudget budget(kLimit);
  SessionTable first({.max_sessions = kMax, .ttl = seconds(5)}, budget);
  SessionTable second({.max_sessions = kMax, .ttl = seconds(5)}, budget);
  std::atomic<bool> done{false};
  std::atomic<int> violations{0};
  std::thread watcher([&] {
    while (!done.load()) {
      if (budget.Used() > kLimit || first.Size() > kMax || second.Size() > kMax) ++violations;
      std::this_thread::yield();
    }
  });
  const auto start = std::chrono::steady_clock::time_point(std::chrono::hours(1));
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      SessionTable& table = t % 2 == 0 ? first : second;
      for (int i = 0; i < 20'000; ++i) {
        // Each thread owns its sessions; a session's worker is a function of it.
        const SessionHash session = (rng() % 5000) * 8 + static_cast<SessionHash>(t);
        const auto now = start + std::chrono::milliseconds(i);
        switch (rng() % 8) {
          case 0:
            table.Forget(session);
            break;
          case 1:
            if (i % 1000 == 0) table.Sweep(now);
            break;
          case 2:
          case 3:
          case 4:
            if (auto worker = table.Lookup(session, now); worker && *worker != session * 3) {
              ++violations;
            }
            break;
          default:
            table.Bind(session, session * 3, now);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  done = true;
  watcher.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_LE(first.Size(), kMax);
  EXPECT_LE(second.Size(), kMax);
  EXPECT_EQ(budget.Used(), first.Size() + second.Size());
  EXPECT_LE(budget.Used(), kLimit);
}

// The memory goal: at most 150 bytes per session at 1,000,000 sessions.
TEST(SessionTableTest, MemoryPerSessionAtAMillionSessions) {
  ManualClock clock;
  SessionBudget budget;
  SessionTable table({.max_sessions = 1'000'000, .ttl = std::chrono::hours(1)}, budget);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1'100'000; ++i) table.Bind(rng(), rng(), clock.Now());
  const std::size_t size = table.Size();
  EXPECT_GE(size, 990'000U);
  EXPECT_LE(size, 1'000'000U);
  const double per_session = static_cast<double>(table.MemoryBytes()) / static_cast<double>(size);
  std::cout << "session table: " << size << " sessions, " << table.MemoryBytes() << " bytes, "
            << per_session << " bytes per session\n";
  RecordProperty("bytes_per_session", std::to_string(per_session));
  EXPECT_LE(per_session, 150.0);
}

// Session ids are the clients' to choose, and their hashes once placed sessions by a public,
// invertible mix: crafted ids all fell in one shard, which kept its share (64 of 4,096) while the
// table stood empty, and in one slot of its map, where each lookup walked all of them. The table
// places by a keyed hash now: the same ids spread over every shard.
TEST(SessionTableTest, SessionsCraftedToCollideSpreadOverTheShards) {
  const auto crafted = testing::CollidingKeys(4096);
  ASSERT_EQ(Mix64(crafted[0]) >> 58U, Mix64(crafted.back()) >> 58U);  // one shard by the mix
  SessionBudget budget;
  SessionTable table({.max_sessions = 4096, .shards = 64}, budget);
  ASSERT_EQ(table.ShardCount(), 64U);
  const auto now = std::chrono::steady_clock::time_point{};
  for (const std::uint64_t session : crafted) table.Bind(session, 1, now);
  // Each shard holds 64: spread at random, about 4,096 - 64 x 3 stay; crowded, 64 would.
  EXPECT_GT(table.Size(), 3500U);
  EXPECT_LT(table.Evictions(), 600U);
  for (std::size_t i = crafted.size() - 64; i < crafted.size(); ++i) {
    EXPECT_EQ(table.Lookup(crafted[i], now), std::optional<WorkerKey>(1)) << i;
  }
}

}  // namespace
}  // namespace eoc::routing
