#include "controller/workers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pods.h"

namespace eoc::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Pod;

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
  const PoolMembers members = SelectWorkers(Pool(), pods, NoNodes());
  const auto& workers = members.workers;
  ASSERT_EQ(workers.size(), 2U);
  ASSERT_EQ(members.notes.size(), 2U);
  EXPECT_EQ(workers[0].pod, "prod/a");
  EXPECT_EQ(PodName(workers[0]), "a");
  EXPECT_EQ(workers[0].key, routing::WorkerKeyOf("prod/a"));
  EXPECT_EQ(workers[0].address, "10.0.0.1:8000");
  EXPECT_EQ(workers[0].weight, kEqualWeight);
  EXPECT_FALSE(workers[0].draining);
  EXPECT_EQ(workers[1].pod, "prod/c");
  EXPECT_EQ(members.notes[1].node, "node-a");
}

TEST(SelectWorkersTest, AnEmptySelectorSelectsNothing) {
  api::InferencePool pool = Pool();
  pool.spec.selector = api::LabelSelector();
  EXPECT_EQ(SelectWorkers(pool, {Pod("a", "10.0.0.1")}, NoNodes()), PoolMembers{});
}

TEST(DescribeWorkerTest, IPv6AddressesAreBracketed) {
  const auto w = DescribeWorker(*Pod("a", "fd00::7"), nullptr, Pool().spec).worker;
  EXPECT_EQ(w.address, "[fd00::7]:8000");
}

TEST(DescribeWorkerTest, AcceleratorComesFromTheNodeLabelElseTheRequests) {
  kube::PodView pod = *Pod("a", "10.0.0.1");
  auto accelerator = [&] {
    return DescribeWorker(pod, nullptr, Pool().spec).worker.capability.accelerator;
  };
  EXPECT_EQ(accelerator(), Accelerator::kCpu);
  pod.extended_requests = {{"nvidia.com/gpu", 1}};
  EXPECT_EQ(accelerator(), Accelerator::kGpu);
  pod.extended_requests = {{"amd.com/gpu", 2}};
  EXPECT_EQ(accelerator(), Accelerator::kGpu);
  pod.extended_requests = {{"google.com/tpu", 4}};
  const routing::Capability tpu = DescribeWorker(pod, nullptr, Pool().spec).worker.capability;
  EXPECT_EQ(tpu.accelerator, Accelerator::kTpu);
  EXPECT_EQ(tpu.accelerator_product, "TPU");

  const kube::NodeView node{.name = "node-a",
                            .labels = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
                                       {"topology.kubernetes.io/region", "eu-north-1"}}};
  pod.extended_requests = {};
  const DescribedWorker gpu = DescribeWorker(pod, &node, Pool().spec);
  EXPECT_EQ(gpu.worker.capability.accelerator, Accelerator::kGpu);
  EXPECT_EQ(gpu.worker.capability.accelerator_product, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(gpu.worker.capability.zone, "eu-north-1");
  EXPECT_EQ(gpu.notes.node, "node-a");
}

TEST(DescribeWorkerTest, TheEnergyProfileIsTheProductsElseTheClasss) {
  api::InferencePool pool = Pool();
  const EnergyProfile a100{.idle_watts = 60, .max_watts = 400, .max_tokens_per_second = 3000};
  const EnergyProfile any_gpu{.idle_watts = 50, .max_watts = 300, .max_tokens_per_second = 1000};
  pool.spec.energy.profiles = {{"GPU", any_gpu}, {"NVIDIA-A100-SXM4-80GB", a100}};
  kube::PodView pod = *Pod("a", "10.0.0.1");
  pod.extended_requests = {{"nvidia.com/gpu", 1}};
  EXPECT_EQ(DescribeWorker(pod, nullptr, pool.spec).worker.profile, any_gpu);
  const kube::NodeView node{.name = "node-a",
                            .labels = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}};
  EXPECT_EQ(DescribeWorker(pod, &node, pool.spec).worker.profile, a100);
  pod.extended_requests = {};
  EXPECT_EQ(DescribeWorker(pod, nullptr, pool.spec).worker.profile, EnergyProfile{});  // CPU
}

TEST(DescribeWorkerTest, ZoneComesFromTheConfiguredLabel) {
  api::InferencePool pool = Pool();
  pool.spec.carbon.zone_label = "example.com/grid";
  const kube::NodeView node{
      .name = "n", .labels = {{"example.com/grid", "SE3"}, {"topology.kubernetes.io/region", "x"}}};
  EXPECT_EQ(DescribeWorker(*Pod("a", "10.0.0.1"), &node, pool.spec).worker.capability.zone, "SE3");
}

TEST(DescribeWorkerTest, PodAnnotationsWinOverTheSpec) {
  api::InferencePool pool = Pool();
  pool.spec.models = {"llama-3-8b"};
  pool.spec.routing.max_concurrency_per_worker = 64;
  kube::PodView pod = *Pod("a", "10.0.0.1");
  DescribedWorker w = DescribeWorker(pod, nullptr, pool.spec);
  EXPECT_THAT(w.worker.capability.models, ElementsAre("llama-3-8b"));
  EXPECT_EQ(w.worker.capability.max_concurrency, 64);

  pod.annotations = {{"eoc.dev/max-concurrency", "256"}, {"eoc.dev/models", " qwen-7b, mistral ,"}};
  w = DescribeWorker(pod, nullptr, pool.spec);
  EXPECT_THAT(w.worker.capability.models, ElementsAre("mistral", "qwen-7b"));
  EXPECT_EQ(w.worker.capability.max_concurrency, 256);
  EXPECT_THAT(w.notes.annotation_error, IsEmpty());
}

TEST(DescribeWorkerTest, BadAnnotationsKeepTheSpecsValuesAndSayWhy) {
  api::InferencePool pool = Pool();
  pool.spec.models = {"llama-3-8b"};
  pool.spec.routing.max_concurrency_per_worker = 64;
  kube::PodView pod = *Pod("a", "10.0.0.1");
  pod.annotations = {{"eoc.dev/max-concurrency", "lots"}, {"eoc.dev/models", " , "}};
  const DescribedWorker w = DescribeWorker(pod, nullptr, pool.spec);
  EXPECT_THAT(w.worker.capability.models, ElementsAre("llama-3-8b"));
  EXPECT_EQ(w.worker.capability.max_concurrency, 64);
  const std::string& error = w.notes.annotation_error;
  EXPECT_THAT(error, HasSubstr("eoc.dev/models"));
  EXPECT_THAT(error, HasSubstr("eoc.dev/max-concurrency"));
  EXPECT_THAT(error, HasSubstr("\"lots\""));

  pod.annotations = {{"eoc.dev/max-concurrency", "0"}};
  EXPECT_THAT(DescribeWorker(pod, nullptr, pool.spec).notes.annotation_error,
              HasSubstr("positive integer"));
}

}  // namespace
}  // namespace eoc::controller
