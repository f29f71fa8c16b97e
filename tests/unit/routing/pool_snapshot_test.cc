#include "routing/pool_snapshot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "routing/ids.h"
#include "workers.h"

namespace eoc::routing {
namespace {

constexpr Strategy kWeighted[] = {Strategy::kLatencyWeighted, Strategy::kJouleWeighted,
                                  Strategy::kCarbonWeighted};

using testing::MakeWorker;
using testing::Workers;

const auto kIdle = [](std::size_t) { return 0.0; };
const auto kAll = [](std::size_t) { return true; };

// How often each worker is picked in `n` picks with equal local load.
std::vector<int> PickCounts(const PoolSnapshot& snapshot, int n, std::string_view model = "") {
  std::mt19937_64 rng(2024);
  std::vector<int> counts(snapshot.size(), 0);
  for (int k = 0; k < n; ++k) {
    const auto w =
        snapshot.Pick(snapshot.RouteOf(model), rng(), static_cast<std::uint64_t>(k), kIdle, kAll);
    if (w) ++counts[*w];
  }
  return counts;
}

// The pod each of `n` sessions is placed at ("" when none).
std::vector<std::string> Placements(const PoolSnapshot& snapshot, int n) {
  std::vector<std::string> pods;
  for (int s = 0; s < n; ++s) {
    const auto w = snapshot.PlaceSession(SessionHashOf("session-" + std::to_string(s)),
                                         snapshot.RouteOf(""), kAll);
    pods.push_back(w ? snapshot.worker(*w).pod : "");
  }
  return pods;
}

double MovedShare(const std::vector<std::string>& before, const std::vector<std::string>& after) {
  std::size_t moved = 0;
  for (std::size_t i = 0; i < before.size(); ++i) moved += before[i] != after[i] ? 1 : 0;
  return static_cast<double>(moved) / static_cast<double>(before.size());
}

TEST(PoolSnapshotTest, IndexesWorkersByKey) {
  const auto snapshot = PoolSnapshot::Build(Workers(3), 7, Strategy::kJouleWeighted);
  EXPECT_EQ(snapshot->generation(), 7);
  EXPECT_EQ(snapshot->strategy(), Strategy::kJouleWeighted);
  ASSERT_EQ(snapshot->size(), 3U);
  EXPECT_EQ(snapshot->IndexOf(WorkerKeyOf("prod/vllm-2")), 2U);
  EXPECT_EQ(snapshot->IndexOf(WorkerKeyOf("prod/vllm-9")), std::nullopt);
  EXPECT_EQ(snapshot->worker(1).address, "10.0.0.1:8000");
}

TEST(PoolSnapshotTest, RefusesTwoWorkersWithOneKey) {
  std::vector<Worker> workers = Workers(2);
  workers.push_back(workers[0]);
  EXPECT_THROW(PoolSnapshot::Build(workers, 1, Strategy::kRoundRobin), std::invalid_argument);
}

TEST(PoolSnapshotTest, WeightedStrategiesFollowTheirWeights) {
  std::vector<Worker> workers = Workers(6);
  const std::vector<std::int32_t> weights = {1000, 500, 250, 125, 0, 1000};
  for (std::size_t i = 0; i < workers.size(); ++i) workers[i].weight = weights[i];
  constexpr int kPicks = 100'000;
  for (const Strategy strategy : kWeighted) {
    const auto snapshot = PoolSnapshot::Build(workers, 1, strategy);
    const std::vector<int> counts = PickCounts(*snapshot, kPicks);
    EXPECT_EQ(counts[4], 0);
    double chi = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (weights[i] == 0) continue;
      const double expected = kPicks * weights[i] / 2875.0;
      chi += (counts[i] - expected) * (counts[i] - expected) / expected;
    }
    // 4 degrees of freedom: 18.47 is the 0.999 quantile.
    EXPECT_LT(chi, 18.47) << StrategyName(strategy);
  }
}

TEST(PoolSnapshotTest, RoundRobinTakesTurnsAndSkipsTheIneligible) {
  std::vector<Worker> workers = Workers(5);
  workers[3].weight = 0;
  const auto snapshot = PoolSnapshot::Build(workers, 1, Strategy::kRoundRobin);
  const std::vector<int> counts = PickCounts(*snapshot, 4000);
  EXPECT_EQ(counts, (std::vector<int>{1000, 1000, 1000, 0, 1000}));
  const auto not1 = [](std::size_t i) { return i != 1; };
  EXPECT_EQ(snapshot->PickRoundRobin(snapshot->RouteOf(""), 1, not1),
            2U);  // the turn of 1 passes to the next
  EXPECT_EQ(snapshot->PickRoundRobin(snapshot->RouteOf(""), 2, not1), 2U);
}

TEST(PoolSnapshotTest, LeastBusyPicksTheLeastBusy) {
  const auto snapshot = PoolSnapshot::Build(Workers(6), 1, Strategy::kLeastBusy);
  const std::vector<double> busy = {0.5, 0.4, 0.9, 0.1, 0.3, 0.2};
  const auto busyness = [&](std::size_t i) { return busy[i]; };
  std::mt19937_64 rng(1);
  for (int k = 0; k < 100; ++k) {
    EXPECT_EQ(snapshot->Pick(snapshot->RouteOf(""), rng(), 0, busyness, kAll), 3U);
    EXPECT_EQ(snapshot->Pick(snapshot->RouteOf(""), rng(), 0, busyness,
                             [](std::size_t i) { return i != 3; }),
              5U);
  }
}

TEST(PoolSnapshotTest, LeastBusySamplesLargePoolsAndSpreadsTies) {
  const auto snapshot = PoolSnapshot::Build(Workers(1000), 1, Strategy::kLeastBusy);
  // Busyness rises with the index: the best of 8 samples has an expected rank of 1000 / 9.
  const auto busyness = [](std::size_t i) { return static_cast<double>(i); };
  std::mt19937_64 rng(9);
  double rank = 0;
  for (int k = 0; k < 10'000; ++k)
    rank += static_cast<double>(*snapshot->Pick(snapshot->RouteOf(""), rng(), 0, busyness, kAll));
  EXPECT_NEAR(rank / 10'000, 1000.0 / 9, 5);
  // Equal busyness: no worker is favoured.
  const std::vector<int> counts = PickCounts(*snapshot, 100'000);
  EXPECT_GT(*std::min_element(counts.begin(), counts.end()), 50);
}

TEST(PoolSnapshotTest, TwoChoicesPreferTheLessBusy) {
  for (const Strategy strategy : kWeighted) {
    const auto snapshot = PoolSnapshot::Build(Workers(2), 1, strategy);
    const auto busyness = [](std::size_t i) { return i == 0 ? 0.9 : 0.1; };
    std::mt19937_64 rng(11);
    int less_busy = 0;
    constexpr int kPicks = 100'000;
    for (int k = 0; k < kPicks; ++k) {
      less_busy += *snapshot->Pick(snapshot->RouteOf(""), rng(), 0, busyness, kAll) == 1 ? 1 : 0;
    }
    // The busier worker wins only when both draws are it: 1/4 of the time.
    EXPECT_NEAR(static_cast<double>(less_busy) / kPicks, 0.75, 0.01) << StrategyName(strategy);
  }
}

TEST(PoolSnapshotTest, APickCountsForTheMeanWeightOverTheWorkersOwn) {
  // Weights 1000, 500 and 0 (takes no new work): the mean of those that take work is 750.
  const std::vector<Worker> workers = {MakeWorker(0, 1000), MakeWorker(1, 500), MakeWorker(2, 0)};
  for (const Strategy strategy : kWeighted) {
    const auto snapshot = PoolSnapshot::Build(workers, 1, strategy);
    EXPECT_DOUBLE_EQ(snapshot->pick_scale(0), 0.75) << StrategyName(strategy);
    EXPECT_DOUBLE_EQ(snapshot->pick_scale(1), 1.5) << StrategyName(strategy);
    EXPECT_DOUBLE_EQ(snapshot->pick_scale(2), 1.0) << StrategyName(strategy);
  }
  for (const Strategy strategy : {Strategy::kRoundRobin, Strategy::kLeastBusy}) {
    const auto snapshot = PoolSnapshot::Build(workers, 1, strategy);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(snapshot->pick_scale(i), 1.0);
  }
}

TEST(PoolSnapshotTest, OnlyEligibleWorkersArePicked) {
  for (const Strategy strategy :
       {Strategy::kRoundRobin, Strategy::kLeastBusy, Strategy::kJouleWeighted}) {
    const auto snapshot = PoolSnapshot::Build(Workers(1000), 1, strategy);
    const auto only_777 = [](std::size_t i) { return i == 777; };  // found by the fallback scan
    std::mt19937_64 rng(3);
    for (int k = 0; k < 20; ++k) {
      EXPECT_EQ(snapshot->Pick(snapshot->RouteOf(""), rng(), k, kIdle, only_777), 777U)
          << StrategyName(strategy);
    }
    const auto none = [](std::size_t) { return false; };
    EXPECT_EQ(snapshot->Pick(snapshot->RouteOf(""), rng(), 0, kIdle, none), std::nullopt);
    EXPECT_EQ(snapshot->PlaceSession(42, snapshot->RouteOf(""), none), std::nullopt);
    EXPECT_EQ(snapshot->PlaceSession(42, snapshot->RouteOf(""), only_777), 777U);
  }
}

TEST(PoolSnapshotTest, PicksAndSessionsServeTheModel) {
  std::vector<Worker> workers = {MakeWorker(0, 1000, {"llama"}), MakeWorker(1, 1000, {"mistral"}),
                                 MakeWorker(2, 1000, {"llama", "mistral"}), MakeWorker(3)};
  for (const Strategy strategy :
       {Strategy::kRoundRobin, Strategy::kLeastBusy, Strategy::kJouleWeighted}) {
    const auto snapshot = PoolSnapshot::Build(workers, 1, strategy);
    std::vector<int> llama = PickCounts(*snapshot, 3000, "llama");
    EXPECT_EQ(llama[1], 0) << StrategyName(strategy);
    for (const std::size_t i : {0U, 2U, 3U}) EXPECT_GT(llama[i], 500) << StrategyName(strategy);
    std::vector<int> other = PickCounts(*snapshot, 3000, "qwen");  // only the any-model worker
    EXPECT_EQ(other, (std::vector<int>{0, 0, 0, 3000})) << StrategyName(strategy);
    std::vector<int> unsaid = PickCounts(*snapshot, 3000, "");
    for (const int n : unsaid) EXPECT_GT(n, 500) << StrategyName(strategy);
    for (int s = 0; s < 1000; ++s) {
      const auto w = snapshot->PlaceSession(static_cast<SessionHash>(s) * 7919,
                                            snapshot->RouteOf("mistral"), kAll);
      ASSERT_TRUE(w.has_value());
      EXPECT_TRUE(snapshot->Serves(*w, "mistral"));
    }
  }
}

TEST(PoolSnapshotTest, ModelsPastTheTableBudgetFilterTheSharedTables) {
  // 60 models of one worker each plus one any-model worker: 61 distinct groups, more than the
  // budget builds tables for; the later models share the all-workers tables.
  std::vector<Worker> workers;
  workers.reserve(61);
  for (int i = 0; i < 60; ++i) workers.push_back(MakeWorker(i, 1000, {"m" + std::to_string(i)}));
  workers.push_back(MakeWorker(60));
  const auto snapshot = PoolSnapshot::Build(workers, 1, Strategy::kJouleWeighted);
  for (const int m : {0, 5, 59}) {  // "m59" sorts after the budget
    const std::string model = "m" + std::to_string(m);
    const std::vector<int> counts = PickCounts(*snapshot, 2000, model);
    EXPECT_EQ(counts[static_cast<std::size_t>(m)] + counts[60], 2000) << model;
    EXPECT_NEAR(counts[static_cast<std::size_t>(m)], 1000, 100) << model;
    const auto w = snapshot->PlaceSession(123, snapshot->RouteOf(model), kAll);
    ASSERT_TRUE(w.has_value());
    EXPECT_TRUE(*w == static_cast<std::size_t>(m) || *w == 60) << model;
  }
}

TEST(PoolSnapshotTest, DrainingAndWeightZeroWorkersTakeNoNewWork) {
  std::vector<Worker> workers = Workers(4);
  workers[1].draining = true;
  workers[2].weight = 0;
  for (const Strategy strategy :
       {Strategy::kRoundRobin, Strategy::kLeastBusy, Strategy::kJouleWeighted}) {
    const auto snapshot = PoolSnapshot::Build(workers, 1, strategy);
    EXPECT_EQ(snapshot->IndexOf(workers[1].key), 1U);  // still there for its bound sessions
    const std::vector<int> counts = PickCounts(*snapshot, 2000);
    EXPECT_EQ(counts[1] + counts[2], 0) << StrategyName(strategy);
    for (const std::string& pod : Placements(*snapshot, 10'000)) {
      ASSERT_TRUE(pod == workers[0].pod || pod == workers[3].pod) << pod;
    }
  }
}

TEST(PoolSnapshotTest, EmptyAndAllZeroPoolsChooseNothing) {
  std::vector<Worker> zeros = Workers(3, 0);
  zeros.push_back(MakeWorker(3));
  zeros.back().draining = true;
  for (const auto& workers : {std::vector<Worker>{}, zeros}) {
    for (const Strategy strategy :
         {Strategy::kRoundRobin, Strategy::kLeastBusy, Strategy::kLatencyWeighted,
          Strategy::kJouleWeighted, Strategy::kCarbonWeighted}) {
      const auto snapshot = PoolSnapshot::Build(workers, 1, strategy);
      EXPECT_FALSE(snapshot->RouteOf("").any);
      EXPECT_FALSE(snapshot->RouteOf("llama").any);
      EXPECT_EQ(snapshot->Pick(snapshot->RouteOf(""), 1, 1, kIdle, kAll), std::nullopt);
      EXPECT_EQ(snapshot->Pick(snapshot->RouteOf("llama"), 1, 1, kIdle, kAll), std::nullopt);
      EXPECT_EQ(snapshot->PlaceSession(1, snapshot->RouteOf(""), kAll), std::nullopt);
    }
  }
}

TEST(PoolSnapshotTest, WithEveryWeightZeroTheLeastBusyServingWorkerIsTheFallback) {
  std::vector<Worker> workers = Workers(4, 0);
  workers[0].draining = true;
  workers[3].capability.models = {"mistral"};
  const auto snapshot = PoolSnapshot::Build(workers, 1, Strategy::kJouleWeighted);
  const auto busy = [](std::size_t i) { return i == 2 ? 0.9 : 0.1 * static_cast<double>(i); };
  // Worker 0 is draining, 3 serves another model, 2 is the busier of 1 and 2.
  for (std::uint64_t random = 0; random < 8; ++random) {
    EXPECT_EQ(snapshot->PickUnweighted(snapshot->RouteOf("llama"), random, busy, kAll), 1U);
  }
  EXPECT_EQ(snapshot->PickUnweighted(snapshot->RouteOf("llama"), 0, busy,
                                     [](std::size_t i) { return i != 1; }),
            2U);
  EXPECT_EQ(snapshot->PickUnweighted(snapshot->RouteOf("llama"), 0, busy,
                                     [](std::size_t) { return false; }),
            std::nullopt);
  // A model with candidates by weight is not the fallback's.
  const auto weighted = PoolSnapshot::Build(Workers(2), 1, Strategy::kJouleWeighted);
  EXPECT_EQ(weighted->PickUnweighted(weighted->RouteOf("llama"), 0, busy, kAll), std::nullopt);
}

TEST(PoolSnapshotTest, TwoSnapshotsOfOneTablePlaceSessionsAlike) {
  std::vector<Worker> workers = Workers(40);
  for (std::size_t i = 0; i < workers.size(); ++i) {
    workers[i].weight = static_cast<std::int32_t>(100 + i * 20);
  }
  const auto a = PoolSnapshot::Build(workers, 3, Strategy::kJouleWeighted);
  std::mt19937_64 rng(8);
  std::shuffle(workers.begin(), workers.end(), rng);  // another replica lists them otherwise
  const auto b = PoolSnapshot::Build(workers, 3, Strategy::kJouleWeighted);
  EXPECT_EQ(Placements(*a, 10'000), Placements(*b, 10'000));
}

TEST(PoolSnapshotTest, SessionsGoWhereTheyPreferWhileEligible) {
  const auto snapshot = PoolSnapshot::Build(Workers(10), 1, Strategy::kJouleWeighted);
  for (int s = 0; s < 1000; ++s) {
    const SessionHash h = SessionHashOf("s" + std::to_string(s));
    const std::size_t first = *snapshot->PlaceSession(h, snapshot->RouteOf(""), kAll);
    const auto not_first = [&](std::size_t i) { return i != first; };
    const auto second = snapshot->PlaceSession(h, snapshot->RouteOf(""), not_first);
    ASSERT_TRUE(second.has_value());
    EXPECT_NE(*second, first);
    EXPECT_EQ(snapshot->PlaceSession(h, snapshot->RouteOf(""), not_first),
              second);  // deterministic
  }
}

TEST(PoolSnapshotTest, RemovingAWorkerMovesItsSessionsAndFewOthers) {
  std::vector<Worker> workers = Workers(50);
  const auto before =
      Placements(*PoolSnapshot::Build(workers, 1, Strategy::kJouleWeighted), 10'000);
  const std::string gone = workers[13].pod;
  workers.erase(workers.begin() + 13);
  const auto after = Placements(*PoolSnapshot::Build(workers, 2, Strategy::kJouleWeighted), 10'000);
  std::size_t others = 0;
  std::size_t moved = 0;
  for (std::size_t s = 0; s < before.size(); ++s) {
    ASSERT_NE(after[s], gone);
    if (before[s] == gone) continue;
    ++others;
    moved += before[s] != after[s] ? 1 : 0;
  }
  EXPECT_LE(static_cast<double>(moved) / static_cast<double>(others), 0.02);
}

TEST(PoolSnapshotTest, AWeightChangeMovesAboutTheShareOfWeightMoved) {
  for (const int n : {10, 100}) {
    std::vector<Worker> workers = Workers(n);
    const auto before =
        Placements(*PoolSnapshot::Build(workers, 1, Strategy::kJouleWeighted), 10'000);
    workers[6].weight = 400;
    const auto after =
        Placements(*PoolSnapshot::Build(workers, 2, Strategy::kJouleWeighted), 10'000);
    // Worker 6's share falls from 1/n to 400 / (1,000 (n - 1) + 400): the least any table moves.
    // Maglev moves a little more (for 10 workers 5.7% must move; for 100, 0.6%).
    const double least = 1.0 / n - 400.0 / (1000.0 * (n - 1) + 400);
    const double moved = MovedShare(before, after);
    EXPECT_GE(moved, least * 0.8) << n;
    EXPECT_LE(moved, least + 0.01) << n;
  }
}

TEST(PoolSnapshotTest, RoundRobinAndLeastBusyPlaceSessionsByEqualWeights) {
  std::vector<Worker> workers = Workers(2);
  workers[0].weight = 900;
  workers[1].weight = 100;
  const auto equal = PoolSnapshot::Build(workers, 1, Strategy::kLeastBusy);
  const auto weighted = PoolSnapshot::Build(workers, 1, Strategy::kJouleWeighted);
  const auto share_of_0 = [&](const PoolSnapshot& s) {
    const auto pods = Placements(s, 10'000);
    return static_cast<double>(std::count(pods.begin(), pods.end(), workers[0].pod)) / 10'000;
  };
  EXPECT_NEAR(share_of_0(*equal), 0.5, 0.02);
  EXPECT_NEAR(share_of_0(*weighted), 0.9, 0.02);
}

TEST(PoolSnapshotTest, ManyThreadsShareOneSnapshot) {
  std::vector<Worker> workers = Workers(100);
  for (std::size_t i = 0; i < workers.size(); ++i)
    workers[i].weight = static_cast<std::int32_t>(1 + (i % 4) * 333);
  const std::shared_ptr<const PoolSnapshot> snapshot =
      PoolSnapshot::Build(workers, 1, Strategy::kJouleWeighted);
  std::vector<std::atomic<int>> in_flight(workers.size());
  std::atomic<std::uint64_t> ticket{0};
  std::atomic<int> picked{0};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(500 + t);
      const auto busy = [&](std::size_t i) { return in_flight[i].load() / 10.0; };
      const auto ok = [&](std::size_t i) { return in_flight[i].load() < 10; };
      for (int k = 0; k < 20'000; ++k) {
        const auto w = snapshot->Pick(snapshot->RouteOf(""), rng(), ticket.fetch_add(1), busy, ok);
        const auto s = snapshot->PlaceSession(rng(), snapshot->RouteOf(""), ok);
        if (!w || !s) continue;
        in_flight[*w].fetch_add(1);
        picked.fetch_add(1);
        in_flight[*w].fetch_sub(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GT(picked.load(), 150'000);
}

}  // namespace
}  // namespace eoc::routing
