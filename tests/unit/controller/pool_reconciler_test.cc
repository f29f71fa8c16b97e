// The InferencePool reconcile against fakes of its three seams: the caches (PoolStore), the API
// calls (PoolClient: the status write and the fresh read after a conflict) and the Events
// (kube::EventSink), on a ManualClock.
#include "controller/pool_reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "controller/pool_status.h"
#include "pods.h"
#include "pool_fakes.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using testing::Pod;

using testing::FakeClient;
using testing::FakeEvents;
using testing::FakeStore;
using testing::kKey;
using testing::PoolJson;

class PoolReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override { reconciler_.SetLeading(true); }

  kube::Result<kube::ReconcileResult> Reconcile() { return reconciler_.Reconcile(kKey); }

  // Reconciles, expecting a plain success: no backoff, and (a pool with workers) come back
  // within the metrics interval (5 s by default) to weigh them again.
  void ReconcileOk() {
    const auto result = Reconcile();
    ASSERT_TRUE(result.ok()) << result.error().ToString();
    EXPECT_FALSE(result->requeue);
    EXPECT_LE(result->requeue_after, std::chrono::seconds(5));
  }

  // The informer catches up with the last status written, on `pool` (default: the valid spec).
  void SeeLastWrite(json pool = PoolJson("")) {
    ASSERT_FALSE(client_.writes.empty());
    pool["metadata"]["resourceVersion"] = std::to_string(client_.version);
    pool["status"] = client_.writes.back().at("status");
    store_.PutPool(pool);
  }

  // The pool with one ready worker, published and seen back by the informer.
  void PublishOneWorker() {
    store_.PutPool(PoolJson("7"));
    store_.AddPod(Pod("chat-a", "10.0.0.1"));
    ReconcileOk();
    SeeLastWrite();
  }

  api::InferencePoolStatus LastWritten() const {
    return api::ParseStatus(client_.writes.back().at("status"));
  }

  std::size_t WorkerCount() const {
    const auto workers = reconciler_.Workers(kKey);
    return workers == nullptr ? 0 : workers->workers.size();
  }

  static std::string ConditionStatus(const api::InferencePoolStatus& s, std::string_view type) {
    const api::Condition* c = api::FindCondition(s.conditions, type);
    return c == nullptr ? "" : c->status;
  }

  ManualClock clock_;
  FakeStore store_;
  FakeClient client_;
  FakeEvents events_;
  PoolReconcilerOptions options_{.min_publish_interval = milliseconds(1000)};
  PoolReconciler reconciler_{store_, client_, events_, options_, clock_, nullptr};
};

TEST_F(PoolReconcilerTest, PublishesTheWorkersOnceAndNotAgainWhenUnchanged) {
  store_.PutPool(PoolJson("7"));
  store_.AddPod(Pod("chat-b", "10.0.0.2"));
  store_.AddPod(Pod("chat-a", "10.0.0.1"));
  ReconcileOk();

  ASSERT_EQ(reconciler_.Workers(kKey)->workers.size(), 2U);
  EXPECT_EQ(PodName(reconciler_.Workers(kKey)->workers.front()), "chat-a");
  ASSERT_EQ(client_.writes.size(), 1U);
  EXPECT_EQ(client_.writes[0]["metadata"]["resourceVersion"], "7");
  const auto status = LastWritten();
  EXPECT_EQ(status.ready_workers, 2);
  ASSERT_TRUE(status.routing.has_value());
  EXPECT_EQ(status.routing->workers.front().address, "10.0.0.1:8000");
  EXPECT_EQ(ConditionStatus(status, "Ready"), "True");

  // The informer sees the write; time passes; nothing changed: nothing is written.
  SeeLastWrite();
  clock_.Advance(std::chrono::seconds(30));
  ReconcileOk();
  EXPECT_EQ(client_.writes.size(), 1U);
  EXPECT_TRUE(events_.events.empty());
}

TEST_F(PoolReconcilerTest, AChangeInsideTheMinPublishIntervalWaitsForTheRest) {
  PublishOneWorker();

  clock_.Advance(milliseconds(300));
  store_.AddPod(Pod("chat-b", "10.0.0.2"));
  const auto result = Reconcile();
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->requeue_after, milliseconds(700));
  EXPECT_FALSE(result->requeue);
  EXPECT_EQ(client_.writes.size(), 1U);
  EXPECT_EQ(WorkerCount(), 2U);  // membership is local and immediate; only the write waits

  clock_.Advance(milliseconds(700));
  ReconcileOk();
  ASSERT_EQ(client_.writes.size(), 2U);
  EXPECT_EQ(LastWritten().ready_workers, 2);
}

