// Herding, the failure routers' users report most: a burst of new requests arriving together,
// with every worker's scraped load equal and stale (no scrape lands during the burst), must not
// pile onto one worker. The picks this replica sends count against a worker until its next scrape
// (PoolState's picks since the scrape), so every strategy spreads the burst evenly. Likewise a
// stream of prompts that match no cached prefix must spread under prefix affinity.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "pool_state_fixture.h"
#include "routing/prefix_hash.h"

namespace eoc::routing::testing {
namespace {

constexpr int kBurst = 1000;
// The most one of `n` workers may take. The bar users set is 2/n of the burst (twice a worker's
// share); the picks since the scrape hold every strategy to within half again its share (at most
// 18 of 1,000 on one of 64 workers, against a share of 15.6), where strategies that ignored them
// would place the burst by their random draws alone (26 on one of 64: checked by making Busyness
// leave the picks out).
constexpr int MostAllowed(int n) { return kBurst * 3 / (2 * n); }

class HerdingTest : public PoolStateTest,
                    public ::testing::WithParamInterface<std::tuple<Strategy, int>> {};

// The most picks any one worker took of `picks`.
int MostOnOne(const std::map<std::string, int>& picks) {
  int most = 0;
  for (const auto& [pod, n] : picks) most = std::max(most, n);
  return most;
}

TEST_P(HerdingTest, ABurstOnEqualStaleLoadsSpreadsOverTheWorkers) {
  const auto [strategy, n] = GetParam();
  Start(Workers(n), strategy);
  for (int i = 0; i < n; ++i) Observe(i, LoadOf(10));  // equal, and stale from here on
  std::map<std::string, int> picks;
  for (int r = 0; r < kBurst; ++r) {
    const PickOutcome out = Pick({});
    ASSERT_TRUE(out.picked()) << Where(out);
    ++picks[out.worker().pod];
  }
  EXPECT_LE(MostOnOne(picks), MostAllowed(n)) << StrategyName(strategy) << " on " << n;
}

TEST_P(HerdingTest, AStreamOfCacheMissesUnderPrefixAffinitySpreads) {
  const auto [strategy, n] = GetParam();
  Start(Workers(n), strategy);
  for (int i = 0; i < n; ++i) Observe(i, LoadOf(10));
  std::map<std::string, int> picks;
  for (int r = 0; r < kBurst; ++r) {
    // Each prompt its own: no prefix is cached anywhere when it comes.
    const std::string prompt = "request " + std::to_string(r) + " " + PromptOf('x', 4);
    const std::vector<BlockHash> prefix = PrefixHashes("llama", prompt, 16);
    ASSERT_FALSE(prefix.empty());
    const PickOutcome out = Pick({.prefix = prefix});
    ASSERT_TRUE(out.picked()) << Where(out);
    ++picks[out.worker().pod];
  }
  EXPECT_LE(MostOnOne(picks), MostAllowed(n)) << StrategyName(strategy) << " on " << n;
}

INSTANTIATE_TEST_SUITE_P(
    EveryStrategy, HerdingTest,
    ::testing::Combine(::testing::Values(Strategy::kRoundRobin, Strategy::kLeastBusy,
                                         Strategy::kLatencyWeighted, Strategy::kJouleWeighted,
                                         Strategy::kCarbonWeighted),
                       ::testing::Values(4, 16, 64)),
    [](const ::testing::TestParamInfo<HerdingTest::ParamType>& param) {
      return std::string(StrategyName(std::get<0>(param.param))) + "On" +
             std::to_string(std::get<1>(param.param));
    });

}  // namespace
}  // namespace eoc::routing::testing
