// The autoscaler's wiring against fakes of its seams (the caches, /scale, Events) and a real
// routing directory for the loads, on a manual clock: when it writes /scale, what it records in
// the status and Events, and when it leaves the replicas to someone else.
#include "controller/pool_scaler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controller/pool_status.h"
#include "controller/routing_config.h"
#include "pods.h"
#include "pool_fakes.h"
#include "routing/pool_directory.h"

namespace eoc::controller {
namespace {

using std::chrono::seconds;
using testing::FakeEvents;
using testing::FakeStore;
using testing::kKey;
using testing::Pod;
using testing::PoolJson;

// /scale of one Deployment, scripted.
class FakeScales final : public ScaleClient {
 public:
  kube::Result<ScaleState> Read(const std::string& ns, const api::ScaleTargetRef& ref) override {
    ++reads;
    EXPECT_EQ(ns, "prod");
    EXPECT_EQ(ref.kind, kind);
    EXPECT_EQ(ref.name, "chat");
    if (read_error) return *read_error;
    return state;
  }
  kube::Result<ScaleState> Write(const std::string& /*ns*/, const api::ScaleTargetRef& /*ref*/,
                                 const std::string& resource_version,
                                 std::int32_t replicas) override {
    if (!conflicts.empty()) {
      // Someone moved /scale: its resourceVersion (and maybe its replicas) changed.
      state.resource_version = std::to_string(++version);
      if (conflicts.front() >= 0) state.replicas = conflicts.front();
      conflicts.pop_front();
      return kube::Status{409, "Conflict", "the object has been modified", std::nullopt};
    }
    EXPECT_EQ(resource_version, state.resource_version);
    writes.push_back(replicas);
    state.replicas = replicas;
    state.resource_version = std::to_string(++version);
    return state;
  }
  kube::Result<std::vector<std::string>> Autoscalers(const std::string& /*ns*/,
                                                     const api::ScaleTargetRef& /*ref*/) override {
    return hpas;
  }
  kube::Result<bool> PatchStatus(const std::string& /*ns*/, const std::string& pool,
                                 std::int32_t desired, const std::string& last) override {
    EXPECT_EQ(pool, "chat");
    patches.push_back(desired);
    last_scale_time = last;
    return true;
  }

  kube::Result<bool> RemoveAnnotations(const std::string& /*ns*/, const std::string& /*pool*/,
                                       const std::vector<std::string>& keys) override {
    removed.insert(removed.end(), keys.begin(), keys.end());
    return true;
  }

  kube::Result<bool> SetDeletionCost(const std::string& ns, const std::string& pod,
                                     std::optional<std::string_view> cost) override {
    EXPECT_EQ(ns, "prod");
    if (cost) {
      costs[pod] = std::string(*cost);
    } else {
      costs.erase(pod);
    }
    return true;
  }
  kube::Result<int> ServerMinor() override { return minor; }