TEST_F(PoolReconcilerTest, AConflictReadsThePoolAfreshAndWritesAgain) {
  store_.PutPool(PoolJson("7"));
  store_.AddPod(Pod("chat-a", "10.0.0.1"));
  client_.errors.push_back({409, "Conflict", "the object has been modified", std::nullopt});
  client_.fresh = PoolJson("9");
  ReconcileOk();

  EXPECT_EQ(client_.reads, std::vector<std::string>{kKey});
  ASSERT_EQ(client_.writes.size(), 2U);
  EXPECT_EQ(client_.writes[0]["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(client_.writes[1]["metadata"]["resourceVersion"], "9");
  EXPECT_EQ(LastWritten().ready_workers, 1);
}

TEST_F(PoolReconcilerTest, ConflictsWithoutEndAndOtherErrorsAreReturnedForABackoff) {
  store_.PutPool(PoolJson("7"));
  store_.AddPod(Pod("chat-a", "10.0.0.1"));
  client_.fresh = PoolJson("9");
  for (int i = 0; i < 5; ++i) {
    client_.errors.push_back({409, "Conflict", "the object has been modified", std::nullopt});
  }
  auto result = Reconcile();
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error().IsConflict());
  EXPECT_EQ(client_.writes.size(), 5U);  // max_conflict_attempts

  client_.errors.push_back({500, "InternalError", "etcd is down", std::nullopt});
  result = Reconcile();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, 500);
}

TEST_F(PoolReconcilerTest, NothingIsWrittenWhileTheFenceSaysNoOrWhenNotLeading) {
  PoolReconciler fenced(store_, client_, events_, {.fence = [] { return false; }}, clock_, nullptr);
  fenced.SetLeading(true);
  store_.PutPool(PoolJson("7"));
  store_.AddPod(Pod("chat-a", "10.0.0.1"));
  auto result = fenced.Reconcile(kKey);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, kube::ReconcileResult{});
  EXPECT_EQ(fenced.Workers(kKey)->workers.size(), 1U);  // membership is kept all the same
  EXPECT_TRUE(client_.writes.empty());

  reconciler_.SetLeading(false);
  ReconcileOk();
  EXPECT_EQ(WorkerCount(), 1U);
  EXPECT_TRUE(client_.writes.empty());
}

TEST_F(PoolReconcilerTest, AnInvalidSpecIsReportedAndKeepsTheLastWorkers) {
  PublishOneWorker();
  ASSERT_EQ(WorkerCount(), 1U);

  // An edit empties the selector: refused, reported, and the pool keeps serving its worker.
  json edited = PoolJson("", json::object());
  edited["metadata"]["generation"] = 2;
  SeeLastWrite(edited);
  clock_.Advance(std::chrono::seconds(5));
  ReconcileOk();

  EXPECT_EQ(WorkerCount(), 1U);
  ASSERT_EQ(client_.writes.size(), 2U);
  const auto status = LastWritten();
  EXPECT_EQ(ConditionStatus(status, "SpecValid"), "False");
  EXPECT_THAT(api::FindCondition(status.conditions, "SpecValid")->message,
              HasSubstr("spec.selector"));
  ASSERT_TRUE(status.routing.has_value());
  EXPECT_EQ(status.routing->workers.size(), 1U);
  ASSERT_EQ(events_.events.size(), 1U);
  EXPECT_EQ(events_.events[0].type, kube::EventType::kWarning);
  EXPECT_EQ(events_.events[0].reason, reasons::kSpecInvalid);
  EXPECT_THAT(events_.events[0].message, HasSubstr("spec.selector"));
}

TEST_F(PoolReconcilerTest, ABadAnnotationIsReportedOnce) {
  store_.PutPool(PoolJson("7"));
  kube::PodView pod = *Pod("chat-a", "10.0.0.1");
  pod.annotations = {{"eoc.dev/max-concurrency", "lots"}};
  store_.AddPod(std::make_shared<const kube::PodView>(pod));
  ReconcileOk();
  SeeLastWrite();
  clock_.Advance(std::chrono::seconds(5));
  ReconcileOk();

  EXPECT_EQ(WorkerCount(), 1U);  // it serves, with the spec's value
  ASSERT_EQ(events_.events.size(), 1U);
  EXPECT_EQ(events_.events[0].reason, "InvalidAnnotation");
  EXPECT_THAT(events_.events[0].message, HasSubstr("pod chat-a"));
  EXPECT_THAT(events_.events[0].message, HasSubstr("eoc.dev/max-concurrency"));
}

