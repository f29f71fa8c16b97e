#include "signals/energy_metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>

#include "fixtures.h"
#include "signals/counter_rate.h"

namespace eoc::signals {
namespace {

using testing::Fixture;

// What `map` reads from `text`, parsed keeping only the map's families.
EnergyReading Read(const EnergyMap& map, const std::string& text) {
  const ParseResult parsed = ParseExposition(text, {.keep = map.Filter()});
  EXPECT_TRUE(parsed.ok()) << parsed.error().ToString();
  for (const Family& family : parsed.page().families) {
    EXPECT_TRUE(map.Filter()(family.name)) << family.name;
  }
  return map.Read(parsed.page());
}

// Replaces every `from` in `text` by `to`.
std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

TEST(EnergyMap, DcgmGpuHeldByAPod) {
  // dcgm-aicr-h100-pod-labels-excerpt.prom: 8 H100s; only GPU 0 carries pod/namespace labels,
  // and its DCGM_FI_DEV_POWER_USAGE is 113.611 W. No TOTAL_ENERGY series on that page.
  const EnergyReading r =
      Read(EnergyMap::Dcgm(), Fixture("dcgm-aicr-h100-pod-labels-excerpt.prom"));
  ASSERT_EQ(r.pods.size(), 1U);
  const PodEnergy& p = r.pods[0];
  EXPECT_EQ(p.pod_namespace, "dynamo-workload");
  EXPECT_EQ(p.pod, "vllm-agg-0-vllmdecodeworker-s65j5");
  EXPECT_DOUBLE_EQ(*p.watts, 113.611);
  EXPECT_EQ(p.joules_total, std::nullopt);
  EXPECT_EQ(p.gpus, 1);
  EXPECT_EQ(p.source, EnergySource::kDcgm);
  EXPECT_FALSE(r.truncated);
}

TEST(EnergyMap, DcgmGpusNoPodHoldsAreSkipped) {
  // dcgm-gpu-monitoring-tools-138-excerpt.prom: pod="" and namespace="" (present but empty);
  // dcgm-kops-l4-full.prom: no pod labels at all. Neither names a pod.
  EXPECT_TRUE(
      Read(EnergyMap::Dcgm(), Fixture("dcgm-gpu-monitoring-tools-138-excerpt.prom")).pods.empty());
  EXPECT_TRUE(Read(EnergyMap::Dcgm(), Fixture("dcgm-kops-l4-full.prom")).pods.empty());

  // The same pages with a pod on their GPU: 302.206 W and 4,335,301,032 mJ = 4,335,301.032 J
  // (gpu-monitoring-tools 138); 16.365 W and 4,742,776 mJ = 4,742.776 J (kops L4).
  const EnergyReading old =
      Read(EnergyMap::Dcgm(), Replaced(Fixture("dcgm-gpu-monitoring-tools-138-excerpt.prom"),
                                       R"(namespace="",pod="")", R"(namespace="ns",pod="w-0")"));
  ASSERT_EQ(old.pods.size(), 1U);
  EXPECT_DOUBLE_EQ(*old.pods[0].watts, 302.206);
  EXPECT_DOUBLE_EQ(*old.pods[0].joules_total, 4'335'301.032);
  EXPECT_EQ(old.pods[0].gpus, 1);
  const EnergyReading l4 =
      Read(EnergyMap::Dcgm(),
           Replaced(Fixture("dcgm-kops-l4-full.prom"), R"(DCGM_FI_DRIVER_VERSION="580.105.08")",
                    R"(DCGM_FI_DRIVER_VERSION="580.105.08",namespace="ns",pod="w-1")"));
  ASSERT_EQ(l4.pods.size(), 1U);
  EXPECT_EQ(l4.pods[0].pod, "w-1");
  EXPECT_DOUBLE_EQ(*l4.pods[0].watts, 16.365);
  EXPECT_DOUBLE_EQ(*l4.pods[0].joules_total, 4'742.776);
}

TEST(EnergyMap, DcgmMigInstancesShareTheirGpu) {
  // dcgm-mig-a30-issue317-excerpt.prom: GPU 0 lists 1g.6gb instances 3, 4, 5, 6 (52.636,
  // 52.636, 52.746, 52.746 W: the whole GPU's power, repeated), GPU 1 instances 3 and 4 (56.121,
  // 56.127 W). No pod holds them on the page: nothing is read, not even four copies of a GPU.
  const std::string page = Fixture("dcgm-mig-a30-issue317-excerpt.prom");
  EXPECT_TRUE(Read(EnergyMap::Dcgm(), page).pods.empty());

  // Give pod a instance 3 of GPU 0, pod b instance 4 of GPU 0 and instance 3 of GPU 1.
  const auto held = [](std::string text, const std::string& gpu, const std::string& id,
                       const std::string& pod) {
    const std::string series = "device=\"nvidia" + gpu +
                               R"(",modelName="NVIDIA A30",GPU_I_PROFILE="1g.6gb",GPU_I_ID=")" +
                               id + "\"";
    return Replaced(std::move(text), series, series + R"(,namespace="ns",pod=")" + pod + "\"");
  };
  const std::string mig = held(held(held(page, "0", "3", "a"), "0", "4", "b"), "1", "3", "b");
  const EnergyReading r = Read(EnergyMap::Dcgm(), mig);
  ASSERT_EQ(r.pods.size(), 2U);
  // GPU 0: mean (52.636 * 2 + 52.746 * 2) / 4 = 52.691 W, a quarter (1 of 4 slices) each.
  // GPU 1: mean (56.121 + 56.127) / 2 = 56.124 W, half each (the page lists two instances).
  EXPECT_EQ(r.pods[0].pod, "a");
  EXPECT_DOUBLE_EQ(*r.pods[0].watts, 52.691 / 4);
  EXPECT_EQ(r.pods[0].gpus, 1);
  EXPECT_EQ(r.pods[1].pod, "b");
  EXPECT_DOUBLE_EQ(*r.pods[1].watts, (52.691 / 4) + (56.124 / 2));
  EXPECT_EQ(r.pods[1].gpus, 2);

  // Slices weigh the shares: a 3g instance next to a 1g one gets three quarters.
  const EnergyReading sized = Read(
      EnergyMap::Dcgm(),
      "DCGM_FI_DEV_POWER_USAGE{UUID=\"G\",GPU_I_PROFILE=\"3g.20gb\",GPU_I_ID=\"1\",pod=\"x\"} 100\n"
      "DCGM_FI_DEV_POWER_USAGE{UUID=\"G\",GPU_I_PROFILE=\"1g.5gb\",GPU_I_ID=\"2\",pod=\"y\"} "
      "100\n");
  ASSERT_EQ(sized.pods.size(), 2U);
  EXPECT_DOUBLE_EQ(*sized.pods[0].watts, 75);
  EXPECT_DOUBLE_EQ(*sized.pods[1].watts, 25);
}

TEST(EnergyMap, DcgmSumsAPodsGpus) {
  const EnergyReading r = Read(EnergyMap::Dcgm(),
                               "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"A\",namespace=\"n\","
                               "pod=\"p\"} 200\n"
                               "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"B\",namespace=\"n\","
                               "pod=\"p\"} 150.5\n"
                               "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"A\","
                               "namespace=\"n\",pod=\"p\"} 1000\n"
                               "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\",UUID=\"B\","
                               "namespace=\"n\",pod=\"p\"} 2500\n");
  ASSERT_EQ(r.pods.size(), 1U);
  EXPECT_DOUBLE_EQ(*r.pods[0].watts, 350.5);
  EXPECT_DOUBLE_EQ(*r.pods[0].joules_total, 3.5);  // 3,500 mJ
  EXPECT_EQ(r.pods[0].gpus, 2);
}

TEST(EnergyMap, KeplerLegacyContainerTotal) {
  // kepler-0.6-container-joules-eks-excerpt.prom: kepler_container_joules_total, 486.636 J for
  // each of three pods, one container each.
  const EnergyReading r =
      Read(EnergyMap::Kepler(), Fixture("kepler-0.6-container-joules-eks-excerpt.prom"));
  ASSERT_EQ(r.pods.size(), 3U);
  EXPECT_EQ(r.pods[0].pod_namespace, "kepler");
  EXPECT_EQ(r.pods[0].pod, "kepler-exporter-k5bkd");
  EXPECT_EQ(r.pods[1].pod_namespace, "kube-system");
  EXPECT_EQ(r.pods[1].pod, "aws-node-6ggpn");
  EXPECT_EQ(r.pods[2].pod, "coredns-cbbbbb9cb-jvjth");
  for (const PodEnergy& p : r.pods) {
    EXPECT_DOUBLE_EQ(*p.joules_total, 486.636);
    EXPECT_EQ(p.watts, std::nullopt);  // 0.6/0.7 have no container watts
    EXPECT_EQ(p.source, EnergySource::kKeplerLegacy);
    EXPECT_EQ(p.gpus, 0);
  }
}

TEST(EnergyMap, KeplerLegacyKinds) {
  // kepler-0.7-rapl-sysfs-excerpt.prom: kepler_container_gpu_joules_total is 0 for both
  // pseudo-pods (system_processes in "system", kernel_processes in "kernel"), over two
  // containers and both modes; uncore is inside the package and not read.
  const EnergyReading r = Read(EnergyMap::Kepler(), Fixture("kepler-0.7-rapl-sysfs-excerpt.prom"));
  ASSERT_EQ(r.pods.size(), 2U);
  EXPECT_EQ(r.pods[0].pod_namespace, "kernel");
  EXPECT_EQ(r.pods[1].pod_namespace, "system");
  EXPECT_EQ(r.pods[1].pod, "system_processes");
  EXPECT_EQ(r.pods[1].joules_total, 0);

  // Package, DRAM, other and GPU add up over containers and modes; core and uncore do not.
  const std::string kinds =
      "kepler_container_package_joules_total{container_name=\"a\",container_namespace=\"n\","
      "mode=\"dynamic\",pod_name=\"p\"} 100\n"
      "kepler_container_package_joules_total{container_name=\"b\",container_namespace=\"n\","
      "mode=\"idle\",pod_name=\"p\"} 50\n"
      "kepler_container_core_joules_total{container_name=\"a\",container_namespace=\"n\","
      "mode=\"dynamic\",pod_name=\"p\"} 80\n"
      "kepler_container_uncore_joules_total{container_name=\"a\",container_namespace=\"n\","
      "mode=\"dynamic\",pod_name=\"p\"} 10\n"
      "kepler_container_dram_joules_total{container_name=\"a\",container_namespace=\"n\","
      "mode=\"dynamic\",pod_name=\"p\"} 20\n"
      "kepler_container_other_joules_total{container_name=\"a\",container_namespace=\"n\","
      "mode=\"dynamic\",pod_name=\"p\"} 5\n"
      "kepler_container_gpu_joules_total{container_name=\"a\",container_namespace=\"n\","
      "mode=\"dynamic\",pod_name=\"p\"} 300\n";
  const EnergyReading summed = Read(EnergyMap::Kepler(), kinds);
  ASSERT_EQ(summed.pods.size(), 1U);
  EXPECT_EQ(summed.pods[0].joules_total, 475);  // 100 + 50 + 20 + 5 + 300
  // Where the exporter's own total is there, it is the pod's figure, not added to the kinds.
  const EnergyReading total = Read(
      EnergyMap::Kepler(), kinds +
                               "kepler_container_joules_total{container_name=\"a\","
                               "container_namespace=\"n\",mode=\"dynamic\",pod_name=\"p\"} 470\n");
  EXPECT_EQ(total.pods[0].joules_total, 470);
}

TEST(EnergyMap, KeplerRewritePodZones) {
  // kepler-2025-energy-zone-excerpt.prom has only kepler_node_energy_zone: none of the
  // families read (its zones, core/package/psys/uncore, are those the pod series carry).
  EXPECT_TRUE(
      Read(EnergyMap::Kepler(), Fixture("kepler-2025-energy-zone-excerpt.prom")).pods.empty());

  const std::string zones =
      "kepler_pod_cpu_watts{pod_id=\"1\",pod_name=\"p\",pod_namespace=\"n\",state=\"running\","
      "zone=\"package\"} 30\n"
      "kepler_pod_cpu_watts{pod_id=\"1\",pod_name=\"p\",pod_namespace=\"n\",state=\"running\","
      "zone=\"core\"} 25\n"
      "kepler_pod_cpu_watts{pod_id=\"1\",pod_name=\"p\",pod_namespace=\"n\",state=\"running\","
      "zone=\"uncore\"} 2\n"
      "kepler_pod_cpu_watts{pod_id=\"1\",pod_name=\"p\",pod_namespace=\"n\",state=\"running\","
      "zone=\"dram\"} 4\n"
      "kepler_pod_cpu_watts{pod_id=\"0\",pod_name=\"p\",pod_namespace=\"n\",state=\"terminated\","
      "zone=\"package\"} 99\n"
      "kepler_pod_cpu_joules_total{pod_id=\"1\",pod_name=\"p\",pod_namespace=\"n\","
      "state=\"running\",zone=\"package\"} 3000\n"
      "kepler_pod_cpu_joules_total{pod_id=\"1\",pod_name=\"p\",pod_namespace=\"n\","
      "state=\"running\",zone=\"dram\"} 400\n";
  const EnergyReading r = Read(EnergyMap::Kepler(), zones);
  ASSERT_EQ(r.pods.size(), 1U);
  EXPECT_EQ(r.pods[0].watts, 34);  // package + dram; core, uncore inside; terminated skipped
  EXPECT_EQ(r.pods[0].joules_total, 3400);
  EXPECT_EQ(r.pods[0].source, EnergySource::kKepler);

  // psys, the whole platform, is the figure where a pod has it.
  const EnergyReading psys =
      Read(EnergyMap::Kepler(), zones +
                                    "kepler_pod_cpu_watts{pod_name=\"p\",pod_namespace=\"n\","
                                    "state=\"running\",zone=\"psys\"} 40\n");
  EXPECT_EQ(psys.pods[0].watts, 40);

  // GPU watts add to the CPU's; no GPU counter, so no joules_total.
  const EnergyReading gpu =
      Read(EnergyMap::Kepler(), zones +
                                    "kepler_pod_gpu_watts{pod_name=\"p\",pod_namespace=\"n\","
                                    "state=\"running\"} 200\n");
  EXPECT_EQ(gpu.pods[0].watts, 234);
  EXPECT_EQ(gpu.pods[0].joules_total, std::nullopt);

  // A pod on both generations' series takes the rewrite's.
  const EnergyReading both =
      Read(EnergyMap::Kepler(), zones +
                                    "kepler_container_joules_total{container_namespace=\"n\","
                                    "pod_name=\"p\"} 7\n");
  EXPECT_EQ(both.pods[0].joules_total, 3400);
}

TEST(EnergyMap, HostileValuesAreAbsent) {
  const EnergyReading dcgm =
      Read(EnergyMap::Dcgm(),
           "DCGM_FI_DEV_POWER_USAGE{UUID=\"A\",pod=\"p\"} NaN\n"
           "DCGM_FI_DEV_POWER_USAGE{UUID=\"B\",pod=\"p\"} +Inf\n"
           "DCGM_FI_DEV_POWER_USAGE{UUID=\"C\",pod=\"p\"} -5\n"
           "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{UUID=\"A\",pod=\"p\"} -Inf\n"
           "DCGM_FI_DEV_POWER_USAGE{UUID=\"D\",pod=\"q\"} 1e308\n");
  ASSERT_EQ(dcgm.pods.size(), 2U);
  EXPECT_EQ(dcgm.pods[0].watts, std::nullopt);  // p: its GPUs are held, no figure is valid
  EXPECT_EQ(dcgm.pods[0].joules_total, std::nullopt);
  EXPECT_EQ(dcgm.pods[0].gpus, 3);
  EXPECT_EQ(dcgm.pods[1].watts, 1e308);

  const EnergyReading kepler =
      Read(EnergyMap::Kepler(),
           "kepler_pod_cpu_watts{pod_name=\"p\",pod_namespace=\"n\",zone=\"package\"} NaN\n"
           "kepler_container_joules_total{pod_name=\"p\",container_namespace=\"n\"} -1\n"
           "kepler_container_joules_total{pod_name=\"\",container_namespace=\"n\"} 10\n");
  EXPECT_TRUE(kepler.pods.empty());
}

TEST(EnergyMap, ReadsOnlyItsFamilies) {
  // The engine and node series on these pages are not kept.
  for (const std::string& name :
       {std::string("dcgm-kops-l4-full.prom"), std::string("kepler-0.7-rapl-sysfs-excerpt.prom"),
        std::string("vllm-v0.5-opt125m-full.prom")}) {
    for (const EnergyMap& map : {EnergyMap::Dcgm(), EnergyMap::Kepler()}) {
      const ParseResult parsed = ParseExposition(Fixture(name), {.keep = map.Filter()});
      ASSERT_TRUE(parsed.ok()) << name;
      for (const Family& family : parsed.page().families) {
        EXPECT_TRUE(family.name.starts_with("DCGM_FI_DEV_") ||
                    family.name.starts_with("kepler_container_"))
            << family.name;
        EXPECT_NE(family.name, "DCGM_FI_DEV_GPU_TEMP");
        EXPECT_NE(family.name, "kepler_container_uncore_joules_total");
      }
    }
  }
  EXPECT_TRUE(Read(EnergyMap::Dcgm(), Fixture("vllm-v0.5-opt125m-full.prom")).pods.empty());
  EXPECT_TRUE(Read(EnergyMap::Kepler(), Fixture("dcgm-kops-l4-full.prom")).pods.empty());
}

TEST(EnergyMap, PodsPerPageAreBounded) {
  std::string page;
  for (std::size_t i = 0; i < EnergyMap::kMaxPods + 10; ++i) {
    page += R"(kepler_container_joules_total{container_namespace="n",pod_name="p)" +
            std::to_string(i) + "\"} 1\n";
  }
  const EnergyReading r = Read(EnergyMap::Kepler(), page);
  EXPECT_EQ(r.pods.size(), EnergyMap::kMaxPods);
  EXPECT_TRUE(r.truncated);
}

TEST(EnergyMap, SourceNames) {
  EXPECT_EQ(EnergySourceName(EnergySource::kDcgm), "DCGM");
  EXPECT_EQ(EnergySourceName(EnergySource::kKeplerLegacy), "Kepler 0.7");
  EXPECT_EQ(EnergySourceName(EnergySource::kKepler), "Kepler");
}

TEST(CounterRate, JoulesGiveWattsAcrossAReset) {
  using std::chrono::seconds;
  const CounterRate::TimePoint start{seconds(100)};
  CounterRate rate;
  EXPECT_FALSE(rate.Add(start, 4'742.776));
  EXPECT_NEAR(*rate.Add(start + seconds(10), 4'907.426), 16.465, 1e-9);  // 164.65 J in 10 s
  EXPECT_DOUBLE_EQ(*rate.Add(start + seconds(20), 50), 5);               // reset: 50 J since
  EXPECT_FALSE(rate.Add(start + seconds(20), 60));                       // not later: ignored
  EXPECT_FALSE(rate.Add(start + seconds(30), std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(rate.Add(start + seconds(40), 100));  // starts afresh after a bad total
  EXPECT_DOUBLE_EQ(*rate.Add(start + seconds(44), 120), 5);
}

}  // namespace
}  // namespace eoc::signals