  std::string kind = "Deployment";
  int minor = 20;
  std::map<std::string, std::string> costs;  // pod -> its deletion cost
  ScaleState state{.replicas = 2, .resource_version = "10"};
  int version = 10;
  std::optional<kube::Status> read_error;
  std::deque<std::int32_t> conflicts;  // each: the replicas someone else sets (-1: unchanged)
  std::vector<std::string> hpas;
  std::vector<std::int32_t> writes;
  std::vector<std::int32_t> patches;
  std::vector<std::string> removed;
  std::string last_scale_time;
  int reads = 0;
};

nlohmann::json AutoscaledPool(const nlohmann::json& autoscaling,
                              const nlohmann::json& status = nullptr) {
  nlohmann::json pool = PoolJson("1");
  pool["spec"]["scaleTargetRef"] = {
      {"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "chat"}};
  nlohmann::json a = {{"minReplicas", 0},
                      {"maxReplicas", 10},
                      {"targetOngoingRequests", 10},
                      {"upscaleDelaySeconds", 5},
                      {"downscaleDelaySeconds", 20},
                      {"downscaleToZeroDelaySeconds", 10},
                      {"lookBackPeriodSeconds", 2}};
  if (autoscaling.is_object()) a.update(autoscaling);
  pool["spec"]["autoscaling"] = a;
  if (!status.is_null()) pool["status"] = status;
  return pool;
}

class PoolScalerTest : public ::testing::Test {
 protected:
  PoolScalerTest() : budget_(1000), directory_(budget_, prefix_budget_) {}

  void SetUp() override { Use(AutoscaledPool({})); }

  // The pool as the informer has it, with `workers` ready pods: chat-<i>, ready i minutes ago
  // (chat-0 most recently).
  void Use(const nlohmann::json& pool, int workers = 2) {
    store_.PutPool(pool);
    const api::InferencePool& p = store_.GetPool(kKey)->pool;
    ASSERT_TRUE(p.errors.empty()) << p.errors.front().ToString();
    std::vector<std::shared_ptr<const kube::PodView>> pods;
    pods.reserve(workers);
    for (int i = 0; i < workers; ++i) {
      kube::PodView pod = *Pod("chat-" + std::to_string(i), "10.0.0." + std::to_string(i + 1));
      pod.ready_since = clock_.WallNow() - std::chrono::minutes(i);
      pods.push_back(std::make_shared<const kube::PodView>(std::move(pod)));
    }
    store_.SetPods(pods);
    members_ = std::make_shared<PoolMembers>(SelectWorkers(
        p, pods, [](const std::string&) { return std::shared_ptr<const kube::NodeView>(); }));
    // Published, so that every replica's routing state has the workers (and their loads).
    nlohmann::json published = pool;
    published["status"]["routing"] = api::ToJson(api::InferencePoolStatus{
        .routing = BuildRoutingTable(p.spec, members_->workers, std::nullopt)})["routing"];
    store_.PutPool(published);
    UpdatePoolDirectory(directory_, nullptr, store_.GetPool(kKey)->pool, members_->workers,
                        clock_.Now());
  }

  // Each worker scraped with `ongoing` running requests (those in `idle` with none).
  void Load(double ongoing, const std::vector<std::string>& idle = {}) {
    const auto state = directory_.Find(kKey);
    ASSERT_NE(state, nullptr);
    for (const routing::Worker& w : members_->workers) {
      const bool none = std::find(idle.begin(), idle.end(), PodName(w)) != idle.end();
      state->ObserveLoad(w.key, {.running = none ? 0 : ongoing, .available = true}, clock_.Now());
    }
  }

  PoolScaler& Scaler() {
    if (!scaler_) {
      scaler_ = std::make_unique<PoolScaler>(
          store_, [this](const std::string&) { return members_; }, scales_, events_,
          PoolScalerOptions{.directory = &directory_,
                            .changed = [this](const std::string&) { ++changed_; }},
          clock_, nullptr);
      scaler_->SetLeading(true);
    }
    return *scaler_;
  }

  // `n` ticks a second apart, the first now; the load re-scraped before each.
  void Ticks(int n, double ongoing, const std::vector<std::string>& idle = {}) {
    for (int i = 0; i < n; ++i) {
      if (i > 0) clock_.Advance(seconds(1));
      Load(ongoing, idle);
      auto r = Scaler().Reconcile(kKey);
      ASSERT_TRUE(r) << r.error().ToString();
      EXPECT_EQ(r->requeue_after, std::chrono::milliseconds(1000));
    }
  }

  std::string Reason() {
    const auto report = Scaler().Report(kKey);
    return report ? report->condition.reason : "";
  }

  std::vector<std::string> Draining() {
    const auto report = Scaler().Report(kKey);
    return report ? report->draining : std::vector<std::string>{"no report"};
  }

  // The pod leaves the workload (the ReplicaSet deleted it) and the pool.
  void Remove(const std::string& pod) {
    auto pods = store_.ListPods();
    std::erase_if(pods, [&](const auto& p) { return p->name == pod; });
    store_.SetPods(pods);
    std::erase_if(members_->workers, [&](const routing::Worker& w) { return PodName(w) == pod; });
    members_->notes.resize(members_->workers.size());
  }

  ManualClock clock_;
  routing::SessionBudget budget_;
  routing::PrefixBudget prefix_budget_;
  routing::PoolDirectory directory_;
  FakeStore store_;
  FakeScales scales_;
  FakeEvents events_;
  std::shared_ptr<PoolMembers> members_;
  std::unique_ptr<PoolScaler> scaler_;
  int changed_ = 0;
};

TEST_F(PoolScalerTest, ScalesUpAfterTheDelayAndSaysSo) {
  // 2 workers at 40 ongoing each: 80 over a target of 10 wants 8.
  Ticks(5, 40);
  EXPECT_TRUE(scales_.writes.empty());
  Ticks(2, 40);  // the 6th tick is 5 s after the first
  ASSERT_EQ(scales_.writes, std::vector<std::int32_t>{8});
  EXPECT_EQ(scales_.patches, std::vector<std::int32_t>{8});
  EXPECT_FALSE(scales_.last_scale_time.empty());
  ASSERT_EQ(events_.events.size(), 1U);
  EXPECT_EQ(events_.events[0].reason, "ScaledUp");
  EXPECT_EQ(events_.events[0].message,
            "scaled Deployment chat from 2 to 8: 80 ongoing requests over 2 ready workers, 10 "
            "each (desired 8)");
  const auto report = Scaler().Report(kKey);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->condition.status, "True");
  EXPECT_EQ(report->condition.reason, "Active");
  EXPECT_EQ(report->desired_replicas, 8);
  EXPECT_EQ(report->last_scale_time, scales_.last_scale_time);
  EXPECT_GT(changed_, 0);
}

TEST_F(PoolScalerTest, ScalesInAfterItsDelayOnceTheWorkerItDrainsIsIdle) {
  Use(AutoscaledPool({}, {{"desiredReplicas", 2}}));
  Ticks(20, 2);  // 4 over 10: 1 wanted, 20 s delay
  EXPECT_TRUE(scales_.writes.empty());
  Ticks(2, 2);
  // Due, but first the pod the ReplicaSet will remove (on 1.20: the most recently ready) drains.
  EXPECT_TRUE(scales_.writes.empty());
  EXPECT_EQ(Draining(), std::vector<std::string>{"chat-0"});
  EXPECT_EQ(Reason(), "Draining");
  ASSERT_FALSE(events_.events.empty());
  EXPECT_EQ(events_.events.back().reason, "Draining");
  EXPECT_EQ(events_.events.back().message,
            "draining chat-0 to scale Deployment chat from 2 to 1: /scale is written once they "
            "have no requests, or after 120 s");
  Ticks(10, 2);  // still serving two requests
  EXPECT_TRUE(scales_.writes.empty());
  EXPECT_EQ(Scaler().Report(kKey)->condition.message,
            "draining chat-0 before scaling Deployment chat from 2 to 1: 2 requests still in "
            "flight");
  // Idle: written on the next tick (more than a scrape interval after the drain began).
  Ticks(1, 2, {"chat-0"});
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{1});
  EXPECT_EQ(events_.events.back().reason, "ScaledDown");
  EXPECT_EQ(events_.events.back().message,
            "scaled Deployment chat from 2 to 1: 2 ongoing requests over 1 ready workers, 10 each "
            "(desired 0.2); after draining chat-0");
  // It stays draining until the ReplicaSet has removed it, and no longer after.
  Ticks(3, 2, {"chat-0"});
  EXPECT_EQ(Draining(), std::vector<std::string>{"chat-0"});
  Remove("chat-0");
  Ticks(1, 2);
  EXPECT_TRUE(Draining().empty());
  EXPECT_EQ(Reason(), "Active");
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{1});
}

TEST_F(PoolScalerTest, ADrainThatTimesOutWritesAnyway) {
  Use(AutoscaledPool({{"drainTimeoutSeconds", 30}}, {{"desiredReplicas", 2}}));
  Ticks(22, 2);
  ASSERT_EQ(Reason(), "Draining");
  Ticks(29, 2);  // 29 s after it began
  EXPECT_TRUE(scales_.writes.empty());
  Ticks(2, 2);  // 30 s
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{1});
  EXPECT_NE(events_.events.back().message.find(
                "; the drain of chat-0 timed out with 2 requests in flight"),
            std::string::npos)
      << events_.events.back().message;
}

