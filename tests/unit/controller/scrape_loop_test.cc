// The scrape loop against a fetcher of the test's own (answers set per address, or held until the
// test releases them) and a ManualClock: rounds every interval, failures that harm no other
// worker, token rates, workers and pools leaving, a changed interval, the in-flight picks a
// scrape keeps, and Stop during a wait. Time moves only when the test advances the clock.
#include "controller/scrape_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <mutex>

#include "common/clock.h"
#include "eventually.h"
#include "fake_fetcher.h"
#include "routing/pool_snapshot.h"
#include "sim/metrics_pages.h"
#include "telemetry/metrics.h"

namespace eoc::controller {
namespace {

using eoc::testing::FakeFetcher;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Vllm(const sim::PageFigures& load) {
  return sim::RenderMetrics(api::Engine::kVllm, load, {}, false);
}

std::string Address(int i) { return "10.0.0." + std::to_string(i) + ":9000"; }
std::string Pod(int i) { return "prod/w-" + std::to_string(i); }
routing::WorkerKey Key(int i) { return routing::WorkerKeyOf(Pod(i)); }

class ScrapeLoopTest : public ::testing::Test {
 protected:
  static constexpr const char* kPool = "prod/chat";

  void SetUp() override { loop_.Start(); }
  void TearDown() override { loop_.Stop(); }

  // A pool of workers 0..n-1 (or `which`), scraped every `interval`; in the directory too.
  ScrapePool Pool(const std::vector<int>& which, seconds interval = seconds(5)) {
    ScrapePool pool{.key = kPool, .interval = interval, .timeout = seconds(2)};
    std::vector<routing::Worker> workers;
    for (int i : which) {
      pool.targets.push_back(
          {.key = Key(i), .pod = Pod(i), .address = Address(i), .max_concurrency = 100});
      workers.push_back({.key = Key(i),
                         .pod = Pod(i),
                         .address = "10.0.0." + std::to_string(i) + ":8000",
                         .capability = {.max_concurrency = 100},
                         .weight = 1000});
    }
    state_ = directory_.Configure(kPool, {}, clock_.Now());
    state_->SetSnapshot(routing::PoolSnapshot::Build(workers, 1, Strategy::kLeastBusy),
                        clock_.Now());
    return pool;
  }

  ScrapeSummary Summary() const { return loop_.Summary(kPool).value_or(ScrapeSummary{}); }
  // Waits (real time, bounded) until `n` scrapes of the pool have finished.
  bool AwaitScrapes(std::uint64_t n) const {
    return testing::Eventually([&] { return Summary().scrapes >= n; }, seconds(10));
  }
  // Waits until the loop sleeps until `at`, then moves the clock there.
  bool AdvanceTo(Clock::TimePoint at) {
    if (!testing::Eventually([&] { return clock_.NextDeadline() == at; }, seconds(10))) {
      return false;
    }
    clock_.Advance(at - clock_.Now());
    return true;
  }
  std::string Exposition() const { return metrics_.Serialize(); }
  static std::string Series(const std::string& name, int pod) {
    return name + R"({namespace="prod",pod="w-)" + std::to_string(pod) + R"(",pool="chat"})";
  }

