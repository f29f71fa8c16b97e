// A fixture for tests of the eoc-controller binary with a fleet: on the shared control plane, the
// CRDs, a node agent playing the kubelet for nodes of its own (one unlabelled node, or those
// Nodes() names; fake workers on this process's addresses, or those StartFleet is given), and the
// controller watching the test's namespace, serving /metrics on a free port; stopped (and checked
// to exit cleanly) after the test, its nodes deleted.
//
//   class MyTest : public eoc::testing::FleetTest {};
//   TEST_F(MyTest, Something) {
//     ... create a Deployment and a pool in ns_ ...
//     EXPECT_EQ(Sample(Metrics(), Series("eoc_worker_running_requests", "w", pod)), 3);
//   }
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/inference_pool.h"
#include "child_process.h"
#include "crds.h"
#include "eventually.h"
#include "http_get.h"
#include "namespaced_test.h"
#include "node_agent.h"

namespace eoc::testing {

inline constexpr auto kPatience = std::chrono::seconds(90);

inline const kube::ResourceRef kPools{std::string(api::kGroup), std::string(api::kVersion),
                                      std::string(api::kPlural)};

// An InferencePool of the pods labelled app=`app` (targetPort 8000), named `app`, with
// `metrics` as its spec.metrics; callers add the rest of the spec.
inline nlohmann::json PoolOf(const std::string& app, nlohmann::json metrics) {
  return {{"apiVersion", "eoc.dev/v1alpha1"},
          {"kind", "InferencePool"},
          {"metadata", {{"name", app}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"app", app}}}}},
            {"targetPort", 8000},
            {"metrics", std::move(metrics)}}}};
}

