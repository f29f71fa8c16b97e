// The scrape loop through the API server: a pool with `metrics.access: APIServerProxy`, the
// eoc-controller binary on the shared control plane scraping the node agent's fake vLLM workers
// through `GET /api/v1/namespaces/{ns}/pods/{name}:{port}/proxy/metrics`.
//
// The API server refuses to proxy to loopback (and link-local) pod IPs, so the workers here get
// private addresses of the test's own making (ProxyableAddresses). Root (CI's user) is needed;
// without the permission the test is skipped.
// Assertions are on what was scraped and counted, never on how fast.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "eventually.h"
#include "fleet_test.h"
#include "manifests.h"
#include "proxyable_addresses.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::kPatience;
using testing::ProxyableAddresses;
using testing::Sample;
namespace resources = kube::resources;

json ProxyPool(const std::string& app) {
  return testing::PoolOf(
      app, {{"intervalSeconds", 1}, {"timeoutSeconds", 1}, {"access", "APIServerProxy"}});
}

class ScrapeThroughApiServerProxyTest : public testing::FleetTest {
 protected:
  void MakeAddresses() override {
    addresses_ = std::make_unique<ProxyableAddresses>();
    if (const std::string why = addresses_->Create(); !why.empty()) {
      GTEST_SKIP() << "cannot make non-loopback pod addresses for the API server to proxy to: "
                   << why;
    }
  }
  std::string AddressBase() const override { return addresses_->base(); }

  void TearDown() override {
    FleetTest::TearDown();
    addresses_.reset();  // after the workers stopped
  }

  std::string Running(const std::string& pool, const std::string& pod) const {
    return Series("eoc_worker_running_requests", pool, pod);
  }

  std::unique_ptr<ProxyableAddresses> addresses_;
};

TEST_F(ScrapeThroughApiServerProxyTest, GaugesFollowTheLoadScrapedThroughPodsProxy) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("px", 2)));
  ASSERT_TRUE(client_->Create(testing::kPools, ns_, ProxyPool("px")));
  const std::vector<std::string> pods = AwaitRunningPods("px", 2);
  ASSERT_EQ(pods.size(), 2U);
  std::vector<std::shared_ptr<testing::FakeWorker>> workers;
  for (int i = 0; i < 2; ++i) {
    // The workers are on the test's private addresses, not loopback ones.
    EXPECT_EQ(agent_->PodIP(ns_, pods[i]).rfind(addresses_->subnet(), 0), 0U)
        << agent_->PodIP(ns_, pods[i]);
    workers.push_back(agent_->Worker(ns_, pods[i]));
    ASSERT_NE(workers.back(), nullptr) << pods[i];
    workers.back()->SetLoad({.running = 5 + i, .waiting = 1});
  }
  const auto shows = [&](double running0, double running1) {
    const std::string text = Metrics();
    return Sample(text, Running("px", pods[0])) == running0 &&
           Sample(text, Running("px", pods[1])) == running1;
  };
  ASSERT_TRUE(Eventually([&] { return shows(5, 6); }, kPatience))
      << Metrics() << controller_->Output();
  const double ok_before = Sample(Metrics(), Scrapes("px", "ok"));
  EXPECT_GT(ok_before, 0);

  // The load moves; the gauges follow, and ok scrapes keep coming.
  workers[0]->SetLoad({.running = 12});
  workers[1]->SetLoad({.running = 0});
  EXPECT_TRUE(Eventually([&] { return shows(12, 0); }, kPatience)) << Metrics();
  EXPECT_TRUE(
      Eventually([&] { return Sample(Metrics(), Scrapes("px", "ok")) > ok_before; }, kPatience))
      << Metrics();

  // What reached the workers came through the API server's proxy: it tells the worker, in
  // X-Forwarded-Uri, the path it was asked for, which a direct scrape does not send.
  for (int i = 0; i < 2; ++i) {
    EXPECT_GT(workers[i]->metrics_requests(), 0U) << pods[i];
    EXPECT_EQ(workers[i]->last_metrics_forwarded_uri(),
              "/api/v1/namespaces/" + ns_ + "/pods/" + pods[i] + ":8000/proxy/metrics")
        << pods[i];
  }
}

}  // namespace
}  // namespace eoc::controller