TEST_F(PoolReconcilerTest, ADeletedPoolIsForgotten) {
  store_.PutPool(PoolJson("7"));
  store_.AddPod(Pod("chat-a", "10.0.0.1"));
  ReconcileOk();
  ASSERT_NE(reconciler_.Workers(kKey), nullptr);
  EXPECT_EQ(reconciler_.PoolsOnNode("node-a"), std::vector<std::string>{kKey});

  store_.DeletePool(kKey);
  ReconcileOk();
  EXPECT_EQ(reconciler_.Workers(kKey), nullptr);
  EXPECT_TRUE(reconciler_.PoolsOnNode("node-a").empty());
  EXPECT_EQ(client_.writes.size(), 1U);  // nothing written about a pool that is gone
}

// What the scrape loop is handed, as the reconciler hands it.
class RecordingScrapePools final : public ScrapePools {
 public:
  void SetPool(ScrapePool pool) override { set.push_back(std::move(pool)); }
  void RemovePool(const std::string& key) override { removed.push_back(key); }
  std::optional<ScrapeSummary> Summary(const std::string& key) const override {
    return key == kKey ? summary : std::nullopt;
  }
  std::vector<ScrapePool> set;
  std::optional<ScrapeSummary> summary;
  std::vector<std::string> removed;
};

// Every replica, leader or not, hands each valid pool's targets to the scrape loop at each
// reconcile, leaves the last ones when the spec turns invalid, and takes them away with the pool.
TEST_F(PoolReconcilerTest, EveryReplicaFeedsTheScrapeLoop) {
  RecordingScrapePools scrape;
  PoolReconcilerOptions options = options_;
  options.scrape = &scrape;
  PoolReconciler follower(store_, client_, events_, options, clock_, nullptr);
  store_.PutPool(PoolJson("7"));
  store_.AddPod(Pod("chat-a", "10.0.0.1"));
  ASSERT_TRUE(follower.Reconcile(kKey).ok());
  ASSERT_EQ(scrape.set.size(), 1U);
  EXPECT_EQ(scrape.set[0].key, kKey);
  ASSERT_EQ(scrape.set[0].targets.size(), 1U);
  EXPECT_EQ(scrape.set[0].targets[0].address, "10.0.0.1:8000");
  EXPECT_EQ(scrape.set[0].targets[0].pod, "prod/chat-a");
  EXPECT_EQ(scrape.set[0].interval, std::chrono::seconds(5));
  EXPECT_TRUE(client_.writes.empty());  // not leading: nothing written, still scraped

  store_.PutPool(PoolJson("8", json::object()));  // invalid: the last targets stay
  ASSERT_TRUE(follower.Reconcile(kKey).ok());
  EXPECT_EQ(scrape.set.size(), 1U);

  store_.DeletePool(kKey);
  ASSERT_TRUE(follower.Reconcile(kKey).ok());
  EXPECT_EQ(scrape.removed, std::vector<std::string>{kKey});
}

// The exporter pods the reconciler is given, and what it asked.
class FakeExporters final : public ExporterSource {
 public:
  ExporterRead Track(const std::string& pool_key, const api::InferencePool& pool) override {
    tracked.push_back(pool_key + (pool.spec.energy.exporter ? " exporter" : " none"));
    return {.pods = pods, .refused = refused};
  }
  void Forget(const std::string& pool_key) override { forgotten.push_back(pool_key); }
  std::vector<std::shared_ptr<const kube::PodView>> pods;
  std::string refused;
  std::vector<std::string> tracked;
  std::vector<std::string> forgotten;
};

