// The dashboard and alerts against a real Prometheus (Debian's, on loopback): it scrapes the
// eoc-controller binary and its fake vLLM workers every second and evaluates the chart's alert
// rules (scripts/alert-rules, with `for` shortened to seconds). With picks flowing to a healthy
// autoscaled pool, every query of every dashboard panel returns series and no alert fires; a pool
// whose Deployment has no pods fires EocPoolNoReadyWorkers and, once picks for it fail,
// EocPickErrors, for that pool only; the controller stopped fires EocNoLeader. Assertions are on
// what Prometheus answers, never on how fast.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/files.h"
#include "eventually.h"
#include "fake_worker.h"
#include "files.h"
#include "fleet_test.h"
#include "http_get.h"
#include "kube/types.h"
#include "manifests.h"
#include "raw_client.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::kPatience;
namespace resources = kube::resources;

constexpr const char* kRegion = "zone-obs";

class ObservabilityTest : public testing::FleetTest {
 protected:
  std::vector<testing::NodeSpec> Nodes() const override {
    return {{.name = testing::UniqueName("node"),
             .labels = {{"nvidia.com/gpu.product", "NVIDIA-A100"},
                        {"topology.kubernetes.io/region", kRegion}},
             .gpus = 8}};
  }
  std::vector<std::string> ControllerFlags() const override {
    return {"--leader-elect", "--leader-election-namespace", ns_, "--leader-election-id",
            "eoc-" + ns_};
  }

  void TearDown() override {
    if (prometheus_) {
      prometheus_->Signal(SIGTERM);
      (void)prometheus_->WaitFor(std::chrono::seconds(30));
    }
    FleetTest::TearDown();
  }

  // Prometheus on a free loopback port, scraping the controller and `workers` (host:port) every
  // second and evaluating the chart's alert rules, each condition held for 2 s.
  void StartPrometheus(const std::vector<std::string>& workers) {
    const std::string rules = dir_.Path("rules.yaml");
    const testing::RunResult rendered =
        testing::RunToExit({"/bin/sh", "-c",
                            EOC_SOURCE_DIR "/scripts/alert-rules --set prometheusRule.for=2s"
                                           " --set prometheusRule.scalingStuckFor=2s > " +
                                rules});
    ASSERT_TRUE(rendered.ok) << rendered.output;
    std::string targets;
    for (const std::string& w : workers) targets += (targets.empty() ? "'" : ", '") + w + "'";
    const std::string config =
        dir_.Write("prometheus.yml",
                   "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                   "rule_files: ['" +
                       rules +
                       "']\nscrape_configs:\n"
                       "  - job_name: eoc-operator\n    static_configs:\n"
                       "      - targets: ['127.0.0.1:" +
                       std::to_string(metrics_port_) +
                       "']\n"
                       "  - job_name: workers\n    static_configs:\n      - targets: [" +
                       targets + "]\n");
    prometheus_port_ = testing::FreePort();
    prometheus_ = std::make_unique<testing::ChildProcess>(
        std::vector<std::string>{
            "/usr/bin/prometheus", "--config.file=" + config,
            "--storage.tsdb.path=" + dir_.Path("tsdb"),
            "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_)},
        /*merge_stderr=*/true);
    ASSERT_TRUE(Eventually(
        [&] { return testing::HttpGet(prometheus_port_, "/-/ready").status == 200; }, kPatience))
        << prometheus_->Output();
  }

  // Prometheus's answer to an instant query: its result vector (empty when it failed).
  json Query(const std::string& expr) const {
    const auto answer =
        testing::HttpGet(prometheus_port_, "/api/v1/query?query=" + kube::PercentEncode(expr));
    const json body = json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object() || body.value("status", "") != "success") return json::array();
    return body["data"].value("result", json::array());
  }

  // The alerts firing now, as "name pool-or-lease".
  std::set<std::string> Firing() const {
    std::set<std::string> out;
    const auto answer = testing::HttpGet(prometheus_port_, "/api/v1/alerts");
    const json body = json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) return out;
    for (const json& a : body["data"].value("alerts", json::array())) {
      if (a.value("state", "") != "firing") continue;
      const json& l = a["labels"];
      out.insert(l.value("alertname", "") + " " + l.value("pool", l.value("lease", "")));
    }
    return out;
  }