  ManualClock clock_;
  const Clock::TimePoint t0_ = clock_.Now();
  FakeFetcher fetcher_;
  FakeFetcher proxy_;
  routing::SessionBudget budget_;
  routing::PrefixBudget prefix_budget_;
  routing::PoolDirectory directory_{budget_, prefix_budget_};
  std::shared_ptr<routing::PoolState> state_;
  telemetry::Metrics metrics_;
  ScrapeMetrics scrape_metrics_{metrics_.registry()};
  ScrapeLoop loop_{{.direct = &fetcher_, .proxy = &proxy_},
                   {.directory = &directory_, .metrics = &scrape_metrics_},
                   clock_};
};

TEST_F(ScrapeLoopTest, ScrapesEveryWorkerEveryInterval) {
  fetcher_.Set(Address(0), FakeFetcher::Page(Vllm({.running = 3, .waiting = 1})));
  fetcher_.Set(Address(1), FakeFetcher::Page(Vllm({.running = 50})));
  loop_.SetPool(Pool({0, 1}));
  ASSERT_TRUE(AwaitScrapes(2));  // a new pool at once
  EXPECT_EQ(Summary().rounds, 1U);
  EXPECT_EQ(Summary().ok, 2U);
  EXPECT_EQ(Summary().total, 2U);
  EXPECT_EQ(fetcher_.Last().path, "/metrics");
  EXPECT_EQ(fetcher_.Last().timeout, seconds(2));
  EXPECT_EQ(fetcher_.Requests(Address(0)), 1);
  EXPECT_DOUBLE_EQ(*state_->Busyness(Key(0)), 0.04);
  EXPECT_DOUBLE_EQ(*state_->Busyness(Key(1)), 0.5);
  for (int round = 2; round <= 4; ++round) {
    ASSERT_TRUE(AdvanceTo(t0_ + seconds(5) * (round - 1)));
    ASSERT_TRUE(AwaitScrapes(std::uint64_t{2} * static_cast<std::uint64_t>(round)));
    EXPECT_EQ(Summary().rounds, static_cast<std::uint64_t>(round));
    EXPECT_EQ(fetcher_.Requests(Address(1)), round);
  }
  EXPECT_EQ(proxy_.Requests(Address(0)), 0);
  const std::string text = Exposition();
  EXPECT_THAT(text, HasSubstr(Series("eoc_worker_running_requests", 0) + " 3"));
  EXPECT_THAT(text, HasSubstr(Series("eoc_worker_waiting_requests", 0) + " 1"));
  EXPECT_THAT(text, HasSubstr(Series("eoc_worker_busyness", 1) + " 0.5"));
  EXPECT_THAT(text, HasSubstr(R"(eoc_scrapes_total{namespace="prod",pool="chat",result="ok"} 8)"));
  EXPECT_THAT(text,
              HasSubstr(R"(eoc_scrape_duration_seconds_count{namespace="prod",pool="chat"} 8)"));
}

TEST_F(ScrapeLoopTest, AFailingWorkerIsUnavailableAndTheOthersAreScrapedOnTime) {
  fetcher_.Set(Address(0), FakeFetcher::Page(Vllm({.running = 1, .kv_cache_usage = 1.0})));
  fetcher_.Set(Address(1), FakeFetcher::Error(FetchErrorKind::kDeadline));
  fetcher_.Hold(Address(2));
  fetcher_.Set(Address(3), FakeFetcher::Page("garbage\n"));
  fetcher_.Set(Address(4), FakeFetcher::Page(sim::RenderMetrics(api::Engine::kSglang,
                                                                {.running = 2}, {}, false)));
  loop_.SetPool(Pool({0, 1, 2, 3, 4}));
  ASSERT_TRUE(AwaitScrapes(4));
  EXPECT_EQ(Summary().ok, 1U);
  EXPECT_EQ(Summary().total, 5U);
  // Worker 0's page: no free blocks, so no room; the others have no KV data: always room.
  EXPECT_FALSE(*state_->HasRoom(Key(0), 16));
  for (int i : {1, 2, 3, 4}) EXPECT_TRUE(*state_->HasRoom(Key(i), 16)) << i;
  for (int round = 2; round <= 3; ++round) {
    ASSERT_TRUE(AdvanceTo(t0_ + seconds(5) * (round - 1)));
    ASSERT_TRUE(AwaitScrapes(std::uint64_t{4} * static_cast<std::uint64_t>(round)));
    EXPECT_EQ(fetcher_.Requests(Address(0)), round);
    EXPECT_EQ(fetcher_.Requests(Address(1)), round);
    EXPECT_EQ(fetcher_.Requests(Address(2)), 1);  // still out: not fetched twice
  }
  const std::string text = Exposition();
  for (const char* result : {"ok", "deadline", "parse-error", "missing-series"}) {
    EXPECT_THAT(
        text, HasSubstr(std::string(R"(eoc_scrapes_total{namespace="prod",pool="chat",result=")") +
                        result + "\"} 3"))
        << result;
  }
  for (int i : {1, 2, 3, 4}) {
    EXPECT_THAT(text, Not(HasSubstr(Series("eoc_worker_running_requests", i)))) << i;
  }
  // The held fetch comes back failed: counted; then good again at the next round.
  EXPECT_EQ(fetcher_.Release(Address(2), FakeFetcher::Error(FetchErrorKind::kTooLarge)), 1);
  ASSERT_TRUE(AwaitScrapes(13));
  EXPECT_THAT(Exposition(), HasSubstr(R"(result="too-large"} 1)"));
  // A worker that turns unavailable stops counting against the KV budget.
  fetcher_.Set(Address(0), FakeFetcher::Error(FetchErrorKind::kConnectRefused));
  fetcher_.Set(Address(2), FakeFetcher::Page(Vllm({.running = 5})));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(15)));
  ASSERT_TRUE(AwaitScrapes(18));
  EXPECT_TRUE(*state_->HasRoom(Key(0), 16));
  EXPECT_DOUBLE_EQ(*state_->Busyness(Key(2)), 0.05);
  EXPECT_EQ(Summary().ok, 1U);  // worker 2 now; 0 failed
  EXPECT_THAT(Exposition(), HasSubstr(Series("eoc_worker_running_requests", 2) + " 5"));
  EXPECT_THAT(Exposition(), Not(HasSubstr(Series("eoc_worker_running_requests", 0))));
}

