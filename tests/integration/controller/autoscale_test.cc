// The autoscaler end to end: the eoc-controller binary on the shared control plane (the
// kube-controller-manager turning /scale into pods, the node agent playing the kubelet with fake
// vLLM workers whose load the test sets), with short delays. Load rises and the Deployment grows
// after the upscale delay, its new pods joining the routing table; load falls and it shrinks after
// the downscale delay, the pods the ReplicaSet removes drained first and /scale written only once
// they are idle (or pinned with the deletion cost, as for 1.22, when told to); a pool without
// requests goes to minReplicas; replicas someone else sets are
// adopted; an HPA on the same Deployment means no writes; mode Recommend never writes /scale; the
// Events show in `kubectl describe`; 1,000 picks whose clients leave after a pipelined byte leave
// the queue and scale nothing. Assertions are on what is written, never on how fast.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "common/files.h"
#include "eventually.h"
#include "fleet_test.h"
#include "manifests.h"
#include "raw_client.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::kPatience;
using testing::kPools;
namespace resources = kube::resources;

const kube::ResourceRef kHorizontalPodAutoscalers{"autoscaling", "v1", "horizontalpodautoscalers"};

// A pool of `app` scaling Deployment `app`: scraped every second, 4 ongoing requests a replica,
// delays of 2 s up and 4 s down, 1 to 4 replicas; `autoscaling` overrides.
json Pool(const std::string& app, const json& autoscaling = json::object()) {
  json pool = testing::PoolOf(app, {{"intervalSeconds", 1}, {"timeoutSeconds", 1}});
  pool["spec"]["scaleTargetRef"] = {
      {"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", app}};
  json a = {{"minReplicas", 1},         {"maxReplicas", 4},           {"targetOngoingRequests", 4},
            {"upscaleDelaySeconds", 2}, {"downscaleDelaySeconds", 4}, {"lookBackPeriodSeconds", 2}};
  a.update(autoscaling);
  pool["spec"]["autoscaling"] = a;
  return pool;
}

class AutoscaleIntegrationTest : public testing::FleetTest {
 protected:
  std::vector<std::string> ControllerFlags() const override {
    return {"--autoscaler-tick-ms", "250"};
  }

  std::int32_t SpecReplicas(const std::string& deployment) const {
    auto d = client_->Get(resources::kDeployments, ns_, deployment);
    return d ? (*d)["spec"].value("replicas", -1) : -1;
  }

  json PoolStatus(const std::string& pool) const {
    auto p = client_->Get(kPools, ns_, pool);
    return p && p->contains("status") ? (*p)["status"] : json::object();
  }

  // The ScalingActive condition's "status/reason"; "" while there is none.
  std::string Scaling(const std::string& pool) const {
    for (const json& c : PoolStatus(pool).value("conditions", json::array())) {
      if (c.value("type", "") == "ScalingActive") {
        return c.value("status", "") + "/" + c.value("reason", "");
      }
    }
    return "";
  }

  // The reasons of the Events about InferencePool `pool`, in the order listed.
  std::vector<std::string> EventReasons(const std::string& pool) const {
    std::vector<std::string> reasons;
    auto list = client_->List(resources::kEvents, ns_,
                              {.field_selector = "involvedObject.kind=InferencePool,"
                                                 "involvedObject.name=" +
                                                 pool});
    if (!list) return reasons;
    for (const json& e : list->items) reasons.push_back(e.value("reason", ""));
    return reasons;
  }

  bool HasEvent(const std::string& pool, const std::string& reason) const {
    const auto reasons = EventReasons(pool);
    return std::find(reasons.begin(), reasons.end(), reason) != reasons.end();
  }

  // Every Running pod of `app` serving `running` requests.
  void SetLoad(const std::string& app, std::int64_t running) {
    for (const std::string& pod : RunningPods(app)) {
      if (auto worker = agent_->Worker(ns_, pod)) worker->SetLoad({.running = running});
    }
  }

  // Pod `pod` (of the test's namespace) serving `running` requests.
  void SetPodLoad(const std::string& pod, std::int64_t running) {
    auto worker = agent_->Worker(ns_, pod);
    ASSERT_NE(worker, nullptr) << pod;
    worker->SetLoad({.running = running});
  }

