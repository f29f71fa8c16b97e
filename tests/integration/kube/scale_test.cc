// The pods informer at a real size, on the disruption plane: 1,200 pods (three pages of 500), the
// API server restarted under it. Before the paged relist sent its version with the first page
// only, every relist here failed with 400 and no new pod reached the cache until etcd compacted.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "informer_support.h"
#include "kube/informer.h"
#include "kube/pod_view.h"
#include "namespaced_test.h"

namespace eoc::kube {
namespace {

#define ASSERT_OK(r) ASSERT_TRUE(r) << (r).error().ToString()

constexpr int kPods = 1200;

class ScaleTest : public testing::NamespacedTest {};

TEST_F(ScaleTest, APodsInformerOver1200PodsRecoversFromAnApiServerRestart) {
  // Four writers: the plane's two cores are the limit, not the round trips.
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  writers.reserve(4);
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (int i = w; i < kPods; i += 4) {
        if (!client_->Create(resources::kPods, ns_, testing::Pod("p" + std::to_string(i)))) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  ASSERT_EQ(failures.load(), 0);

  testing::CountingMetrics metrics;
  testing::EventLog log;
  ReflectorOptions o{.resource = resources::kPods, .ns = ns_};  // pages of 500
  o.max_backoff = std::chrono::seconds(2);
  o.metrics = &metrics;
  Informer<PodView> pods(*client_, o, ToPodView, RealClock());
  pods.AddHandlers(log.Handlers());
  pods.Start();
  ASSERT_TRUE(pods.WaitForSync(std::chrono::seconds(60)));
  ASSERT_EQ(pods.Size(), static_cast<std::size_t>(kPods));
  const int lists_before = metrics.lists.load();
  const int watches_before = metrics.watches.load();

  testing::RestartApiServer(*plane_);
  ASSERT_OK(client_->Create(resources::kPods, ns_, testing::Pod("after-restart")));
  ASSERT_OK(client_->Delete(resources::kPods, ns_, "p600", {.grace_period_seconds = 0}));

  ASSERT_TRUE(testing::Eventually(
      [&] {
        return pods.Get(ns_ + "/after-restart") != nullptr && pods.Get(ns_ + "/p600") == nullptr;
      },
      std::chrono::seconds(120)))
      << pods.Size() << " cached";
  EXPECT_EQ(pods.ResourceVersions(), testing::ServerVersions(*client_, ns_));
  EXPECT_EQ(pods.Size(), static_cast<std::size_t>(kPods));
  // It listed again (the re-watch met the server down), or, when the restarted server was back
  // before the re-watch, resumed its watch from the version it had: which comes first is timing.
  EXPECT_TRUE(metrics.lists.load() > lists_before || metrics.watches.load() > watches_before);
  EXPECT_TRUE(log.Saw("add", "after-restart"));
  EXPECT_TRUE(log.Saw("delete", "p600"));
  pods.Stop();
}

}  // namespace
}  // namespace eoc::kube
