// The eoc-controller binary against the real API server: readiness, metrics that promtool
// accepts, the Lease, its Event, a clean stop that hands the Lease back, and its open-files limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "child_process.h"
#include "control_plane.h"
#include "crds.h"
#include "eventually.h"
#include "files.h"
#include "http_get.h"
#include "kube/client.h"
#include "manifests.h"
#include "node_agent.h"
#include "promtool.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::ChildProcess;
using testing::ControlPlane;
using ::testing::HasSubstr;

using testing::FreePort;
using testing::HttpAnswer;

HttpAnswer Get(int port, const std::string& path) { return testing::HttpGet(port, path); }

using testing::Eventually;

class ControllerBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plane_ = ControlPlane::Find();
    if (plane_ == nullptr) GTEST_SKIP() << "EOC_KUBE_ENV is not set: no control plane";
    client_ = kube::Client::Create(plane_->AdminConfig(), {});
    // Without its CRD the controller never becomes ready: /readyz names inferencepools-synced.
    ASSERT_EQ(testing::InstallCrds(*plane_), "");
  }

  std::vector<std::string> Args(const std::string& lease, int metrics_port, int health_port,
                                const std::string& kubeconfig = "") const {
    return {EOC_CONTROLLER,
            "--kubeconfig",
            kubeconfig.empty() ? plane_->Var("EOC_KUBECONFIG") : kubeconfig,
            "--leader-elect",
            "--leader-election-id",
            lease,
            "--metrics-bind-address",
            "127.0.0.1:" + std::to_string(metrics_port),
            "--health-probe-bind-address",
            "127.0.0.1:" + std::to_string(health_port),
            "--pick-bind-address",
            "127.0.0.1:" + std::to_string(FreePort())};
  }

  std::string Holder(const std::string& lease) {
    auto l = client_->Get(kube::resources::kLeases, "default", lease);
    if (!l) return "<" + l.error().ToString() + ">";
    return (*l)["spec"].value("holderIdentity", "");
  }

  const ControlPlane* plane_ = nullptr;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(ControllerBinaryTest, ReadyOnceSyncedServesValidMetricsLeadsAndHandsTheLeaseBack) {
  const std::string lease = testing::UniqueName("eoc-it");
  const int metrics_port = FreePort();
  const int health_port = FreePort();
  ChildProcess controller(Args(lease, metrics_port, health_port), /*merge_stderr=*/true);

  ASSERT_TRUE(Eventually([&] { return Get(health_port, "/readyz").status == 200; },
                         std::chrono::seconds(60)))
      << controller.Output();
  EXPECT_EQ(Get(health_port, "/healthz").status, 200);

  // It leads: the Lease names it, the gauge says so, and an Event on the Lease records it.
  ASSERT_TRUE(Eventually([&] { return !Holder(lease).empty(); }, std::chrono::seconds(30)));
  const std::string leading = "eoc_leader_election_leading{lease=\"" + lease + "\"} 1";
  ASSERT_TRUE(Eventually(
      [&] { return Get(metrics_port, "/metrics").body.find(leading) != std::string::npos; },
      std::chrono::seconds(30)));
  ASSERT_TRUE(Eventually(
      [&] {
        auto events = client_->List(kube::resources::kEvents, "default",
                                    {.field_selector = "involvedObject.name=" + lease});
        return events && !events->items.empty() &&
               events->items[0].value("reason", "") == "LeaderElection";
      },
      std::chrono::seconds(30)));

  const HttpAnswer metrics = Get(metrics_port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, HasSubstr("eoc_reflector_lists_total{resource=\"pods\"} 1"));
  EXPECT_THAT(metrics.body, HasSubstr("eoc_reflector_watches_total{resource=\"pods\"}"));
  const std::string promtool = testing::FindPromtool();
  ASSERT_FALSE(promtool.empty()) << "promtool is not on PATH (scripts/bootstrap installs it)";
  const auto [lint_status, lint_output] = testing::PromtoolCheckMetrics(promtool, metrics.body);
  EXPECT_EQ(lint_status, 0) << lint_output << "\non:\n" << metrics.body;

  // SIGTERM: a clean stop releases the Lease at once.
  controller.Signal(SIGTERM);
  const auto status = controller.WaitFor(std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value()) << controller.Output();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << controller.Output();
  EXPECT_EQ(Holder(lease), "");
}