  // The pods the pool's routing table marks draining, sorted.
  std::vector<std::string> PublishedDraining(const std::string& pool) const {
    std::vector<std::string> out;
    const json routing = PoolStatus(pool).value("routing", json::object());
    for (const json& w : routing.value("workers", json::array())) {
      if (w.value("draining", false)) out.push_back(w.value("pod", ""));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Scales Deployment `app` up one pod at a time to `replicas`, each pod Running at least a
  // second after the one before, so that their Ready times (whole seconds) differ. Returns the
  // pods, oldest first.
  std::vector<std::string> GrowOneByOne(const std::string& app, std::int32_t replicas) {
    std::vector<std::string> order;
    for (std::int32_t n = 1; n <= replicas; ++n) {
      if (n > 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
        EXPECT_TRUE(client_->Patch(resources::kDeployments, ns_, app, kube::PatchType::kMerge,
                                   {{"spec", {{"replicas", n}}}}));
      }
      const auto pods = AwaitRunningPods(app, static_cast<std::size_t>(n));
      for (const std::string& pod : pods) {
        if (std::find(order.begin(), order.end(), pod) == order.end()) order.push_back(pod);
      }
    }
    return order;
  }

  // /scale stays at `replicas` over `ticks` observations half a second apart.
  bool Stays(const std::string& deployment, std::int32_t replicas, int ticks) const {
    for (int i = 0; i < ticks; ++i) {
      if (SpecReplicas(deployment) != replicas) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return true;
  }
};

TEST_F(AutoscaleIntegrationTest, GrowsUnderLoadAndShrinksAfterIt) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w")));
  ASSERT_EQ(AwaitRunningPods("w", 1).size(), 1U);
  ASSERT_TRUE(Eventually([&] { return Scaling("w") == "True/Active"; }, kPatience))
      << controller_->Output();

  // 10 ongoing over a target of 4: 3 replicas, once the upscale delay has passed.
  SetLoad("w", 10);
  ASSERT_TRUE(Eventually([&] { return SpecReplicas("w") == 3; }, kPatience))
      << controller_->Output();
  EXPECT_TRUE(
      Eventually([&] { return PoolStatus("w").value("desiredReplicas", -1) == 3; }, kPatience));
  EXPECT_FALSE(PoolStatus("w").value("lastScaleTime", "").empty());
  EXPECT_TRUE(Eventually([&] { return HasEvent("w", "ScaledUp"); }, kPatience));
  // The new pods become workers: all three in the routing table.
  ASSERT_EQ(AwaitRunningPods("w", 3).size(), 3U);
  ASSERT_TRUE(Eventually(
      [&] {
        const auto w = PublishedWeights("w");
        return w && w->size() == 3;
      },
      kPatience));

  // The load goes: back to minReplicas after the downscale delay.
  SetLoad("w", 0);
  ASSERT_TRUE(Eventually([&] { return SpecReplicas("w") == 1; }, kPatience))
      << controller_->Output();
  EXPECT_TRUE(Eventually([&] { return HasEvent("w", "ScaledDown"); }, kPatience));
  // The status follows the write (a patch right after it).
  EXPECT_TRUE(
      Eventually([&] { return PoolStatus("w").value("desiredReplicas", -1) == 1; }, kPatience));

  // The Events show where a user looks.
  const std::string kubectl = FindExecutable("kubectl").value_or("");
  if (kubectl.empty()) GTEST_SKIP() << "kubectl is not on PATH";
  testing::ChildProcess describe({kubectl, "--kubeconfig", plane_->Var("EOC_KUBECONFIG"), "-n", ns_,
                                  "describe", "inferencepool", "w"},
                                 /*merge_stderr=*/true);
  EXPECT_EQ(describe.Wait(), 0);
  EXPECT_THAT(describe.Output(), ::testing::HasSubstr("ScaledUp"));
  EXPECT_THAT(describe.Output(), ::testing::HasSubstr("ScaledDown"));
}

TEST_F(AutoscaleIntegrationTest, APoolWithoutRequestsGoesDownToMinReplicas) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 3)));
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w", {{"minReplicas", 2}})));
  ASSERT_TRUE(Eventually([&] { return SpecReplicas("w") == 2; }, kPatience))
      << controller_->Output();
  EXPECT_TRUE(Stays("w", 2, 10));
}

