// The autoscaler's metrics: each family's series as /metrics shows them, valid for promtool, and
// every series of a pool gone once the pool is.
#include "controller/scaler_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "files.h"
#include "telemetry/metrics.h"

namespace eoc::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ScalerMetrics, EachFamilyPerPoolAndNothingLeftOnceThePoolGoes) {
  telemetry::Metrics metrics;
  ScalerMetrics m(metrics.registry());
  m.Observe(
      "prod", "chat",
      {.desired = 2.5, .target = 3, .current = 2, .delay_up_seconds = 4, .delay_down_seconds = 0});
  m.Decided("prod", "chat", "up");
  m.Held("prod", "chat", "Draining");
  m.Draining("prod", "chat", 2);
  m.Drained("prod", "chat", "drained");
  m.Drained("prod", "chat", "timeout");
  m.Drained("prod", "chat", "timeout");
  m.Draining("prod", "other", 1);
  m.Observe("prod", "idle", {.desired = 1, .target = 1, .current = 1});

  const std::string text = metrics.Serialize();
  const std::string chat = R"(namespace="prod",pool="chat")";
  EXPECT_THAT(text, HasSubstr("eoc_autoscaler_desired_replicas{" + chat + "} 2.5"));
  EXPECT_THAT(text, HasSubstr("eoc_autoscaler_target_replicas{" + chat + "} 3"));
  EXPECT_THAT(text, HasSubstr("eoc_autoscaler_current_replicas{" + chat + "} 2"));
  EXPECT_THAT(text,
              HasSubstr("eoc_autoscaler_delay_timer_seconds{direction=\"up\"," + chat + "} 4"));
  EXPECT_THAT(text, HasSubstr("eoc_autoscaler_decisions_total{direction=\"up\"," + chat + "} 1"));
  EXPECT_THAT(text, HasSubstr("eoc_autoscaler_holds_total{" + chat + ",reason=\"Draining\"} 1"));
  EXPECT_THAT(text, HasSubstr("eoc_autoscaler_draining_workers{" + chat + "} 2"));
  EXPECT_THAT(text, HasSubstr("eoc_autoscaler_drains_total{" + chat + ",reason=\"drained\"} 1"));
  EXPECT_THAT(text, HasSubstr("eoc_autoscaler_drains_total{" + chat + ",reason=\"timeout\"} 2"));
  // A pool that never drained shows 0 draining workers, not nothing (a dashboard plots it).
  EXPECT_THAT(text,
              HasSubstr(R"(eoc_autoscaler_draining_workers{namespace="prod",pool="idle"} 0)"));
  testing::TempDir dir;
  const std::string file = dir.Write("metrics.txt", text);
  // NOLINTNEXTLINE(concurrency-mt-unsafe): one call, no other thread uses the environment
  EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0) << text;

  m.RemovePool("prod", "chat");
  const std::string after = metrics.Serialize();
  EXPECT_THAT(after, Not(HasSubstr(R"(pool="chat")"))) << after;
  EXPECT_THAT(after,
              HasSubstr(R"(eoc_autoscaler_draining_workers{namespace="prod",pool="other"} 1)"));
}

}  // namespace
}  // namespace eoc::controller
