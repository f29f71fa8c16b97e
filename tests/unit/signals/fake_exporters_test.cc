// The fake energy exporters' pages (tests/support/fake_metrics.h) read back by the real maps
// (signals/energy_metrics.h) to the watts and energy the fake was given: what the integration
// tests set on a fake dcgm-exporter or Kepler is what the operator reads.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "fake_metrics.h"
#include "signals/energy_metrics.h"

namespace eoc::signals {
namespace {

using eoc::testing::EnergyIntegrator;
using eoc::testing::Exporter;
using eoc::testing::ExporterPod;
using eoc::testing::RenderExporterMetrics;
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

}  // namespace
}  // namespace eoc::signals