TEST_F(ScrapeLoopTest, AFlappingWorkerStaysRecoveringUntilItsGoodScrapesInARow) {
  const FetchResult good = FakeFetcher::Page(Vllm({.running = 1}));
  fetcher_.Set(Address(0), good);
  fetcher_.Set(Address(1), good);
  loop_.SetPool(Pool({0, 1}));
  ASSERT_TRUE(AwaitScrapes(2));
  EXPECT_EQ(Summary().ok, 2U);  // a new worker's first good scrape counts at once
  EXPECT_EQ(Summary().recovering, 0U);
  // Worker 1 fails every other round: while it is back it is recovering, never steady.
  std::uint64_t scrapes = 2;
  for (int round = 2; round <= 7; ++round) {
    fetcher_.Set(Address(1), round % 2 == 0 ? FakeFetcher::Error(FetchErrorKind::kDeadline) : good);
    ASSERT_TRUE(AdvanceTo(t0_ + seconds(5) * (round - 1)));
    ASSERT_TRUE(AwaitScrapes(scrapes += 2));
    EXPECT_EQ(Summary().ok, round % 2 == 0 ? 1U : 2U) << round;
    EXPECT_EQ(Summary().recovering, round % 2 == 0 ? 0U : 1U) << round;
  }
  // Good from now on: recovering for its first kSteadyScrapes - 1 good scrapes, then steady.
  fetcher_.Set(Address(1), good);
  for (int round = 8; round <= 10; ++round) {
    ASSERT_TRUE(AdvanceTo(t0_ + seconds(5) * (round - 1)));
    ASSERT_TRUE(AwaitScrapes(scrapes += 2));
    // Round 7 was its first good scrape after round 6's failure; rounds 8 and 9 the next two.
    EXPECT_EQ(Summary().recovering, round < 9 ? 1U : 0U) << round;
  }
  EXPECT_EQ(Summary().ok, 2U);
}

TEST_F(ScrapeLoopTest, TokenRatesAcrossScrapesAndACounterReset) {
  fetcher_.Set(
      Address(0),
      FakeFetcher::Page(Vllm({.prompt_tokens_total = 1000, .generation_tokens_total = 500})));
  loop_.SetPool(Pool({0}));
  ASSERT_TRUE(AwaitScrapes(1));
  EXPECT_THAT(Exposition(), HasSubstr(Series("eoc_worker_tokens_per_second", 0) + " 0"));
  fetcher_.Set(
      Address(0),
      FakeFetcher::Page(Vllm({.prompt_tokens_total = 2000, .generation_tokens_total = 1000})));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(5)));
  ASSERT_TRUE(AwaitScrapes(2));
  EXPECT_THAT(Exposition(), HasSubstr(Series("eoc_worker_tokens_per_second", 0) + " 300"));
  // The engine restarted: its counters start again from 0; the new values are the increase.
  fetcher_.Set(Address(0), FakeFetcher::Page(
                               Vllm({.prompt_tokens_total = 100, .generation_tokens_total = 50})));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(10)));
  ASSERT_TRUE(AwaitScrapes(3));
  EXPECT_THAT(Exposition(), HasSubstr(Series("eoc_worker_tokens_per_second", 0) + " 30"));
}

