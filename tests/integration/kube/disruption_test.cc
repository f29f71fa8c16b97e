// The informer through disruptions, on a control plane of its own: an API server without the watch
// cache (so that a watch from a compacted version answers 410 Expired), restarted by some tests,
// and by one with its watch cache on, as clusters run it. CTest runs these tests one at a time
// (RESOURCE_LOCK).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "informer_support.h"
#include "kube/informer.h"
#include "kube/pod_view.h"
#include "namespaced_test.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using testing::ControlPlane;
using testing::Shell;

#define ASSERT_OK(r) ASSERT_TRUE(r) << (r).error().ToString()

// Compacts etcd's history up to its current revision: older versions are gone for good.
void CompactEtcd(const ControlPlane& plane) {
  const std::string etcd = "ETCDCTL_API=3 etcdctl --endpoints=" + plane.Var("EOC_KUBE_ETCD");
  const json status = json::parse(Shell(etcd + " endpoint status -w json"));
  const auto revision = status.at(0).at("Status").at("header").at("revision").get<std::int64_t>();
  Shell(etcd + " compact " + std::to_string(revision));
}

// Holds the reflector between two watches while a test changes the world behind its back.
class Gate {
 public:
  // Before each watch: if closed, say so and wait until opened.
  void Pass() {
    std::unique_lock lock(mu_);
    if (open_) return;
    held_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    held_ = false;
  }
  void Close() {
    const std::lock_guard lock(mu_);
    open_ = false;
  }
  bool WaitHeld(std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return held_; });
  }
  void Open() {
    const std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  bool held_ = false;
};

class DisruptionTest : public testing::NamespacedTest {
 protected:
  void SetUp() override {
    NamespacedTest::SetUp();
    if (plane_ != nullptr) {
      ASSERT_EQ(plane_->Var("EOC_KUBE_WATCH_CACHE"), "false");
    }
  }
};

TEST_F(DisruptionTest, GoneWatchRelistsWithNoMissedAndNoPhantomObjects) {
  for (const char* name : {"keep", "doomed", "changed"}) {
    ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod(name)));
  }
  Gate gate;
  testing::CountingMetrics metrics;
  testing::EventLog log;
  ReflectorOptions o{.resource = resources::kPods, .ns = ns_};
  o.min_watch_timeout = o.max_watch_timeout = std::chrono::seconds(2);
  o.metrics = &metrics;
  o.before_watch = [&gate] { gate.Pass(); };
  Informer<PodView> pods(*client_, o, ToPodView, RealClock());
  pods.AddHandlers(log.Handlers());
  pods.Start();
  ASSERT_TRUE(pods.WaitForSync(std::chrono::seconds(30)));

  // Hold the informer after its current watch ends, so that it has no watch...
  gate.Close();
  ASSERT_TRUE(gate.WaitHeld(std::chrono::seconds(30)));
  const int lists_before = metrics.lists.load();
  // ...while objects come, change and go, and etcd forgets the versions in between.
  ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("born-in-gap")));
  ASSERT_OK(client_->Patch(resources::kPods, ns_, "changed", PatchType::kMerge,
                           {{"status", {{"podIP", "127.0.0.5"}}}}, "status"));
  ASSERT_OK(client_->Delete(resources::kPods, ns_, "doomed", {.grace_period_seconds = 0}));
  ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("short-lived")));
  ASSERT_OK(client_->Delete(resources::kPods, ns_, "short-lived", {.grace_period_seconds = 0}));
  CompactEtcd(*plane_);
  gate.Open();

  // It resumes from its old version, is told 410 Expired, relists, and converges.
  ASSERT_TRUE(testing::Eventually([&] {
    return pods.ResourceVersions() == testing::ServerVersions(*client_, ns_) &&
           pods.Get(ns_ + "/born-in-gap") != nullptr;
  }));
  EXPECT_GE(metrics.error_events.load() + metrics.gone.load(), 1);
  EXPECT_GT(metrics.lists.load(), lists_before);
  EXPECT_EQ(pods.Get(ns_ + "/doomed"), nullptr);
  EXPECT_EQ(pods.Get(ns_ + "/short-lived"), nullptr);
  EXPECT_EQ(pods.Get(ns_ + "/changed")->pod_ip, "127.0.0.5");
  EXPECT_TRUE(log.Saw("delete", "doomed"));
  EXPECT_TRUE(log.Saw("add", "born-in-gap"));
  EXPECT_TRUE(log.Saw("update", "changed"));
  EXPECT_FALSE(log.Saw("add", "short-lived"));  // never seen, so never reported
  pods.Stop();
}

TEST_F(DisruptionTest, InformerResumesAfterTheApiServerIsKilledAndRestarted) {
  ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("before")));
  testing::EventLog log;
  ReflectorOptions o{.resource = resources::kPods, .ns = ns_};
  o.max_backoff = std::chrono::seconds(2);  // retry often while the server is away
  Informer<PodView> pods(*client_, o, ToPodView, RealClock());
  pods.AddHandlers(log.Handlers());
  pods.Start();
  ASSERT_TRUE(pods.WaitForSync(std::chrono::seconds(30)));

  testing::RestartApiServer(*plane_);
  ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("after")));
  ASSERT_OK(client_->Delete(resources::kPods, ns_, "before", {.grace_period_seconds = 0}));

  ASSERT_TRUE(testing::Eventually([&] {
    return pods.ResourceVersions() == testing::ServerVersions(*client_, ns_) &&
           pods.Get(ns_ + "/after") != nullptr;
  }));
  EXPECT_EQ(pods.Get(ns_ + "/before"), nullptr);
  EXPECT_TRUE(log.Saw("delete", "before"));
  EXPECT_TRUE(log.Saw("add", "after"));
  pods.Stop();
}