TEST_F(ControllerBinaryTest, PublishesAPoolsWorkers) {
  const std::string ns = testing::UniqueName("it");
  ASSERT_TRUE(client_->Create(kube::resources::kNamespaces, "", {{"metadata", {{"name", ns}}}}));
  const std::string node = testing::UniqueName("node");
  testing::NodeAgent agent(*client_, {.nodes = {{.name = node}},
                                      .namespaces = {ns},
                                      .address_base = testing::ProcessAddressBase()});
  agent.Start();
  ASSERT_TRUE(agent.WaitForSync(std::chrono::seconds(60)));
  ASSERT_TRUE(
      client_->Create(kube::resources::kDeployments, ns, testing::WorkerDeployment("w", 2)));
  const kube::ResourceRef pools{"eoc.dev", "v1alpha1", "inferencepools"};
  ASSERT_TRUE(client_->Create(
      pools, ns,
      {{"apiVersion", "eoc.dev/v1alpha1"},
       {"kind", "InferencePool"},
       {"metadata", {{"name", "w"}}},
       {"spec", {{"selector", {{"matchLabels", {{"app", "w"}}}}}, {"targetPort", 8000}}}}));

  const int metrics_port = FreePort();
  std::vector<std::string> args = Args(testing::UniqueName("eoc-it"), metrics_port, FreePort());
  args.insert(args.end(), {"--namespace", ns});
  ChildProcess controller(args, /*merge_stderr=*/true);
  ASSERT_TRUE(Eventually(
      [&] {
        auto pool = client_->Get(pools, ns, "w");
        return pool && pool->contains("status") && (*pool)["status"].value("readyWorkers", 0) == 2;
      },
      std::chrono::seconds(90)))
      << controller.Output();
  const std::string gauge = "eoc_pool_workers{namespace=\"" + ns + R"(",pool="w"} 2)";
  EXPECT_TRUE(Eventually(
      [&] { return Get(metrics_port, "/metrics").body.find(gauge) != std::string::npos; },
      std::chrono::seconds(30)));
  controller.Signal(SIGTERM);
  EXPECT_TRUE(controller.WaitFor(std::chrono::seconds(30)).has_value());
  agent.Stop();
  (void)client_->Delete(kube::resources::kNodes, "", node);
  (void)client_->Delete(kube::resources::kNamespaces, "", ns);
}