TEST_F(PoolScalerTest, ADrainEndsWhenTheDecisionNoLongerShrinks) {
  Use(AutoscaledPool({}, {{"desiredReplicas", 2}}));
  Ticks(22, 2);
  ASSERT_EQ(Draining(), std::vector<std::string>{"chat-0"});
  // The load comes back: one worker (the other drains) at 20 wants 2, /scale's replicas, once its
  // look-back mean has risen and the upscale delay has passed.
  Ticks(7, 20);
  EXPECT_TRUE(scales_.writes.empty());
  EXPECT_TRUE(Draining().empty());
  EXPECT_EQ(events_.events.back().reason, "DrainCancelled");
  EXPECT_EQ(Reason(), "Active");
}

TEST_F(PoolScalerTest, WhereTheDeletionCostIsHonouredTheLeastBusyArePinned) {
  scales_.minor = 22;
  Use(AutoscaledPool({}, {{"desiredReplicas", 3}}), 3);
  scales_.state.replicas = 3;
  // A pin an earlier leader left on chat-2.
  auto pods = store_.ListPods();
  kube::PodView stale = *pods[2];
  stale.annotations = {{std::string(kube::kDeletionCostAnnotation), "-2147483648"}};
  pods[2] = std::make_shared<const kube::PodView>(std::move(stale));
  store_.SetPods(pods);
  scales_.costs["chat-2"] = "-2147483648";
  // 12 over 3 workers wants 2; chat-1, the least busy, is drained and pinned so that the
  // ReplicaSet removes it, and the stale pin goes.
  Ticks(22, 6, {"chat-1"});
  EXPECT_EQ(Draining(), std::vector<std::string>{"chat-1"});
  EXPECT_EQ(scales_.costs, (std::map<std::string, std::string>{{"chat-1", "-2147483648"}}));
  EXPECT_TRUE(scales_.writes.empty());  // its zero counts only a scrape interval on
  // Load comes back before it is written: the drain ends, its pin goes, and the pool grows.
  Ticks(7, 30);
  EXPECT_TRUE(Draining().empty());
  EXPECT_TRUE(scales_.costs.empty());
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{6});
  EXPECT_EQ(events_.events.back().reason, "ScaledUp");
}

