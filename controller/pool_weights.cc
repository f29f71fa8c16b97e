#include "controller/pool_weights.h"

#include <algorithm>
#include <unordered_map>

#include "controller/pool_status.h"
#include "controller/workers.h"
#include "routing/weights.h"

namespace eoc::controller {

std::vector<routing::WorkerLoad> WorkerLoadsOf(
    std::span<const routing::Worker> workers,
    std::span<const routing::PoolState::ObservedLoad> observed,
    const std::map<std::string, double>& grid_g_per_kwh) {
  std::unordered_map<routing::WorkerKey, const routing::PoolState::ObservedLoad*> by_key;
  by_key.reserve(observed.size());
  for (const auto& o : observed) by_key.emplace(o.worker, &o);
  std::vector<routing::WorkerLoad> out;
  out.reserve(workers.size());
  for (const routing::Worker& w : workers) {
    routing::WorkerLoad load{.profile = w.profile, .max_concurrency = w.capability.max_concurrency};
    if (const auto it = by_key.find(w.key); it != by_key.end()) {
      load.load = it->second->load;
      load.picks_since_scrape = it->second->picks_since_scrape;
    }
    load.load.grid_g_per_kwh = GridIntensityOf(w.capability, grid_g_per_kwh);
    out.push_back(load);
  }
  return out;
}

std::vector<routing::Worker> WeighWorkers(
    const api::InferencePoolSpec& spec, const std::vector<routing::Worker>& workers,
    std::span<const routing::PoolState::ObservedLoad> observed,
    const std::map<std::string, double>& grid_g_per_kwh, routing::WeightKeeper& keeper,
    std::chrono::steady_clock::time_point now) {
  std::vector<routing::Worker> out = workers;
  const auto listed = std::span(out).first(PublishedWorkers(workers).size());
  const std::vector<routing::WorkerLoad> loads = WorkerLoadsOf(listed, observed, grid_g_per_kwh);
  std::vector<routing::WorkerKey> keys;
  keys.reserve(listed.size());
  for (const routing::Worker& w : listed) keys.push_back(w.key);
  keeper.set_scrape_interval(spec.metrics.Interval());
  const std::vector<std::int32_t> computed = routing::ComputeWeights(spec.routing.strategy, loads);
  const std::vector<std::int32_t> kept = keeper.Keep(keys, loads, computed, now);
  for (std::size_t i = 0; i < listed.size(); ++i) listed[i].weight = kept[i];
  return out;
}

std::vector<std::string> MissingEnergyProfiles(const api::InferencePoolSpec& spec,
                                               const std::vector<routing::Worker>& workers) {
  std::vector<std::string> out;
  const Strategy strategy = spec.routing.strategy;
  if (strategy != Strategy::kJouleWeighted && strategy != Strategy::kCarbonWeighted) return out;
  for (const routing::Worker& w : workers) {
    if (FindProfile(w.capability, spec.energy) != nullptr) continue;
    out.push_back(w.capability.accelerator_product);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void MarkDraining(std::vector<routing::Worker>& workers, const std::vector<std::string>& draining) {
  if (draining.empty()) return;
  for (routing::Worker& w : workers) {
    w.draining = std::binary_search(draining.begin(), draining.end(), PodName(w));
  }
}

}  // namespace eoc::controller
