// The node agent against the shared real control plane: Deployments produce pods that go Running
// and Ready with a fake worker each; Ready follows SetReady; deletions finish; node selectors and
// GPU requests choose the node.
#include "node_agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "eventually.h"
#include "http_get.h"
#include "manifests.h"
#include "namespaced_test.h"

namespace eoc::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace resources = kube::resources;

#define ASSERT_OK(r) ASSERT_TRUE(r) << (r).error().ToString()

// Generous: the agent, the controller manager and the API server share two busy cores.
constexpr auto kPatience = std::chrono::seconds(60);

bool ConditionIs(const json& pod, const std::string& type, const std::string& status) {
  for (const auto& c : pod["status"].value("conditions", json::array())) {
    if (c.value("type", "") == type) return c.value("status", "") == status;
  }
  return false;
}

json BarePod(const std::string& name, int port, const json& annotations = json::object()) {
  json container = {{"name", "vllm"}, {"image", "vllm/vllm-openai:latest"}};
  if (port > 0) container["ports"] = json::array({{{"containerPort", port}}});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"annotations", annotations}}},
          {"spec",
           {{"automountServiceAccountToken", false}, {"containers", json::array({container})}}}};
}

class NodeAgentTest : public NamespacedTest {
 protected:
  void SetUp() override {
    NamespacedTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    cpu_node_ = UniqueName("cpu");
    gpu_node_ = UniqueName("gpu");
    agent_ = std::make_unique<NodeAgent>(
        *client_,
        NodeAgentOptions{.nodes = {{.name = cpu_node_,
                                    .labels = {{"topology.kubernetes.io/region", "eu-north-1"}}},
                                   {.name = gpu_node_,
                                    .labels = {{"topology.kubernetes.io/region", "eu-west-1"},
                                               {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}},
                                    .gpus = 2}},
                         .namespaces = {ns_},
                         .address_base = ProcessAddressBase(),
                         .start_workers = start_workers_});
    agent_->Start();
    ASSERT_TRUE(agent_->WaitForSync(kPatience));
  }

  void TearDown() override {
    if (agent_) agent_->Stop();
    for (const auto& node : {cpu_node_, gpu_node_}) {
      if (!node.empty()) (void)client_->Delete(resources::kNodes, "", node);
    }
    NamespacedTest::TearDown();
  }

  // Creates a pod, retrying while the namespace's service account is not there yet.
  void CreatePod(const json& pod) {
    ASSERT_TRUE(Eventually(
        [&] {
          auto created = client_->Create(resources::kPods, ns_, pod);
          return created.ok() || created.error().IsAlreadyExists();
        },
        kPatience));
  }

  std::optional<json> GetPod(const std::string& name) {
    auto pod = client_->Get(resources::kPods, ns_, name);
    if (!pod) return std::nullopt;
    return *pod;
  }

  bool RunningAndReady(const std::string& name) {
    const auto pod = GetPod(name);
    return pod && (*pod)["status"].value("phase", "") == "Running" &&
           ConditionIs(*pod, "Ready", "True");
  }

  // Runs the pods' phase and addresses, starting a worker per pod only when this is set.
  bool start_workers_ = true;
  std::string cpu_node_;
  std::string gpu_node_;
  std::unique_ptr<NodeAgent> agent_;
};

class NodeAgentWithoutWorkersTest : public NodeAgentTest {
 protected:
  NodeAgentWithoutWorkersTest() { start_workers_ = false; }
};

