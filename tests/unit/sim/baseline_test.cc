// The peers' routers as baselines: each does what its documentation says it does.
#include "sim/baseline.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>
#include <vector>

namespace eoc::sim {
namespace {

const TraceRequest kRequest{.prompt_tokens = 100, .output_tokens = 10};

std::vector<RouterWorker> Outstanding(const std::vector<std::int64_t>& counts) {
  std::vector<RouterWorker> workers;
  workers.reserve(counts.size());
  for (const std::int64_t c : counts) workers.push_back({.outstanding = c});
  return workers;
}

TEST(Baseline, RoundRobinTakesEachWorkerInTurnWhateverItsLoad) {
  const auto router = MakeBaseline({.kind = BaselineKind::kRoundRobin});
  const std::vector<RouterWorker> workers = Outstanding({50, 0, 7});
  std::vector<std::size_t> order(6);
  for (std::size_t& chosen : order) chosen = router->Choose(kRequest, workers, 0);
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

// A request of `blocks` 16-token prefix blocks, all of it blocks, at `at` seconds; blocks are
// chained hashes in the trace, so a shared prefix is a shared run of leading values.
TraceRequest Prompt(std::vector<std::uint64_t> blocks, double at = 0) {
  const auto tokens = static_cast<std::int32_t>(blocks.size() * 16);
  return {.arrival_seconds = at,
          .prompt_tokens = tokens,
          .output_tokens = 8,
          .prefix_blocks = std::move(blocks)};
}

std::vector<RouterWorker> Ids(const std::vector<std::int64_t>& counts) {
  std::vector<RouterWorker> workers;
  workers.reserve(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    workers.push_back({.id = 100 + i, .outstanding = counts[i]});
  }
  return workers;
}

TEST(SglangCacheAware, AMatchAboveTheThresholdGoesWhereThePrefixWasSent) {
  const auto router = MakeBaseline({.kind = BaselineKind::kSglangCacheAware});
  const std::vector<RouterWorker> workers = Ids({0, 0, 0});
  // Nothing matches yet: the smallest tree (all empty: the first) takes it, and holds it now.
  EXPECT_EQ(router->Choose(Prompt({1, 2, 3, 4}), workers, 0), 0U);
  // The next prompt shares nothing: the smallest tree is now the second worker's.
  EXPECT_EQ(router->Choose(Prompt({9, 8}), workers, 0), 1U);
  // Three of four blocks match the first worker's tree: 0.75 > 0.3.
  EXPECT_EQ(router->Choose(Prompt({1, 2, 3, 7}), workers, 0), 0U);
  // One block of five matches (0.2 <= 0.3): the smallest tree instead, the third worker's.
  EXPECT_EQ(router->Choose(Prompt({1, 5, 6, 7, 8}), workers, 0), 2U);
}

TEST(SglangCacheAware, PastBothBalanceThresholdsTheShortestQueueWinsOverTheCache) {
  const auto router = MakeBaseline({.kind = BaselineKind::kSglangCacheAware});
  EXPECT_EQ(router->Choose(Prompt({1, 2, 3, 4}), Ids({0, 0}), 0), 0U);
  // 70 in flight against 5: 65 > 64 and 70 > 1.5 x 5, imbalanced: the second worker.
  EXPECT_EQ(router->Choose(Prompt({1, 2, 3, 4}), Ids({70, 5}), 0), 1U);
  // 64 against 0 is not past the absolute threshold: the cache decides (the first worker).
  EXPECT_EQ(router->Choose(Prompt({1, 2, 3, 4}), Ids({64, 0}), 0), 0U);
  // 100 against 80: a gap of 20, not past 64: balanced, the cache decides.
  EXPECT_EQ(router->Choose(Prompt({1, 2, 3, 4}), Ids({100, 80}), 0), 0U);
  // Both thresholds must be passed: with an absolute threshold of 10, a gap of 50 is past it...
  BaselineSpec loose{.kind = BaselineKind::kSglangCacheAware};
  loose.cache_aware.balance_abs_threshold = 10;
  const auto other = MakeBaseline(loose);
  EXPECT_EQ(other->Choose(Prompt({1, 2}), Ids({0, 0}), 0), 0U);
  // ...but 200 is not above 1.5 x 150: balanced, the cache decides.
  EXPECT_EQ(other->Choose(Prompt({1, 2}), Ids({200, 150}), 0), 0U);
}

TEST(SglangCacheAware, PeriodicEvictionCutsTheTreesTailsFirst) {
  BaselineSpec spec{.kind = BaselineKind::kSglangCacheAware};
  spec.cache_aware.max_tree_size = 1;
  spec.cache_aware.eviction_interval_seconds = 60;
  const std::vector<RouterWorker> workers = Ids({0, 0});
  // Worker 0 holds {1}, worker 1 holds {3, 4, 5}; then a prompt 3, 4, 5, 6 comes.
  const auto Replay = [&](double at) {
    const auto router = MakeBaseline(spec);
    EXPECT_EQ(router->Choose(Prompt({1}, 0), workers, 0), 0U);
    EXPECT_EQ(router->Choose(Prompt({3, 4, 5}, 1), workers, 0), 1U);
    return router->Choose(Prompt({3, 4, 5, 6}, at), workers, 0);
  };
  // Before the interval: three of its four blocks match worker 1's tree (0.75 > 0.3).
  EXPECT_EQ(Replay(30), 1U);
  // At 61 s the trees are cut to one block each, the tail first: worker 1 keeps {3}, a quarter
  // of the prompt (0.25 <= 0.3), so the smallest tree takes it (a tie of one block: the first).
  EXPECT_EQ(Replay(61), 0U);
}

TEST(SglangCacheAware, AWorkerThatLeftLosesItsTreeAtTheNextEviction) {
  const auto Replay = [](double return_at) {
    const auto router = MakeBaseline({.kind = BaselineKind::kSglangCacheAware});
    const RouterWorker a{.id = 1};
    const RouterWorker b{.id = 2};
    EXPECT_EQ(router->Choose(Prompt({1, 2, 3, 4}, 0), std::vector<RouterWorker>{a}, 0), 0U);
    // `a` leaves: only `b` is there when a prompt without blocks comes (it adds to no tree).
    EXPECT_EQ(router->Choose(Prompt({}, return_at), std::vector<RouterWorker>{b}, 0), 0U);
    // `a` is back: does its tree still hold the prompt? (b first: a tie of empty trees is b's.)
    return router->Choose(Prompt({1, 2, 3, 4}, return_at + 1), std::vector<RouterWorker>{b, a}, 0);
  };
  EXPECT_EQ(Replay(30), 1U);  // no eviction yet: a's tree matches the whole prompt
  EXPECT_EQ(Replay(61), 0U);  // the eviction at 61 s dropped a's tree: no match, b's turn
}

// llm-d's default profile: what each of its scorers reads decides, in the documented weights.
RouterWorker Engine(std::uint64_t id, std::int64_t waiting, double kv_cache_usage) {
  return {.id = id,
          .waiting = waiting,
          .kv_cache_usage = kv_cache_usage,
          .kv_capacity_tokens = 100'000};
}

TEST(LlmdScorer, EqualLoadsAPrefixMatchWinsAndTiesAreDrawnAtRandom) {
  const auto router = MakeBaseline({.kind = BaselineKind::kLlmdScorer});
  std::mt19937_64 rng(3);
  const std::vector<RouterWorker> idle{Engine(1, 0, 0), Engine(2, 0, 0), Engine(3, 0, 0)};
  // Every score equal: the max-score picker's shuffle, each about a third of the time. Each
  // prompt is new (nothing matches), so these picks seed nothing that later ones match.
  std::map<std::size_t, int> chosen;
  for (std::uint64_t k = 0; k < 3000; ++k) {
    ++chosen[router->Choose(Prompt({1000 + k}), idle, rng())];
  }
  for (std::size_t w = 0; w < 3; ++w) {
    EXPECT_GT(chosen[w], 850) << w;
    EXPECT_LT(chosen[w], 1150) << w;
  }
  // A prompt sent once is indexed where it went; the same prompt then goes there every time.
  const std::size_t first = router->Choose(Prompt({7, 8, 9}), idle, rng());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(router->Choose(Prompt({7, 8, 9}), idle, rng()), first);
  // Half the blocks match: 3 x 0.5 = 1.5 over the others' 0 on equal loads: still there.
  EXPECT_EQ(router->Choose(Prompt({7, 8, 5, 6}), idle, rng()), first);
}

TEST(LlmdScorer, TheQueueAndTheCachesUseOutweighAPrefixOnABusyServer) {
  const auto router = MakeBaseline({.kind = BaselineKind::kLlmdScorer});
  std::vector<RouterWorker> workers{Engine(1, 0, 0), Engine(2, 0, 0)};
  workers[1].kv_cache_usage = 0.01;  // the first wins the tie: the prompt is indexed there
  ASSERT_EQ(router->Choose(Prompt({1, 2, 3, 4}), workers, 0), 0U);
  // The first has the whole prompt (3 x 1) but the longest queue (2 x 0) and 90% of its cache in
  // use (2 x 0.1): 3.2. The second has no match, the shortest queue and an empty cache: 4.
  workers = {Engine(1, 10, 0.9), Engine(2, 0, 0)};
  EXPECT_EQ(router->Choose(Prompt({1, 2, 3, 4}), workers, 0), 1U);
  // Queues are min-max normalised: 10 waiting against 9 counts as much as 10 against 0. On a
  // fresh index holding the prompt on the first worker, the first keeps its whole match (3) and
  // an empty cache (2): 5, over the second's shorter queue (2) and empty cache (2): 4. A prompt
  // of which it holds a quarter (0.75 + 2) goes to the second (4).
  const auto fresh = MakeBaseline({.kind = BaselineKind::kLlmdScorer});
  workers = {Engine(1, 0, 0), Engine(2, 0, 0.01)};
  ASSERT_EQ(fresh->Choose(Prompt({1, 2, 3, 4}), workers, 0), 0U);
  workers = {Engine(1, 10, 0), Engine(2, 9, 0)};
  EXPECT_EQ(fresh->Choose(Prompt({1, 2, 3, 4}), workers, 0), 0U);
  EXPECT_EQ(fresh->Choose(Prompt({1, 20, 30, 40}), workers, 0), 1U);
}

TEST(LlmdScorer, OnlyTheFirst4096TokensAreHashedAndTheIndexForgetsPastTheCache) {
  // 512-token blocks: the scorer hashes the first 8. Two prompts that differ from the ninth block
  // on look the same to it, and one that differs in the eighth does not.
  BaselineSpec spec{.kind = BaselineKind::kLlmdScorer, .block_tokens = 512};
  const auto router = MakeBaseline(spec);
  const std::vector<RouterWorker> workers{Engine(1, 0, 0), Engine(2, 0, 0.01)};
  const std::vector<std::uint64_t> head{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<std::uint64_t> one = head;
  one.push_back(9);
  ASSERT_EQ(router->Choose(Prompt(one), workers, 0), 0U);
  // The second worker's emptier queue... is equal; its cache is busier: only the match decides.
  std::vector<RouterWorker> favour_second{Engine(1, 0, 0.2), Engine(2, 0, 0)};
  std::vector<std::uint64_t> other = head;
  other.push_back(99);
  EXPECT_EQ(router->Choose(Prompt(other), favour_second, 0), 0U);  // 3 + 1.6 > 2
  // The index holds as many blocks as the server's cache: 100,000 tokens, 195 blocks of 512.
  // 200 other prompts of one block each push the first prompt's out of the first worker's LRU.
  for (std::uint64_t k = 0; k < 200; ++k) {
    ASSERT_EQ(router->Choose(Prompt({5000 + k}), std::vector<RouterWorker>{workers[0]}, 0), 0U);
  }
  EXPECT_EQ(router->Choose(Prompt(one), favour_second, 0), 1U);  // no match left: 2 + 2 > 1.6 + 2
}

}  // namespace
}  // namespace eoc::sim