// The value of the sample `series` (name and labels, as the exposition writes them); -1 if none.
inline double Sample(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

class FleetTest : public NamespacedTest {
 protected:
  void SetUp() override {
    NamespacedTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    MakeAddresses();
    if (IsSkipped() || HasFatalFailure()) return;
    StartFleet(AddressBase());
  }

  // For fixtures whose workers need addresses of their own making: makes them (or skips the test,
  // saying why), before the fleet starts; AddressBase() then names them.
  virtual void MakeAddresses() {}
  virtual std::string AddressBase() const { return ProcessAddressBase(); }
  // The nodes the agent registers and binds pods to (by spec.nodeSelector), each named uniquely
  // (UniqueName), for fixtures whose workers need labels or more than one node.
  virtual std::vector<NodeSpec> Nodes() const { return {{.name = UniqueName("node")}}; }
  // Flags the controller gets beside its kubeconfig, namespaces and addresses.
  virtual std::vector<std::string> ControllerFlags() const { return {}; }
  // Namespaces beside ns_ (say, another tenant's), uniquely named (UniqueName): created before the
  // fleet starts, their pods run by the agent, watched by the controller, deleted after the test.
  virtual std::vector<std::string> MoreNamespaces() const { return {}; }
  // The kubeconfig the controller runs with (default: the admin's).
  virtual std::string ControllerKubeconfig() const { return plane_->Var("EOC_KUBECONFIG"); }
  // Runs once the node agent has synced, before the controller starts (say, to give it an
  // identity of its own for ControllerKubeconfig()).
  virtual void BeforeController() {}

 private:
  void StartFleet(const std::string& address_base) {
    ASSERT_EQ(InstallCrds(*plane_), "");
    std::vector<std::string> namespaces{ns_};
    for (const std::string& more : MoreNamespaces()) {
      const auto created = client_->Create(kube::resources::kNamespaces, "",
                                           nlohmann::json{{"metadata", {{"name", more}}}});
      ASSERT_TRUE(created) << created.error().ToString();
      namespaces.push_back(more);
    }
    std::vector<NodeSpec> nodes = Nodes();
    for (const NodeSpec& node : nodes) nodes_.push_back(node.name);
    agent_ = std::make_unique<NodeAgent>(*client_, NodeAgentOptions{.nodes = std::move(nodes),
                                                                    .namespaces = namespaces,
                                                                    .address_base = address_base});
    agent_->Start();
    ASSERT_TRUE(agent_->WaitForSync(kPatience));
    BeforeController();
    if (HasFatalFailure() || IsSkipped()) return;
    metrics_port_ = FreePort();
    pick_port_ = FreePort();
    health_port_ = FreePort();
    controller_ = std::make_unique<ChildProcess>(
        ControllerArgs(metrics_port_, pick_port_, health_port_), /*merge_stderr=*/true);
  }

 protected:
  // The controller's command line: the test's kubeconfig and namespaces, /metrics, the pick
  // endpoint and the probes on these ports, and ControllerFlags().
  std::vector<std::string> ControllerArgs(int metrics_port, int pick_port,
                                          int health_port = FreePort()) const {
    std::vector<std::string> args{EOC_CONTROLLER,
                                  "--kubeconfig",
                                  ControllerKubeconfig(),
                                  "--namespace",
                                  ns_,
                                  "--metrics-bind-address",
                                  "127.0.0.1:" + std::to_string(metrics_port),
                                  "--health-probe-bind-address",
                                  "127.0.0.1:" + std::to_string(health_port),
                                  "--pick-bind-address",
                                  "127.0.0.1:" + std::to_string(pick_port)};
    for (const std::string& more : MoreNamespaces()) {
      args.insert(args.end(), {"--namespace", more});
    }
    for (std::string& flag : ControllerFlags()) args.push_back(std::move(flag));
    return args;
  }

  void TearDown() override {
    if (controller_) {
      controller_->Signal(SIGTERM);
      const auto status = controller_->WaitFor(std::chrono::seconds(30));
      EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
          << controller_->Output();
    }
    if (agent_) agent_->Stop();
    for (const std::string& node : nodes_) (void)client_->Delete(kube::resources::kNodes, "", node);
    for (const std::string& more : MoreNamespaces()) {
      (void)client_->Delete(kube::resources::kNamespaces, "", more);
    }
    NamespacedTest::TearDown();
  }

  // Grants `verbs` on inferencepools/pick (a Role and a RoleBinding "pick") in the test's
  // namespace to an RBAC subject, as a gateway's or a tenant's Role does.
  void GrantPickTo(const nlohmann::json& subject, const std::vector<std::string>& verbs) const {
    const nlohmann::json role = {
        {"metadata", {{"name", "pick"}}},
        {"rules",
         {{{"apiGroups", {"eoc.dev"}}, {"resources", {"inferencepools/pick"}}, {"verbs", verbs}}}}};
    ASSERT_TRUE(client_->Create(kRoles, ns_, role));
    const nlohmann::json binding = {
        {"metadata", {{"name", "pick"}}},
        {"roleRef",
         {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "pick"}}},
        {"subjects", {subject}}};
    ASSERT_TRUE(client_->Create(kRoleBindings, ns_, binding));
  }

  std::string Metrics() const { return HttpGet(metrics_port_, "/metrics").body; }
  // A per-worker series, as the exposition writes it.
  std::string Series(const std::string& name, const std::string& pool,
                     const std::string& pod) const {
    return name + "{namespace=\"" + ns_ + "\",pod=\"" + pod + "\",pool=\"" + pool + "\"}";
  }
  std::string Scrapes(const std::string& pool, const std::string& result) const {
    return "eoc_scrapes_total{namespace=\"" + ns_ + "\",pool=\"" + pool + "\",result=\"" + result +
           "\"}";
  }
  // The routing table pool `pool` publishes in status.routing: pod name -> weight (and its
  // generation in `generation`, when given); nullopt before one is published.
  std::optional<std::map<std::string, std::int64_t>> PublishedWeights(
      const std::string& pool, std::int64_t* generation = nullptr) const {
    auto object = client_->Get(kPools, ns_, pool);
    if (!object || !object->contains("status") || !(*object)["status"].contains("routing")) {
      return std::nullopt;
    }
    const nlohmann::json& routing = (*object)["status"]["routing"];
    if (generation != nullptr) *generation = routing.value("generation", std::int64_t{0});
    std::map<std::string, std::int64_t> out;
    for (const nlohmann::json& w : routing.value("workers", nlohmann::json::array())) {
      out[w.value("pod", "")] = w.value("weight", std::int64_t{-1});
    }
    return out;
  }

  // The names of `count` Running pods labelled app=`app`, once there are that many (fewer when
  // kPatience passed first).
  std::vector<std::string> AwaitRunningPods(const std::string& app, std::size_t count) const {
    std::vector<std::string> pods;
    (void)Eventually(
        [&] {
          pods = RunningPods(app);
          return pods.size() == count;
        },
        kPatience);
    return pods;
  }

  // The names of the Running pods labelled app=`app`.
  std::vector<std::string> RunningPods(const std::string& app) const {
    std::vector<std::string> names;
    auto list = client_->List(kube::resources::kPods, ns_, {.label_selector = "app=" + app});
    if (!list) return names;
    for (const nlohmann::json& pod : list->items) {
      if (pod.contains("status") && pod["status"].value("phase", "") == "Running") {
        names.push_back(pod["metadata"].value("name", ""));
      }
    }
    return names;
  }

  std::vector<std::string> nodes_;  // the names of Nodes()
  std::unique_ptr<NodeAgent> agent_;
  int metrics_port_ = 0;
  int pick_port_ = 0;    // the controller's pick endpoint
  int health_port_ = 0;  // its probes: /healthz, /readyz
  std::unique_ptr<ChildProcess> controller_;
};

}  // namespace eoc::testing