TEST_F(ControllerBinaryTest, NotReadyWhileTheApiServerCannotBeReached) {
  testing::TempDir dir;
  const std::string kubeconfig = dir.Write("kubeconfig", R"(apiVersion: v1
kind: Config
clusters:
- name: gone
  cluster: {server: "https://127.0.0.1:)" + std::to_string(FreePort()) +
                                                             R"(", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: gone, user: u}
current-context: c
)");
  const int health_port = FreePort();
  ChildProcess controller(Args("unused", FreePort(), health_port, kubeconfig), true);
  ASSERT_TRUE(Eventually([&] { return Get(health_port, "/healthz").status == 200; },
                         std::chrono::seconds(30)))
      << controller.Output();
  const HttpAnswer ready = Get(health_port, "/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_THAT(ready.body, HasSubstr("pods-synced"));
}

TEST_F(ControllerBinaryTest, BadFlagsAndConfigsExitWithAMessage) {
  ChildProcess bad_level(
      {EOC_CONTROLLER, "--log-level", "loud", "--kubeconfig", plane_->Var("EOC_KUBECONFIG")}, true);
  const int status = bad_level.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  EXPECT_THAT(bad_level.Output(), HasSubstr("loud"));

  ChildProcess no_config({EOC_CONTROLLER, "--kubeconfig", "/nonexistent/kubeconfig"}, true);
  const int status2 = no_config.Wait();
  EXPECT_TRUE(WIFEXITED(status2) && WEXITSTATUS(status2) != 0);
  EXPECT_THAT(no_config.Output(), HasSubstr("/nonexistent/kubeconfig"));

  // Waiting picks may not hold every connection: --pick-max-waiting below --pick-max-connections.
  for (const auto& [flags, message] :
       {std::pair<std::vector<std::string>, std::string>{
            {"--pick-max-waiting", "4096"},
            "--pick-max-waiting 4096 must be below --pick-max-connections 4096"},
        {{"--pick-max-connections", "1000"},
         "--pick-max-waiting 2048 must be below --pick-max-connections 1000"}}) {
    std::vector<std::string> args = Args("unused", FreePort(), FreePort());
    args.insert(args.end(), flags.begin(), flags.end());
    ChildProcess refused(args, /*merge_stderr=*/true);
    const auto ended = refused.WaitFor(std::chrono::seconds(30));
    ASSERT_TRUE(ended.has_value()) << "still running with " << flags[0] << ":\n"
                                   << refused.Output();
    EXPECT_TRUE(WIFEXITED(*ended) && WEXITSTATUS(*ended) == 1) << refused.Output();
    EXPECT_THAT(refused.Output(), HasSubstr(message));
  }
}

// The soft and hard "Max open files" of process `pid`, as /proc/PID/limits gives them.
std::pair<std::string, std::string> OpenFilesLimits(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("Max open files")) continue;
    std::istringstream fields(line.substr(std::string_view("Max open files").size()));
    std::string soft;
    std::string hard;
    fields >> soft >> hard;
    return {soft, hard};
  }
  return {};
}

// Started with a container runtime's low soft limit, the controller raises it to the hard one;
// with a hard limit too low for its connection caps it exits at once, naming the flags.
TEST_F(ControllerBinaryTest, RaisesItsOpenFilesLimitAndRefusesCapsThatCannotFit) {
  constexpr const char* kPrlimit = "/usr/bin/prlimit";
  if (access(kPrlimit, X_OK) != 0) GTEST_SKIP() << kPrlimit << " is not installed";
  rlimit ours{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &ours), 0);
  // 1024 picks + 64 scrapes + 8 SDK polls + 128 for the two listeners + the 1024 reserve = 2248.
  const rlim_t hard = std::min<rlim_t>(ours.rlim_max, 4096);
  if (hard < 2248) GTEST_SKIP() << "the hard open-files limit is " << hard << ", below 2248";

  const int health_port = FreePort();
  std::vector<std::string> args = {kPrlimit, "--nofile=256:" + std::to_string(hard), "--"};
  for (std::string& a : Args("unused", FreePort(), health_port)) args.push_back(std::move(a));
  for (const char* a : {"--pick-max-connections", "1024", "--pick-max-waiting", "512"}) {
    args.emplace_back(a);
  }
  ChildProcess raised(args, /*merge_stderr=*/true);
  ASSERT_TRUE(Eventually([&] { return Get(health_port, "/healthz").status == 200; },
                         std::chrono::seconds(30)))
      << raised.Output();
  EXPECT_EQ(OpenFilesLimits(raised.pid()),
            std::make_pair(std::to_string(hard), std::to_string(hard)))
      << raised.Output();

  // The default caps (4096 picks and the rest) under a hard limit of 1024.
  args = {kPrlimit, "--nofile=256:1024", "--"};
  for (std::string& a : Args("unused", FreePort(), FreePort())) args.push_back(std::move(a));
  ChildProcess refused(args, /*merge_stderr=*/true);
  const auto status = refused.WaitFor(std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value()) << "still running with caps over its limit:\n"
                                  << refused.Output();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0) << refused.Output();
  EXPECT_THAT(refused.Output(), HasSubstr("--pick-max-connections 4096 + "));
  EXPECT_THAT(refused.Output(), HasSubstr("over the hard limit of 1024"));
}

}  // namespace
}  // namespace eoc::controller
