// The InferencePool controller against the shared real control plane, with the node agent playing
// the kubelet: Deployments make real pods, the controller turns them into a pool's workers and
// publishes the pool's status; invalid specs are reported and recover.
#include "controller/pool_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "child_process.h"
#include "controller/pool_status.h"
#include "crds.h"
#include "eventually.h"
#include "manifests.h"
#include "namespaced_test.h"
#include "node_agent.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace resources = kube::resources;

#define ASSERT_OK(r) ASSERT_TRUE(r) << (r).error().ToString()

// Generous: the agent, the controller manager and the API server share two busy cores.
constexpr auto kPatience = std::chrono::seconds(90);

json Pool(const std::string& name, const std::string& app) {
  return {{"apiVersion", "eoc.dev/v1alpha1"},
          {"kind", "InferencePool"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"app", app}}}}},
            {"targetPort", 8000},
            {"models", {"llama-3-8b"}}}}};
}

class PoolControllerTest : public testing::NamespacedTest {
 protected:
  void SetUp() override {
    NamespacedTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(testing::InstallCrds(*plane_), "");
    cpu_node_ = testing::UniqueName("cpu");
    gpu_node_ = testing::UniqueName("gpu");
    agent_ = std::make_unique<testing::NodeAgent>(
        *client_, testing::NodeAgentOptions{
                      .nodes = {{.name = cpu_node_,
                                 .labels = {{"topology.kubernetes.io/region", "eu-north-1"}}},
                                {.name = gpu_node_,
                                 .labels = {{"topology.kubernetes.io/region", "eu-west-1"},
                                            {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}},
                                 .gpus = 8}},
                      .namespaces = {ns_},
                      .address_base = testing::ProcessAddressBase()});
    agent_->Start();
    ASSERT_TRUE(agent_->WaitForSync(kPatience));
    controller_client_ = kube::Client::Create(plane_->AdminConfig(), {});
    recorder_ = std::make_unique<kube::EventRecorder>(
        *controller_client_, kube::EventRecorderOptions{.component = "eoc-controller"});
    pools_ = std::make_unique<PoolController>(
        *controller_client_, *recorder_,
        PoolControllerOptions{.namespaces = {ns_}, .reconcile = {.directory = &directory_}},
        RealClock(), nullptr, nullptr);
    pools_->Start();
    pools_->SetLeading(true);
    ASSERT_TRUE(testing::Eventually([&] { return pools_->HasSynced(); }, kPatience));
  }

  void TearDown() override {
    if (pools_) pools_->Stop();
    if (recorder_) recorder_->Stop();
    if (agent_) agent_->Stop();
    for (const auto& node : {cpu_node_, gpu_node_}) {
      if (!node.empty()) (void)client_->Delete(resources::kNodes, "", node);
    }
    NamespacedTest::TearDown();
  }

