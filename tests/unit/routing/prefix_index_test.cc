#include "routing/prefix_index.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "colliding_keys.h"
#include "routing/prefix_hash.h"
#include "routing/sharded_lru.h"

namespace eoc::routing {
namespace {

constexpr WorkerKey kA = 0xA;
constexpr WorkerKey kB = 0xB;
constexpr WorkerKey kC = 0xC;

auto Anyone() {
  return [](WorkerKey /*worker*/) { return true; };
}

std::vector<BlockHash> Blocks(const std::string& prompt) { return PrefixHashes("m", prompt, 1); }

TEST(PrefixIndexTest, LongestMatchWins) {
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 1000}, budget);
  const auto shared = Blocks("sys:You are helpful.");                 // 5 blocks
  const auto longer = Blocks("sys:You are helpful.Tell me a story");  // 8 blocks, same first 5
  ASSERT_EQ(shared.size(), 5U);
  ASSERT_EQ(longer.size(), 8U);
  index.Record(shared, kA);
  index.Record(longer, kB);
  // The same story, continued: B holds 8 blocks of it, A only 5.
  const auto asked = Blocks("sys:You are helpful.Tell me a story about a cat");
  auto match = index.LongestMatch(asked, Anyone());
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->worker, kB);
  EXPECT_EQ(match->blocks, 8U);
  // A different question after the shared system prompt: both hold 5 blocks, the most recent
  // (B, recorded last) first.
  const auto other = Blocks("sys:You are helpful.What is 2 + 2?");
  match = index.LongestMatch(other, Anyone());
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->worker, kB);
  EXPECT_EQ(match->blocks, 5U);
  // A prompt that shares nothing.
  EXPECT_EQ(index.LongestMatch(Blocks("Completely unrelated"), Anyone()), std::nullopt);
  EXPECT_EQ(index.LongestMatch(std::vector<BlockHash>{}, Anyone()), std::nullopt);
}

TEST(PrefixIndexTest, IneligibleWorkersFallBackToShorterOrOtherHolders) {
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 1000}, budget);
  const auto shared = Blocks("sys:You are helpful.");
  const auto longer = Blocks("sys:You are helpful.Tell me a story");
  index.Record(shared, kA);
  index.Record(longer, kB);
  std::vector<WorkerKey> asked;
  const auto match = index.LongestMatch(longer, [&](WorkerKey worker) {
    asked.push_back(worker);
    return worker != kB;  // B is too busy
  });
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->worker, kA);
  EXPECT_EQ(match->blocks, 5U);
  EXPECT_EQ(asked, (std::vector<WorkerKey>{kB, kA}));  // each worker asked once
  EXPECT_EQ(index.LongestMatch(longer, [](WorkerKey) { return false; }), std::nullopt);
}

TEST(PrefixIndexTest, KeepsTheLastWorkersOfEachBlockMostRecentFirst) {
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 100}, budget);
  const auto blocks = Blocks("shared prefix!");
  for (const WorkerKey worker : {1, 2, 3, 4, 5, 2}) index.Record(blocks, worker);
  // Holders of the prefix now: 2, 5, 4, 3 (1 dropped out).
  std::vector<WorkerKey> order;
  const auto match = index.LongestMatch(blocks, [&](WorkerKey worker) {
    order.push_back(worker);
    return false;
  });
  EXPECT_EQ(match, std::nullopt);
  EXPECT_EQ(order, (std::vector<WorkerKey>{2, 5, 4, 3}));
  index.Record(blocks, 0);  // never recorded: 0 marks an empty place
  EXPECT_EQ(index.LongestMatch(blocks, [](WorkerKey w) { return w == 0; }), std::nullopt);
}

TEST(PrefixIndexTest, EvictsLeastRecentlyUsedBlocksDeepestFirst) {
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 10, .shards = 1}, budget);
  const auto first = Blocks(std::string(40, 'a'));   // 10 blocks
  const auto second = Blocks(std::string(40, 'b'));  // 10 others
  ASSERT_EQ(first.size(), 10U);
  index.Record(first, kA);
  EXPECT_EQ(index.Size(), 10U);
  index.Record(std::span(second).first(4), kB);
  EXPECT_EQ(index.Size(), 10U);
  // The first prompt lost its 4 deepest blocks, not its first ones.
  auto match = index.LongestMatch(first, Anyone());
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->worker, kA);
  EXPECT_EQ(match->blocks, 6U);
  match = index.LongestMatch(second, Anyone());
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->worker, kB);
  EXPECT_EQ(match->blocks, 4U);
  // Using a prefix again protects it: recording the first 6 again makes the second prompt's
  // blocks the oldest.
  index.Record(std::span(first).first(6), kC);
  index.Record(Blocks(std::string(16, 'z')), kC);  // 4 new blocks
  EXPECT_EQ(index.LongestMatch(second, Anyone()), std::nullopt);
  EXPECT_EQ(index.LongestMatch(first, Anyone())->blocks, 6U);
}