TEST_F(PoolScalerTest, OnlyTheTargetsOwnPodsAreDrained) {
  // The pool selects two Deployments' pods (app=chat); its target's /scale selects only its own
  // (tier=a100). chat-0, the most recently ready, belongs to the other Deployment: its ReplicaSet
  // never removes it, so the target's next in the ranking, chat-1, drains instead.
  Use(AutoscaledPool({}, {{"desiredReplicas", 2}}), 3);
  auto pods = store_.ListPods();
  for (auto& pod : pods) {
    kube::PodView labelled = *pod;
    labelled.labels = {{"app", "chat"}, {"tier", pod->name == "chat-0" ? "h100" : "a100"}};
    pod = std::make_shared<const kube::PodView>(std::move(labelled));
  }
  store_.SetPods(pods);
  std::string error;
  scales_.state.selector = api::ParseLabelSelectorString("app=chat,tier=a100", error);
  ASSERT_TRUE(scales_.state.selector) << error;
  Ticks(22, 1);  // 3 over 10 wants 1
  EXPECT_EQ(Draining(), std::vector<std::string>{"chat-1"});
  Ticks(7, 1, {"chat-1"});  // idle, and a scrape interval on
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{1});
  // Once the ReplicaSet has removed chat-1, the target has its one pod: the drain is over, though
  // the pool still has two.
  Remove("chat-1");
  Ticks(1, 1);
  EXPECT_TRUE(Draining().empty());
}

TEST_F(PoolScalerTest, AStatefulSetDrainsItsHighestOrdinals) {
  scales_.kind = "StatefulSet";
  nlohmann::json pool = AutoscaledPool({}, {{"desiredReplicas", 3}});
  pool["spec"]["scaleTargetRef"] = {
      {"apiVersion", "apps/v1"}, {"kind", "StatefulSet"}, {"name", "chat"}};
  Use(pool, 3);
  scales_.state.replicas = 3;
  Ticks(22, 6);  // 18 over 3 workers wants 2: chat-2 goes, whatever the load or readiness says
  EXPECT_EQ(Draining(), std::vector<std::string>{"chat-2"});
  EXPECT_TRUE(scales_.costs.empty());  // a StatefulSet does not read the deletion cost
  EXPECT_TRUE(scales_.writes.empty());
  Ticks(7, 6, {"chat-2"});
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{2});
}

TEST_F(PoolScalerTest, AKindWhoseScaleInIsNotPredictedIsWrittenAtOnce) {
  scales_.kind = "Rollout";
  nlohmann::json pool = AutoscaledPool({}, {{"desiredReplicas", 2}});
  pool["spec"]["scaleTargetRef"] = {
      {"apiVersion", "argoproj.io/v1alpha1"}, {"kind", "Rollout"}, {"name", "chat"}};
  Use(pool);
  Ticks(1, 2);
  EXPECT_EQ(Reason(), "NoDrain");
  Ticks(21, 2);
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{1});
  EXPECT_TRUE(Draining().empty());
}

