// The peers' routers as baselines: each does what its documentation says it does.
#include "sim/baseline.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace eoc::sim {
namespace {

const TraceRequest kRequest{.prompt_tokens = 100, .output_tokens = 10};

std::vector<RouterWorker> Outstanding(std::vector<std::int64_t> counts) {
  std::vector<RouterWorker> workers;
  for (const std::int64_t c : counts) workers.push_back({.outstanding = c});
  return workers;
}

TEST(Baseline, RoundRobinTakesEachWorkerInTurnWhateverItsLoad) {
  const auto router = MakeBaseline({.kind = BaselineKind::kRoundRobin});
  const std::vector<RouterWorker> workers = Outstanding({50, 0, 7});
  std::vector<std::size_t> order;
  for (int i = 0; i < 6; ++i) order.push_back(router->Choose(kRequest, workers, 0));
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(Baseline, LeastOutstandingTakesTheFewestInFlightTiesToTheFirst) {
  const auto router = MakeBaseline({.kind = BaselineKind::kLeastOutstanding});
  EXPECT_EQ(router->Choose(kRequest, Outstanding({5, 2, 9, 2}), 0), 1U);
  EXPECT_EQ(router->Choose(kRequest, Outstanding({0, 0, 0}), 123), 0U);
}

TEST(Baseline, PowerOfTwoTakesTheLessBusyOfTwoDistinctDraws) {
  const auto router = MakeBaseline({.kind = BaselineKind::kPowerOfTwo});
  std::mt19937_64 rng(1);
  // Worker 0 is far busier: whichever rival is drawn with it is less busy, so it is never taken.
  const std::vector<RouterWorker> workers = Outstanding({100, 0, 0, 0});
  std::map<std::size_t, int> chosen;
  for (int i = 0; i < 4000; ++i) ++chosen[router->Choose(kRequest, workers, rng())];
  EXPECT_EQ(chosen.count(0), 0U);
  // Of two idle workers, the first drawn: each of the three idle ones about a third of the time.
  for (std::size_t w = 1; w < 4; ++w) {
    EXPECT_GT(chosen[w], 1000) << w;
    EXPECT_LT(chosen[w], 1700) << w;
  }
  // With two workers, the less busy always, whichever is drawn first.
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(router->Choose(kRequest, Outstanding({3, 1}), rng()), 1U);
  }
  EXPECT_EQ(router->Choose(kRequest, Outstanding({3}), rng()), 0U);
}

TEST(Baseline, RandomSpreadsUniformlyAndIgnoresLoad) {
  const auto router = MakeBaseline({.kind = BaselineKind::kRandom});
  std::mt19937_64 rng(2);
  const std::vector<RouterWorker> workers = Outstanding({1000, 0, 0, 0});
  std::map<std::size_t, int> chosen;
  for (int i = 0; i < 8000; ++i) ++chosen[router->Choose(kRequest, workers, rng())];
  for (std::size_t w = 0; w < 4; ++w) {
    EXPECT_GT(chosen[w], 1800) << w;  // 2,000 each, give or take a few standard deviations
    EXPECT_LT(chosen[w], 2200) << w;
  }
}

TEST(Baseline, NamesAreTheScenarioFilesKinds) {
  EXPECT_EQ(ToString(BaselineKind::kPowerOfTwo), "power-of-two");
  EXPECT_EQ(EnumNamed("least-outstanding", kBaselineKindNames), BaselineKind::kLeastOutstanding);
  EXPECT_EQ(EnumNamed("p2c", kBaselineKindNames), std::nullopt);
}

}  // namespace
}  // namespace eoc::sim