// Each shard evicts by its own recency, so a prompt can lose a shallow block and keep deeper ones.
// A deeper block's holders were still sent the whole prefix up to it: the match is the deepest
// block held, not the end of the unbroken run from the first.
TEST(PrefixIndexTest, AShallowBlockEvictedFromItsShardDoesNotHideDeeperOnes) {
  constexpr std::size_t kShards = 2;
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 8, .shards = kShards}, budget);
  ASSERT_EQ(index.ShardCount(), kShards);
  // Where the index keeps a block (the same layout and this process's key: 4 blocks per shard).
  const ShardedLru<char> layout(8, kShards, 1);
  auto blocks_in = [&](std::size_t shard, std::size_t count, BlockHash from) {
    std::vector<BlockHash> blocks;
    for (BlockHash b = from; blocks.size() < count; ++b) {
      if (layout.SlotOf(b).shard == shard) blocks.push_back(b);
    }
    return blocks;
  };
  // A prompt of 4 blocks: the second in shard 0, the others in shard 1.
  const auto zero = blocks_in(0, 5, 1);
  const auto one = blocks_in(1, 3, 1);
  const std::vector<BlockHash> prompt = {one[0], zero[0], one[1], one[2]};
  index.Record(prompt, kA);
  // Another prompt fills shard 0, evicting the first prompt's second block.
  index.Record(std::span(zero).subspan(1), kB);
  EXPECT_EQ(index.LongestMatch(std::span(prompt).subspan(1, 1), Anyone()), std::nullopt);
  for (const std::size_t held : {0, 2, 3}) {
    ASSERT_TRUE(index.LongestMatch(std::span(prompt).subspan(held, 1), Anyone())) << held;
  }
  const auto match = index.LongestMatch(prompt, Anyone());
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->worker, kA);
  EXPECT_EQ(match->blocks, 4U);
  // Only the first block left: the match is 1 block long.
  index.Record(std::vector<BlockHash>{one[0]}, kC);
  index.Record(blocks_in(1, 3, 1000), kC);
  const auto shorter = index.LongestMatch(prompt, Anyone());
  ASSERT_TRUE(shorter.has_value());
  EXPECT_EQ(shorter->worker, kC);
  EXPECT_EQ(shorter->blocks, 1U);
}

TEST(PrefixIndexTest, ShardedIndexKeepsItsBound) {
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 5000}, budget);
  EXPECT_GT(index.ShardCount(), 1U);
  std::mt19937_64 rng(1);
  for (int prompt = 0; prompt < 400; ++prompt) {
    std::vector<BlockHash> blocks(64);
    for (auto& block : blocks) block = rng();
    index.Record(blocks, static_cast<WorkerKey>(prompt % 7 + 1));
    ASSERT_LE(index.Size(), 5000U);
  }
  EXPECT_GE(index.Size(), 4500U);
}

TEST(PrefixIndexTest, UsesAtMost256Blocks) {
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 1000}, budget);
  std::vector<BlockHash> blocks(300);
  for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i] = 1000 + i;
  index.Record(blocks, kA);
  EXPECT_EQ(index.Size(), kMaxPrefixBlocks);
  const auto match = index.LongestMatch(blocks, Anyone());
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->blocks, kMaxPrefixBlocks);
}

TEST(PrefixIndexTest, ZeroMaxBlocksRecordsNothing) {
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 0}, budget);
  index.Record(Blocks("abcdef"), kA);
  EXPECT_EQ(index.Size(), 0U);
  EXPECT_EQ(index.LongestMatch(Blocks("abcdef"), Anyone()), std::nullopt);
}

// Many threads record and match at once (run it under ThreadSanitizer too): the bound holds and
// every match names a worker that was recorded for that prompt.
TEST(PrefixIndexTest, ConcurrentRecordsAndMatchesKeepTheBound) {
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 2000}, budget);
  std::atomic<int> violations{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 3000; ++i) {
        // 50 prompts of 32 blocks; prompt p only ever goes to workers 100p+1 .. 100p+3.
        const std::uint64_t p = rng() % 50;
        const auto blocks =
            PrefixHashes("m", std::string(std::size_t{32} * 4, static_cast<char>('A' + p)), 1);
        if (rng() % 2 == 0) {
          index.Record(blocks, 100 * p + 1 + rng() % 3);
        } else if (auto match = index.LongestMatch(blocks, Anyone())) {
          if (match->worker < 100 * p + 1 || match->worker > 100 * p + 3) ++violations;
        }
        if (index.Size() > 2000) ++violations;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_LE(index.Size(), 2000U);
}

TEST(PrefixIndexTest, MemoryPerBlockAtAMillionBlocks) {
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 1'000'000}, budget);
  std::mt19937_64 rng(3);
  std::vector<BlockHash> blocks(256);
  for (int prompt = 0; prompt < 4400; ++prompt) {  // 1,126,400 blocks recorded
    for (auto& block : blocks) block = rng();
    index.Record(blocks, static_cast<WorkerKey>(prompt % 100 + 1));
  }
  const std::size_t size = index.Size();
  EXPECT_GE(size, 990'000U);
  const double per_block = static_cast<double>(index.MemoryBytes()) / static_cast<double>(size);
  std::cout << "prefix index: " << size << " blocks, " << index.MemoryBytes() << " bytes, "
            << per_block << " bytes per block\n";
  RecordProperty("bytes_per_block", std::to_string(per_block));
  EXPECT_LE(per_block, 80.0);
}

// Prefix hashes are the clients' to send (x-eoc-prefix-hashes), and the index once placed them by a
// public, invertible mix: crafted hashes all fell in one shard (64 of 4,096 kept) and one slot.
// Placed by a keyed hash, they spread over every shard.
TEST(PrefixIndexTest, HashesCraftedToCollideSpreadOverTheShards) {
  const auto crafted = testing::CollidingKeys(4096);
  PrefixBudget budget;
  PrefixIndex index({.max_blocks = 4096, .shards = 64}, budget);
  ASSERT_EQ(index.ShardCount(), 64U);
  for (std::size_t from = 0; from < crafted.size(); from += kMaxPrefixBlocks) {
    index.Record(std::span(crafted).subspan(from, kMaxPrefixBlocks), kA);
  }
  EXPECT_GT(index.Size(), 3500U);  // crowded in one shard, 64 would stay
}

}  // namespace
}  // namespace eoc::routing