TEST_F(PoolScalerTest, ANewLeaderTakesItsPredecessorsWriteAsItsOwn) {
  Use(AutoscaledPool({}, {{"desiredReplicas", 2}, {"lastScaleTime", "2026-12-04T00:00:00Z"}}));
  Ticks(3, 10);  // exactly 2 wanted
  EXPECT_TRUE(scales_.writes.empty());
  EXPECT_TRUE(events_.events.empty());
  EXPECT_EQ(Reason(), "Active");
}

TEST_F(PoolScalerTest, ReplicasSetBySomeoneElseAreAdoptedAndNotFought) {
  Use(AutoscaledPool({}, {{"desiredReplicas", 4}}));
  scales_.state.replicas = 6;  // a person ran kubectl scale
  Ticks(1, 40);                // wants 8
  ASSERT_EQ(events_.events.size(), 1U);
  EXPECT_EQ(events_.events[0].reason, "ExternalChange");
  EXPECT_EQ(scales_.patches, std::vector<std::int32_t>{6});
  EXPECT_EQ(Reason(), "ExternalChange");
  EXPECT_EQ(Scaler().Report(kKey)->condition.status, "False");
  Ticks(19, 40);  // the downscale delay (20 s) has not passed
  EXPECT_TRUE(scales_.writes.empty());
  Ticks(3, 40);  // 20 s on: the decision, pointing up all along, is applied at once
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{8});
  EXPECT_EQ(Reason(), "Active");
}

TEST_F(PoolScalerTest, AHorizontalPodAutoscalerOnTheTargetMeansNoWrites) {
  scales_.hpas = {"chat-hpa"};
  Ticks(30, 40);
  EXPECT_TRUE(scales_.writes.empty());
  EXPECT_EQ(Reason(), "HorizontalPodAutoscaler");
  EXPECT_EQ(Scaler().Report(kKey)->condition.message,
            "HorizontalPodAutoscaler chat-hpa scales Deployment chat; this pool does not write "
            "its /scale");
}

TEST_F(PoolScalerTest, RecommendDecidesAndNeverWrites) {
  Use(AutoscaledPool({{"mode", "Recommend"}}, {{"desiredReplicas", 2}}));
  Ticks(7, 40);
  EXPECT_TRUE(scales_.writes.empty());
  EXPECT_EQ(scales_.patches, std::vector<std::int32_t>{8});
  ASSERT_EQ(events_.events.size(), 1U);
  EXPECT_EQ(events_.events[0].reason, "ScaleRecommended");
  EXPECT_EQ(Reason(), "Recommending");
  EXPECT_EQ(Scaler().Report(kKey)->desired_replicas, 8);
}

TEST_F(PoolScalerTest, ApplyingAfterRecommendingStartsFromTheReplicasAsTheyAre) {
  Use(AutoscaledPool({{"mode", "Recommend"}}, {{"desiredReplicas", 2}}));
  Ticks(7, 40);  // recommends 8
  ASSERT_EQ(Scaler().Report(kKey)->desired_replicas, 8);
  scales_.state.replicas = 5;  // someone scales meanwhile: not this pool's business yet
  clock_.Advance(seconds(6));  // /scale is read again
  Ticks(1, 40);
  EXPECT_TRUE(events_.events.size() == 1);  // ScaleRecommended only: no ExternalChange
  Use(AutoscaledPool({}, {{"desiredReplicas", 8}}));
  Ticks(7, 40);  // from 5, up to 8 after a delay of its own
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{8});
  EXPECT_EQ(events_.events.back().reason, "ScaledUp");
  EXPECT_EQ(events_.events.back().message.rfind("scaled Deployment chat from 5 to 8", 0), 0U);
}

TEST_F(PoolScalerTest, UnknownLoadHoldsTheReplicas) {
  Use(AutoscaledPool({}, {{"desiredReplicas", 2}}));
  for (int i = 0; i < 40; ++i) {  // no worker ever scraped
    ASSERT_TRUE(Scaler().Reconcile(kKey));
    clock_.Advance(seconds(1));
  }
  EXPECT_TRUE(scales_.writes.empty());
  EXPECT_EQ(Reason(), "MetricsUnknown");
}