  void CreateDeployment(const std::string& name, int replicas) {
    // The namespace's service account may not be there yet: the API server refuses pods then,
    // and the ReplicaSet controller retries; the Deployment itself goes in at once.
    auto created =
        client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment(name, replicas));
    ASSERT_OK(created);
  }

  void Scale(const std::string& deployment, int replicas) {
    auto scaled = client_->SetReplicas(resources::kDeployments, ns_, deployment, replicas);
    ASSERT_OK(scaled);
  }

  api::InferencePoolStatus Status(const std::string& pool) {
    auto got = client_->Get(kInferencePools, ns_, pool);
    if (!got || !got->contains("status")) return {};
    return api::ParseStatus((*got)["status"]);
  }

  // The pods the published routing table lists.
  std::set<std::string> Listed(const std::string& pool) {
    const auto status = Status(pool);
    std::set<std::string> pods;
    if (status.routing) {
      for (const auto& w : status.routing->workers) pods.insert(w.pod);
    }
    return pods;
  }

  std::vector<std::string> PodNames(const std::string& app) {
    auto list = client_->List(resources::kPods, ns_, {.label_selector = "app=" + app});
    std::vector<std::string> names;
    if (!list) return names;
    for (const auto& pod : list->items) {
      if (!pod["metadata"].contains("deletionTimestamp")) {
        names.push_back(pod["metadata"]["name"].get<std::string>());
      }
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  static std::string ConditionStatus(const api::InferencePoolStatus& s, std::string_view type) {
    const api::Condition* c = api::FindCondition(s.conditions, type);
    return c == nullptr ? "" : c->status;
  }

  std::string cpu_node_;
  std::string gpu_node_;
  std::unique_ptr<testing::NodeAgent> agent_;
  std::unique_ptr<kube::Client> controller_client_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  routing::SessionBudget budget_;
  routing::PrefixBudget prefix_budget_;
  routing::PoolDirectory directory_{budget_,
                                    prefix_budget_};  // declared before pools_: outlives it
  std::unique_ptr<PoolController> pools_;
};

TEST_F(PoolControllerTest, FollowsTheDeploymentsReadyPods) {
  CreateDeployment("chat", 3);
  ASSERT_OK(client_->Create(kInferencePools, ns_, Pool("chat", "chat")));

  // Ready with three workers, each at its pod's IP and the target port.
  ASSERT_TRUE(testing::Eventually([&] { return Status("chat").ready_workers == 3; }, kPatience))
      << api::ToJson(Status("chat")).dump();
  auto status = Status("chat");
  EXPECT_EQ(ConditionStatus(status, "Ready"), "True");
  EXPECT_EQ(ConditionStatus(status, "SpecValid"), "True");
  EXPECT_EQ(status.observed_generation, 1);
  ASSERT_TRUE(status.routing.has_value());
  const std::int64_t first_generation = status.routing->generation;
  for (const auto& w : status.routing->workers) {
    EXPECT_EQ(w.address, agent_->PodIP(ns_, w.pod) + ":8000") << w.pod;
    EXPECT_EQ(w.weight, kEqualWeight);
    EXPECT_EQ(w.models, std::vector<std::string>{"llama-3-8b"});
  }
  EXPECT_EQ(pools_->Workers(ns_ + "/chat")->workers.size(), 3U);

  // The pick path's snapshot lists the same workers, with the published generation.
  const auto state = directory_.Find(ns_ + "/chat");
  ASSERT_NE(state, nullptr);
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const auto snapshot = state->snapshot();
        return snapshot != nullptr && snapshot->generation() == first_generation;
      },
      kPatience));
  ASSERT_EQ(state->snapshot()->size(), status.routing->workers.size());
  for (std::size_t i = 0; i < state->snapshot()->size(); ++i) {
    EXPECT_EQ(PodName(state->snapshot()->worker(i)), status.routing->workers[i].pod);
    EXPECT_EQ(state->snapshot()->worker(i).address, status.routing->workers[i].address);
  }

  // Scaled to five: two more.
  Scale("chat", 5);
  ASSERT_TRUE(testing::Eventually([&] { return Listed("chat").size() == 5; }, kPatience));
  EXPECT_GT(Status("chat").routing->generation, first_generation);

  // A deleted pod leaves the table (its ReplicaSet makes a new one, which joins).
  const std::string gone = PodNames("chat").front();
  ASSERT_OK(client_->Delete(resources::kPods, ns_, gone));
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const auto listed = Listed("chat");
        return !listed.contains(gone) && listed.size() == 5;
      },
      kPatience));

  // A pod turned unready is dropped, and comes back when ready again.
  const std::string flaky = *Listed("chat").begin();
  ASSERT_TRUE(agent_->SetReady(ns_, flaky, false));
  ASSERT_TRUE(testing::Eventually([&] { return !Listed("chat").contains(flaky); }, kPatience));
  EXPECT_EQ(Status("chat").ready_workers, 4);
  ASSERT_TRUE(agent_->SetReady(ns_, flaky, true));
  ASSERT_TRUE(testing::Eventually([&] { return Listed("chat").contains(flaky); }, kPatience));
}

