// The reconciler's metrics: each worker's published weight follows the pool's table, a worker
// that leaves it (or a pool without one) takes its series with it, and nothing of a pool is left
// once the pool goes; the page passes promtool.
#include "controller/pool_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "files.h"
#include "telemetry/metrics.h"

namespace eoc::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

api::RoutingTable Table(std::initializer_list<std::pair<const char*, int>> weights) {
  api::RoutingTable t{.strategy = "JouleWeighted", .generation = 1};
  for (const auto& [pod, weight] : weights) t.workers.push_back({.pod = pod, .weight = weight});
  return t;
}

std::string Weight(const std::string& pool, const std::string& pod) {
  return R"(eoc_worker_routing_weight{namespace="prod",pod=")" + pod + R"(",pool=")" + pool +
         R"("})";
}

TEST(PoolMetrics, RoutingWeightsFollowThePublishedTableAndGoWithThePool) {
  telemetry::Metrics metrics;
  PoolMetrics m(metrics.registry());
  m.SetWorkers("prod", "chat", 2);
  m.SetRoutingWeights("prod", "chat", Table({{"a", 1000}, {"b", 250}}));
  m.SetRoutingWeights("prod", "other", Table({{"c", 1000}}));
  std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr(Weight("chat", "a") + " 1000"));
  EXPECT_THAT(text, HasSubstr(Weight("chat", "b") + " 250"));
  EXPECT_THAT(text, HasSubstr(R"(eoc_pool_workers{namespace="prod",pool="chat"} 2)"));
  testing::TempDir dir;
  const std::string file = dir.Write("metrics.txt", text);
  // NOLINTNEXTLINE(concurrency-mt-unsafe): one call, no other thread uses the environment
  EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0) << text;

  // b leaves the table, d joins it, a's weight moves.
  m.SetRoutingWeights("prod", "chat", Table({{"a", 600}, {"d", 1000}}));
  text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr(Weight("chat", "a") + " 600"));
  EXPECT_THAT(text, HasSubstr(Weight("chat", "d") + " 1000"));
  EXPECT_THAT(text, Not(HasSubstr(Weight("chat", "b")))) << text;

  // No table (an invalid spec before any was published, say): no weights.
  m.SetRoutingWeights("prod", "chat", std::nullopt);
  text = metrics.Serialize();
  EXPECT_THAT(text, Not(HasSubstr(R"(eoc_worker_routing_weight{namespace="prod",pod="a")")));
  m.SetRoutingWeights("prod", "chat", Table({{"a", 1000}}));

  m.RemovePool("prod", "chat");
  text = metrics.Serialize();
  EXPECT_THAT(text, Not(HasSubstr(R"(pool="chat")"))) << text;
  EXPECT_THAT(text, HasSubstr(Weight("other", "c") + " 1000"));
}

}  // namespace
}  // namespace eoc::controller
