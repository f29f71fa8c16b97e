// The informer against the shared real API server (watch cache on).
#include "kube/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "informer_support.h"
#include "kube/pod_view.h"
#include "namespaced_test.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using testing::UniqueName;

#define ASSERT_OK(r) ASSERT_TRUE(r) << (r).error().ToString()

class InformerTest : public testing::NamespacedTest {};

TEST_F(InformerTest, SeesCreatesUpdatesAndDeletesAndEqualsAFreshList) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("before-" + std::to_string(i))));
  }
  testing::EventLog log;
  Informer<PodView> pods(*client_, {.resource = resources::kPods, .ns = ns_}, ToPodView,
                         RealClock());
  pods.AddHandlers(log.Handlers());
  pods.Start();
  ASSERT_TRUE(pods.WaitForSync(std::chrono::seconds(30)));
  EXPECT_EQ(pods.Size(), 5U);

  ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("after")));
  ASSERT_OK(client_->Patch(resources::kPods, ns_, "before-1", PatchType::kMerge,
                           {{"status", {{"podIP", "127.0.0.9"}}}}, "status"));
  ASSERT_OK(client_->Delete(resources::kPods, ns_, "before-2", {.grace_period_seconds = 0}));

  ASSERT_TRUE(testing::Eventually([&] {
    auto p = pods.Get(ns_ + "/before-1");
    return pods.Get(ns_ + "/after") != nullptr && pods.Get(ns_ + "/before-2") == nullptr &&
           p != nullptr && p->pod_ip == "127.0.0.9";
  }));
  EXPECT_TRUE(log.Saw("add", "after"));
  EXPECT_TRUE(log.Saw("update", "before-1"));
  EXPECT_TRUE(log.Saw("delete", "before-2"));
  EXPECT_EQ(pods.ResourceVersions(), testing::ServerVersions(*client_, ns_));
  pods.Stop();
}

TEST_F(InformerTest, BookmarksAdvanceTheVersion) {
  testing::CountingMetrics metrics;
  ReflectorOptions o{.resource = resources::kConfigMaps, .ns = ns_};
  // 1.20 sends a watch's bookmark near its timeout, and (seen here) none for timeouts of a few
  // seconds: 10 s is short enough.
  o.min_watch_timeout = o.max_watch_timeout = std::chrono::seconds(10);
  o.metrics = &metrics;
  Informer<std::string> configmaps(
      *client_, o, [](const json& j) { return ObjectKey(j); }, RealClock());
  configmaps.Start();
  ASSERT_TRUE(configmaps.WaitForSync(std::chrono::seconds(30)));
  const std::string synced_at = configmaps.LastResourceVersion();

  // Changes elsewhere move the server's version; only a bookmark can tell this watch of them.
  const std::string other = UniqueName("inf-other");
  ASSERT_OK(client_->Create(resources::kNamespaces, "", json{{"metadata", {{"name", other}}}}));
  ASSERT_OK(client_->Create(resources::kConfigMaps, other, json{{"metadata", {{"name", "x"}}}}));
  // A few watch periods: under load the server may let one pass without a bookmark.
  ASSERT_TRUE(
      testing::Eventually([&] { return metrics.bookmarks.load() > 0; }, std::chrono::seconds(90)));
  EXPECT_GT(std::stoll(configmaps.LastResourceVersion()), std::stoll(synced_at));
  EXPECT_EQ(configmaps.Size(), 0U);
  configmaps.Stop();
  (void)client_->Delete(resources::kNamespaces, "", other);
}

}  // namespace
}  // namespace eoc::kube
