#include "routing/alias_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace eoc::routing {
namespace {

// Pearson's chi-square of `counts` against `weights` (cells of weight 0 must have count 0).
double ChiSquare(const std::vector<std::int64_t>& counts, const std::vector<std::int32_t>& weights,
                 std::int64_t draws) {
  double total = 0;
  for (const std::int32_t w : weights) total += w;
  double chi = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    const double expected = static_cast<double>(draws) * weights[i] / total;
    const double diff = static_cast<double>(counts[i]) - expected;
    chi += diff * diff / expected;
  }
  return chi;
}

std::vector<std::int64_t> Count(const AliasTable& table, std::int64_t draws, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> counts(table.size(), 0);
  for (std::int64_t k = 0; k < draws; ++k) ++counts.at(table.Draw(rng()));
  return counts;
}

TEST(AliasTableTest, DrawsInProportionToWeight) {
  const std::vector<std::int32_t> weights = {1000, 250, 0, 750, 1, 333};
  const AliasTable table(weights);
  EXPECT_FALSE(table.empty());
  EXPECT_EQ(table.size(), 6U);
  EXPECT_EQ(table.total_weight(), 2334U);
  constexpr std::int64_t kDraws = 400'000;
  const std::vector<std::int64_t> counts = Count(table, kDraws, 42);
  EXPECT_EQ(counts[2], 0);
  // 5 cells of positive weight: 4 degrees of freedom; 18.47 is the 0.999 quantile.
  EXPECT_LT(ChiSquare(counts, weights, kDraws), 18.47);
}

TEST(AliasTableTest, ManyUnequalWeightsStayWithinTolerance) {
  std::vector<std::int32_t> weights;
  weights.reserve(1000);
  for (int i = 0; i < 1000; ++i) weights.push_back(1 + (i * 7919) % 1000);
  const AliasTable table(weights);
  constexpr std::int64_t kDraws = 2'000'000;
  const std::vector<std::int64_t> counts = Count(table, kDraws, 7);
  // 999 degrees of freedom: mean 999, standard deviation about 44.7; 1,150 is 3.4 of them.
  EXPECT_LT(ChiSquare(counts, weights, kDraws), 1150);
}

TEST(AliasTableTest, ZeroAndNegativeWeightsAreNeverDrawn) {
  const AliasTable table(std::vector<std::int32_t>{0, 5, -3, 0, 5, 0});
  const std::vector<std::int64_t> counts = Count(table, 100'000, 1);
  EXPECT_EQ(counts[0] + counts[2] + counts[3] + counts[5], 0);
  EXPECT_NEAR(static_cast<double>(counts[1]) / 100'000, 0.5, 0.01);
  // The extremes of the random input too.
  for (const std::uint64_t r : {std::uint64_t{0}, ~std::uint64_t{0}, std::uint64_t{1} << 63}) {
    const std::size_t i = table.Draw(r);
    EXPECT_TRUE(i == 1 || i == 4) << r;
  }
}

TEST(AliasTableTest, OneWorkerOfWeightIsAlwaysDrawn) {
  const AliasTable table(std::vector<std::int32_t>{0, 0, 1, 0});
  std::mt19937_64 rng(3);
  for (int k = 0; k < 10'000; ++k) ASSERT_EQ(table.Draw(rng()), 2U);
}

TEST(AliasTableTest, EmptyAndAllZeroTablesDrawNothing) {
  const AliasTable none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.Draw(12345), AliasTable::kNone);

  const AliasTable zeros(std::vector<std::int32_t>{0, 0, 0});
  EXPECT_TRUE(zeros.empty());
  EXPECT_EQ(zeros.size(), 3U);
  EXPECT_EQ(zeros.Draw(0), AliasTable::kNone);
  EXPECT_EQ(zeros.Draw(~std::uint64_t{0}), AliasTable::kNone);
}

TEST(AliasTableTest, RefusesWeightsThatWouldOverflow) {
  const std::vector<std::int32_t> huge(1 << 16, 0x7FFFFFFF);
  EXPECT_THROW(AliasTable{huge}, std::length_error);
  // A full routing table is far from the limit.
  const std::vector<std::int32_t> pool(2000, 1000);
  EXPECT_NO_THROW(AliasTable{pool});
}

TEST(AliasTableTest, ThreadsDrawFromOneTableWithTheirOwnRandomness) {
  const std::vector<std::int32_t> weights = {600, 300, 100};
  const AliasTable table(weights);
  constexpr int kThreads = 8;
  constexpr std::int64_t kDraws = 100'000;
  std::vector<std::vector<std::int64_t>> counts(kThreads, std::vector<std::int64_t>(3, 0));
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      for (std::int64_t k = 0; k < kDraws; ++k) ++counts[t][table.Draw(rng())];
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<std::int64_t> sum(3, 0);
  for (const auto& c : counts) {
    for (std::size_t i = 0; i < 3; ++i) sum[i] += c[i];
  }
  // 2 degrees of freedom: 13.82 is the 0.999 quantile.
  EXPECT_LT(ChiSquare(sum, weights, kThreads * kDraws), 13.82);
}

}  // namespace
}  // namespace eoc::routing