TEST_F(AutoscaleIntegrationTest, ReplicasSetBySomeoneElseAreAdopted) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w", {{"downscaleDelaySeconds", 30}})));
  ASSERT_TRUE(
      Eventually([&] { return PoolStatus("w").value("desiredReplicas", -1) == 1; }, kPatience))
      << controller_->Output();
  // A person scales by hand; the load (none) would want 1, but their 3 stand.
  ASSERT_TRUE(client_->SetReplicas(resources::kDeployments, ns_, "w", 3));
  ASSERT_TRUE(Eventually([&] { return Scaling("w") == "False/ExternalChange"; }, kPatience))
      << controller_->Output();
  EXPECT_TRUE(Eventually([&] { return HasEvent("w", "ExternalChange"); }, kPatience));
  EXPECT_EQ(PoolStatus("w").value("desiredReplicas", -1), 3);
  EXPECT_TRUE(Stays("w", 3, 10));
}

TEST_F(AutoscaleIntegrationTest, AHorizontalPodAutoscalerOnTheDeploymentMeansNoWrites) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  const json hpa = {
      {"apiVersion", "autoscaling/v1"},
      {"kind", "HorizontalPodAutoscaler"},
      {"metadata", {{"name", "w-hpa"}}},
      {"spec",
       {{"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "w"}}},
        {"minReplicas", 1},
        {"maxReplicas", 5},
        {"targetCPUUtilizationPercentage", 50}}}};
  ASSERT_TRUE(client_->Create(kHorizontalPodAutoscalers, ns_, hpa));
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w")));
  ASSERT_EQ(AwaitRunningPods("w", 1).size(), 1U);
  SetLoad("w", 16);  // would want 4
  ASSERT_TRUE(
      Eventually([&] { return Scaling("w") == "False/HorizontalPodAutoscaler"; }, kPatience))
      << controller_->Output();
  EXPECT_TRUE(Stays("w", 1, 10));
}

TEST_F(AutoscaleIntegrationTest, RecommendNeverWritesScale) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w", {{"mode", "Recommend"}})));
  ASSERT_EQ(AwaitRunningPods("w", 1).size(), 1U);
  SetLoad("w", 12);  // would want 3
  ASSERT_TRUE(
      Eventually([&] { return PoolStatus("w").value("desiredReplicas", -1) == 3; }, kPatience))
      << controller_->Output();
  EXPECT_TRUE(Eventually([&] { return Scaling("w") == "True/Recommending"; }, kPatience));
  EXPECT_TRUE(Eventually([&] { return HasEvent("w", "ScaleRecommended"); }, kPatience));
  EXPECT_TRUE(Stays("w", 1, 6));
}

