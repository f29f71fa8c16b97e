// The scrape loop end to end: the eoc-controller binary on the shared control plane, the node
// agent playing the kubelet with fake vLLM workers. The load a test sets on a worker shows in the
// controller's per-worker gauges; workers whose endpoint hangs, trickles, is huge or answers
// garbage are counted as failures of their kinds while the healthy one is scraped every round.
// Assertions are on what was scraped and counted, never on how fast.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "eventually.h"
#include "fleet_test.h"
#include "manifests.h"
#include "promtool.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
using ::testing::HasSubstr;
using testing::kPatience;
using ::testing::Not;
using testing::Sample;
namespace resources = kube::resources;

json Pool(const std::string& app, int interval_seconds, int timeout_seconds) {
  return testing::PoolOf(
      app, {{"intervalSeconds", interval_seconds}, {"timeoutSeconds", timeout_seconds}});
}

// A bare worker pod of `app`, its fake worker configured by `annotations`.
json WorkerPod(const std::string& name, const std::string& app,
               const std::map<std::string, std::string>& annotations) {
  json pod = testing::WorkerDeployment(app, 1)["spec"]["template"];
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  pod["metadata"]["name"] = name;
  pod["metadata"]["annotations"] = annotations;
  return pod;
}

class ScrapeLoopIntegrationTest : public testing::FleetTest {};

TEST_F(ScrapeLoopIntegrationTest, EachWorkersGaugesFollowTheLoadItReports) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 2)));
  ASSERT_TRUE(client_->Create(testing::kPools, ns_, Pool("w", 1, 1)));
  const std::vector<std::string> pods = AwaitRunningPods("w", 2);
  ASSERT_EQ(pods.size(), 2U);
  for (int i = 0; i < 2; ++i) {
    auto worker = agent_->Worker(ns_, pods[i]);
    ASSERT_NE(worker, nullptr) << pods[i];
    worker->SetLoad({.running = 3 + i, .waiting = 1 + i, .kv_cache_usage = 0.5});
  }
  const auto shows = [&](int i, double running, double waiting) {
    const std::string text = Metrics();
    return Sample(text, Series("eoc_worker_running_requests", "w", pods[i])) == running &&
           Sample(text, Series("eoc_worker_waiting_requests", "w", pods[i])) == waiting;
  };
  ASSERT_TRUE(Eventually([&] { return shows(0, 3, 1) && shows(1, 4, 2); }, kPatience))
      << Metrics() << controller_->Output();
  EXPECT_EQ(Sample(Metrics(), Series("eoc_worker_kv_cache_usage_ratio", "w", pods[0])), 0.5);
  // The load moves; the gauges follow.
  agent_->Worker(ns_, pods[0])->SetLoad({.running = 11, .waiting = 0});
  EXPECT_TRUE(Eventually([&] { return shows(0, 11, 0) && shows(1, 4, 2); }, kPatience))
      << Metrics();

  const std::string text = Metrics();
  EXPECT_GT(Sample(text, Scrapes("w", "ok")), 0) << text;
  const std::string promtool = testing::FindPromtool();
  ASSERT_FALSE(promtool.empty()) << "promtool is not on PATH (scripts/bootstrap installs it)";
  const auto [lint_status, lint_output] = testing::PromtoolCheckMetrics(promtool, text);
  EXPECT_EQ(lint_status, 0) << lint_output << "\non:\n" << text;

  // A worker that leaves takes its series with it.
  ASSERT_TRUE(client_->SetReplicas(resources::kDeployments, ns_, "w", 1));
  EXPECT_TRUE(Eventually(
      [&] {
        const std::string now = Metrics();
        int listed = 0;
        for (const auto& pod : pods) {
          listed += now.find(Series("eoc_worker_running_requests", "w", pod)) != std::string::npos
                        ? 1
                        : 0;
        }
        return listed == 1;
      },
      kPatience))
      << Metrics();
}

