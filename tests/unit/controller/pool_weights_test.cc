#include "controller/pool_weights.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "api/defaults.h"

namespace eoc::controller {
namespace {

using routing::Worker;
using std::chrono::seconds;

const auto kT0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);

Worker W(const std::string& pod, std::string product = "CPU") {
  Worker w{.key = routing::WorkerKeyOf("prod/" + pod), .pod = "prod/" + pod, .weight = 1000};
  w.capability.accelerator = Accelerator::kCpu;
  w.capability.accelerator_product = std::move(product);
  return w;
}

routing::PoolState::ObservedLoad Seen(const Worker& w, double running, bool available = true) {
  return {.worker = w.key, .load = {.running = running, .available = available}};
}

TEST(WeighWorkersTest, WeighsTheLoadsAndKeepsAnUnavailableWorkersLastWeight) {
  api::InferencePoolSpec spec = api::DefaultSpec();
  spec.routing.strategy = Strategy::kLeastBusy;
  spec.metrics.interval_seconds = 5;
  const std::vector<Worker> workers = {W("a"), W("b"), W("c")};
  routing::WeightKeeper keeper(seconds(1));
  // c never scraped: no load yet.
  std::vector<routing::PoolState::ObservedLoad> seen = {Seen(workers[0], 10),
                                                        Seen(workers[1], 300)};
  auto weighed = WeighWorkers(spec, workers, seen, spec.carbon.static_intensity, keeper, kT0);
  EXPECT_EQ(keeper.scrape_interval(), seconds(5));
  EXPECT_EQ(weighed[0].weight, 1000);
  EXPECT_EQ(weighed[1].weight, 0);     // saturated
  EXPECT_EQ(weighed[2].weight, 1000);  // the lowest non-zero weight of the available workers
  // b's metrics go: it keeps its last weight for three intervals, then drops to the lowest.
  seen[1] = Seen(workers[1], 0, false);
  EXPECT_EQ(
      WeighWorkers(spec, workers, seen, spec.carbon.static_intensity, keeper, kT0 + seconds(14))[1]
          .weight,
      0);
  EXPECT_EQ(
      WeighWorkers(spec, workers, seen, spec.carbon.static_intensity, keeper, kT0 + seconds(15))[1]
          .weight,
      1000);
}

TEST(WeighWorkersTest, CarbonWeightedReadsEachZonesStaticIntensity) {
  api::InferencePoolSpec spec = api::DefaultSpec();
  spec.routing.strategy = Strategy::kCarbonWeighted;
  spec.carbon.static_intensity = {{"eu-north", 100}, {"us-east", 400}, {"ap-south", 700}};
  std::vector<Worker> workers;
  for (const char* zone : {"eu-north", "us-east", "unlisted", ""}) {
    Worker w = W(std::string("w-") + zone);
    w.capability.zone = zone;
    w.profile = {.idle_watts = 100, .max_watts = 400, .max_tokens_per_second = 1000};
    workers.push_back(w);
  }
  std::vector<routing::PoolState::ObservedLoad> seen;
  seen.reserve(workers.size());
  for (const Worker& w : workers) seen.push_back(Seen(w, 0));
  routing::WeightKeeper keeper(seconds(1));
  const auto weighed = WeighWorkers(spec, workers, seen, spec.carbon.static_intensity, keeper, kT0);
  // Same joules per token and idle everywhere: the weight is the inverse of the intensity, the
  // zones the map does not list (and a node without a zone) take the median of the known (250).
  EXPECT_EQ(weighed[0].weight, 1000);
  EXPECT_EQ(weighed[1].weight, 250);
  EXPECT_EQ(weighed[2].weight, 400);
  EXPECT_EQ(weighed[3].weight, 400);
  // JouleWeighted does not read the intensities: equal joules, equal weights.
  spec.routing.strategy = Strategy::kJouleWeighted;
  for (const Worker& w :
       WeighWorkers(spec, workers, seen, spec.carbon.static_intensity, keeper, kT0)) {
    EXPECT_EQ(w.weight, 1000) << w.pod;
  }
}

TEST(MissingEnergyProfilesTest, NamesAcceleratorsNoProfileMatchesUnderEnergyStrategies) {
  api::InferencePoolSpec spec = api::DefaultSpec();
  spec.routing.strategy = Strategy::kJouleWeighted;
  spec.energy.profiles = {{.accelerator = "NVIDIA-A100", .energy = {}}};
  Worker gpu = W("g", "NVIDIA-A100");
  gpu.capability.accelerator = Accelerator::kGpu;
  Worker h100 = W("h", "NVIDIA-H100");
  h100.capability.accelerator = Accelerator::kGpu;
  const std::vector<Worker> workers = {gpu, h100, W("a"), W("b")};
  EXPECT_EQ(MissingEnergyProfiles(spec, workers), (std::vector<std::string>{"CPU", "NVIDIA-H100"}));
  spec.energy.profiles.push_back({.accelerator = "GPU", .energy = {}});  // the class matches
  EXPECT_EQ(MissingEnergyProfiles(spec, workers), std::vector<std::string>{"CPU"});
  spec.routing.strategy = Strategy::kLatencyWeighted;
  EXPECT_TRUE(MissingEnergyProfiles(spec, workers).empty());
}

}  // namespace
}  // namespace eoc::controller