  // One pick for pool `pool` of the test's namespace in session `session` ("": none), on a
  // connection of its own (a kept one would idle out while the test waits on Prometheus); its
  // HTTP status, 0 when none came.
  int Pick(const std::string& pool, const std::string& session) const {
    testing::RawClient client(static_cast<std::uint16_t>(pick_port_));
    json request = {{"pool", ns_ + "/" + pool}, {"prompt_tokens", 8}};
    if (!session.empty()) request["session_id"] = session;
    const std::string body = request.dump();
    if (!client.Send("POST /v1/pick HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body)) {
      return 0;
    }
    const auto answer = client.ReadResponse();
    return answer ? answer->status : 0;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::ChildProcess> prometheus_;
  int prometheus_port_ = 0;
};

TEST_F(ObservabilityTest, EveryPanelShowsSeriesAndEachAlertFiresOnlyForItsFault) {
  // A healthy pool: two workers with DCGM watts on their pages, weighed by joules, autoscaled.
  ASSERT_TRUE(client_->Create(
      resources::kDeployments, ns_,
      testing::WorkerDeployment("w", 2,
                                {.pod_annotations = {{testing::kDcgmAnnotation, "true"},
                                                     {testing::kWattsAnnotation, "300"}}})));
  json pool = testing::PoolOf("w", {{"intervalSeconds", 1}, {"timeoutSeconds", 1}});
  pool["spec"]["routing"] = {{"strategy", "JouleWeighted"}, {"publishIntervalSeconds", 1}};
  pool["spec"]["energy"] = {{"profiles",
                             {{{"accelerator", "NVIDIA-A100"},
                               {"idleWatts", 100},
                               {"maxWatts", 400},
                               {"maxTokensPerSecond", 2400}}}}};
  pool["spec"]["carbon"] = {{"static", {{kRegion, 300}}}};
  pool["spec"]["scaleTargetRef"] = {
      {"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "w"}};
  pool["spec"]["autoscaling"] = {
      {"minReplicas", 2}, {"maxReplicas", 3}, {"targetOngoingRequests", 100}};
  ASSERT_TRUE(client_->Create(testing::kPools, ns_, pool));
  const std::vector<std::string> pods = AwaitRunningPods("w", 2);
  ASSERT_EQ(pods.size(), 2U);
  std::vector<std::string> workers;
  for (const std::string& pod : pods) {
    auto object = client_->Get(resources::kPods, ns_, pod);
    ASSERT_TRUE(object);
    workers.push_back((*object)["status"].value("podIP", "") + ":8000");
    agent_->Worker(ns_, pod)->SetLoad({.running = 2, .waiting = 1, .watts = 300});
  }
  ASSERT_TRUE(Eventually([&] { return PublishedWeights("w").has_value(); }, kPatience))
      << controller_->Output();
  ASSERT_NO_FATAL_FAILURE(StartPrometheus(workers));

  // Picks in a few sessions, for the pick, session and queue panels.
  for (int i = 0; i < 40; ++i) EXPECT_EQ(Pick("w", "user-" + std::to_string(i % 5)), 200);

  // Every panel's every query has series, for this namespace and pool.
  std::string error;
  const auto text = ReadFileLimited(
      std::string(EOC_SOURCE_DIR) + "/charts/eoc-operator/dashboards/eoc-operator.json", 1 << 20,
      &error);
  ASSERT_TRUE(text) << error;
  const json dashboard = json::parse(*text);
  std::vector<std::string> empty;
  for (const json& panel : dashboard["panels"]) {
    for (const json& target : panel["targets"]) {
      std::string expr = target.value("expr", "");
      for (const auto& [var, value] : std::vector<std::pair<std::string, std::string>>{
               {"$__rate_interval", "15s"}, {"$namespace", ns_}, {"$pool", "w"}}) {
        for (auto at = expr.find(var); at != std::string::npos; at = expr.find(var)) {
          expr.replace(at, var.size(), value);
        }
      }
      const bool shows = Eventually([&] { return !Query(expr).empty(); }, kPatience);
      if (!shows) empty.push_back(panel.value("title", "") + ": " + expr);
      // Picks keep coming while the rates fill.
      for (int i = 0; i < 5; ++i) (void)Pick("w", "user-" + std::to_string(i));
    }
  }
  EXPECT_THAT(empty, ::testing::IsEmpty()) << "panels without series";

  // Healthy: no alert fires (over several evaluations, past every rule's 2 s).
  for (int i = 0; i < 6; ++i) {
    EXPECT_THAT(Firing(), ::testing::IsEmpty());
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }

  // A pool whose Deployment has no pods: no ready workers, and its picks fail (503).
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("e", 0)));
  json broken = testing::PoolOf("e", {{"intervalSeconds", 1}, {"timeoutSeconds", 1}});
  broken["spec"]["routing"] = {{"admission", {{"queueTimeoutSeconds", 0.1}}}};
  ASSERT_TRUE(client_->Create(testing::kPools, ns_, broken));
  const std::string no_workers = "EocPoolNoReadyWorkers e";
  const std::string errors = "EocPickErrors " + ns_ + "/e";
  ASSERT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < 5; ++i) (void)Pick("e", "");
        const auto firing = Firing();
        return firing.contains(no_workers) && firing.contains(errors);
      },
      kPatience))
      << ::testing::PrintToString(Firing())
      << "\npicks: " << Query(R"(eoc_picks_total{pool=")" + ns_ + R"(/e"})").dump();
  EXPECT_EQ(Firing(), (std::set<std::string>{no_workers, errors}));  // nothing for w

  // The controller stopped: no replica leads.
  controller_->Signal(SIGTERM);
  ASSERT_TRUE(controller_->WaitFor(std::chrono::seconds(30)));
  controller_.reset();
  EXPECT_TRUE(Eventually(
      [&] {
        return std::ranges::any_of(
            Firing(), [](const std::string& a) { return a.starts_with("EocNoLeader"); });
      },
      kPatience))
      << ::testing::PrintToString(Firing());
}

}  // namespace
}  // namespace eoc::controller