// The finding this holds fixed: picks that a client sent, then one more pipelined byte, then
// closed kept their places to the queue timeout, so 1,000 of them filled a pool's queue with no
// connection open, every real client got 429, and the autoscaler scaled the Deployment from 1 to
// 8. Here 1,000 such clients at a pool whose one worker has no KV room: their picks leave the
// queue within seconds, a real client's pick waits (504 at its own short wait, not 429), and the
// Deployment stays at one replica past the upscale delay.
TEST_F(AutoscaleIntegrationTest, PicksWhoseClientsLeaveAfterAPipelinedByteLeaveTheQueue) {
  constexpr int kClients = 1000;
  rlimit files{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &files), 0);
  files.rlim_cur = std::max<rlim_t>(files.rlim_cur, std::min<rlim_t>(files.rlim_max, 4096));
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_cur < kClients + 256) GTEST_SKIP() << "open-files limit " << files.rlim_cur;

  ASSERT_TRUE(
      client_->Create(resources::kDeployments, ns_,
                      testing::WorkerDeployment(
                          "w", 1, {.pod_annotations = {{testing::kKvCacheUsageAnnotation, "1"}}})));
  // A longer upscale delay than the flood takes to send: only picks that stay scale the pool.
  json pool = Pool("w", {{"maxReplicas", 8}, {"upscaleDelaySeconds", 8}});
  pool["spec"]["routing"] = {{"admission", {{"maxQueue", kClients}}}};
  ASSERT_TRUE(client_->Create(kPools, ns_, pool));
  ASSERT_EQ(AwaitRunningPods("w", 1).size(), 1U);
  ASSERT_TRUE(Eventually([&] { return Scaling("w") == "True/Active"; }, kPatience))
      << controller_->Output();

  const auto post = [&](const json& body) {
    const std::string text = body.dump();
    return "POST /v1/pick HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(text.size()) +
           "\r\n\r\n" + text;
  };
  // A real client's pick, waiting 200 ms at most: its status.
  const auto real_pick = [&] {
    testing::RawClient client(static_cast<std::uint16_t>(pick_port_));
    if (!client.Send(post({{"pool", ns_ + "/w"}, {"wait_ms", 200}}))) return 0;
    const auto answer = client.ReadResponse();
    return answer ? answer->status : 0;
  };
  // Once the worker's full KV cache is scraped, a pick finds no room and waits out its wait.
  ASSERT_TRUE(Eventually([&] { return real_pick() == 504; }, kPatience)) << controller_->Output();

  const std::string depth = R"(eoc_pick_queue_depth{pool=")" + ns_ + R"(/w"})";
  const std::string pick = post({{"pool", ns_ + "/w"}});
  std::vector<std::unique_ptr<testing::RawClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<testing::RawClient>(static_cast<std::uint16_t>(pick_port_)));
    ASSERT_TRUE(clients.back()->Send(pick));
  }
  // Every pick waits (the server has read each request) before its byte comes.
  ASSERT_TRUE(Eventually([&] { return testing::Sample(Metrics(), depth) == kClients; }, kPatience))
      << testing::Sample(Metrics(), depth);
  for (const auto& client : clients) ASSERT_TRUE(client->Send("x"));
  clients.clear();  // each closes

  EXPECT_TRUE(
      Eventually([&] { return testing::Sample(Metrics(), depth) == 0; }, std::chrono::seconds(5)))
      << "picks still waiting: " << testing::Sample(Metrics(), depth);
  EXPECT_EQ(real_pick(), 504) << "a real client's pick waits, not refused 429";
  // Past the upscale delay and the look-back: nothing to scale for.
  EXPECT_TRUE(Stays("w", 1, 24)) << "replicas " << SpecReplicas("w");
}

// Two replicas on one Lease: the first started leads.
class AutoscaleReplicasTest : public AutoscaleIntegrationTest {
 protected:
  std::vector<std::string> ControllerFlags() const override {
    std::vector<std::string> flags = AutoscaleIntegrationTest::ControllerFlags();
    for (const char* f : {"--leader-elect", "--leader-election-namespace"}) flags.emplace_back(f);
    flags.push_back(ns_);
    flags.emplace_back("--leader-election-id");
    flags.push_back("eoc-" + ns_);
    return flags;
  }

  // A second replica, once it serves metrics and is not the leader.
  std::unique_ptr<testing::ChildProcess> StartFollower(int metrics_port, int pick_port) {
    auto follower = std::make_unique<testing::ChildProcess>(ControllerArgs(metrics_port, pick_port),
                                                            /*merge_stderr=*/true);
    const std::string leading = "eoc_leader_election_leading{lease=\"eoc-" + ns_ + "\"}";
    EXPECT_TRUE(Eventually(
        [&] {
          return testing::Sample(testing::HttpGet(metrics_port, "/metrics").body, leading) == 0;
        },
        kPatience))
        << follower->Output();
    return follower;
  }
};

