#include "signals/worker_energy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <optional>

namespace eoc::signals {
namespace {

using std::chrono::seconds;

const WorkerEnergy::TimePoint kStart{seconds(1000)};
constexpr seconds kInterval{5};

PodEnergy Gauge(double watts) {
  return {.pod_namespace = "prod", .pod = "vllm-0", .watts = watts, .source = EnergySource::kDcgm};
}
PodEnergy Counter(double joules, std::optional<double> watts = std::nullopt) {
  return {.pod_namespace = "prod",
          .pod = "vllm-0",
          .watts = watts,
          .joules_total = joules,
          .source = EnergySource::kKeplerLegacy};
}

TEST(WorkerEnergyTest, TakesTheGaugeWhenThereIsNoCounter) {
  WorkerEnergy energy;
  EXPECT_FALSE(energy.watts());
  energy.Observe(kStart, Gauge(412.5), 3000);
  EXPECT_EQ(energy.watts(), 412.5);
  EXPECT_EQ(energy.source(), EnergySource::kDcgm);
}

TEST(WorkerEnergyTest, TakesTheCountersRateOverTheGaugeOnceItHasOne) {
  WorkerEnergy energy;
  energy.Observe(kStart, Counter(10000, 300), 3000);  // first counter value: the gauge fills in
  EXPECT_EQ(energy.watts(), 300);
  energy.Observe(kStart + kInterval, Counter(12500, 900), 3000);  // 2500 J over 5 s
  EXPECT_EQ(energy.watts(), 500);
  EXPECT_EQ(energy.source(), EnergySource::kKeplerLegacy);
}

// A counter that stands still while the gauge reads a draw is stuck: the gauge is taken. Without
// a gauge (Kepler 0.7) a still counter is a real 0 W.
TEST(WorkerEnergyTest, AStuckCounterGivesWayToTheGauge) {
  WorkerEnergy energy;
  energy.Observe(kStart, Counter(5000, 320), 3000);
  energy.Observe(kStart + kInterval, Counter(5000, 330), 3000);
  EXPECT_EQ(energy.watts(), 330);
  WorkerEnergy no_gauge;
  no_gauge.Observe(kStart, Counter(5000), 0);
  no_gauge.Observe(kStart + kInterval, Counter(5000), 0);
  EXPECT_EQ(no_gauge.watts(), 0);
}

TEST(WorkerEnergyTest, ACounterResetGivesTheIncreaseSinceTheReset) {
  WorkerEnergy energy;
  energy.Observe(kStart, Counter(1e9), 3000);
  EXPECT_FALSE(energy.watts());  // a counter alone: no rate from its first value
  energy.Observe(kStart + kInterval, Counter(2000), 3000);  // the exporter restarted
  EXPECT_EQ(energy.watts(), 400);
}

TEST(WorkerEnergyTest, AMissForgetsTheWattsAndTheCountersLastValue) {
  WorkerEnergy energy;
  energy.Observe(kStart, Counter(0), 3000);
  energy.Observe(kStart + kInterval, Counter(2000), 3000);
  energy.Miss();
  EXPECT_FALSE(energy.watts());
  EXPECT_FALSE(energy.source());
  // Not 2000 J over 10 s against a token rate of the last 5 s: the rate starts afresh.
  energy.Observe(kStart + 3 * kInterval, Counter(6000), 3000);
  EXPECT_FALSE(energy.watts());
  energy.Observe(kStart + 4 * kInterval, Counter(8500), 3000);
  EXPECT_EQ(energy.watts(), 500);
}

TEST(WorkerEnergyTest, ANegativeOrNonFiniteGaugeIsUnknown) {
  WorkerEnergy energy;
  energy.Observe(kStart, Gauge(-1), 3000);
  EXPECT_FALSE(energy.watts());
  energy.Observe(kStart + kInterval, Gauge(std::numeric_limits<double>::infinity()), 3000);
  EXPECT_FALSE(energy.watts());
}

// Watts rising 0.05 W per token/s over a loaded range: after MarginalEnergy::kMinPoints scrapes
// the slope is the estimate; without a token rate the watts are read but the slope learns nothing.
TEST(WorkerEnergyTest, FeedsTheSlopeWithItsWattsAndTheTokenRate) {
  WorkerEnergy energy;
  WorkerEnergy no_rate;
  for (int i = 0; i < static_cast<int>(MarginalEnergy::kMinPoints); ++i) {
    const double rate = 1000 + 500.0 * i;
    const auto at = kStart + i * kInterval;
    energy.Observe(at, Gauge(200 + 0.05 * rate), rate);
    no_rate.Observe(at, Gauge(200 + 0.05 * rate), std::nullopt);
  }
  EXPECT_NEAR(energy.marginal().joules_per_token(), 0.05, 1e-9);
  EXPECT_EQ(no_rate.marginal().size(), 0U);
  EXPECT_EQ(no_rate.marginal().joules_per_token(), 0);
  EXPECT_TRUE(no_rate.watts());
}

}  // namespace
}  // namespace eoc::signals
