// The fake energy exporters' pages (sim/metrics_pages.h) read back by the real maps
// (signals/energy_metrics.h) to the watts and energy the fake was given: what the integration
// tests set on a fake dcgm-exporter or Kepler is what the operator reads. And a fake worker's
// power curve: its integrals, and its pages scraped into the real estimator give its slope.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "signals/energy_metrics.h"
#include "signals/engine_metrics.h"
#include "signals/token_rate.h"
#include "signals/worker_energy.h"
#include "sim/metrics_pages.h"

namespace eoc::signals {
namespace {

using eoc::sim::EnergyIntegrator;
using eoc::sim::Exporter;
using eoc::sim::ExporterPod;
using eoc::sim::PowerCurve;
using eoc::sim::RenderExporterMetrics;
using std::chrono::milliseconds;
using std::chrono::seconds;

EnergyReading Read(const EnergyMap& map, const std::string& text) {
  const ParseResult parsed = ParseExposition(text, {.keep = map.Filter()});
  EXPECT_TRUE(parsed.ok()) << parsed.error().ToString();
  return map.Read(parsed.page());
}

// The pods as a node's exporter reports them after `elapsed` at constant watts.
std::vector<ExporterPod> Pods(EnergyIntegrator::Clock::duration elapsed) {
  const auto start = EnergyIntegrator::Clock::time_point();
  const EnergyIntegrator a(250, start);
  const EnergyIntegrator b(400, start);
  return {{.pod_namespace = "ns",
           .pod_name = "web-a",
           .watts = 250,
           .joules_total = a.Joules(start + elapsed)},
          {.pod_namespace = "ns",
           .pod_name = "web-b",
           .container = "vllm",
           .watts = 400,
           .joules_total = b.Joules(start + elapsed),
           .gpus = 2}};
}

TEST(FakeExporters, DcgmPageReadsBackToTheWattsAndJoules) {
  const std::string page = RenderExporterMetrics(Exporter::kDcgm, "gpu-a", Pods(seconds(10)));
  EXPECT_NE(page.find("# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
                      "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"),
            std::string::npos);
  EXPECT_NE(page.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"), std::string::npos);
  EXPECT_NE(page.find("Hostname=\"gpu-a\""), std::string::npos);
  EXPECT_NE(page.find("container=\"vllm\",namespace=\"ns\",pod=\"web-b\",pod_uid=\"\""),
            std::string::npos);
  const EnergyReading r = Read(EnergyMap::Dcgm(), page);
  ASSERT_EQ(r.pods.size(), 2U);  // the idle GPU names no pod
  EXPECT_EQ(r.pods[0].pod, "web-a");
  EXPECT_EQ(r.pods[0].pod_namespace, "ns");
  EXPECT_DOUBLE_EQ(*r.pods[0].watts, 250);
  EXPECT_NEAR(*r.pods[0].joules_total, 2500, 0.001);
  EXPECT_EQ(r.pods[0].gpus, 1);
  EXPECT_EQ(r.pods[1].pod, "web-b");
  EXPECT_DOUBLE_EQ(*r.pods[1].watts, 400);  // 200 W on each of its two GPUs
  EXPECT_NEAR(*r.pods[1].joules_total, 4000, 0.002);
  EXPECT_EQ(r.pods[1].gpus, 2);
  for (const PodEnergy& p : r.pods) EXPECT_EQ(p.source, EnergySource::kDcgm);
}

TEST(FakeExporters, KeplerPageReadsBackToTheJoulesWhoseRateIsTheWatts) {
  const std::string before = RenderExporterMetrics(Exporter::kKepler, "gpu-a", Pods(seconds(10)));
  const std::string after = RenderExporterMetrics(Exporter::kKepler, "gpu-a", Pods(seconds(40)));
  EXPECT_NE(before.find("# TYPE kepler_container_package_joules_total counter\n"),
            std::string::npos);
  EXPECT_NE(before.find("container_name=\"vllm\",container_namespace=\"ns\",mode=\"idle\","
                        "pod_name=\"web-b\""),
            std::string::npos);
  const EnergyReading r0 = Read(EnergyMap::Kepler(), before);
  const EnergyReading r1 = Read(EnergyMap::Kepler(), after);
  ASSERT_EQ(r0.pods.size(), 2U);
  ASSERT_EQ(r1.pods.size(), 2U);
  const double want[] = {250, 400};
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r1.pods[i].source, EnergySource::kKeplerLegacy);
    EXPECT_EQ(r1.pods[i].watts, std::nullopt);  // Kepler 0.7 has no watts gauge
    EXPECT_NEAR(*r0.pods[i].joules_total, want[i] * 10, 1e-6);
    EXPECT_NEAR((*r1.pods[i].joules_total - *r0.pods[i].joules_total) / 30, want[i], 1e-6);
  }
  EXPECT_EQ(r1.pods[0].pod, "web-a");
  EXPECT_EQ(r1.pods[1].pod, "web-b");
}

TEST(EnergyIntegrator, IntegratesWattsThatChangeInSteps) {
  const auto t0 = EnergyIntegrator::Clock::time_point();
  EnergyIntegrator e(100, t0);
  EXPECT_DOUBLE_EQ(e.Joules(t0), 0);
  EXPECT_DOUBLE_EQ(e.Joules(t0 + seconds(2)), 200);
  e.Set(300, t0 + seconds(2));
  EXPECT_DOUBLE_EQ(e.Joules(t0 + seconds(3)), 500);
  e.Set(0, t0 + milliseconds(3500));
  EXPECT_DOUBLE_EQ(e.Joules(t0 + seconds(10)), 650);
  e.Set(50, t0 + seconds(1));  // a change dated before the last one starts at the last one
  EXPECT_DOUBLE_EQ(e.Joules(t0 + milliseconds(4500)), 700);
  EXPECT_DOUBLE_EQ(e.Joules(t0), 650);  // before the last change: the energy up to it
}

constexpr PowerCurve kCurve{.idle_watts = 100,
                            .joules_per_token = 0.2,
                            .low_tokens_per_second = 200,
                            .high_tokens_per_second = 600,
                            .period = milliseconds(4000)};

TEST(PowerCurve, RisesAndFallsBetweenItsRatesAndIntegratesExactly) {
  EXPECT_DOUBLE_EQ(kCurve.TokensPerSecond(0), 200);
  EXPECT_DOUBLE_EQ(kCurve.TokensPerSecond(1), 400);
  EXPECT_DOUBLE_EQ(kCurve.TokensPerSecond(2), 600);
  EXPECT_DOUBLE_EQ(kCurve.TokensPerSecond(3), 400);
  EXPECT_DOUBLE_EQ(kCurve.TokensPerSecond(5), 400);
  EXPECT_DOUBLE_EQ(kCurve.Watts(2), 220);    // 100 + 0.2 x 600
  EXPECT_DOUBLE_EQ(kCurve.Tokens(4), 1600);  // a period at 400 on average
  // Against a fine sum of the rate, at points inside both halves and several periods on.
  for (const double t : {0.7, 2.0, 3.3, 9.1}) {
    double sum = 0;
    constexpr int kSteps = 100000;
    for (int i = 0; i < kSteps; ++i) sum += kCurve.TokensPerSecond((i + 0.5) * t / kSteps);
    EXPECT_NEAR(kCurve.Tokens(t), sum * t / kSteps, 1e-3) << t;
    EXPECT_NEAR(kCurve.Joules(t), 100 * t + 0.2 * kCurve.Tokens(t), 1e-9) << t;
  }
}

TEST(EnergyIntegrator, FollowsACurveFromTheTotalsSoFar) {
  const auto t0 = EnergyIntegrator::Clock::time_point();
  EnergyIntegrator e(100, t0);
  e.Follow(kCurve, t0 + seconds(2));  // 200 J so far
  EXPECT_DOUBLE_EQ(e.Watts(t0 + seconds(2)), 140);
  EXPECT_DOUBLE_EQ(e.Joules(t0 + seconds(6)), 200 + kCurve.Joules(4));
  EXPECT_DOUBLE_EQ(e.Tokens(t0 + seconds(6)), 1600);
  e.Follow(kCurve, t0 + seconds(5));  // the same curve: it goes on along it
  EXPECT_DOUBLE_EQ(e.Tokens(t0 + seconds(6)), 1600);
  PowerCurve steeper = kCurve;
  steeper.joules_per_token = 0.4;
  e.Follow(steeper, t0 + seconds(6));  // from its beginning, on from the totals
  EXPECT_DOUBLE_EQ(e.Tokens(t0 + seconds(7)), 1600 + steeper.Tokens(1));
  e.Set(50, t0 + seconds(7));
  EXPECT_DOUBLE_EQ(e.Watts(t0 + seconds(8)), 50);
  EXPECT_DOUBLE_EQ(e.Tokens(t0 + seconds(8)), 1600 + steeper.Tokens(1));
}

// A fake vLLM worker with DCGM's series, drawing on the curve, scraped every second through the
// real maps, token rate and estimator: the measured marginal energy is the curve's 0.2 J/token.
TEST(PowerCurve, AWorkersPagesGiveTheEstimatorItsSlope) {
  const auto t0 = EnergyIntegrator::Clock::time_point() + seconds(100);
  EnergyIntegrator e(0, t0);
  e.Follow(kCurve, t0);
  const EngineMap engine = EngineMap::Vllm();
  const EnergyMap dcgm = EnergyMap::Dcgm();
  TokenRate rate;
  WorkerEnergy energy({.idle_watts = 100, .max_watts = 400, .max_tokens_per_second = 1000});
  for (int i = 0; i <= 20; ++i) {
    const auto at = t0 + milliseconds(1000 * i + 300);
    const eoc::sim::PageFigures load{.generation_tokens_total = std::llround(e.Tokens(at)),
                                     .watts = e.Watts(at),
                                     .energy_millijoules_total = std::llround(e.Joules(at) * 1000)};
    const std::string page = eoc::sim::RenderMetrics(
        eoc::api::Engine::kVllm, load, {.pod_name = "web-0", .pod_namespace = "ns"}, /*dcgm=*/true);
    const ParseResult parsed = ParseExposition(page, {});
    ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
    const std::vector<ModelFigures> figures = engine.Read(parsed.page());
    ASSERT_EQ(figures.size(), 1U);
    const auto r = rate.Add(at, figures[0].prompt_tokens_total.value_or(0),
                            figures[0].generation_tokens_total.value_or(0));
    const EnergyReading watts = dcgm.Read(parsed.page());
    ASSERT_EQ(watts.pods.size(), 1U);
    energy.Observe(at, watts.pods[0],
                   r ? std::optional<double>(r->tokens_per_second()) : std::nullopt);
  }
  ASSERT_TRUE(energy.marginal().fit());
  EXPECT_NEAR(energy.marginal().joules_per_token(), 0.2, 0.002);
}

}  // namespace
}  // namespace eoc::signals
