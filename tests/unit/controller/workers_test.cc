#include "controller/workers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace eoc::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

api::InferencePool Pool() {
  api::InferencePool pool;
  pool.ns = "prod";
  pool.name = "chat";
  pool.spec.selector =
      api::LabelSelector(std::vector<api::LabelRequirement>{{.key = "app", .values = {"chat"}}});
  pool.spec.target_port = 8000;
  pool.spec.carbon.zone_label = "topology.kubernetes.io/region";
  return pool;
}

std::shared_ptr<const kube::PodView> Pod(const std::string& name, const std::string& ip,
                                         bool ready = true) {
  kube::PodView pod;
  pod.ns = "prod";
  pod.name = name;
  pod.pod_ip = ip;
  pod.node_name = "node-a";
  pod.labels = {{"app", "chat"}};
  pod.phase = kube::PodPhase::kRunning;
  pod.ready = ready;
  return std::make_shared<const kube::PodView>(std::move(pod));
}

NodeLookup NoNodes() {
  return [](const std::string&) { return nullptr; };
}

TEST(IsServingTest, NeedsReadyRunningNotTerminatingAndAnIp) {
  kube::PodView pod = *Pod("a", "10.0.0.1");
  EXPECT_TRUE(IsServing(pod));
  pod.ready = false;
  EXPECT_FALSE(IsServing(pod));
  pod = *Pod("a", "");
  EXPECT_FALSE(IsServing(pod));
  pod = *Pod("a", "10.0.0.1");
  pod.deletion_timestamp = std::chrono::system_clock::now();
  EXPECT_FALSE(IsServing(pod));
  pod = *Pod("a", "10.0.0.1");
  pod.phase = kube::PodPhase::kSucceeded;
  EXPECT_FALSE(IsServing(pod));
}

TEST(SelectWorkersTest, KeepsReadySelectedPodsOfThePoolsNamespaceSortedByName) {
  auto other_ns = std::make_shared<kube::PodView>(*Pod("x", "10.0.0.9"));
  other_ns->ns = "staging";
  auto other_app = std::make_shared<kube::PodView>(*Pod("y", "10.0.0.8"));
  other_app->labels = {{"app", "search"}};
  const std::vector<std::shared_ptr<const kube::PodView>> pods = {
      Pod("c", "10.0.0.3"), Pod("a", "10.0.0.1"), Pod("b", "10.0.0.2", false), other_ns, other_app};
  const auto workers = SelectWorkers(Pool(), pods, NoNodes());
  ASSERT_EQ(workers.size(), 2U);
  EXPECT_EQ(workers[0].pod, "a");
  EXPECT_EQ(workers[0].address, "10.0.0.1:8000");
  EXPECT_EQ(workers[1].pod, "c");
}

TEST(SelectWorkersTest, AnEmptySelectorSelectsNothing) {
  api::InferencePool pool = Pool();
  pool.spec.selector = api::LabelSelector();
  EXPECT_THAT(SelectWorkers(pool, {Pod("a", "10.0.0.1")}, NoNodes()), IsEmpty());
}

TEST(DescribeWorkerTest, IPv6AddressesAreBracketed) {
  const auto w = DescribeWorker(*Pod("a", "fd00::7"), nullptr, Pool().spec);
  EXPECT_EQ(w.address, "[fd00::7]:8000");
}

TEST(DescribeWorkerTest, AcceleratorComesFromTheNodeLabelElseTheRequests) {
  kube::PodView pod = *Pod("a", "10.0.0.1");
  EXPECT_EQ(DescribeWorker(pod, nullptr, Pool().spec).accelerator, "CPU");
  pod.extended_requests = {{"nvidia.com/gpu", 1}};
  EXPECT_EQ(DescribeWorker(pod, nullptr, Pool().spec).accelerator, "GPU");
  pod.extended_requests = {{"amd.com/gpu", 2}};
  EXPECT_EQ(DescribeWorker(pod, nullptr, Pool().spec).accelerator, "GPU");
  pod.extended_requests = {{"google.com/tpu", 4}};
  const Worker tpu = DescribeWorker(pod, nullptr, Pool().spec);
  EXPECT_EQ(tpu.accelerator, "TPU");
  EXPECT_EQ(tpu.accelerator_product, "TPU");

  const kube::NodeView node{.name = "node-a",
                            .labels = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
                                       {"topology.kubernetes.io/region", "eu-north-1"}}};
  pod.extended_requests = {};
  const Worker gpu = DescribeWorker(pod, &node, Pool().spec);
  EXPECT_EQ(gpu.accelerator, "GPU");
  EXPECT_EQ(gpu.accelerator_product, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(gpu.zone, "eu-north-1");
  EXPECT_EQ(gpu.node, "node-a");
}

TEST(DescribeWorkerTest, ZoneComesFromTheConfiguredLabel) {
  api::InferencePool pool = Pool();
  pool.spec.carbon.zone_label = "example.com/grid";
  const kube::NodeView node{
      .name = "n", .labels = {{"example.com/grid", "SE3"}, {"topology.kubernetes.io/region", "x"}}};
  EXPECT_EQ(DescribeWorker(*Pod("a", "10.0.0.1"), &node, pool.spec).zone, "SE3");
}

TEST(DescribeWorkerTest, PodAnnotationsWinOverTheSpec) {
  api::InferencePool pool = Pool();
  pool.spec.models = {"llama-3-8b"};
  pool.spec.routing.max_concurrency_per_worker = 64;
  kube::PodView pod = *Pod("a", "10.0.0.1");
  Worker w = DescribeWorker(pod, nullptr, pool.spec);
  EXPECT_THAT(w.models, ElementsAre("llama-3-8b"));
  EXPECT_EQ(w.max_concurrency, 64);

  pod.annotations = {{"eoc.dev/max-concurrency", "256"}, {"eoc.dev/models", " qwen-7b, mistral ,"}};
  w = DescribeWorker(pod, nullptr, pool.spec);
  EXPECT_THAT(w.models, ElementsAre("mistral", "qwen-7b"));
  EXPECT_EQ(w.max_concurrency, 256);
  EXPECT_THAT(w.annotation_error, IsEmpty());
}

TEST(DescribeWorkerTest, BadAnnotationsKeepTheSpecsValuesAndSayWhy) {
  api::InferencePool pool = Pool();
  pool.spec.models = {"llama-3-8b"};
  pool.spec.routing.max_concurrency_per_worker = 64;
  kube::PodView pod = *Pod("a", "10.0.0.1");
  pod.annotations = {{"eoc.dev/max-concurrency", "lots"}, {"eoc.dev/models", " , "}};
  const Worker w = DescribeWorker(pod, nullptr, pool.spec);
  EXPECT_THAT(w.models, ElementsAre("llama-3-8b"));
  EXPECT_EQ(w.max_concurrency, 64);
  EXPECT_THAT(w.annotation_error, HasSubstr("eoc.dev/models"));
  EXPECT_THAT(w.annotation_error, HasSubstr("eoc.dev/max-concurrency"));
  EXPECT_THAT(w.annotation_error, HasSubstr("\"lots\""));

  pod.annotations = {{"eoc.dev/max-concurrency", "0"}};
  EXPECT_THAT(DescribeWorker(pod, nullptr, pool.spec).annotation_error,
              HasSubstr("positive integer"));
}

}  // namespace
}  // namespace eoc::controller
