// Where a pool's spec and workers become its routing state: the one place where the API's
// `spec.routing` (api::RoutingSpec, with the CRD's defaults) is mapped onto the engine's options
// (routing::PoolState::Options), and where the reconciler writes the pool directory that the pick
// path reads. `api` and `routing` may not include each other (DESIGN.md), so this mapping lives
// here, in controller/, and nowhere else; the words both share (Strategy, Accelerator,
// EnergyProfile) are one definition in common/routing_terms.h, so nothing else needs mapping.
//
//   routing::PoolState::Options options = RoutingOptions(pool.spec);
//   UpdatePoolDirectory(directory, pool, members.workers, clock.Now());  // after SelectWorkers
//   directory.Remove(key);                                               // the pool is gone
#pragma once

#include <chrono>
#include <vector>

#include "api/inference_pool.h"
#include "routing/pool_directory.h"
#include "routing/pool_state.h"
#include "routing/worker.h"

namespace eoc::controller {

// The engine's options for a pool with `spec` (its `routing` block; and picks may wait while the
// pool has no worker when the autoscaler applies its decisions, as it can scale from zero).
routing::PoolState::Options RoutingOptions(const api::InferencePoolSpec& spec);

// Brings the pool's entry in `directory` up to date with a valid `pool` and its `workers`: adds
// it, or reconfigures its state in place when spec.routing changed (PoolState::Reconfigure says
// what survives), and gives it a new snapshot when the workers the routing table lists
// (PublishedWorkers), the strategy or the generation changed. The snapshot is made from the same
// list as the table the leader publishes (BuildRoutingTable), with the generation that table has
// or will have against the pool's last published status, so picks name the generation `kubectl`
// shows. Unchanged, it costs a comparison of the list (building a snapshot costs about 25 ms at
// 1,000 workers).
void UpdatePoolDirectory(routing::PoolDirectory& directory, const api::InferencePool& pool,
                         const std::vector<routing::Worker>& workers,
                         std::chrono::steady_clock::time_point now);

}  // namespace eoc::controller