// A vLLM page with dcgm-exporter's power series for the GPU of pod prod/`pod` (a sidecar exporter).
std::string VllmWithPower(const sim::PageFigures& load, const std::string& pod) {
  return sim::RenderMetrics(api::Engine::kVllm, load, {.pod_name = pod, .pod_namespace = "prod"},
                            true);
}

// A worker whose own page carries dcgm-exporter's power series for it: the loop reads its watts
// each scrape (the energy counter's rate once it has two values, the gauge before) and, once
// MarginalEnergy has enough loaded scrapes, hands the slope of watts over token rate to routing
// as its marginal joules per token; the gauges say where each figure came from.
TEST_F(ScrapeLoopTest, AWorkersOwnPageWithPowerSeriesGivesItsWattsAndMarginalJoules) {
  const auto marginal = [&] {
    for (const auto& observed : state_->Loads()) {
      if (observed.worker == Key(0)) return observed.load.marginal_joules_per_token;
    }
    return -1.0;
  };
  ScrapePool pool = Pool({0});
  pool.targets[0].profile = {.idle_watts = 100, .max_watts = 700, .max_tokens_per_second = 10000};
  pool.targets[0].grid_g_per_kwh = 360;  // 1e-4 g per joule
  sim::PageFigures load{.watts = 150, .energy_millijoules_total = 1000000};
  fetcher_.Set(Address(0), FakeFetcher::Page(VllmWithPower(load, "w-0")));
  loop_.SetPool(pool);
  ASSERT_TRUE(AwaitScrapes(1));
  EXPECT_THAT(Exposition(), HasSubstr(R"(eoc_worker_watts{namespace="prod",pod="w-0",pool="chat",)"
                                      R"(source="DCGM"} 150)"));
  // The profile's marginal until there is a measured one: (700 - 100) / 10000.
  EXPECT_THAT(Exposition(), HasSubstr(R"(eoc_worker_marginal_joules_per_token{estimate="profile",)"
                                      R"(namespace="prod",pod="w-0",pool="chat"} 0.06)"));
  const auto grams = [&](const char* estimate) {  // the gauge's value; -1 when absent
    const std::string series = std::string("eoc_worker_marginal_grams_co2e_per_token{estimate=\"") +
                               estimate + R"(",namespace="prod",pod="w-0",pool="chat"} )";
    const std::string text = Exposition();
    const auto at = text.find(series);
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + series.size()));
  };
  EXPECT_NEAR(grams("profile"), 0.06 * 1e-4, 1e-12);
  EXPECT_EQ(marginal(), 0);
  // Scrapes at 1000..5000 tokens/s drawing 200 W + 0.05 J per token; the gauge lags (it reads
  // 1 W) so that only the counter's rate can give the line.
  const int scrapes = static_cast<int>(signals::MarginalEnergy::kMinPoints) + 1;
  for (int i = 1; i <= scrapes; ++i) {
    const std::int64_t rate = 1000 + 500 * (i - 1);
    load.generation_tokens_total += rate * 5;
    load.energy_millijoules_total += (200000 + 50 * rate) * 5;
    load.watts = 1;
    fetcher_.Set(Address(0), FakeFetcher::Page(VllmWithPower(load, "w-0")));
    ASSERT_TRUE(AdvanceTo(t0_ + seconds(5) * i));
    ASSERT_TRUE(AwaitScrapes(static_cast<std::uint64_t>(i) + 1));
  }
  EXPECT_NEAR(marginal(), 0.05, 1e-6);
  EXPECT_THAT(Exposition(), HasSubstr(R"(eoc_worker_watts{namespace="prod",pod="w-0",pool="chat",)"
                                      R"(source="DCGM"} 450)"));
  EXPECT_THAT(Exposition(), HasSubstr(R"(eoc_worker_marginal_joules_per_token{estimate="measured",)"
                                      R"(namespace="prod",pod="w-0",pool="chat"} 0.05)"));
  EXPECT_NEAR(grams("measured"), 0.05 * 1e-4, 1e-12);
  EXPECT_THAT(Exposition(), Not(HasSubstr(R"(estimate="profile")")));
  // The page now carries another pod's GPU only: the worker's watts are unknown (no gauge), and
  // the slope's window is kept.
  load.generation_tokens_total += 5000;
  fetcher_.Set(Address(0), FakeFetcher::Page(VllmWithPower(load, "w-9")));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(5) * (scrapes + 1)));
  ASSERT_TRUE(AwaitScrapes(static_cast<std::uint64_t>(scrapes) + 2));
  EXPECT_THAT(Exposition(), Not(HasSubstr("eoc_worker_watts{")));
  EXPECT_NEAR(marginal(), 0.05, 1e-6);
}

