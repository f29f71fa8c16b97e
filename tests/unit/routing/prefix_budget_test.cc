// The prefix indexes' shared budget (--max-prefix-blocks-total): each index keeps its guaranteed
// share, only the excess is taken back, from the index furthest over its own share.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "routing/prefix_index.h"

namespace eoc::routing {
namespace {

constexpr WorkerKey kA = 0xA;

auto Anyone() {
  return [](WorkerKey /*worker*/) { return true; };
}

// One shard, so that recency within the index is exact.
PrefixIndex::Options OneShard(std::size_t max_blocks) {
  return {.max_blocks = max_blocks, .shards = 1};
}

// Block hashes of their own per `stream`: stream s's block i.
BlockHash Block(std::uint64_t stream, std::uint64_t i) { return (stream << 32) | i; }

// Records blocks first..first+count of `stream`, one block per call, so that they are used in
// that order (the first the least recently used).
void RecordEach(PrefixIndex& index, std::uint64_t stream, std::uint64_t first,
                std::uint64_t count) {
  for (std::uint64_t i = first; i < first + count; ++i) {
    const BlockHash block = Block(stream, i);
    index.Record(std::span(&block, 1), kA);
  }
}

bool Holds(const PrefixIndex& index, std::uint64_t stream, std::uint64_t i) {
  const BlockHash block = Block(stream, i);
  return index.LongestMatch(std::span(&block, 1), Anyone()).has_value();
}

TEST(PrefixBudgetTest, TheShareIsTheLimitOverTheIndexesUpToMaxBlocks) {
  PrefixBudget budget(100);
  PrefixIndex first(OneShard(1000), budget);
  EXPECT_EQ(first.Share(), 100U);
  PrefixIndex second(OneShard(30), budget);
  EXPECT_EQ(first.Share(), 50U);
  EXPECT_EQ(second.Share(), 30U);
  {
    PrefixIndex third(OneShard(1000), budget);
    EXPECT_EQ(first.Share(), 33U);
    EXPECT_EQ(budget.Registered(), 3U);
  }
  EXPECT_EQ(budget.Registered(), 2U);
  EXPECT_EQ(first.Share(), 50U);
  // Alone, an index larger than the budget holds the budget and no more.
  second.Detach();
  RecordEach(first, 1, 0, 500);
  EXPECT_EQ(first.Size(), 100U);
  EXPECT_EQ(budget.Used(), 100U);
}

TEST(PrefixBudgetTest, ABusyPoolCannotPushAQuietPoolBelowItsShare) {
  PrefixBudget budget(100);
  PrefixIndex quiet(OneShard(100), budget);
  PrefixIndex busy(OneShard(100), budget);
  RecordEach(quiet, 1, 0, 30);
  RecordEach(busy, 2, 0, 1000);
  // The busy pool took the rest of the budget, then paid for its new blocks with its own.
  EXPECT_EQ(busy.Size(), 70U);
  EXPECT_EQ(quiet.Size(), 30U);
  EXPECT_EQ(budget.Used(), 100U);
  for (std::uint64_t i = 0; i < 30; ++i) EXPECT_TRUE(Holds(quiet, 1, i)) << i;
  EXPECT_FALSE(Holds(busy, 2, 929));
  EXPECT_TRUE(Holds(busy, 2, 930));
}

TEST(PrefixBudgetTest, APoolBelowItsShareReclaimsFromTheOneFurthestOver) {
  PrefixBudget budget(90);
  PrefixIndex a(OneShard(1000), budget);
  PrefixIndex b(OneShard(1000), budget);
  PrefixIndex c(OneShard(1000), budget);
  ASSERT_EQ(c.Share(), 30U);
  RecordEach(a, 1, 0, 45);  // 15 over its share
  RecordEach(b, 2, 0, 35);  // 5 over
  RecordEach(c, 3, 0, 10);  // the budget's last 10 units
  ASSERT_EQ(budget.Used(), 90U);
  RecordEach(c, 3, 10, 10);  // each from a, furthest over until it is 5 over (35 blocks)
  EXPECT_EQ(c.Size(), 20U);
  EXPECT_EQ(a.Size(), 35U);
  EXPECT_EQ(b.Size(), 35U);
  EXPECT_EQ(budget.Used(), 90U);
  // a gave back its least recently used blocks.
  EXPECT_FALSE(Holds(a, 1, 9));
  EXPECT_TRUE(Holds(a, 1, 10));
  for (std::uint64_t i = 0; i < 20; ++i) EXPECT_TRUE(Holds(c, 3, i)) << i;
}

TEST(PrefixBudgetTest, AtItsShareWithTheBudgetSpentAPoolEvictsItsOwn) {
  PrefixBudget budget(100);
  PrefixIndex a(OneShard(1000), budget);
  PrefixIndex b(OneShard(1000), budget);
  RecordEach(a, 1, 0, 50);
  RecordEach(b, 2, 0, 50);
  RecordEach(a, 1, 50, 10);
  EXPECT_EQ(a.Size(), 50U);
  EXPECT_EQ(b.Size(), 50U);
  EXPECT_FALSE(Holds(a, 1, 9));
  EXPECT_TRUE(Holds(a, 1, 10));
  for (std::uint64_t i = 0; i < 50; ++i) EXPECT_TRUE(Holds(b, 2, i)) << i;
  // A block it holds already costs nothing.
  RecordEach(b, 2, 0, 50);
  EXPECT_EQ(budget.Used(), 100U);
}

TEST(PrefixBudgetTest, UnregisteringGivesTheUnitsBack) {
  PrefixBudget budget(100);
  std::optional<PrefixIndex> a(std::in_place, OneShard(100), budget);
  PrefixIndex b(OneShard(100), budget);
  RecordEach(*a, 1, 0, 60);
  RecordEach(b, 2, 0, 40);
  ASSERT_EQ(budget.Used(), 100U);
  a.reset();
  EXPECT_EQ(budget.Used(), 40U);
  EXPECT_EQ(b.Share(), 100U);
  RecordEach(b, 2, 40, 60);
  EXPECT_EQ(b.Size(), 100U);
  EXPECT_EQ(budget.Used(), 100U);
  // Detached, an index gives its units back and records nothing more (its destructor gives
  // nothing twice).
  EXPECT_EQ(b.Detach(), 100U);
  EXPECT_EQ(budget.Used(), 0U);
  EXPECT_EQ(budget.Registered(), 0U);
  RecordEach(b, 2, 0, 10);
  EXPECT_EQ(b.Size(), 0U);
  EXPECT_EQ(budget.Used(), 0U);
}

// Many threads record into several indexes that share a budget, while one builds and drops
// indexes of its own: the budget's total holds at every moment and matches the indexes exactly
// afterwards. Run it under ThreadSanitizer too.
TEST(PrefixBudgetTest, ConcurrentRecordsKeepTheTotalWithinTheLimit) {
  constexpr std::size_t kLimit = 3000;
  constexpr std::size_t kMax = 2000;
  PrefixBudget budget(kLimit);
  std::vector<std::unique_ptr<PrefixIndex>> indexes;
  indexes.reserve(3);
  for (int i = 0; i < 3; ++i) {
    indexes.push_back(
        std::make_unique<PrefixIndex>(PrefixIndex::Options{.max_blocks = kMax}, budget));
  }
  std::atomic<bool> done{false};
  std::atomic<int> violations{0};
  std::thread watcher([&] {
    while (!done.load()) {
      if (budget.Used() > kLimit) ++violations;
      for (const auto& index : indexes) {
        if (index->Size() > kMax) ++violations;
      }
      std::this_thread::yield();
    }
  });
  std::thread churn([&] {
    for (std::uint64_t round = 0; round < 200; ++round) {
      PrefixIndex passing(PrefixIndex::Options{.max_blocks = 500}, budget);
      std::vector<BlockHash> blocks(16);
      for (std::uint64_t k = 0; k < blocks.size(); ++k) blocks[k] = Block(100 + round, k);
      passing.Record(blocks, kA);
    }
  });
  std::vector<std::thread> threads;
  threads.reserve(6);
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::vector<BlockHash> blocks(8);
      for (int i = 0; i < 5000; ++i) {
        PrefixIndex& index = *indexes[rng() % indexes.size()];
        const std::uint64_t stream = rng() % 4096;
        for (std::uint64_t k = 0; k < blocks.size(); ++k) blocks[k] = Block(stream, k);
        index.Record(blocks, kA);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  churn.join();
  done = true;
  watcher.join();
  EXPECT_EQ(violations.load(), 0);
  std::size_t held = 0;
  for (const auto& index : indexes) held += index->Size();
  EXPECT_EQ(budget.Used(), held);
  EXPECT_LE(budget.Used(), kLimit);
  EXPECT_EQ(budget.Registered(), 3U);
}

}  // namespace
}  // namespace eoc::routing