TEST_F(PoolScalerTest, InitialReplicasOnlyOnATargetNeverScaled) {
  Use(AutoscaledPool({{"initialReplicas", 3}}));
  scales_.state.replicas = 1;
  Ticks(1, 10);
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{3});
  // Scaled before (a lastScaleTime): initialReplicas is not written again.
  scaler_.reset();
  scales_.writes.clear();
  scales_.state.replicas = 1;
  Use(AutoscaledPool({{"initialReplicas", 3}},
                     {{"desiredReplicas", 1}, {"lastScaleTime", "2026-12-04T00:00:00Z"}}));
  Ticks(1, 5);
  EXPECT_TRUE(scales_.writes.empty());
}

TEST_F(PoolScalerTest, AConflictIsRetriedOnlyWhileTheReplicasAreStillOurs) {
  Use(AutoscaledPool({}, {{"desiredReplicas", 2}}));
  scales_.conflicts = {-1};  // the Deployment's status moved: same replicas, new version
  Ticks(6, 40);
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{8});
  // Someone set 5 between the read and the write: not overwritten, adopted on the next tick.
  scaler_.reset();
  scales_.writes.clear();
  scales_.state.replicas = 2;
  events_.events.clear();
  scales_.conflicts = {5};
  Ticks(7, 40);
  EXPECT_TRUE(scales_.writes.empty());
  ASSERT_FALSE(events_.events.empty());
  EXPECT_EQ(events_.events.back().reason, "ExternalChange");
}

TEST_F(PoolScalerTest, PicksWaitingOnAnotherReplicaBringAnEmptyPoolBack) {
  nlohmann::json pool = AutoscaledPool({}, {{"desiredReplicas", 0}});
  pool["metadata"]["annotations"] = {{"eoc.dev/demand-other", "2 2026-12-04T01:00:00Z"}};
  Use(pool, 0);
  scales_.state.replicas = 0;
  ASSERT_TRUE(Scaler().Reconcile(kKey));  // first seen: not yet fresh
  EXPECT_TRUE(scales_.writes.empty());
  pool["metadata"]["annotations"]["eoc.dev/demand-other"] = "2 2026-12-04T01:00:01Z";
  Use(pool, 0);
  clock_.Advance(seconds(1));
  ASSERT_TRUE(Scaler().Reconcile(kKey));
  EXPECT_EQ(scales_.writes, std::vector<std::int32_t>{1});  // at once, no delay
  // A report unchanged for ten minutes is removed.
  for (int i = 0; i < 601; ++i) {
    clock_.Advance(seconds(1));
    ASSERT_TRUE(Scaler().Reconcile(kKey));
  }
  EXPECT_FALSE(scales_.removed.empty());
  EXPECT_EQ(scales_.removed.front(), "eoc.dev/demand-other");
}

TEST_F(PoolScalerTest, AnUnreadableTargetIsAnErrorAndACondition) {
  scales_.read_error =
      kube::Status{404, "NotFound", "deployments.apps \"chat\" not found", std::nullopt};
  Load(10);
  auto r = Scaler().Reconcile(kKey);
  ASSERT_FALSE(r);
  EXPECT_EQ(Reason(), "ScaleTargetUnavailable");
  EXPECT_EQ(Scaler().Report(kKey)->condition.status, "False");
}

TEST_F(PoolScalerTest, FollowersNeitherReadNorWrite) {
  Scaler().SetLeading(false);
  Load(40);
  auto r = Scaler().Reconcile(kKey);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->requeue_after, std::chrono::nanoseconds(0));  // SetLeading(true) brings it back
  EXPECT_EQ(scales_.reads, 0);
  EXPECT_FALSE(Scaler().Report(kKey));
}

TEST_F(PoolScalerTest, APoolNoLongerAutoscaledIsDropped) {
  Ticks(1, 10);
  ASSERT_TRUE(Scaler().Report(kKey));
  nlohmann::json pool = AutoscaledPool({{"enabled", false}});
  Use(pool);
  auto r = Scaler().Reconcile(kKey);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->requeue_after, std::chrono::nanoseconds(0));
  EXPECT_FALSE(Scaler().Report(kKey));
}

}  // namespace
}  // namespace eoc::controller
