// The leader's weights for a pool's routing table (DESIGN.md, "The model" and the InferencePool
// status): each worker's last scraped load, as this replica's routing state holds it, weighed by
// the pool's strategy (routing::ComputeWeights), a worker whose metrics are unavailable keeping
// its last weight for three scrape intervals (routing::WeightKeeper). The result is the candidate
// table, which DecideTablePublish (routing_config.h) publishes now, later or not at all.
//
//   std::vector<routing::Worker> candidate = WeighWorkers(
//       pool.spec, members.workers, state->Loads(), readings.intensity, keeper, clock.Now());
//   std::vector<std::string> missing = MissingEnergyProfiles(pool.spec, members.workers);
#pragma once

#include <chrono>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "api/inference_pool.h"
#include "routing/pool_state.h"
#include "routing/weight_keeper.h"
#include "routing/worker.h"

namespace eoc::controller {

// What ComputeWeights reads of each of `workers`: its load from `observed` (by key; a worker not
// there has no load yet: available false), its energy profile and max concurrency as
// DescribeWorker resolved them, the picks this replica sent it since the scrape, and its zone's
// grid intensity from `grid_g_per_kwh` (zone -> gCO2e/kWh, what the pool's carbon source gives
// now: carbon::GridSource; a worker whose zone is unknown or not listed keeps 0, unknown, and
// CarbonWeighted gives it the pool's median).
std::vector<routing::WorkerLoad> WorkerLoadsOf(
    std::span<const routing::Worker> workers,
    std::span<const routing::PoolState::ObservedLoad> observed,
    const std::map<std::string, double>& grid_g_per_kwh);

// `workers` with the weights the table should list: those of the table's workers
// (PublishedWorkers) computed under spec.routing.strategy, with the grid intensities of
// `grid_g_per_kwh` (as WorkerLoadsOf), and kept by `keeper` (whose scrape interval becomes
// spec.metrics.intervalSeconds); workers past the table keep theirs (the table does not list
// them).
std::vector<routing::Worker> WeighWorkers(
    const api::InferencePoolSpec& spec, const std::vector<routing::Worker>& workers,
    std::span<const routing::PoolState::ObservedLoad> observed,
    const std::map<std::string, double>& grid_g_per_kwh, routing::WeightKeeper& keeper,
    std::chrono::steady_clock::time_point now);

// Under an energy strategy (JouleWeighted, CarbonWeighted): the accelerators (product, as
// DescribeWorker names it) of `workers` that no spec.energy.profiles entry matches, sorted and
// distinct. ComputeWeights gives such a worker the median of the known marginal energies (or 1
// when none is known), so it is weighed by its busyness alone. Empty under the other strategies.
std::vector<std::string> MissingEnergyProfiles(const api::InferencePoolSpec& spec,
                                               const std::vector<routing::Worker>& workers);

// Marks the workers whose pods (names without the namespace, sorted) are in `draining`, as the
// table publishes the pods a scale-in drains (no new work, their sessions move); with none, the
// workers are left as they are.
void MarkDraining(std::vector<routing::Worker>& workers, const std::vector<std::string>& draining);

}  // namespace eoc::controller
