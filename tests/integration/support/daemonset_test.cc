// DaemonSets on the shared real control plane: the controller manager's daemonset controller
// makes one pod per node, pinned to it by node affinity (matchFields metadata.name, nodeName left
// for a scheduler); the node agent binds each to its node; a fake dcgm-exporter pod there lists
// the workers of its node with their watts, read back by the operator's DCGM map.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "eventually.h"
#include "http_get.h"
#include "manifests.h"
#include "namespaced_test.h"
#include "node_agent.h"
#include "signals/energy_metrics.h"

namespace eoc::testing {
namespace {

using nlohmann::json;
namespace resources = kube::resources;

#define ASSERT_OK(r) ASSERT_TRUE(r) << (r).error().ToString()

constexpr auto kPatience = std::chrono::seconds(90);
constexpr int kExporterPort = 9400;

bool RunningAndReady(const json& pod) {
  if (pod["status"].value("phase", "") != "Running") return false;
  for (const auto& c : pod["status"].value("conditions", json::array())) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

// Each pod's watts on an exporter's page, by pod name, as the operator's DCGM map reads them.
std::map<std::string, double> DcgmWatts(const std::string& page) {
  const signals::EnergyMap map = signals::EnergyMap::Dcgm();
  const signals::ParseResult parsed = signals::ParseExposition(page, {.keep = map.Filter()});
  std::map<std::string, double> watts;
  if (!parsed.ok()) return watts;
  for (const auto& p : map.Read(parsed.page()).pods) {
    if (p.watts) watts[p.pod_namespace + "/" + p.pod] = *p.watts;
  }
  return watts;
}

class DaemonSetTest : public NamespacedTest {
 protected:
  void SetUp() override {
    NamespacedTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    nodes_ = {UniqueName("ds-a"), UniqueName("ds-b")};
    // A label only this test's nodes carry: the DaemonSet selects them, not other tests' nodes
    // on the shared plane (whose pods no agent here would bind).
    NodeAgentOptions options{.namespaces = {ns_}, .address_base = ProcessAddressBase()};
    for (const auto& name : nodes_) {
      options.nodes.push_back({.name = name, .labels = {{"eoc.dev/test", ns_}}, .gpus = 8});
    }
    agent_ = std::make_unique<NodeAgent>(*client_, std::move(options));
    agent_->Start();
    ASSERT_TRUE(agent_->WaitForSync(kPatience));
  }

  void TearDown() override {
    if (agent_) agent_->Stop();
    for (const auto& node : nodes_) (void)client_->Delete(resources::kNodes, "", node);
    NamespacedTest::TearDown();
  }

  // A worker pod on `node` (by node selector) drawing `watts`.
  void CreateWorker(const std::string& name, const std::string& node, const std::string& watts) {
    const json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"annotations", {{kWattsAnnotation, watts}}}}},
        {"spec",
         {{"automountServiceAccountToken", false},
          {"nodeSelector", {{"kubernetes.io/hostname", node}}},
          {"containers", json::array({{{"name", "vllm"},
                                       {"image", "vllm/vllm-openai:latest"},
                                       {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}})}}}};
    ASSERT_TRUE(Eventually(
        [&] {
          auto created = client_->Create(resources::kPods, ns_, pod);
          return created.ok() || created.error().IsAlreadyExists();
        },
        kPatience));
  }

  std::vector<std::string> nodes_;
  std::unique_ptr<NodeAgent> agent_;
};

TEST_F(DaemonSetTest, AnExporterPodRunsOnEachNodeAndListsItsWorkersWatts) {
  CreateWorker("web-a1", nodes_[0], "250");
  CreateWorker("web-a2", nodes_[0], "300.5");
  CreateWorker("web-b1", nodes_[1], "400");
  ASSERT_OK(client_->Create(kDaemonSets, ns_,
                            ExporterDaemonSet("dcgm-exporter", ExporterKind::kDcgm, kExporterPort,
                                              {{"eoc.dev/test", ns_}})));

  std::vector<json> pods;
  ASSERT_TRUE(Eventually(
      [&] {
        auto list = client_->List(resources::kPods, ns_, {.label_selector = "app=dcgm-exporter"});
        if (!list || list->items.size() != 2) return false;
        pods = list->items;
        return std::ranges::all_of(pods, RunningAndReady);
      },
      kPatience))
      << "exporter pods: " << json(pods).dump();

  std::set<std::string> bound;
  std::map<std::string, std::string> ip_of;  // node -> the exporter's podIP
  for (const json& pod : pods) {
    const std::string node = pod["spec"].value("nodeName", "");
    SCOPED_TRACE(pod.dump());
    bound.insert(node);
    ip_of[node] = pod["status"].value("podIP", "");
    // The controller's pin: one term, matchFields metadata.name In [the node].
    const json& terms = pod["spec"]["affinity"]["nodeAffinity"]
                           ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
    ASSERT_EQ(terms.size(), 1U);
    EXPECT_EQ(
        terms[0]["matchFields"],
        json::array(
            {{{"key", "metadata.name"}, {"operator", "In"}, {"values", json::array({node})}}}));
    EXPECT_FALSE(pod["spec"].value("tolerations", json::array()).empty());
  }
  EXPECT_EQ(bound, std::set<std::string>(nodes_.begin(), nodes_.end()));

  const std::map<std::string, double> want_a = {{ns_ + "/web-a1", 250}, {ns_ + "/web-a2", 300.5}};
  std::map<std::string, std::map<std::string, double>> want = {
      {nodes_[0], want_a}, {nodes_[1], {{ns_ + "/web-b1", 400}}}};
  for (const auto& node : nodes_) {
    std::string page;
    EXPECT_TRUE(Eventually(
        [&] {
          page = HttpGet(ip_of[node], kExporterPort, "/metrics").ok_body();
          return DcgmWatts(page) == want[node];
        },
        kPatience))
        << node << " serves:\n"
        << page;
    EXPECT_THAT(page, ::testing::HasSubstr("Hostname=\"" + node + "\""));
  }

  // A worker's watts change (its annotation, as `kubectl annotate` would): its node's exporter
  // reports the new figure; the energy counter keeps counting up.
  ASSERT_OK(client_->Patch(resources::kPods, ns_, "web-b1", kube::PatchType::kMerge,
                           {{"metadata", {{"annotations", {{kWattsAnnotation, "520"}}}}}}));
  want[nodes_[1]] = {{ns_ + "/web-b1", 520}};
  EXPECT_TRUE(Eventually(
      [&] {
        return DcgmWatts(HttpGet(ip_of[nodes_[1]], kExporterPort, "/metrics").ok_body()) ==
               want[nodes_[1]];
      },
      kPatience));

  EXPECT_TRUE(Eventually(
      [&] {
        auto ds = client_->Get(kDaemonSets, ns_, "dcgm-exporter");
        return ds && (*ds)["status"].value("desiredNumberScheduled", 0) == 2 &&
               (*ds)["status"].value("numberReady", 0) == 2;
      },
      kPatience));
}

}  // namespace
}  // namespace eoc::testing