// Each worker's scrape target names the exporter on its node, at the spec's port and path; a
// spec without an exporter is still tracked (so that a watch it used is let go) and names none.
TEST_F(PoolReconcilerTest, EachWorkerIsScrapedWithItsNodesExporter) {
  RecordingScrapePools scrape;
  FakeExporters exporters;
  PoolReconcilerOptions options = options_;
  options.scrape = &scrape;
  options.exporters = &exporters;
  PoolReconciler reconciler(store_, client_, events_, options, clock_, nullptr);
  json pool = PoolJson("7");
  pool["spec"]["energy"]["exporter"] = {
      {"selector", {{"matchLabels", {{"app", "dcgm"}}}}}, {"port", 9400}, {"path", "/power"}};
  store_.PutPool(pool);
  store_.AddPod(Pod("chat-a", "10.0.0.1", true, "node-a"));
  store_.AddPod(Pod("chat-b", "10.0.0.2", true, "node-b"));
  exporters.pods = {Pod("dcgm-a", "10.0.9.1", true, "node-a")};
  ASSERT_TRUE(reconciler.Reconcile(kKey).ok());
  ASSERT_EQ(scrape.set.size(), 1U);
  const ScrapePool& set = scrape.set.back();
  ASSERT_EQ(set.targets.size(), 2U);
  EXPECT_EQ(set.targets[0].exporter, "prod/dcgm-a");
  EXPECT_EQ(set.targets[1].exporter, "");  // no exporter on node-b
  ASSERT_EQ(set.exporters.size(), 1U);
  EXPECT_EQ(set.exporters[0].address, "10.0.9.1:9400");
  EXPECT_EQ(set.exporter_path, "/power");

  store_.PutPool(PoolJson("8"));
  ASSERT_TRUE(reconciler.Reconcile(kKey).ok());
  EXPECT_TRUE(scrape.set.back().exporters.empty());
  EXPECT_EQ(scrape.set.back().targets[0].exporter, "");
  EXPECT_EQ(exporters.tracked, (std::vector<std::string>{kKey + std::string(" exporter"),
                                                         kKey + std::string(" none")}));

  store_.DeletePool(kKey);
  ASSERT_TRUE(reconciler.Reconcile(kKey).ok());
  EXPECT_EQ(exporters.forgotten, std::vector<std::string>{kKey});
}

// An exporter its namespace's cap refuses: the leader's status says why in Ready.
TEST_F(PoolReconcilerTest, AnExporterPastItsNamespacesCapIsSaidInReady) {
  RecordingScrapePools scrape;
  FakeExporters exporters;
  exporters.refused = "namespace \"prod\" already uses 4 distinct exporters";
  PoolReconcilerOptions options = options_;
  options.scrape = &scrape;
  options.exporters = &exporters;
  PoolReconciler reconciler(store_, client_, events_, options, clock_, nullptr);
  reconciler.SetLeading(true);
  store_.PutPool(PoolJson("7"));
  store_.AddPod(Pod("chat-a", "10.0.0.1", true, "node-a"));
  ASSERT_TRUE(reconciler.Reconcile(kKey).ok());
  ASSERT_FALSE(client_.writes.empty());
  const api::InferencePoolStatus status = LastWritten();
  const api::Condition* ready = api::FindCondition(status.conditions, api::kConditionReady);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, "True");
  EXPECT_THAT(ready->message,
              ::testing::HasSubstr("spec.energy.exporter is not watched: " + exporters.refused));
}

// The autoscaler's report, fixed.
class FixedScaling final : public ScalingSource {
 public:
  void Track(const std::string& /*pool_key*/) override {}
  std::optional<ScalingReport> Report(const std::string& /*pool_key*/) const override {
    return report;
  }
  ScalingReport report;
};

TEST(PoolReconcilerScalingTest, TheWorkersAScaleInDrainsArePublishedAsDraining) {
  ManualClock clock;
  FakeStore store;
  FakeClient client;
  FakeEvents events;
  FixedScaling scaling;
  scaling.report = {.condition = {.type = "ScalingActive",
                                  .status = "True",
                                  .reason = "Draining",
                                  .message = "draining chat-b"},
                    .draining = {"chat-b"}};
  PoolReconciler reconciler(store, client, events, {.scaling = &scaling}, clock, nullptr);
  reconciler.SetLeading(true);
  json pool = PoolJson("7");
  pool["spec"]["scaleTargetRef"] = {
      {"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "chat"}};
  pool["spec"]["autoscaling"] = {{"maxReplicas", 4}};
  store.PutPool(pool);
  store.AddPod(Pod("chat-a", "10.0.0.1"));
  store.AddPod(Pod("chat-b", "10.0.0.2"));
  ASSERT_TRUE(reconciler.Reconcile(kKey));
  ASSERT_FALSE(client.writes.empty());
  const api::InferencePoolStatus status = api::ParseStatus(client.writes.back().at("status"));
  ASSERT_TRUE(status.routing.has_value());
  ASSERT_EQ(status.routing->workers.size(), 2U);
  EXPECT_EQ(status.routing->workers[0].pod, "chat-a");
  EXPECT_FALSE(status.routing->workers[0].draining);
  EXPECT_EQ(status.routing->workers[1].pod, "chat-b");
  EXPECT_TRUE(status.routing->workers[1].draining);
  const api::Condition* scaling_active =
      api::FindCondition(status.conditions, api::kConditionScalingActive);
  ASSERT_NE(scaling_active, nullptr);
  EXPECT_EQ(scaling_active->reason, "Draining");
}

}  // namespace
}  // namespace eoc::controller
