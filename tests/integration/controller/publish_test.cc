// The leader's weighted routing table end to end: the eoc-controller binary on the shared control
// plane, the node agent playing the kubelet with two fake vLLM workers of a LeastBusy pool. A
// worker the test saturates is published with weight 0 once scraped; a small move of the loads
// does not change the table's generation; while the loads stay, status is not written again
// (eoc_pool_status_writes_total stands). Assertions are on what is published, never on how fast.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "eventually.h"
#include "fleet_test.h"
#include "manifests.h"

namespace eoc::controller {
namespace {

using nlohmann::json;
using testing::Eventually;
using testing::kPatience;
using testing::Sample;
namespace resources = kube::resources;

using testing::kPools;

// A LeastBusy pool of `app`, scraped every second, at most 8 sequences a worker (so that a test
// can saturate one), its table republished for moved weights at most every second.
json Pool(const std::string& app) {
  json pool = testing::PoolOf(app, {{"intervalSeconds", 1}, {"timeoutSeconds", 1}});
  pool["spec"]["routing"] = {{"strategy", "LeastBusy"},
                             {"maxConcurrencyPerWorker", 8},
                             {"publishIntervalSeconds", 1},
                             {"publishThreshold", 50}};
  return pool;
}

class PublishIntegrationTest : public testing::FleetTest {};

TEST_F(PublishIntegrationTest, WeightsFollowTheLoadAndSteadyLoadsWriteNothing) {
  ASSERT_TRUE(client_->Create(resources::kDeployments, ns_, testing::WorkerDeployment("w", 2)));
  ASSERT_TRUE(client_->Create(kPools, ns_, Pool("w")));
  const std::vector<std::string> pods = AwaitRunningPods("w", 2);
  ASSERT_EQ(pods.size(), 2U);
  std::int64_t generation = 0;  // the published table's
  const auto published = [&](std::int64_t a, std::int64_t b) {
    const auto w = PublishedWeights("w", &generation);
    return w && w->size() == 2 && w->count(pods[0]) == 1 && w->at(pods[0]) == a &&
           w->count(pods[1]) == 1 && w->at(pods[1]) == b;
  };
  ASSERT_TRUE(Eventually([&] { return published(1000, 1000); }, kPatience))
      << controller_->Output();

  // Saturate the first worker: once scraped, it is published with weight 0.
  agent_->Worker(ns_, pods[0])->SetLoad({.running = 16});
  agent_->Worker(ns_, pods[1])->SetLoad({.running = 1});
  ASSERT_TRUE(Eventually([&] { return published(0, 1000); }, kPatience)) << controller_->Output();
  const std::int64_t moved = generation;
  // /metrics shows the published weights, once the table's watch event has reached the cache.
  const auto weight = [&](const std::string& pod) {
    return Sample(Metrics(), Series("eoc_worker_routing_weight", "w", pod));
  };
  EXPECT_TRUE(
      Eventually([&] { return weight(pods[0]) == 0 && weight(pods[1]) == 1000; }, kPatience))
      << Metrics();

  // A small move: the weights stay, and so does the table's generation, over several scrapes.
  agent_->Worker(ns_, pods[0])->SetLoad({.running = 17});
  agent_->Worker(ns_, pods[1])->SetLoad({.running = 2});
  const auto ok_scrapes = [&] { return Sample(Metrics(), Scrapes("w", "ok")); };
  const double before = ok_scrapes();
  const std::string writes = "eoc_pool_status_writes_total{result=\"written\"}";
  ASSERT_TRUE(Eventually([&] { return ok_scrapes() >= before + 6; }, kPatience)) << Metrics();
  EXPECT_TRUE(published(0, 1000));
  EXPECT_EQ(generation, moved);

  // Steady loads: no status write over several more scrapes of both workers.
  const double written = Sample(Metrics(), writes);
  EXPECT_GT(written, 0) << Metrics();
  const double now = ok_scrapes();
  ASSERT_TRUE(Eventually([&] { return ok_scrapes() >= now + 8; }, kPatience)) << Metrics();
  EXPECT_EQ(Sample(Metrics(), writes), written) << Metrics();
  EXPECT_TRUE(published(0, 1000));
  EXPECT_EQ(generation, moved);
}

}  // namespace
}  // namespace eoc::controller