// spec.energy.source Static: the workers' pages are not read for power, whatever they carry.
TEST_F(ScrapeLoopTest, StaticEnergyReadsNoPowerFromThePages) {
  ScrapePool pool = Pool({0});
  pool.energy_source = api::EnergySource::kStatic;
  fetcher_.Set(Address(0), FakeFetcher::Page(VllmWithPower({.watts = 300}, "w-0")));
  loop_.SetPool(pool);
  ASSERT_TRUE(AwaitScrapes(1));
  EXPECT_EQ(Summary().ok, 1U);
  EXPECT_THAT(Exposition(), Not(HasSubstr("eoc_worker_watts{")));
}

// Workers 0 and 1 on one node whose pages carry no power series, and that node's dcgm-exporter.
class ExporterScrapeTest : public ScrapeLoopTest {
 protected:
  static constexpr const char* kExporter = "gpu/dcgm-exporter-a";
  static constexpr const char* kExporterAddress = "10.0.9.1:9400";

  ScrapePool ExporterPool() {
    ScrapePool pool = Pool({0, 1});
    pool.exporters = {{.pod = kExporter, .address = kExporterAddress}};
    pool.exporter_path = "/exporter-metrics";
    for (ScrapeTarget& t : pool.targets) {
      t.exporter = kExporter;
      t.profile = {.idle_watts = 100, .max_watts = 700, .max_tokens_per_second = 10000};
    }
    return pool;
  }
  // The exporter's page: worker i draws watts[i] and has used joules[i] (DCGM's mJ counter).
  static FetchResult ExporterPage(const std::vector<double>& watts,
                                  const std::vector<double>& joules) {
    std::vector<sim::ExporterPod> pods;
    pods.reserve(watts.size());
    for (std::size_t i = 0; i < watts.size(); ++i) {
      pods.push_back({.pod_namespace = "prod",
                      .pod_name = "w-" + std::to_string(i),
                      .watts = watts[i],
                      .joules_total = joules[i]});
    }
    return FakeFetcher::Page(sim::RenderExporterMetrics(sim::Exporter::kDcgm, "a", pods));
  }
  double Marginal(int i) const {
    for (const auto& observed : state_->Loads()) {
      if (observed.worker == Key(i)) return observed.load.marginal_joules_per_token;
    }
    return -1;
  }
  static std::string ExporterScrapes(const std::string& result) {
    return R"(eoc_exporter_scrapes_total{namespace="prod",pool="chat",result=")" + result + "\"}";
  }
  static std::string Watts(int pod, const std::string& value) {
    return R"(eoc_worker_watts{namespace="prod",pod="w-)" + std::to_string(pod) +
           R"(",pool="chat",source="DCGM"} )" + value + "\n";
  }
};