TEST_F(NodeAgentTest, RegistersReadyNodesWithLabelsAndCapacity) {
  auto node = client_->Get(resources::kNodes, "", gpu_node_);
  ASSERT_OK(node);
  EXPECT_EQ((*node)["metadata"]["labels"]["topology.kubernetes.io/region"], "eu-west-1");
  EXPECT_EQ((*node)["metadata"]["labels"]["nvidia.com/gpu.product"], "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ((*node)["status"]["capacity"]["nvidia.com/gpu"], "2");
  EXPECT_EQ((*node)["status"]["allocatable"]["nvidia.com/gpu"], "2");
  EXPECT_TRUE(ConditionIs(*node, "Ready", "True"));
  // The not-ready taint the API server gives a new Node is lifted (DaemonSets need that).
  EXPECT_EQ((*node)["spec"].value("taints", json::array()), json::array());
  node = client_->Get(resources::kNodes, "", cpu_node_);
  ASSERT_OK(node);
  EXPECT_FALSE((*node)["status"]["capacity"].contains("nvidia.com/gpu"));
}

TEST_F(NodeAgentTest, DeploymentPodsRunReadyWithWorkersAndBecomeAvailable) {
  ASSERT_OK(client_->Create(resources::kDeployments, ns_, WorkerDeployment("web", 3)));
  std::vector<json> pods;
  ASSERT_TRUE(Eventually(
      [&] {
        auto list = client_->List(resources::kPods, ns_, {.label_selector = "app=web"});
        if (!list || list->items.size() != 3) return false;
        pods = list->items;
        return std::ranges::all_of(pods, [](const json& pod) {
          return pod["status"].value("phase", "") == "Running" && ConditionIs(pod, "Ready", "True");
        });
      },
      kPatience));

  std::set<std::string> ips;
  for (const auto& pod : pods) {
    const std::string name = pod["metadata"]["name"];
    const std::string ip = pod["status"].value("podIP", "");
    SCOPED_TRACE(std::string("pod ").append(name).append(", podIP ").append(ip));
    ips.insert(ip);
    EXPECT_EQ(pod["spec"]["nodeName"], cpu_node_);  // the first node that fits
    EXPECT_EQ(pod["status"]["podIPs"][0]["ip"], ip);
    EXPECT_EQ(pod["status"]["hostIP"], "127.0.0.1");
    EXPECT_TRUE(ConditionIs(pod, "ContainersReady", "True"));
    EXPECT_EQ(pod["status"]["containerStatuses"][0]["ready"], true);
    EXPECT_EQ(agent_->PodIP(ns_, name), ip);
    const auto metrics = HttpGet(ip, 8000, "/metrics");
    ASSERT_TRUE(metrics.answered());
    EXPECT_THAT(metrics.ok_body(),
                HasSubstr("vllm:num_requests_running{model_name=\"fake-model\"} 0\n"));

    const auto worker = agent_->Worker(ns_, name);
    ASSERT_NE(worker, nullptr);
    worker->SetLoad({.running = 7});
    EXPECT_THAT(HttpGet(ip, 8000, "/metrics").ok_body(),
                HasSubstr("vllm:num_requests_running{model_name=\"fake-model\"} 7\n"));
  }
  EXPECT_EQ(ips.size(), 3U);
  EXPECT_EQ(ips.count(""), 0U);

  EXPECT_TRUE(Eventually(
      [&] {
        auto deployment = client_->Get(resources::kDeployments, ns_, "web");
        return deployment && (*deployment)["status"].value("availableReplicas", 0) == 3;
      },
      kPatience));
}

TEST_F(NodeAgentTest, SetReadyFlipsTheReadyConditionOnTheServer) {
  CreatePod(BarePod("flip", 8123, {{kEngineAnnotation, "sglang"}}));
  ASSERT_TRUE(Eventually([&] { return RunningAndReady("flip"); }, kPatience));
  const std::string ip = agent_->PodIP(ns_, "flip");
  EXPECT_THAT(HttpGet(ip, 8123, "/metrics").ok_body(), HasSubstr("sglang:num_running_reqs"));

  ASSERT_TRUE(agent_->SetReady(ns_, "flip", false));
  EXPECT_TRUE(Eventually(
      [&] {
        const auto pod = GetPod("flip");
        return pod && ConditionIs(*pod, "Ready", "False") &&
               ConditionIs(*pod, "ContainersReady", "False") &&
               (*pod)["status"]["containerStatuses"][0]["ready"] == false;
      },
      kPatience));
  EXPECT_TRUE(HttpGet(ip, 8123, "/health").answered());  // unready, still serving

  ASSERT_TRUE(agent_->SetReady(ns_, "flip", true));
  EXPECT_TRUE(Eventually([&] { return RunningAndReady("flip"); }, kPatience));
  EXPECT_FALSE(agent_->SetReady(ns_, "no-such-pod", false));
}

TEST_F(NodeAgentTest, LoadAnnotationsSetTheRunningWorkersLoadWhenTheyChange) {
  CreatePod(BarePod("loaded", 0, {{kWaitingAnnotation, "3"}}));
  ASSERT_TRUE(Eventually([&] { return RunningAndReady("loaded"); }, kPatience));
  const auto worker = agent_->Worker(ns_, "loaded");
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->load().waiting, 3);  // from the start
  worker->SetLoad({.running = 7, .waiting = 3});

  // As `kubectl annotate pod loaded fake.eoc.dev/running=240 ... fake.eoc.dev/waiting-`.
  ASSERT_OK(client_->Patch(resources::kPods, ns_, "loaded", kube::PatchType::kMerge,
                           {{"metadata",
                             {{"annotations",
                               {{kRunningAnnotation, "240"},
                                {kKvCacheUsageAnnotation, "0.9"},
                                {kWattsAnnotation, "lots"},
                                {kWaitingAnnotation, nullptr}}}}}}));
  EXPECT_TRUE(Eventually(
      [&] {
        const sim::PageFigures load = worker->load();
        return load.running == 240 && load.waiting == 0 && load.kv_cache_usage == 0.9;
      },
      kPatience));
  EXPECT_EQ(worker->load().watts, 0);  // unreadable: ignored
  EXPECT_THAT(HttpGet(agent_->PodIP(ns_, "loaded"), 8000, "/metrics").ok_body(),
              HasSubstr("vllm:num_requests_running{model_name=\"fake-model\"} 240\n"));
}