TEST_F(AutoscaleReplicasTest, APickWaitingOnAFollowerBringsAnEmptyPoolBack) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  ASSERT_TRUE(client_->Create(kPools, ns_,
                              Pool("w", {{"minReplicas", 0},
                                         {"downscaleDelaySeconds", 2},
                                         {"downscaleToZeroDelaySeconds", 2}})));
  // No requests: down to zero.
  ASSERT_TRUE(
      Eventually([&] { return SpecReplicas("w") == 0 && RunningPods("w").empty(); }, kPatience))
      << controller_->Output();
  const int pick_port = testing::FreePort();
  const int metrics_port = testing::FreePort();
  const auto follower = StartFollower(metrics_port, pick_port);
  ASSERT_FALSE(HasFailure());
  // The follower has the pool (reconciled, in its routing directory).
  const std::string workers = R"(eoc_pool_workers{namespace=")" + ns_ + R"(",pool="w"})";
  ASSERT_TRUE(Eventually(
      [&] {
        return testing::Sample(testing::HttpGet(metrics_port, "/metrics").body, workers) == 0;
      },
      kPatience))
      << follower->Output();

  // A pick on the follower waits: its report brings the pool back to one, and it is answered.
  const json body = {{"pool", ns_ + "/w"}, {"prompt_tokens", 1}, {"expected_tokens", 1}};
  const std::string text = body.dump();
  std::unique_ptr<testing::RawClient> client;
  ASSERT_TRUE(Eventually(
      [&] {
        try {
          client = std::make_unique<testing::RawClient>(static_cast<std::uint16_t>(pick_port));
          return true;
        } catch (const std::runtime_error&) {
          return false;  // not listening yet
        }
      },
      kPatience));
  ASSERT_TRUE(client->Send("POST /v1/pick HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                           std::to_string(text.size()) + "\r\n\r\n" + text));
  std::optional<testing::RawResponse> answer;
  for (int i = 0; i < 9 && !answer; ++i) answer = client->ReadResponse();
  ASSERT_TRUE(answer) << follower->Output() << controller_->Output();
  EXPECT_EQ(answer->status, 200) << answer->body;
  EXPECT_EQ(SpecReplicas("w"), 1);
  EXPECT_TRUE(Eventually([&] { return HasEvent("w", "ScaledUp"); }, kPatience));
}

TEST_F(AutoscaleReplicasTest, ANewLeaderNeitherDoubleScalesNorCallsItsPredecessorExternal) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w", {{"downscaleDelaySeconds", 20}})));
  ASSERT_EQ(AwaitRunningPods("w", 1).size(), 1U);
  SetLoad("w", 12);  // 3 replicas
  ASSERT_TRUE(Eventually([&] { return SpecReplicas("w") == 3; }, kPatience))
      << controller_->Output();
  ASSERT_EQ(AwaitRunningPods("w", 3).size(), 3U);
  SetLoad("w", 4);  // 3 workers at 4 each: exactly 3
  ASSERT_TRUE(
      Eventually([&] { return PoolStatus("w").value("desiredReplicas", -1) == 3; }, kPatience));
  const auto follower = StartFollower(testing::FreePort(), testing::FreePort());
  ASSERT_FALSE(HasFailure());

  // The load falls: the leader's downscale timer starts, and the leader dies within its delay.
  SetLoad("w", 0);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  controller_->Signal(SIGKILL);
  (void)controller_->WaitFor(std::chrono::seconds(10));
  controller_.reset();
  // The new leader takes the replicas its predecessor wrote as its own, and scales down once,
  // after a full delay of its own.
  ASSERT_TRUE(Eventually([&] { return SpecReplicas("w") == 1; }, std::chrono::seconds(120)))
      << follower->Output();
  const auto scaled_down = [&] {
    const auto reasons = EventReasons("w");  // the recorder writes Events in the background
    return std::count(reasons.begin(), reasons.end(), "ScaledDown");
  };
  EXPECT_TRUE(Eventually([&] { return scaled_down() >= 1; }, kPatience)) << follower->Output();
  EXPECT_TRUE(Eventually([&] { return Scaling("w") == "True/Active"; }, kPatience));
  EXPECT_TRUE(Stays("w", 1, 4));
  EXPECT_EQ(scaled_down(), 1) << follower->Output();
  EXPECT_FALSE(HasEvent("w", "ExternalChange"));
  follower->Signal(SIGTERM);
  (void)follower->WaitFor(std::chrono::seconds(30));
}

TEST_F(AutoscaleIntegrationTest, ScaleInDrainsThePodsTheReplicaSetRemovesFirst) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 1)));
  const std::vector<std::string> pods = GrowOneByOne("w", 3);
  ASSERT_EQ(pods.size(), 3U);
  // On 1.20 the ReplicaSet removes the most recently ready first: the two newest go.
  std::vector<std::string> newest = {pods[1], pods[2]};
  std::sort(newest.begin(), newest.end());
  for (const std::string& pod : pods) SetPodLoad(pod, 1);  // 3 over 4 a replica: 1 is enough
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w", {{"drainTimeoutSeconds", 600}})));

  ASSERT_TRUE(Eventually([&] { return PublishedDraining("w") == newest; }, kPatience))
      << controller_->Output();
  EXPECT_EQ(Scaling("w"), "True/Draining");
  EXPECT_TRUE(HasEvent("w", "Draining"));
  // Not written while one of them still serves a request.
  SetPodLoad(pods[1], 0);
  EXPECT_TRUE(Stays("w", 3, 8)) << controller_->Output();
  EXPECT_EQ(PublishedDraining("w"), newest);
  // Both idle: /scale is written, and the ReplicaSet removes the two that drained.
  SetPodLoad(pods[2], 0);
  ASSERT_TRUE(Eventually([&] { return SpecReplicas("w") == 1; }, kPatience))
      << controller_->Output();
  ASSERT_TRUE(Eventually([&] { return RunningPods("w").size() == 1; }, kPatience));
  EXPECT_EQ(RunningPods("w"), std::vector<std::string>{pods[0]});
  EXPECT_TRUE(Eventually([&] { return PublishedDraining("w").empty(); }, kPatience));
  EXPECT_TRUE(Eventually([&] { return Scaling("w") == "True/Active"; }, kPatience));
}