// One fetch of the exporter a round serves both workers on its node: each takes its own pod's
// watts from it, and the slope of those over its token rate becomes its marginal joules.
TEST_F(ExporterScrapeTest, ANodesExporterGivesEachWorkerOnItsNodeItsWattsAndMarginalJoules) {
  sim::PageFigures load[2];
  double joules[2] = {1000, 5000};
  fetcher_.Set(Address(0), FakeFetcher::Page(Vllm(load[0])));
  fetcher_.Set(Address(1), FakeFetcher::Page(Vllm(load[1])));
  fetcher_.Set(kExporterAddress, ExporterPage({150, 250}, {joules[0], joules[1]}));
  loop_.SetPool(ExporterPool());
  ASSERT_TRUE(AwaitScrapes(2));
  ASSERT_TRUE(
      testing::Eventually([&] { return fetcher_.Requests(kExporterAddress) == 1; }, seconds(10)));
  EXPECT_EQ(fetcher_.LastTo(kExporterAddress).path, "/exporter-metrics");
  EXPECT_EQ(fetcher_.LastTo(kExporterAddress).pod, kExporter);
  // Worker 0 at 1000..5000 tokens/s drawing 200 W + 0.05 J a token; worker 1 at 0.2 J a token.
  const int scrapes = static_cast<int>(signals::MarginalEnergy::kMinPoints) + 1;
  for (int i = 1; i <= scrapes; ++i) {
    const std::int64_t rate = 1000 + 500 * (i - 1);
    double watts[2] = {200 + 0.05 * static_cast<double>(rate),
                       200 + 0.2 * static_cast<double>(rate)};
    for (int w = 0; w < 2; ++w) {
      load[w].generation_tokens_total += rate * 5;
      joules[w] += watts[w] * 5;
      fetcher_.Set(Address(w), FakeFetcher::Page(Vllm(load[w])));
    }
    fetcher_.Set(kExporterAddress, ExporterPage({1, 1}, {joules[0], joules[1]}));
    ASSERT_TRUE(AdvanceTo(t0_ + seconds(5) * i));
    ASSERT_TRUE(AwaitScrapes(2 * (static_cast<std::uint64_t>(i) + 1)));
  }
  ASSERT_TRUE(testing::Eventually(
      [&] { return fetcher_.Requests(kExporterAddress) == scrapes + 1; }, seconds(10)));
  EXPECT_EQ(fetcher_.Requests(Address(0)), scrapes + 1);
  // The last answer may have come back after the workers' pages: one more round shows it.
  fetcher_.Set(kExporterAddress, ExporterPage({1, 1}, {joules[0], joules[1]}));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(5) * (scrapes + 1)));
  ASSERT_TRUE(AwaitScrapes(2 * (static_cast<std::uint64_t>(scrapes) + 2)));
  EXPECT_NEAR(Marginal(0), 0.05, 1e-6);
  EXPECT_NEAR(Marginal(1), 0.2, 1e-6);
  EXPECT_EQ(Summary().ok, 2U);
}

// The exporter's answer and the workers' pages pair by round, whichever comes back first; an
// exporter that fails leaves the watts unknown but the workers' metrics available.
TEST_F(ExporterScrapeTest, AnExporterLateOrFailingPairsByRoundAndLeavesTheWorkersAvailable) {
  fetcher_.Set(Address(0), FakeFetcher::Page(Vllm({.running = 1})));
  fetcher_.Set(Address(1), FakeFetcher::Page(Vllm({.running = 2})));
  fetcher_.Hold(kExporterAddress);
  loop_.SetPool(ExporterPool());
  ASSERT_TRUE(AwaitScrapes(2));
  EXPECT_THAT(Exposition(), Not(HasSubstr("eoc_worker_watts{")));
  // Back after the workers' pages: the next scrape shows the watts (the gauge, no rate yet).
  ASSERT_TRUE(testing::Eventually(
      [&] {
        return fetcher_.Release(kExporterAddress, ExporterPage({150, 250}, {1, 2})) == 1;
      },
      seconds(10)));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(5)));
  ASSERT_TRUE(AwaitScrapes(4));
  // Round 2's exporter answer is held: the workers showed round 1's watts, taken late.
  ASSERT_TRUE(testing::Eventually(
      [&] { return Exposition().find(Watts(0, "150")) != std::string::npos; }, seconds(10)));
  EXPECT_THAT(Exposition(), HasSubstr(Watts(1, "250")));
  ASSERT_EQ(fetcher_.Release(kExporterAddress, FakeFetcher::Error(FetchErrorKind::kConnectRefused)),
            1);
  fetcher_.Set(kExporterAddress, FakeFetcher::Error(FetchErrorKind::kConnectRefused));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(10)));
  ASSERT_TRUE(AwaitScrapes(6));
  ASSERT_TRUE(testing::Eventually(
      [&] { return Exposition().find("eoc_worker_watts{") == std::string::npos; }, seconds(10)));
  EXPECT_EQ(Summary().ok, 2U);
  // Each exporter answer counted once, by result: round 1's page, rounds 2 and 3 refused.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        return Exposition().find(ExporterScrapes("connect-refused") + " 2") != std::string::npos;
      },
      seconds(10)));
  EXPECT_THAT(Exposition(), HasSubstr(ExporterScrapes("ok") + " 1"));
}