// Status is written only while the fence says the Lease is held at the moment of the write, not
// merely when the controller was told it leads.
TEST_F(PoolControllerTest, NoStatusIsWrittenWhileTheFenceSaysNo) {
  pools_->Stop();
  pools_.reset();
  std::atomic<bool> holds_lease{false};
  PoolController fenced(*controller_client_, *recorder_,
                        {.namespaces = {ns_},
                         .workers = 0,
                         .reconcile = {.fence = [&holds_lease] { return holds_lease.load(); }}},
                        RealClock(), nullptr, nullptr);
  fenced.Start();
  fenced.SetLeading(true);
  ASSERT_TRUE(testing::Eventually([&] { return fenced.HasSynced(); }, kPatience));
  CreateDeployment("fenced", 1);
  ASSERT_OK(client_->Create(kInferencePools, ns_, Pool("fenced", "fenced")));
  const std::string key = ns_ + "/fenced";

  // It sees the pool and its ready worker, and writes nothing.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        EXPECT_EQ(kube::OutcomeOf(fenced.Reconcile(key)), kube::ReconcileOutcome::kSuccess);
        const auto members = fenced.Workers(key);
        return members != nullptr && members->workers.size() == 1;
      },
      kPatience));
  auto unwritten = client_->Get(kInferencePools, ns_, "fenced");
  ASSERT_OK(unwritten);
  EXPECT_FALSE(unwritten->contains("status")) << unwritten->dump();

  holds_lease = true;
  // Written; and, the pool having a worker, it asks to be weighed again (requeue_after).
  EXPECT_EQ(kube::OutcomeOf(fenced.Reconcile(key)), kube::ReconcileOutcome::kRequeue);
  EXPECT_EQ(Status("fenced").ready_workers, 1);
  fenced.Stop();
}

TEST_F(PoolControllerTest, AGpuNodesAcceleratorAndZoneReachTheWorker) {
  json deployment = testing::WorkerDeployment("gpu", 1);
  auto& pod_spec = deployment["spec"]["template"]["spec"];
  pod_spec["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
  pod_spec["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}}}};
  ASSERT_OK(client_->Create(resources::kDeployments, ns_, deployment));
  json pool = Pool("gpu", "gpu");
  pool["spec"]["carbon"] = {{"zoneLabel", "topology.kubernetes.io/region"}};
  ASSERT_OK(client_->Create(kInferencePools, ns_, pool));

  std::shared_ptr<const PoolMembers> members;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        members = pools_->Workers(ns_ + "/gpu");
        return members != nullptr && members->workers.size() == 1;
      },
      kPatience));
  const routing::Capability& c = members->workers.front().capability;
  EXPECT_EQ(members->notes.front().node, gpu_node_);
  EXPECT_EQ(c.accelerator, Accelerator::kGpu);
  EXPECT_EQ(c.accelerator_product, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(c.zone, "eu-west-1");
}

TEST_F(PoolControllerTest, ADeletedPoolIsForgottenAndItsDeploymentLeftAlone) {
  CreateDeployment("gone", 2);
  ASSERT_OK(client_->Create(kInferencePools, ns_, Pool("gone", "gone")));
  ASSERT_TRUE(testing::Eventually([&] { return Status("gone").ready_workers == 2; }, kPatience));
  ASSERT_NE(pools_->Workers(ns_ + "/gone"), nullptr);
  ASSERT_NE(directory_.Find(ns_ + "/gone"), nullptr);

  // A changed selector takes effect at once: nothing matches "none".
  ASSERT_OK(client_->Patch(kInferencePools, ns_, "gone", kube::PatchType::kMerge,
                           {{"spec", {{"selector", {{"matchLabels", {{"app", "none"}}}}}}}}));
  ASSERT_TRUE(testing::Eventually([&] { return Status("gone").ready_workers == 0; }, kPatience));
  EXPECT_EQ(ConditionStatus(Status("gone"), "Ready"), "False");

  ASSERT_OK(client_->Delete(kInferencePools, ns_, "gone"));
  ASSERT_TRUE(
      testing::Eventually([&] { return pools_->Workers(ns_ + "/gone") == nullptr; }, kPatience));
  EXPECT_EQ(directory_.Find(ns_ + "/gone"), nullptr);  // the pick path no longer finds it
  auto scale = client_->GetScale(resources::kDeployments, ns_, "gone");
  ASSERT_OK(scale);
  EXPECT_EQ(scale->spec_replicas, 2);
}

// Specs the CRD's schema lets in but the controller refuses, with the field it must name.
struct InvalidSpec {
  const char* what;
  json spec_fields;  // each replaces the field of that name in a valid spec
  const char* field;
};

