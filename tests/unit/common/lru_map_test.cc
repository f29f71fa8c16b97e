#include "common/lru_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <list>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace eoc {
namespace {

template <typename K>
std::vector<K> KeysByRecency(const LruMap<K, int>& map) {
  std::vector<K> keys;
  map.ForEach([&](const K& key, int /*value*/) { keys.push_back(key); });
  return keys;
}

TEST(LruMapTest, FindsTouchesAndEvictsLeastRecentlyUsed) {
  LruMap<std::uint64_t, int> map(3);
  EXPECT_TRUE(map.Empty());
  EXPECT_EQ(map.Find(1), nullptr);
  map.Insert(1, 10);
  map.Insert(2, 20);
  map.Insert(3, 30);
  EXPECT_TRUE(map.Full());
  EXPECT_EQ(KeysByRecency(map), (std::vector<std::uint64_t>{3, 2, 1}));
  // Find leaves recency alone; Touch makes the entry the most recent.
  ASSERT_NE(map.Find(1), nullptr);
  EXPECT_EQ(map.OldestKey(), 1U);
  ASSERT_NE(map.Touch(1), nullptr);
  EXPECT_EQ(*map.Touch(1), 10);
  EXPECT_EQ(map.OldestKey(), 2U);
  map.PopOldest();
  EXPECT_EQ(map.Find(2), nullptr);
  map.Insert(4, 40);
  EXPECT_EQ(KeysByRecency(map), (std::vector<std::uint64_t>{4, 1, 3}));
  EXPECT_TRUE(map.Erase(1));
  EXPECT_FALSE(map.Erase(1));
  EXPECT_EQ(map.Size(), 2U);
  EXPECT_EQ(KeysByRecency(map), (std::vector<std::uint64_t>{4, 3}));
}

TEST(LruMapTest, ZeroCapacityIsAlwaysFull) {
  const LruMap<std::uint64_t, int> map(0);
  EXPECT_TRUE(map.Full());
  EXPECT_TRUE(map.Empty());
  EXPECT_EQ(map.Find(7), nullptr);
}

// Random operations against a plain list-and-map model: the same answers and the same order,
// through growth, slot reuse and backward-shift deletion (few distinct keys, so probe chains
// collide and wrap often). `make_key` turns a number into a key of type K.
template <typename K, typename MakeKey>
void CheckAgainstAReferenceModel(MakeKey make_key) {
  constexpr std::size_t kCapacity = 300;
  LruMap<K, int> map(kCapacity);
  std::list<std::pair<K, int>> order;  // most recent first
  std::unordered_map<K, typename decltype(order)::iterator> where;
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::uint64_t> key_of(0, 600);
  for (int step = 0; step < 200'000; ++step) {
    const K key = make_key(key_of(rng));
    const auto op = rng() % 4;
    const auto found = where.find(key);
    if (op == 0) {
      const int* value = map.Find(key);
      ASSERT_EQ(value != nullptr, found != where.end());
      if (value != nullptr) {
        ASSERT_EQ(*value, found->second->second);
      }
    } else if (op == 1) {
      int* value = map.Touch(key);
      ASSERT_EQ(value != nullptr, found != where.end());
      if (value != nullptr) {
        ASSERT_EQ(*value, found->second->second);
        order.splice(order.begin(), order, found->second);
      }
    } else if (op == 2) {
      ASSERT_EQ(map.Erase(key), found != where.end());
      if (found != where.end()) {
        order.erase(found->second);
        where.erase(found);
      }
    } else if (found == where.end()) {
      if (map.Full()) {
        ASSERT_EQ(map.OldestKey(), order.back().first);
        map.PopOldest();
        where.erase(order.back().first);
        order.pop_back();
      }
      const int value = step;
      map.Insert(key, value);
      order.emplace_front(key, value);
      where[key] = order.begin();
    }
    ASSERT_EQ(map.Size(), order.size());
    ASSERT_LE(map.Size(), kCapacity);
  }
  std::vector<K> expected;
  for (const auto& [key, value] : order) expected.push_back(key);
  EXPECT_EQ(KeysByRecency(map), expected);
}

TEST(LruMapTest, MatchesAReferenceModel) {
  CheckAgainstAReferenceModel<std::uint64_t>([](std::uint64_t n) { return n; });
}

TEST(LruMapTest, MatchesAReferenceModelWithStringKeys) {
  CheckAgainstAReferenceModel<std::string>(
      [](std::uint64_t n) { return "pod/" + std::to_string(n); });
}

// Put, as the event recorder's caches use it: inserts or replaces, and forgets the least recently
// used past the capacity.
TEST(LruMapTest, PutForgetsTheLeastRecentlyUsed) {
  LruMap<std::string, int> map(2);
  map.Put("a", 1);
  map.Put("b", 2);
  ASSERT_NE(map.Touch("a"), nullptr);  // "a" is now the most recent
  map.Put("c", 3);
  EXPECT_EQ(map.Find("b"), nullptr);
  EXPECT_EQ(*map.Find("a"), 1);
  EXPECT_EQ(*map.Find("c"), 3);
  EXPECT_EQ(map.Put("a", 10), 10);
  EXPECT_EQ(*map.Find("a"), 10);
  EXPECT_EQ(map.Size(), 2U);
  EXPECT_EQ(KeysByRecency(map), (std::vector<std::string>{"a", "c"}));
}

// The default hash mixes integer keys, so that consecutive ones do not fill consecutive slots.
TEST(LruHashTest, MixesIntegersAndHashesTheRest) {
  EXPECT_EQ(LruHash<std::uint64_t>{}(7), Mix64(7));
  EXPECT_NE(LruHash<std::uint64_t>{}(1) + 1, LruHash<std::uint64_t>{}(2));
  EXPECT_EQ(LruHash<std::string>{}("a"), std::hash<std::string>{}("a"));
}

TEST(LruMapTest, StorageStopsAtCapacity) {
  LruMap<std::uint64_t, std::uint64_t> map(10'000);
  for (std::uint64_t key = 0; key < 50'000; ++key) {
    if (map.Full()) map.PopOldest();
    map.Insert(key, key);
  }
  EXPECT_EQ(map.Size(), 10'000U);
  for (std::uint64_t key = 40'000; key < 50'000; ++key) ASSERT_NE(map.Find(key), nullptr);
  // Nodes: key, value and links (24 bytes), exactly 10,000 of them; slots: 16,384 (a load of 0.61).
  EXPECT_LE(map.MemoryBytes(), 10'000 * 24 + 16'384 * 4 + sizeof(map));
}

}  // namespace
}  // namespace eoc
