// The scrape loop through the API server: a pool with `metrics.access: APIServerProxy`, the
// eoc-controller binary on the shared control plane scraping the node agent's fake vLLM workers
// through `GET /api/v1/namespaces/{ns}/pods/{name}:{port}/proxy/metrics`.
//
// The API server refuses to proxy to loopback (and link-local) pod IPs, so the workers here get
// private addresses instead: the test adds a veth pair of its own in the host's network namespace
// (a `dummy` link would do, but the dummy module is not always there), gives one end 10.231.X.1/24
// and a `local` route over that /24, so every 10.231.X.Y binds on this host, and hands the node
// agent 10.231.X.1 as its address base. Deleting the device at the end removes its addresses and
// routes. Root (CI's user) is needed; without the permission the test is skipped.
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

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::kPatience;
using testing::Sample;
namespace resources = kube::resources;

// Runs a shell command, its output kept out of the log; true when it exits 0 within 30 s.
bool Run(const std::string& command) {
  testing::ChildProcess shell({"/bin/sh", "-c", command + " >/dev/null 2>&1"});
  const auto status = shell.WaitFor(std::chrono::seconds(30));
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

// A veth pair of this process's own (eoc-px<pid>, eoc-px<pid>p), one end holding 10.231.X.1/24
// and a local route over 10.231.X.0/24. A device left by a killed run of the same pid is deleted
// first; the destructor deletes it (its addresses and routes go with it).
class ProxyableAddresses {
 public:
  ProxyableAddresses()
      : device_("eoc-px" + std::to_string(getpid())),
        subnet_("10.231." + std::to_string(getpid() % 250) + ".") {}
  ~ProxyableAddresses() {
    if (created_) (void)Run("ip link del " + device_);
  }
  ProxyableAddresses(const ProxyableAddresses&) = delete;
  ProxyableAddresses& operator=(const ProxyableAddresses&) = delete;
  ProxyableAddresses(ProxyableAddresses&&) = delete;
  ProxyableAddresses& operator=(ProxyableAddresses&&) = delete;

  // "" on success, else why the device could not be made.
  std::string Create() {
    if (geteuid() != 0) return "not root: cannot add a network device";
    if (!Run("command -v ip")) return "the ip command (iproute2) is not on PATH";
    (void)Run("ip link del " + device_);  // left over from a killed run
    if (!Run("ip link add " + device_ + " type veth peer name " + device_ + "p")) {
      return "`ip link add " + device_ + " type veth` failed (no permission to add devices?)";
    }
    created_ = true;
    const std::vector<std::string> steps = {
        "ip addr add " + subnet_ + "1/24 dev " + device_,
        "ip link set " + device_ + " up",
        "ip link set " + device_ + "p up",
        "ip route add local " + subnet_ + "0/24 dev " + device_ + " table local",
    };
    for (const auto& step : steps) {
      if (!Run(step)) return "`" + step + "` failed";
    }
    return "";
  }

  std::string base() const { return subnet_ + "1"; }
  const std::string& subnet() const { return subnet_; }

 private:
  std::string device_;
  std::string subnet_;  // "10.231.X."
  bool created_ = false;
};

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
