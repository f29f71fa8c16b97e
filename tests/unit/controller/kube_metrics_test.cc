// The operator's Kubernetes metrics: what the hooks of src/kube turn into on /metrics.
#include "kube_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/clock.h"
#include "files.h"
#include "telemetry/metrics.h"

namespace eoc::controller {
namespace {

using ::testing::HasSubstr;

TEST(KubeMetrics, WorkQueueReflectorLeaderAndControllerFamilies) {
  telemetry::Metrics metrics;
  KubeMetrics kube(metrics.registry());

  // A ManualClock: the retry's backoff never comes due while the page is read (on RealClock a
  // slow build, such as ASan's, saw it due and the depth at 2).
  ManualClock clock;
  kube::WorkQueue queue("pools", clock, nullptr, &kube.WorkQueue("pools"));
  queue.Add("ns/a");
  queue.Add("ns/b");
  auto key = queue.Get();
  ASSERT_TRUE(key);
  queue.AddRateLimited(*key);  // a failed reconcile: retried with backoff
  queue.Done(*key);

  kube::ReflectorMetrics& pods = kube.Reflector("pods");
  pods.OnList(3);
  pods.OnWatchStart();
  pods.OnWatchStart();
  pods.OnEvent(kube::WatchEventType::kModified);
  pods.OnError(kube::Status{410, "Expired", "", std::nullopt});
  EXPECT_EQ(&kube.Reflector("pods"), &pods);  // one adapter per resource

  kube.Leader("eoc-operator").OnLeadershipChanged(true);

  kube::ControllerMetrics& pools = kube.Controller("inferencepool");
  pools.OnReconcile(kube::ReconcileOutcome::kSuccess, std::chrono::milliseconds(3));
  pools.OnReconcile(kube::ReconcileOutcome::kRequeue, std::chrono::milliseconds(1));
  EXPECT_EQ(&kube.Controller("inferencepool"), &pools);

  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("eoc_workqueue_adds_total{name=\"pools\"} 2"));
  EXPECT_THAT(text, HasSubstr("eoc_workqueue_retries_total{name=\"pools\"} 1"));
  EXPECT_THAT(text, HasSubstr("eoc_workqueue_depth{name=\"pools\"} 1"));
  EXPECT_THAT(text, HasSubstr("eoc_workqueue_queue_duration_seconds_count{name=\"pools\"} 1"));
  EXPECT_THAT(text, HasSubstr("eoc_workqueue_work_duration_seconds_count{name=\"pools\"} 1"));
  EXPECT_THAT(text, HasSubstr("eoc_reflector_lists_total{resource=\"pods\"} 1"));
  EXPECT_THAT(text, HasSubstr("eoc_reflector_watches_total{resource=\"pods\"} 2"));
  EXPECT_THAT(text, HasSubstr("eoc_reflector_events_total{resource=\"pods\",type=\"MODIFIED\"} 1"));
  EXPECT_THAT(text, HasSubstr("eoc_reflector_errors_total{resource=\"pods\"} 1"));
  EXPECT_THAT(text, HasSubstr("eoc_leader_election_leading{lease=\"eoc-operator\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("eoc_reconcile_total{controller=\"inferencepool\",result=\"success\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("eoc_reconcile_total{controller=\"inferencepool\",result=\"requeue\"} 1"));
  // Every result is there from the start, at zero.
  EXPECT_THAT(text,
              HasSubstr("eoc_reconcile_total{controller=\"inferencepool\",result=\"error\"} 0"));
  EXPECT_THAT(text,
              HasSubstr("eoc_reconcile_duration_seconds_count{controller=\"inferencepool\"} 2"));

  testing::TempDir dir;
  const std::string file = dir.Write("metrics.txt", text);
  // NOLINTNEXTLINE(concurrency-mt-unsafe): one call, no other thread uses the environment
  EXPECT_EQ(std::system(("promtool check metrics < " + file).c_str()), 0) << text;
  queue.ShutDown();
}

}  // namespace
}  // namespace eoc::controller
