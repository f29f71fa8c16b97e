#include "routing/weights.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace eoc::routing {
namespace {

using ::testing::ElementsAre;

// An available worker of concurrency 100 with `running` sequences.
WorkerLoad Worker(double running, double joules_per_token = 0.3) {
  return WorkerLoad{
      .load = {.running = running,
               .tokens_per_second = 1000,
               .marginal_joules_per_token = joules_per_token,
               .grid_g_per_kwh = 300,
               .available = true},
      .max_concurrency = 100,
  };
}

TEST(WeightsTest, RoundRobinAndLeastBusyWeighEveryWorkerAlikeButTheSaturated) {
  const std::vector<WorkerLoad> pool = {Worker(0), Worker(90, 0.9), Worker(100)};
  EXPECT_THAT(ComputeWeights(Strategy::kRoundRobin, pool), ElementsAre(1000, 1000, 0));
  EXPECT_THAT(ComputeWeights(Strategy::kLeastBusy, pool), ElementsAre(1000, 1000, 0));
}

TEST(WeightsTest, JouleWeightedFallsWithMarginalEnergy) {
  const std::vector<WorkerLoad> pool = {Worker(0, 0.3), Worker(0, 0.6), Worker(0, 1.2)};
  EXPECT_THAT(ComputeWeights(Strategy::kJouleWeighted, pool), ElementsAre(1000, 500, 250));
}

TEST(WeightsTest, JouleWeightedFallsWithBusyness) {
  const std::vector<WorkerLoad> pool = {Worker(0), Worker(50), Worker(75), Worker(100)};
  EXPECT_THAT(ComputeWeights(Strategy::kJouleWeighted, pool), ElementsAre(1000, 500, 250, 0));
}

TEST(WeightsTest, JouleWeightedComparesMarginalNotAverageEnergy) {
  // The busy worker spreads its idle power over more tokens, but the marginal joule is what one
  // more request costs: equal marginals weigh by headroom alone.
  std::vector<WorkerLoad> pool = {Worker(10), Worker(80)};
  pool[0].load.watts = 150;
  pool[1].load.watts = 390;
  EXPECT_THAT(ComputeWeights(Strategy::kJouleWeighted, pool), ElementsAre(1000, 222));
}

TEST(WeightsTest, JouleWeightedTakesTheProfileUntilTheLoadEstimates) {
  std::vector<WorkerLoad> pool = {Worker(0, 0), Worker(0, 0.3)};
  pool[0].profile = {.idle_watts = 100, .max_watts = 700, .max_tokens_per_second = 1000};  // 0.6
  EXPECT_THAT(ComputeWeights(Strategy::kJouleWeighted, pool), ElementsAre(500, 1000));
}

TEST(WeightsTest, UnknownEnergyCountsAsThePoolMedian) {
  const std::vector<WorkerLoad> pool = {Worker(0, 0.2), Worker(0, 0.4), Worker(0, 0)};
  // Unknown: the median of 0.2 and 0.4, 0.3: 0.2 / 0.3 of the best.
  EXPECT_THAT(ComputeWeights(Strategy::kJouleWeighted, pool), ElementsAre(1000, 500, 667));
  const std::vector<WorkerLoad> none = {Worker(0, 0), Worker(50, 0)};
  EXPECT_THAT(ComputeWeights(Strategy::kJouleWeighted, none), ElementsAre(1000, 500));
}

TEST(WeightsTest, CarbonWeightedFallsWithGridIntensityAndBusyness) {
  std::vector<WorkerLoad> pool = {Worker(0), Worker(0), Worker(50), Worker(0, 0.6)};
  pool[1].load.grid_g_per_kwh = 600;
  EXPECT_THAT(ComputeWeights(Strategy::kCarbonWeighted, pool), ElementsAre(1000, 500, 500, 500));
  // Joules alone do not tell: the cleaner grid wins despite twice the energy.
  std::vector<WorkerLoad> grids = {Worker(0, 0.3), Worker(0, 0.6)};
  grids[0].load.grid_g_per_kwh = 800;
  grids[1].load.grid_g_per_kwh = 100;
  EXPECT_THAT(ComputeWeights(Strategy::kCarbonWeighted, grids), ElementsAre(250, 1000));
}

TEST(WeightsTest, LatencyWeightedFallsWithQueueAndRisesWithTokenRate) {
  std::vector<WorkerLoad> pool = {Worker(0), Worker(1), Worker(3), Worker(1)};
  pool[2].load.waiting = 0;
  pool[3].load.tokens_per_second = 4000;  // a faster engine with a queue of 2 (itself included)
  // R / (queue + 1): 1000, 500, 250, 2000.
  EXPECT_THAT(ComputeWeights(Strategy::kLatencyWeighted, pool), ElementsAre(500, 250, 125, 1000));
}

TEST(WeightsTest, LatencyWeightedTakesTheProfileRateForAnIdleWorker) {
  std::vector<WorkerLoad> pool = {Worker(0), Worker(4)};
  pool[0].load.tokens_per_second = 0;  // idle engines report no rate
  pool[0].profile.max_tokens_per_second = 2000;
  EXPECT_THAT(ComputeWeights(Strategy::kLatencyWeighted, pool), ElementsAre(1000, 100));
}

TEST(WeightsTest, PicksSinceTheScrapeCountTowardsSaturation) {
  std::vector<WorkerLoad> pool = {Worker(0), Worker(60)};
  EXPECT_THAT(ComputeWeights(Strategy::kJouleWeighted, pool), ElementsAre(1000, 400));
  pool[1].picks_since_scrape = 40;
  for (const Strategy s : {Strategy::kRoundRobin, Strategy::kLeastBusy, Strategy::kLatencyWeighted,
                           Strategy::kJouleWeighted, Strategy::kCarbonWeighted}) {
    EXPECT_EQ(ComputeWeights(s, pool)[1], 0) << StrategyName(s);
  }
}

TEST(WeightsTest, AWorkerThatIsNotSaturatedKeepsSomeShare) {
  const std::vector<WorkerLoad> pool = {Worker(0, 0.001), Worker(99, 100)};
  EXPECT_THAT(ComputeWeights(Strategy::kJouleWeighted, pool), ElementsAre(1000, 1));
}

TEST(WeightsTest, UnavailableWorkersGetTheLowestNonZeroWeight) {
  std::vector<WorkerLoad> pool = {Worker(0, 0.3), Worker(0, 0.6), Worker(100), Worker(0)};
  pool[3].load.available = false;
  EXPECT_THAT(ComputeWeights(Strategy::kJouleWeighted, pool), ElementsAre(1000, 500, 0, 500));
  // No data anywhere yet (or only saturated workers): equal weights for the unknown.
  pool[0].load.available = false;
  pool[1].load.available = false;
  EXPECT_THAT(ComputeWeights(Strategy::kJouleWeighted, pool), ElementsAre(1000, 1000, 0, 1000));
}

TEST(WeightsTest, EmptyPool) { EXPECT_TRUE(ComputeWeights(Strategy::kJouleWeighted, {}).empty()); }

TEST(WeightsTest, WeightsStayWithinRangeWhateverTheInput) {
  std::vector<WorkerLoad> pool = {Worker(-5, -1), Worker(0, 1e-300), Worker(1e9), Worker(0, 1e300)};
  pool[0].load.tokens_per_second = -3;
  for (const Strategy s : {Strategy::kRoundRobin, Strategy::kLeastBusy, Strategy::kLatencyWeighted,
                           Strategy::kJouleWeighted, Strategy::kCarbonWeighted}) {
    for (const std::int32_t w : ComputeWeights(s, pool)) {
      EXPECT_GE(w, 0) << StrategyName(s);
      EXPECT_LE(w, kMaxWeight) << StrategyName(s);
    }
  }
}

}  // namespace
}  // namespace eoc::routing
