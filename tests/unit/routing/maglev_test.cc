#include "routing/maglev.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "routing/ids.h"

namespace eoc::routing {
namespace {

std::vector<MaglevTable::Entry> Entries(int n, std::int32_t weight = 1000) {
  std::vector<MaglevTable::Entry> entries;
  entries.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    entries.push_back({.key = WorkerKeyOf("prod/vllm-" + std::to_string(i)), .weight = weight});
  }
  return entries;
}

// The key each of `hashes` maps to (0 when none).
std::vector<WorkerKey> Owners(const std::vector<MaglevTable::Entry>& entries,
                              const std::vector<std::uint64_t>& hashes) {
  const MaglevTable table(entries);
  std::vector<WorkerKey> owners;
  owners.reserve(hashes.size());
  for (const std::uint64_t h : hashes) {
    const std::uint32_t i = table.Lookup(h);
    owners.push_back(i == MaglevTable::kNone ? 0 : entries[i].key);
  }
  return owners;
}

std::vector<std::uint64_t> Hashes(int n, std::uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> hashes(static_cast<std::size_t>(n));
  for (auto& h : hashes) h = rng();
  return hashes;
}

double MovedShare(const std::vector<WorkerKey>& before, const std::vector<WorkerKey>& after) {
  std::size_t moved = 0;
  for (std::size_t i = 0; i < before.size(); ++i) moved += before[i] != after[i] ? 1 : 0;
  return static_cast<double>(moved) / static_cast<double>(before.size());
}

bool IsPrime(std::uint32_t n) {
  if (n < 2) return false;
  for (std::uint32_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

TEST(MaglevTest, TableSizesArePrimesOfAtLeastAHundredSlotsAWorker) {
  EXPECT_TRUE(IsPrime(MaglevTable::kSmallTableSize));
  EXPECT_TRUE(IsPrime(MaglevTable::kLargeTableSize));
  for (const std::size_t n : {1U, 10U, 655U, 656U, 2000U, 2621U}) {
    EXPECT_GE(MaglevTable::TableSizeFor(n), 100 * n) << n;
  }
  EXPECT_EQ(MaglevTable::TableSizeFor(655), MaglevTable::kSmallTableSize);
  EXPECT_EQ(MaglevTable::TableSizeFor(656), MaglevTable::kLargeTableSize);
}

TEST(MaglevTest, SameEntriesInAnyOrderBuildTheSameTable) {
  std::vector<MaglevTable::Entry> entries = Entries(50);
  entries[7].weight = 300;
  const std::vector<std::uint64_t> hashes = Hashes(10'000);
  const std::vector<WorkerKey> first = Owners(entries, hashes);
  std::mt19937_64 rng(5);
  std::shuffle(entries.begin(), entries.end(), rng);
  EXPECT_EQ(Owners(entries, hashes), first);
}

TEST(MaglevTest, SlotsFollowWeights) {
  const std::vector<MaglevTable::Entry> entries = {{.key = 11, .weight = 1000},
                                                   {.key = 22, .weight = 500},
                                                   {.key = 33, .weight = 250},
                                                   {.key = 44, .weight = 0},
                                                   {.key = 55, .weight = 250}};
  const MaglevTable table(entries);
  EXPECT_EQ(table.table_size(), MaglevTable::kSmallTableSize);
  EXPECT_EQ(table.holders(), 4U);
  const std::vector<std::uint32_t> slots = table.SlotCounts(entries.size());
  EXPECT_EQ(slots[3], 0U);
  const double m = table.table_size();
  EXPECT_NEAR(slots[0] / m, 0.5, 0.001);
  EXPECT_NEAR(slots[1] / m, 0.25, 0.001);
  EXPECT_NEAR(slots[2] / m, 0.125, 0.001);
  EXPECT_NEAR(slots[4] / m, 0.125, 0.001);
}

TEST(MaglevTest, EqualWeightsBalance) {
  const std::vector<MaglevTable::Entry> entries = Entries(300);
  const MaglevTable table(entries);
  const std::vector<std::uint32_t> slots = table.SlotCounts(entries.size());
  const auto [lo, hi] = std::minmax_element(slots.begin(), slots.end());
  // 65,537 / 300 = 218.5 slots each; turns are exact, so at most one apart.
  EXPECT_LE(*hi - *lo, 1U);
}

TEST(MaglevTest, EmptyAndAllZeroTablesLookUpNothing) {
  const MaglevTable none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.Lookup(99), MaglevTable::kNone);
  EXPECT_EQ(none.Prefer(99).Next(), MaglevTable::kNone);
  const MaglevTable zeros(Entries(3, 0));
  EXPECT_TRUE(zeros.empty());
  EXPECT_EQ(zeros.Lookup(99), MaglevTable::kNone);
}

TEST(MaglevTest, RemovingAWorkerMovesItsHashesAndFewOthers) {
  std::vector<MaglevTable::Entry> entries = Entries(100);
  const std::vector<std::uint64_t> hashes = Hashes(100'000);
  const std::vector<WorkerKey> before = Owners(entries, hashes);
  const WorkerKey gone = entries[37].key;
  entries.erase(entries.begin() + 37);
  const std::vector<WorkerKey> after = Owners(entries, hashes);
  std::size_t others = 0;
  std::size_t others_moved = 0;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (before[i] == gone) {
      EXPECT_NE(after[i], gone);
      continue;
    }
    ++others;
    others_moved += before[i] != after[i] ? 1 : 0;
  }
  EXPECT_LE(static_cast<double>(others_moved) / static_cast<double>(others), 0.02);
}

TEST(MaglevTest, AWeightChangeMovesAboutTheWeightMoved) {
  std::vector<MaglevTable::Entry> entries = Entries(20);
  const std::vector<std::uint64_t> hashes = Hashes(100'000);
  const std::vector<WorkerKey> before = Owners(entries, hashes);
  entries[4].weight = 500;
  // Shares go from 1/20 each to 500/19,500 for one and 1,000/19,500 for the others: the least
  // any table can move is the share that one lost, 0.05 - 0.0256 = 2.4%.
  const double least = 0.05 - 500.0 / 19'500;
  const double moved = MovedShare(before, Owners(entries, hashes));
  EXPECT_GE(moved, least * 0.9);
  EXPECT_LE(moved, least * 2.5);
}

TEST(MaglevTest, PreferenceStartsAtTheLookupAndMeetsEachWorkerOnce) {
  const std::vector<MaglevTable::Entry> entries = Entries(5);
  const MaglevTable table(entries);
  for (const std::uint64_t h : Hashes(1000)) {
    MaglevTable::Preference preference = table.Prefer(h);
    std::vector<std::uint32_t> order;
    for (std::uint32_t i = preference.Next(); i != MaglevTable::kNone; i = preference.Next()) {
      order.push_back(i);
    }
    ASSERT_EQ(order.size(), 5U);
    EXPECT_EQ(order[0], table.Lookup(h));
    EXPECT_EQ(std::set<std::uint32_t>(order.begin(), order.end()).size(), 5U);
  }
}

TEST(MaglevTest, PreferenceIsBounded) {
  const std::vector<MaglevTable::Entry> entries = Entries(200);
  const MaglevTable table(entries);
  MaglevTable::Preference preference = table.Prefer(7);
  std::size_t n = 0;
  while (preference.Next() != MaglevTable::kNone) ++n;
  EXPECT_EQ(n, MaglevTable::kMaxPreference);
}

TEST(MaglevTest, SecondChoicesFollowWeightsToo) {
  std::vector<MaglevTable::Entry> entries = Entries(4);
  entries[0].weight = 3000;
  const MaglevTable table(entries);
  std::vector<int> second(4, 0);
  int counted = 0;
  for (const std::uint64_t h : Hashes(20'000)) {
    MaglevTable::Preference preference = table.Prefer(h);
    if (preference.Next() == 0) continue;
    ++second[preference.Next()];
    ++counted;
  }
  // Behind a first choice other than 0, worker 0 holds 3,000 of the 5,000 weight left.
  EXPECT_NEAR(static_cast<double>(second[0]) / counted, 0.6, 0.02);
}

}  // namespace
}  // namespace eoc::routing
