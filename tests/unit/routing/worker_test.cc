#include "routing/worker.h"

#include <gtest/gtest.h>

namespace eoc::routing {
namespace {

TEST(WorkerTest, EmptyModelsServeAnyModel) {
  const Capability any;
  EXPECT_TRUE(Serves(any, "llama-3-8b"));
  EXPECT_TRUE(Serves(any, ""));

  const Capability two{.models = {"llama-3-8b", "mistral-7b"}};
  EXPECT_TRUE(Serves(two, "mistral-7b"));
  EXPECT_FALSE(Serves(two, "qwen-2"));
  EXPECT_FALSE(Serves(two, "llama-3"));  // whole names only
  EXPECT_TRUE(Serves(two, ""));          // the pick did not say
}

TEST(WorkerTest, BusynessCountsPicksSinceTheScrape) {
  const Load load{.running = 10, .waiting = 2};
  EXPECT_DOUBLE_EQ(Busyness(load, 0, 16), 12.0 / 16);
  EXPECT_DOUBLE_EQ(Busyness(load, 4, 16), 1.0);
  EXPECT_GT(Busyness(load, 8, 16), 1.0);
  EXPECT_DOUBLE_EQ(Busyness(Load{}, 0, 16), 0.0);
}

TEST(WorkerTest, BusynessIsTheCountOrTheKvCacheWhicheverIsFuller) {
  Load load{.running = 64, .kv_cache_usage = 0.1};
  EXPECT_DOUBLE_EQ(Busyness(load, 0, 0), 64.0 / kDefaultMaxConcurrency);  // unknown concurrency
  EXPECT_DOUBLE_EQ(Busyness(load, 0, 128), 0.5);
  load.kv_cache_usage = 0.9;  // long prompts: the cache fills before the count says so
  EXPECT_DOUBLE_EQ(Busyness(load, 0, 0), 0.9);
  EXPECT_DOUBLE_EQ(Busyness(load, 0, 128), 0.9);
  load.kv_cache_usage = 1.0;
  EXPECT_GE(Busyness(load, 0, 0), 1.0);
  EXPECT_GE(Busyness(load, 0, 128), 1.0);
  load.kv_cache_usage = 7;  // a stray figure is read as full, not as seven workers' worth
  EXPECT_DOUBLE_EQ(Busyness(load, 0, 128), 1.0);
}

TEST(WorkerTest, ProfileGivesTheMarginalEnergyUntilTheLoadEstimatesIt) {
  const EnergyProfile profile{.idle_watts = 100, .max_watts = 400, .max_tokens_per_second = 1000};
  EXPECT_DOUBLE_EQ(profile.marginal_joules_per_token(), 0.3);
  EXPECT_DOUBLE_EQ(EnergyProfile{}.marginal_joules_per_token(), 0.0);
  EXPECT_DOUBLE_EQ((EnergyProfile{.idle_watts = 100, .max_watts = 400}.marginal_joules_per_token()),
                   0.0);

  Load load;
  EXPECT_DOUBLE_EQ(MarginalJoulesPerToken(load, profile), 0.3);
  load.marginal_joules_per_token = 0.5;
  EXPECT_DOUBLE_EQ(MarginalJoulesPerToken(load, profile), 0.5);
  EXPECT_DOUBLE_EQ(MarginalJoulesPerToken(Load{}, EnergyProfile{}), 0.0);
}

TEST(WorkerTest, ProjectedEnergyAndCarbon) {
  const EnergyProfile profile{.idle_watts = 100, .max_watts = 400, .max_tokens_per_second = 1000};
  Load load{.grid_g_per_kwh = 360};
  // 0.3 J/token x 1,000 tokens = 300 J.
  EXPECT_DOUBLE_EQ(ProjectedMicroJoules(load, profile, 1000), 300e6);
  // 300 J x 360 g/kWh / 3.6e6 J/kWh = 0.03 g.
  EXPECT_DOUBLE_EQ(ProjectedGCo2e(load, profile, 1000), 0.03);
  EXPECT_DOUBLE_EQ(MarginalGramsPerToken(load, profile), 0.3 * 360 / 3.6e6);
  EXPECT_DOUBLE_EQ(ProjectedMicroJoules(load, profile, 0), 0.0);

  load.grid_g_per_kwh = 0;  // unknown intensity: unknown carbon, not zero-carbon
  EXPECT_DOUBLE_EQ(ProjectedGCo2e(load, profile, 1000), 0.0);
  EXPECT_DOUBLE_EQ(ProjectedMicroJoules(load, EnergyProfile{}, 1000), 0.0);
}

TEST(WorkerTest, StrategyNamesAreTheCrdNames) {
  EXPECT_EQ(StrategyName(Strategy::kRoundRobin), "RoundRobin");
  EXPECT_EQ(StrategyName(Strategy::kLeastBusy), "LeastBusy");
  EXPECT_EQ(StrategyName(Strategy::kLatencyWeighted), "LatencyWeighted");
  EXPECT_EQ(StrategyName(Strategy::kJouleWeighted), "JouleWeighted");
  EXPECT_EQ(StrategyName(Strategy::kCarbonWeighted), "CarbonWeighted");
  EXPECT_EQ(StrategyNamed("LeastBusy"), Strategy::kLeastBusy);
  EXPECT_EQ(StrategyNamed("CarbonWeighted"), Strategy::kCarbonWeighted);
  EXPECT_EQ(StrategyNamed("carbonweighted"), std::nullopt);
  EXPECT_EQ(StrategyNamed(""), std::nullopt);
  EXPECT_TRUE(UsesEqualWeights(Strategy::kRoundRobin));
  EXPECT_TRUE(UsesEqualWeights(Strategy::kLeastBusy));
  EXPECT_FALSE(UsesEqualWeights(Strategy::kJouleWeighted));
  EXPECT_FALSE(UsesEqualWeights(Strategy::kCarbonWeighted));
  EXPECT_FALSE(UsesEqualWeights(Strategy::kLatencyWeighted));
}

}  // namespace
}  // namespace eoc::routing