// A worker whose own page carries its power series reads it there, not from the exporter.
TEST_F(ExporterScrapeTest, AWorkersOwnPowerSeriesComeFirst) {
  fetcher_.Set(Address(0), FakeFetcher::Page(VllmWithPower({.watts = 320}, "w-0")));
  fetcher_.Set(Address(1), FakeFetcher::Page(Vllm({})));
  fetcher_.Set(kExporterAddress, ExporterPage({150, 250}, {1, 2}));
  loop_.SetPool(ExporterPool());
  ASSERT_TRUE(AwaitScrapes(2));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(5)));
  ASSERT_TRUE(AwaitScrapes(4));
  EXPECT_THAT(Exposition(), HasSubstr(Watts(0, "320")));
  EXPECT_THAT(Exposition(), HasSubstr(Watts(1, "250")));
}

// spec.energy.source Static: no exporter is fetched.
TEST_F(ExporterScrapeTest, StaticEnergyFetchesNoExporter) {
  ScrapePool pool = ExporterPool();
  pool.energy_source = api::EnergySource::kStatic;
  fetcher_.Set(Address(0), FakeFetcher::Page(Vllm({})));
  fetcher_.Set(Address(1), FakeFetcher::Page(Vllm({})));
  fetcher_.Set(kExporterAddress, ExporterPage({150, 250}, {1, 2}));
  loop_.SetPool(pool);
  ASSERT_TRUE(AwaitScrapes(2));
  EXPECT_EQ(fetcher_.Requests(kExporterAddress), 0);
}

TEST_F(ScrapeLoopTest, AWorkerOrPoolThatLeavesTakesItsStateAndSeries) {
  fetcher_.Set(Address(0), FakeFetcher::Page(Vllm({.running = 1})));
  fetcher_.Set(Address(1), FakeFetcher::Page(Vllm({.running = 2})));
  fetcher_.Hold(Address(2));
  loop_.SetPool(Pool({0, 1, 2}));
  ASSERT_TRUE(AwaitScrapes(2));
  EXPECT_THAT(Exposition(), HasSubstr(Series("eoc_worker_running_requests", 1) + " 2"));
  loop_.SetPool(Pool({0}));
  ASSERT_TRUE(testing::Eventually([&] { return Summary().total == 1; }, seconds(10)));
  EXPECT_THAT(Exposition(), Not(HasSubstr(Series("eoc_worker_running_requests", 1))));
  EXPECT_THAT(Exposition(), HasSubstr(Series("eoc_worker_running_requests", 0) + " 1"));
  // The answer of a worker that left is dropped.
  EXPECT_EQ(fetcher_.Release(Address(2), FakeFetcher::Page(Vllm({.running = 9}))), 1);
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(5)));
  ASSERT_TRUE(AwaitScrapes(3));
  EXPECT_EQ(Summary().scrapes, 3U);
  EXPECT_THAT(Exposition(), Not(HasSubstr(Series("eoc_worker_running_requests", 2))));
  EXPECT_EQ(fetcher_.Requests(Address(1)), 1);
  // The pool goes: its summary, workers and every series of it.
  loop_.RemovePool(kPool);
  ASSERT_TRUE(testing::Eventually([&] { return !loop_.Summary(kPool).has_value(); }, seconds(10)));
  EXPECT_THAT(Exposition(), Not(HasSubstr(R"(pool="chat")")));
}