// Restarts the plane's API server with its watch cache on, and without it again at the end.
class WithWatchCache {
 public:
  explicit WithWatchCache(const ControlPlane& plane) : plane_(plane) {
    testing::RestartApiServer(plane_, "--watch-cache=true");
  }
  WithWatchCache(const WithWatchCache&) = delete;
  WithWatchCache& operator=(const WithWatchCache&) = delete;
  ~WithWatchCache() { testing::RestartApiServer(plane_, "--watch-cache=false"); }

 private:
  const ControlPlane& plane_;
};

// After an API server with its watch cache restarts, the cache starts at etcd's newest revision
// and refuses a watch from any older one (410 inside the watch). The informer used to relist at
// its old version in pages, which the API server reads from etcd at exactly that version, and
// watch from it again: 1,228 lists in ten minutes, blind to every change until etcd compacted,
// and never stale. Now it watches again within seconds, with a few lists at most.
TEST_F(DisruptionTest, AfterARestartWithItsWatchCacheTheInformerWatchesAgainAtOnce) {
  const WithWatchCache cache(*plane_);
  ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("before")));
  testing::CountingMetrics metrics;
  testing::EventLog log;
  ReflectorOptions o{.resource = resources::kPods, .ns = ns_};
  o.max_backoff = std::chrono::seconds(2);  // retry often while the server is away
  o.metrics = &metrics;
  Informer<PodView> pods(*client_, o, ToPodView, RealClock());
  pods.AddHandlers(log.Handlers());
  pods.Start();
  ASSERT_TRUE(pods.WaitForSync(std::chrono::seconds(30)));
  // Writes elsewhere move etcd's revision past the informer's version, as a cluster's do.
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(client_->Create(
        resources::kConfigMaps, ns_,
        {{"metadata", {{"name", "elsewhere-" + std::to_string(i)}}}, {"data", {{"k", "v"}}}}));
  }
  const int lists_before = metrics.lists.load();

  testing::RestartApiServer(*plane_);
  ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("after")));
  ASSERT_TRUE(testing::Eventually([&] { return pods.Get(ns_ + "/after") != nullptr; },
                                  std::chrono::seconds(30)))
      << metrics.lists.load() - lists_before << " lists and " << metrics.gone.load()
      << " watches refused since the restart";
  // A change after that comes through the watch, with no list.
  const int lists_after = metrics.lists.load();
  ASSERT_OK(client_->Delete(resources::kPods, ns_, "before", {.grace_period_seconds = 0}));
  ASSERT_TRUE(
      testing::Eventually([&] { return log.Saw("delete", "before"); }, std::chrono::seconds(30)));
  EXPECT_EQ(metrics.lists.load(), lists_after);
  EXPECT_LE(lists_after - lists_before, 3);
  EXPECT_EQ(pods.ResourceVersions(), testing::ServerVersions(*client_, ns_));
  EXPECT_FALSE(pods.Stale());
  pods.Stop();
}

// A relist after a broken watch starts from the informer's last version over several pages: the
// version goes with the first page only (a page that names both it and `continue` is refused with
// 400, and such an informer never recovered until etcd compacted).
TEST_F(DisruptionTest, APagedRelistAfterABrokenWatchConverges) {
  for (int i = 0; i < 12; ++i) {
    ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("p" + std::to_string(i))));
  }
  testing::CountingMetrics metrics;
  testing::EventLog log;
  ReflectorOptions o{.resource = resources::kPods, .ns = ns_, .page_size = 2};
  o.max_backoff = std::chrono::seconds(2);
  o.metrics = &metrics;
  Informer<PodView> pods(*client_, o, ToPodView, RealClock());
  pods.AddHandlers(log.Handlers());
  pods.Start();
  ASSERT_TRUE(pods.WaitForSync(std::chrono::seconds(30)));
  ASSERT_EQ(pods.Size(), 12U);
  const int lists_before = metrics.lists.load();

  testing::RestartApiServer(*plane_);  // the watch breaks: relist from the last version
  ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("after")));
  ASSERT_OK(client_->Delete(resources::kPods, ns_, "p3", {.grace_period_seconds = 0}));
  ASSERT_OK(client_->Patch(resources::kPods, ns_, "p7", PatchType::kMerge,
                           {{"status", {{"podIP", "127.0.0.7"}}}}, "status"));

  ASSERT_TRUE(testing::Eventually(
      [&] {
        return pods.ResourceVersions() == testing::ServerVersions(*client_, ns_) &&
               pods.Get(ns_ + "/after") != nullptr && pods.Get(ns_ + "/p3") == nullptr &&
               pods.Get(ns_ + "/p7")->pod_ip == "127.0.0.7";
      },
      std::chrono::seconds(90)))
      << pods.Size() << " cached";
  EXPECT_GT(metrics.lists.load(), lists_before);
  EXPECT_EQ(pods.Size(), 12U);
  EXPECT_TRUE(log.Saw("add", "after"));
  EXPECT_TRUE(log.Saw("delete", "p3"));
  EXPECT_TRUE(log.Saw("update", "p7"));
  EXPECT_FALSE(pods.Stale());
  pods.Stop();
}

}  // namespace
}  // namespace eoc::kube