TEST_F(AutoscaleIntegrationTest, ADrainThatTimesOutScalesInAnyway) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 2)));
  const std::vector<std::string> pods = AwaitRunningPods("w", 2);
  ASSERT_EQ(pods.size(), 2U);
  for (const std::string& pod : pods) SetPodLoad(pod, 1);  // never idle
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w", {{"drainTimeoutSeconds", 3}})));
  ASSERT_TRUE(Eventually([&] { return PublishedDraining("w").size() == 1; }, kPatience))
      << controller_->Output();
  ASSERT_TRUE(Eventually([&] { return SpecReplicas("w") == 1; }, kPatience))
      << controller_->Output();
  EXPECT_TRUE(Eventually(
      [&] {
        auto list = client_->List(resources::kEvents, ns_,
                                  {.field_selector = "involvedObject.name=w,reason=ScaledDown"});
        return list && !list->items.empty() &&
               list->items.front().value("message", "").find("timed out with 1 requests") !=
                   std::string::npos;
      },
      kPatience));
}

// The controller told that the cluster honours the deletion cost (as 1.22 and later do).
class AutoscaleDeletionCostTest : public AutoscaleIntegrationTest {
 protected:
  std::vector<std::string> ControllerFlags() const override {
    std::vector<std::string> flags = AutoscaleIntegrationTest::ControllerFlags();
    flags.emplace_back("--pod-deletion-cost");
    flags.emplace_back("always");
    return flags;
  }

  std::string DeletionCost(const std::string& pod) const {
    auto object = client_->Get(resources::kPods, ns_, pod);
    if (!object) return "(gone)";
    return (*object)["metadata"]
        .value("annotations", json::object())
        .value("controller.kubernetes.io/pod-deletion-cost", "");
  }
};

TEST_F(AutoscaleDeletionCostTest, TheLeastBusyPodIsDrainedAndPinned) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 2)));
  const std::vector<std::string> pods = AwaitRunningPods("w", 2);
  ASSERT_EQ(pods.size(), 2U);
  SetPodLoad(pods[0], 2);  // 2 over 4 a replica: 1 is enough; pods[1], idle, goes
  SetPodLoad(pods[1], 0);
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w")));
  ASSERT_TRUE(Eventually([&] { return DeletionCost(pods[1]) == "-2147483648"; }, kPatience))
      << controller_->Output();
  EXPECT_EQ(DeletionCost(pods[0]), "");
  // Idle: written (which pod a 1.20 ReplicaSet then removes is its own ranking's business).
  ASSERT_TRUE(Eventually([&] { return SpecReplicas("w") == 1; }, kPatience))
      << controller_->Output();
  EXPECT_TRUE(HasEvent("w", "Draining"));
}

}  // namespace
}  // namespace eoc::controller