TEST_F(ScrapeLoopIntegrationTest, FaultyEndpointsFailByKindAndTheHealthyOneIsScrapedEachRound) {
  const std::vector<std::string> faults = {"hang", "trickle", "huge", "garbage"};
  for (const std::string& fault : faults) {
    ASSERT_TRUE(Eventually(
        [&] {
          return static_cast<bool>(
              client_->Create(resources::kPods, ns_,
                              WorkerPod(fault, "f", {{"fake.eoc.dev/metrics-fault", fault}})));
        },
        kPatience));
  }
  ASSERT_TRUE(client_->Create(resources::kPods, ns_, WorkerPod("healthy", "f", {})));
  ASSERT_TRUE(client_->Create(testing::kPools, ns_, Pool("f", 2, 1)));
  ASSERT_TRUE(Eventually([&] { return RunningPods("f").size() == 5; }, kPatience));
  agent_->Worker(ns_, "healthy")->SetLoad({.running = 2});

  // A few rounds in: every kind counted, once a round each (the trickle and the hang are both
  // deadlines), the healthy worker ok each round.
  const auto counts = [&](const std::string& text) {
    return std::vector<double>{
        Sample(text, Scrapes("f", "ok")), Sample(text, Scrapes("f", "deadline")),
        Sample(text, Scrapes("f", "too-large")), Sample(text, Scrapes("f", "parse-error"))};
  };
  std::string text;
  ASSERT_TRUE(Eventually(
      [&] {
        text = Metrics();
        return Sample(text, Scrapes("f", "ok")) >= 5;
      },
      kPatience))
      << Metrics() << controller_->Output();
  const std::vector<double> first = counts(text);
  // Each fetch ends within its 1 s timeout, before the next round 2 s later; a round apart at
  // most for a page read between the callbacks of one round.
  EXPECT_NEAR(first[1], 2 * first[0], 2) << text;
  EXPECT_NEAR(first[2], first[0], 1) << text;
  EXPECT_NEAR(first[3], first[0], 1) << text;
  EXPECT_EQ(Sample(text, Scrapes("f", "missing-series")), -1) << text;
  // And it goes on: three more rounds of each.
  ASSERT_TRUE(Eventually(
      [&] {
        text = Metrics();
        const auto now = counts(text);
        return now[0] >= first[0] + 3 && now[1] >= first[1] + 6 && now[2] >= first[2] + 3 &&
               now[3] >= first[3] + 3;
      },
      kPatience))
      << text;
  EXPECT_EQ(Sample(text, Series("eoc_worker_running_requests", "f", "healthy")), 2) << text;
  for (const std::string& fault : faults) {
    EXPECT_THAT(text, Not(HasSubstr(Series("eoc_worker_running_requests", "f", fault))));
  }
  EXPECT_THAT(text,
              HasSubstr("eoc_scrape_duration_seconds_count{namespace=\"" + ns_ + "\",pool=\"f\"}"));
}

// A worker whose own page carries DCGM's power series for its pod (fake.eoc.dev/dcgm, the watts
// its annotation sets): the controller reads them into its watts gauge and follows a change of the
// annotation; a worker without the series has no watts gauge. The fake's own page keeps its
// energy counter where the load set it (it stands still), so this is also the stuck counter that
// must not hide the draw the gauge shows.
TEST_F(ScrapeLoopIntegrationTest, AWorkersPowerSeriesOnItsOwnPageShowInItsWattsGauge) {
  ASSERT_TRUE(client_->Create(
      resources::kPods, ns_,
      WorkerPod("gpu", "e",
                {{testing::kDcgmAnnotation, "true"}, {testing::kWattsAnnotation, "320"}})));
  ASSERT_TRUE(client_->Create(resources::kPods, ns_, WorkerPod("plain", "e", {})));
  ASSERT_TRUE(client_->Create(testing::kPools, ns_, Pool("e", 1, 1)));
  ASSERT_TRUE(Eventually([&] { return RunningPods("e").size() == 2; }, kPatience));
  const std::string watts =
      "eoc_worker_watts{namespace=\"" + ns_ + R"(",pod="gpu",pool="e",source="DCGM"})";
  const auto shows = [&](double want) { return Sample(Metrics(), watts) == want; };
  // Two scrapes at least: the first has no counter rate, the gauge is read either way.
  ASSERT_TRUE(Eventually([&] { return Sample(Metrics(), Scrapes("e", "ok")) >= 4 && shows(320); },
                         kPatience))
      << Metrics() << controller_->Output();
  std::string text = Metrics();
  EXPECT_THAT(text, Not(HasSubstr("eoc_worker_watts{namespace=\"" + ns_ + "\",pod=\"plain\"")));
  EXPECT_EQ(Sample(text, Series("eoc_worker_running_requests", "e", "plain")), 0) << text;

  ASSERT_TRUE(
      client_->Patch(resources::kPods, ns_, "gpu", kube::PatchType::kMerge,
                     {{"metadata", {{"annotations", {{testing::kWattsAnnotation, "610"}}}}}}));
  EXPECT_TRUE(Eventually([&] { return shows(610); }, kPatience)) << Metrics();
  text = Metrics();
  const auto [lint_status, lint_output] =
      testing::PromtoolCheckMetrics(testing::FindPromtool(), text);
  EXPECT_EQ(lint_status, 0) << lint_output << "\non:\n" << text;
}

}  // namespace
}  // namespace eoc::controller
