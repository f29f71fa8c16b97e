#include "routing/weight_keeper.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <vector>

namespace eoc::routing {
namespace {

using std::chrono::seconds;
using ::testing::ElementsAre;
using Clock = std::chrono::steady_clock;

constexpr auto kInterval = seconds(5);
const Clock::time_point kT0 = Clock::time_point() + std::chrono::hours(1);

// A worker whose metrics are available (or not).
WorkerLoad Load(bool available) { return {.load = {.available = available}}; }

// One round of the pool: keys, availability and ComputeWeights' output, worker by worker.
struct Round {
  std::vector<WorkerKey> keys;
  std::vector<WorkerLoad> loads;
  std::vector<std::int32_t> computed;
};

Round Of(std::initializer_list<std::tuple<WorkerKey, bool, std::int32_t>> workers) {
  Round r;
  for (const auto& [key, available, weight] : workers) {
    r.keys.push_back(key);
    r.loads.push_back(Load(available));
    r.computed.push_back(weight);
  }
  return r;
}

std::vector<std::int32_t> Keep(WeightKeeper& keeper, const Round& r, Clock::time_point now) {
  return keeper.Keep(r.keys, r.loads, r.computed, now);
}

TEST(WeightKeeperTest, AvailableWorkersGetTheirComputedWeights) {
  WeightKeeper keeper(kInterval);
  EXPECT_THAT(Keep(keeper, Of({{1, true, 1000}, {2, true, 400}}), kT0), ElementsAre(1000, 400));
  EXPECT_THAT(Keep(keeper, Of({{1, true, 700}, {2, true, 1000}}), kT0 + kInterval),
              ElementsAre(700, 1000));
}

TEST(WeightKeeperTest, AnUnavailableWorkerKeepsItsLastWeightForThreeIntervals) {
  WeightKeeper keeper(kInterval);
  Keep(keeper, Of({{1, true, 1000}, {2, true, 800}, {3, true, 200}}), kT0);
  // Worker 2's metrics are gone: ComputeWeights gives it the lowest non-zero weight, 200.
  const Round missing = Of({{1, true, 1000}, {2, false, 200}, {3, true, 200}});
  EXPECT_THAT(Keep(keeper, missing, kT0 + kInterval), ElementsAre(1000, 800, 200));
  EXPECT_THAT(Keep(keeper, missing, kT0 + 2 * kInterval), ElementsAre(1000, 800, 200));
  EXPECT_THAT(Keep(keeper, missing, kT0 + 3 * kInterval - std::chrono::milliseconds(1)),
              ElementsAre(1000, 800, 200));
}

TEST(WeightKeeperTest, AtThreeIntervalsItDropsToTheLowestNonZeroWeight) {
  WeightKeeper keeper(kInterval);
  Keep(keeper, Of({{1, true, 1000}, {2, true, 800}, {3, true, 200}}), kT0);
  const Round missing = Of({{1, true, 1000}, {2, false, 200}, {3, true, 200}});
  EXPECT_THAT(Keep(keeper, missing, kT0 + 3 * kInterval), ElementsAre(1000, 200, 200));
  EXPECT_THAT(Keep(keeper, missing, kT0 + 10 * kInterval), ElementsAre(1000, 200, 200));
}

TEST(WeightKeeperTest, TheAgeCountsFromTheLastRoundThatSawTheWorkerAvailable) {
  WeightKeeper keeper(kInterval);
  Keep(keeper, Of({{1, true, 1000}, {2, true, 800}}), kT0);
  Keep(keeper, Of({{1, true, 1000}, {2, true, 600}}), kT0 + kInterval);  // its last weight
  const Round missing = Of({{1, true, 1000}, {2, false, 1000}});
  EXPECT_THAT(Keep(keeper, missing, kT0 + 2 * kInterval), ElementsAre(1000, 600));
  EXPECT_THAT(Keep(keeper, missing, kT0 + 4 * kInterval - seconds(1)), ElementsAre(1000, 600));
  EXPECT_THAT(Keep(keeper, missing, kT0 + 4 * kInterval), ElementsAre(1000, 1000));
}

TEST(WeightKeeperTest, DataReturningEndsTheHoldAndStartsAFreshOne) {
  WeightKeeper keeper(kInterval);
  Keep(keeper, Of({{1, true, 1000}, {2, true, 800}}), kT0);
  Keep(keeper, Of({{1, true, 1000}, {2, false, 1000}}), kT0 + 5 * kInterval);  // dropped
  EXPECT_THAT(Keep(keeper, Of({{1, true, 1000}, {2, true, 300}}), kT0 + 6 * kInterval),
              ElementsAre(1000, 300));
  EXPECT_THAT(Keep(keeper, Of({{1, true, 1000}, {2, false, 1000}}), kT0 + 7 * kInterval),
              ElementsAre(1000, 300));
}

TEST(WeightKeeperTest, AWorkerNeverSeenAvailableGetsTheComputedWeightAtOnce) {
  WeightKeeper keeper(kInterval);
  EXPECT_THAT(Keep(keeper, Of({{1, true, 1000}, {2, false, 1000}}), kT0), ElementsAre(1000, 1000));
  EXPECT_THAT(Keep(keeper, Of({{1, true, 500}, {2, false, 500}}), kT0 + kInterval),
              ElementsAre(500, 500));
}

TEST(WeightKeeperTest, ASaturatedWorkerThatGoesQuietKeepsWeightZero) {
  WeightKeeper keeper(kInterval);
  Keep(keeper, Of({{1, true, 1000}, {2, true, 0}}), kT0);
  EXPECT_THAT(Keep(keeper, Of({{1, true, 1000}, {2, false, 1000}}), kT0 + kInterval),
              ElementsAre(1000, 0));
  EXPECT_THAT(Keep(keeper, Of({{1, true, 1000}, {2, false, 1000}}), kT0 + 3 * kInterval),
              ElementsAre(1000, 1000));
}

TEST(WeightKeeperTest, WorkersThatLeftAreForgotten) {
  WeightKeeper keeper(kInterval);
  Keep(keeper, Of({{1, true, 1000}, {2, true, 800}, {3, true, 400}}), kT0);
  EXPECT_EQ(keeper.size(), 3U);
  Keep(keeper, Of({{1, true, 1000}}), kT0 + kInterval);
  EXPECT_EQ(keeper.size(), 1U);
  // Worker 2 comes back without metrics: its old weight was forgotten with it.
  EXPECT_THAT(Keep(keeper, Of({{1, true, 1000}, {2, false, 1000}}), kT0 + 2 * kInterval),
              ElementsAre(1000, 1000));
  Keep(keeper, Of({}), kT0 + 3 * kInterval);
  EXPECT_EQ(keeper.size(), 0U);
}

TEST(WeightKeeperTest, MemoryIsBoundedByTheLastRound) {
  WeightKeeper keeper(kInterval);
  for (WorkerKey k = 0; k < 1000; ++k) {  // a pool whose pods are all replaced, round by round
    Keep(keeper, Of({{k, true, 1000}, {k + 1, false, 1000}}), kT0 + k * kInterval);
    EXPECT_LE(keeper.size(), 2U);
  }
}

TEST(WeightKeeperTest, OrderDoesNotMatterOnlyKeys) {
  WeightKeeper keeper(kInterval);
  Keep(keeper, Of({{1, true, 1000}, {2, true, 800}}), kT0);
  EXPECT_THAT(Keep(keeper, Of({{2, false, 1000}, {1, true, 1000}}), kT0 + kInterval),
              ElementsAre(800, 1000));
}

TEST(WeightKeeperTest, ANewIntervalAppliesToTheRecordsKept) {
  WeightKeeper keeper(kInterval);
  Keep(keeper, Of({{1, true, 1000}, {2, true, 800}}), kT0);
  keeper.set_scrape_interval(seconds(20));
  EXPECT_EQ(keeper.scrape_interval(), seconds(20));
  EXPECT_THAT(Keep(keeper, Of({{1, true, 1000}, {2, false, 1000}}), kT0 + seconds(59)),
              ElementsAre(1000, 800));
  EXPECT_THAT(Keep(keeper, Of({{1, true, 1000}, {2, false, 1000}}), kT0 + seconds(60)),
              ElementsAre(1000, 1000));
}

TEST(WeightKeeperTest, MismatchedInputsAreRefusedAndChangeNothing) {
  WeightKeeper keeper(kInterval);
  Keep(keeper, Of({{1, true, 1000}, {2, true, 800}}), kT0);
  Round r = Of({{1, true, 1000}, {2, false, 1000}});
  r.computed.pop_back();
  EXPECT_THROW(Keep(keeper, r, kT0 + kInterval), std::invalid_argument);
  EXPECT_THROW(Keep(keeper, Of({{2, false, 1000}, {2, false, 1000}}), kT0 + kInterval),
               std::invalid_argument);
  EXPECT_EQ(keeper.size(), 2U);
  EXPECT_THAT(Keep(keeper, Of({{1, true, 1000}, {2, false, 1000}}), kT0 + kInterval),
              ElementsAre(1000, 800));
}

TEST(WeightKeeperTest, WorksWithComputeWeights) {
  // The pairing the header shows: ComputeWeights, then the keeper.
  std::vector<WorkerLoad> loads(3, WorkerLoad{.load = {.running = 0,
                                                       .tokens_per_second = 1000,
                                                       .marginal_joules_per_token = 0.3,
                                                       .available = true},
                                              .max_concurrency = 100});
  loads[1].load.marginal_joules_per_token = 0.6;
  loads[2].load.marginal_joules_per_token = 1.2;
  const std::vector<WorkerKey> keys = {11, 12, 13};
  WeightKeeper keeper(kInterval);
  auto computed = ComputeWeights(Strategy::kJouleWeighted, loads);
  EXPECT_THAT(keeper.Keep(keys, loads, computed, kT0), ElementsAre(1000, 500, 250));
  loads[1].load.available = false;
  computed = ComputeWeights(Strategy::kJouleWeighted, loads);
  EXPECT_THAT(computed, ElementsAre(1000, 250, 250));
  EXPECT_THAT(keeper.Keep(keys, loads, computed, kT0 + kInterval), ElementsAre(1000, 500, 250));
  EXPECT_THAT(keeper.Keep(keys, loads, computed, kT0 + 3 * kInterval), ElementsAre(1000, 250, 250));
}

}  // namespace
}  // namespace eoc::routing