TEST_F(ScrapeLoopTest, AChangedIntervalTakesEffectFromTheLastRound) {
  fetcher_.Set(Address(0), FakeFetcher::Page(Vllm({})));
  loop_.SetPool(Pool({0}, seconds(10)));
  ASSERT_TRUE(AwaitScrapes(1));
  ASSERT_TRUE(
      testing::Eventually([&] { return clock_.NextDeadline() == t0_ + seconds(10); }, seconds(10)));
  clock_.Advance(seconds(1));
  loop_.SetPool(Pool({0}, seconds(2)));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(2)));
  ASSERT_TRUE(AwaitScrapes(2));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(4)));
  ASSERT_TRUE(AwaitScrapes(3));
  // Longer again: the next round is 30 s after the last one, at 4 s.
  loop_.SetPool(Pool({0}, seconds(30)));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(34)));
  ASSERT_TRUE(AwaitScrapes(4));
  EXPECT_EQ(Summary().rounds, 4U);
}

TEST_F(ScrapeLoopTest, ThePicksMadeWhileAScrapeIsInFlightStillCount) {
  fetcher_.Hold(Address(0));
  loop_.SetPool(Pool({0}));
  ASSERT_TRUE(testing::Eventually([&] { return fetcher_.Requests(Address(0)) == 1; }, seconds(10)));
  // Two picks while the fetch is out: the page, rendered before they arrived, shows 1 running.
  ASSERT_TRUE(state_->TryPick({}, 1, clock_.Now()).picked());
  ASSERT_TRUE(state_->TryPick({}, 2, clock_.Now()).picked());
  EXPECT_EQ(fetcher_.Release(Address(0), FakeFetcher::Page(Vllm({.running = 1}))), 1);
  ASSERT_TRUE(AwaitScrapes(1));
  EXPECT_DOUBLE_EQ(*state_->Busyness(Key(0)), 0.03);
  // The next scrape's page shows them: no double count.
  fetcher_.Set(Address(0), FakeFetcher::Page(Vllm({.running = 3})));
  ASSERT_TRUE(AdvanceTo(t0_ + seconds(5)));
  ASSERT_TRUE(AwaitScrapes(2));
  EXPECT_DOUBLE_EQ(*state_->Busyness(Key(0)), 0.03);
}

TEST_F(ScrapeLoopTest, TheAccessModeChoosesTheFetcher) {
  proxy_.Set(Address(0), FakeFetcher::Page(Vllm({})));
  ScrapePool pool = Pool({0});
  pool.access = api::MetricsAccess::kApiServerProxy;
  pool.path = "/stats";
  loop_.SetPool(pool);
  ASSERT_TRUE(AwaitScrapes(1));
  EXPECT_EQ(proxy_.Requests(Address(0)), 1);
  EXPECT_EQ(proxy_.Last().pod, Pod(0));
  EXPECT_EQ(proxy_.Last().path, "/stats");
  EXPECT_EQ(fetcher_.Requests(Address(0)), 0);
}

TEST_F(ScrapeLoopTest, StopEndsAWaitAndLateAnswersAreDropped) {
  fetcher_.Hold(Address(0));
  loop_.SetPool(Pool({0}));
  ASSERT_TRUE(testing::Eventually([&] { return fetcher_.Requests(Address(0)) == 1; }, seconds(10)));
  ASSERT_TRUE(testing::Eventually([&] { return clock_.Sleepers() == 1; }, seconds(10)));
  loop_.Stop();  // returns without the clock moving
  EXPECT_EQ(clock_.Sleepers(), 0U);
  EXPECT_EQ(fetcher_.Release(Address(0), FakeFetcher::Page(Vllm({.running = 4}))), 1);
  EXPECT_EQ(Summary().scrapes, 0U);
}

}  // namespace
}  // namespace eoc::controller