std::vector<InvalidSpec> InvalidSpecs() {
  const json target = {{"name", "chat"}};
  return {
      {"an empty selector", {{"selector", json::object()}}, "spec.selector"},
      {"an In expression without values",
       {{"selector",
         {{"matchExpressions",
           {{{"key", "app"}, {"operator", "In"}, {"values", json::array()}}}}}}},
       "spec.selector.matchExpressions[0].values"},
      {"autoscaling without maxReplicas",
       {{"scaleTargetRef", target}, {"autoscaling", {{"minReplicas", 1}}}},
       "spec.autoscaling.maxReplicas"},
      {"minReplicas above maxReplicas",
       {{"scaleTargetRef", target}, {"autoscaling", {{"minReplicas", 5}, {"maxReplicas", 2}}}},
       "spec.autoscaling.minReplicas"},
      {"autoscaling on without a scaleTargetRef",
       {{"autoscaling", {{"enabled", true}, {"maxReplicas", 4}}}},
       "spec.scaleTargetRef"},
      {"initialReplicas outside min..max",
       {{"scaleTargetRef", target},
        {"autoscaling", {{"minReplicas", 1}, {"maxReplicas", 4}, {"initialReplicas", 9}}}},
       "spec.autoscaling.initialReplicas"},
      {"CarbonWeighted without a carbon source",
       {{"routing", {{"strategy", "CarbonWeighted"}}}},
       "spec.carbon"},
      {"a scrape timeout longer than its interval",
       {{"metrics", {{"intervalSeconds", 5}, {"timeoutSeconds", 9}}}},
       "spec.metrics.timeoutSeconds"},
      {"a profile whose maxWatts is below idleWatts",
       {{"energy",
         {{"profiles",
           {{{"accelerator", "GPU"},
             {"idleWatts", 300},
             {"maxWatts", 100},
             {"maxTokensPerSecond", 1000}}}}}}},
       "spec.energy.profiles[0].maxWatts"},
      {"Static energy without profiles",
       {{"energy", {{"source", "Static"}}}},
       "spec.energy.profiles"},
      {"two carbon sources",
       {{"carbon",
         {{"static", {{"eu-north-1", 20}}}, {"configMapRef", {{"name", "grid-intensity"}}}}}},
       "spec.carbon"},
      {"a selector key that is not a label key",
       {{"selector", {{"matchLabels", {{"app", "chat"}, {"bad key!", "x"}}}}}},
       "spec.selector.matchLabels"},
  };
}

TEST_F(PoolControllerTest, InvalidSpecsAreReportedByFieldAndRecover) {
  CreateDeployment("chat", 1);
  const auto cases = InvalidSpecs();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    SCOPED_TRACE(c.what);
    const std::string name = "bad-" + std::to_string(i);
    json pool = Pool(name, "chat");
    for (const auto& [field, value] : c.spec_fields.items()) pool["spec"][field] = value;
    ASSERT_OK(client_->Create(kInferencePools, ns_, pool));
    ASSERT_TRUE(testing::Eventually(
        [&] { return ConditionStatus(Status(name), "SpecValid") == "False"; }, kPatience));
    const auto status = Status(name);
    const api::Condition* valid = api::FindCondition(status.conditions, "SpecValid");
    EXPECT_THAT(valid->message, HasSubstr(c.field));
    EXPECT_EQ(valid->reason, "InvalidSpec");
    EXPECT_EQ(ConditionStatus(status, "Ready"), "False");
  }

  // The first is fixed by an edit: valid again, Ready with the Deployment's worker.
  ASSERT_OK(client_->Patch(kInferencePools, ns_, "bad-0", kube::PatchType::kMerge,
                           {{"spec", {{"selector", {{"matchLabels", {{"app", "chat"}}}}}}}}));
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const auto s = Status("bad-0");
        return ConditionStatus(s, "SpecValid") == "True" && s.ready_workers == 1 &&
               s.observed_generation == 2;
      },
      kPatience))
      << api::ToJson(Status("bad-0")).dump();

  // kubectl describe shows the Events: the warning, then the recovery.
  ASSERT_TRUE(recorder_->Flush(std::chrono::seconds(30)));
  std::string described;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        testing::ChildProcess kubectl(
            {"/usr/bin/env", "kubectl", "describe", "--kubeconfig=" + plane_->Var("EOC_KUBECONFIG"),
             "-n", ns_, "inferencepool", "bad-0"},
            true);
        kubectl.Wait();
        described = kubectl.Output();
        return described.find("SpecValid") != std::string::npos &&
               described.find("InvalidSpec") != std::string::npos;
      },
      kPatience))
      << described;
  EXPECT_THAT(described, HasSubstr("Warning"));
  EXPECT_THAT(described, HasSubstr("spec.selector"));
  EXPECT_THAT(described, HasSubstr("the spec is valid again"));
}

}  // namespace
}  // namespace eoc::controller
