// A pool's scrape targets (ScrapePoolOf), and one scrape's verdict and Load (ReadScrape, LoadOf).
#include "controller/scrape_page.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "controller/scrape_pool.h"
#include "sim/metrics_pages.h"

namespace eoc::controller {
namespace {

TEST(ScrapePoolTest, TargetsArePodIpsAtTheMetricsPort) {
  api::InferencePool pool;
  pool.ns = "prod";
  pool.name = "chat";
  pool.spec.target_port = 8000;
  pool.spec.engine = api::Engine::kSglang;
  pool.spec.metrics = {.port = 9090,
                       .path = "/stats",
                       .interval_seconds = 7,
                       .timeout_seconds = 3,
                       .access = api::MetricsAccess::kApiServerProxy};
  pool.spec.energy.source = api::EnergySource::kDcgm;
  pool.spec.carbon.static_intensity = {{"eu-north", 30}};
  const PoolMembers workers{
      .workers = {{.key = routing::WorkerKeyOf("prod/b"),
                   .pod = "prod/b",
                   .address = "[fd00::7]:8000"},
                  {.key = routing::WorkerKeyOf("prod/a"),
                   .pod = "prod/a",
                   .address = "10.1.2.3:8000",
                   .capability = {.max_concurrency = 64, .zone = "eu-north"},
                   .profile = {.idle_watts = 60, .max_watts = 700, .max_tokens_per_second = 9000}}},
      .notes = {}};
  const ScrapePool got = ScrapePoolOf(pool, workers, pool.spec.carbon.static_intensity, {});
  EXPECT_EQ(got.key, "prod/chat");
  EXPECT_EQ(got.engine, api::Engine::kSglang);
  EXPECT_EQ(got.path, "/stats");
  EXPECT_EQ(got.interval, std::chrono::seconds(7));
  EXPECT_EQ(got.timeout, std::chrono::seconds(3));
  EXPECT_EQ(got.access, api::MetricsAccess::kApiServerProxy);
  EXPECT_EQ(got.energy_source, api::EnergySource::kDcgm);
  ASSERT_EQ(got.targets.size(), 2U);
  EXPECT_EQ(got.targets[0].pod, "prod/a");
  EXPECT_EQ(got.targets[0].address, "10.1.2.3:9090");
  EXPECT_EQ(got.targets[0].key, routing::WorkerKeyOf("prod/a"));
  EXPECT_EQ(got.targets[0].max_concurrency, 64);
  EXPECT_EQ(got.targets[0].profile.max_watts, 700);
  EXPECT_EQ(got.targets[0].grid_g_per_kwh, 30);
  EXPECT_EQ(got.targets[1].grid_g_per_kwh, 0);  // no zone
  EXPECT_EQ(got.targets[1].address, "[fd00::7]:9090");
  EXPECT_TRUE(got.exporters.empty());
  EXPECT_EQ(got.targets[0].exporter, "");
  EXPECT_EQ(got, ScrapePoolOf(pool, workers, pool.spec.carbon.static_intensity, {}));
  pool.spec.metrics.interval_seconds = 8;
  EXPECT_NE(got, ScrapePoolOf(pool, workers, pool.spec.carbon.static_intensity, {}));
}

// A generic pool's names come from spec.metrics.names, and its pages are read by them.
TEST(ScrapePoolTest, AGenericPoolReadsTheSpecsNames) {
  api::InferencePool pool;
  pool.ns = "prod";
  pool.name = "chat";
  pool.spec.target_port = 8000;
  pool.spec.engine = api::Engine::kGeneric;
  pool.spec.metrics.names = {.running = "llm_active", .waiting = "llm_queued"};
  const ScrapePool got = ScrapePoolOf(pool, {}, {}, {});
  EXPECT_EQ(got.generic_names.running, "llm_active");
  EXPECT_EQ(got.generic_names.waiting, "llm_queued");
  const std::string page =
      "# TYPE llm_active gauge\nllm_active{model_name=\"m\"} 4\n"
      "# TYPE llm_queued gauge\nllm_queued{model_name=\"m\"} 1\n";
  const ScrapeReading r = ReadScrape({.body = page}, EngineMapOf(got.engine, got.generic_names));
  ASSERT_EQ(r.result, ScrapeResult::kOk) << r.message;
  EXPECT_EQ(r.figures.running, 4);
  EXPECT_EQ(r.figures.waiting, 1);
  pool.spec.engine = api::Engine::kVllm;  // the names are a generic pool's only
  EXPECT_EQ(ScrapePoolOf(pool, {}, {}, {}).generic_names, signals::GenericMetricNames{});
}

// The exporter on each node: serving pods only, the first by name when a rollout runs two; each
// worker names its node's, and the pool lists the ones named (none under Static).
TEST(ScrapePoolTest, EachWorkerTakesTheExporterOnItsNode) {
  const auto pod = [](const std::string& name, const std::string& ip, const std::string& node,
                      bool ready = true) {
    kube::PodView p;
    p.ns = "gpu";
    p.name = name;
    p.pod_ip = ip;
    p.node_name = node;
    p.phase = kube::PodPhase::kRunning;
    p.ready = ready;
    return std::make_shared<const kube::PodView>(std::move(p));
  };
  const NodeExporters exporters = ExportersByNode(
      {pod("dcgm-b", "10.0.1.9", "node-a"), pod("dcgm-a", "10.0.1.8", "node-a"),
       pod("dcgm-c", "fd00::3", "node-b"), pod("dcgm-d", "10.0.3.1", "node-c", false),
       pod("dcgm-e", "10.0.4.1", ""), nullptr},
      9400, "/metrics");
  ASSERT_EQ(exporters.by_node.size(), 2U);
  EXPECT_EQ(exporters.by_node.at("node-a"),
            (ExporterTarget{.pod = "gpu/dcgm-a", .address = "10.0.1.8:9400"}));
  EXPECT_EQ(exporters.by_node.at("node-b"),
            (ExporterTarget{.pod = "gpu/dcgm-c", .address = "[fd00::3]:9400"}));

  api::InferencePool pool;
  pool.ns = "prod";
  pool.name = "chat";
  pool.spec.target_port = 8000;
  PoolMembers members;
  for (const char* name : {"w-0", "w-1", "w-2"}) {
    const std::string pod_key = std::string("prod/") + name;
    members.workers.push_back(
        {.key = routing::WorkerKeyOf(pod_key), .pod = pod_key, .address = "10.1.0.1:8000"});
  }
  members.notes = {{.node = "node-a"}, {.node = "node-a"}, {.node = "node-c"}};
  ScrapePool got = ScrapePoolOf(pool, members, {}, exporters);
  ASSERT_EQ(got.targets.size(), 3U);
  EXPECT_EQ(got.targets[0].exporter, "gpu/dcgm-a");
  EXPECT_EQ(got.targets[1].exporter, "gpu/dcgm-a");
  EXPECT_EQ(got.targets[2].exporter, "");  // node-c's exporter is not ready
  ASSERT_EQ(got.exporters.size(), 1U);     // node-b's serves none of the pool's workers
  EXPECT_EQ(got.exporters[0].pod, "gpu/dcgm-a");
  EXPECT_EQ(got.exporter_path, "/metrics");

  pool.spec.energy.source = api::EnergySource::kStatic;
  got = ScrapePoolOf(pool, members, {}, exporters);
  EXPECT_TRUE(got.exporters.empty());
  EXPECT_EQ(got.targets[0].exporter, "");
}

TEST(ScrapePageTest, AGoodPageGivesTheLoad) {
  const std::string page = sim::RenderMetrics(api::Engine::kVllm,
                                              {.running = 3,
                                               .waiting = 2,
                                               .kv_cache_usage = 0.25,
                                               .num_gpu_blocks = 1000,
                                               .block_size = 16,
                                               .prompt_tokens_total = 10,
                                               .generation_tokens_total = 20},
                                              {}, false);
  const ScrapeReading r = ReadScrape({.body = page}, signals::EngineMap::Vllm());
  ASSERT_EQ(r.result, ScrapeResult::kOk) << r.message;
  EXPECT_EQ(r.figures.prompt_tokens_total, 10);
  const routing::Load load = LoadOf(
      r.figures, signals::TokenRate::Rate{.prompt_per_second = 4, .generation_per_second = 6});
  EXPECT_EQ(load.running, 3);
  EXPECT_EQ(load.waiting, 2);
  EXPECT_DOUBLE_EQ(load.kv_cache_usage, 0.25);
  EXPECT_EQ(load.kv_blocks_total, 1000);
  EXPECT_EQ(load.kv_blocks_free, 750);
  EXPECT_EQ(load.block_size, 16);
  EXPECT_EQ(load.tokens_per_second, 10);
  EXPECT_TRUE(load.available);
}

// Good scrapes of a worker whose page carries its own DCGM series: the token rate comes from the
// counters, the watts from the energy counter's rate, and the slope of one over the other is the
// Load's marginal joules per token once there are enough scrapes; a page without the series
// leaves the watts unknown but keeps the slope.
TEST(ScrapePageTest, GoodScrapesCarryTheTokenRateAndTheWorkersOwnEnergy) {
  const PageMaps maps = PageMapsOf(signals::EngineMap::Vllm(), api::EnergySource::kAuto);
  WorkerReadings w{.energy = signals::WorkerEnergy(
                       {.idle_watts = 67, .max_watts = 700, .max_tokens_per_second = 8200})};
  const auto start = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  std::int64_t generated = 0;
  std::int64_t millijoules = 0;
  routing::Load load;
  for (int i = 0; i < 12; ++i) {
    const double rate = i % 2 == 0 ? 1000 : 3000;  // tokens/s over the 5 s before this scrape
    const double watts = 100 + (0.1 * rate);
    if (i > 0) {
      generated += static_cast<std::int64_t>(rate * 5);
      millijoules += static_cast<std::int64_t>(watts * 5 * 1000);
    }
    const std::string page =
        sim::RenderMetrics(api::Engine::kVllm,
                           {.running = 4,
                            .generation_tokens_total = generated,
                            .watts = watts,
                            .energy_millijoules_total = millijoules},
                           {.pod_name = "w-0", .pod_namespace = "prod"}, /*dcgm=*/true);
    const ScrapeReading r = ReadScrape({.body = page}, maps, "prod/w-0");
    ASSERT_EQ(r.result, ScrapeResult::kOk) << r.message;
    load = ObserveGoodScrape(r, start + std::chrono::seconds(5 * i), 250, w);
    if (i == 1) {
      EXPECT_EQ(load.marginal_joules_per_token, 0);  // too few scrapes for a slope
    }
  }
  EXPECT_EQ(load.running, 4);
  EXPECT_DOUBLE_EQ(load.tokens_per_second, 3000);
  EXPECT_EQ(w.tokens_per_second, 3000);
  EXPECT_NEAR(load.marginal_joules_per_token, 0.1, 1e-9);
  EXPECT_EQ(load.grid_g_per_kwh, 250);
  EXPECT_TRUE(w.own_energy);
  EXPECT_NEAR(w.energy.watts().value_or(0), 400, 1e-9);

  const std::string bare = sim::RenderMetrics(
      api::Engine::kVllm, {.running = 1, .generation_tokens_total = generated + 5000}, {}, false);
  load = ObserveGoodScrape(ReadScrape({.body = bare}, maps, "prod/w-0"),
                           start + std::chrono::seconds(60), 250, w);
  EXPECT_FALSE(w.own_energy);
  EXPECT_FALSE(w.energy.watts().has_value());
  EXPECT_NEAR(load.marginal_joules_per_token, 0.1, 1e-9);
  EXPECT_EQ(load.running, 1);
}

TEST(ScrapePageTest, EachFailureHasItsKind) {
  const auto vllm = signals::EngineMap::Vllm();
  EXPECT_EQ(ReadScrape({.error = FetchError{.kind = FetchErrorKind::kDeadline}}, vllm).result,
            ScrapeResult::kDeadline);
  EXPECT_EQ(ReadScrape({.error = FetchError{.kind = FetchErrorKind::kHttpStatus}}, vllm).result,
            ScrapeResult::kHttpStatus);
  const ScrapeReading garbage = ReadScrape({.body = "\x01\x02 not metrics {\n"}, vllm);
  EXPECT_EQ(garbage.result, ScrapeResult::kParseError);
  EXPECT_FALSE(garbage.message.empty());
  const std::string sglang = sim::RenderMetrics(api::Engine::kSglang, {.running = 1}, {}, false);
  EXPECT_EQ(ReadScrape({.body = sglang}, vllm).result, ScrapeResult::kMissingSeries);
  EXPECT_EQ(ReadScrape({.body = sglang}, signals::EngineMap::Sglang()).result, ScrapeResult::kOk);
  // Every fetch error kind keeps its name.
  for (const auto& entry : kFetchErrorKindNames) {
    EXPECT_EQ(ResultName(ResultOf(entry.value)), entry.name);
  }
  EXPECT_EQ(ResultName(ScrapeResult::kMissingSeries), "missing-series");
}

// spec.energy.source decides which exporters' series a worker's own page is read for: Auto tries
// DCGM then Kepler, DCGM and Kepler only theirs, Static none; only the worker's own pod counts.
TEST(ScrapePageTest, TheEnergySourceChoosesTheSeriesReadForTheWorker) {
  const std::string page =
      sim::RenderMetrics(api::Engine::kVllm, {.running = 2}, {}, false) +
      "# TYPE kepler_pod_cpu_watts gauge\n"
      "kepler_pod_cpu_watts{pod_name=\"w-0\",pod_namespace=\"prod\",state=\"running\","
      "zone=\"package\"} 30\n"
      "kepler_pod_cpu_watts{pod_name=\"w-1\",pod_namespace=\"prod\",state=\"running\","
      "zone=\"package\"} 70\n";
  const FetchResult fetched{.error = std::nullopt, .body = page};
  const auto read = [&](api::EnergySource source, const char* pod) {
    return ReadScrape(fetched, PageMapsOf(signals::EngineMap::Vllm(), source), pod);
  };
  const ScrapeReading with_auto = read(api::EnergySource::kAuto, "prod/w-0");
  ASSERT_EQ(with_auto.result, ScrapeResult::kOk);
  EXPECT_EQ(with_auto.figures.running, 2);
  ASSERT_TRUE(with_auto.energy);
  EXPECT_EQ(with_auto.energy->watts, 30);
  EXPECT_EQ(with_auto.energy->source, signals::EnergySource::kKepler);
  EXPECT_EQ(read(api::EnergySource::kKepler, "prod/w-1").energy->watts, 70);
  EXPECT_FALSE(read(api::EnergySource::kDcgm, "prod/w-0").energy);
  EXPECT_FALSE(read(api::EnergySource::kStatic, "prod/w-0").energy);
  EXPECT_FALSE(read(api::EnergySource::kAuto, "staging/w-0").energy);
  EXPECT_FALSE(ReadScrape(fetched, signals::EngineMap::Vllm()).energy);
}

// A node exporter's page gives every pod on it, by the first energy map that has the pod; a page
// with the series but no pod on them (idle GPUs) is good, a page without any is not.
TEST(ScrapePageTest, AnExportersPageGivesEachPodOnItsNode) {
  const PageMaps maps = PageMapsOf(signals::EngineMap::Vllm(), api::EnergySource::kAuto);
  const std::string dcgm = sim::RenderExporterMetrics(
      sim::Exporter::kDcgm, "node-a",
      {{.pod_namespace = "prod", .pod_name = "w-0", .watts = 150, .joules_total = 10},
       {.pod_namespace = "prod", .pod_name = "w-1", .watts = 250, .joules_total = 20, .gpus = 2}});
  const ExporterReading reading = ReadExporterPage({.body = dcgm}, maps);
  ASSERT_EQ(reading.result, ScrapeResult::kOk) << reading.message;
  ASSERT_EQ(reading.pods.size(), 2U);
  EXPECT_EQ(reading.pods.at("prod/w-0").watts, 150);
  EXPECT_EQ(reading.pods.at("prod/w-0").source, signals::EnergySource::kDcgm);
  EXPECT_EQ(reading.pods.at("prod/w-1").watts, 250);
  EXPECT_EQ(reading.pods.at("prod/w-1").gpus, 2);
  EXPECT_FALSE(reading.truncated);

  const std::string kepler = sim::RenderExporterMetrics(
      sim::Exporter::kKepler, "node-a",
      {{.pod_namespace = "prod", .pod_name = "w-0", .joules_total = 800}});
  const ExporterReading k = ReadExporterPage({.body = kepler}, maps);
  ASSERT_EQ(k.result, ScrapeResult::kOk) << k.message;
  EXPECT_EQ(k.pods.at("prod/w-0").source, signals::EnergySource::kKeplerLegacy);
  EXPECT_NEAR(k.pods.at("prod/w-0").joules_total.value_or(0), 800, 1e-6);
  // DCGM only: Kepler's page has none of its series.
  const ExporterReading dcgm_only = ReadExporterPage(
      {.body = kepler}, PageMapsOf(signals::EngineMap::Vllm(), api::EnergySource::kDcgm));
  EXPECT_EQ(dcgm_only.result, ScrapeResult::kMissingSeries);
  EXPECT_THAT(dcgm_only.message, ::testing::HasSubstr("energy exporters' series"));

  const ExporterReading idle =
      ReadExporterPage({.body = sim::RenderExporterMetrics(sim::Exporter::kDcgm, "a", {})}, maps);
  EXPECT_EQ(idle.result, ScrapeResult::kOk);
  EXPECT_TRUE(idle.pods.empty());
  const std::string vllm = sim::RenderMetrics(api::Engine::kVllm, {.running = 1}, {}, false);
  EXPECT_EQ(ReadExporterPage({.body = vllm}, maps).result, ScrapeResult::kMissingSeries);
  EXPECT_EQ(ReadExporterPage({.body = "\x01 not metrics {\n"}, maps).result,
            ScrapeResult::kParseError);
  const ExporterReading refused = ReadExporterPage(
      {.error = FetchError{.kind = FetchErrorKind::kConnectRefused, .message = "refused"}}, maps);
  EXPECT_EQ(refused.result, ScrapeResult::kConnectRefused);
  EXPECT_EQ(refused.message, "refused");
}

}  // namespace
}  // namespace eoc::controller