TEST_F(NodeAgentTest, DeletingAPodFinishesTheDeletionAndStopsItsWorker) {
  CreatePod(BarePod("doomed", 0));
  ASSERT_TRUE(Eventually([&] { return RunningAndReady("doomed"); }, kPatience));
  const std::string ip = agent_->PodIP(ns_, "doomed");
  ASSERT_TRUE(HttpGet(ip, 8000, "/health").answered());

  // A normal delete: the pod turns Terminating, and only a kubelet (here, the agent) ends that.
  ASSERT_OK(client_->Delete(resources::kPods, ns_, "doomed"));
  EXPECT_TRUE(Eventually(
      [&] {
        auto pod = client_->Get(resources::kPods, ns_, "doomed");
        return !pod && pod.error().IsNotFound();
      },
      kPatience));
  EXPECT_TRUE(Eventually([&] { return agent_->Worker(ns_, "doomed") == nullptr; }, kPatience));
  EXPECT_FALSE(HttpGet(ip, 8000, "/health").answered());  // connection refused
  EXPECT_EQ(agent_->PodIP(ns_, "doomed"), "");
}

TEST_F(NodeAgentTest, NodeSelectorAndGpuRequestChooseTheNode) {
  // Looked at first (one queue, in order): no node has this region, so it stays unbound.
  json nowhere = BarePod("nowhere", 0);
  nowhere["spec"]["nodeSelector"] = {{"topology.kubernetes.io/region", "mars-1"}};
  CreatePod(nowhere);

  json gpu = BarePod("gpu", 0);
  gpu["spec"]["nodeSelector"] = {{"topology.kubernetes.io/region", "eu-west-1"}};
  gpu["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", 1}}}};
  CreatePod(gpu);
  // Asks for a GPU and nothing else: the first node (CPU only) does not fit.
  json any_gpu = BarePod("any-gpu", 0);
  any_gpu["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}}}};
  CreatePod(any_gpu);

  ASSERT_TRUE(
      Eventually([&] { return RunningAndReady("gpu") && RunningAndReady("any-gpu"); }, kPatience));
  EXPECT_EQ((*GetPod("gpu"))["spec"]["nodeName"], gpu_node_);
  EXPECT_EQ((*GetPod("any-gpu"))["spec"]["nodeName"], gpu_node_);
  const auto unbound = GetPod("nowhere");
  ASSERT_TRUE(unbound.has_value());
  EXPECT_EQ((*unbound)["spec"].value("nodeName", ""), "");
  EXPECT_EQ((*unbound)["status"].value("phase", ""), "Pending");
}

TEST_F(NodeAgentWithoutWorkersTest, PodsGoReadyWithDistinctAddressesAndNoServers) {
  ASSERT_OK(client_->Create(resources::kDeployments, ns_, WorkerDeployment("bulk", 5)));
  std::set<std::string> ips;
  ASSERT_TRUE(Eventually(
      [&] {
        auto list = client_->List(resources::kPods, ns_, {.label_selector = "app=bulk"});
        if (!list || list->items.size() != 5) return false;
        ips.clear();
        for (const auto& pod : list->items) {
          if (!ConditionIs(pod, "Ready", "True")) return false;
          ips.insert(pod["status"].value("podIP", ""));
        }
        return true;
      },
      kPatience));
  EXPECT_EQ(ips.size(), 5U);
  EXPECT_EQ(ips.count(""), 0U);
  auto list = client_->List(resources::kPods, ns_, {.label_selector = "app=bulk"});
  ASSERT_OK(list);
  const std::string name = list->items.front()["metadata"]["name"];
  EXPECT_EQ(agent_->Worker(ns_, name), nullptr);
  EXPECT_FALSE(HttpGet(agent_->PodIP(ns_, name), 8000, "/health").answered());  // nothing there
}

}  // namespace
}  // namespace eoc::testing
